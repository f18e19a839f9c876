//! One family's lock behind a `pthread_rwlock_t`.
//!
//! ```text
//!  pthread_rwlock_t (56 bytes, glibc x86-64)      Shim<L> (heap, L's alignment)
//!  +0   *Shim<L> or null  ───────────────────────▶ +---------------------------+
//!  +28  __shared (u32): non-zero = process-shared  | lock: L                   |
//!       (glibc's own lock; every call forwarded)   | writer: thread key or 0   |
//!  +48  __flags (u32): the kind, from the         | write_guard: L's guard    |
//!       attribute or the _NP static initialiser   +---------------------------+
//! ```
//!
//! A family whose `Shim` fits below `__shared` (28 bytes, 8-aligned), whose
//! all-zero bytes are its unlocked state and whose exclusive guard is
//! zero-sized lives inline instead, at byte 0 ([`is_inline`]: BRAVO over
//! parking_lot, the default, and parking_lot): nothing to allocate, and
//! nothing left behind by a program that frees a lock without destroying it
//! (libstdc++'s `std::shared_mutex` never calls `pthread_rwlock_destroy`).
//!
//! The other families are larger or want their own alignment, so their lock
//! lives out of line. `PTHREAD_RWLOCK_INITIALIZER` is all zero:
//! the first call on a null word allocates the `Shim` and installs it with
//! one compare-and-swap (the loser frees its copy and uses the winner's);
//! `pthread_rwlock_init` allocates at once (so `ENOMEM` is reported where
//! POSIX expects it) and `pthread_rwlock_destroy` frees.
//!
//! Which hold an unlock releases: the writer's thread key (a number no
//! other thread gets, `held::with`) is kept in the `Shim` while it holds the
//! lock, with the family's exclusive guard; a reader's guard is kept in the
//! thread's own hold table. `unlock` looks in the table first (a read hold),
//! then at `writer` (a write hold), and otherwise answers `EPERM`.
//!
//! # Orderings
//!
//! - The `Shim` pointer is installed with a Release CAS and read with
//!   Acquire: pairs, so a thread that finds the pointer sees the
//!   initialised lock.
//! - `writer` is Relaxed: only the holder stores its own key (after the
//!   acquisition, and 0 before the release, both ordered by the lock
//!   itself); another thread compares it with its own key, which it can
//!   only find there if it stored it.

use crate::{held, releasing};
use libc::{
    EBUSY, EDEADLK, EINVAL, ENOMEM, EPERM, ETIMEDOUT, c_int, clockid_t, pthread_rwlock_t, timespec,
};
use lock_api::RawRwLock;
use std::alloc::{Layout, alloc, dealloc};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// A lock family as the library needs it: `lock_api`'s lock, made for a
/// `pthread_rwlock_t` of a given kind (`PTHREAD_RWLOCK_PREFER_*_NP`).
///
/// # Safety
///
/// `ZERO_INIT` is true only if all-zero bytes are a valid unlocked lock
/// (`INIT`'s bytes), so that `PTHREAD_RWLOCK_INITIALIZER` is one.
pub unsafe trait PreloadLock: RawRwLock + Sized + Send + Sync + 'static {
    /// All-zero bytes are `INIT`: with a small enough lock and a zero-sized
    /// exclusive guard, the lock lives inside the `pthread_rwlock_t`
    /// ([`is_inline`]).
    const ZERO_INIT: bool = false;

    /// The lock for a `pthread_rwlock_t` of `kind`; families without a
    /// preference to choose ignore it.
    fn for_kind(kind: c_int) -> Self {
        let _ = kind;
        Self::INIT
    }
}

/// How an acquisition waits.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    /// Until it gets the lock.
    Block,
    /// Not at all (`EBUSY`).
    Try,
    /// Until the absolute time on the clock (`ETIMEDOUT`).
    Until(clockid_t, timespec),
}

/// The out-of-line lock.
pub struct Shim<L: RawRwLock> {
    lock: L,
    writer: AtomicUsize,
    write_guard: UnsafeCell<MaybeUninit<L::ExclusiveGuard>>,
}

impl<L: RawRwLock> std::fmt::Debug for Shim<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shim")
            .field("locked", &self.lock.is_locked())
            .field("writer", &self.writer.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// `write_guard` is touched only by the thread holding the lock
// exclusively (stored after acquiring, taken before releasing).
// SAFETY: as the lines above say.
unsafe impl<L: PreloadLock> Sync for Shim<L> {}

/// The `pthread_rwlock_t`'s first word: the `Shim` pointer.
///
/// # Safety
///
/// `rw` is non-null and points to a `pthread_rwlock_t` (8-byte aligned).
#[inline(always)]
unsafe fn word(rw: *mut pthread_rwlock_t) -> &'static AtomicPtr<()> {
    // SAFETY: the caller's pointer; the union's first 8 bytes, aligned.
    unsafe { &*rw.cast::<AtomicPtr<()>>() }
}

/// The `u32` at byte `offset` of the `pthread_rwlock_t`.
///
/// # Safety
///
/// As [`word`]; `offset` is a multiple of 4 below 56.
#[inline(always)]
unsafe fn field(rw: *mut pthread_rwlock_t, offset: usize) -> &'static AtomicU32 {
    // SAFETY: the caller's pointer and an in-bounds, aligned offset.
    unsafe { &*rw.cast::<u8>().add(offset).cast::<AtomicU32>() }
}

/// glibc's `__shared` field (x86-64 layout: the crate exports only on
/// x86-64, `lib.rs`).
const SHARED: usize = 28;
/// glibc's `__flags` field: the kind.
const FLAGS: usize = 48;

/// Whether `rw` is a process-shared lock, initialised by glibc.
///
/// # Safety
///
/// `rw` is non-null and points to a `pthread_rwlock_t`.
#[inline(always)]
pub unsafe fn is_process_shared(rw: *mut pthread_rwlock_t) -> bool {
    // Relaxed: written by pthread_rwlock_init before the lock is shared.
    // SAFETY: forwarded.
    unsafe { field(rw, SHARED).load(Ordering::Relaxed) != 0 }
}

/// Whether family `L` lives inside the `pthread_rwlock_t` (see the module
/// docs).
pub const fn is_inline<L: PreloadLock>() -> bool {
    L::ZERO_INIT
        && size_of::<Shim<L>>() <= SHARED
        && align_of::<Shim<L>>() <= 8
        && size_of::<L::ExclusiveGuard>() == 0
}

/// Makes `rw` an unlocked private lock of `kind` and allocates its family
/// lock.
///
/// # Safety
///
/// `rw` is non-null and points to a `pthread_rwlock_t`; nobody else uses
/// it (POSIX: initialising a lock in use is undefined).
pub unsafe fn init<L: PreloadLock>(rw: *mut pthread_rwlock_t, kind: c_int) -> c_int {
    // SAFETY: 56 writable bytes (the caller's contract).
    unsafe { ptr::write_bytes(rw.cast::<u8>(), 0, size_of::<pthread_rwlock_t>()) };
    // SAFETY: forwarded.
    unsafe { field(rw, FLAGS).store(kind as u32, Ordering::Relaxed) };
    // SAFETY: forwarded.
    match unsafe { shim::<L>(rw) } {
        Ok(_) => 0,
        Err(e) => e,
    }
}

/// Bytes for the `Shim`s of locks first used while their thread was
/// allocating another lock's (`Shim::alloc`): a program whose `malloc`
/// takes a `pthread_rwlock_t` calls back into the library from that
/// allocation, and allocating again would recurse until the stack
/// overflowed (found in review, 2026-11-27). Such locks (the allocator's
/// own, a few) live here and are never freed; 64 KiB holds hundreds.
#[repr(C, align(128))]
struct Arena(UnsafeCell<[MaybeUninit<u8>; ARENA_BYTES]>);
const ARENA_BYTES: usize = 64 << 10;
// SAFETY: disjoint ranges are handed out once each (`arena_alloc`), and
// each is then used as its `Shim` (itself `Sync`).
unsafe impl Sync for Arena {}
static ARENA: Arena = Arena(UnsafeCell::new([MaybeUninit::uninit(); ARENA_BYTES]));
/// The arena's first free byte.
static ARENA_NEXT: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    /// The thread is inside `Shim::alloc`'s allocation. `const`, without a
    /// destructor: no allocation to reach it.
    static ALLOCATING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `layout` from the arena; `None` when it is full.
fn arena_alloc(layout: Layout) -> Option<*mut u8> {
    let base = ARENA.0.get().cast::<u8>();
    // Relaxed (all): the counter only divides the arena; each range is
    // published with the lock it holds (the installing CAS).
    let mut at = ARENA_NEXT.load(Ordering::Relaxed);
    loop {
        let start = at.checked_next_multiple_of(layout.align())?;
        let end = start.checked_add(layout.size())?;
        if end > ARENA_BYTES {
            return None;
        }
        match ARENA_NEXT.compare_exchange_weak(at, end, Ordering::Relaxed, Ordering::Relaxed) {
            // `start..end` lies inside the arena, and is ours alone.
            // SAFETY: so the pointer is in bounds.
            Ok(_) => return Some(unsafe { base.add(start) }),
            Err(now) => at = now,
        }
    }
}

fn in_arena(p: *const u8) -> bool {
    let base = ARENA.0.get().cast::<u8>().cast_const();
    p >= base && p < base.wrapping_add(ARENA_BYTES)
}

impl<L: PreloadLock> Shim<L> {
    /// Allocates one; `None` when memory is exhausted.
    fn alloc(kind: c_int) -> Option<*mut Shim<L>> {
        let layout = Layout::new::<Shim<L>>();
        const { assert!(align_of::<Shim<L>>() <= align_of::<Arena>()) };
        let p = if ALLOCATING.with(|a| a.replace(true)) {
            // Called back from inside our own allocation (the program's
            // allocator took a lock): not the allocator again.
            arena_alloc(layout).unwrap_or(ptr::null_mut())
        } else {
            // SAFETY: `Shim` is never zero-sized (it has `writer`).
            let p = unsafe { alloc(layout) };
            ALLOCATING.with(|a| a.set(false));
            p
        }
        .cast::<Shim<L>>();
        if p.is_null() {
            return None;
        }
        // SAFETY: fresh allocation of the right layout.
        unsafe {
            p.write(Shim {
                lock: L::for_kind(kind),
                writer: AtomicUsize::new(0),
                write_guard: UnsafeCell::new(MaybeUninit::uninit()),
            })
        };
        Some(p)
    }

    /// Frees one made by [`Shim::alloc`].
    ///
    /// # Safety
    ///
    /// Nobody uses it any more.
    unsafe fn free(p: *mut Shim<L>) {
        // Allocated with this layout (an arena one is only dropped: the
        // arena is never reused), and unused (the caller's contract).
        // SAFETY: so it is dropped and freed once.
        unsafe {
            ptr::drop_in_place(p);
            if !in_arena(p.cast_const().cast()) {
                dealloc(p.cast(), Layout::new::<Shim<L>>());
            }
        }
    }

    fn addr(&self) -> usize {
        self as *const Self as usize
    }
}

/// The lock behind `rw`, allocated and installed at its first use.
///
/// # Safety
///
/// As [`word`], and `rw` was initialised by this library's family `L` (or
/// statically).
#[inline(always)]
unsafe fn shim<L: PreloadLock>(rw: *mut pthread_rwlock_t) -> Result<&'static Shim<L>, c_int> {
    if is_inline::<L>() {
        // the `Shim` fits below `__shared` with the alignment of
        // `pthread_rwlock_t`; all-zero bytes (the static initialiser, or
        // `init`) are an unlocked one (`ZERO_INIT`, a zero `writer`, a
        // zero-sized guard).
        // SAFETY: as the lines above say.
        return Ok(unsafe { &*rw.cast::<Shim<L>>() });
    }
    // Acquire: pairs with the installing CAS (Release), so the lock is
    // seen initialised.
    // SAFETY: forwarded.
    let p = unsafe { word(rw) }.load(Ordering::Acquire);
    if !p.is_null() {
        // installed by `install::<L>` (the family is the process's)
        // and not yet destroyed (POSIX: using a destroyed lock is undefined).
        // SAFETY: as the lines above say.
        return Ok(unsafe { &*p.cast::<Shim<L>>() });
    }
    // SAFETY: forwarded.
    unsafe { install(rw) }
}

#[cold]
#[inline(never)]
unsafe fn install<L: PreloadLock>(rw: *mut pthread_rwlock_t) -> Result<&'static Shim<L>, c_int> {
    // SAFETY: forwarded.
    let kind = unsafe { field(rw, FLAGS) }.load(Ordering::Relaxed) as c_int;
    let new = Shim::<L>::alloc(kind).ok_or(ENOMEM)?;
    // Release: publishes the initialised lock (pairs with `shim`'s Acquire);
    // Acquire on failure: the winner's lock is seen initialised.
    // SAFETY: forwarded.
    match unsafe { word(rw) }.compare_exchange(
        ptr::null_mut(),
        new.cast(),
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just installed; lives until destroy.
        Ok(_) => Ok(unsafe { &*new }),
        Err(current) => {
            // SAFETY: ours was never published.
            unsafe { Shim::free(new) };
            // SAFETY: the winner's, installed by the same family.
            Ok(unsafe { &*current.cast::<Shim<L>>() })
        }
    }
}

/// Checks an absolute timeout's arguments as glibc does, before anything
/// else: a known clock and nanoseconds in `[0, 1e9)`.
fn check_deadline(clock: clockid_t, at: &timespec) -> Result<(), c_int> {
    if clock != libc::CLOCK_REALTIME && clock != libc::CLOCK_MONOTONIC {
        return Err(EINVAL);
    }
    if !(0..1_000_000_000).contains(&at.tv_nsec) {
        return Err(EINVAL);
    }
    Ok(())
}

/// Polls `attempt` until it succeeds or the deadline passes. The families
/// have no timed queueing, so a timed waiter retries with exponential
/// backoff (a yield, then sleeps from 1 µs doubling to 1 ms, never past the
/// deadline).
fn poll_until<G>(
    clock: clockid_t,
    at: timespec,
    mut attempt: impl FnMut() -> Option<G>,
) -> Result<G, c_int> {
    let deadline = at.tv_sec as i128 * 1_000_000_000 + at.tv_nsec as i128;
    let mut pause_ns: i128 = 1_000;
    for round in 0u32.. {
        if let Some(g) = attempt() {
            return Ok(g);
        }
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock (checked) and a writable timespec.
        unsafe { libc::clock_gettime(clock, &mut now) };
        let left = deadline - (now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128);
        if left <= 0 {
            return Err(ETIMEDOUT);
        }
        if round < 4 {
            std::thread::yield_now();
            continue;
        }
        let nap = pause_ns.min(left);
        // Not a cancellation point: glibc's rwlock functions are not.
        rwlock_core::wait::sleep_uncancelled(std::time::Duration::from_nanos(nap as u64));
        pause_ns = (pause_ns * 2).min(1_000_000);
    }
    unreachable!("the loop returns")
}

/// The lock behind `rw` for an acquisition that waits as `wait`, after
/// checking a deadline's arguments (glibc checks them first).
///
/// # Safety
///
/// As [`read`].
#[inline(always)]
unsafe fn prepare<L: PreloadLock>(
    rw: *mut pthread_rwlock_t,
    wait: Wait,
) -> Result<&'static Shim<L>, c_int> {
    if let Wait::Until(clock, at) = wait {
        check_deadline(clock, &at)?;
    }
    // SAFETY: forwarded.
    unsafe { shim::<L>(rw) }
}

/// Acquires as `wait` says: `block` (which waits as the family does),
/// `attempt` once (`EBUSY`), or `attempt` until the deadline
/// (`ETIMEDOUT`).
#[inline(always)]
fn acquire<G>(
    wait: Wait,
    block: impl FnOnce() -> G,
    mut attempt: impl FnMut() -> Option<G>,
) -> Result<G, c_int> {
    match wait {
        Wait::Block => Ok(block()),
        Wait::Try => attempt().ok_or(EBUSY),
        Wait::Until(clock, at) => poll_until(clock, at, attempt),
    }
}

/// What an acquisition of a lock the thread holds answers: the `try` forms
/// `EBUSY`, the waiting forms `EDEADLK` (they would wait for themselves).
fn self_deadlock(wait: Wait) -> c_int {
    if matches!(wait, Wait::Try) {
        EBUSY
    } else {
        EDEADLK
    }
}

/// `pthread_rwlock_{rd,tryrd,timedrd,clockrd}lock`.
///
/// # Safety
///
/// `rw` non-null, initialised by family `L` (or statically).
#[inline]
pub unsafe fn read<L: PreloadLock>(rw: *mut pthread_rwlock_t, wait: Wait) -> c_int {
    // SAFETY: forwarded.
    let s = match unsafe { prepare::<L>(rw, wait) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    held::with(|held, me| {
        if let Some(hold) = held.find(s.addr()) {
            // A nested read of a lock the thread reads: a count, so that a
            // writer queued in between cannot deadlock it.
            return match hold.count.checked_add(1) {
                Some(c) => {
                    hold.count = c;
                    0
                }
                None => libc::EAGAIN,
            };
        }
        if s.writer.load(Ordering::Relaxed) == me {
            return self_deadlock(wait);
        }
        let guard = match acquire(wait, || s.lock.lock_shared(), || s.lock.try_lock_shared()) {
            Ok(g) => g,
            Err(e) => return e,
        };
        held.push(s.addr(), guard);
        0
    })
}

/// `pthread_rwlock_{wr,trywr,timedwr,clockwr}lock`.
///
/// # Safety
///
/// As [`read`].
#[inline]
pub unsafe fn write<L: PreloadLock>(rw: *mut pthread_rwlock_t, wait: Wait) -> c_int {
    // SAFETY: forwarded.
    let s = match unsafe { prepare::<L>(rw, wait) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    let me = held::with(|held, me| {
        if s.writer.load(Ordering::Relaxed) == me || held.position(s.addr()).is_some() {
            // The thread holds it already: waiting would never end.
            Err(self_deadlock(wait))
        } else {
            Ok(me)
        }
    });
    let acquired = me.and_then(|me| {
        Ok((
            me,
            acquire(
                wait,
                || s.lock.lock_exclusive(),
                || s.lock.try_lock_exclusive(),
            )?,
        ))
    });
    let (me, guard) = match acquired {
        Ok(v) => v,
        Err(e) => return e,
    };
    // SAFETY: we hold the lock exclusively: nobody else touches the slot.
    unsafe { (*s.write_guard.get()).write(guard) };
    s.writer.store(me, Ordering::Relaxed);
    0
}

/// `pthread_rwlock_unlock`: the thread's read hold if it has one, else its
/// write hold, else `EPERM`.
///
/// # Safety
///
/// As [`read`].
#[inline]
pub unsafe fn unlock<L: PreloadLock>(rw: *mut pthread_rwlock_t) -> c_int {
    let s: &Shim<L> = if is_inline::<L>() {
        // SAFETY: forwarded (as in `shim`).
        match unsafe { shim::<L>(rw) } {
            Ok(s) => s,
            Err(e) => return e,
        }
    } else {
        // Acquire: as in `shim` (a lock never used is not held: EPERM).
        // SAFETY: forwarded.
        let p = unsafe { word(rw) }.load(Ordering::Acquire);
        if p.is_null() {
            return EPERM;
        }
        // SAFETY: installed by this family and not destroyed.
        unsafe { &*p.cast::<Shim<L>>() }
    };
    // Until this call returns, a destroy of the lock waits (the family's
    // release touches the lock after the change that frees it).
    let _releasing = releasing::begin(s.addr());
    held::with(|held, me| {
        if let Some(at) = held.position(s.addr()) {
            let hold = held.at(at);
            if hold.count > 1 {
                hold.count -= 1;
                return 0;
            }
            // the guard this thread's read acquisition stored (an
            // `L::SharedGuard`: the family is the process's), taken once,
            // released once.
            // SAFETY: as the lines above say.
            unsafe { s.lock.unlock_shared(held.take::<L::SharedGuard>(at)) };
            return 0;
        }
        if s.writer.load(Ordering::Relaxed) == me {
            s.writer.store(0, Ordering::Relaxed);
            // we hold the lock exclusively; the guard stored by our
            // acquisition is taken once, then released.
            // SAFETY: as the lines above say.
            unsafe {
                let guard = (*s.write_guard.get()).assume_init_read();
                s.lock.unlock_exclusive(guard);
            }
            return 0;
        }
        EPERM
    })
}

/// `pthread_rwlock_destroy`: frees the family lock, or `EBUSY` while anyone
/// holds it (the lock stays usable).
///
/// # Safety
///
/// As [`read`]; no other thread is about to use `rw` (POSIX).
pub unsafe fn destroy<L: PreloadLock>(rw: *mut pthread_rwlock_t) -> c_int {
    if is_inline::<L>() {
        // SAFETY: forwarded.
        let s = match unsafe { shim::<L>(rw) } {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.writer.load(Ordering::Relaxed) != 0 || s.lock.is_locked() {
            return EBUSY;
        }
        releasing::wait_released(s.addr());
        // not held, and the program promises no further use until
        // `init`; dropped in place, then back to the all-zero bytes.
        // SAFETY: as the lines above say.
        unsafe {
            ptr::drop_in_place(rw.cast::<Shim<L>>());
            ptr::write_bytes(rw.cast::<u8>(), 0, size_of::<Shim<L>>());
        }
        return 0;
    }
    // SAFETY: forwarded.
    let w = unsafe { word(rw) };
    let p = w.load(Ordering::Acquire);
    if p.is_null() {
        return 0;
    }
    // SAFETY: installed by this family.
    let s = unsafe { &*p.cast::<Shim<L>>() };
    if s.writer.load(Ordering::Relaxed) != 0 || s.lock.is_locked() {
        return EBUSY;
    }
    releasing::wait_released(s.addr());
    // Relaxed: POSIX leaves a destroyed lock unusable until re-initialised,
    // which happens-after this call in any correct program.
    w.store(ptr::null_mut(), Ordering::Relaxed);
    // SAFETY: unpublished; not held; the program promises no further use.
    unsafe { Shim::free(p.cast::<Shim<L>>()) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use rwlock_core::testing::{Hooked, Hooks};
    use std::sync::Barrier;
    use std::sync::atomic::AtomicIsize;

    /// Counts the locks alive: one more in `for_kind`, one fewer when the
    /// shim's `free` drops the lock.
    struct CountAlive;

    impl Hooks for CountAlive {
        const INIT: Self = CountAlive;
    }

    impl Drop for CountAlive {
        fn drop(&mut self) {
            ALIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// PF-T out of line, counting the locks alive.
    type Counted = Hooked<rwlock_core::PfTicket, CountAlive>;

    static ALIVE: AtomicIsize = AtomicIsize::new(0);

    // SAFETY: out of line (the default `ZERO_INIT`).
    unsafe impl PreloadLock for Counted {
        fn for_kind(_: c_int) -> Self {
            ALIVE.fetch_add(1, Ordering::SeqCst);
            Self::INIT
        }
    }

    /// Threads released together on a statically initialised lock: one
    /// install wins, the losers free theirs, everyone uses the winner's
    /// (the writes exclude each other), and destroy frees the last one.
    #[test]
    fn first_use_races_install_one_lock() {
        const THREADS: usize = 8;
        let start = Barrier::new(THREADS);
        let inside = AtomicUsize::new(0);
        for _ in 0..300 {
            // SAFETY: all zero is PTHREAD_RWLOCK_INITIALIZER.
            let mut rw: pthread_rwlock_t = unsafe { std::mem::zeroed() };
            let p = &mut rw as *mut pthread_rwlock_t as usize;
            std::thread::scope(|s| {
                for _ in 0..THREADS {
                    s.spawn(|| {
                        let rw = p as *mut pthread_rwlock_t;
                        start.wait();
                        // A deadline, so that a lost install (a thread
                        // left holding a lock the word no longer names)
                        // fails the test instead of hanging it.
                        let mut at = timespec {
                            tv_sec: 0,
                            tv_nsec: 0,
                        };
                        // SAFETY: a valid clock and a writable timespec.
                        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut at) };
                        at.tv_sec += 5;
                        // SAFETY: a live lock used only through the shim.
                        unsafe {
                            assert_eq!(
                                write::<Counted>(rw, Wait::Until(libc::CLOCK_MONOTONIC, at)),
                                0
                            );
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two writers in");
                            inside.fetch_sub(1, Ordering::SeqCst);
                            assert_eq!(unlock::<Counted>(rw), 0);
                        }
                    });
                }
            });
            assert_eq!(
                ALIVE.load(Ordering::SeqCst),
                1,
                "one lock installed, the losers freed"
            );
            // SAFETY: unlocked, no other user.
            assert_eq!(unsafe { destroy::<Counted>(&mut rw) }, 0);
            assert_eq!(ALIVE.load(Ordering::SeqCst), 0, "destroy frees it");
        }
    }
}
