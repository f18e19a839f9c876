//! Throughput of prwlock in its write-heavy (active) mode, each thread on a
//! lock of its own or all on one lock: the probe behind `docs/prwlock.md`,
//! "Active-mode releases".
//!
//! ```sh
//! cargo run --release --example prwlock_active_probe -- [THREADS] [own|shared] [WRITE_EVERY]
//! ```
//!
//! Each thread loops for 500 ms over its lock (or the one shared lock),
//! writing once in `WRITE_EVERY` operations (default 10) and reading
//! otherwise, with empty critical sections. Writes beside another running
//! thread of the process pay a `membarrier`, so the locks switch to active
//! reading (`prwlock::policy`); the probe prints the operations per second
//! over all threads and the share of samples (one per 1000 operations)
//! that found the thread's lock in that mode.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Lock = prwlock::RwLock<u64>;

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(2, |s| s.parse().expect("THREADS"));
    let shared = match args.next().as_deref() {
        None | Some("own") => false,
        Some("shared") => true,
        Some(other) => panic!("expected own or shared, got {other}"),
    };
    let every: u64 = args.next().map_or(10, |s| s.parse().expect("WRITE_EVERY"));
    assert!(
        threads >= 1 && every >= 1,
        "THREADS and WRITE_EVERY must be at least 1"
    );
    let locks: Vec<Lock> = (0..threads).map(|_| Lock::new(0)).collect();
    let stop = AtomicBool::new(false);
    let (ops, samples, active) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let lock = &locks[if shared { 0 } else { t }];
            let (stop, ops, samples, active) = (&stop, &ops, &samples, &active);
            s.spawn(move || {
                let (mut n, mut seen, mut in_mode) = (0u64, 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..1000u64 {
                        if i % every == 0 {
                            *lock.write() += 1;
                        } else {
                            std::hint::black_box(*lock.read());
                        }
                    }
                    n += 1000;
                    seen += 1;
                    // SAFETY: only to ask the raw lock for its mode.
                    in_mode += u64::from(unsafe { lock.raw() }.is_write_heavy_mode());
                }
                ops.fetch_add(n, Ordering::Relaxed);
                samples.fetch_add(seen, Ordering::Relaxed);
                active.fetch_add(in_mode, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "threads={threads} {} every={every}: {:.2} M ops/s, write-heavy mode in {:.0}% of samples",
        if shared { "shared" } else { "own" },
        ops.load(Ordering::Relaxed) as f64 / secs / 1e6,
        active.load(Ordering::Relaxed) as f64 * 100.0
            / samples.load(Ordering::Relaxed).max(1) as f64
    );
}
