//! The process-wide count of biased periods ([`Policy::CLEAN_BY_COUNT`]):
//! how many locks of counting policies have a bias set or being revoked.
//!
//! # Why
//!
//! A writer must see, once it holds `L`, that the bias is off (Listing 1,
//! l. 37). Loading the lock word for that costs little alone, but the word
//! shares `L`'s cache line, and with two threads taking turns on one lock
//! the other thread's failed acquisitions take that line away between the
//! writer's acquiring instruction and its load: one more coherence miss
//! inside every write's critical section. `Bravo<parking_lot>` fell to
//! 0.76–0.93× `parking_lot` at 50% writes and 2 threads (empty sections);
//! skipping the load alone brought it to 0.93–1.06×, and moving the word
//! to its own line to 0.94–1.00× (`docs/bravo.md`, "The count of biased
//! periods"). A count that no biased lock exists lives on a line of its
//! own that is written only when a bias is set or revoked, so a writer
//! finds it in its cache.
//!
//! # Protocol
//!
//! - A slow reader holding `L` counts one period ([`enter`]) *before* its
//!   CAS sets `RBIAS`, and takes it back ([`leave`]) if the CAS fails.
//! - A revocation that ends with a clean word ends the period ([`leave`])
//!   after the store that ends it. A revocation that restores the biased
//!   word (it gave up, or a panic) leaves the period counted.
//! - Dropping a lock whose word still shows a bias ends its period.
//! - A writer holding `L` that reads 0 ([`none`]) treats the word as clean
//!   without loading it.
//!
//! Why 0 means clean: a bias on the writer's lock was set by a slow reader
//! that held `L` and counted it first, so its `+1` happens before the
//! writer's load (through `L`'s release and acquire). Every `-1` comes
//! after its own period's `+1` in the count's modification order (the
//! revoker read the biased word that the setter's CAS wrote after its
//! `+1`). Reading 0, the writer has seen as many `-1`s as `+1`s, each `-1`
//! after its own `+1`: every period counted before its load has ended,
//! this lock's included, and none can begin while the writer holds `L`.
//!
//! # Orderings
//!
//! `+1` Relaxed: the setter's Release CAS of the word and `L`'s release
//! carry it. `-1` Release and the writer's load Acquire: the count is
//! changed only by read-modify-writes, so a load that reads any later
//! value synchronises with every `-1` before it, and so with the scans
//! before them (which Acquired the departures of the fast readers).
//!
//! # What it does not cover
//!
//! The count is the process's, not the lock's: one lock that stays biased
//! (a read-mostly lock, or a biased lock that is never dropped) keeps every
//! other lock's writers on the load of their word, which is where they
//! were without the count. And it is sound only while each biased word
//! lives in one place: a bitwise copy of a biased lock used beside the
//! original (C code that `memcpy`s a `pthread_rwlock_t`, which POSIX leaves
//! undefined) is a bias nobody counted, so the LD_PRELOAD library's
//! families use [`UncountedPolicy`](crate::policy::UncountedPolicy).
//! (A Rust move is not a copy: the moved-from lock is gone, and its count
//! goes with the moved word.)

use crate::sync::{AtomicUsize, Ordering};

#[cfg(not(loom))]
static BIASED: crossbeam_utils::CachePadded<AtomicUsize> =
    crossbeam_utils::CachePadded::new(AtomicUsize::new(0));

#[cfg(loom)]
loom::lazy_static! {
    // A fresh count for each execution of a model.
    static ref BIASED: AtomicUsize = AtomicUsize::new(0);
}

/// Counts a period that is about to begin (before the CAS that sets the
/// bias).
#[inline]
pub(super) fn enter() {
    // Relaxed: see the module docs, "Orderings".
    BIASED.fetch_add(1, Ordering::Relaxed);
}

/// Ends a counted period (after the word no longer shows it), or takes
/// back an [`enter`] whose CAS failed.
#[inline]
pub(super) fn leave() {
    // Release: pairs with `none`'s Acquire (module docs, "Orderings").
    BIASED.fetch_sub(1, Ordering::Release);
}

/// Whether no counted period is running: a caller that holds `L` for
/// writing may then treat its lock's word as clean.
#[inline(always)]
pub(super) fn none() -> bool {
    // Acquire: pairs with every `leave` before the value read.
    BIASED.load(Ordering::Acquire) == 0
}

/// How many locks of policies with
/// [`CLEAN_BY_COUNT`](crate::Policy::CLEAN_BY_COUNT) (the default) have
/// their bias set, or being revoked, now: while it is above 0, writers of
/// every such lock load their lock's word once they hold `L`. A biased
/// lock that is never dropped (a `static`, a leaked one) stays counted.
/// A snapshot, for diagnostics and tests.
pub fn biased_locks() -> usize {
    // Relaxed: a snapshot.
    BIASED.load(Ordering::Relaxed)
}
