//! Destroy safety: `pthread_rwlock_destroy` waits for unlocks still under
//! way.
//!
//! POSIX lets a program destroy an unlocked lock, and free its memory, as
//! soon as it is unlocked: for instance thread B acquires the lock after
//! thread A released it, releases it, destroys it and frees the object
//! that holds it, while A is still inside `pthread_rwlock_unlock` (glibc's
//! rwlock is written to allow this). The families touch their lock after
//! the state change that frees it: a release reads the lock's waiter count
//! and may bump its wake epoch; a cohort release reached into its node
//! array (found in review, 2026-11-27: a write into the freed array, 2
//! runs in 3). So every unlock names the lock it is releasing in a record
//! of its thread, and `destroy` waits until no record names its lock.
//!
//! - **The unlock** ([`begin`]): two stores to the thread's own record
//!   (the lock's address, then 0 once the family's unlock has returned),
//!   and a thread-local depth, so that an unlock interrupted by a signal
//!   handler that unlocks too keeps its entry (one entry per level, up to
//!   [`LEVELS`]).
//! - **The destroy** ([`wait_released`]): after it found the lock free, it
//!   reads every record and waits (yielding) while one names the lock.
//! - **Records** are allocated once per thread (at its first unlock) and
//!   kept in a list that only grows; a thread's exit hands its record to the
//!   next thread that needs one. An unlock that cannot use a record (the
//!   thread's is being made, which may allocate and call back into a lock,
//!   or was handed back at its exit, or the levels are used up) counts
//!   itself in [`UNRECORDED`] instead, which `destroy` waits to see at 0.
//! - **Fork**: the child's copy of the records of threads that do not exist
//!   in it is cleared (a `pthread_atfork` child handler), so that an unlock
//!   under way in another thread at the fork does not hold up the child's
//!   destroys forever.
//!
//! Orderings: the unlock's store of the address is Relaxed, and ordered
//! before the family's release (a Release store or read-modify-write: the
//! release is what frees the lock) by that release; a destroy that found
//! the lock free read that release's state (or a later one), and its
//! Acquire fence makes the address visible to its scan. The store of 0 is
//! Release, and the scan's loads are Acquire: once the scan reads 0, every
//! access of the unlock to the lock happened before the destroy frees it.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};

/// Unlocks one thread may have under way at once (nested by signal
/// handlers) with a record entry each; deeper ones count in
/// [`UNRECORDED`].
pub const LEVELS: usize = 4;

/// One thread's unlocks under way.
struct Record {
    /// The lock released at each nesting level, or 0.
    releasing: [AtomicUsize; LEVELS],
    /// Whether a live thread owns the record.
    owned: AtomicBool,
    /// The next record of the list (set before the record is published,
    /// never changed).
    next: *const Record,
}

// SAFETY: the fields shared between threads are atomics; `next` is written
// before the record is published and never again.
unsafe impl Sync for Record {}

/// The list of every record ever made (records are never freed).
static RECORDS: AtomicPtr<Record> = AtomicPtr::new(ptr::null_mut());

/// Unlocks under way without a record entry (see the module docs).
static UNRECORDED: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's side.
struct Mine {
    record: Cell<*const Record>,
    /// Unlocks of this thread under way with an entry (the next level).
    depth: Cell<u8>,
    /// Set while the thread's record is being made, and once it was handed
    /// back at the thread's exit.
    no_record: Cell<bool>,
}

thread_local! {
    /// No destructor: usable until the thread's very end (see [`Owner`]).
    static MINE: Mine = const {
        Mine {
            record: Cell::new(ptr::null()),
            depth: Cell::new(0),
            no_record: Cell::new(false),
        }
    };
    /// Hands the record back at the thread's exit.
    static OWNER: Owner = const { Owner };
}

/// Its drop, at the thread's exit, hands the thread's record back.
struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = MINE.try_with(|m| {
            let r = m.record.replace(ptr::null());
            // From now on this thread's unlocks (in later thread-local
            // destructors) go uncounted by record.
            m.no_record.set(true);
            if !r.is_null() {
                // Release: the record's entries (all 0: this thread runs this
                // drop, so none of its unlocks is under way) before its next
                // owner's stores.
                // SAFETY: records are never freed.
                unsafe { (*r).owned.store(false, Ordering::Release) };
            }
        });
    }
}

/// An unlock under way: clears its entry (or its count) when dropped.
#[derive(Debug)]
#[must_use = "the release is covered until this is dropped"]
pub struct Releasing {
    /// The entry, or null for an unlock counted in [`UNRECORDED`].
    entry: *const AtomicUsize,
}

/// Starts the release of `lock` (the shim's address) by the calling
/// thread: hold the result until the family's unlock has returned.
#[inline]
pub fn begin(lock: usize) -> Releasing {
    let fast = MINE.try_with(|m| {
        let r = m.record.get();
        let depth = m.depth.get();
        if r.is_null() || usize::from(depth) >= LEVELS {
            return None;
        }
        m.depth.set(depth + 1);
        // SAFETY: records are never freed; this thread owns `r`.
        let entry = unsafe { &(*r).releasing[usize::from(depth)] };
        // Relaxed: ordered before the family's release (module docs).
        entry.store(lock, Ordering::Relaxed);
        Some(entry as *const AtomicUsize)
    });
    match fast {
        Ok(Some(entry)) => Releasing { entry },
        _ => begin_slow(lock),
    }
}

/// [`begin`] without an entry at hand: make the thread's record, or count
/// the unlock in [`UNRECORDED`].
#[cold]
#[inline(never)]
fn begin_slow(lock: usize) -> Releasing {
    let made = MINE.try_with(|m| {
        if !m.record.get().is_null() || m.no_record.get() {
            return false;
        }
        // First: registering the destructor and making the record may
        // allocate, and an allocator may take a lock and unlock it here
        // (found by `reentrant_calls_every_family`: a stack overflow).
        m.no_record.set(true);
        // Registers `OWNER`'s destructor (fails once it has run: then the
        // thread stays without a record).
        if OWNER.try_with(|_| ()).is_err() {
            return false;
        }
        let r = claim_record();
        m.record.set(r);
        m.no_record.set(false);
        true
    });
    if made == Ok(true) {
        return begin(lock);
    }
    // Relaxed: ordered before the family's release, as an entry's store.
    UNRECORDED.fetch_add(1, Ordering::Relaxed);
    Releasing { entry: ptr::null() }
}

/// A record for the calling thread: one handed back by an exited thread,
/// or a new one.
fn claim_record() -> *const Record {
    // Acquire: pairs with the Release CAS that published each record.
    let mut p = RECORDS.load(Ordering::Acquire).cast_const();
    while !p.is_null() {
        // SAFETY: records are never freed.
        let r = unsafe { &*p };
        // Acquire: pairs with the Release store of `Owner::drop`.
        if !r.owned.load(Ordering::Relaxed)
            && r.owned
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return p;
        }
        p = r.next;
    }
    register_fork_handler();
    let fresh = Box::into_raw(Box::new(Record {
        releasing: [const { AtomicUsize::new(0) }; LEVELS],
        owned: AtomicBool::new(true),
        next: ptr::null(),
    }));
    // Relaxed: the CAS below publishes.
    let mut head = RECORDS.load(Ordering::Relaxed);
    loop {
        // SAFETY: `fresh` is unpublished: ours alone.
        unsafe { (*fresh).next = head };
        // Release: publishes the record's fields with it.
        match RECORDS.compare_exchange_weak(head, fresh, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return fresh,
            Err(now) => head = now,
        }
    }
}

impl Drop for Releasing {
    #[inline]
    fn drop(&mut self) {
        if self.entry.is_null() {
            // Release: the unlock's accesses to the lock before the count
            // drops (module docs).
            UNRECORDED.fetch_sub(1, Ordering::Release);
            return;
        }
        // Release: as the module docs say.
        // SAFETY: the thread's own entry of a record that is never freed.
        unsafe { (*self.entry).store(0, Ordering::Release) };
        let _ = MINE.try_with(|m| m.depth.set(m.depth.get() - 1));
    }
}

/// Waits until no unlock under way releases `lock`: for `destroy`, once it
/// found the lock free.
pub fn wait_released(lock: usize) {
    // Acquire: the unlocks' entries stored before the releases the caller
    // read (module docs).
    fence(Ordering::Acquire);
    // Acquire: as in `claim_record`.
    let mut p = RECORDS.load(Ordering::Acquire).cast_const();
    while !p.is_null() {
        // SAFETY: records are never freed.
        let r = unsafe { &*p };
        for entry in &r.releasing {
            // Acquire: pairs with the Release store of 0 (module docs).
            while entry.load(Ordering::Acquire) == lock {
                std::thread::yield_now();
            }
        }
        p = r.next;
    }
    // Acquire: pairs with the Release decrements.
    while UNRECORDED.load(Ordering::Acquire) != 0 {
        std::thread::yield_now();
    }
}

/// Records made so far (each thread that unlocked has one; an exited
/// thread's is reused): a diagnostic for tests, re-exported as
/// [`release_records`](crate::release_records).
pub fn records() -> usize {
    let mut n = 0;
    // Acquire: as in `claim_record`.
    let mut p = RECORDS.load(Ordering::Acquire).cast_const();
    while !p.is_null() {
        n += 1;
        // SAFETY: records are never freed.
        p = unsafe { (*p).next };
    }
    n
}

/// Registers [`after_fork_in_child`] when the library is loaded (an ELF
/// constructor), not at the process's first unlock: glibc 2.28 to 2.35
/// hold their `atfork` lock while running fork handlers, and
/// `pthread_atfork` takes it too, so a first unlock inside a fork handler
/// (a prepare handler that write-locks and parent and child handlers that
/// unlock) would hang `fork` (found in review, 2026-11-28). The lazy call
/// in `claim_record` stays for a process whose first unlock comes before
/// this constructor (another library's constructor).
#[used]
#[unsafe(link_section = ".init_array")]
static REGISTER_FORK_HANDLER_AT_LOAD: extern "C" fn() = {
    extern "C" fn at_load() {
        register_fork_handler();
    }
    at_load
};

/// Registers [`after_fork_in_child`] once.
fn register_fork_handler() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.swap(true, Ordering::Relaxed) {
        // The result only says whether memory ran out (then a child may
        // wait on a stale entry: no worse than before this module existed).
        // SAFETY: registers a plain function.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    }
}

/// In the child after a fork: only the forking thread exists, so every
/// other record is free and names no lock, and no unlock of another thread
/// is under way.
extern "C" fn after_fork_in_child() {
    let mine = MINE.try_with(|m| m.record.get()).unwrap_or(ptr::null());
    // Relaxed: one thread.
    let mut p = RECORDS.load(Ordering::Relaxed).cast_const();
    while !p.is_null() {
        // SAFETY: records are never freed.
        let r = unsafe { &*p };
        if p != mine {
            for entry in &r.releasing {
                entry.store(0, Ordering::Relaxed);
            }
            r.owned.store(false, Ordering::Relaxed);
        }
        p = r.next;
    }
    UNRECORDED.store(0, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A destroy waits while another thread is inside its release of the
    /// same lock, and only for that lock.
    #[test]
    fn a_destroy_waits_for_the_release_under_way() {
        const LOCK: usize = 0x1000_0040;
        let (inside, go) = (mpsc::channel(), mpsc::channel::<()>());
        let releaser = std::thread::spawn(move || {
            let r = begin(LOCK);
            inside.0.send(()).unwrap();
            go.1.recv().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            drop(r);
        });
        inside.1.recv().unwrap();
        // Another lock: no wait.
        wait_released(LOCK + 64);
        go.0.send(()).unwrap();
        let t0 = std::time::Instant::now();
        wait_released(LOCK);
        assert!(
            t0.elapsed() >= Duration::from_millis(40),
            "returned while the release was under way"
        );
        releaser.join().unwrap();
    }

    /// Nested releases (a signal handler's) keep the outer one's entry.
    #[test]
    fn a_nested_release_keeps_the_outer_entry() {
        const OUTER: usize = 0x2000_0040;
        const INNER: usize = 0x2000_0080;
        let outer = begin(OUTER);
        let inner = begin(INNER);
        drop(inner);
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            wait_released(OUTER);
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        drop(outer);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
    }
}
