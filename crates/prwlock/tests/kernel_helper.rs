//! prwlock with its kernel helper (`prwlock-sys`, module `prwlock_helper`):
//! what the helper changes, measured where it is loaded. These tests are
//! ignored on machines without the module; scripts/vm-test loads it in its
//! 2-node VM and runs them there (`--ignored`) in every barrier mode, with
//! `PRWLOCK_EXPECT_MODE` saying which: the figures of the kernel-helper run
//! are asserted, the others printed beside them for comparison.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use prwlock::BarrierMode;
use support::{expected_mode, within_liveness};

const NEEDS_MODULE: &str = "needs the prwlock_helper module (scripts/vm-test loads it)";

/// CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD on the calling thread, valid pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn mode_name() -> &'static str {
    match prwlock::barrier_mode() {
        BarrierMode::KernelHelper => "kernel-helper",
        BarrierMode::Membarrier => "membarrier",
        _ => "fence",
    }
}

#[test]
#[ignore = "needs the prwlock_helper module (scripts/vm-test loads it)"]
fn runs_in_the_expected_mode() {
    assert_eq!(prwlock::barrier_mode(), expected_mode(), "{NEEDS_MODULE}");
    assert_eq!(
        prwlock::kernel_helper_stats().is_some(),
        expected_mode() == BarrierMode::KernelHelper
    );
}

/// A reader blocks (sleeps) for 300 ms inside its read section without
/// calling `schedule_out`; a writer arrives meanwhile. With the helper the
/// writer sees the holder off CPU and parks at once: its CPU time while it
/// waits stays under 5 ms. In the other modes the figure is printed.
///
/// The scenario runs twice with the same two threads and the second round
/// is the one asserted: under qemu's TCG a code path's first run includes
/// its translation, which the guest sees as CPU time (about 17 ms here).
#[test]
#[ignore = "needs the prwlock_helper module (scripts/vm-test loads it)"]
fn a_writer_parks_behind_a_reader_blocked_in_its_section() {
    const HOLD: Duration = Duration::from_millis(300);
    const ROUNDS: usize = 2;
    let lock = Arc::new(prwlock::RwLock::new(0usize));
    let inside = Arc::new(Barrier::new(2));
    let (l, i) = (lock.clone(), inside.clone());
    let reader = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            let guard = l.read();
            i.wait();
            std::thread::sleep(HOLD);
            drop(guard);
            i.wait();
        }
    });
    let (l, i) = (lock.clone(), inside.clone());
    let rounds = within_liveness("writes behind a blocked reader", move || {
        (0..ROUNDS)
            .map(|_| {
                i.wait();
                let (start, cpu) = (Instant::now(), thread_cpu());
                *l.write() += 1;
                let figures = (start.elapsed(), thread_cpu() - cpu);
                i.wait();
                figures
            })
            .collect::<Vec<_>>()
    });
    reader.join().unwrap();
    assert_eq!(*lock.read(), ROUNDS);
    println!(
        "mode {}: a writer behind a reader blocked for {HOLD:?} (waited, CPU used), \
         round by round: {rounds:?}",
        mode_name()
    );
    let (waited, spent) = rounds[ROUNDS - 1];
    assert!(
        waited >= HOLD / 2,
        "the writer got in while the reader held the lock"
    );
    if prwlock::barrier_mode() == BarrierMode::KernelHelper {
        assert!(
            spent < Duration::from_millis(5),
            "the writer burnt {spent:?} of CPU waiting for a reader the helper saw off CPU"
        );
    }
}

/// Function-call interrupts (`CAL` in /proc/interrupts) received so far,
/// summed over CPUs: what membarrier's and the helper's IPIs raise.
fn call_interrupts() -> u64 {
    let text = std::fs::read_to_string("/proc/interrupts").expect("/proc/interrupts");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("CAL:"))
        .expect("a CAL line in /proc/interrupts");
    line.split_whitespace()
        .skip(1)
        .map_while(|w| w.parse::<u64>().ok())
        .sum()
}

/// Registered readers that are idle (blocked elsewhere, never reporting)
/// while other threads of the process keep their CPUs busy: every write
/// needs a barrier for the idle readers. The helper interrupts no CPU (no
/// unreported reader runs); `membarrier` interrupts every CPU that runs a
/// thread of the process. Counted: the helper's own count, and the
/// function-call interrupts of as many `membarrier` calls.
#[test]
#[ignore = "needs the prwlock_helper module (scripts/vm-test loads it)"]
fn consensus_with_idle_readers_interrupts_fewer_cpus_than_membarrier() {
    const WRITES: u64 = 200;
    static DOMAIN: prwlock::Domain = prwlock::Domain::new();
    let lock = Arc::new(prwlock::RwLock::from_raw(
        prwlock::PrwLock::in_domain(&DOMAIN),
        0u64,
    ));
    let busy_threads = std::thread::available_parallelism().map_or(1, |n| n.get() - 1);
    let stop = Arc::new(AtomicBool::new(false));
    // Idle readers: read once (registering), then block until the end.
    let registered = Arc::new(Barrier::new(5));
    let release = Arc::new(Barrier::new(5));
    let mut threads = Vec::new();
    for _ in 0..4 {
        let (l, r, e) = (lock.clone(), registered.clone(), release.clone());
        threads.push(std::thread::spawn(move || {
            drop(l.read());
            r.wait();
            e.wait();
        }));
    }
    registered.wait();
    // Busy threads of the process that never touch the lock.
    for _ in 0..busy_threads {
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(50));
    let barriers_before = DOMAIN.stats().heavy_barriers;
    let helper_before = prwlock::kernel_helper_stats();
    let cal_before = call_interrupts();
    for _ in 0..WRITES {
        *lock.write() += 1;
    }
    let cal_writes = call_interrupts() - cal_before;
    let barriers = DOMAIN.stats().heavy_barriers - barriers_before;
    let helper = prwlock::kernel_helper_stats()
        .zip(helper_before)
        .map(|(a, b)| {
            (
                a.consensus - b.consensus,
                a.cpus_interrupted - b.cpus_interrupted,
            )
        });
    // The same number of membarrier calls, as membarrier mode would issue.
    let cal_before = call_interrupts();
    for _ in 0..barriers {
        // SAFETY: membarrier takes integers only.
        let rc = unsafe { libc::syscall(libc::SYS_membarrier, 1 << 3, 0, 0) };
        assert_eq!(rc, 0, "membarrier(PRIVATE_EXPEDITED)");
    }
    let cal_membarrier = call_interrupts() - cal_before;
    stop.store(true, Ordering::Relaxed);
    release.wait();
    for t in threads {
        t.join().unwrap();
    }
    println!(
        "mode {}: {WRITES} writes beside 4 idle registered readers and {busy_threads} busy \
         threads: {barriers} heavy barriers, helper (requests, CPUs interrupted) {helper:?}, \
         function-call interrupts during the writes {cal_writes}; {barriers} membarrier \
         calls: {cal_membarrier} function-call interrupts",
        mode_name()
    );
    if prwlock::barrier_mode() == BarrierMode::Fence {
        // Readers fence for themselves: writers need no barrier.
        assert_eq!(barriers, 0);
        return;
    }
    assert_eq!(
        barriers, WRITES,
        "idle readers never report: every write needs a barrier"
    );
    if prwlock::barrier_mode() == BarrierMode::KernelHelper {
        let (requests, interrupted) = helper.unwrap();
        assert_eq!(requests, barriers, "every barrier went to the helper");
        assert!(
            interrupted < cal_membarrier,
            "the helper interrupted {interrupted} CPUs, membarrier {cal_membarrier}"
        );
    }
}
