//! The calling thread's read holds: which locks it holds for reading, how
//! many times, and the family's per-acquisition guard to release each with.
//!
//! `pthread_rwlock_unlock` gets no token, but BRAVO (the table slot),
//! brlock (the CPU's sub-lock), cohort (the node's counters) and prwlock
//! (the thread's record) each hand their reader a guard saying what to undo,
//! which is not "the current CPU's" once the thread has migrated. The guard
//! is kept here, keyed by the lock, until the matching unlock. The table
//! also makes a thread's nested read of a lock it already reads a count
//! (POSIX allows recursive read locks; under a writer-preferring or
//! phase-fair lock a second real acquisition would wait behind a queued
//! writer that waits for the first: a deadlock), and lets `unlock` tell a
//! read hold from a write hold and from no hold at all (`EPERM`).
//!
//! Sixteen holds fit in the thread-local block (no allocation, no
//! destructor to register); a thread holding more locks at once spills to
//! a heap table that is freed when it empties again. A thread that exits
//! holding read locks leaves them held (as glibc does).

use std::cell::UnsafeCell;
use std::mem::{MaybeUninit, align_of, size_of};

/// A family's shared guard, stored as bytes (the family is fixed for the
/// process, so the type read back is always the type written).
pub type GuardBytes = MaybeUninit<[u64; 2]>;

/// One lock the thread reads.
#[derive(Clone, Copy, Debug)]
pub struct Hold {
    /// The lock's out-of-line object.
    pub lock: usize,
    /// How many unlocks are still owed (recursive read locks).
    pub count: u32,
    /// The guard of the first acquisition.
    pub guard: GuardBytes,
}

const INLINE: usize = 16;

/// The thread's holds.
pub struct Held {
    len: usize,
    inline: [MaybeUninit<Hold>; INLINE],
    spill: *mut Vec<Hold>,
}

thread_local! {
    static HELD: UnsafeCell<Held> = const {
        UnsafeCell::new(Held { len: 0, inline: [MaybeUninit::uninit(); INLINE], spill: std::ptr::null_mut() })
    };
}

/// Runs `f` on the calling thread's table; its address doubles as the
/// thread's identity (unique among live threads, the same in a child
/// process after `fork`).
#[inline(always)]
pub fn with<R>(f: impl FnOnce(&mut Held, usize) -> R) -> R {
    HELD.with(|cell| {
        let key = cell.get() as usize;
        // SAFETY: the table is the calling thread's own; `f` is not given a
        // way back into `with` (the library's functions do not nest).
        f(unsafe { &mut *cell.get() }, key)
    })
}

/// The calling thread's identity (see [`with`]).
#[inline(always)]
pub fn thread_key() -> usize {
    HELD.with(|cell| cell.get() as usize)
}

/// Stores a guard as bytes.
///
/// # Panics
///
/// At compile time (monomorphisation), if `G` is larger than 16 bytes or
/// aligned to more than 8.
#[inline(always)]
pub fn to_bytes<G>(guard: G) -> GuardBytes {
    const { assert!(size_of::<G>() <= 16 && align_of::<G>() <= 8) };
    let mut bytes = GuardBytes::uninit();
    // SAFETY: `G` fits in and is no more aligned than the buffer (checked
    // above); the buffer now owns the guard.
    unsafe { bytes.as_mut_ptr().cast::<G>().write(guard) };
    bytes
}

/// Takes back a guard stored by [`to_bytes`].
///
/// # Safety
///
/// `bytes` came from `to_bytes::<G>` and is read back once.
#[inline(always)]
pub unsafe fn from_bytes<G>(bytes: GuardBytes) -> G {
    // SAFETY: the caller's contract: a `G` was written there and is moved
    // out once.
    unsafe { bytes.as_ptr().cast::<G>().read() }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Held {
    fn spill(&mut self) -> &mut Vec<Hold> {
        if self.spill.is_null() {
            self.spill = Box::into_raw(Box::default());
        }
        // SAFETY: non-null: the thread's own heap table.
        unsafe { &mut *self.spill }
    }

    /// The hold on `lock`, if the thread reads it.
    #[inline]
    pub fn find(&mut self, lock: usize) -> Option<&mut Hold> {
        for i in (0..self.len.min(INLINE)).rev() {
            // SAFETY: entries below `len` are initialised.
            let h = unsafe { self.inline[i].assume_init_mut() };
            if h.lock == lock {
                // SAFETY: same entry, re-borrowed for the return.
                return Some(unsafe { self.inline[i].assume_init_mut() });
            }
        }
        if self.len > INLINE {
            return self.spill().iter_mut().find(|h| h.lock == lock);
        }
        None
    }

    /// Records a new hold of `lock` (the caller checked it has none).
    #[inline]
    pub fn push(&mut self, lock: usize, guard: GuardBytes) {
        let hold = Hold {
            lock,
            count: 1,
            guard,
        };
        if self.len < INLINE {
            self.inline[self.len].write(hold);
        } else {
            self.spill().push(hold);
        }
        self.len += 1;
    }

    /// Removes the hold on `lock`, returning its guard.
    #[inline]
    pub fn remove(&mut self, lock: usize) -> Option<GuardBytes> {
        let n = self.len.min(INLINE);
        for i in (0..n).rev() {
            // SAFETY: entries below `len` are initialised.
            let h = unsafe { self.inline[i].assume_init() };
            if h.lock == lock {
                // Fill the hole with the last inline entry, then pull one
                // back from the spill table if there is one.
                self.inline[i] = self.inline[n - 1];
                self.len -= 1;
                if self.len >= INLINE {
                    let back = self
                        .spill()
                        .pop()
                        .expect("spill table holds len - 16 entries");
                    self.inline[INLINE - 1].write(back);
                }
                self.free_spill_if_empty();
                return Some(h.guard);
            }
        }
        if self.len > INLINE {
            let spill = self.spill();
            let at = spill.iter().position(|h| h.lock == lock)?;
            let h = spill.swap_remove(at);
            self.len -= 1;
            self.free_spill_if_empty();
            return Some(h.guard);
        }
        None
    }

    fn free_spill_if_empty(&mut self) {
        if self.len <= INLINE && !self.spill.is_null() {
            // SAFETY: allocated by `spill` with Box, not referenced
            // elsewhere; emptied (len ≤ 16 means every hold is inline).
            drop(unsafe { Box::from_raw(self.spill) });
            self.spill = std::ptr::null_mut();
        }
    }

    /// How many locks the thread reads.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the thread reads no lock.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_find_remove_past_the_inline_table() {
        with(|h, _| {
            for lock in 1..=40usize {
                assert!(h.find(lock).is_none());
                h.push(lock, to_bytes(lock as u64 * 10));
            }
            assert_eq!(h.len(), 40);
            h.find(7).unwrap().count += 1;
            assert_eq!(h.find(7).unwrap().count, 2);
            // Remove in an order that exercises both tables and refills.
            for lock in (1..=40usize)
                .filter(|l| l % 3 == 0)
                .chain((1..=40).filter(|l| l % 3 != 0))
            {
                let g = h.remove(lock).expect("held");
                // SAFETY: stored by to_bytes::<u64>.
                assert_eq!(unsafe { from_bytes::<u64>(g) }, lock as u64 * 10);
                assert!(h.find(lock).is_none());
            }
            assert!(h.is_empty());
            assert!(h.spill.is_null(), "the spill table is freed once empty");
            assert!(h.remove(3).is_none());
        });
    }

    #[test]
    fn thread_keys_differ_between_live_threads() {
        let here = thread_key();
        let there = std::thread::spawn(thread_key).join().unwrap();
        assert_ne!(here, 0);
        assert_eq!(here, thread_key());
        // `there` may be reused after that thread exited, but it was live
        // at the same time as this one when it was taken.
        assert_ne!(here, there);
    }
}
