//! Per-thread hints: cheap, private, and never needed for correctness (a
//! read may always take the slow path; a writer always re-checks the word
//! once it holds `L`).

use core::cell::Cell;

use super::{CLOCK_EVERY_MAX, CLOCK_EVERY_MIN};

pub(super) struct Hints {
    /// The lock this thread last saw unbiased (see
    /// [`Policy::UNBIASED_HINT`](crate::Policy::UNBIASED_HINT)).
    unbiased: Cell<usize>,
    /// Slow reads until the next clock reading.
    clock: Cell<u32>,
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
            match h.clock.get() {
                0 => Some(false),
                n => {
                    h.clock.set(n - 1);
                    Some(true)
                }
            }
        })
        .unwrap_or(None)
}

/// Records the lock this thread last saw unbiased (0: none).
#[inline]
pub(super) fn set_unbiased(lock: usize) {
    let _ = HINTS.try_with(|h| h.unbiased.set(lock));
}

/// Whether this slow read should consult the clock (see
/// `after_slow_read`); during thread teardown, always.
#[inline]
pub(super) fn clock_due() -> bool {
    HINTS
        .try_with(|h| match h.clock.get() {
            0 => true,
            n => {
                h.clock.set(n - 1);
                false
            }
        })
        .unwrap_or(true)
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
        h.clock.set(interval - 1);
    });
}
