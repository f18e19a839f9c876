//! The topology from the system's hwloc library (crate feature `hwloc`).
//!
//! hwloc2 2.2.0 was written against hwloc 1.x depth codes: asking it for the
//! objects of type `NUMANode` panics. So the nodes are derived from the PUs:
//! each PU's `nodeset` names its local nodes, and the root's complete nodeset
//! names them all.

use std::panic::{self, AssertUnwindSafe};

use hwloc2::{Bitmap, ObjectType};

use super::{MAX_CPUS, MAX_NODES, Topology, TopologyError, TopologySource};

pub(super) fn read() -> Result<Topology, TopologyError> {
    // hwloc2 panics on some queries it mis-translates; a lock must not.
    panic::catch_unwind(AssertUnwindSafe(read_unguarded)).unwrap_or_else(|_| {
        Err(TopologyError::Hwloc {
            reason: "the hwloc2 crate panicked".to_owned(),
        })
    })
}

fn error(reason: impl Into<String>) -> TopologyError {
    TopologyError::Hwloc {
        reason: reason.into(),
    }
}

/// The highest index set in `bitmap`, if it is finite and not empty.
fn last(bitmap: Option<Bitmap>) -> Option<usize> {
    let bitmap = bitmap?;
    usize::try_from(bitmap.last()).ok()
}

fn read_unguarded() -> Result<Topology, TopologyError> {
    let topo = hwloc2::Topology::new().ok_or_else(|| error("cannot load the topology"))?;
    let root = topo.object_at_root();
    let pus = topo
        .objects_with_type(&ObjectType::PU)
        .map_err(|e| error(format!("cannot list the PUs: {e:?}")))?;
    if pus.is_empty() {
        return Err(error("no PU in the topology"));
    }
    let node_count = last(root.complete_nodeset())
        .or_else(|| last(root.nodeset()))
        .map_or(1, |last| last + 1);
    if node_count > MAX_NODES {
        return Err(error(format!(
            "{node_count} NUMA nodes, more than the limit of {MAX_NODES}"
        )));
    }
    let mut nodes = vec![Vec::new(); node_count];
    for pu in pus {
        let cpu = pu.os_index() as usize;
        if cpu >= MAX_CPUS {
            return Err(error(format!(
                "PU {cpu} is beyond the limit of {} CPU numbers",
                MAX_CPUS
            )));
        }
        // The lowest-numbered local node: hwloc 2.x also lists memory-only
        // nodes attached above the PU, which the kernel numbers after the
        // node holding the CPUs.
        let node = pu
            .nodeset()
            .map(|set| set.first())
            .and_then(|first| usize::try_from(first).ok())
            .ok_or_else(|| error(format!("PU {cpu} has no NUMA node")))?;
        if node >= node_count {
            return Err(error(format!(
                "PU {cpu} is in node {node}, outside the {node_count} nodes of the machine"
            )));
        }
        nodes[node].push(cpu);
    }
    let possible = last(root.complete_cpuset()).map_or(0, |last| (last + 1).min(MAX_CPUS));
    Topology::build(nodes, possible, TopologySource::Hwloc).map_err(|e| error(e.to_string()))
}
