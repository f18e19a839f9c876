//! How long a writer's revocation takes with many fast readers in a tight
//! loop (more threads than CPUs: readers descheduled inside their section
//! hold it up until they run again).
//!
//! `cargo run --release -p bravo --features stats --example revoke_probe -- 63`
//! prints, for four fresh locks, the first write's wait and the time the
//! `stats` counters put on revoking.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let readers: usize = std::env::args()
        .nth(1)
        .map_or(63, |s| s.parse().expect("the number of reader threads"));
    for round in 0..4 {
        let lock = Arc::new(bravo::RwLock::new(0u64));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..readers)
            .map(|_| {
                let (lock, stop) = (lock.clone(), stop.clone());
                std::thread::spawn(move || {
                    // Relaxed: a stop flag.
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::black_box(*lock.read());
                    }
                })
            })
            .collect();
        // The readers run, biased (the first slow read sets the bias).
        std::thread::sleep(Duration::from_millis(200));
        let before = bravo::stats::snapshot();
        let t0 = Instant::now();
        *lock.write() += 1;
        let waited = t0.elapsed();
        let after = bravo::stats::snapshot();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        println!(
            "round {round}: {readers} readers: write took {:.1} ms ({} revocation, {:.1} ms revoking)",
            waited.as_secs_f64() * 1e3,
            after.revocations - before.revocations,
            (after.revocation_secs - before.revocation_secs) * 1e3,
        );
    }
}
