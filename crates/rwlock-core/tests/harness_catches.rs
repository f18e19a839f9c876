//! The stress harness (`rwlock_core::testing`) fails, and does not hang, on
//! a broken lock: a worker whose check fails inside a critical section
//! releases the lock before its panic goes on (found in review: the panic
//! left the lock held, the other workers waited for it forever, and the
//! run hung without a message).

#![cfg(all(not(loom), feature = "testing"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lock_api::{GuardSend, RawRwLock};
use rwlock_core::testing::{self, StressConfig};

const WRITER: usize = 1 << (usize::BITS - 1);

std::thread_local! {
    /// This thread holds a `Broken` write: what its `is_locked_exclusive`
    /// answers, so that the harness's checks of that answer (true inside a
    /// write section, false inside a read one) stay quiet and the broken
    /// exclusion is what fails the run.
    static WRITING: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// A spin reader-writer lock whose reads, every 4th time they find a
/// writer inside, enter anyway (a reader beside a writer), or, with
/// `writers_as_readers`, whose writes take only a read (two writers
/// together). A write, once in, waits (200 µs at most) for another thread
/// to come in beside it, so that the broken exclusion shows in every run,
/// whatever the scheduler does.
struct Broken {
    state: AtomicUsize,
    reads: AtomicUsize,
    writers_as_readers: bool,
}

impl Broken {
    const fn new(writers_as_readers: bool) -> Self {
        Broken {
            state: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            writers_as_readers,
        }
    }

    fn read(&self) {
        loop {
            // Relaxed: the CAS below decides.
            let s = self.state.load(Ordering::Relaxed);
            // Relaxed: a counter.
            if s & WRITER != 0
                && !self.writers_as_readers
                && self.reads.fetch_add(1, Ordering::Relaxed) % 4 == 3
            {
                // Acquire: as a reader's.
                self.state.fetch_add(1, Ordering::Acquire);
                return;
            }
            // Acquire: pairs with the unlocks' Release.
            if s & WRITER == 0
                && self
                    .state
                    .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            std::thread::yield_now();
        }
    }
}

// SAFETY: none, on purpose: this lock breaks exclusion, and only the
// harness's shared counters see it (no data is protected by it).
unsafe impl RawRwLock for Broken {
    #[allow(clippy::declare_interior_mutable_const, reason = "lock_api's INIT")]
    const INIT: Self = Broken::new(false);
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    fn lock_shared(&self) -> GuardSend {
        self.read();
        GuardSend::new()
    }

    fn try_lock_shared(&self) -> Option<GuardSend> {
        None
    }

    unsafe fn unlock_shared(&self, _: GuardSend) {
        // Release: ends the section.
        self.state.fetch_sub(1, Ordering::Release);
    }

    fn lock_exclusive(&self) -> GuardSend {
        if self.writers_as_readers {
            self.read();
        } else {
            // Acquire: pairs with the unlocks' Release.
            while self
                .state
                .compare_exchange_weak(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                std::thread::yield_now();
            }
        }
        WRITING.with(|w| w.set(true));
        let t0 = Instant::now();
        // Relaxed: a snapshot. Company: a reader slipped in beside the
        // writer bit, or a second writer-as-reader.
        while (self.state.load(Ordering::Relaxed) & !WRITER)
            < 1 + usize::from(self.writers_as_readers)
            && t0.elapsed() < Duration::from_micros(200)
        {
            std::thread::yield_now();
        }
        GuardSend::new()
    }

    fn try_lock_exclusive(&self) -> Option<GuardSend> {
        None
    }

    unsafe fn unlock_exclusive(&self, _: GuardSend) {
        WRITING.with(|w| w.set(false));
        // Release: ends the section.
        if self.writers_as_readers {
            self.state.fetch_sub(1, Ordering::Release);
        } else {
            self.state.fetch_sub(WRITER, Ordering::Release);
        }
    }

    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot.
        self.state.load(Ordering::Relaxed) != 0
    }

    fn is_locked_exclusive(&self) -> bool {
        // The harness's exclusion checks are under test, not this answer.
        WRITING.with(core::cell::Cell::get)
    }
}

/// Runs the stress at `threads` on `lock` and returns its panic message,
/// asserting that it came (a passing run is the harness missing the bug);
/// a run that hangs instead is the watchdog's abort, with a message.
fn failure(lock: &Broken, threads: usize) -> String {
    let mut cfg = StressConfig::new(threads);
    cfg.ops_per_thread = 5_000;
    cfg.watchdog = Duration::from_secs(120);
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| testing::stress(lock, &cfg)));
    let panic = match outcome {
        Err(panic) => panic,
        Ok(report) => panic!("the harness passed a broken lock at {threads} threads: {report:?}"),
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_reader_beside_a_writer_fails_the_run_at_8_and_64_threads() {
    for threads in [8, 64] {
        let message = failure(&Broken::new(false), threads);
        assert!(
            message.contains("write") || message.contains("zero-sum"),
            "{threads} threads: unexpected failure: {message}"
        );
    }
}

#[test]
fn two_writers_together_fail_the_run_at_8_threads() {
    let message = failure(&Broken::new(true), 8);
    assert!(
        message.contains("write") || message.contains("entered"),
        "unexpected failure: {message}"
    );
}
