//! Uncontended latency: one thread, a read lock/unlock pair and a write
//! lock/unlock pair, for every lock of the workspace and the peers.
//!
//! `cargo bench --bench latency` (criterion; medians in its report and under
//! `target/criterion`). A filter selects locks: `cargo bench --bench latency -- pf_q`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use rwlock_core::{BrLock, PfQueue, PfTicket, PthreadRwLock};

/// Benchmarks one guard-returning lock under `name`.
macro_rules! pair {
    ($c:expr, $name:expr, $lock:expr, $read:ident, $write:ident) => {{
        let lock = $lock;
        let mut g = $c.benchmark_group("read_pair");
        g.bench_function($name, |b| {
            b.iter(|| {
                let guard = black_box(&lock).$read();
                black_box(&*guard);
            })
        });
        g.finish();
        let mut g = $c.benchmark_group("write_pair");
        g.bench_function($name, |b| {
            b.iter(|| {
                let mut guard = black_box(&lock).$write();
                *guard += 1;
            })
        });
        g.finish();
    }};
}

fn latency(c: &mut Criterion) {
    pair!(
        c,
        "pf_t",
        lock_api::RwLock::<PfTicket, u64>::new(0),
        read,
        write
    );
    pair!(
        c,
        "pf_q",
        lock_api::RwLock::<PfQueue, u64>::new(0),
        read,
        write
    );
    pair!(
        c,
        "brlock",
        lock_api::RwLock::<BrLock, u64>::new(0),
        read,
        write
    );
    pair!(
        c,
        "pthread",
        lock_api::RwLock::<PthreadRwLock, u64>::new(0),
        read,
        write
    );
    pair!(
        c,
        "parking_lot",
        parking_lot::RwLock::new(0u64),
        read,
        write
    );
    {
        let lock = std::sync::RwLock::new(0u64);
        c.benchmark_group("read_pair").bench_function("std", |b| {
            b.iter(|| {
                let guard = black_box(&lock).read().unwrap();
                black_box(&*guard);
            })
        });
        c.benchmark_group("write_pair").bench_function("std", |b| {
            b.iter(|| *black_box(&lock).write().unwrap() += 1)
        });
    }
    {
        let lock = crossbeam_utils::sync::ShardedLock::new(0u64);
        c.benchmark_group("read_pair")
            .bench_function("crossbeam_sharded", |b| {
                b.iter(|| {
                    let guard = black_box(&lock).read().unwrap();
                    black_box(&*guard);
                })
            });
        c.benchmark_group("write_pair")
            .bench_function("crossbeam_sharded", |b| {
                b.iter(|| *black_box(&lock).write().unwrap() += 1)
            });
    }
}

criterion_group! {
    name = benches;
    // Short runs: 14 measurements finish in well under a minute; the pairs
    // take nanoseconds, so 2 s gives hundreds of millions of iterations.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = latency
}
criterion_main!(benches);
