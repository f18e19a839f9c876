//! Every variant on a machine that really has several NUMA nodes, with the
//! topology detected from sysfs (no `RWLOCK_TOPOLOGY` override): run inside
//! the 2-node VM by `scripts/vm-test`, which says what the nodes are in
//! `RWLOCK_VM_NODES`. Each harness thread is pinned to its own CPU, so
//! readers arrive on both nodes' slots and the cohort moves between the
//! nodes the hardware (as qemu presents it) has. Ignored outside the VM;
//! run by hand without that variable, the tests fail and say why.

mod support;

use rwlock_core::topology::{self, Topology};

/// The detected topology, checked against what qemu was given.
fn machine() -> &'static Topology {
    let spec = std::env::var("RWLOCK_VM_NODES")
        .expect("RWLOCK_VM_NODES is not set: these tests run inside scripts/vm-test's VM");
    assert!(
        std::env::var_os(topology::ENV_VAR).is_none(),
        "RWLOCK_TOPOLOGY is set: these tests use the detected topology"
    );
    let want = Topology::parse(&spec).expect("RWLOCK_VM_NODES is malformed");
    let t = Topology::global();
    assert!(t.same_layout(&want), "detected {t}, qemu was given {want}");
    assert!(t.node_count() >= 2, "{t}");
    t
}

#[test]
#[ignore = "runs inside the 2-node VM (scripts/vm-test sets RWLOCK_VM_NODES)"]
fn every_variant_on_the_machines_nodes() {
    support::every_variant_pinned(machine().node_count());
}

#[test]
#[ignore = "runs inside the 2-node VM (scripts/vm-test sets RWLOCK_VM_NODES)"]
fn cohort_mutex_on_the_machines_nodes() {
    support::cohort_mutex_pinned(machine().node_count());
}
