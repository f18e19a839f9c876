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
//! Waiting goes through [`Waiters`]: spin briefly, yield, then park. A
//! waiter further back that has a CPU of its own restarts its backoff at
//! every hand-off it sees, so it parks only when the queue stops moving, not
//! because it is long. The next ticket in line yields far longer before it
//! parks ([`NextInLine`]), so that a hand-off rarely waits for a futex
//! wake-up (with more threads than cores that would cost a wake-up per
//! critical section). The release is therefore a SeqCst read-modify-write
//! followed by the waker's half of the parking protocol, and it wakes only
//! the threads that `grant == t + 1` lets go. Each wait parks tagged with
//! the first value of `grant` that ends it
//! ([`Waiters::wait_until_tagged`]): the next in line with its ticket `t`;
//! a waiter further back that shares its CPU and waits to be next, with
//! `t - 1`; a waiter that watches the queue move (it saw `grant == s`),
//! with `s + 1`. `grant` takes every value in turn and only the release
//! writes it, so the release that serves `g` wakes exactly the waiters
//! tagged `g` ([`Waiters::wake_tagged`]) and no wait is left without the
//! wake that ends it. Waking every parked waiter of the node at each
//! release, as first written, sent all but one back to sleep, and with
//! hundreds of threads on 2 cores that herd ate the CPUs
//! (`docs/cohort.md`, "384 threads: one wake per hand-off").

use rwlock_core::sync::{AtomicU64, Ordering};
use rwlock_core::wait::{DefaultWait, WaitPolicy, Waiters, may_restart_when_queue_moves};

/// How the next ticket in line waits: like the default policy, but with a
/// long run of yields before it parks, so that a hand-off to a successor
/// that is merely descheduled costs no futex wake-up, while a successor
/// behind a long critical section (a writer waiting for readers, a guard
/// held across I/O) still goes to sleep instead of yielding forever.
#[derive(Debug, Clone, Copy, Default)]
pub struct NextInLine;

impl WaitPolicy for NextInLine {
    const SPIN_ROUNDS: u32 = 7;
    const YIELD_ROUNDS: u32 = 128;
    const PARK: bool = true;
}

/// The parking tag of the waiters that `grant == g` makes ready (module
/// docs): every wait parks with the first value of `grant` that ends it,
/// and `grant` takes every value in turn. Truncated where `usize` is
/// narrower: two tags that collide only wake a thread early.
#[inline]
fn tag(g: u64) -> usize {
    g as usize
}

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
        if self.grant.load(Ordering::Acquire) != t {
            self.wait_for(t);
        }
        t
    }

    #[cold]
    fn wait_for(&self, t: u64) {
        // While more than one ticket is ahead of ours, a waiter with a CPU of
        // its own waits for the queue to move, with a fresh backoff after
        // each hand-off: it parks only when no hand-off happened for a whole
        // spin-and-yield budget (the holder is slow or not running), not
        // merely because the queue ahead of it is long. With one backoff for
        // the whole wait, a queue of 15 on 16 cores outlasted the budget,
        // every waiter parked, and each hand-off then cost a futex wake-up:
        // 0.24 M ops/s against parking_lot's 7.4 M (`docs/cohort.md`, "Many
        // cores"). A waiter that shares its CPU (threads outnumber cores:
        // `may_restart_when_queue_moves` is false) keeps one backoff for the
        // whole wait, as its spinning would take the CPU from the threads
        // ahead of it (the oversubscribed unrestricted lock lost half its
        // throughput when it restarted too); inside a loom model the
        // restarting path is the one explored. Once ours is next, wait with
        // `NextInLine`: a long run of yields before parking, so that a
        // hand-off rarely has to wake a sleeping thread. Relaxed is enough to
        // decide *how* to wait; the Acquire load below decides *that* we are
        // served. Each wait parks tagged with the value of `grant` that ends
        // it, and the release that stores that value wakes it (module docs).
        loop {
            let seen = self.grant.load(Ordering::Relaxed);
            if t.wrapping_sub(seen) <= 1 {
                break;
            }
            if !may_restart_when_queue_moves() {
                self.waiters
                    .wait_until_tagged::<DefaultWait>(tag(t.wrapping_sub(1)), || {
                        t.wrapping_sub(self.grant.load(Ordering::Relaxed)) <= 1
                    });
                break;
            }
            self.waiters
                .wait_until_tagged::<DefaultWait>(tag(seen.wrapping_add(1)), || {
                    self.grant.load(Ordering::Relaxed) != seen
                });
        }
        // Acquire: as in `acquire`.
        self.waiters
            .wait_until_tagged::<NextInLine>(tag(t), || self.grant.load(Ordering::Acquire) == t);
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
        self.waiters.wake_tagged(tag(next));
    }

    /// Whether the lock is held or a ticket is queued: a pure read.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // SeqCst loads: the reader's half of the Dekker pair described in
        // `acquire` (after its SeqCst arrival).
        self.next.load(Ordering::SeqCst) != self.grant.load(Ordering::SeqCst)
    }
}
