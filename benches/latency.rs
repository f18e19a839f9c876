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

use std::time::{Duration, Instant};

use bravo::{Bravo, Policy};
use lock_api::RawRwLock;

use criterion::{Criterion, criterion_group, criterion_main};
use numa_rwlocks::registry::LOCKS;

fn latency(c: &mut Criterion) {
    for (group, write) in [("read_pair", false), ("write_pair", true)] {
        let mut g = c.benchmark_group(group);
        for lock in LOCKS {
            g.bench_function(lock.name, |b| {
                b.iter_custom(|iters| (lock.pairs)(iters, write))
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

criterion_group! {
    name = benches;
    // Short runs: 18 measurements in well under a minute; the pairs take
    // nanoseconds, so 2 s gives hundreds of millions of iterations.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = latency, bravo_groups
}
criterion_main!(benches);
