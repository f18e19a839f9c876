//! The classic ticket lock (Mellor-Crummey & Scott, 1991): the cohort's
//! per-node local lock, a thread-oblivious global lock, and DR-MCS's writer
//! lock.
//!
//! # Protocol
//!
//! Two counters: `next` (tickets handed out) and `grant` (the ticket now
//! served). An acquirer takes `t = next++` and waits until `grant == t`; the
//! owner releases with `grant = t + 1`. Service is FIFO.
//!
//! - **Cohort detection** (PPoPP'13 Section 3.1): the owner holds ticket
//!   `grant`, so somebody waits behind it exactly when `next - grant > 1`.
//!   Tickets are never abandoned (there is no timed acquire), so a waiter
//!   seen this way will take the lock: a hand-off to it cannot strand.
//! - **Thread-obliviousness**: the release only needs the ticket, which
//!   travels as a token; any thread may release.
//! - `is_locked` is `next != grant`: a pure read. It counts a queued waiter
//!   as "locked", which is what a writer-preference reader wants to see.
//!
//! Waiting goes through [`Waiters::wait_for_turn`], the workspace's one
//! ticket wait (`rwlock_core::ticket_wait`, shared with PF-T's writers): a
//! waiter further back that has a CPU of its own restarts its backoff at
//! every hand-off it sees, so it parks only when the queue stops moving, not
//! because it is long; the next ticket in line yields far longer before it
//! parks, so that a hand-off rarely waits for a futex wake-up. Each wait
//! parks tagged with the first value of `grant` that ends it, and the
//! release (a SeqCst read-modify-write of `grant`, then the waker's half of
//! the parking protocol) wakes only the threads that `grant == t + 1` lets
//! go ([`Waiters::wake_tagged`]). Waking every parked waiter of the node at
//! each release, as first written, sent all but one back to sleep, and with
//! hundreds of threads on 2 cores that herd ate the CPUs
//! (`docs/cohort.md`, "384 threads: one wake per hand-off").

use rwlock_core::sync::{AtomicU64, Ordering};
use rwlock_core::ticket_wait::TicketValue;
use rwlock_core::wait::{DefaultWait, Waiters};

/// A FIFO ticket lock; see the [module docs](self).
///
/// 24 bytes: both counters and the waiter count share one cache line (a
/// local lock is only touched by the threads of one node). The counters
/// are 64-bit, so they never wrap (a 32-bit `next` could come back to the
/// value a stalled `try_acquire` read, and its CAS would then succeed
/// beside the owner).
#[derive(Debug, Default)]
pub struct TicketLock {
    next: AtomicU64,
    grant: AtomicU64,
    waiters: Waiters,
}

impl TicketLock {
    rwlock_core::loom_const_fn! {
        /// An unlocked ticket lock.
        pub fn new() -> Self {
            TicketLock {
                next: AtomicU64::new(0),
                grant: AtomicU64::new(0),
                waiters: Waiters::new(),
            }
        }
    }

    /// Takes a ticket and waits for it; returns the ticket (the token the
    /// release needs).
    #[inline]
    pub fn acquire(&self) -> u64 {
        // SeqCst: the RMW that makes the lock visibly held. As DR-MCS's
        // writer lock it is the writer's half of the Dekker pair with a
        // reader's arrival (the writer scans the readers after it; the reader
        // checks `is_locked` after arriving), which needs the single SeqCst
        // order.
        let t = self.next.fetch_add(1, Ordering::SeqCst);
        // Acquire: pairs with the Release half of the previous owner's
        // SeqCst `fetch_add` of `grant`.
        let served = self.grant.load(Ordering::Acquire);
        if served != t {
            // Its last load is Acquire, as this one.
            self.waiters
                .wait_for_turn::<DefaultWait, u64>(t, served, |order| self.grant.load(order));
        }
        t
    }

    /// Takes the lock if it is free; returns the ticket.
    #[inline]
    pub fn try_acquire(&self) -> Option<u64> {
        // Relaxed: a guess, validated by the CAS below.
        let n = self.next.load(Ordering::Relaxed);
        // Acquire: pairs with the previous owner's release of ticket `n - 1`
        // (the CAS below proves nobody took ticket `n` in between).
        if self.grant.load(Ordering::Acquire) != n {
            return None;
        }
        // SeqCst: as the `fetch_add` in `acquire`.
        self.next
            .compare_exchange(n, n.wrapping_add(1), Ordering::SeqCst, Ordering::Relaxed)
            .ok()
    }

    /// Whether a thread has taken a ticket behind the owner. Called by the
    /// owner only; never reports a waiter that does not exist.
    #[inline]
    pub fn has_waiters(&self) -> bool {
        // Relaxed: a hint. `next` only grows and tickets are never abandoned,
        // so a ticket seen here belongs to a thread that will take the lock;
        // a ticket missed here only costs a hand-off (the owner releases the
        // global lock instead).
        let next = self.next.load(Ordering::Relaxed);
        // Relaxed: only the owner (us) writes `grant` while we hold the lock.
        let grant = self.grant.load(Ordering::Relaxed);
        next.wrapping_sub(grant) > 1
    }

    /// Serves ticket `t + 1`.
    ///
    /// # Safety
    ///
    /// The lock must be held with ticket `t` (by any thread: the lock is
    /// thread-oblivious).
    #[inline]
    pub unsafe fn release(&self, t: u64) {
        debug_assert_eq!(
            self.grant.load(Ordering::Relaxed),
            t,
            "TicketLock::release: ticket {t} is not the one being served"
        );
        let next = t.wrapping_add(1);
        // SeqCst RMW: Release publishes the critical section to the next
        // owner (pairs with its Acquire load of `grant`), and the parking
        // protocol needs the state change to be a SeqCst RMW before
        // `wake_tagged` reads the waiter count.
        self.grant.swap(next, Ordering::SeqCst);
        self.waiters.wake_tagged(next.tag());
    }

    /// Whether the lock is held or a ticket is queued: a pure read.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // SeqCst loads: the reader's half of the Dekker pair described in
        // `acquire` (after its SeqCst arrival).
        self.next.load(Ordering::SeqCst) != self.grant.load(Ordering::SeqCst)
    }
}
