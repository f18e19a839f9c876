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
use std::sync::atomic::{AtomicUsize, Ordering, compiler_fence};

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

/// A thread's tables: one per level of calls of the thread inside [`with`]
/// at once. A call runs while another is inside `with` when a signal
/// handler interrupted that one, or when it allocates and the program's
/// allocator takes a `pthread_rwlock_t` (which may allocate in turn: a
/// lock's first use, a parking table); each level gets a table of its own,
/// so that no two `&mut Held` of one table ever exist.
struct Tables {
    /// The thread's identity (see [`with`]); 0 until its first use.
    key: usize,
    /// Calls of the thread inside `with` now: the first free level.
    depth: u8,
    levels: [Held; LEVELS],
}

/// Levels of calls inside [`with`] at once (see [`Tables`]); 2.1 KiB of
/// thread-local storage in all.
const LEVELS: usize = 4;

const EMPTY: Held = Held {
    len: 0,
    inline: [MaybeUninit::uninit(); INLINE],
    spill: std::ptr::null_mut(),
};

thread_local! {
    static HELD: UnsafeCell<Tables> = const {
        UnsafeCell::new(Tables { key: 0, depth: 0, levels: [EMPTY; LEVELS] })
    };
}

/// The next thread key handed out (0 means "none": never a key).
static NEXT_KEY: AtomicUsize = AtomicUsize::new(1);

/// Runs `f` on the calling thread's table and the thread's identity: a
/// number taken from a process-wide counter at the thread's first call,
/// never given to another thread (a 64-bit count does not wrap), and the
/// same in a child process after `fork` (which copies the thread-local
/// block). Not the table's address: glibc gives an exited thread's stack
/// and thread-local block to the next thread it starts, which would then
/// be taken for the exited thread (found in review, 2026-11-27: a new
/// thread's `unlock` released a write lock an exited thread held, and its
/// read answered `EDEADLK`). glibc keys its own writer by kernel thread
/// id, which the kernel reuses too, though less often.
///
/// A call that comes while another call of the thread is inside `with`
/// (from a signal handler, which POSIX leaves undefined but glibc copes
/// with, or from an allocator that locks when the library allocates) gets
/// the next of the thread's tables: its holds are released where they were
/// taken (a read hold taken there and released after the interrupted call
/// returned is not found: `EPERM`). Beyond `LEVELS` (4) it aborts with a
/// message rather than corrupt a table (found in review, 2026-11-27: a
/// handler's lock and unlock while the thread's own call was pushing a
/// hold made both work on one table, and lost holds or freed the spill
/// table twice).
#[inline(always)]
pub fn with<R>(f: impl FnOnce(&mut Held, usize) -> R) -> R {
    // The pointer outlives the closure: `HELD` has no destructor, so the
    // thread's block is never torn down. (Taken by a closure this small,
    // `LocalKey::with` is inlined; a larger one was called out of line.)
    let t = HELD.with(UnsafeCell::get);
    // The thread's own tables, reached through the raw pointer: an
    // interrupted call of this thread may hold `&mut` to a table of a
    // lower level (never to `key`, `depth` or the table this call takes).
    // SAFETY: so these field accesses alias no live reference.
    let (depth, key) = unsafe { ((*t).depth, (*t).key) };
    let key = if key == 0 {
        // SAFETY: as above.
        unsafe { take_key(&raw mut (*t).key) }
    } else {
        key
    };
    if depth != 0 {
        // SAFETY: forwarded (`t` is the thread's, `depth` read from it).
        return unsafe { with_nested(t, depth, key, f) };
    }
    // SAFETY: as above.
    unsafe { (*t).depth = 1 };
    // A handler that interrupts us from here on sees `depth` raised (one
    // thread: only the compiler could reorder).
    compiler_fence(Ordering::SeqCst);
    // No other call of the thread is inside `with`.
    // SAFETY: so this is the only reference to the first table.
    let r = f(unsafe { &mut (*t).levels[0] }, key);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { (*t).depth = 0 };
    r
}

/// [`with`] for a call that came while `depth` calls of the thread were
/// inside it: the table of the next level.
///
/// # Safety
///
/// `t` is the calling thread's tables, `depth` its current depth.
#[cold]
#[inline(never)]
unsafe fn with_nested<R>(
    t: *mut Tables,
    depth: u8,
    key: usize,
    f: impl FnOnce(&mut Held, usize) -> R,
) -> R {
    let level = usize::from(depth);
    if level >= LEVELS {
        reentered_too_deep();
    }
    // The caller's contract; `depth` is a field no live reference covers
    // (see `with`).
    // SAFETY: so the store aliases nothing.
    unsafe { (*t).depth = depth + 1 };
    compiler_fence(Ordering::SeqCst);
    // The table of this level: no other call of the thread uses it now
    // (a deeper one finds `depth` raised and takes the next).
    // SAFETY: so this is the only reference to that table.
    let r = f(unsafe { &mut (*t).levels[level] }, key);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { (*t).depth = depth };
    r
}

/// Takes the thread's key (see [`with`]).
///
/// # Safety
///
/// `key` is the calling thread's `Tables::key`.
#[cold]
unsafe fn take_key(key: *mut usize) -> usize {
    // Relaxed: the counter only has to hand out distinct numbers, which
    // its read-modify-writes do in any order.
    let k = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    // The caller's contract (a signal handler that interrupted us may have
    // taken the thread's key meanwhile: it stays).
    // SAFETY: so `key` is this thread's field, read and written here only.
    unsafe {
        if *key == 0 {
            *key = k;
        }
        *key
    }
}

#[cold]
fn reentered_too_deep() -> ! {
    let msg = b"rwlock-preload: pthread_rwlock_* calls nested more than 4 deep on one \
thread (signal handlers or an allocator calling back into a lock call); aborting rather \
than corrupt the thread's holds\n";
    // The result is ignored: we abort either way.
    // SAFETY: a valid buffer of that length.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    std::process::abort();
}

/// The calling thread's identity (see [`with`]).
#[cfg(test)]
pub fn thread_key() -> usize {
    with(|_, key| key)
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
    // `G` fits in and is no more aligned than the buffer (checked
    // above); the buffer now owns the guard.
    // SAFETY: as the lines above say.
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
    // the caller's contract: a `G` was written there and is moved
    // out once.
    // SAFETY: as the lines above say.
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

    /// Where the hold on `lock` is, if the thread reads it (most recent
    /// first: a thread's last read is usually the one it releases next).
    #[inline(always)]
    pub fn position(&self, lock: usize) -> Option<usize> {
        let mut i = self.len.min(INLINE);
        while i > 0 {
            i -= 1;
            // SAFETY: entries below `len` are initialised.
            if unsafe { self.inline[i].assume_init_ref() }.lock == lock {
                return Some(i);
            }
        }
        if self.len > INLINE {
            return self.position_spilled(lock);
        }
        None
    }

    #[cold]
    fn position_spilled(&self, lock: usize) -> Option<usize> {
        // SAFETY: non-null while `len > 16`.
        let spill = unsafe { &*self.spill };
        spill
            .iter()
            .position(|h| h.lock == lock)
            .map(|i| INLINE + i)
    }

    /// The hold at `at` (from [`Held::position`]).
    ///
    /// # Panics
    ///
    /// If `at` is not below the table's length.
    #[inline(always)]
    pub fn at(&mut self, at: usize) -> &mut Hold {
        assert!(at < self.len, "held: no hold at {at}");
        if at < INLINE {
            // SAFETY: a position below `len` (asserted): initialised.
            unsafe { self.inline[at].assume_init_mut() }
        } else {
            &mut self.spill()[at - INLINE]
        }
    }

    /// The hold on `lock`, if the thread reads it.
    #[inline]
    pub fn find(&mut self, lock: usize) -> Option<&mut Hold> {
        let at = self.position(lock)?;
        Some(self.at(at))
    }

    /// Records a new hold of `lock` with its guard (the caller checked it
    /// has none). The guard is written in place: no wider copy of its bytes
    /// (which would stall store-to-load forwarding on the way back).
    #[inline(always)]
    pub fn push<G>(&mut self, lock: usize, guard: G) {
        if self.len < INLINE {
            let slot = self.inline[self.len].as_mut_ptr();
            // an unused slot of the thread's own table; `G` fits
            // the guard field (`to_bytes`' compile-time check, below).
            // SAFETY: as the lines above say.
            unsafe {
                (&raw mut (*slot).lock).write(lock);
                (&raw mut (*slot).count).write(1);
                (&raw mut (*slot).guard).write(GuardBytes::uninit());
                (&raw mut (*slot).guard).cast::<G>().write(guard);
            }
            const { assert!(size_of::<G>() <= 16 && align_of::<G>() <= 8) };
        } else {
            let hold = Hold {
                lock,
                count: 1,
                guard: to_bytes(guard),
            };
            self.spill().push(hold);
        }
        self.len += 1;
    }

    /// Removes the hold at `at` (from [`Held::position`]), returning its
    /// guard.
    ///
    /// # Safety
    ///
    /// The hold's guard was pushed as a `G`.
    #[inline(always)]
    pub unsafe fn take<G>(&mut self, at: usize) -> G {
        if self.len <= INLINE {
            debug_assert!(at < self.len);
            // positions below `len` are initialised, and this one's
            // guard is a `G` (the caller's contract), read once; the last
            // hold fills the hole.
            // SAFETY: as the lines above say.
            let guard = unsafe {
                (&raw const (*self.inline[at].as_ptr()).guard)
                    .cast::<G>()
                    .read()
            };
            self.len -= 1;
            if at != self.len {
                self.inline[at] = self.inline[self.len];
            }
            return guard;
        }
        // SAFETY: as above.
        unsafe { from_bytes(self.take_spilled(at)) }
    }

    #[cold]
    fn take_spilled(&mut self, at: usize) -> GuardBytes {
        let guard = if at < INLINE {
            // below 16 < len: initialised. The hole is filled from
            // the spill table, which holds len - 16 > 0 entries.
            // SAFETY: as the lines above say.
            let h = unsafe { self.inline[at].assume_init() };
            let back = self
                .spill()
                .pop()
                .expect("spill table holds len - 16 entries");
            self.inline[at].write(back);
            h.guard
        } else {
            self.spill().swap_remove(at - INLINE).guard
        };
        self.len -= 1;
        if self.len <= INLINE {
            // allocated by `spill` with Box, not referenced
            // elsewhere; empty (every hold is inline again).
            // SAFETY: as the lines above say.
            drop(unsafe { Box::from_raw(self.spill) });
            self.spill = std::ptr::null_mut();
        }
        guard
    }

    /// Removes the hold on `lock`, returning its guard.
    ///
    /// # Safety
    ///
    /// As [`Held::take`].
    #[cfg(test)]
    pub unsafe fn remove<G>(&mut self, lock: usize) -> Option<G> {
        let at = self.position(lock)?;
        // SAFETY: forwarded.
        Some(unsafe { self.take(at) })
    }

    /// How many locks the thread reads.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the thread reads no lock.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_past_the_length_panics_instead_of_reading_an_empty_entry() {
        let caught = std::panic::catch_unwind(|| with(|h, _| h.at(9).count));
        assert!(caught.is_err(), "at(9) of an empty table returned an entry");
    }

    #[test]
    fn push_find_remove_past_the_inline_table() {
        with(|h, _| {
            for lock in 1..=40usize {
                assert!(h.find(lock).is_none());
                h.push(lock, lock as u64 * 10);
            }
            assert_eq!(h.len(), 40);
            h.find(7).unwrap().count += 1;
            assert_eq!(h.find(7).unwrap().count, 2);
            // Remove in an order that exercises both tables and refills.
            for lock in (1..=40usize)
                .filter(|l| l % 3 == 0)
                .chain((1..=40).filter(|l| l % 3 != 0))
            {
                // SAFETY: every guard pushed is a u64.
                let g = unsafe { h.remove::<u64>(lock) }.expect("held");
                assert_eq!(g, lock as u64 * 10);
                assert!(h.find(lock).is_none());
            }
            assert!(h.is_empty());
            assert!(h.spill.is_null(), "the spill table is freed once empty");
            // SAFETY: as above.
            assert!(unsafe { h.remove::<u64>(3) }.is_none());
        });
    }

    #[test]
    fn thread_keys_are_never_reused() {
        let here = thread_key();
        assert_ne!(here, 0);
        assert_eq!(here, thread_key());
        // Threads started one after the other (glibc hands each the last
        // one's stack and thread-local block): every key is new.
        let mut seen = std::collections::HashSet::from([here]);
        for _ in 0..64 {
            let there = std::thread::spawn(thread_key).join().unwrap();
            assert!(seen.insert(there), "key {there} given twice");
        }
    }
}
