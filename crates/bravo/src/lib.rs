//! BRAVO: biased reader acceleration for any reader-writer lock.
//!
//! `Bravo<L>` wraps any [`lock_api::RawRwLock`] `L` (parking_lot's, this
//! workspace's phase-fair locks, a pthread adapter, your own) and makes
//! concurrent readers stop fighting over `L`'s reader count: while the lock
//! is *biased*, a reader publishes itself by one CAS into a slot of a global
//! table, chosen by hashing (lock, thread), and leaves by storing 0 there.
//! Readers of one lock touch different cache lines; a writer revokes the
//! bias, waits for the readers the table shows, and from then on the lock
//! behaves exactly like `L` until readers re-enable the bias. The algorithm
//! is Listing 1 of Dice & Kogan, *BRAVO: Biased Locking for Reader-Writer
//! Locks*, USENIX ATC 2019; [`raw`] documents the protocol line by line.
//!
//! # Use
//!
//! Swap the import (same guard names and methods as `parking_lot` 0.13):
//!
//! ```
//! use bravo::RwLock; // was: use parking_lot::RwLock;
//!
//! static CONFIG: RwLock<Vec<u32>> = RwLock::new(Vec::new());
//! CONFIG.write().push(1);
//! assert_eq!(CONFIG.read().len(), 1);
//! ```
//!
//! Or wrap the raw lock you already use, with `lock_api`:
//!
//! ```
//! use bravo::Bravo;
//! type MyLock<T> = lock_api::RwLock<Bravo<rwlock_core::PfQueue>, T>;
//! let lock = MyLock::new(5);
//! assert_eq!(*lock.read(), 5);
//! ```
//!
//! `Bravo<L>` implements every extra `lock_api` trait `L` does
//! (downgrade, upgrade, timed, fair, and their combinations); see the
//! rules below for what each does about fast-path readers.
//!
//! The second parameter, `Bravo<L, P>`, picks the [`Policy`]: the default
//! adds measured refinements to the paper's Listing 1 (revocation before
//! taking `L`, a block-wise scan, an adaptive inhibit window, a per-thread
//! hint that skips the bias check on a lock the thread just saw unbiased,
//! and a process-wide count of biased locks that lets a writer skip it
//! while no lock is biased); [`Listing1`] is the paper exactly;
//! [`UncountedPolicy`](policy::UncountedPolicy) is the default without the
//! count, for a lock whose bytes code outside Rust may copy (the
//! LD_PRELOAD library uses it); `SLOWDOWN_GUARD` (the paper's `N`,
//! 9) is a constant of the policy, so a user type implementing [`Policy`]
//! changes it.
//!
//! # When it helps
//!
//! Read-mostly data read by several threads at a high rate: reads then scale
//! with the number of cores instead of serialising on one line. Writes cost
//! what `L`'s cost, plus a table scan (a few µs for 4096 slots) each time
//! they find the bias on; after such a revocation the bias stays off for
//! `N` (9) times the revocation's duration, which bounds the writers'
//! slow-down near 1/(N+1). Under heavy writing `Bravo<L>` therefore behaves
//! as `L`. Measure your workload: `cargo bench --bench rwbench`, and the
//! `stats` feature ([`stats`]) says how many reads took the fast path.
//!
//! # Footprint
//!
//! `size_of::<Bravo<L>>()` is `size_of::<L>()` plus one 8-byte word (and
//! `L`'s alignment padding), for any `L`. The table is global: 4096 slots
//! (32 KiB) by default, see [`table`] to size it.
//!
//! # Guards, threads and the rules of reading
//!
//! - **Unlock is exact.** A read guard carries either the slot its fast
//!   path took or `L`'s own guard state; unlock releases exactly that. Two
//!   threads whose hashes collide on one slot for one lock (one fast, one
//!   slow) release their own acquisitions. Unlock does not check that a
//!   fast-path guard came from this lock (only the unsafe raw API can mix
//!   them up): that load of the slot measured at a third of the whole read
//!   pair (6 of 18 ns).
//! - **Moves.** A fast reader's slot names the lock by its address and its
//!   biased period (`raw`, "The slot tag"). A raw `Bravo` must not move
//!   while a fast-path read is held: its writers would not see that
//!   reader. Safe code can move one only after `mem::forget` of a fast
//!   read guard (the guard's borrow then ends); the forgotten read is then
//!   detached, and the moved lock reads as unlocked, where `L` with a
//!   forgotten read stays read-held. That is not unsound, since nothing
//!   can reach the data through the forgotten guard. A lock built later
//!   where a moved one was never waits for the old one's readers,
//!   forgotten guards included.
//! - **`Send`.** A read guard is `Send` exactly when `L`'s is: releasing a
//!   fast-path slot from another thread is correct (the slot is named by
//!   the guard, not recomputed), so only `L` decides. Over parking_lot
//!   without its `send_guard` feature and over pthread, guards stay on
//!   their thread; over this workspace's PF-Q and PF-T they may move.
//! - **Recursive reads.** The second read of a lock by a thread finds its
//!   slot taken by the first and goes through `L`. With the default policy
//!   a writer, blocking or timed, never waits for fast readers while
//!   holding `L` (it gives `L` back and waits without it), so the nested read behaves as it would
//!   with `L` alone: it deadlocks only where `L`'s would (a writer-preferring
//!   or phase-fair `L` with a writer queued on `L` itself). With
//!   [`Listing1`] the writer waits holding `L`, as in the paper, and a
//!   nested read behind it deadlocks even over a reader-preferring `L`.
//!   Both guards release correctly in either order. Note that a nested
//!   read whose outer read took the fast path gets through where `L`
//!   alone would deadlock, so a test that runs with the bias on can hide
//!   a deadlock the bias off shows: for nested reads use
//!   [`RecursiveRwLock`] (over parking_lot's recursive lock), whose nested
//!   reads get past any waiting writer, upgrades included (below).
//! - **Writer preference is `L`'s.** Slow readers and writers queue in
//!   `L`, so writers wait as long under `Bravo<L>` as under `L`: fast
//!   readers add at most the sections already running when a revocation
//!   begins (no fast read starts after it). Over glibc's default pthread
//!   lock, which prefers readers, a writer among 15 readers on 2 cores
//!   waited about 150 ms, with or without BRAVO (`docs/results.md`,
//!   writer_latency at 16 threads: p99 156 ms for `pthread`, 140 ms for
//!   `Bravo<pthread>`, one write each in the run). Wrap a writer-fair `L`
//!   (parking_lot, PF-Q, PF-T) where writers must not starve.
//! - **Try and timed writes** never wait for fast readers beyond their
//!   deadline (`try_lock_exclusive`, `try_upgrade`: one scan, and they
//!   fail if another writer is revoking; the timed forms: they wait for
//!   fast readers and for another writer's revocation until the deadline,
//!   and never fail before it, as `lock_api::RawRwLockTimed` requires);
//!   they fail with the bias restored, so a thread holding a fast read
//!   gets `None`, as it would from `L`. The upgrades (`try_upgrade`,
//!   `try_upgrade_until`, and `upgrade` with the default policy) revoke
//!   while still upgradable and keep the bias off until `L`'s own upgrade
//!   answers, so no reader that `L` lets in meanwhile can bias the lock
//!   for fast readers the upgrade would then wait for (until 2026-11-28 it
//!   could, and `try_upgrade` then blocked until they left; found in
//!   review, `tests/upgrade_window.rs`). Timed operations need `L`'s
//!   `Duration`/`Instant` to be `std::time`'s (parking_lot's are).
//! - **Panics.** No lock operation panics between changing the lock word
//!   and restoring it (a revocation fetches the table, whose first use
//!   allocates and reads `BRAVO_TABLE_SLOTS`, before it sets `REVOKING`,
//!   and the table's diagnostic cannot panic); should that ever change, a
//!   guard restores the biased word while unwinding, so the lock is never
//!   left wedged.
//! - **Moving a read-locked lock** (through the raw API, keeping the
//!   read's guard state while moving the lock, or in safe code after
//!   forgetting the guard) detaches a fast-path read from the moved lock:
//!   its slot names the old address, so a writer on the moved lock does
//!   not wait for it.
//! - **`mem::forget` of a read guard** is safe but, as with any
//!   reader-writer lock, leaves the lock read-held: writers wait forever
//!   (unless the lock is then moved, above).
//!   A forgotten fast-path guard also leaves the lock's tag in its slot;
//!   dropping the lock clears such slots (only if the lock is still
//!   biased; it looks at the slots its readers' hashes can take), but a lock moved after forgetting a guard leaves
//!   the old tag behind: a lock later built at that address waits for the
//!   phantom reader only if its biased period matches in the tag's time
//!   bits (about 1 in 2^10 on 64-bit targets, see [`raw`], "The slot
//!   tag"). Do not forget guards.
//! - **Writers wait for fast readers by polling**, then sleeping (up to
//!   1 ms between polls): a reader that blocks inside its critical section
//!   delays a writer without burning its core (see [`raw`]).
//!
//! # Loom
//!
//! Under `RUSTFLAGS="--cfg loom"` the lock's atomics are loom's (through
//! [`rwlock_core::sync`]) and the model's table has 2 slots by default
//! ([`table::configure`] sets it per model); `Bravo::new()` replaces the
//! unusable `INIT` inside models.

#![deny(missing_docs)]

/// The clock of the bias policy, shared with the workspace's other
/// adaptive policies (it lives in `rwlock-core`).
pub use rwlock_core::clock;
pub mod policy;
pub mod raw;
pub mod rwlock;
pub mod stats;
pub mod table;
mod wait;

#[cfg(all(test, loom))]
mod loom_tests;
/// Shared with the integration tests.
#[cfg(all(test, not(loom)))]
#[path = "../tests/support/mod.rs"]
mod test_support;

pub(crate) use rwlock_core::sync;

pub use policy::{DefaultPolicy, Listing1, Policy};
pub use raw::{Bravo, BravoSharedGuard};
pub use rwlock::*;

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
