//! Story 1: you already use parking_lot's lock through `lock_api`; wrap its
//! raw lock in `Bravo` and readers stop sharing one cache line.
//!
//! `cargo run --release --example bravo_wrap_parking_lot`
//!
//! A routing table read by every worker on every request and replaced now
//! and then by one updater thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bravo::Bravo;

/// Before: `lock_api::RwLock<parking_lot::RawRwLock, T>` (= `parking_lot::RwLock<T>`).
/// After: the same lock, biased towards readers.
type RouteLock<T> = lock_api::RwLock<Bravo<parking_lot::RawRwLock>, T>;

fn main() {
    let routes: Arc<RouteLock<HashMap<u32, String>>> = Arc::new(RouteLock::new(
        (0..64).map(|k| (k, format!("backend-{}", k % 4))).collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (routes, stop, lookups) = (routes.clone(), stop.clone(), lookups.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    let key = (n as u32).wrapping_mul(2654435761).wrapping_add(w) % 64;
                    let backend = routes.read().get(&key).map(|s| s.len());
                    assert!(backend.is_some());
                    n += 1;
                }
                lookups.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let started = Instant::now();
    for generation in 1..=20 {
        std::thread::sleep(Duration::from_millis(10));
        let mut table = routes.write(); // revokes the bias, waits for readers
        for (k, v) in table.iter_mut() {
            *v = format!("backend-{}-gen{generation}", k % 4);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let n = lookups.load(Ordering::Relaxed);
    println!(
        "{n} lookups by 4 workers and 20 table updates in {secs:.2} s ({:.1} M lookups/s)",
        n as f64 / secs / 1e6
    );
    assert!(routes.read()[&1].ends_with("gen20"));
}
