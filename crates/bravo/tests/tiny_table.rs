//! A 4-slot table: near-certain collisions and second probes, with readers
//! streaming while writers revoke.
#![cfg(not(loom))]

use bravo::Bravo;
use rwlock_core::testing;

#[test]
fn stress_four_slots_every_policy() {
    bravo::table::configure(4).expect("this binary's table has four slots");
    for writes in [1, 10, 50] {
        let mut cfg = testing::StressConfig::new(8);
        cfg.write_percent = writes;
        testing::stress(&Bravo::<parking_lot::RawRwLock>::new(), &cfg);
        testing::stress(
            &Bravo::<parking_lot::RawRwLock, bravo::Listing1>::new(),
            &cfg,
        );
        testing::stress(
            &Bravo::<parking_lot::RawRwLock, bravo::policy::Adaptive>::new(),
            &cfg,
        );
        testing::stress(
            &Bravo::<rwlock_core::PfQueue, bravo::policy::BlockScan>::new(),
            &cfg,
        );
        testing::stress(
            &Bravo::<rwlock_core::PfTicket, bravo::policy::UnbiasedHint>::new(),
            &cfg,
        );
        testing::stress(
            &Bravo::<parking_lot::RawRwLock, bravo::policy::SecondProbe>::new(),
            &cfg,
        );
    }
}
