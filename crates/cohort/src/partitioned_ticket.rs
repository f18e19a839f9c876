//! The partitioned ticket lock (Dice, SPAA 2011): the cohort's top-level
//! lock in C-PTL-TKT.
//!
//! # Protocol
//!
//! One `request` counter hands out tickets; the grant is spread over
//! [`PARTITIONS`] slots, each on its own cache line: ticket `t` may enter
//! when `grants[t % PARTITIONS] == t`, and releasing ticket `t` stores
//! `t + 1` into slot `(t + 1) % PARTITIONS`. Consecutive waiters therefore
//! spin on different lines, and a release invalidates only the line its
//! successor watches. Service is FIFO.
//!
//! - **Thread-obliviousness** (what the cohort's top lock needs): the
//!   release needs only the ticket, which the cohort keeps in the node that
//!   holds the lock; the thread that releases may differ from the one that
//!   acquired (the lock circulates inside a node).
//! - **`is_locked`** (PPoPP'13 Section 3.1: "comparing the request and grant
//!   indices"): with `r = request`, the lock is free exactly when ticket
//!   `r - 1` was released, i.e. when `grants[r % PARTITIONS] == r`. Two loads,
//!   no write. A ticket taken and still waiting counts as locked.
//!
//! Initial state: `request = 0`, `grants[0] = 0` (ticket 0 may enter), the
//! other slots hold a value no ticket reaches before its predecessor's
//! release.
//!
//! Waiting goes through one [`Waiters`] per lock (spin, yield, park) while
//! an earlier ticket than the holder's successor is ahead; the successor
//! itself yields far longer before it parks, as in
//! [`TicketLock`](crate::TicketLock). Under a cohort at most one thread per
//! node waits here at a time, so waking all of them at a release wakes at
//! most `nodes - 1` threads.

use rwlock_core::CachePadded;
use rwlock_core::sync::{AtomicU64, Ordering};
use rwlock_core::wait::{DefaultWait, Waiters};

use rwlock_core::ticket_wait::NextInLine;

/// Grant slots: one cache line each. Under a cohort at most one waiter per
/// NUMA node reaches this lock, so 4 slots give every waiter of a 4-node
/// machine a line of its own.
pub const PARTITIONS: usize = 4;

/// A slot no ticket matches before its predecessor is released.
const NOT_GRANTED: u64 = u64::MAX;

#[derive(Debug)]
struct Request {
    next: AtomicU64,
    waiters: Waiters,
}

/// A FIFO, thread-oblivious lock with partitioned grants; see the
/// [module docs](self).
#[derive(Debug)]
pub struct PartitionedTicket {
    request: CachePadded<Request>,
    grants: [CachePadded<AtomicU64>; PARTITIONS],
}

impl Default for PartitionedTicket {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn slot(t: u64) -> usize {
    (t % PARTITIONS as u64) as usize
}

impl PartitionedTicket {
    rwlock_core::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            PartitionedTicket {
                request: CachePadded::new(Request {
                    next: AtomicU64::new(0),
                    waiters: Waiters::new(),
                }),
                grants: [
                    CachePadded::new(AtomicU64::new(0)),
                    CachePadded::new(AtomicU64::new(NOT_GRANTED)),
                    CachePadded::new(AtomicU64::new(NOT_GRANTED)),
                    CachePadded::new(AtomicU64::new(NOT_GRANTED)),
                ],
            }
        }
    }

    /// Takes a ticket and waits for it; returns the ticket (the release's token).
    #[inline]
    pub fn acquire(&self) -> u64 {
        // SeqCst: the RMW that makes the lock visibly held; the writer's half
        // of the Dekker pair with a reader's arrival (see `is_locked`).
        let t = self.request.next.fetch_add(1, Ordering::SeqCst);
        let grant = &self.grants[slot(t)];
        // Acquire: pairs with the SeqCst (Release) swap of the previous
        // owner's `release`.
        if grant.load(Ordering::Acquire) != t {
            self.wait_for(t);
        }
        t
    }

    #[cold]
    fn wait_for(&self, t: u64) {
        let grant = &self.grants[slot(t)];
        let previous = &self.grants[slot(t.wrapping_sub(1))];
        // Park while ticket `t - 1` is not granted yet; once it is, ours is
        // next: wait with `NextInLine` (a long run of yields before parking,
        // see `rwlock_core::ticket_wait`). Slot `t - 1` is not rewritten
        // before ticket `t` is served. Relaxed decides how to wait; the
        // Acquire load below decides that we are served. Every release wakes
        // the parked.
        self.request.waiters.wait_until::<DefaultWait>(|| {
            previous.load(Ordering::Relaxed) == t.wrapping_sub(1)
                || grant.load(Ordering::Relaxed) == t
        });
        // Acquire: as in `acquire`.
        self.request
            .waiters
            .wait_until::<NextInLine>(|| grant.load(Ordering::Acquire) == t);
    }

    /// Takes the lock if it is free; returns the ticket.
    #[inline]
    pub fn try_acquire(&self) -> Option<u64> {
        // Relaxed: a guess, validated by the CAS below.
        let t = self.request.next.load(Ordering::Relaxed);
        // Acquire: pairs with the release of ticket `t - 1`; the CAS proves
        // nobody took ticket `t` in between.
        if self.grants[slot(t)].load(Ordering::Acquire) != t {
            return None;
        }
        // SeqCst: as the `fetch_add` in `acquire`.
        self.request
            .next
            .compare_exchange(t, t + 1, Ordering::SeqCst, Ordering::Relaxed)
            .ok()
    }

    /// Grants ticket `t + 1`.
    ///
    /// # Safety
    ///
    /// The lock must be held with ticket `t` (by any thread).
    #[inline]
    pub unsafe fn release(&self, t: u64) {
        // SeqCst RMW: Release publishes the critical section to the next
        // owner (pairs with its Acquire load of the slot); readers' SeqCst
        // `is_locked` loads order after it; and the parking protocol needs a
        // SeqCst RMW before `wake_all` reads the waiter count.
        let old = self.grants[slot(t + 1)].swap(t + 1, Ordering::SeqCst);
        debug_assert!(
            old != t + 1,
            "PartitionedTicket::release: ticket {t} released twice"
        );
        self.request.waiters.wake_all();
    }

    /// Whether the lock is held or a ticket is queued: a pure read.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // SeqCst loads: the reader's half of the Dekker pair (after its SeqCst
        // arrival): either the reader's arrival precedes a writer's
        // `fetch_add` in the SeqCst order (and the writer's reader scan sees
        // the arrival), or this load sees that `fetch_add`.
        let r = self.request.next.load(Ordering::SeqCst);
        // Tickets are released in order, so `grants[r % P] == r` means every
        // ticket below `r` was released.
        self.grants[slot(r)].load(Ordering::SeqCst) != r
    }
}
