//! The override grammar and Linux cpulists.

use std::fmt;

use super::{MAX_CPUS, MAX_NODES, Topology, TopologyError};

const FORMS: &str = "expected `each-cpu`, `nodes=N`, `nodes=N,cpus=M` or cpulists separated by `;`";

/// Parses a spec; `machine_cpus` gives the machine's CPU count for `each-cpu`
/// and `nodes=N`, and is called only for those.
pub(super) fn parse(
    spec: &str,
    machine_cpus: impl FnOnce() -> usize,
) -> Result<Topology, TopologyError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(TopologyError::Empty {
            what: "empty topology spec",
        });
    }
    if spec == "each-cpu" {
        return Ok(Topology::each_cpu(machine_cpus().clamp(1, MAX_CPUS)));
    }
    if spec.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return parse_keys(spec, machine_cpus);
    }
    let mut nodes = Vec::new();
    // CPUs listed so far: past `MAX_CPUS` some CPU is listed twice, which
    // `from_nodes` would refuse anyway; refused here, memory stays bounded
    // (a short spec of repeated ranges asked for gigabytes).
    let mut listed = 0usize;
    for (index, node) in spec.split(';').enumerate() {
        let cpus = parse_cpulist(node)?;
        listed += cpus.len();
        if listed > MAX_CPUS {
            return Err(TopologyError::TooLarge {
                token: format!("{listed} CPUs listed (so some twice)"),
                limit: MAX_CPUS,
            });
        }
        if cpus.is_empty() {
            return Err(TopologyError::Syntax {
                token: spec.to_owned(),
                reason: if index == 0 {
                    "node 0 has no CPUs (nothing before the first `;`)"
                } else {
                    "a node has no CPUs (an empty entry between or after `;`)"
                },
            });
        }
        nodes.push(cpus);
        if nodes.len() > MAX_NODES {
            return Err(TopologyError::TooLarge {
                token: format!("{} nodes", nodes.len()),
                limit: MAX_NODES,
            });
        }
    }
    Topology::from_nodes(&nodes)
}

/// `nodes=N` or `nodes=N,cpus=M` (in either order).
fn parse_keys(spec: &str, machine_cpus: impl FnOnce() -> usize) -> Result<Topology, TopologyError> {
    let mut nodes = None;
    let mut cpus = None;
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(TopologyError::Syntax {
                token: spec.to_owned(),
                reason: "empty entry (a `,` too many?)",
            });
        }
        let Some((key, value)) = item.split_once('=') else {
            return Err(TopologyError::Syntax {
                token: item.to_owned(),
                reason: FORMS,
            });
        };
        let (slot, limit) = match key.trim() {
            "nodes" => (&mut nodes, MAX_NODES),
            "cpus" => (&mut cpus, MAX_CPUS),
            _ => {
                return Err(TopologyError::Syntax {
                    token: key.trim().to_owned(),
                    reason: "unknown key: expected `nodes` or `cpus`",
                });
            }
        };
        if slot.is_some() {
            return Err(TopologyError::Syntax {
                token: item.to_owned(),
                reason: "key given twice",
            });
        }
        let n = parse_number(value, item, limit, "expected a number")?;
        if n == 0 {
            return Err(TopologyError::Syntax {
                token: item.to_owned(),
                reason: "must be at least 1",
            });
        }
        *slot = Some(n);
    }
    let Some(nodes) = nodes else {
        return Err(TopologyError::Syntax {
            token: spec.to_owned(),
            reason: "missing `nodes=N`",
        });
    };
    let cpus = match cpus {
        Some(cpus) => cpus,
        None => machine_cpus().clamp(1, MAX_CPUS),
    };
    Ok(Topology::synthetic(nodes, cpus))
}

/// Parses a Linux cpulist (`0-3,8,10-11`, whitespace allowed around tokens;
/// an empty or blank list is empty). Every CPU number must be below
/// [`MAX_CPUS`]. The result is in list order; duplicates are left for
/// [`Topology::from_nodes`] to report, with the node that lists them, but a
/// list of more than `MAX_CPUS` CPUs (which must repeat one) is refused as
/// [`TopologyError::TooLarge`] before it is expanded, so that the result
/// never holds more than `MAX_CPUS` numbers.
pub fn parse_cpulist(list: &str) -> Result<Vec<usize>, TopologyError> {
    const CPU: &str = "expected a CPU number or a range `A-B`";
    let list = list.trim();
    let mut cpus = Vec::new();
    if list.is_empty() {
        return Ok(cpus);
    }
    for item in list.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(TopologyError::Syntax {
                token: list.to_owned(),
                reason: "empty entry in a CPU list (a `,` too many?)",
            });
        }
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => (
                parse_number(a, item, MAX_CPUS - 1, CPU)?,
                parse_number(b, item, MAX_CPUS - 1, CPU)?,
            ),
            None => {
                let cpu = parse_number(item, item, MAX_CPUS - 1, CPU)?;
                (cpu, cpu)
            }
        };
        if first > last {
            return Err(TopologyError::Syntax {
                token: item.to_owned(),
                reason: "reversed range",
            });
        }
        let count = cpus.len() + (last - first + 1);
        if count > MAX_CPUS {
            return Err(TopologyError::TooLarge {
                token: format!("{count} CPUs in one list (so some twice)"),
                limit: MAX_CPUS,
            });
        }
        cpus.extend(first..=last);
    }
    Ok(cpus)
}

/// A decimal number (ASCII digits only, whitespace around it ignored) not
/// above `limit`. A malformed number is reported as `item`, the token it is
/// part of, with `reason`; a number above the limit as itself.
fn parse_number(
    text: &str,
    item: &str,
    limit: usize,
    reason: &'static str,
) -> Result<usize, TopologyError> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TopologyError::Syntax {
            token: item.to_owned(),
            reason,
        });
    }
    match text.parse::<usize>() {
        Ok(n) if n <= limit => Ok(n),
        _ => Err(TopologyError::TooLarge {
            token: text.to_owned(),
            limit,
        }),
    }
}

/// Writes ascending `cpus` as a cpulist (`0-3,8`); `-` when empty.
pub(super) fn write_cpulist(f: &mut fmt::Formatter<'_>, cpus: &[usize]) -> fmt::Result {
    if cpus.is_empty() {
        return f.write_str("-");
    }
    let mut rest = cpus;
    let mut first = true;
    while let [start, ..] = *rest {
        let run = rest
            .iter()
            .enumerate()
            .take_while(|&(i, &cpu)| cpu == start + i)
            .count();
        if !first {
            f.write_str(",")?;
        }
        first = false;
        match run {
            1 => write!(f, "{start}")?,
            _ => write!(f, "{start}-{}", start + run - 1)?,
        }
        rest = &rest[run..];
    }
    Ok(())
}
