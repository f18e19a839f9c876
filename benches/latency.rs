//! Uncontended latency: one thread, a read lock/unlock pair and a write
//! lock/unlock pair, for every lock of the harness's registry (the
//! workspace's locks and the peers: parking_lot, std, crossbeam's
//! `ShardedLock`, pthread, and Concurrency Kit's when libck-dev is installed).
//!
//! `cargo bench --bench latency` (criterion; medians in its report and under
//! `target/criterion`). A filter selects locks: `cargo bench --bench latency -- pf_q`.
//!
//! Two BRAVO-specific groups follow: `bravo_revocation` (the latency of a
//! write that revokes the bias, with the plain scan of Listing 1 and with
//! the block scan of [`bravo::Policy::BLOCK_SCAN`]; `N = 0` so that the
//! bias comes back right away) and `clock` (BRAVO's clock against
//! `Instant::now`).
//!
//! Then `table3`, the rows of the prwlock paper's Table 3 (ATC'14) for
//! prwlock against parking_lot, BRAVO (over parking_lot) and brlock:
//! `read_1reader` (an uncontended read pair), `read_2readers` (a read pair
//! while a second thread reads the same lock in a loop), `write_0readers`
//! (an uncontended write pair) and `write_1busy_reader` (a write pair while
//! a second thread reads the same lock in a loop). Filter with
//! `cargo bench --bench latency -- table3`.
//!
//! Then `prwlock_after_burst`: prwlock's write pair in a domain that once
//! had 0, 128 or 1024 threads registered at once (all exited since).
//!
//! Last, `lock_churn`: the life of a short-lived lock, created, read 20
//! times (BRAVO's bias is set by then) and dropped, for parking_lot and
//! `bravo::RwLock` (a biased lock's drop clears the slots forgotten guards
//! left: it looks only where its reads can have published).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bravo::{Bravo, Policy};
use lock_api::RawRwLock;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use numa_rwlocks::bench_lock::{BenchLock, Raw};
use numa_rwlocks::registry::LOCKS;
use numa_rwlocks::workloads::PairMode;

fn latency(c: &mut Criterion) {
    for (group, mode) in [
        ("read_pair", PairMode::Read),
        ("write_pair", PairMode::Write),
        ("write_then_read_pair", PairMode::Mixed),
    ] {
        let mut g = c.benchmark_group(group);
        for lock in LOCKS {
            g.bench_function(lock.name, |b| {
                b.iter_custom(|iters| (lock.pairs)(iters, mode))
            });
        }
        g.finish();
    }
}

/// Listing 1's scan; bias re-enabled at once.
struct PlainScanNoGuard;
impl Policy for PlainScanNoGuard {
    const SLOWDOWN_GUARD: u64 = 0;
}

/// The block scan; bias re-enabled at once.
struct BlockScanNoGuard;
impl Policy for BlockScanNoGuard {
    const SLOWDOWN_GUARD: u64 = 0;
    const BLOCK_SCAN: bool = true;
}

/// Times `iters` writes that each revoke the bias of a lock with no reader
/// inside (the scan of the whole table, 4096 slots by default).
fn revoking_writes<P: Policy>(iters: u64) -> Duration {
    let lock = Bravo::<parking_lot::RawRwLock, P>::new();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        while !lock.is_biased() {
            let g = lock.lock_shared();
            // SAFETY: our read.
            unsafe { lock.unlock_shared(g) };
        }
        let t = Instant::now();
        let g = lock.lock_exclusive();
        total += t.elapsed();
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
    }
    total
}

fn bravo_groups(c: &mut Criterion) {
    let mut g = c.benchmark_group("bravo_revocation");
    g.bench_function("plain_scan", |b| {
        b.iter_custom(revoking_writes::<PlainScanNoGuard>)
    });
    g.bench_function("block_scan", |b| {
        b.iter_custom(revoking_writes::<BlockScanNoGuard>)
    });
    g.finish();
    let mut g = c.benchmark_group("clock");
    g.bench_function("bravo_clock_now", |b| b.iter(bravo::clock::now));
    g.bench_function("instant_now", |b| b.iter(Instant::now));
    g.finish();
}

/// Times `iters` pairs of `op`.
fn time_pairs(iters: u64, op: impl Fn()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        op();
    }
    start.elapsed()
}

/// The four Table 3 rows for one lock.
fn table3_rows<L: BenchLock>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str) {
    let lock = Arc::new(L::create());
    let read = || lock.read(|| black_box(()));
    let write = || lock.write(|| black_box(()));
    g.bench_function(format!("read_1reader/{name}"), |b| {
        b.iter_custom(|iters| time_pairs(iters, read))
    });
    g.bench_function(format!("write_0readers/{name}"), |b| {
        b.iter_custom(|iters| time_pairs(iters, write))
    });
    // A second thread reads the same lock without pause meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let busy = {
        let (lock, stop) = (lock.clone(), stop.clone());
        std::thread::spawn(move || {
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                lock.read(|| black_box(()));
            }
        })
    };
    g.bench_function(format!("read_2readers/{name}"), |b| {
        b.iter_custom(|iters| time_pairs(iters, read))
    });
    g.bench_function(format!("write_1busy_reader/{name}"), |b| {
        b.iter_custom(|iters| time_pairs(iters, write))
    });
    // Relaxed: a stop flag.
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
}

fn table3(c: &mut Criterion) {
    let mut g = c.benchmark_group("table3");
    table3_rows::<Raw<prwlock::PrwLock>>(&mut g, "prwlock");
    table3_rows::<Raw<parking_lot::RawRwLock>>(&mut g, "parking_lot");
    table3_rows::<Raw<bravo::RawRwLock>>(&mut g, "bravo_parking_lot");
    table3_rows::<Raw<rwlock_core::BrLock>>(&mut g, "brlock");
    g.finish();
}

/// prwlock's uncontended write pair in a domain that once had `burst`
/// threads registered at once, all exited since: each write walks the
/// domain's records twice (reports, then holds), and the walk should cost
/// what the threads registered now cost (`docs/prwlock.md`, "Writers after
/// a burst of threads"). Filter with `cargo bench --bench latency --
/// prwlock_after_burst`.
fn prwlock_after_burst(c: &mut Criterion) {
    let mut g = c.benchmark_group("prwlock_after_burst");
    for burst in [0usize, 128, 1024] {
        // A domain of its own per point: records are never freed.
        let domain: &'static prwlock::Domain = Box::leak(Box::new(prwlock::Domain::new()));
        let lock = prwlock::PrwLock::in_domain(domain);
        let read = || {
            let t = lock.lock_shared();
            // SAFETY: our own shared acquisition.
            unsafe { lock.unlock_shared(t) };
        };
        if burst > 0 {
            let all = std::sync::Barrier::new(burst);
            std::thread::scope(|s| {
                for _ in 0..burst {
                    s.spawn(|| {
                        read();
                        // Registered at once: `burst` records.
                        all.wait();
                    });
                }
            });
        }
        read();
        g.bench_function(format!("write_pair/{burst}"), |b| {
            b.iter_custom(|iters| {
                time_pairs(iters, || {
                    let w = lock.lock_exclusive();
                    // SAFETY: our own exclusive acquisition.
                    unsafe { lock.unlock_exclusive(w) };
                })
            })
        });
    }
    g.finish();
}

/// A lock's whole life: `new`, 20 read pairs, drop.
fn churn<R: RawRwLock>(iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let lock = lock_api::RwLock::<R, u64>::new(i);
        let mut sum = 0;
        for _ in 0..20 {
            sum += *lock.read();
        }
        black_box(sum);
        drop(black_box(lock));
    }
    start.elapsed()
}

fn lock_churn(c: &mut Criterion) {
    let mut g = c.benchmark_group("lock_churn");
    g.bench_function("parking_lot", |b| {
        b.iter_custom(churn::<parking_lot::RawRwLock>)
    });
    g.bench_function("bravo_parking_lot", |b| {
        b.iter_custom(churn::<bravo::RawRwLock>)
    });
    g.finish();
}

criterion_group! {
    name = benches;
    // Short runs: 18 measurements in well under a minute; the pairs take
    // nanoseconds, so 2 s gives hundreds of millions of iterations.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = latency, bravo_groups, table3, prwlock_after_burst, lock_churn
}
criterion_main!(benches);
