//! Uncontended latency: one thread, a read lock/unlock pair and a write
//! lock/unlock pair, for every lock of the harness's registry (the
//! workspace's locks and the peers: parking_lot, std, crossbeam's
//! `ShardedLock`, pthread, and Concurrency Kit's when libck-dev is installed).
//!
//! `cargo bench --bench latency` (criterion; medians in its report and under
//! `target/criterion`). A filter selects locks: `cargo bench --bench latency -- pf_q`.

use std::time::Duration;

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

criterion_group! {
    name = benches;
    // Short runs: 18 measurements in well under a minute; the pairs take
    // nanoseconds, so 2 s gives hundreds of millions of iterations.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = latency
}
criterion_main!(benches);
