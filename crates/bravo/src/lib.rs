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
//! (downgrade, upgrade, timed, fair, and their combinations). Upgrades and
//! timed or upgrading writes revoke the bias once `L` grants them, waiting
//! for fast-path readers already inside (their critical sections bound the
//! wait); a plain `try_lock_exclusive` never waits for them: it fails and
//! leaves the bias on.
//!
//! The second parameter, `Bravo<L, P>`, picks the [`Policy`]: the default
//! adds measured refinements to the paper's Listing 1 (revocation before
//! taking `L`, a block-wise scan, an adaptive inhibit window, a per-thread
//! hint that skips the bias check on a lock the thread just saw unbiased);
//! [`Listing1`] is the paper exactly; `SLOWDOWN_GUARD` (the paper's `N`,
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
//!   slow) release their own acquisitions. Releasing a fast-path guard on
//!   another lock than the one that issued it (only possible through the
//!   unsafe raw API) panics in debug builds; the check is a load of the
//!   slot, which measured at a third of the whole read pair (6 of 18 ns),
//!   so release builds trust the caller, as `unlock_shared`'s contract
//!   requires.
//! - **`Send`.** A read guard is `Send` exactly when `L`'s is: releasing a
//!   fast-path slot from another thread is correct (the slot is named by
//!   the guard, not recomputed), so only `L` decides. Over parking_lot
//!   without its `send_guard` feature and over pthread, guards stay on
//!   their thread; over this workspace's PF-Q and PF-T they may move.
//! - **Recursive reads** are as safe as `L`'s: the second acquisition by a
//!   thread finds its slot taken by the first and goes through `L`, so with
//!   a writer-preferring or phase-fair `L` a writer queued in between
//!   deadlocks it, exactly as with `L` alone. Both guards release correctly
//!   in either order.
//! - **`mem::forget` of a read guard** is safe but, as with any
//!   reader-writer lock, leaves the lock read-held: writers wait forever.
//!   A forgotten fast-path guard also leaves the lock's address in its
//!   slot; dropping the lock clears such slots (one table scan, only if the
//!   lock is still biased), but a lock *moved* after forgetting a guard
//!   leaves the old address behind, and a lock later built at that address
//!   would wait for the phantom reader on its first revocation. Do not
//!   forget guards.
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

#![warn(missing_docs)]

pub mod clock;
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
