//! Per-thread hints: cheap, private, and never needed for correctness (a
//! read may always take the slow path; a writer always re-checks the word
//! once it holds `L`).

use core::cell::Cell;

use super::{CLOCK_EVERY_MAX, CLOCK_EVERY_MIN};

pub(super) struct Hints {
    /// The lock this thread last saw unbiased (see
    /// [`Policy::UNBIASED_HINT`](crate::Policy::UNBIASED_HINT)).
    unbiased: Cell<usize>,
    /// Slow reads until the next clock reading; negative once it ran out
    /// (until `clock_read` sets it again). Signed so that a count-down is
    /// one decrement and a sign test (`count_down`); 64 bits so that no
    /// run of readings that never come (a revocation that waits for ever)
    /// can wrap it.
    clock: Cell<i64>,
    /// Slow reads between clock readings now, in
    /// `CLOCK_EVERY_MIN..=CLOCK_EVERY_MAX`.
    interval: Cell<u32>,
    /// This thread's home block in the table, plus one (0: none yet).
    #[cfg(not(loom))]
    home: Cell<u64>,
}

#[cfg(not(loom))]
crate::sync::thread_local! {
    static HINTS: Hints = const {
        Hints {
            unbiased: Cell::new(0),
            clock: Cell::new(0),
            interval: Cell::new(CLOCK_EVERY_MIN),
            home: Cell::new(0),
        }
    };
}

/// The next home block to hand out (see `home`).
#[cfg(not(loom))]
static NEXT_HOME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// This thread's home block number, assigned on its first fast read in
/// the order threads arrive (so that up to one thread per block, 256
/// with 4096 slots, live threads never share a block); taken modulo the
/// block count by the table's mask. During thread teardown, block 0.
#[cfg(not(loom))]
#[inline]
pub(super) fn home() -> u64 {
    HINTS
        .try_with(|h| match h.home.get() {
            0 => assign_home(h),
            n => n - 1,
        })
        .unwrap_or(0)
}

/// How many homes [`home`] has handed out: every home in use is below it.
#[cfg(not(loom))]
pub(super) fn homes_handed_out() -> u64 {
    // Relaxed: the caller (`Bravo`'s drop) is ordered after the reads it
    // looks for, and so after their threads' `fetch_add`.
    NEXT_HOME.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(not(loom))]
#[cold]
fn assign_home(h: &Hints) -> u64 {
    // Relaxed: a ticket; nothing is published with it.
    let n = NEXT_HOME.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    h.home.set(n + 1);
    n
}

// loom's `thread_local!` has no `const` initialiser form.
#[cfg(loom)]
crate::sync::thread_local! {
    static HINTS: Hints = Hints {
        unbiased: Cell::new(0),
        clock: Cell::new(0),
        interval: Cell::new(CLOCK_EVERY_MIN),
    };
}

/// Whether this thread last saw `lock` unbiased.
#[inline]
pub(super) fn unbiased(lock: usize) -> bool {
    HINTS
        .try_with(|h| h.unbiased.get() == lock)
        .unwrap_or(false)
}

/// For a read: `None` unless this thread last saw `lock` unbiased;
/// then whether the read may skip the word (`true`: the countdown to
/// the next clock reading had not run out, and now counts this read)
/// or must look (`false`: a reading is due).
#[inline]
pub(super) fn unbiased_read(lock: usize) -> Option<bool> {
    HINTS
        .try_with(|h| {
            if h.unbiased.get() != lock {
                return None;
            }
            Some(count_down(h))
        })
        .unwrap_or(None)
}

/// Counts one slow read off the countdown to the next clock reading:
/// `true` if it had not run out, `false` if a reading is due (the count
/// then stays negative until `clock_read` sets it again).
///
/// One decrement and a sign test: with a test for zero before the
/// decrement it took five instructions, on every read of a lock this
/// thread last saw unbiased (`docs/bravo.md`, "The slow read's
/// instructions").
#[inline]
fn count_down(h: &Hints) -> bool {
    let left = h.clock.get() - 1;
    h.clock.set(left);
    left >= 0
}

/// Records the lock this thread last saw unbiased (0: none).
///
/// Stores only on a change: a write acquisition calls this every time, and
/// a store between `L`'s locked acquire and release is one more entry the
/// release's locked instruction must drain (`docs/bravo.md`, "No store
/// between `L`'s locked instructions").
#[inline]
pub(super) fn set_unbiased(lock: usize) {
    let _ = HINTS.try_with(|h| {
        if h.unbiased.get() != lock {
            h.unbiased.set(lock);
        }
    });
}

/// Whether this slow read should consult the clock (see
/// `after_slow_read`); during thread teardown, always.
#[inline]
pub(super) fn clock_due() -> bool {
    HINTS.try_with(|h| !count_down(h)).unwrap_or(true)
}

/// A slow read found the bias on: forget the unbiased hint, and read
/// the clock soon once the bias is off again.
#[inline]
pub(super) fn saw_bias() {
    let _ = HINTS.try_with(|h| {
        h.unbiased.set(0);
        h.interval.set(CLOCK_EVERY_MIN);
    });
}

/// The clock was read: `due` says whether it found `InhibitUntil`
/// past. Sets the countdown to the next reading: the minimum interval
/// after a reading that was due, twice the last one otherwise.
pub(super) fn clock_read(due: bool) {
    let _ = HINTS.try_with(|h| {
        let interval = if due {
            CLOCK_EVERY_MIN
        } else {
            (h.interval.get() * 2).min(CLOCK_EVERY_MAX)
        };
        h.interval.set(interval);
        h.clock.set(i64::from(interval) - 1);
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The countdown to the next clock reading, after `clock_read`.
    fn countdown() -> i64 {
        HINTS.with(|h| h.clock.get())
    }

    #[test]
    fn clock_interval_doubles_while_not_due_and_resets() {
        // A fresh thread: its own hints.
        std::thread::spawn(|| {
            assert!(clock_due(), "the first slow read reads the clock");
            let mut expected = CLOCK_EVERY_MIN;
            for _ in 0..12 {
                expected = (expected * 2).min(CLOCK_EVERY_MAX);
                clock_read(false);
                assert_eq!(countdown(), i64::from(expected) - 1);
            }
            assert_eq!(expected, CLOCK_EVERY_MAX, "the interval is capped");
            // The countdown runs out after exactly `interval - 1` more reads.
            for _ in 0..CLOCK_EVERY_MAX - 1 {
                assert!(!clock_due());
            }
            assert!(clock_due());
            clock_read(true);
            assert_eq!(
                countdown(),
                i64::from(CLOCK_EVERY_MIN) - 1,
                "a due reading resets"
            );
            clock_read(false);
            saw_bias();
            clock_read(false);
            assert_eq!(
                countdown(),
                i64::from(2 * CLOCK_EVERY_MIN) - 1,
                "seeing the bias on restarts the doubling"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_read_skips_the_word_only_on_its_hinted_lock_with_count_left() {
        std::thread::spawn(|| {
            assert_eq!(unbiased_read(0x1000), None, "no hint yet");
            set_unbiased(0x1000);
            // Count 0: the read must look at the word.
            assert_eq!(unbiased_read(0x1000), Some(false));
            clock_read(false);
            let left = countdown();
            assert_eq!(unbiased_read(0x1000), Some(true));
            assert_eq!(countdown(), left - 1, "a quiet read counts down");
            assert_eq!(unbiased_read(0x2000), None, "another lock: no hint");
        })
        .join()
        .unwrap();
    }
}
