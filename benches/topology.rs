//! What each way of asking "which CPU am I on?" costs, and `current_node`.
//!
//! `cargo bench --bench topology`; the medians go into the docs of
//! `rwlock_core::topology`. A method the machine lacks (rseq, `RDPID`,
//! `RDTSCP`, or anything but Linux) is reported on stderr and skipped.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use rwlock_core::topology::{self, Topology, probe};

/// Benchmarks `read` under `name` if it works here. `read` is a function item
/// (a type of its own), so each candidate is inlined as a lock would inline it.
///
/// The `Option` is unwrapped inside the measured closure: criterion passes
/// each result through `black_box`, and a 16-byte `Option<usize>` written as
/// two stores and read back as one load misses store forwarding, which adds
/// about 6 ns on this VM to every method alike.
fn if_available(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    read: impl Fn() -> Option<usize> + Copy,
) {
    match read() {
        Some(cpu) => {
            eprintln!("{name}: available (now on CPU {cpu})");
            group.bench_function(name, |b| b.iter(|| black_box(read().unwrap_or(usize::MAX))));
        }
        None => eprintln!("{name}: not available on this machine, skipped"),
    }
}

fn current_cpu(c: &mut Criterion) {
    eprintln!("topology: {}", Topology::global());

    let mut group = c.benchmark_group("current_cpu");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // What the crate offers.
    group.bench_function("current_cpu", |b| {
        b.iter(|| black_box(topology::current_cpu()))
    });
    group.bench_function("current_cpu_uncached", |b| {
        b.iter(|| black_box(topology::current_cpu_uncached()))
    });

    // The candidates.
    if_available(&mut group, "rseq", probe::rseq);
    group.bench_function("cached", |b| b.iter(|| black_box(probe::cached())));
    if_available(&mut group, "sched_getcpu", probe::sched_getcpu);
    if_available(&mut group, "rdpid", probe::rdpid);
    if_available(&mut group, "rdtscp", probe::rdtscp);
    if_available(&mut group, "getcpu_syscall", probe::getcpu_syscall);

    group.bench_function("current_node", |b| {
        b.iter(|| black_box(topology::current_node()))
    });
    group.finish();
}

criterion_group!(benches, current_cpu);
criterion_main!(benches);
