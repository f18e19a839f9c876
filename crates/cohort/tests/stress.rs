//! Every variant on the machine's real topology: lock_api semantics, the
//! shared stress harness (no writer beside anybody, the zero-sum array) at
//! 1, 2 and 8 threads, with downgrades too.

mod support;

use std::time::Instant;

use lock_api::RawRwLock;
use rwlock_core::testing::{self, StressConfig};

#[test]
fn every_variant_has_lock_api_semantics() {
    for_every_variant!(|name, L| {
        let lock = <L>::new();
        testing::check_try_lock(&lock);
        testing::check_downgrade(&lock);
        let wrapped = lock_api::RwLock::<L, u64>::new(0);
        testing::check_panic_releases(&wrapped);
        let _ = name;
    });
}

#[test]
fn const_init_builds_statics() {
    static WP: cohort::RwLock<u32> = cohort::RwLock::new(1);
    static M: cohort::Mutex<u32> = cohort::Mutex::new(2);
    static NP: lock_api::RwLock<cohort::CRwNp, u32> =
        lock_api::RwLock::from_raw(cohort::CRwNp::new(), 3);
    *WP.write() += 1;
    *M.lock() += 1;
    *NP.write() += 1;
    assert_eq!((*WP.read(), *M.lock(), *NP.read()), (2, 3, 4));
}

#[test]
fn every_variant_survives_the_stress_harness() {
    for_every_variant!(|name, L| {
        let lock = <L>::new();
        let start = Instant::now();
        testing::stress_1_2_8_and_downgrade(&lock);
        eprintln!(
            "{name}: stress 1/2/8 threads + downgrade at 8 in {:.2?}",
            start.elapsed()
        );
        assert!(!lock.is_locked());
    });
}

#[test]
fn read_mostly_and_write_heavy_mixes() {
    for_every_variant!(|name, L| {
        let lock = <L>::new();
        for write_percent in [1, 90] {
            let mut cfg = StressConfig::new(6);
            cfg.write_percent = write_percent;
            cfg.ops_per_thread = 10_000;
            let r = testing::stress(&lock, &cfg);
            assert!(r.reads > 0 && r.writes > 0, "{name}: {r:?}");
        }
    });
}
