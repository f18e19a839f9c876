//! A 4-slot table: near-certain collisions and second probes, with readers
//! streaming while writers revoke.
#![cfg(not(loom))]

use bravo::policy::{Adaptive, BlockScan, SecondProbe, UnbiasedHint};
use bravo::{Bravo, DefaultPolicy, Listing1, Policy};
use lock_api::RawRwLock;
use parking_lot::RawRwLock as Pl;
use rwlock_core::testing;

fn stress<L: RawRwLock + Sync, P: Policy>(cfg: &testing::StressConfig) {
    testing::stress(&Bravo::<L, P>::new(), cfg);
}

#[test]
fn stress_four_slots_every_policy() {
    bravo::table::configure(4).expect("this binary's table has four slots");
    for writes in [1, 10, 50] {
        let mut cfg = testing::StressConfig::new(8);
        cfg.write_percent = writes;
        stress::<Pl, DefaultPolicy>(&cfg);
        stress::<Pl, Listing1>(&cfg);
        stress::<Pl, Adaptive>(&cfg);
        stress::<rwlock_core::PfQueue, BlockScan>(&cfg);
        stress::<rwlock_core::PfTicket, UnbiasedHint>(&cfg);
        stress::<Pl, SecondProbe>(&cfg);
    }
}
