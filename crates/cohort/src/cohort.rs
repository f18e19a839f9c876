//! The cohort mutex (Dice, Marathe & Shavit, PPoPP 2012; the C-PTL-TKT of
//! Calciu et al., PPoPP 2013, Section 3.1): a NUMA-aware mutex composed of a
//! thread-oblivious top-level lock and one cohort-detecting lock per node.
//!
//! # Protocol
//!
//! - **Acquire** on node `n`: take node `n`'s local lock. If the previous
//!   local owner passed the global lock along with it (`passed`), the
//!   cohort is ours already; otherwise take the global lock too.
//! - **Release**: if a thread of the same node waits on the local lock
//!   (cohort detection) and fewer than `handoff_bound` consecutive local
//!   hand-offs happened, mark the global lock `passed` and release only the
//!   local lock: the successor owns the cohort without touching the global
//!   lock (whose line, and the critical section's data, stay in the node's
//!   caches). Otherwise release the local lock, then the global one (the
//!   paper releases the global one first; this order leaves the node array
//!   untouched once the lock is free: see `unlock`).
//!
//! The global lock's ticket travels with the local lock in the node's entry
//! (`token`); `passed`, `token` and `handoffs` are only touched by the local
//! lock's owner, so they are Relaxed: the local lock's Acquire/Release
//! orders them.
//!
//! The node chosen at acquisition travels in the guard ([`CohortToken`]), so
//! the release works on the same node's lock even if the thread migrated.
//!
//! **One node.** With a single node the global lock could only ever be
//! passed along or taken by the same cohort, so it is skipped: the local
//! lock alone is the mutex (FIFO; the hand-off bound does not apply) and
//! `is_locked` reads it. That saves two read-modify-writes per
//! uncontended acquisition on one-node machines, where cohorting has
//! nothing to batch. The global lock is then never touched.
//!
//! # Fairness
//!
//! The global and local locks are FIFO; the cohort is not: a node keeps the
//! lock for at most `handoff_bound + 1` consecutive critical sections
//! (default [`DEFAULT_HANDOFF_BOUND`] = 64, the paper's) while other nodes
//! wait at the global lock, which then serves them in FIFO order.
//!
//! # Footprint
//!
//! Inline: the global lock plus a pointer, a length and the bound. The
//! per-node entries (one 128-byte line each) are allocated on first use,
//! sized by [`Topology::global`](rwlock_core::topology::Topology::global)'s
//! node count (or the count given to [`Cohort::with_config`]); `const INIT`
//! allocates nothing. See the crate docs for the table.

use core::fmt;

use rwlock_core::CachePadded;
use rwlock_core::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::nodes::{self, NodeArray};
use crate::partitioned_ticket::PartitionedTicket;
use crate::ticket::TicketLock;

/// The paper's bound on consecutive local hand-offs.
pub const DEFAULT_HANDOFF_BOUND: u32 = 64;

/// A top-level lock for a cohort: acquired by one thread, released by any
/// (thread-oblivious), with a pure-read `is_locked`.
///
/// # Safety
///
/// Implementations must be mutual exclusion locks: between `acquire` (or a
/// successful `try_acquire`) returning a token and `release` with that
/// token, no other acquisition succeeds, and the acquisition
/// synchronizes with the previous release (Acquire/Release). Beyond that,
/// the reader-writer locks built on a cohort rely on two things:
/// - an acquisition (by `acquire` or `try_acquire`) includes a SeqCst
///   read-modify-write that makes `is_locked`, made of SeqCst loads, true
///   until the release, so that a writer's acquisition and a reader's
///   check form a Dekker pair;
/// - `release` is a SeqCst read-modify-write: the no-lost-wake-up argument
///   of the readers parked on a writer (`rwlock_core::wait::Waiters`) needs
///   the change of state before its wake to be one. A plain Release store
///   lets a parked reader miss the release and sleep on.
pub unsafe trait GlobalLock: Send + Sync {
    /// An unlocked lock (unusable inside a loom model: use [`create`](Self::create)).
    const INIT: Self;
    /// An unlocked lock.
    fn create() -> Self;
    /// Acquires; returns the token `release` needs.
    fn acquire(&self) -> u64;
    /// Acquires if free.
    fn try_acquire(&self) -> Option<u64>;
    /// Releases.
    ///
    /// # Safety
    ///
    /// The lock must be held with `token` (by any thread).
    unsafe fn release(&self, token: u64);
    /// Held (or, for queue locks, requested): a pure read.
    fn is_locked(&self) -> bool;
}

/// A node-local lock for a cohort: a mutex that can tell its owner whether
/// somebody waits behind it (cohort detection), and that may be released by
/// a thread other than the acquirer (a local hand-off makes the successor
/// release what an earlier owner acquired).
///
/// # Safety
///
/// Implementations must be mutual exclusion locks with Acquire/Release
/// semantics, and `has_waiters` must never report a waiter that will not
/// take the lock (a hand-off to a phantom would strand the global lock).
/// With a single node the local lock is the whole cohort's lock for the
/// reader-writer locks built on it, so it must also meet what
/// [`GlobalLock`] asks beyond mutual exclusion: an acquisition that
/// includes a SeqCst read-modify-write making `is_locked` (SeqCst loads)
/// true until the release, and a release that is a SeqCst
/// read-modify-write. (With weaker ones a reader's check and a writer's
/// acquisition can each miss the other, and both enter.)
pub unsafe trait LocalLock: Send + Sync {
    /// An unlocked lock.
    fn create() -> Self;
    /// Acquires; returns the token `release` needs.
    fn acquire(&self) -> u64;
    /// Acquires if free.
    fn try_acquire(&self) -> Option<u64>;
    /// Whether another thread waits for the lock (called by the owner).
    fn has_waiters(&self) -> bool;
    /// Held (or requested): a pure read, made of SeqCst loads (used as the
    /// whole cohort's `is_locked` when there is a single node; see the
    /// trait's `# Safety`).
    fn is_locked(&self) -> bool;
    /// Releases.
    ///
    /// # Safety
    ///
    /// The lock must be held with `token`.
    unsafe fn release(&self, token: u64);
}

// SAFETY: a FIFO ticket lock: `acquire` is a SeqCst `fetch_add`, the release a
// SeqCst swap of the grant, `is_locked` SeqCst loads.
unsafe impl GlobalLock for PartitionedTicket {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = PartitionedTicket::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use create()");

    fn create() -> Self {
        PartitionedTicket::new()
    }
    #[inline]
    fn acquire(&self) -> u64 {
        PartitionedTicket::acquire(self)
    }
    #[inline]
    fn try_acquire(&self) -> Option<u64> {
        PartitionedTicket::try_acquire(self)
    }
    #[inline]
    unsafe fn release(&self, token: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { PartitionedTicket::release(self, token) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        PartitionedTicket::is_locked(self)
    }
}

// SAFETY: a FIFO ticket lock, as above; its tickets fit in the token.
unsafe impl GlobalLock for TicketLock {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = TicketLock::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use create()");

    fn create() -> Self {
        TicketLock::new()
    }
    #[inline]
    fn acquire(&self) -> u64 {
        TicketLock::acquire(self)
    }
    #[inline]
    fn try_acquire(&self) -> Option<u64> {
        TicketLock::try_acquire(self)
    }
    #[inline]
    unsafe fn release(&self, token: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { TicketLock::release(self, token) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        TicketLock::is_locked(self)
    }
}

// SAFETY: tickets are never abandoned, so `has_waiters` only reports
// threads that will take the lock; the release is a SeqCst swap.
unsafe impl LocalLock for TicketLock {
    fn create() -> Self {
        TicketLock::new()
    }
    #[inline]
    fn acquire(&self) -> u64 {
        TicketLock::acquire(self)
    }
    #[inline]
    fn try_acquire(&self) -> Option<u64> {
        TicketLock::try_acquire(self)
    }
    #[inline]
    fn has_waiters(&self) -> bool {
        TicketLock::has_waiters(self)
    }
    #[inline]
    fn is_locked(&self) -> bool {
        TicketLock::is_locked(self)
    }
    #[inline]
    unsafe fn release(&self, token: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { TicketLock::release(self, token) }
    }
}

/// One node's part of a cohort: its local lock and what the local owner
/// knows about the global lock.
struct Local<L> {
    lock: L,
    /// The local lock's token of the current owner.
    ticket: AtomicU64,
    /// The global lock was passed along with the local lock.
    passed: AtomicBool,
    /// The global lock's token while this node holds it.
    token: AtomicU64,
    /// Consecutive local hand-offs so far.
    handoffs: AtomicU32,
}

impl<L: LocalLock> Local<L> {
    fn new() -> Self {
        Local {
            lock: L::create(),
            ticket: AtomicU64::new(0),
            passed: AtomicBool::new(false),
            token: AtomicU64::new(0),
            handoffs: AtomicU32::new(0),
        }
    }
}

/// The state a cohort acquisition carries to its release: the node whose
/// local lock it holds.
///
/// `Send`: both levels are thread-oblivious, so any thread may release.
#[derive(Debug)]
pub struct CohortToken {
    node: usize,
}

impl CohortToken {
    /// The node (index into the cohort's per-node entries) this
    /// acquisition holds.
    pub fn node(&self) -> usize {
        self.node
    }
}

/// A cohort mutex over a thread-oblivious global lock `G` and per-node
/// cohort-detecting locks `L`; see the [module docs](self).
///
/// The default, `Cohort<PartitionedTicket, TicketLock>`, is the paper's
/// C-PTL-TKT ([`CPtlTkt`](crate::CPtlTkt)).
pub struct Cohort<G = PartitionedTicket, L = TicketLock> {
    global: G,
    nodes: NodeArray<CachePadded<Local<L>>>,
    handoff_bound: u32,
}

impl<G: GlobalLock, L: LocalLock> Cohort<G, L> {
    /// An unlocked cohort with one local lock per node of the global
    /// topology and the default hand-off bound; allocates on first use.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::with_config(0, DEFAULT_HANDOFF_BOUND)
    }

    /// `nodes` local locks (0: one per node of the global topology) and at
    /// most `handoff_bound` consecutive local hand-offs (0: always release
    /// the global lock, a plain two-level lock). Threads of node `k` use
    /// local lock `k % nodes`.
    ///
    /// # Panics
    ///
    /// If `nodes` is above `rwlock_core::topology::MAX_NODES` (65536).
    #[cfg(not(loom))]
    pub const fn with_config(nodes: usize, handoff_bound: u32) -> Self {
        Cohort {
            global: G::INIT,
            nodes: NodeArray::new(nodes),
            handoff_bound,
        }
    }

    /// An unlocked cohort (loom build: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::with_config(0, DEFAULT_HANDOFF_BOUND)
    }

    /// See the normal build's `with_config` (loom build: not `const`).
    #[cfg(loom)]
    pub fn with_config(nodes: usize, handoff_bound: u32) -> Self {
        Cohort {
            global: G::create(),
            nodes: NodeArray::new(nodes),
            handoff_bound,
        }
    }

    /// The local hand-off bound.
    pub fn handoff_bound(&self) -> u32 {
        self.handoff_bound
    }

    /// The number of per-node local locks.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes on the heap once the per-node locks are allocated.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes()
    }

    #[inline]
    fn locals(&self) -> &[CachePadded<Local<L>>] {
        self.nodes.get(Local::new_padded)
    }

    /// Acquires the lock through the local lock of `node` (reduced modulo
    /// the node count) instead of the current node's. For tests, and for
    /// callers that know their node.
    #[inline]
    pub fn lock_on(&self, node: usize) -> CohortToken {
        let locals = self.locals();
        let node = nodes::reduce(node, locals.len());
        let local = &locals[node];
        let ticket = local.lock.acquire();
        // Relaxed (all three fields below): only the local owner touches
        // them, and the local lock's Acquire/Release orders owners.
        local.ticket.store(ticket, Ordering::Relaxed);
        if locals.len() == 1 {
            // One node: the local lock is the whole cohort (module docs).
            return CohortToken { node };
        }
        if !local.passed.load(Ordering::Relaxed) {
            let token = self.global.acquire();
            local.token.store(token, Ordering::Relaxed);
        }
        CohortToken { node }
    }

    /// Acquires the lock if neither the current node's local lock nor the
    /// global lock is taken.
    #[inline]
    pub fn try_lock_on(&self, node: usize) -> Option<CohortToken> {
        let locals = self.locals();
        let node = nodes::reduce(node, locals.len());
        let local = &locals[node];
        let ticket = local.lock.try_acquire()?;
        // Relaxed: owner-only fields, ordered by the local lock.
        local.ticket.store(ticket, Ordering::Relaxed);
        if locals.len() == 1 {
            return Some(CohortToken { node });
        }
        // A free local lock was not handed off: `passed` is only set when a
        // waiter is queued, and that waiter holds the local lock next.
        debug_assert!(!local.passed.load(Ordering::Relaxed));
        match self.global.try_acquire() {
            Some(token) => {
                local.token.store(token, Ordering::Relaxed);
                Some(CohortToken { node })
            }
            None => {
                // The global lock was not passed, so the next owner takes it.
                // SAFETY: we hold the local lock with `ticket`.
                unsafe { local.lock.release(ticket) };
                None
            }
        }
    }

    /// Releases the acquisition `token`: a local hand-off, or a release of
    /// both levels (see the [module docs](self)).
    ///
    /// # Safety
    ///
    /// `token` must come from an acquisition of this lock that was not
    /// released yet.
    #[inline]
    pub unsafe fn unlock_token(&self, token: CohortToken) {
        let locals = self
            .nodes
            .allocated()
            .expect("Cohort::unlock: the lock was never acquired");
        let local = &locals[token.node];
        // Relaxed: owner-only fields, ordered by the local lock.
        let ticket = local.ticket.load(Ordering::Relaxed);
        if locals.len() == 1 {
            // SAFETY: we hold the (only) local lock with `ticket`.
            unsafe { local.lock.release(ticket) };
            return;
        }
        let handoffs = local.handoffs.load(Ordering::Relaxed);
        if handoffs < self.handoff_bound && local.lock.has_waiters() {
            local.handoffs.store(handoffs + 1, Ordering::Relaxed);
            local.passed.store(true, Ordering::Relaxed);
            // The successor inherits the global lock (`passed`, `token`).
            // SAFETY: we hold the local lock with `ticket`.
            unsafe { local.lock.release(ticket) };
        } else {
            local.handoffs.store(0, Ordering::Relaxed);
            local.passed.store(false, Ordering::Relaxed);
            let global = local.token.load(Ordering::Relaxed);
            // Local first, global last: `passed` and `token` are final (the
            // local lock's next owner reads `passed == false` and queues at
            // the global lock behind this release), and once the global
            // lock is free the whole lock is (`is_locked` reads the global
            // lock), so nothing of the node array may be touched after it:
            // a C program may destroy and free the lock as soon as another
            // thread acquires and releases it (found in review: this
            // release wrote the freed node array through the preload shim).
            // SAFETY: we hold the local lock with `ticket`.
            unsafe { local.lock.release(ticket) };
            // SAFETY: this node holds the global lock with `global`.
            unsafe { self.global.release(global) };
        }
    }

    /// Whether some node holds (or requested) the lock: the global lock's
    /// request and grant differ (with a single node: the local lock's). A
    /// pure read.
    #[inline]
    pub fn is_locked(&self) -> bool {
        match self.nodes.allocated() {
            Some(locals) if locals.len() == 1 => locals[0].lock.is_locked(),
            // Not allocated yet: nobody ever acquired, the global lock is
            // free. (The array pointer is part of the SeqCst order, so a
            // reader that finds it null after its arrival is ordered before
            // the first writer's acquisition, whose scan sees the reader.)
            _ => self.global.is_locked(),
        }
    }
}

impl<L: LocalLock> Local<L> {
    fn new_padded() -> CachePadded<Self> {
        CachePadded::new(Self::new())
    }
}

#[cfg(not(loom))]
impl<G: GlobalLock, L: LocalLock> Default for Cohort<G, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<G, L> fmt::Debug for Cohort<G, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cohort")
            .field("nodes", &self.nodes)
            .field("handoff_bound", &self.handoff_bound)
            .finish_non_exhaustive()
    }
}

// SAFETY: mutual exclusion: the global lock admits one node at a time, and
// inside a node the local lock admits one thread; a local hand-off passes
// both together (with a single node the local lock alone admits one thread).
// Acquire/Release come from the two locks.
unsafe impl<G: GlobalLock, L: LocalLock> lock_api::RawMutex for Cohort<G, L> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use Cohort::new()");

    type Guard = CohortToken;

    #[inline]
    fn lock(&self) -> CohortToken {
        self.lock_on(nodes::current())
    }

    #[inline]
    fn try_lock(&self) -> Option<CohortToken> {
        self.try_lock_on(nodes::current())
    }

    #[inline]
    unsafe fn unlock(&self, guard: CohortToken) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock_token(guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        Cohort::is_locked(self)
    }
}
