//! The log: logical updates (paper Fig. 2), synchronize (Fig. 3), reads.
//!
//! # Protocol
//!
//! The log is a lock-less LIFO list (Linux's `llist`): an enqueuer links its
//! node in front of the head with a CAS; [`Ldu::synchronize`] takes the
//! whole list with one exchange. Nothing ever removes a single entry, so
//! there is no ABA: a push whose CAS succeeds against a head value that was
//! taken and pushed again in between still links a valid list (it never
//! dereferences the head it links to).
//!
//! `logical_insert(item)` (`logical_remove` is the mirror image), one CAS
//! on the item's state word (bits in [`tracked`](crate::tracked)):
//!
//! 1. already a member: nothing to do ([`Update::Unchanged`]), except that
//!    if the membership comes from an insert node that its enqueuer has not
//!    linked yet, wait for the link as in 3;
//! 2. the remove node is marked (a remove is pending): clear its mark and
//!    become a member again, the paper's update-side absorbing fast path
//!    ([`Update::Absorbed`]): the pending entry stays in the log, unmarked,
//!    and the synchronize that meets it skips it;
//! 3. the insert node is already in the log (`EXIST`): set its mark
//!    ([`Update::Merged`]); if its enqueuer has not linked it yet (`USED`
//!    clear), wait until it has, so that the operation is in the log when
//!    this call returns;
//! 4. otherwise set mark and `EXIST`, push the node (the log takes a strong
//!    count of the item's `Arc`), then set `USED` ([`Update::Enqueued`]).
//!
//! `synchronize`, under the target's write lock (so synchronizes run one at
//! a time and a reader that finds the log empty cannot overtake one that is
//! still applying):
//!
//! 1. exchange the head with null (the paper's `xchg(head.first, NULL)`);
//! 2. reverse the taken list into chronological order (the order the
//!    entries were linked);
//! 3. for each entry: read its link first (once `EXIST` is clear, an
//!    enqueuer may relink the node), then in one atomic update clear mark,
//!    `EXIST` and `USED`; if `USED` was not set yet (the enqueuer is between
//!    its push and its `fetch_or`, perhaps preempted) set `TAKEN` instead of
//!    waiting, and the enqueuer clears `USED` and `TAKEN` when it gets
//!    there; if the mark was set apply the operation to the target (the
//!    paper's `CAS(node.mark, 1, 0)` then `physical_update`); then drop the
//!    entry's strong count.
//!
//! A logical operation that races with step 3 on the same item either comes
//! before that atomic update (its mark is consumed, or its absorbing cleared
//! the mark this synchronize would have applied) or after (it sees `EXIST`
//! clear and enqueues the node again, for the next synchronize, first
//! waiting for `TAKEN` to clear if it is set).
//!
//! Per item at most one mark is set (see [`tracked`](crate::tracked)), so a
//! synchronize applies at most one operation per item, and the order only
//! matters between different items: entries are applied in the order they
//! were linked. Targets should make operations on different items commute
//! (both targets shipped here do: they are keyed by item identity).
//!
//! # Memory
//!
//! Each pending entry owns one strong count of its item (`Arc::into_raw` at
//! the push, `Arc::from_raw` when a synchronize or the log's `Drop` takes it
//! out), so an owner may drop its `Arc` with an entry pending: no timer or
//! garbage collector, unlike the paper's kernel version (Section 5). An entry
//! is linked once per `EXIST` claim, so counts balance.
//!
//! # Progress
//!
//! Logical operations never take the target's lock. They wait only for a
//! concurrent operation on the same item that is between two of its last
//! steps (spinning, then yielding): a thread whose outcome depends on a node
//! that another thread has claimed but not linked waits for the link (cases
//! 1 and 3), and a thread that would enqueue a node whose previous enqueuer
//! has not yet cleared `TAKEN` waits for that. So updates of different
//! items never wait for each other, but they are not lock-free in the
//! strict sense. `synchronize` takes the write lock and never waits for an
//! updater. A read is never blocked by a preempted updater.
//!
//! # Waiting for the write lock
//!
//! While updates are pending every read drains the log under the write
//! lock, so readers queue for that lock. With more threads than CPUs a
//! waiter that spins or yields takes the CPU from the holder and from the
//! updaters: over parking_lot's lock, whose waiters yield several times
//! before they park, 4 threads on 2 cores at 10 % reads made 560,000
//! `sched_yield` calls a second, about one per read (`docs/ldu.md`). So a
//! drain that finds the lock taken waits through a GCR gate
//! ([`Gate`]; Dice & Kogan, arXiv
//! 1905.10818), as the workspace's own locks do (`rwlock_core::restricted`):
//!
//! - disengaged (the rule while every thread has a CPU), the wait is `R`'s
//!   own; one such wait in eight of each thread first spins
//!   briefly, then makes one measured yield, and a yield that gave the CPU
//!   to another thread engages the gate;
//! - engaged, at most one waiter fewer than the CPUs (and at most
//!   `rwlock_core::restricted::DEFAULT_LIMIT_MAX`) waits inside `R`;
//!   waiters whose CPU is shared sleep in the gate's FIFO queue beyond that,
//!   and the queue's head polls for room, forcing its way in after 1 ms.
//!
//! The gate only schedules: every acquisition and release is `R`'s, so it
//! adds no ordering, and inside a loom model it calls `R` directly. Updates
//! never meet it.

use core::fmt;
use core::marker::PhantomData;
use core::mem;
use core::sync::atomic::AtomicUsize as PlainAtomicUsize;

use crossbeam_utils::CachePadded;
use lock_api::{RawRwLock, RwLock, RwLockWriteGuard};
use rwlock_core::restricted::Gate;
use rwlock_core::sync::spin_loop;
use rwlock_core::sync::{Arc, AtomicUsize, Ordering};
use rwlock_core::wait::{self, DefaultWait, spin_until};

use crate::tracked::{MEMBER, Op, Tracked, exist, mark, taken, used};

/// The structure a log updates: the user's real data structure.
///
/// [`Ldu::synchronize`] calls these under the target's write lock, in the
/// order the log entries were linked. The log guarantees that
/// `apply_insert` is called only for an item the target does not hold (it
/// was never inserted, or its last applied operation was a remove) and
/// `apply_remove` only for an item it holds; a target may assert that.
/// Operations on different items should commute.
pub trait Target {
    /// The items' value type (`Arc<Tracked<Item>>` are the items).
    type Item;

    /// Puts `item` into the structure (the paper's "real insert function").
    /// The log hands over its own strong count: keep it.
    fn apply_insert(&mut self, item: Arc<Tracked<Self::Item>>);

    /// Takes `item` out of the structure (and drops the structure's count;
    /// `item` is the log's).
    fn apply_remove(&mut self, item: Arc<Tracked<Self::Item>>);
}

/// What a logical insert or remove did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Update {
    /// Cancelled the opposite pending operation (update-side absorbing);
    /// nothing new in the log.
    Absorbed,
    /// Marked the item's node, which was already in the log.
    Merged,
    /// Marked the item's node and linked it into the log.
    Enqueued,
    /// Nothing to do: an insert of a member, or a remove of a non-member.
    Unchanged,
}

impl Update {
    /// Whether the call changed the item's logical membership.
    #[inline]
    pub fn changed(self) -> bool {
        self != Update::Unchanged
    }
}

/// What one [`Ldu::synchronize`] did (or, from [`Ldu::totals`], all of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Log entries taken out of the log.
    pub entries: u64,
    /// Entries applied as `apply_insert`.
    pub inserted: u64,
    /// Entries applied as `apply_remove`.
    pub removed: u64,
    /// Entries whose mark had been cleared by absorbing: skipped.
    pub cancelled: u64,
}

impl SyncStats {
    fn add(&mut self, other: &SyncStats) {
        self.entries += other.entries;
        self.inserted += other.inserted;
        self.removed += other.removed;
        self.cancelled += other.cancelled;
    }
}

struct Inner<S> {
    target: S,
    totals: SyncStats,
}

/// Rounds of exponential spinning (`2^k` spin hints in round `k`) before a
/// measured yield: about as long as parking_lot's own spin before it yields.
const SPIN_ROUNDS: u32 = 4;

/// One contended write acquisition in this many, per thread, measures a
/// yield (two `getrusage` calls beside the `sched_yield`).
const MEASURE_EVERY: u32 = 8;

/// Whether this contended wait of the calling thread measures a yield
/// (never inside a loom model: the gate does nothing there).
#[inline]
fn measure_this_wait() -> bool {
    std::thread_local! {
        static WAITS: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
    }
    !cfg!(loom)
        && WAITS.with(|w| {
            // The first wait of a thread measures, then every
            // MEASURE_EVERY-th.
            let n = w.get();
            w.set(n.wrapping_add(1));
            n % MEASURE_EVERY == 0
        })
}

/// Log ids: every log gets a fresh one, never reused (0 means "none").
static NEXT_LOG_ID: PlainAtomicUsize = PlainAtomicUsize::new(1);

/// A fresh log id. Panics rather than reuse one (only reachable on 32-bit
/// targets, after 2^32 logs): a reused id would let an item bound to a dead
/// log merge into a node nobody will ever take.
fn next_log_id() -> usize {
    use core::sync::atomic::Ordering as Plain;
    // Relaxed: a unique number, ordering nothing.
    NEXT_LOG_ID
        .fetch_update(Plain::Relaxed, Plain::Relaxed, |id| id.checked_add(1))
        .unwrap_or_else(|_| panic!("ldu: log ids exhausted"))
}

/// A deferred-update log in front of a target structure `S`, guarded by the
/// reader-writer lock `R` (any `lock_api::RawRwLock`; by default
/// parking_lot's).
///
/// `R::is_locked_exclusive` must answer `true` while a writer holds the
/// lock (as lock_api's default, a failed `try_lock_shared`, and every lock
/// of this workspace do): [`synchronize`](Self::synchronize) finding the
/// log empty asks it whether a drain is still applying what it took, and
/// waits for that drain only if so. A lock that answered `false` while
/// held would let `synchronize` return before the caller's updates reach
/// the target. (Pointed out in review, 2026-11-28.)
///
/// Why parking_lot's by default: whenever updates are pending, a read takes
/// the write lock (to apply them), so the lock sees a writer-heavy stream
/// from whichever threads read. A lock whose running thread may take it
/// again (parking_lot barges) keeps that stream moving; a phase-fair lock
/// hands the lock to each waiting thread in turn, and every read then waits
/// for the other readers' batches. Measured on 2 cores (`docs/ldu.md`,
/// "Reads"): at 10 % reads and 2 threads, 1.28× `Mutex<BTreeSet>` over
/// parking_lot's lock against 0.88× over the phase-fair ticket lock.
/// Where threads outnumber CPUs, the threads waiting for the write lock are
/// restricted by a gate in the log (module docs, "Waiting for the write
/// lock"), whatever `R` is.
///
/// ```
/// use std::sync::Arc;
/// use ldu::{Ldu, OrderedSet, Tracked, Update};
///
/// let log: Ldu<OrderedSet<u64>> = Ldu::default();
/// let items: Vec<_> = (0..4).map(|k| Arc::new(Tracked::new(k))).collect();
///
/// // Updates are lock-less appends to the log...
/// for it in &items {
///     assert_eq!(log.logical_insert(it), Update::Enqueued);
/// }
/// // ...that cancel each other while pending:
/// assert_eq!(log.logical_remove(&items[1]), Update::Absorbed);
///
/// // A read applies what is pending, then reads (under the write lock it
/// // took to apply them; under the shared lock when nothing is pending).
/// let values = log.read(|set| set.iter().map(|it| ***it).collect::<Vec<_>>());
/// assert_eq!(values, [0, 2, 3]);
/// ```
pub struct Ldu<S: Target, R: RawRwLock = parking_lot::RawRwLock> {
    /// The newest log entry (tagged `Arc<Tracked<S::Item>>` pointer) or 0.
    head: CachePadded<AtomicUsize>,
    /// This log's id, bound into every item it updates.
    id: usize,
    inner: RwLock<R, Inner<S>>,
    /// Restricts the threads waiting for the write lock (module docs,
    /// "Waiting for the write lock"). On a line of its own: admissions
    /// write it while the lock's line is being handed over.
    gate: CachePadded<Gate>,
    /// The log owns `Arc<Tracked<S::Item>>` strong counts through `head`.
    _items: PhantomData<Arc<Tracked<S::Item>>>,
}

impl<S: Target + Default, R: RawRwLock> Default for Ldu<S, R> {
    fn default() -> Self {
        Self::new(S::default())
    }
}

impl<S: Target, R: RawRwLock> Ldu<S, R> {
    /// A log in front of `target` (which must hold no items of this log:
    /// items enter it only through the log). Uses `R::INIT`; inside a loom
    /// model use [`with_lock`](Self::with_lock).
    pub fn new(target: S) -> Self {
        Self::with_lock(R::INIT, target)
    }

    /// A log in front of `target`, guarded by `lock`.
    pub fn with_lock(lock: R, target: S) -> Self {
        // The op travels in bit 0 of an entry pointer.
        const {
            assert!(mem::align_of::<Tracked<S::Item>>() >= 2);
        }
        Ldu {
            head: CachePadded::new(AtomicUsize::new(0)),
            id: next_log_id(),
            inner: RwLock::from_raw(
                lock,
                Inner {
                    target,
                    totals: SyncStats::default(),
                },
            ),
            gate: CachePadded::new(Gate::leaving_a_cpu_to_the_holder()),
            _items: PhantomData,
        }
    }

    /// Logical insert (paper Fig. 2 `logical_insert`): after this returns,
    /// every read sees `item` in the target, unless a later remove takes it
    /// out. Never takes the target's lock (see the module docs' Progress).
    ///
    /// # Panics
    /// If `item` was already updated through another log.
    #[inline]
    pub fn logical_insert(&self, item: &Arc<Tracked<S::Item>>) -> Update {
        self.update(item, Op::Insert)
    }

    /// Logical remove (paper Fig. 2 `logical_remove`); see
    /// [`logical_insert`](Self::logical_insert).
    ///
    /// # Panics
    /// If `item` was already updated through another log.
    #[inline]
    pub fn logical_remove(&self, item: &Arc<Tracked<S::Item>>) -> Update {
        self.update(item, Op::Remove)
    }

    fn update(&self, item: &Arc<Tracked<S::Item>>, op: Op) -> Update {
        let node = &item.node;
        self.bind(item);
        let want_member = op == Op::Insert;
        // Acquire (here and on CAS failure): pairs with the AcqRel CAS of the
        // operation that wrote the state we decide from.
        let mut s = node.state.load(Ordering::Acquire);
        let (outcome, linked) = loop {
            if (s & MEMBER != 0) == want_member {
                // Already done, possibly by an operation still in flight:
                // if its node is not linked yet, wait for it (see below).
                if s & mark(op) != 0 && s & used(op) == 0 {
                    wait_linked(node, op);
                }
                return Update::Unchanged;
            }
            let (new, outcome) = if s & mark(op.opposite()) != 0 {
                // Absorbing: cancel the opposite pending operation.
                ((s ^ MEMBER) & !mark(op.opposite()), Update::Absorbed)
            } else if s & exist(op) != 0 {
                ((s ^ MEMBER) | mark(op), Update::Merged)
            } else if s & taken(op) != 0 {
                // A synchronize took this node before its last enqueuer set
                // USED: that enqueuer is a few instructions from clearing
                // TAKEN, and the node's link is not ours to write before.
                wait_untaken(node, op);
                // Acquire: as above (the enqueuer's Release clear).
                s = node.state.load(Ordering::Acquire);
                continue;
            } else {
                // Invariant: USED only with EXIST (a synchronize clears both
                // together; a late enqueuer clears USED with TAKEN).
                debug_assert_eq!(s & used(op), 0, "ldu: USED without EXIST");
                ((s ^ MEMBER) | mark(op) | exist(op), Update::Enqueued)
            };
            // AcqRel: the CAS is the operation's linearization point; it
            // releases to whoever reads the state next (another logical
            // operation, a synchronize's update) and acquires from the
            // previous writer.
            match node
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break (outcome, s & used(op) != 0),
                Err(current) => s = current,
            }
        };
        match outcome {
            Update::Enqueued => {
                self.push(item, op);
                // Release: pairs with the Acquire loads of a merging thread
                // waiting for the link (it then sees the push's head CAS).
                // Acquire: pairs with a synchronize's AcqRel update that set
                // TAKEN (its read of our link precedes our clear below).
                let before = node.state.fetch_or(used(op), Ordering::AcqRel);
                if before & taken(op) != 0 {
                    // A synchronize already took (and applied) the node:
                    // give it back. Release: pairs with the Acquire loads of
                    // a thread waiting in `wait_untaken` to enqueue it again.
                    node.state
                        .fetch_and(!(used(op) | taken(op)), Ordering::Release);
                }
            }
            Update::Merged if !linked => wait_linked(node, op),
            _ => {}
        }
        outcome
    }

    /// Binds `item` to this log on first use; panics if it belongs to another.
    #[inline]
    fn bind(&self, item: &Tracked<S::Item>) {
        use core::sync::atomic::Ordering as Plain;
        // Relaxed: the id orders nothing; it only detects misuse.
        let owner = item.node.log.load(Plain::Relaxed);
        if owner == self.id {
            return;
        }
        if owner == 0 {
            match item
                .node
                .log
                .compare_exchange(0, self.id, Plain::Relaxed, Plain::Relaxed)
            {
                Ok(_) => return,
                Err(o) if o == self.id => return,
                Err(_) => {}
            }
        }
        wrong_log()
    }

    /// Links `item`'s `op` node in front of the log (the caller owns the
    /// node's `EXIST` claim). The entry owns a new strong count.
    fn push(&self, item: &Arc<Tracked<S::Item>>, op: Op) {
        let entry = Arc::into_raw(Arc::clone(item)) as usize | op.index();
        self.link_chain(entry, &item.node.next[op.index()]);
    }

    /// Links a chain of entries, `first` to the entry whose link word is
    /// `last_link`, in front of the log (the caller owns those links).
    fn link_chain(&self, first: usize, last_link: &AtomicUsize) {
        // Relaxed: the value is only used as the CAS's expected value.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release CAS below.
            last_link.store(head, Ordering::Relaxed);
            // Release: pairs with synchronize's Acquire exchange, which then
            // sees these links and the links of every earlier push (each
            // push is a read-modify-write, so it continues their release
            // sequences).
            match self
                .head
                .compare_exchange_weak(head, first, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Applies every pending operation to the target (paper Fig. 3
    /// `synchronize_ldu`), under the write lock. On return, every operation
    /// linked before the call is in the target. When the log is empty it
    /// returns empty stats without the write lock; if another thread's
    /// synchronize is still applying what it took, it first waits for that
    /// (taking the read lock once).
    ///
    /// # Panics
    /// If the target's `apply_*` panics, the panic propagates. The entry
    /// being applied is dropped: its operation may or may not have reached
    /// the target, and that item's membership and the target may disagree
    /// from then on (the shipped targets then panic on its next applied
    /// operation). The entries after it go back into the log, to be applied
    /// by the next synchronize, but no longer in their original order, and a
    /// `read` that ran concurrently may not have seen them.
    ///
    /// Items whose last strong count the log held are dropped here, under
    /// the write lock: their `Drop` must not call back into this log's
    /// `read` or `synchronize` (nor may the target's methods). A logical
    /// update made from there is allowed, but may then wait, with the write
    /// lock held, for a concurrent update of the same item to finish
    /// enqueuing.
    pub fn synchronize(&self) -> SyncStats {
        // Acquire: pairs with the pushes' Release CAS (see `drain`'s own
        // Acquire; this one is only the empty check).
        if self.head.load(Ordering::Acquire) == 0 {
            // A drain that took the entries linked before this call may
            // still be applying them, under the write lock: wait for it, as
            // `read` does. (It locked before its swap, which released, and
            // the load above read that swap or later, so the lock's word
            // reads locked until it is done.) Without this, the caller's
            // operations might not be in the target yet (found in review).
            if self.inner.is_locked_exclusive() {
                drop(self.inner.read());
            }
            return SyncStats::default();
        }
        let mut inner = self.write();
        self.drain(&mut inner)
    }

    /// The write lock, for a drain: `R`'s try, else
    /// [`write_contended`](Self::write_contended).
    #[inline]
    fn write(&self) -> RwLockWriteGuard<'_, R, Inner<S>> {
        match self.inner.try_write() {
            Some(g) => g,
            None => self.write_contended(),
        }
    }

    /// Waits for the write lock through the gate (module docs, "Waiting
    /// for the write lock"): `R`'s own blocking acquisition, after a short
    /// spin and one measured yield in every [`MEASURE_EVERY`]-th such wait
    /// of a thread (a yield that gave the CPU to another thread engages the
    /// gate).
    #[cold]
    fn write_contended(&self) -> RwLockWriteGuard<'_, R, Inner<S>> {
        self.gate.wait(|| {
            if measure_this_wait() {
                for round in 0..SPIN_ROUNDS {
                    for _ in 0..1u32 << round {
                        spin_loop();
                    }
                    // Test before the try: a failing try is still a write
                    // of the lock's line, which would slow the release.
                    if !self.inner.is_locked()
                        && let Some(g) = self.inner.try_write()
                    {
                        return g;
                    }
                }
                if wait::yield_measured() {
                    wait::note_deep_wait();
                }
            }
            self.inner.write()
        })
    }

    /// Synchronizes, then runs `f` on the target: under the shared lock when
    /// nothing was pending, else under the write lock this call took to
    /// apply the pending updates (one acquisition instead of a write then a
    /// read; a phase-fair lock would otherwise queue the read behind every
    /// other waiting writer, and a read's own batch would be followed by
    /// everybody else's before it could look at the result).
    ///
    /// # Panics
    /// Propagates a panic of the target (see [`synchronize`](Self::synchronize))
    /// or of `f`. Calling `read` or `synchronize` of the same log from `f`
    /// deadlocks.
    pub fn read<U>(&self, f: impl FnOnce(&S) -> U) -> U {
        // Acquire: as `synchronize`'s empty check. Empty: a synchronize that
        // took entries linked before this call may still be applying them,
        // but it holds the write lock, so the read lock below waits for it.
        if self.head.load(Ordering::Acquire) != 0 {
            let mut inner = self.write();
            self.drain(&mut inner);
            return f(&inner.target);
        }
        let inner = self.inner.read();
        f(&inner.target)
    }

    /// The sum of every synchronize's [`SyncStats`] so far.
    pub fn totals(&self) -> SyncStats {
        self.inner.read().totals
    }

    /// Synchronizes and returns the target. The items stay bound to this
    /// (now dead) log: they cannot take part in another one.
    pub fn into_target(self) -> S {
        self.synchronize();
        // The log is now empty (synchronize took everything, and nobody can
        // push: `self` is owned), so skipping `Drop` leaves no strong count.
        let this = mem::ManuallyDrop::new(self);
        // `inner` and `gate` are moved out exactly once and `this` is never
        // used or dropped again; the other fields own nothing (`head` is 0).
        // SAFETY: single moves out of fields of a never-dropped value.
        let (inner, _gate) = unsafe { (core::ptr::read(&this.inner), core::ptr::read(&this.gate)) };
        inner.into_inner().target
    }

    /// Takes the log and applies it; the caller holds the write lock.
    fn drain(&self, inner: &mut Inner<S>) -> SyncStats {
        // Acquire: pairs with every push's Release CAS (one release sequence
        // through all of them), so the links below are visible.
        let mut p = self.head.swap(0, Ordering::AcqRel);
        // Reverse into chronological order. The taken entries' links are
        // ours: their nodes' EXIST bits are set, so no enqueuer writes them.
        let mut chain = 0;
        while p != 0 {
            let link = entry_link::<S::Item>(p);
            // Relaxed: ordered by the exchange above (or written by us).
            let next = link.load(Ordering::Relaxed);
            link.store(chain, Ordering::Relaxed);
            chain = p;
            p = next;
        }
        let mut rest = Remaining::<S, R> { log: self, chain };
        let Inner { target, totals } = inner;
        // Counted into the totals even if the target (or an item's `Drop`)
        // panics part way: the entries applied so far stay counted.
        let mut stats = Tally {
            totals,
            now: SyncStats::default(),
        };
        while rest.chain != 0 {
            let p = rest.chain;
            let op = Op::from_tag(p);
            // `p` came out of the log, which owned its strong count.
            // SAFETY: taken out of the log once, here.
            let item = unsafe { take_entry::<S::Item>(p) };
            let node = &item.node;
            // Read the link before giving the node back: once EXIST is
            // clear an enqueuer may relink it. Relaxed: written by us.
            rest.chain = node.next[op.index()].load(Ordering::Relaxed);
            // Take the node out: clear mark and EXIST, and USED if its
            // enqueuer has set it; if not (the enqueuer is between its push
            // and its fetch_or, perhaps preempted), set TAKEN instead of
            // waiting for it: it clears USED and TAKEN itself.
            // AcqRel: ordered with the logical operations' CAS on the same
            // word: a mark set before this is applied now; an operation
            // after it sees EXIST clear and enqueues again. Release also
            // orders our read of the link before any relinking.
            let before = node
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                    Some(if s & used(op) != 0 {
                        s & !(mark(op) | exist(op) | used(op))
                    } else {
                        (s & !(mark(op) | exist(op))) | taken(op)
                    })
                })
                .unwrap_or_else(|s| s);
            debug_assert_ne!(before & exist(op), 0, "ldu: a log entry without EXIST");
            stats.now.entries += 1;
            if before & mark(op) != 0 {
                match op {
                    Op::Insert => {
                        stats.now.inserted += 1;
                        target.apply_insert(item);
                    }
                    Op::Remove => {
                        stats.now.removed += 1;
                        target.apply_remove(item);
                    }
                }
            } else {
                stats.now.cancelled += 1;
            }
        }
        stats.now
    }
}

/// Waits until `node`'s `op` node, claimed by an enqueuer that has not
/// linked it yet, is linked (or already taken by a synchronize, which
/// consumed its mark). A caller whose outcome depends on that node's mark
/// (a merge into it, or an insert that found the item a member because of
/// it) must not return before: a read after the call must see the
/// operation. The enqueuer is a few instructions from its `fetch_or`.
#[cold]
fn wait_linked(node: &crate::tracked::LduNode, op: Op) {
    // Acquire: pairs with the enqueuer's Release fetch_or of USED (and with
    // the synchronize's AcqRel update that cleared EXIST).
    spin_until::<DefaultWait>(|| {
        let s = node.state.load(Ordering::Acquire);
        s & exist(op) == 0 || s & used(op) != 0
    });
}

/// Waits until the enqueuer that linked `node`'s `op` node, which a
/// synchronize took out before it set USED, clears TAKEN (its next step).
#[cold]
fn wait_untaken(node: &crate::tracked::LduNode, op: Op) {
    // Acquire: pairs with the enqueuer's Release fetch_and.
    spin_until::<DefaultWait>(|| node.state.load(Ordering::Acquire) & taken(op) == 0);
}

/// The entry's link word (the `next` of the node the entry names).
#[inline]
fn entry_link<'a, T>(entry: usize) -> &'a AtomicUsize {
    // `entry` is a live log entry: it owns a strong count of the item,
    // which therefore outlives every use the caller makes of the link (the
    // caller holds the entry until it drops that count).
    // SAFETY: the item is alive (above).
    unsafe { &(*entry_item::<T>(entry)).node.next[Op::from_tag(entry).index()] }
}

/// The item a log entry names (the op is in bit 0).
#[inline]
fn entry_item<T>(entry: usize) -> *const Tracked<T> {
    (entry & !1) as *const Tracked<T>
}

/// Takes over the strong count a log entry owns (pushed with
/// `Arc::into_raw`).
///
/// # Safety
/// `entry` must be a log entry, taken out of the log by the caller, and
/// taken over only once.
#[inline]
unsafe fn take_entry<T>(entry: usize) -> Arc<Tracked<T>> {
    // SAFETY: the caller's contract: the count was made by `Arc::into_raw`.
    unsafe { Arc::from_raw(entry_item::<T>(entry)) }
}

#[cold]
#[inline(never)]
fn wrong_log() -> ! {
    panic!("ldu: this Tracked item belongs to another Ldu log (an item takes part in one log)")
}

/// One drain's counts, added to the log's totals when it ends, by return
/// or by a panic of the target or of an item's `Drop`.
struct Tally<'a> {
    totals: &'a mut SyncStats,
    now: SyncStats,
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.totals.add(&self.now);
    }
}

/// Releases the log's strong counts of the entries of `chain` (linked by
/// their entry links); if an item's `Drop` panics, the rest are still
/// released while the panic unwinds (a second panic aborts, as in `Vec`).
///
/// # Safety
/// The entries must be taken out of the log by the caller, each taken over
/// once, here.
unsafe fn release_chain<T>(mut chain: usize) {
    /// The entries after the one being dropped.
    struct Rest<T>(usize, PhantomData<T>);
    impl<T> Drop for Rest<T> {
        fn drop(&mut self) {
            // SAFETY: the caller's entries, not yet released.
            unsafe { release_chain::<T>(self.0) }
        }
    }
    while chain != 0 {
        // Relaxed: ordered by the caller's taking of the chain.
        let next = entry_link::<T>(chain).load(Ordering::Relaxed);
        let rest = Rest::<T>(next, PhantomData);
        // SAFETY: the caller's entry, taken over once, here.
        drop(unsafe { take_entry::<T>(chain) });
        mem::forget(rest);
        chain = next;
    }
}

/// Entries a synchronize has taken but not applied yet. Dropped with a
/// non-empty chain only when the target panicked: the entries go back into
/// the log (bits intact), for the next synchronize.
struct Remaining<'a, S: Target, R: RawRwLock> {
    log: &'a Ldu<S, R>,
    chain: usize,
}

impl<S: Target, R: RawRwLock> Drop for Remaining<'_, S, R> {
    fn drop(&mut self) {
        if self.chain == 0 {
            return;
        }
        let mut last = self.chain;
        loop {
            // Relaxed: our own links.
            let next = entry_link::<S::Item>(last).load(Ordering::Relaxed);
            if next == 0 {
                break;
            }
            last = next;
        }
        self.log.link_chain(self.chain, entry_link::<S::Item>(last));
    }
}

/// Dropping a log releases its pending entries without applying them. The
/// items it updated stay bound to it, with their log bits as they were (so
/// `is_member` no longer means anything): they cannot take part in another
/// log.
impl<S: Target, R: RawRwLock> Drop for Ldu<S, R> {
    fn drop(&mut self) {
        // `&mut self`: no operation is in flight, every claimed node is
        // linked. Release the log's strong counts.
        // Acquire: pairs with the pushes' Release CAS.
        let p = self.head.swap(0, Ordering::Acquire);
        // An item's `Drop` that panics does not leak the others (found in
        // review).
        // SAFETY: taken out of the log once, here (see `drain`).
        unsafe { release_chain::<S::Item>(p) };
    }
}

impl<S: Target + fmt::Debug, R: RawRwLock> fmt::Debug for Ldu<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Ldu");
        // Relaxed: a snapshot for humans.
        d.field("pending", &(self.head.load(Ordering::Relaxed) != 0));
        match self.inner.try_read() {
            Some(inner) => d
                .field("target", &inner.target)
                .field("totals", &inner.totals),
            None => d.field("target", &format_args!("<locked>")),
        };
        d.finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize as Counter, Ordering as O};

    use super::*;
    use crate::OrderedSet;

    fn item(v: u32) -> Arc<Tracked<u32>> {
        Arc::new(Tracked::new(v))
    }

    #[test]
    fn outcomes_follow_fig2_with_absorbing() {
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let a = item(1);
        assert_eq!(log.logical_insert(&a), Update::Enqueued);
        assert_eq!(log.logical_insert(&a), Update::Unchanged);
        assert_eq!(log.logical_remove(&a), Update::Absorbed);
        assert_eq!(log.logical_remove(&a), Update::Unchanged);
        assert!(!a.is_member());
        // The insert node is still in the log, unmarked: mark it again.
        assert_eq!(log.logical_insert(&a), Update::Merged);
        let s = log.synchronize();
        assert_eq!(
            s,
            SyncStats {
                entries: 1,
                inserted: 1,
                removed: 0,
                cancelled: 0
            }
        );
        assert!(log.read(|t| t.contains(&a)));
        assert_eq!(log.logical_remove(&a), Update::Enqueued);
        assert_eq!(log.logical_insert(&a), Update::Absorbed);
        let s = log.synchronize();
        assert_eq!((s.entries, s.cancelled), (1, 1));
        assert!(log.read(|t| t.contains(&a)));
        assert_eq!(log.synchronize(), SyncStats::default(), "empty log");
        let t = log.totals();
        assert_eq!(
            (t.entries, t.inserted, t.removed, t.cancelled),
            (2, 1, 0, 1)
        );
    }

    #[test]
    fn applies_in_link_order_and_reads_see_own_updates() {
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let items: Vec<_> = (0..50).map(item).collect();
        for (i, it) in items.iter().enumerate() {
            log.logical_insert(it);
            assert_eq!(log.read(|t| t.len()), i + 1);
        }
        for it in items.iter().step_by(2) {
            log.logical_remove(it);
        }
        let odd: Vec<u32> = log.read(|t| t.iter().map(|it| ***it).collect());
        assert_eq!(odd, (0..50).filter(|v| v % 2 == 1).collect::<Vec<_>>());
    }

    struct Counted(Arc<Counter>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, O::SeqCst);
        }
    }

    /// A target that keeps items in arrival order (no `Clone` or `Ord`
    /// needed, so drops of `Counted` values are exact).
    #[derive(Default)]
    struct Bag<T>(Vec<Arc<Tracked<T>>>);
    impl<T> Target for Bag<T> {
        type Item = T;
        fn apply_insert(&mut self, item: Arc<Tracked<T>>) {
            self.0.push(item);
        }
        fn apply_remove(&mut self, item: Arc<Tracked<T>>) {
            let i = self.0.iter().position(|x| Arc::ptr_eq(x, &item)).unwrap();
            self.0.swap_remove(i);
        }
    }

    #[test]
    fn owner_may_drop_its_arc_while_an_entry_is_pending() {
        let drops = Arc::new(Counter::new(0));
        let log: Ldu<Bag<Counted>> = Ldu::new(Bag(Vec::new()));
        let a = Arc::new(Tracked::new(Counted(Arc::clone(&drops))));
        log.logical_insert(&a);
        assert_eq!(Arc::strong_count(&a), 2, "the log holds one count");
        let weak = Arc::downgrade(&a);
        let b = weak.upgrade().unwrap();
        drop(a);
        log.logical_remove(&b);
        log.logical_insert(&b);
        drop(b);
        assert_eq!(drops.load(O::SeqCst), 0, "alive while the log reaches it");
        log.synchronize();
        assert_eq!(log.read(|t| t.0.len()), 1);
        let b = weak.upgrade().unwrap();
        assert_eq!(Arc::strong_count(&b), 2, "owner (upgraded) + target");
        log.logical_remove(&b);
        drop(b);
        log.synchronize();
        assert_eq!(
            drops.load(O::SeqCst),
            1,
            "freed once the removal is applied"
        );
        assert!(weak.upgrade().is_none());
    }

    #[test]
    fn dropping_the_log_releases_pending_entries() {
        let drops = Arc::new(Counter::new(0));
        let log: Ldu<Bag<Counted>> = Ldu::new(Bag(Vec::new()));
        for v in 0..10 {
            let it = Arc::new(Tracked::new(Counted(Arc::clone(&drops))));
            log.logical_insert(&it);
            if v % 3 == 0 {
                log.logical_remove(&it);
            }
        }
        assert_eq!(drops.load(O::SeqCst), 0);
        drop(log);
        assert_eq!(drops.load(O::SeqCst), 10);
    }

    #[test]
    fn into_target_applies_pending_entries() {
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let items: Vec<_> = (0..5).map(item).collect();
        items.iter().for_each(|it| {
            log.logical_insert(it);
        });
        let set = log.into_target();
        assert_eq!(set.len(), 5);
        for it in &items {
            assert_eq!(
                Arc::strong_count(it),
                2,
                "owner + target, no log count left"
            );
        }
    }

    #[test]
    #[should_panic(expected = "belongs to another Ldu log")]
    fn an_item_takes_part_in_one_log() {
        let first: Ldu<OrderedSet<u32>> = Ldu::default();
        let second: Ldu<OrderedSet<u32>> = Ldu::default();
        let a = item(3);
        first.logical_insert(&a);
        second.logical_remove(&a);
    }

    /// A target whose insert of a chosen value panics once.
    #[derive(Default)]
    struct Flaky {
        set: OrderedSet<u32>,
        poison: Option<u32>,
    }
    impl Target for Flaky {
        type Item = u32;
        fn apply_insert(&mut self, item: Arc<Tracked<u32>>) {
            if self.poison == Some(**item) {
                self.poison = None;
                panic!("flaky target");
            }
            self.set.apply_insert(item);
        }
        fn apply_remove(&mut self, item: Arc<Tracked<u32>>) {
            self.set.apply_remove(item);
        }
    }

    #[test]
    fn a_panicking_target_keeps_the_rest_of_the_log() {
        let log = Ldu::<Flaky>::new(Flaky {
            poison: Some(2),
            ..Flaky::default()
        });
        let items: Vec<_> = (0..5).map(item).collect();
        items.iter().for_each(|it| {
            log.logical_insert(it);
        });
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.synchronize()));
        assert!(r.is_err());
        // 0 and 1 applied, 2 lost with the panic, 3 and 4 back in the log.
        let values: Vec<u32> = log.read(|t| t.set.iter().map(|it| ***it).collect());
        assert_eq!(values, [0, 1, 3, 4]);
        assert_eq!(
            Arc::strong_count(&items[2]),
            1,
            "the panicked entry's count was dropped"
        );
        // Item 2 is a logical member the target lacks: removing it would break
        // the target's invariant, so the docs say what was lost. The others
        // work as usual.
        log.logical_remove(&items[3]);
        assert_eq!(log.read(|t| t.set.len()), 3);
    }

    /// A drain that waits for the write lock, and whose measured yield
    /// gives its CPU to another thread, engages the gate. The waiting
    /// reader is pinned to one CPU beside a busy thread, so that its yield
    /// has someone to run. The scheduler may still run the yielding thread
    /// again at once (Linux's EEVDF does when the other thread has had
    /// more than its share, as a thread that never sleeps has), so the
    /// busy thread sleeps between bursts, and the test tries up to 1000
    /// times, each with a fresh reader (1 or 2 tries in ten runs here).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_wait_that_yields_its_cpu_engages_the_gate() {
        use rwlock_core::testing::pin_to;
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let it = item(1);
        let stop = core::sync::atomic::AtomicBool::new(false);
        let tries = std::thread::scope(|s| {
            s.spawn(|| {
                pin_to(cpu);
                // Short bursts: a thread that sleeps now and then stays
                // eligible to run in the scheduler's eyes.
                while !stop.load(O::Relaxed) {
                    let burst = std::time::Instant::now();
                    while burst.elapsed() < std::time::Duration::from_micros(200) {
                        core::hint::spin_loop();
                    }
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            });
            let mut tries = 0;
            while tries < 1000 && !log.gate.is_engaged() {
                tries += 1;
                // Something pending, so that the read drains.
                if log.logical_insert(&it) == Update::Unchanged {
                    log.logical_remove(&it);
                }
                let held = log.inner.write();
                let reader = s.spawn(|| {
                    pin_to(cpu);
                    // A fresh thread: its first contended wait measures a
                    // yield.
                    log.read(|set| set.len())
                });
                std::thread::sleep(std::time::Duration::from_millis(1));
                drop(held);
                reader.join().unwrap();
            }
            stop.store(true, O::Relaxed);
            tries
        });
        assert!(
            log.gate.is_engaged(),
            "{tries} waits that gave their CPU away did not engage the gate"
        );
    }

    #[test]
    fn any_lock_api_lock_guards_the_target() {
        let log = Ldu::<OrderedSet<u32>, parking_lot::RawRwLock>::new(OrderedSet::new());
        let a = item(9);
        log.logical_insert(&a);
        assert!(log.read(|t| t.contains_value(&9)));
        let log = Ldu::<OrderedSet<u32>, rwlock_core::PfQueue>::default();
        log.logical_insert(&item(1));
        assert_eq!(log.read(|t| t.len()), 1);
    }

    #[test]
    fn debug_shows_bits_and_target() {
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let a = item(4);
        log.logical_insert(&a);
        let s = format!("{a:?}");
        assert!(
            s.contains("member: true") && s.contains("mark|exist|used"),
            "{s}"
        );
        log.synchronize();
        assert_eq!(
            format!("{log:?}"),
            "Ldu { pending: false, target: {4}, totals: SyncStats { entries: 1, inserted: 1, removed: 0, cancelled: 0 } }"
        );
    }
}
