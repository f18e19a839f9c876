//! The topology from a Linux sysfs tree (`/sys/devices/system`).

use std::fs;
use std::io;
use std::path::Path;

use super::spec::parse_cpulist;
use super::{MAX_NODES, Topology, TopologyError, TopologySource};

/// Reads `root/node/node<N>/cpulist` and `root/cpu/possible`.
pub(super) fn read(root: &Path) -> Result<Topology, TopologyError> {
    let possible = read_possible(root)?;
    let node_dir = root.join("node");
    let entries = match fs::read_dir(&node_dir) {
        Ok(entries) => entries,
        // A kernel without NUMA has no node directory: one node.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return non_numa(root, possible),
        Err(error) => {
            return Err(TopologyError::Io {
                path: node_dir,
                error,
            });
        }
    };
    let mut nodes: Vec<Vec<usize>> = Vec::new();
    let mut found = false;
    for entry in entries {
        let entry = entry.map_err(|error| TopologyError::Io {
            path: node_dir.clone(),
            error,
        })?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|name| name.strip_prefix("node"))
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let node = match id.parse::<usize>() {
            Ok(node) if node < MAX_NODES => node,
            _ => {
                return Err(TopologyError::File {
                    path: entry.path(),
                    error: Box::new(TopologyError::TooLarge {
                        token: format!("node{id}"),
                        limit: MAX_NODES - 1,
                    }),
                });
            }
        };
        let path = entry.path().join("cpulist");
        let cpus = read_cpulist(&path)?;
        if nodes.len() <= node {
            nodes.resize_with(node + 1, Vec::new);
        }
        nodes[node] = cpus;
        found = true;
    }
    if !found {
        return non_numa(root, possible);
    }
    Topology::build(
        nodes,
        possible.map_or(0, |p| p.cpu_count),
        TopologySource::Sysfs,
    )
    .map_err(|error| TopologyError::File {
        path: node_dir,
        error: Box::new(error),
    })
}

/// `cpu/possible`, summarised.
struct Possible {
    cpus: Vec<usize>,
    cpu_count: usize,
}

/// `root/cpu/possible`, or `None` if there is no such file.
fn read_possible(root: &Path) -> Result<Option<Possible>, TopologyError> {
    let path = root.join("cpu").join("possible");
    match fs::read_to_string(&path) {
        Ok(text) => {
            let cpus = parse_cpulist(&text).map_err(|error| TopologyError::File {
                path: path.clone(),
                error: Box::new(error),
            })?;
            let cpu_count = cpus.iter().max().map_or(0, |&max| max + 1);
            Ok(Some(Possible { cpus, cpu_count }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(TopologyError::Io { path, error }),
    }
}

/// One node holding every possible CPU.
fn non_numa(root: &Path, possible: Option<Possible>) -> Result<Topology, TopologyError> {
    let path = root.join("cpu").join("possible");
    let Some(possible) = possible else {
        return Err(TopologyError::Io {
            path,
            error: io::Error::new(
                io::ErrorKind::NotFound,
                "neither this file nor a node directory exists",
            ),
        });
    };
    Topology::build(vec![possible.cpus], 0, TopologySource::Sysfs).map_err(|error| {
        TopologyError::File {
            path,
            error: Box::new(error),
        }
    })
}

fn read_cpulist(path: &Path) -> Result<Vec<usize>, TopologyError> {
    let text = fs::read_to_string(path).map_err(|error| TopologyError::Io {
        path: path.to_owned(),
        error,
    })?;
    parse_cpulist(&text).map_err(|error| TopologyError::File {
        path: path.to_owned(),
        error: Box::new(error),
    })
}
