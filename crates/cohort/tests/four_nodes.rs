//! Every variant with four active nodes: the topology has 4 nodes
//! (`nodes=4`), harness thread `n` is pinned to CPU `n` and acquires
//! through node `n % 4` with the `*_on` methods, so four cohorts and four
//! indicator slots are busy even on a machine with fewer CPUs.

mod support;

use std::time::Instant;

use rwlock_core::testing::{self, StressConfig};
use rwlock_core::topology::Topology;
use support::{OnNode, Spread};

#[test]
fn every_variant_on_four_nodes() {
    Topology::init_global(Topology::parse("nodes=4").unwrap())
        .expect("no lock used the topology before this test");
    assert_eq!(Topology::global().node_count(), 4);
    for_every_variant!(|name, L| {
        let lock = Spread {
            lock: <L as OnNode>::make(0),
            nodes: 4,
        };
        let start = Instant::now();
        for threads in [4, 8] {
            testing::stress(&lock, &StressConfig::new(threads));
        }
        testing::stress_downgrade(&lock, &StressConfig::new(8));
        let slots = lock.lock.reader_slots();
        assert!(slots == 4 || slots == 1, "{name}: {slots} slots");
        eprintln!("{name}: 4 nodes, 4+8+8 threads in {:.2?}", start.elapsed());
    });
}
