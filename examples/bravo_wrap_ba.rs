//! Story 2: BRAVO over this workspace's phase-fair lock (PF-Q, the paper's
//! "BA"): phase-fair writers, reader fast path, and read guards that may
//! move between threads (PF-Q's do, so `Bravo<PfQueue>`'s do too).
//!
//! `cargo run --release --example bravo_wrap_ba`

use std::sync::Arc;

use bravo::{Bravo, PfQueueRwLock};
use lock_api::{RwLockReadGuard, RwLockWriteGuard};
use rwlock_core::PfQueue;

fn main() {
    // The ready-made alias...
    let counters: Arc<PfQueueRwLock<Vec<u64>>> = Arc::new(PfQueueRwLock::new(vec![0; 8]));
    // ...is this type:
    let _same: lock_api::RwLock<Bravo<PfQueue>, Vec<u64>> = lock_api::RwLock::new(Vec::new());

    let writers: Vec<_> = (0..2)
        .map(|w| {
            let counters = counters.clone();
            std::thread::spawn(move || {
                for i in 0..10_000 {
                    let mut c = counters.write();
                    c[(i + w) % 8] += 1;
                    // Downgrade without letting another writer in.
                    let r = RwLockWriteGuard::downgrade(c);
                    assert!(r.iter().sum::<u64>() > 0);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let counters = counters.clone();
            std::thread::spawn(move || {
                let mut seen = 0;
                for _ in 0..100_000 {
                    seen = seen.max(counters.read().iter().sum::<u64>());
                }
                seen
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    for r in readers {
        assert!(r.join().unwrap() <= 20_000);
    }

    // A read guard taken here and released by another thread: the guard
    // names the slot (or PF-Q's state) it holds, not the current CPU.
    let guard: RwLockReadGuard<'static, _, _> = {
        let leaked: &'static PfQueueRwLock<Vec<u64>> =
            Box::leak(Box::new(PfQueueRwLock::new(vec![7])));
        leaked.read()
    };
    std::thread::spawn(move || {
        assert_eq!(guard[0], 7);
        drop(guard);
    })
    .join()
    .unwrap();

    let total: u64 = counters.read().iter().sum();
    println!("2 writers x 10000 increments, 2 readers streaming: total {total}");
    assert_eq!(total, 20_000);
}
