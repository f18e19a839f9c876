//! The shared test harness every lock of the workspace runs (feature `testing`).
//!
//! - [`stress`] / [`stress_downgrade`]: N threads, a Bernoulli mix of reads and
//!   writes (some through the try-lock paths), each checking two invariants:
//!   - an **occupancy word**: a writer moves it from 0 to `WRITER` and back
//!     (any other value means somebody else was inside), a reader adds 1 and
//!     finds no writer;
//!   - the papers' **zero-sum array** (RWBench): a writer adds `x` to one of
//!     64 slots and subtracts it from another with plain load/store pairs, a
//!     reader sums the array and must find 0; at the end the sum must be 0
//!     (a writer overlapping another loses an update);
//!   - the lock's own view: `is_locked_exclusive()` inside every write
//!     section, `is_locked()` inside one read section in 32 and
//!     `!is_locked_exclusive()` inside another.
//! - [`check_try_lock`], [`check_downgrade`], [`check_panic_releases`]:
//!   single-threaded semantics every lock must have.
//! - [`check_try_forms`], [`check_timed`], [`check_timed_upgrade`]: try
//!   forms never block or fail on a free lock; timed forms never give up
//!   before their deadline and return soon after it (run them inside
//!   [`with_busy_threads`] for a busy machine).
//! - [`check_phase_fairness`]: the Brandenburg-Anderson phase-fair order.
//! - [`Hooked`]: any lock with a test's [`Hooks`] around its acquisitions
//!   (a pause where a preemption would fall, a pin on first use, a count),
//!   every other operation forwarded.
//! - [`serial`], [`best_of`] and [`spawn_and_hold`]: for tests that measure
//!   time or CPU, one at a time, judged on the best of a few rounds, and a
//!   waiter kept waiting for a while once it runs; [`pin_to`],
//!   [`pin_to_allowed`] and [`allowed_cpus`] (Linux) to place threads.
//!
//! Each check panics with a message naming the broken invariant. The stress
//! run counts operations, not time, so it does the same work on any machine;
//! at 8 threads it is oversubscribed on small machines, on purpose. A worker
//! whose check fails inside a critical section releases the lock before its
//! panic goes on (else the others would wait for it forever, and the failure
//! would show as a silent hang); a run that outlasts
//! [`StressConfig::watchdog`] aborts the process with a message.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lock_api::{RawRwLock, RawRwLockDowngrade, RawRwLockTimed, RawRwLockUpgradeTimed};

#[cfg(target_os = "linux")]
mod cpus;
mod hooked;
mod timing;
#[cfg(target_os = "linux")]
pub use cpus::{allowed_cpus, pin_to, pin_to_allowed};
pub use hooked::{Hooked, Hooks, LockOp};
pub use timing::{best_of, serial, spawn_and_hold};

const SLOTS: usize = 64;
const WRITER: isize = isize::MIN / 2;

/// What a stress run does.
#[derive(Debug, Clone)]
pub struct StressConfig {
    /// Threads running at once.
    pub threads: usize,
    /// Operations per thread.
    pub ops_per_thread: usize,
    /// Probability of a write, in percent (0 to 100).
    pub write_percent: u32,
    /// Slot pairs read (readers) or updated (writers) inside a critical section.
    pub cs_len: usize,
    /// Percent of operations that go through `try_lock_*` first.
    pub try_percent: u32,
    /// How long the run may take before it is taken for a deadlock (or a
    /// lost wake-up): the process then aborts with a message on stderr,
    /// instead of hanging the test run without one.
    pub watchdog: Duration,
}

impl StressConfig {
    /// `threads` threads, 20% writes, 10% try-locks, short critical sections,
    /// an operation count that finishes in well under a second per thread
    /// count on a small machine.
    pub fn new(threads: usize) -> Self {
        StressConfig {
            threads,
            ops_per_thread: 20_000,
            write_percent: 20,
            cs_len: 4,
            try_percent: 10,
            watchdog: Duration::from_secs(300),
        }
    }
}

/// What a stress run did.
#[derive(Debug, Clone, Default)]
pub struct StressReport {
    /// Completed read critical sections.
    pub reads: usize,
    /// Completed write critical sections.
    pub writes: usize,
    /// Critical sections entered through a successful try-lock.
    pub try_successes: usize,
    /// Writes that were downgraded to reads.
    pub downgrades: usize,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

/// Orderings: everything here is Relaxed, on purpose. The occupancy checks
/// are read-modify-writes of one word, so each sees the value just before
/// it in that word's modification order whatever its ordering: they catch
/// two threads inside together without leaning on the lock under test. And
/// they must not order anything else: a SeqCst (Release/Acquire) occupancy
/// word would carry each section's accesses to the next section by itself,
/// hiding a lock whose own Release/Acquire pairs are too weak from the
/// zero-sum array on a weakly ordered CPU and from ThreadSanitizer's
/// witness cells (`--cfg tsan`). The array is the data the lock
/// must order; the counters are tallies read after the threads are joined
/// (joining orders them).
struct Shared {
    occupancy: AtomicIsize,
    array: [AtomicI64; SLOTS],
    #[cfg(tsan)]
    witness: Witness,
    reads: AtomicUsize,
    writes: AtomicUsize,
    tries: AtomicUsize,
    downgrades: AtomicUsize,
}

/// Plain (non-atomic) data that writers update and readers read, built only
/// under `--cfg tsan` (`scripts/tsan`). ThreadSanitizer never reports a race
/// on atomics, so the Relaxed array above cannot show it a lock whose
/// Release/Acquire pairs are too weak: these cells can. A correct lock orders
/// every access here (a write section happens before the next section of
/// any kind, a read section before the next write section); a lock that
/// does not is a data race TSan reports with both stacks.
#[cfg(tsan)]
struct Witness(std::cell::UnsafeCell<[u64; WITNESS_CELLS]>);

#[cfg(tsan)]
const WITNESS_CELLS: usize = 8;

// SAFETY: the cells are written only inside write sections and read only
// inside read sections of the lock under test, which is what that lock must
// make exclusive; the harness builds this type only for ThreadSanitizer
// runs, whose point is to report the accesses a broken lock leaves racing.
#[cfg(tsan)]
unsafe impl Sync for Witness {}

impl Shared {
    fn new() -> Self {
        Shared {
            occupancy: AtomicIsize::new(0),
            array: std::array::from_fn(|_| AtomicI64::new(0)),
            #[cfg(tsan)]
            witness: Witness(std::cell::UnsafeCell::new([0; WITNESS_CELLS])),
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            tries: AtomicUsize::new(0),
            downgrades: AtomicUsize::new(0),
        }
    }

    /// Writers: a plain read-modify-write of one witness cell.
    ///
    /// Volatile, cell by cell, here and in `witness_read`: each access stays
    /// one instrumented load or store. A whole-array copy becomes a memcpy,
    /// which `scripts/tsan` builds without instrumentation (gcc's libtsan
    /// lacks `__tsan_memcpy`) and codegen then inlines: TSan never saw it.
    #[cfg(tsan)]
    fn witness_write(&self, rng: &mut u64) {
        let i = next(rng) as usize % WITNESS_CELLS;
        let cell = self.witness.0.get().cast::<u64>().wrapping_add(i);
        // SAFETY: one of the cells, inside a write section (see `Witness`).
        unsafe { cell.write_volatile(cell.read_volatile().wrapping_add(1)) };
    }

    /// Readers: a plain read of every witness cell.
    #[cfg(tsan)]
    fn witness_read(&self) {
        let cells = self.witness.0.get().cast::<u64>();
        for i in 0..WITNESS_CELLS {
            // SAFETY: one of the cells, inside a read section (see `Witness`).
            std::hint::black_box(unsafe { cells.wrapping_add(i).read_volatile() });
        }
    }

    fn enter_read(&self) {
        // Relaxed: an RMW (see `Shared`: it must order nothing).
        let prev = self.occupancy.fetch_add(1, Ordering::Relaxed);
        assert!(prev >= 0, "a reader entered while a writer was inside");
    }

    fn read_section(&self, rng: &mut u64, cs_len: usize) {
        #[cfg(tsan)]
        self.witness_read();
        let mut sum = 0i64;
        for _ in 0..cs_len {
            let i = next(rng) as usize % SLOTS;
            // Relaxed: the data under test; the lock must order it.
            std::hint::black_box(self.array[i].load(Ordering::Relaxed));
        }
        for slot in &self.array {
            sum = sum.wrapping_add(slot.load(Ordering::Relaxed));
        }
        assert_eq!(sum, 0, "a reader saw a half-done write (zero-sum violated)");
    }

    fn leave_read(&self) {
        // Relaxed: as in `enter_read`.
        let prev = self.occupancy.fetch_sub(1, Ordering::Relaxed);
        assert!(prev >= 1, "reader count underflow: a writer was inside");
    }

    fn enter_write(&self) {
        if let Err(seen) =
            self.occupancy
                .compare_exchange(0, WRITER, Ordering::Relaxed, Ordering::Relaxed)
        {
            panic!("a writer entered while occupied (occupancy {seen})");
        }
    }

    fn write_section(&self, rng: &mut u64, cs_len: usize) {
        #[cfg(tsan)]
        self.witness_write(rng);
        for _ in 0..cs_len {
            let i = next(rng) as usize % SLOTS;
            let j = next(rng) as usize % SLOTS;
            let x = (next(rng) % 1000) as i64 + 1;
            // Plain load/store pairs (not fetch_add): overlapping writers
            // lose updates and the final sum shows it.
            let a = self.array[i].load(Ordering::Relaxed);
            self.array[i].store(a.wrapping_add(x), Ordering::Relaxed);
            std::hint::spin_loop();
            let b = self.array[j].load(Ordering::Relaxed);
            self.array[j].store(b.wrapping_sub(x), Ordering::Relaxed);
        }
    }

    fn leave_write(&self) {
        if let Err(seen) =
            self.occupancy
                .compare_exchange(WRITER, 0, Ordering::Relaxed, Ordering::Relaxed)
        {
            panic!("somebody entered during a write (occupancy {seen})");
        }
    }

    fn writer_to_reader(&self) {
        if let Err(seen) =
            self.occupancy
                .compare_exchange(WRITER, 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            panic!("somebody entered during a write before a downgrade (occupancy {seen})");
        }
    }

    fn sum(&self) -> i64 {
        self.array
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .fold(0i64, i64::wrapping_add)
    }
}

/// Runs a check made inside a critical section: its panic, if any, to be
/// resumed once the lock is released.
fn checked(check: impl FnOnce()) -> Option<Box<dyn std::any::Any + Send>> {
    catch_unwind(AssertUnwindSafe(check)).err()
}

/// Aborts the process with a message unless `done` is set (and this thread
/// unparked) within `limit`. The message goes to the process's stderr
/// directly: libtest captures `eprintln!` from threads a test spawns. (A
/// flag and `park_timeout` rather than a channel: ThreadSanitizer sees the
/// flag's ordering, and a channel's generic internals would be
/// instrumented while the rest of std is not.)
fn watchdog(done: &std::sync::atomic::AtomicBool, limit: Duration, threads: usize) {
    use std::io::Write;
    let start = Instant::now();
    // Acquire: pairs with the Release store that ends the run.
    while !done.load(Ordering::Acquire) {
        let waited = start.elapsed();
        if waited < limit {
            std::thread::park_timeout(limit - waited);
            continue;
        }
        let _ = writeln!(
            std::io::stderr(),
            "rwlock_core::testing: a stress run of {threads} threads did not finish in \
             {limit:?}: a deadlock or a lost wake-up"
        );
        std::process::abort();
    }
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

type Downgrade<'a, R> = Option<
    &'a (dyn Fn(&R, <R as RawRwLock>::ExclusiveGuard) -> <R as RawRwLock>::SharedGuard + Sync),
>;

fn run<R: RawRwLock + Sync>(
    lock: &R,
    cfg: &StressConfig,
    downgrade: Downgrade<'_, R>,
) -> StressReport {
    assert!(cfg.threads > 0, "StressConfig::threads must be at least 1");
    assert!(cfg.write_percent <= 100 && cfg.try_percent <= 100);
    let shared = Shared::new();
    let start = Instant::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        /// Ends the watchdog when the run ends, unwinding included.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool, std::thread::Thread);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                // Release: pairs with the watchdog's Acquire load.
                self.0.store(true, Ordering::Release);
                self.1.unpark();
            }
        }
        let (limit, threads, done) = (cfg.watchdog, cfg.threads, &done);
        let watcher = s.spawn(move || watchdog(done, limit, threads));
        let stop = Stop(done, watcher.thread().clone());
        let mut workers = Vec::with_capacity(cfg.threads);
        for t in 0..cfg.threads {
            let shared = &shared;
            workers.push(s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ ((t as u64 + 1) << 17);
                for _ in 0..cfg.ops_per_thread {
                    let roll = (next(&mut rng) % 100) as u32;
                    let try_first = ((next(&mut rng) % 100) as u32) < cfg.try_percent;
                    if roll < cfg.write_percent {
                        let g = match try_first.then(|| lock.try_lock_exclusive()).flatten() {
                            Some(g) => {
                                shared.tries.fetch_add(1, Ordering::Relaxed);
                                g
                            }
                            None => lock.lock_exclusive(),
                        };
                        // Every check inside the section is resumed after the
                        // release: a failure must not leave the lock held
                        // (the other threads would hang without a word).
                        let mut failed = checked(|| shared.enter_write());
                        let exclusive = lock.is_locked_exclusive();
                        shared.write_section(&mut rng, cfg.cs_len);
                        match downgrade {
                            Some(down) if roll.is_multiple_of(4) => {
                                failed = failed.or_else(|| checked(|| shared.writer_to_reader()));
                                let g = down(lock, g);
                                failed = failed.or_else(|| {
                                    checked(|| {
                                        shared.read_section(&mut rng, cfg.cs_len);
                                        shared.leave_read();
                                    })
                                });
                                // SAFETY: `g` is this thread's shared acquisition.
                                unsafe { lock.unlock_shared(g) };
                                shared.downgrades.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {
                                failed = failed.or_else(|| checked(|| shared.leave_write()));
                                // SAFETY: `g` is this thread's exclusive acquisition.
                                unsafe { lock.unlock_exclusive(g) };
                            }
                        }
                        if let Some(panic) = failed {
                            std::panic::resume_unwind(panic);
                        }
                        assert!(
                            exclusive,
                            "is_locked_exclusive() was false inside a write section"
                        );
                        shared.writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        let g = match try_first.then(|| lock.try_lock_shared()).flatten() {
                            Some(g) => {
                                shared.tries.fetch_add(1, Ordering::Relaxed);
                                g
                            }
                            None => lock.lock_shared(),
                        };
                        // One read in 32 (a BRAVO fast read answers with a
                        // table scan); asserted after the release, as the
                        // section's own checks are.
                        let locked = roll % 32 != 31 || lock.is_locked();
                        // And never held exclusively while we read (a
                        // phase-fair lock said so while a writer waited for
                        // us: found in review).
                        let shared_only = roll % 32 != 30 || !lock.is_locked_exclusive();
                        let failed = checked(|| {
                            shared.enter_read();
                            shared.read_section(&mut rng, cfg.cs_len);
                            shared.leave_read();
                        });
                        // SAFETY: `g` is this thread's shared acquisition.
                        unsafe { lock.unlock_shared(g) };
                        if let Some(panic) = failed {
                            std::panic::resume_unwind(panic);
                        }
                        assert!(locked, "is_locked() was false inside a read section");
                        assert!(
                            shared_only,
                            "is_locked_exclusive() was true inside a read section"
                        );
                        shared.reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        // Joined here rather than left to the end of the scope: a join is a
        // `pthread_join`, which ThreadSanitizer sees as ordering a worker's
        // accesses before the checks below (and the threads' teardown
        // before the scope's); the scope's own wait is an atomic counter
        // inside (uninstrumented) std, which it does not see. Every worker
        // is joined before the watchdog stops, so one that hangs after
        // another failed is still reported; the first failure in join
        // order is resumed.
        let mut failed = None;
        for worker in workers {
            if let Err(panic) = worker.join() {
                failed.get_or_insert(panic);
            }
        }
        drop(stop);
        // The watchdog only returns (it aborts otherwise).
        let _ = watcher.join();
        if let Some(panic) = failed {
            std::panic::resume_unwind(panic);
        }
    });
    let elapsed = start.elapsed();
    assert_eq!(shared.sum(), 0, "zero-sum check failed: writes overlapped");
    assert_eq!(shared.occupancy.load(Ordering::SeqCst), 0);
    assert!(
        !lock.is_locked(),
        "lock still held after every thread released it"
    );
    let report = StressReport {
        reads: shared.reads.load(Ordering::Relaxed),
        writes: shared.writes.load(Ordering::Relaxed),
        try_successes: shared.tries.load(Ordering::Relaxed),
        downgrades: shared.downgrades.load(Ordering::Relaxed),
        elapsed,
    };
    assert_eq!(
        report.reads + report.writes,
        cfg.threads * cfg.ops_per_thread
    );
    report
}

/// Runs the stress workload on `lock` and checks the invariants; panics on
/// any violation.
pub fn stress<R: RawRwLock + Sync>(lock: &R, cfg: &StressConfig) -> StressReport {
    run(lock, cfg, None)
}

/// [`stress`], where a quarter of the writes downgrade to a read section.
pub fn stress_downgrade<R: RawRwLockDowngrade + Sync>(
    lock: &R,
    cfg: &StressConfig,
) -> StressReport {
    let down = |l: &R, g: R::ExclusiveGuard| {
        // SAFETY: the harness passes its own exclusive acquisition of `lock`.
        unsafe { l.downgrade(g) }
    };
    let report = run(lock, cfg, Some(&down));
    if cfg.write_percent >= 20 && cfg.ops_per_thread >= 1000 {
        assert!(report.downgrades > 0, "downgrade path never exercised");
    }
    report
}

/// Runs [`stress`] at 1, 2 and 8 threads with the default configuration.
pub fn stress_1_2_8<R: RawRwLock + Sync>(lock: &R) {
    for threads in [1, 2, 8] {
        stress(lock, &StressConfig::new(threads));
    }
}

/// [`stress_1_2_8`], then 8 threads with 30% writes, some of them
/// downgraded to reads ([`stress_downgrade`]); checks that downgrades
/// happened and that the lock ends free.
pub fn stress_1_2_8_and_downgrade<R: RawRwLockDowngrade + Sync>(lock: &R) {
    stress_1_2_8(lock);
    let mut cfg = StressConfig::new(8);
    cfg.write_percent = 30;
    let report = stress_downgrade(lock, &cfg);
    assert!(report.downgrades > 0, "no write was downgraded");
    assert!(!lock.is_locked(), "the lock is held after the stress run");
}

/// Try-lock and `is_locked*` semantics on a free lock, single-threaded.
pub fn check_try_lock<R: RawRwLock>(lock: &R) {
    assert!(
        !lock.is_locked() && !lock.is_locked_exclusive(),
        "fresh lock reports held"
    );
    let r1 = lock
        .try_lock_shared()
        .expect("try_lock_shared on a free lock");
    let r2 = lock
        .try_lock_shared()
        .expect("a second reader must be admitted");
    assert!(lock.is_locked() && !lock.is_locked_exclusive());
    assert!(
        lock.try_lock_exclusive().is_none(),
        "writer admitted beside readers"
    );
    // SAFETY: our shared acquisitions.
    unsafe {
        lock.unlock_shared(r1);
        assert!(
            lock.try_lock_exclusive().is_none(),
            "writer admitted beside a reader"
        );
        lock.unlock_shared(r2);
    }
    assert!(!lock.is_locked(), "released lock reports held");
    let w = lock
        .try_lock_exclusive()
        .expect("try_lock_exclusive on a free lock");
    assert!(lock.is_locked() && lock.is_locked_exclusive());
    assert!(
        lock.try_lock_shared().is_none(),
        "reader admitted beside a writer"
    );
    assert!(lock.try_lock_exclusive().is_none(), "two writers admitted");
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    assert!(!lock.is_locked());
    let w = lock.lock_exclusive();
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    let r = lock.lock_shared();
    // SAFETY: our shared acquisition.
    unsafe { lock.unlock_shared(r) };
    assert!(!lock.is_locked());
}

/// Runs `f` while `hold` (an acquisition made on another thread) is held,
/// and releases it after `f` returns.
fn while_held<R: RawRwLock + Sync, T>(lock: &R, write: bool, f: impl FnOnce() -> T) -> T {
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            if write {
                let g = lock.lock_exclusive();
                held_tx.send(()).unwrap();
                let _ = done_rx.recv();
                // SAFETY: this thread's exclusive acquisition.
                unsafe { lock.unlock_exclusive(g) };
            } else {
                let g = lock.lock_shared();
                held_tx.send(()).unwrap();
                let _ = done_rx.recv();
                // SAFETY: this thread's shared acquisition.
                unsafe { lock.unlock_shared(g) };
            }
        });
        held_rx.recv().expect("the holder thread failed");
        let out = f();
        done_tx.send(()).unwrap();
        out
    })
}

/// The try forms never block and never fail without cause: on a free lock
/// each succeeds; while another thread holds the lock in a conflicting
/// mode each fails within `slack`; while another thread reads, a try-read
/// succeeds.
pub fn check_try_forms<R: RawRwLock + Sync>(lock: &R, slack: Duration) {
    let w = lock
        .try_lock_exclusive()
        .expect("try_lock_exclusive failed on a free lock");
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    let r = lock
        .try_lock_shared()
        .expect("try_lock_shared failed on a free lock");
    // SAFETY: our shared acquisition.
    unsafe { lock.unlock_shared(r) };
    while_held(lock, true, || {
        let t0 = Instant::now();
        assert!(lock.try_lock_shared().is_none(), "try-read beside a writer");
        assert!(
            lock.try_lock_exclusive().is_none(),
            "try-write beside a writer"
        );
        let took = t0.elapsed();
        assert!(
            took <= slack,
            "try forms blocked for {took:?} beside a writer"
        );
    });
    while_held(lock, false, || {
        let t0 = Instant::now();
        assert!(
            lock.try_lock_exclusive().is_none(),
            "try-write beside a reader"
        );
        let r = lock
            .try_lock_shared()
            .expect("try-read refused beside a reader (no writer waiting)");
        // SAFETY: our shared acquisition.
        unsafe { lock.unlock_shared(r) };
        let took = t0.elapsed();
        assert!(
            took <= slack,
            "try forms blocked for {took:?} beside a reader"
        );
    });
    assert!(!lock.is_locked(), "the lock is held after the try checks");
}

/// Asserts that a timed attempt that failed did so no earlier than its
/// deadline and no later than `slack` after it.
fn check_failed_in_time(what: &str, ok: bool, t0: Instant, timeout: Duration, slack: Duration) {
    let took = t0.elapsed();
    assert!(!ok, "{what} succeeded against a conflicting holder");
    assert!(
        took >= timeout,
        "{what} gave up after {took:?}, before its {timeout:?} deadline"
    );
    assert!(
        took <= timeout + slack,
        "{what} returned {took:?} after it started, more than {slack:?} past its {timeout:?} deadline"
    );
}

/// lock_api's `RawRwLockTimed` contract: a timed attempt that fails never
/// returns before its deadline, and returns within `slack` after it; one
/// whose holder leaves before the deadline succeeds. `timeout` is the
/// deadline each attempt is given (100 ms is plenty).
pub fn check_timed<R>(lock: &R, timeout: Duration, slack: Duration)
where
    R: RawRwLockTimed<Duration = Duration, Instant = Instant> + Sync,
{
    while_held(lock, true, || {
        let t0 = Instant::now();
        let ok = lock.try_lock_shared_for(timeout).is_some();
        check_failed_in_time("try_lock_shared_for", ok, t0, timeout, slack);
        let t0 = Instant::now();
        let ok = lock.try_lock_shared_until(t0 + timeout).is_some();
        check_failed_in_time("try_lock_shared_until", ok, t0, timeout, slack);
        let t0 = Instant::now();
        let ok = lock.try_lock_exclusive_for(timeout).is_some();
        check_failed_in_time("try_lock_exclusive_for (writer)", ok, t0, timeout, slack);
    });
    while_held(lock, false, || {
        let t0 = Instant::now();
        let ok = lock.try_lock_exclusive_for(timeout).is_some();
        check_failed_in_time("try_lock_exclusive_for (reader)", ok, t0, timeout, slack);
        let t0 = Instant::now();
        let ok = lock.try_lock_exclusive_until(t0 + timeout).is_some();
        check_failed_in_time("try_lock_exclusive_until", ok, t0, timeout, slack);
        let r = lock
            .try_lock_shared_for(timeout)
            .expect("timed read refused beside a reader");
        // SAFETY: our shared acquisition.
        unsafe { lock.unlock_shared(r) };
    });
    // A holder that leaves in time: the attempt succeeds.
    std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        s.spawn(move || {
            let g = lock.lock_exclusive();
            held_tx.send(()).unwrap();
            std::thread::sleep(timeout / 2);
            // SAFETY: this thread's exclusive acquisition.
            unsafe { lock.unlock_exclusive(g) };
        });
        held_rx.recv().unwrap();
        let w = lock
            .try_lock_exclusive_for(timeout * 20)
            .expect("timed write failed although the holder left in time");
        // SAFETY: our exclusive acquisition.
        unsafe { lock.unlock_exclusive(w) };
    });
    // Zero timeouts: a try.
    let w = lock
        .try_lock_exclusive_for(Duration::ZERO)
        .expect("a zero-timeout write failed on a free lock");
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    assert!(!lock.is_locked(), "the lock is held after the timed checks");
}

/// [`check_timed`] for upgrades: beside another reader an upgradable read
/// is granted, and its timed upgrade fails no earlier than the deadline
/// and within `slack` after it; once the reader leaves it succeeds.
pub fn check_timed_upgrade<R>(lock: &R, timeout: Duration, slack: Duration)
where
    R: RawRwLockUpgradeTimed + RawRwLockTimed<Duration = Duration, Instant = Instant> + Sync,
{
    let u = while_held(lock, false, || {
        let u = lock
            .try_lock_upgradable_for(timeout)
            .expect("upgradable read refused beside a reader");
        let t0 = Instant::now();
        // SAFETY: our upgradable acquisition (handed back on failure).
        let u = match unsafe { lock.try_upgrade_for(u, timeout) } {
            Ok(_) => panic!("upgrade succeeded beside a reader"),
            Err(u) => u,
        };
        check_failed_in_time("try_upgrade_for", false, t0, timeout, slack);
        let t0 = Instant::now();
        // SAFETY: as above.
        match unsafe { lock.try_upgrade_until(u, t0 + timeout) } {
            Ok(_) => panic!("upgrade succeeded beside a reader"),
            Err(u) => {
                check_failed_in_time("try_upgrade_until", false, t0, timeout, slack);
                u
            }
        }
    });
    // SAFETY: our upgradable acquisition; the reader has left.
    let w = unsafe { lock.try_upgrade_for(u, timeout) }
        .unwrap_or_else(|_| panic!("upgrade failed on an otherwise free lock"));
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    assert!(
        !lock.is_locked(),
        "the lock is held after the upgrade checks"
    );
}

/// `is_locked()` is true for a thread that holds a read lock, however fast
/// other readers come and go: holds a read while two threads churn read
/// acquisitions and polls `polls` times. (PF-T and PF-Q read their
/// arrival count before their departure count, and a reader that came and
/// went between the two loads made a holder see the lock free.)
pub fn check_is_locked_under_reader_churn<R: RawRwLock + Sync>(lock: &R, polls: u64) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let g = lock.lock_shared();
    let wrong = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    let r = lock.lock_shared();
                    // SAFETY: this thread's shared acquisition.
                    unsafe { lock.unlock_shared(r) };
                }
            });
        }
        let wrong = (0..polls).filter(|_| !lock.is_locked()).count();
        // Relaxed: a stop flag; the scope joins the churners.
        stop.store(true, Ordering::Relaxed);
        wrong
    });
    // SAFETY: our shared acquisition.
    unsafe { lock.unlock_shared(g) };
    assert_eq!(
        wrong, 0,
        "is_locked() said free {wrong} times in {polls} polls by a reader holding the lock"
    );
}

/// Keeps `threads` threads spinning (a busy machine) while `f` runs.
pub fn with_busy_threads<T>(threads: usize, f: impl FnOnce() -> T) -> T {
    /// Stops the spinners however `f` ends (a failed assertion included).
    struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            // Relaxed: a stop flag; the scope's join orders the rest.
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let _stop = Stop(&stop);
        f()
    })
}

/// Downgrade keeps writers out and lets readers in.
pub fn check_downgrade<R: RawRwLockDowngrade>(lock: &R) {
    let w = lock.lock_exclusive();
    // SAFETY: our exclusive acquisition.
    let r = unsafe { lock.downgrade(w) };
    assert!(
        lock.is_locked() && !lock.is_locked_exclusive(),
        "downgraded lock is exclusive"
    );
    assert!(
        lock.try_lock_exclusive().is_none(),
        "writer admitted after a downgrade"
    );
    let r2 = lock
        .try_lock_shared()
        .expect("reader refused beside a downgraded reader");
    // SAFETY: our shared acquisitions.
    unsafe {
        lock.unlock_shared(r2);
        lock.unlock_shared(r);
    }
    assert!(!lock.is_locked());
}

/// A panic inside a read or write critical section releases the lock.
pub fn check_panic_releases<R: RawRwLock + Sync>(lock: &lock_api::RwLock<R, u64>) {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let w = catch_unwind(AssertUnwindSafe(|| {
        let mut g = lock.write();
        *g += 1;
        panic!("inside a write section");
    }));
    let r = catch_unwind(AssertUnwindSafe(|| {
        let g = lock.read();
        assert_eq!(*g, 1);
        panic!("inside a read section");
    }));
    std::panic::set_hook(hook);
    assert!(w.is_err() && r.is_err());
    assert!(
        !lock.is_locked(),
        "a panicking guard did not release the lock"
    );
    *lock.try_write().expect("lock free after panics") += 1;
    assert_eq!(*lock.read(), 2);
}

/// Who entered, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Reader number `n`.
    Reader(u32),
    /// Writer number `n`.
    Writer(u32),
}

/// Phase-fairness (Brandenburg-Anderson): a reader waits for at most one
/// writer phase, a writer for at most one reader phase.
///
/// Scenario: reader R0 holds the lock; writer W1 arrives (waits for R0);
/// reader R1 arrives (must wait: a writer is present); writer W2 arrives.
/// When R0 leaves, W1 enters; when W1 leaves, R1 must enter **before** W2
/// (it waited one writer phase), and W2 after R1 (one reader phase).
///
/// `arrived(lock, readers, writers)` must say whether that many readers
/// (R0 included) and writers have reached the waiting state of `lock`, a
/// fresh lock from `make`; the caller answers from the lock's internals
/// (e.g. its arrival counters).
///
/// The workspace's phase-fair locks keep this order among waiters that
/// keep their CPU; a reader that would leave a CPU other threads are
/// waiting for withdraws from its phase (`rwlock_core::wait`,
/// `Backoff::snooze_or_retreat`), and then W2 may go first. So the check
/// wants a quiet machine: call it from a test that runs alone (the
/// workspace's are `#[ignore]`d and run by `scripts/test` with
/// `--test-threads=1`). It tries the scenario up to three times, so that a
/// burst of load from elsewhere does not fail it; a lock that breaks the
/// order every time fails.
pub fn check_phase_fairness<R: RawRwLock + Sync>(
    make: impl Fn() -> R,
    arrived: &(dyn Fn(&R, u32, u32) -> bool + Sync),
) {
    let mut failures = Vec::new();
    for _ in 0..3 {
        let lock = make();
        match phase_fairness_once(&lock, &|r, w| arrived(&lock, r, w)) {
            Ok(()) => return,
            Err(e) => failures.push(e),
        }
    }
    panic!("not phase-fair in three tries: {failures:?}");
}

/// One run of [`check_phase_fairness`]'s scenario.
fn phase_fairness_once<R: RawRwLock + Sync>(
    lock: &R,
    arrived: &(dyn Fn(u32, u32) -> bool + Sync),
) -> Result<(), String> {
    let log = Mutex::new(Vec::new());
    let settle = |r, w| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !arrived(r, w) {
            if Instant::now() >= deadline {
                return Err(format!(
                    "threads never arrived ({r} readers, {w} writers): a waiter withdrew"
                ));
            }
            // Asleep, not yielding: a busy main thread would make the
            // waiters share their CPUs, and they would rightly withdraw.
            std::thread::sleep(Duration::from_millis(1));
        }
        // Give a waiter that just arrived time to reach its wait.
        std::thread::sleep(Duration::from_millis(5));
        Ok(())
    };
    let r0 = lock.lock_shared();
    log.lock().unwrap().push(Entry::Reader(0));
    let settled = std::thread::scope(|s| {
        let log = &log;
        s.spawn(move || {
            let g = lock.lock_exclusive();
            log.lock().unwrap().push(Entry::Writer(1));
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: our exclusive acquisition.
            unsafe { lock.unlock_exclusive(g) };
        });
        let settled = settle(1, 1).and_then(|()| {
            s.spawn(move || {
                let g = lock.lock_shared();
                log.lock().unwrap().push(Entry::Reader(1));
                std::thread::sleep(Duration::from_millis(20));
                // SAFETY: our shared acquisition.
                unsafe { lock.unlock_shared(g) };
            });
            settle(2, 1)
        });
        let settled = settled.and_then(|()| {
            s.spawn(move || {
                let g = lock.lock_exclusive();
                log.lock().unwrap().push(Entry::Writer(2));
                // SAFETY: our exclusive acquisition.
                unsafe { lock.unlock_exclusive(g) };
            });
            settle(2, 2)
        });
        let beside = log.lock().unwrap().clone();
        // Released whatever happened, so that the scope's threads finish.
        // SAFETY: our shared acquisition.
        unsafe { lock.unlock_shared(r0) };
        (settled, beside)
    });
    let (settled, beside) = settled;
    assert_eq!(
        beside,
        [Entry::Reader(0)],
        "somebody entered beside R0's hold"
    );
    settled?;
    let log = log.into_inner().unwrap();
    let fair = [
        Entry::Reader(0),
        Entry::Writer(1),
        Entry::Reader(1),
        Entry::Writer(2),
    ];
    if log == fair {
        Ok(())
    } else {
        Err(format!("entered in the order {log:?}"))
    }
}
