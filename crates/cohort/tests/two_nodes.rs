//! Every variant on a synthetic 2-node topology (`nodes=2`: the machine's
//! CPUs dealt into two nodes), each harness thread pinned to its own CPU
//! with `sched_setaffinity`, so readers really arrive on both nodes' slots
//! and the cohort really moves between nodes.

mod support;

use rwlock_core::topology::Topology;

fn topology() -> &'static Topology {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        Topology::init_global(Topology::parse("nodes=2").unwrap())
            .expect("no lock used the topology before this test");
    });
    let t = Topology::global();
    assert_eq!(t.node_count(), 2);
    t
}

#[test]
fn every_variant_on_two_pinned_nodes() {
    support::every_variant_pinned(topology().node_count());
}

#[test]
fn cohort_mutex_on_two_pinned_nodes() {
    support::cohort_mutex_pinned(topology().node_count());
}
