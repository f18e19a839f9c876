//! The read-mostly hash map of `numa_rwlocks::rcu_map` over FCP-RCU: two
//! reader threads look keys up while the main thread inserts (growing the
//! table under them) and removes; every value a reader finds is checked.
//!
//! ```text
//! cargo run --release --example rcu_map
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

use numa_rwlocks::rcu_map::{Rcu, ReadMostlyMap};

fn main() {
    let map: Arc<ReadMostlyMap<u64, String, Rcu>> = Arc::new(ReadMostlyMap::new());
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (map, stop, lookups) = (map.clone(), stop.clone(), lookups.clone());
            thread::spawn(move || {
                let mut k = t;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    k = (k + 7) % 20_000;
                    if let Some(v) = map.get(&k) {
                        assert_eq!(v, format!("value {k}"), "a reader saw a wrong value");
                    }
                    n += 1;
                }
                lookups.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let start = Instant::now();
    for k in 0..20_000u64 {
        map.insert(k, format!("value {k}"));
        if k % 3 == 0 {
            map.remove(&(k / 2));
        }
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    prwlock::rcu::barrier();
    println!(
        "20000 inserts and {} removes in {elapsed:.2?} beside {} lookups; {} entries in {} buckets; {:?}",
        20_000 / 3 + 1,
        lookups.load(Ordering::Relaxed),
        map.len(),
        map.buckets(),
        prwlock::rcu::RcuDomain::global().stats(),
    );
}
