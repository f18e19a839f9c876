//! The passive reader-writer lock (prwlock; Liu, Zhang & Chen, "Scalable
//! Read-mostly Synchronization Using Passive Reader-Writer Locks", USENIX
//! ATC 2014, and its journal version FCP) at user level on stock Linux.
//!
//! A reader writes only its own thread's status word: no atomic
//! read-modify-write, no memory fence, no shared cache line written. A
//! writer reaches consensus with the readers through a version number that
//! readers report when they release, and for the readers that have not
//! reported, one `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (the user
//! space stand-in for the paper's IPIs). Reads are therefore nearly free and
//! perfectly scalable; writes cost microseconds. Use it where writes are
//! rare (configuration, routing tables, membership). When writes come so
//! close together that their barriers would dominate, a lock switches
//! itself to *active reading* for a while ([`policy`]: readers then pay a
//! shared read-modify-write, like a counter-based lock, and writers no
//! barrier), so a burst of writes or a busy, oversubscribed machine does
//! not collapse it; still, for a workload with steady frequent writes, a
//! BRAVO or cohort lock does better.
//!
//! ```
//! // A one-line swap for parking_lot::RwLock:
//! type RwLock<T> = lock_api::RwLock<prwlock::PrwLock, T>;
//!
//! static CONFIG: RwLock<Vec<&str>> = RwLock::new(Vec::new());
//! CONFIG.write().push("listen 80");
//! assert_eq!(CONFIG.read().len(), 1);
//! ```
//!
//! A read guard stays on the thread that took it:
//!
//! ```compile_fail
//! fn assert_send<T: Send>() {}
//! assert_send::<prwlock::RwLockReadGuard<'static, u8>>();
//! ```
//!
//! but other threads may read through it while it lives:
//!
//! ```
//! let lock = prwlock::RwLock::new(vec![1, 2, 3]);
//! let guard = lock.read();
//! std::thread::scope(|s| {
//!     s.spawn(|| assert_eq!(guard.len(), 3));
//! });
//! ```
//!
//! # What is here
//! - [`PrwLock`]: the lock (`lock_api::RawRwLock` with the try variants and
//!   `is_locked*`, and `RawRwLockDowngrade`). Its read guards are not
//!   `Send`: a reader's status lives in its thread. [`RwLock`] is the alias.
//! - [`Domain`]: a group of locks that reach consensus together, with the
//!   per-thread status records (paper Section 3.4). Locks use
//!   [`Domain::global`] unless made with [`PrwLock::in_domain`].
//! - [`PrwLock::schedule_out`] / [`ReadGuardExt::schedule_out`]: a reader
//!   about to block converts its hold to active mode (Fig. 7 `ScheduleOut`).
//! - [`barrier_mode`]: whether this process runs with the kernel helper
//!   (`prwlock-sys`'s module loaded: descheduled readers need no barrier,
//!   consensus IPIs only to CPUs of unreported readers), with `membarrier`, or in the
//!   slower fallback where readers pay a fence (`membarrier` refused, or
//!   [`force_fence_mode`] / `PRWLOCK_FORCE_FENCE=1`);
//!   [`kernel_helper_stats`] counts the helper's requests and IPIs.
//! - [`policy`]: the write-heavy mode, when a lock's readers go active so
//!   that frequent writes need no heavy barrier (BRAVO's inhibition rule),
//!   and when they go passive again; [`Domain::set_write_heavy_mode`] turns
//!   it off for a domain.
//! - [`rcu`]: FCP-RCU (FCP Section 5), read-copy update on the same
//!   records, barrier modes and kernel helper: fence-free read sections,
//!   `synchronize` by version consensus, deferred reclamation, and
//!   [`rcu::RcuCell`], an `Arc<T>` cell in `arc_swap::ArcSwap`'s shape.
//!
//! # Threads
//! A thread registers a status record in a domain on its first read there
//! and gives it back when it exits (thread-local destructor); records are
//! reused, so memory is bounded by the most threads alive at once. (A read
//! guard still alive in a thread-local destroyed after the thread's records
//! keeps the record until the guard drops: the record is given back at the
//! thread's very end, after every thread-local destructor.) A writer
//! never waits for an exited thread, except for a read guard the thread
//! leaked (`mem::forget`), which keeps the lock read-locked for good, as a
//! leaked guard of any lock does. Dropping a lock while threads that
//! read it are registered is fine: records name locks by a unique id, not
//! by address. A thread may hold [`PASSIVE_SLOTS`] locks of one domain in
//! passive mode at once; further nested reads use the lock's active counter
//! (correct, a little slower).
//!
//! # Costs (figures in `docs/prwlock.md`)
//! Uncontended read lock and unlock: a handful of loads and stores, no
//! `lock`-prefixed instruction and no `mfence` (`tests/fast_path_asm.rs`
//! checks the compiled code). Write: the writer mutex, a version increment,
//! a scan of the domain's records and one `membarrier` (about 3 µs on the
//! development VM, more with more CPUs), skipped when every live reader of
//! the domain reported the new version within about a microsecond. Readers
//! report when they leave or wait while a writer is at the door, so a
//! writer among busy readers mostly skips it; a registered thread that is
//! idle (blocked elsewhere) never reports and costs each write the barrier,
//! until writes come close enough for the write-heavy mode ([`policy`]).
//! [`Domain::stats`] counts the barriers and the switches to that mode.
//!
//! # Caveats
//! - Writer preference with hand-off: a stream of writers passes the lock
//!   along and keeps readers out until it ends (paper Fig. 4).
//! - Reads are not recursive behind a waiting writer (a nested read of the
//!   same lock can deadlock), and a thread that asks for the write lock
//!   while holding a passive read of it panics instead of deadlocking (a
//!   read held in active mode, past the passive slots, is not detected).
//! - A reader that blocks for long inside its section without
//!   [`PrwLock::schedule_out`] makes writers poll (spin, yield, then sleep
//!   until woken by its release); correctness does not depend on it.

#![deny(missing_docs)]

pub mod barrier;
pub mod domain;
#[cfg(all(test, loom))]
mod loom_tests;
pub mod policy;
pub mod prwlock;
pub mod rcu;

pub(crate) use rwlock_core::sync;

pub use barrier::{
    BarrierMode, ModeAlreadyChosen, barrier_mode, force_fence_mode, kernel_helper_stats,
};
pub use domain::{Domain, DomainStats, PASSIVE_SLOTS};
pub use prwlock::{PrwLock, ReadGuardExt, ReadToken, WriteToken};
/// The kernel helper's counters ([`kernel_helper_stats`]).
pub use prwlock_sys::Stats as KernelHelperStats;

/// `lock_api::RwLock` over [`PrwLock`].
pub type RwLock<T> = lock_api::RwLock<PrwLock, T>;
/// Read guard of [`RwLock`] (not `Send`).
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, PrwLock, T>;
/// Write guard of [`RwLock`].
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, PrwLock, T>;

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
