//! Every variant on a synthetic 2-node topology (`nodes=2`: the machine's
//! CPUs dealt into two nodes), each harness thread pinned to its own CPU
//! with `sched_setaffinity`, so readers really arrive on both nodes' slots
//! and the cohort really moves between nodes.

mod support;

use std::time::Instant;

use cohort::{Cohort, PartitionedTicket, TicketLock};
use lock_api::RawMutex;
use rwlock_core::testing::{self, StressConfig};
use rwlock_core::topology::Topology;
use support::Pinned;

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
    topology();
    for_every_variant!(|name, L| {
        let lock = Pinned(<L>::new());
        let start = Instant::now();
        for threads in [2, 8] {
            testing::stress(&lock, &StressConfig::new(threads));
        }
        testing::stress_downgrade(&lock, &StressConfig::new(4));
        assert!(lock.0.reader_slots() <= 2);
        eprintln!(
            "{name}: 2 pinned nodes, 2+8+4 threads in {:.2?}",
            start.elapsed()
        );
    });
}

#[test]
fn cohort_mutex_on_two_pinned_nodes() {
    topology();
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
    assert_eq!(m.node_count(), 2);
}
