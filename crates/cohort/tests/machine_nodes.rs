//! Every variant on a machine that really has several NUMA nodes, with the
//! topology detected from sysfs (no `RWLOCK_TOPOLOGY` override): run inside
//! the 2-node VM by `scripts/vm-test`, which says what the nodes are in
//! `RWLOCK_VM_NODES`. Each harness thread is pinned to its own CPU, so
//! readers arrive on both nodes' slots and the cohort moves between the
//! nodes the hardware (as qemu presents it) has. Ignored outside the VM;
//! run by hand without that variable, the tests fail and say why.

mod support;

use std::time::Instant;

use cohort::{Cohort, PartitionedTicket, TicketLock};
use lock_api::RawMutex;
use rwlock_core::testing::{self, StressConfig};
use rwlock_core::topology::{self, Topology};
use support::Pinned;

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
    let t = machine();
    for_every_variant!(|name, L| {
        let lock = Pinned(<L>::new());
        let start = Instant::now();
        for threads in [2, 8] {
            testing::stress(&lock, &StressConfig::new(threads));
        }
        testing::stress_downgrade(&lock, &StressConfig::new(4));
        assert!(lock.0.reader_slots() <= t.node_count());
        eprintln!(
            "{name}: {} nodes, 2+8+4 pinned threads in {:.2?}",
            t.node_count(),
            start.elapsed()
        );
    });
}

#[test]
#[ignore = "runs inside the 2-node VM (scripts/vm-test sets RWLOCK_VM_NODES)"]
fn cohort_mutex_on_the_machines_nodes() {
    let t = machine();
    let m = Cohort::<PartitionedTicket, TicketLock>::new();
    let count = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                support::thread_number();
                for _ in 0..20_000 {
                    let g = m.lock();
                    // Relaxed load/store pair: a lost update means two owners.
                    let v = count.load(std::sync::atomic::Ordering::Relaxed);
                    count.store(v + 1, std::sync::atomic::Ordering::Relaxed);
                    // SAFETY: our own acquisition.
                    unsafe { m.unlock(g) };
                }
            });
        }
    });
    assert_eq!(count.into_inner(), 8 * 20_000);
    assert_eq!(m.node_count(), t.node_count());
}
