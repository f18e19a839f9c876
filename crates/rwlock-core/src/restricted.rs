//! [`Restricted<L>`]: concurrency restriction for any lock.
//!
//! Dice & Kogan, *Avoiding Scalability Collapse by Restricting Concurrency*
//! (GCR, Euro-Par 2019, arXiv 1905.10818), observe that a lock whose
//! threads outnumber the cores collapses: a FIFO hand-off (a ticket, a
//! queue, a phase-fair turn) gives the lock to a waiter that is
//! descheduled, and every thread behind it waits a time slice. GCR wraps
//! any lock and keeps the set of threads that contend for it (the *active*
//! set) at about the number of running CPUs; the surplus waits in a
//! *passive* queue, asleep, and is promoted into the active set now and
//! then for long-term fairness (GCR Section 3, Figure 2). This module does
//! the same for the workspace's locks, with three departures that keep it
//! free where the papers' locks are already fast:
//!
//! - **Writers are restricted, readers are not.** A reader-writer lock's
//!   collapse comes from its exclusive hand-offs: readers share the lock,
//!   and a reader waits only behind a writer's phase. With the writers
//!   circulating kept to the running CPUs, a writer's turn goes to a
//!   thread that runs, and the readers' phases follow it. So
//!   `lock_exclusive` and `lock_upgradable` (and a mutex's `lock`) go
//!   through the gate; `lock_shared` is `L`'s, untouched. A lock whose
//!   readers take a mutex (C-RW-NP's readers take its writer mutex) is
//!   restricted by restricting that mutex (the cohort crate does).
//! - **Only waiters are restricted.** The active set is the threads
//!   *waiting inside `L`*, never the holders: an admitted thread leaves it
//!   as soon as it holds `L`, so holders need no per-acquisition state,
//!   the guards are `L`'s own and every release is `L`'s release.
//! - **Engaged on evidence.** Until some waiter of `L` had to yield or park
//!   (the [`wait`] module records such *deep waits* per
//!   thread; every lock of the workspace waits through it), a blocking
//!   acquisition is `L`'s own, followed by one thread-local read. A deep
//!   wait engages the gate; from then on an acquisition first tries `L`
//!   and, if that fails, goes through admission. After [`DISENGAGE_AFTER`]
//!   admissions in a row that found nobody passive, the gate disengages.
//!   A deep wait during an admitted acquisition is left for the thread's
//!   next acquisition on a disengaged gate, which it engages again: while
//!   waits keep going deep the gate re-engages as soon as it disengages
//!   (hysteresis; it may engage another lock's gate the thread takes next,
//!   a false alarm that lapses). Taking that evidence at once instead
//!   (found in review, 2026-11-28) let two threads on two cores contend
//!   unrestricted, and measured 0.29× (cohort mutex) and 0.79× (brlock)
//!   their 2-thread throughput with empty critical sections
//!   (`docs/restriction.md`, "Evidence from the engaged period").
//!   A lock whose waiters never go deep (threads ≤ cores, short critical
//!   sections) so never pays for the gate beyond one load of a line that
//!   no acquisition writes.
//!
//! # The gate
//!
//! ```text
//!  word:  [ streak (31 bits) | ENGAGED | active (32 bits) ]
//!  head, tail: passive-queue tickets (FIFO)
//! ```
//!
//! Engaged slow path (GCR's `Lock`, Figure 2 lines 1–20): if
//! `active < limit`, `active += 1` (one CAS) and acquire `L`. At the
//! limit, a thread whose CPU is shared (one of its recent measured yields
//! gave the CPU to another thread: [`wait::cpu_shared_lately`]) takes a
//! passive ticket and sleeps until it is the queue's head (the
//! *standby*); a thread whose yields found nobody else to run is admitted
//! past the limit, since with a core of its own it delays nobody. The standby polls, asleep between polls ([`POLL`]), for
//! `active < limit`, and after [`PATIENCE`] forces its way in
//! (`active += 1` even at the limit: GCR's periodic promotion, its
//! `numAcqs % THRESHOLD` check). Either way it advances `head` and wakes
//! the next ticket. Having acquired `L`, the thread does `active -= 1`.
//! Threads coming back to the lock in a tight loop keep finding a free
//! slot and bypass the passive queue (GCR's short-term unfairness, which
//! is where the throughput comes from); the forced promotions bound the
//! bypass.
//!
//! # The limit
//!
//! `limit` is the number of CPUs the process may run on
//! ([`std::thread::available_parallelism`], which honours affinity masks
//! and cgroup quotas) less one, at least 1 and at most
//! [`DEFAULT_LIMIT_MAX`] (4), unless a lock is built with
//! [`Restricted::with_limit`]. The cap is Malthusian locks' rule (Dice,
//! arXiv 1511.06035): no more threads circulate than it takes to keep
//! the lock saturated. Without it, on 16 CPUs (one NUMA node), 15
//! writers could wait inside a FIFO lock at once; at 24 to 128 threads
//! the cap made the cohort mutex, C-RW-NP and PF-T 2.9 to 6.8 times
//! faster at 10% writes, and cost C-RW-RP 0.77× at 2% writes and 24
//! threads (`docs/restriction.md`, "A cap on the limit"). Up to 5 CPUs
//! (4 for a bare [`Gate`]) it changes nothing; on several NUMA nodes it
//! was not measured. The holder of `L` is not counted (it left
//! the active set when it acquired), so the CPU left over is the one it
//! runs on: holder and admitted waiters together fit the CPUs, and a
//! hand-off inside `L` goes to a waiter that has a CPU. With `limit`
//! equal to the CPUs (the first version: a holder and two waiters on 2
//! CPUs), 1 to 10% of a writer's acquisitions of the cohort mutex took
//! about 10 µs, nearly all of them a yield that gave its CPU away
//! (`docs/restriction.md`). A bare [`Gate`], whose user counts a whole
//! slow path (prwlock), admits as many waiters as there are CPUs (also at
//! most [`DEFAULT_LIMIT_MAX`]): one fewer cost prwlock 0.6 to 0.7× at 2
//! threads.
//!
//! # Guarantees
//!
//! - Mutual exclusion, reader sharing, and every ordering are `L`'s: the
//!   gate only delays threads before they call into `L`.
//! - A thread whose yields find nobody else to run is never passive, so
//!   where every thread has a core of its own `L`'s fairness holds
//!   unchanged (phase fairness for PF-T and PF-Q, the cohort hand-off
//!   bound, writer or reader preference); so it does with no more waiting
//!   writers than `limit` (at most [`DEFAULT_LIMIT_MAX`] by default), or
//!   where no waiter's recent yields gave its CPU away.
//! - With more, `L`'s fairness holds among the admitted waiters; a passive
//!   thread is admitted at the latest [`PATIENCE`] after it became the
//!   head of the passive queue, so one that finds `q` threads ahead of it
//!   waits about `(q + 1) × PATIENCE` beyond `L`'s own wait, at most. No
//!   thread starves, and restriction adds no deadlock: a passive wait
//!   always ends, whatever the holders do. A thread already passive (a
//!   signal handler that interrupted its passive stint and locks) is let
//!   in at once rather than queued behind its own ticket.
//! - Try forms never wait in the gate (they do not wait at all); timed
//!   forms wait in it no longer than their deadline (they poll for room
//!   instead of taking a ticket, so giving up leaves the queue intact).
//! - Inside a loom model the gate never engages (its passive queue sleeps
//!   on the clock): the models check `L`'s protocols.
//!
//! # Orderings
//!
//! The gate is a scheduler; it protects no data, so its counters are
//! Relaxed, except the passive queue's hand-over (Release on `head`,
//! Acquire where the next standby reads it) and the wake-up protocol,
//! whose re-check runs under parking_lot's bucket lock (the store it tests
//! precedes the `unpark_filter` on the same key, which takes that lock).
//! The passive queue's own protocol, and the lost wake-up it once had,
//! are in `restricted/passive.rs`.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lock_api::{
    RawMutex, RawMutexFair, RawMutexTimed, RawRwLock, RawRwLockDowngrade, RawRwLockFair,
    RawRwLockTimed, RawRwLockUpgrade, RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair,
    RawRwLockUpgradeTimed,
};

use crate::wait;

mod passive;
use passive::PassiveQueue;

const ACTIVE_MASK: u64 = 0xffff_ffff;
const ENGAGED: u64 = 1 << 32;
const STREAK_SHIFT: u32 = 33;
const STREAK_ONE: u64 = 1 << STREAK_SHIFT;

/// Engaged admissions in a row that found the passive queue empty before
/// the gate disengages.
pub const DISENGAGE_AFTER: u64 = 4096;

/// How often the passive queue's head looks for a free slot (it sleeps in
/// between: nobody wakes it when a slot frees, which in a busy lock would
/// cost a system call per acquisition).
pub const POLL: Duration = Duration::from_micros(100);

/// How long the passive queue's head waits for a free slot before it
/// forces its way in (GCR's periodic promotion: long-term fairness).
pub const PATIENCE: Duration = Duration::from_millis(1);

/// The most waiters a default limit admits, however many CPUs there are
/// (module docs, "The limit"): on 16 CPUs, 1, 2 and 4 all did far better
/// than 8 or 15; 4 is the largest, and leaves machines of up to 5 CPUs
/// as they were.
pub const DEFAULT_LIMIT_MAX: u32 = 4;

// `default_limit_for`'s `clamp(1, DEFAULT_LIMIT_MAX)` needs it.
const _: () = assert!(DEFAULT_LIMIT_MAX >= 1);

/// The process's default limit (see [`default_limit_for`]).
fn default_limit(reserved: u32) -> u32 {
    default_limit_for(wait::running_cpus(), reserved)
}

/// The default limit with `cpus` CPUs: the CPUs less `reserved`, at least
/// 1 and at most [`DEFAULT_LIMIT_MAX`].
fn default_limit_for(cpus: u32, reserved: u32) -> u32 {
    cpus.saturating_sub(reserved).clamp(1, DEFAULT_LIMIT_MAX)
}

std::thread_local! {
    /// Whether this thread is in a passive stint now (`Gate::admit_passive`,
    /// from its ticket to its hand-over). A `const` thread-local without a
    /// destructor: a plain TLS word, safe to touch from a signal handler and
    /// during thread-local teardown.
    static PASSIVE_HERE: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// The admission gate: what [`Restricted`] puts in front of a lock, for a
/// lock that restricts its own slow paths (prwlock does, leaving its read
/// fast path untouched). Protocol in the [module docs](self).
///
/// A lock calls [`Gate::wait`] around the part of an acquisition that
/// waits (after its own try failed); the gate lets it through at once
/// while it is not engaged, and engages when that wait went deep.
///
/// ```
/// use rwlock_core::restricted::Gate;
/// let gate = Gate::new();
/// // The slow path of some acquisition whose try failed:
/// let got = gate.wait(|| "acquired");
/// assert_eq!(got, "acquired");
/// assert!(!gate.is_engaged());
/// ```
pub struct Gate {
    /// `active | ENGAGED | streak` (see the module docs).
    word: AtomicU64,
    /// The passive queue (`restricted/passive.rs`).
    passive: PassiveQueue,
    /// 0: the process's default (the CPUs it may run on, less `reserved`,
    /// at most [`DEFAULT_LIMIT_MAX`]).
    limit: u32,
    /// CPUs the default limit leaves to threads that are not counted
    /// ([`Restricted`]'s holders: 1; [`Gate::new`]: 0).
    reserved: u32,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("engaged", &self.is_engaged())
            .field("active", &self.active())
            .field("passive", &self.passive_waiters())
            .finish()
    }
}

impl Gate {
    crate::loom_const_fn! {
        /// A disengaged gate that admits as many waiters as the process has
        /// CPUs once engaged (at most [`DEFAULT_LIMIT_MAX`]).
        pub fn new() -> Self {
            Self::with_limit(0)
        }
    }

    crate::loom_const_fn! {
        /// A disengaged gate that admits at most `limit` waiters at a time
        /// once engaged (0: as many as the process has CPUs, at most
        /// [`DEFAULT_LIMIT_MAX`]), beyond which
        /// threads whose CPU is shared go passive.
        pub fn with_limit(limit: u32) -> Self {
            Gate {
                word: AtomicU64::new(0),
                passive: PassiveQueue::new(),
                limit,
                reserved: 0,
            }
        }
    }

    crate::loom_const_fn! {
        /// A disengaged gate for the wait of a lock's acquisition whose
        /// holder is not counted, as in [`Restricted`]: once engaged it
        /// admits one waiter fewer than the process has CPUs (at least 1, at
        /// most [`DEFAULT_LIMIT_MAX`]),
        /// leaving a CPU to the holder. The `ldu` crate puts one in front
        /// of its log's write lock.
        pub fn leaving_a_cpu_to_the_holder() -> Self {
            Self::for_restricted(0)
        }
    }

    crate::loom_const_fn! {
        /// [`Restricted`]'s gate: its default limit leaves one CPU to the
        /// holder, which is not counted (`limit` 0: the CPUs less one, at
        /// most [`DEFAULT_LIMIT_MAX`]).
        fn for_restricted(limit: u32) -> Self {
            let mut gate = Self::with_limit(limit);
            gate.reserved = 1;
            gate
        }
    }

    /// Whether the gate is engaged now (a snapshot).
    pub fn is_engaged(&self) -> bool {
        // Relaxed: a snapshot.
        self.word.load(Ordering::Relaxed) & ENGAGED != 0
    }

    /// Admitted threads that have not acquired the lock yet (a snapshot).
    pub fn active(&self) -> u32 {
        // Relaxed: a snapshot.
        (self.word.load(Ordering::Relaxed) & ACTIVE_MASK) as u32
    }

    /// Threads waiting in the passive queue now (a snapshot).
    pub fn passive_waiters(&self) -> u32 {
        self.passive.len()
    }

    /// The waiting part of an acquisition, `acquire`, through the gate:
    /// called directly while the gate is disengaged (then the gate engages
    /// if the wait went deep), after admission while it is engaged. Call it
    /// only where the lock's own try has failed, so that a thread that
    /// would not wait never pays for admission. Inside a loom model it
    /// calls `acquire` and nothing else.
    #[inline]
    pub fn wait<G>(&self, acquire: impl FnOnce() -> G) -> G {
        if cfg!(loom) {
            return acquire();
        }
        if !self.engaged_hint() {
            return self.watched(acquire);
        }
        self.admitted(acquire)
    }

    /// `acquire`, then engages the gate if its wait went deep.
    #[inline(always)]
    fn watched<G>(&self, acquire: impl FnOnce() -> G) -> G {
        let g = acquire();
        if wait::take_deep_wait() {
            self.engage();
        }
        g
    }

    #[inline]
    fn limit(&self) -> u64 {
        u64::from(if self.limit == 0 {
            default_limit(self.reserved)
        } else {
            self.limit
        })
    }

    /// Whether the gate is engaged (a hint: admission re-reads the word).
    #[inline(always)]
    fn engaged_hint(&self) -> bool {
        // Relaxed: a hint (module docs).
        self.word.load(Ordering::Relaxed) & ENGAGED != 0
    }

    /// The engaged slow path: admission (active or passive), then
    /// `acquire`, then leaving the active set.
    #[cold]
    fn admitted<G>(&self, acquire: impl FnOnce() -> G) -> G {
        if !self.try_admit(false) {
            self.admit_passive();
        }
        // Leaves the active set once `acquire` returns, or if it panics.
        let _admitted = Admitted(self);
        acquire()
    }

    /// As [`admitted`](Self::admitted) for a timed acquisition: `None` if
    /// admission did not come before `deadline`.
    #[cold]
    fn admitted_until<G>(
        &self,
        deadline: Instant,
        acquire: impl FnOnce() -> Option<G>,
    ) -> Option<G> {
        if !self.admit_until(deadline) {
            return None;
        }
        let _admitted = Admitted(self);
        acquire()
    }

    #[cold]
    #[inline(never)]
    fn engage(&self) {
        // Relaxed: the gate protects no data (module docs).
        self.word.fetch_or(ENGAGED, Ordering::Relaxed);
    }

    /// One admission attempt (`force`: even at the limit). At the limit,
    /// a thread whose CPU is not shared ([`wait::cpu_shared_lately`]) is
    /// admitted all the same: passivity is for threads that compete for
    /// CPUs, so that where threads ≤ cores `L` is never reordered.
    fn try_admit(&self, force: bool) -> bool {
        let limit = self.limit();
        let mut past_limit = force;
        // Relaxed: the CAS below re-reads it.
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            if !past_limit && w & ACTIVE_MASK >= limit {
                if wait::cpu_shared_lately() {
                    return false;
                }
                past_limit = true;
            }
            let streak = w >> STREAK_SHIFT;
            let next = if force || self.passive_waiters() != 0 {
                // Somebody needed the passive queue: start a new streak.
                (w & (ACTIVE_MASK | ENGAGED)) + 1
            } else if streak + 1 >= DISENGAGE_AFTER {
                // Nobody needed it for a long while: disengage.
                (w & ACTIVE_MASK) + 1
            } else {
                w + 1 + STREAK_ONE
            };
            // Relaxed: the gate protects no data (module docs).
            match self
                .word
                .compare_exchange_weak(w, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// The passive queue: sleep until this thread's ticket is the head,
    /// then, as the standby, poll for room (forcing the way in after
    /// `PATIENCE`), then hand the head role to the next ticket.
    ///
    /// A thread that is passive already, in this gate or another, is let in
    /// at once instead: it can only get here from a signal handler that
    /// interrupted its passive stint (or a callback run inside one), and a
    /// ticket taken there would wait behind the thread's own, which cannot
    /// move until the handler returns. (Found in review on 2026-11-28: the
    /// preload library documents that a handler may lock while its thread
    /// is inside a lock call, and prwlock's readers and LDU's drains, whose
    /// waits take no ticket of their own, would hang there only because of
    /// the gate.)
    #[cold]
    fn admit_passive(&self) {
        if PASSIVE_HERE.with(|p| p.replace(true)) {
            self.try_admit(true);
            return;
        }
        let ticket = self.passive.join();
        let forced_at = Instant::now() + PATIENCE;
        while !self.try_admit(false) {
            let now = Instant::now();
            if now >= forced_at {
                self.try_admit(true);
                break;
            }
            // Nobody wakes the standby when room appears (module docs).
            std::thread::sleep(POLL.min(forced_at - now));
        }
        self.passive.hand_over(ticket);
        PASSIVE_HERE.with(|p| p.set(false));
    }

    /// Admission for a timed acquisition: polls for room like the standby
    /// (without a ticket, so that giving up at the deadline leaves the
    /// passive queue intact), forcing the way in after `PATIENCE`; `false`
    /// once the deadline has passed.
    #[cold]
    fn admit_until(&self, deadline: Instant) -> bool {
        let forced_at = Instant::now() + PATIENCE;
        loop {
            if self.try_admit(false) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            if now >= forced_at {
                return self.try_admit(true);
            }
            std::thread::sleep(POLL.min(forced_at - now).min(deadline - now));
        }
    }
}

/// An admitted waiter: leaves the active set when dropped (once it holds
/// the lock, or if the acquisition panics).
struct Admitted<'a>(&'a Gate);

impl Drop for Admitted<'_> {
    #[inline]
    fn drop(&mut self) {
        // Relaxed: the gate protects no data (module docs).
        self.0.word.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The gate on a cache line of its own: [`Restricted`] reads its word on
/// every blocking acquisition, and in a line that `L`'s operations keep
/// writing that read would cost a second coherence transaction per
/// contended acquisition.
#[repr(align(64))]
struct GateLine(Gate);

/// Concurrency restriction over the lock `L` (a reader-writer lock or a
/// mutex); see the [module docs](self).
///
/// ```
/// use rwlock_core::{Restricted, pf_ticket};
/// type RwLock<T> = lock_api::RwLock<Restricted<pf_ticket::PfTicket>, T>;
/// let lock = RwLock::new(1);
/// *lock.write() += 1;
/// assert_eq!(*lock.read(), 2);
/// ```
pub struct Restricted<L> {
    gate: GateLine,
    inner: L,
}

impl<L> Restricted<L> {
    crate::loom_const_fn! {
        /// `inner` behind a gate that admits one waiter fewer than the process
        /// has CPUs (at least 1, at most [`DEFAULT_LIMIT_MAX`]), leaving a
        /// CPU to the holder.
        pub fn new(inner: L) -> Self {
            Self::with_limit(inner, 0)
        }
    }

    crate::loom_const_fn! {
        /// `inner` behind a gate that admits at most `limit` waiters at a time
        /// once engaged (0: one fewer than the process has CPUs, at least 1
        /// and at most [`DEFAULT_LIMIT_MAX`]),
        /// beyond which threads whose CPU is shared go passive.
        pub fn with_limit(inner: L, limit: u32) -> Self {
            Restricted {
                gate: GateLine(Gate::for_restricted(limit)),
                inner,
            }
        }
    }

    /// The wrapped lock. Acquiring it directly bypasses the gate (which is
    /// always safe: the gate only schedules).
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The gate.
    pub fn gate(&self) -> &Gate {
        &self.gate.0
    }

    /// Whether the gate is engaged now (a snapshot).
    pub fn is_engaged(&self) -> bool {
        self.gate().is_engaged()
    }

    /// Threads waiting in the passive queue now (a snapshot).
    pub fn passive_waiters(&self) -> u32 {
        self.gate().passive_waiters()
    }

    /// A blocking acquisition of the inner lock through the gate:
    /// `acquire` is `L`'s blocking form, `try_acquire` its try form
    /// (tried first once the gate is engaged). Lock traits that this module
    /// does not implement (a crate's own mutex trait) restrict their
    /// acquisitions with it.
    ///
    /// `inline(always)`: out of line (LLVM's choice once the gate's check
    /// was added), the call cost the cohort locks' writes about 20
    /// instructions per pair (`docs/restriction.md`).
    #[inline(always)]
    pub fn acquire<G>(
        &self,
        try_acquire: impl FnOnce(&L) -> Option<G>,
        acquire: impl FnOnce(&L) -> G,
    ) -> G {
        let gate = self.gate();
        if cfg!(loom) {
            return acquire(&self.inner);
        }
        if gate.engaged_hint() {
            return self.acquire_engaged(try_acquire, acquire);
        }
        gate.watched(|| acquire(&self.inner))
    }

    /// [`acquire`](Self::acquire) while the gate is engaged: `L`'s try,
    /// then admission (out of line, so that the disengaged path inlines
    /// into the caller).
    #[cold]
    #[inline(never)]
    fn acquire_engaged<G>(
        &self,
        try_acquire: impl FnOnce(&L) -> Option<G>,
        acquire: impl FnOnce(&L) -> G,
    ) -> G {
        match try_acquire(&self.inner) {
            Some(g) => g,
            None => self.gate().admitted(|| acquire(&self.inner)),
        }
    }

    /// As [`acquire`](Self::acquire) with a deadline: `acquire_until` is
    /// `L`'s timed form; `None` if neither admission nor `L` came before
    /// the deadline.
    pub fn acquire_until<G>(
        &self,
        deadline: Instant,
        try_acquire: impl FnOnce(&L) -> Option<G>,
        acquire_until: impl FnOnce(&L, Instant) -> Option<G>,
    ) -> Option<G> {
        let gate = self.gate();
        if cfg!(loom) || !gate.engaged_hint() {
            return gate.watched(|| acquire_until(&self.inner, deadline));
        }
        if let Some(g) = try_acquire(&self.inner) {
            return Some(g);
        }
        gate.admitted_until(deadline, || acquire_until(&self.inner, deadline))
    }

    #[cfg(test)]
    fn engage(&self) {
        self.gate().engage();
    }

    #[cfg(test)]
    fn try_admit(&self, force: bool) -> bool {
        self.gate().try_admit(force)
    }

    #[cfg(test)]
    fn admitted<G>(&self, acquire: impl FnOnce(&L) -> G) -> G {
        self.gate().admitted(|| acquire(&self.inner))
    }
}

impl<L: Default> Default for Restricted<L> {
    fn default() -> Self {
        Self::new(L::default())
    }
}

impl<L: fmt::Debug> fmt::Debug for Restricted<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Restricted")
            .field("gate", self.gate())
            .field("inner", &self.inner)
            .finish()
    }
}

/// `Some(deadline)`, or `None` where `now + timeout` overflows (the caller
/// then waits without one, as lock_api's own timed forms do).
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

// SAFETY: every acquisition and release is `L`'s (the gate only delays a
// thread before it calls into `L`), so `L`'s exclusion and orderings hold.
unsafe impl<L: RawRwLock> RawRwLock for Restricted<L> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new(L::INIT);
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use Restricted::new()");

    type SharedGuard = L::SharedGuard;
    type ExclusiveGuard = L::ExclusiveGuard;

    #[inline]
    fn lock_shared(&self) -> Self::SharedGuard {
        self.inner.lock_shared()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        self.inner.try_lock_shared()
    }

    #[inline]
    unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_shared(guard) }
    }

    #[inline]
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        self.acquire(L::try_lock_exclusive, L::lock_exclusive)
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        self.inner.try_lock_exclusive()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_exclusive(guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }
}

// SAFETY: `L`'s fair releases; the provided bumps go through
// `lock_shared`/`lock_exclusive` above.
unsafe impl<L: RawRwLockFair> RawRwLockFair for Restricted<L> {
    unsafe fn unlock_shared_fair(&self, guard: Self::SharedGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_shared_fair(guard) }
    }

    unsafe fn unlock_exclusive_fair(&self, guard: Self::ExclusiveGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_exclusive_fair(guard) }
    }
}

// SAFETY: `L`'s downgrade.
unsafe impl<L: RawRwLockDowngrade> RawRwLockDowngrade for Restricted<L> {
    #[inline]
    unsafe fn downgrade(&self, guard: Self::ExclusiveGuard) -> Self::SharedGuard {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.downgrade(guard) }
    }
}

// SAFETY: `L`'s timed acquisitions (writes after admission within the
// deadline).
unsafe impl<L> RawRwLockTimed for Restricted<L>
where
    L: RawRwLockTimed<Duration = Duration, Instant = Instant>,
{
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_shared_for(&self, timeout: Duration) -> Option<Self::SharedGuard> {
        self.inner.try_lock_shared_for(timeout)
    }

    fn try_lock_shared_until(&self, deadline: Instant) -> Option<Self::SharedGuard> {
        self.inner.try_lock_shared_until(deadline)
    }

    fn try_lock_exclusive_for(&self, timeout: Duration) -> Option<Self::ExclusiveGuard> {
        match deadline_after(timeout) {
            Some(deadline) => self.try_lock_exclusive_until(deadline),
            None => Some(self.lock_exclusive()),
        }
    }

    fn try_lock_exclusive_until(&self, deadline: Instant) -> Option<Self::ExclusiveGuard> {
        self.acquire_until(deadline, L::try_lock_exclusive, L::try_lock_exclusive_until)
    }
}

// SAFETY: `L`'s upgradable acquisitions (admitted like the writes) and
// upgrades (which wait inside `L` for readers, holding it: not restricted).
unsafe impl<L: RawRwLockUpgrade> RawRwLockUpgrade for Restricted<L> {
    type UpgradableGuard = L::UpgradableGuard;

    fn lock_upgradable(&self) -> Self::UpgradableGuard {
        self.acquire(L::try_lock_upgradable, L::lock_upgradable)
    }

    fn try_lock_upgradable(&self) -> Option<Self::UpgradableGuard> {
        self.inner.try_lock_upgradable()
    }

    unsafe fn unlock_upgradable(&self, guard: Self::UpgradableGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_upgradable(guard) }
    }

    unsafe fn upgrade(&self, guard: Self::UpgradableGuard) -> Self::ExclusiveGuard {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.upgrade(guard) }
    }

    unsafe fn try_upgrade(
        &self,
        guard: Self::UpgradableGuard,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.try_upgrade(guard) }
    }
}

// SAFETY: `L`'s fair release; the provided bump goes through
// `lock_upgradable` above (admitted like the writes).
unsafe impl<L: RawRwLockUpgradeFair> RawRwLockUpgradeFair for Restricted<L> {
    unsafe fn unlock_upgradable_fair(&self, guard: Self::UpgradableGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_upgradable_fair(guard) }
    }
}

// SAFETY: `L`'s.
unsafe impl<L: RawRwLockUpgradeDowngrade> RawRwLockUpgradeDowngrade for Restricted<L> {
    unsafe fn downgrade_upgradable(&self, guard: Self::UpgradableGuard) -> Self::SharedGuard {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.downgrade_upgradable(guard) }
    }

    unsafe fn downgrade_to_upgradable(&self, guard: Self::ExclusiveGuard) -> Self::UpgradableGuard {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.downgrade_to_upgradable(guard) }
    }
}

// SAFETY: as `RawRwLockUpgrade` and `RawRwLockTimed`.
unsafe impl<L> RawRwLockUpgradeTimed for Restricted<L>
where
    L: RawRwLockUpgradeTimed + RawRwLockTimed<Duration = Duration, Instant = Instant>,
{
    fn try_lock_upgradable_for(&self, timeout: Duration) -> Option<Self::UpgradableGuard> {
        match deadline_after(timeout) {
            Some(deadline) => self.try_lock_upgradable_until(deadline),
            None => Some(self.lock_upgradable()),
        }
    }

    fn try_lock_upgradable_until(&self, deadline: Instant) -> Option<Self::UpgradableGuard> {
        self.acquire_until(
            deadline,
            L::try_lock_upgradable,
            L::try_lock_upgradable_until,
        )
    }

    unsafe fn try_upgrade_for(
        &self,
        guard: Self::UpgradableGuard,
        timeout: Duration,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.try_upgrade_for(guard, timeout) }
    }

    unsafe fn try_upgrade_until(
        &self,
        guard: Self::UpgradableGuard,
        deadline: Instant,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.try_upgrade_until(guard, deadline) }
    }
}

// SAFETY: every acquisition and release is `L`'s (the gate only delays a
// thread before it calls `L::lock`).
unsafe impl<M: RawMutex> RawMutex for Restricted<M> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new(M::INIT);
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use Restricted::new()");

    type Guard = M::Guard;

    #[inline]
    fn lock(&self) -> Self::Guard {
        self.acquire(M::try_lock, M::lock)
    }

    #[inline]
    fn try_lock(&self) -> Option<Self::Guard> {
        self.inner.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self, guard: Self::Guard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock(guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

// SAFETY: `M`'s fair release; the provided bump goes through `lock`.
unsafe impl<M: RawMutexFair> RawMutexFair for Restricted<M> {
    unsafe fn unlock_fair(&self, guard: Self::Guard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_fair(guard) }
    }
}

// SAFETY: `M`'s timed acquisition after admission within the deadline.
unsafe impl<M> RawMutexTimed for Restricted<M>
where
    M: RawMutexTimed<Duration = Duration, Instant = Instant>,
{
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_for(&self, timeout: Duration) -> Option<Self::Guard> {
        match deadline_after(timeout) {
            Some(deadline) => self.try_lock_until(deadline),
            None => Some(self.lock()),
        }
    }

    fn try_lock_until(&self, deadline: Instant) -> Option<Self::Guard> {
        self.acquire_until(deadline, M::try_lock, M::try_lock_until)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pf_ticket::PfTicket;
    use crate::testing;

    type Pft = Restricted<PfTicket>;

    /// The upgradable read's fair release and bump (`RawRwLockUpgradeFair`)
    /// pass through to `L` (found missing in review, 2026-11-27).
    #[test]
    fn upgradable_fair_release_and_bump() {
        type Lock = lock_api::RwLock<Restricted<parking_lot::RawRwLock>, u32>;
        let lock = Lock::new(1);
        let mut g = lock.upgradable_read();
        lock_api::RwLockUpgradableReadGuard::bump(&mut g);
        assert_eq!(*g, 1);
        lock_api::RwLockUpgradableReadGuard::unlock_fair(g);
        *lock.write() += 1;
        assert_eq!(*lock.read(), 2);
        assert!(!lock.is_locked());
    }

    /// Aborts the test process with `what` unless dropped within `secs`
    /// (a lost passive-queue wake-up hangs a thread for good: make that a
    /// failure with a message instead of a silent CI timeout).
    fn watchdog(secs: u64, what: &'static str) -> impl Drop {
        struct Disarm(std::sync::mpsc::Sender<()>);
        impl Drop for Disarm {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                rx.recv_timeout(Duration::from_secs(secs))
            {
                eprintln!("watchdog: {what} did not finish in {secs} s");
                std::process::abort();
            }
        });
        Disarm(tx)
    }

    #[test]
    fn footprint_is_inner_plus_a_line() {
        assert_eq!(core::mem::size_of::<Pft>(), 128);
        assert_eq!(core::mem::align_of::<Pft>(), 64);
    }

    #[test]
    fn semantics_of_the_wrapped_lock() {
        let lock = Pft::INIT;
        testing::check_try_lock(&lock);
        testing::check_downgrade(&lock);
        testing::check_panic_releases(&lock_api::RwLock::<Pft, u64>::new(0));
        testing::check_try_forms(&lock, Duration::from_millis(250));
    }

    /// A thread whose wait went deep engages the gate; a long streak of
    /// admissions with nobody passive disengages it.
    #[test]
    fn deep_waits_engage_and_quiet_streaks_disengage() {
        let lock = Pft::INIT;
        assert!(!lock.is_engaged());
        let w = lock.lock_exclusive();
        std::thread::scope(|s| {
            crate::testing::spawn_and_hold(s, Duration::from_millis(20), || {
                // Waits far longer than the spin phase: deep.
                let g = lock.lock_exclusive();
                // SAFETY: our write.
                unsafe { lock.unlock_exclusive(g) };
            });
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
        });
        assert!(lock.is_engaged(), "a deep wait did not engage the gate");
        // Engaged slow paths with room and nobody passive count a streak;
        // drive them through the private slow path directly.
        for _ in 0..DISENGAGE_AFTER {
            let g = lock.admitted(PfTicket::lock_shared);
            // SAFETY: our read.
            unsafe { lock.unlock_shared(g) };
        }
        assert!(
            !lock.is_engaged(),
            "a quiet streak did not disengage the gate"
        );
        // Relaxed: single-threaded now.
        assert_eq!(u64::from(lock.gate().active()), 0);
    }

    /// With a limit of one and the gate engaged, waiters beyond the first
    /// go passive (the queue's head is forced in after each PATIENCE, so
    /// the queue drains slowly even while the lock stays held), and every
    /// one of them gets in. Up to three attempts: a waiter whose measured
    /// yields keep finding a free CPU loses its evidence of a shared CPU
    /// and is rightly admitted instead, which happened once in a CI run
    /// (0 of 6 passive); a gate that never sends anyone to the passive
    /// queue still fails every attempt.
    #[test]
    fn surplus_waiters_go_passive_and_all_get_in() {
        let _watchdog = watchdog(60, "surplus_waiters_go_passive_and_all_get_in");
        let mut seen = Vec::new();
        for _ in 0..3 {
            let passive = surplus_waiters_once();
            seen.push(passive);
            if passive >= 3 {
                return;
            }
        }
        panic!("at most {seen:?} of 6 waiters went passive, in 3 attempts");
    }

    /// One attempt of `surplus_waiters_go_passive_and_all_get_in`: the most
    /// waiters seen passive at once (it stops looking at 3).
    fn surplus_waiters_once() -> u32 {
        let lock = Restricted::with_limit(PfTicket::<crate::wait::DefaultWait>::new(), 1);
        lock.engage();
        let w = lock.lock_exclusive();
        let mut seen_passive = 0;
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        // Passivity is for threads whose CPU is shared.
                        crate::wait::set_cpu_shared(true);
                        let g = lock.lock_exclusive();
                        // SAFETY: our write.
                        unsafe { lock.unlock_exclusive(g) };
                    })
                })
                .collect();
            let t0 = Instant::now();
            while seen_passive < 3 && t0.elapsed() < Duration::from_secs(10) {
                seen_passive = seen_passive.max(lock.passive_waiters());
                std::thread::yield_now();
            }
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
            for h in handles {
                h.join().unwrap();
            }
        });
        assert_eq!(lock.passive_waiters(), 0);
        // Relaxed: every thread was joined.
        assert_eq!(u64::from(lock.gate().active()), 0);
        assert!(!lock.is_locked());
        seen_passive
    }

    /// How long a read through the engaged gate takes while another
    /// admission holds the only slot for good, by a thread whose CPU is
    /// (`cpu_shared`) or is not shared. Leaves that slot taken.
    fn read_at_a_full_gate(cpu_shared: bool) -> Duration {
        let lock = Restricted::with_limit(PfTicket::<crate::wait::DefaultWait>::new(), 1);
        lock.engage();
        // Occupy the only slot without ever leaving it.
        assert!(lock.try_admit(false));
        crate::wait::set_cpu_shared(cpu_shared);
        let t0 = Instant::now();
        // The slow path (the lock itself is free).
        let g = lock.admitted(PfTicket::lock_shared);
        let took = t0.elapsed();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        assert_eq!(lock.passive_waiters(), 0);
        // Relaxed: single-threaded; the occupied slot is still taken.
        assert_eq!(u64::from(lock.gate().active()), 1);
        took
    }

    /// A signal handler that goes through the gate while its thread is
    /// passive in it is let in at once: a ticket of its own would wait
    /// behind the thread's, which cannot move until the handler returns.
    /// (Without the check in `admit_passive` the handler parks for good and
    /// this test fails at its 10 s deadline.)
    #[test]
    fn a_signal_handler_on_a_passive_thread_is_let_in() {
        use std::sync::atomic::{AtomicBool, AtomicU8};
        static GATE: Gate = Gate::with_limit(1);
        /// 0: the handler has not finished; 1: it finished, having
        /// interrupted a passive stint; 2: it finished, having not.
        static HANDLER: AtomicU8 = AtomicU8::new(0);
        extern "C" fn handler(_: libc::c_int) {
            let passive = PASSIVE_HERE.with(|p| p.get());
            GATE.wait(|| ());
            // SeqCst: test bookkeeping.
            HANDLER.store(if passive { 1 } else { 2 }, Ordering::SeqCst);
        }
        let _watchdog = watchdog(120, "a_signal_handler_on_a_passive_thread_is_let_in");
        // A zeroed `sigaction` is a valid value to fill in; the handler is
        // an `extern "C" fn(c_int)`, as `sa_sigaction` without `SA_SIGINFO`
        // expects. No other test of this binary uses SIGUSR1.
        // SAFETY: so installing it is sound.
        unsafe {
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &sa, core::ptr::null_mut()),
                0
            );
        }
        GATE.engage();
        // Occupy the only slot for good: every later admission is passive
        // (its CPU counts as shared) until forced in after PATIENCE.
        assert!(GATE.try_admit(false));
        for _ in 0..200 {
            HANDLER.store(0, Ordering::SeqCst);
            let through = std::sync::Arc::new(AtomicBool::new(false));
            let release = std::sync::Arc::new(AtomicBool::new(false));
            let t = {
                let (through, release) = (through.clone(), release.clone());
                std::thread::spawn(move || {
                    crate::wait::set_cpu_shared(true);
                    GATE.wait(|| ());
                    through.store(true, Ordering::SeqCst);
                    // Alive until the signal was handled.
                    while !release.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                })
            };
            while GATE.passive_waiters() == 0 && !through.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            // SAFETY: the thread is alive (it waits for `release`).
            let rc = unsafe {
                libc::pthread_kill(
                    std::os::unix::thread::JoinHandleExt::as_pthread_t(&t),
                    libc::SIGUSR1,
                )
            };
            assert_eq!(rc, 0);
            let t0 = Instant::now();
            while HANDLER.load(Ordering::SeqCst) == 0 {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "a signal handler on a passive thread did not get through the gate"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            release.store(true, Ordering::SeqCst);
            t.join().unwrap();
            if HANDLER.load(Ordering::SeqCst) == 1 {
                assert_eq!(GATE.passive_waiters(), 0);
                // Only the occupied slot is still taken.
                assert_eq!(GATE.active(), 1);
                return;
            }
        }
        panic!("no signal landed in a passive stint in 200 attempts");
    }

    /// The passive queue's head gets in within PATIENCE (plus scheduling)
    /// even while an admitted waiter occupies the only slot for good.
    #[test]
    fn a_passive_head_is_promoted_within_its_patience() {
        let took = read_at_a_full_gate(true);
        assert!(
            took >= PATIENCE && took < PATIENCE + Duration::from_millis(500),
            "promoted after {took:?}, patience {PATIENCE:?}"
        );
    }

    /// At the limit, a thread whose CPU is not shared (its yields found
    /// nobody else to run: threads ≤ cores) is admitted at once instead of
    /// going passive, so where every thread has a core `L`'s order is kept.
    #[test]
    fn a_thread_with_a_core_of_its_own_is_never_passive() {
        // The best of three: one preemption of a millisecond inside the
        // timed call would fail a single try, while a thread sent passive
        // waits at least PATIENCE every time.
        let took = (0..3).map(|_| read_at_a_full_gate(false)).min().unwrap();
        assert!(
            took < PATIENCE,
            "a thread with its own core waited {took:?} in the gate (best of three)"
        );
    }

    /// The default limit leaves a CPU to the holder (which is not counted),
    /// while a bare [`Gate`] (whose users count their whole slow path)
    /// admits as many waiters as there are CPUs; both at most
    /// [`DEFAULT_LIMIT_MAX`].
    #[test]
    fn default_limits() {
        let cpus = crate::wait::running_cpus();
        let restricted = Pft::INIT;
        let leaving_one = u64::from(default_limit_for(cpus, 1));
        assert_eq!(restricted.gate().limit(), leaving_one);
        assert_eq!(Gate::new().limit(), u64::from(default_limit_for(cpus, 0)));
        assert_eq!(Gate::leaving_a_cpu_to_the_holder().limit(), leaving_one);
        // Every machine size, by the same function.
        for (cpus, reserved, limit) in [
            (1, 1, 1),
            (2, 1, 1),
            (2, 0, 2),
            (4, 1, 3),
            (4, 0, 4),
            (5, 1, 4),
            (5, 0, DEFAULT_LIMIT_MAX),
            (6, 1, DEFAULT_LIMIT_MAX),
            (16, 1, DEFAULT_LIMIT_MAX),
            (16, 0, DEFAULT_LIMIT_MAX),
            (256, 1, DEFAULT_LIMIT_MAX),
            (0, 1, 1),
        ] {
            assert_eq!(
                default_limit_for(cpus, reserved),
                limit,
                "{cpus} CPUs, {reserved} reserved"
            );
        }
        assert_eq!(
            Restricted::with_limit(PfTicket::<crate::wait::DefaultWait>::new(), 3)
                .gate()
                .limit(),
            3
        );
    }

    /// A panic inside `L`'s acquisition leaves the active set balanced.
    #[test]
    fn a_panicking_acquisition_leaves_the_active_set() {
        let lock = Pft::INIT;
        lock.engage();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lock.admitted(|_: &PfTicket| -> () {
                panic!("acquisition panicked (expected by this test)")
            })
        }));
        assert!(outcome.is_err());
        // Relaxed: single-threaded.
        assert_eq!(u64::from(lock.gate().active()), 0);
    }

    /// A mutex behind the gate with a limit of one: every waiter gets in
    /// and mutual exclusion holds (a counter bumped non-atomically under
    /// the lock); that surplus waiters go passive is
    /// `surplus_waiters_go_passive_and_all_get_in`'s to show. Reads of a
    /// reader-writer lock skip the gate.
    #[test]
    fn a_restricted_mutex_admits_every_waiter() {
        let _watchdog = watchdog(30, "a_restricted_mutex_admits_every_waiter");
        let m = lock_api::Mutex::<Restricted<parking_lot::RawMutex>, u64>::from_raw(
            Restricted::with_limit(parking_lot::RawMutex::INIT, 1),
            0,
        );
        // SAFETY: `raw` is only used to engage the gate.
        unsafe { m.raw() }.engage();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    crate::wait::set_cpu_shared(true);
                    for _ in 0..2_000 {
                        let mut g = m.lock();
                        let v = *g;
                        std::hint::black_box(&mut *g);
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(*m.lock(), 16_000);
        // SAFETY: as above.
        let raw = unsafe { m.raw() };
        assert_eq!(raw.passive_waiters(), 0);
        // Relaxed: every thread was joined.
        assert_eq!(u64::from(raw.gate().active()), 0);

        // A read that must wait (a writer holds the lock) while the gate is
        // engaged, its only slot taken and the reader's CPU shared: through
        // the gate it would go passive; it waits in `L` instead, and takes
        // no slot.
        let rw = Restricted::with_limit(PfTicket::<crate::wait::DefaultWait>::new(), 1);
        rw.engage();
        assert!(rw.try_admit(false), "the only slot");
        let w = rw.lock_exclusive();
        let read = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::wait::set_cpu_shared(true);
                let g = rw.lock_shared();
                read.store(true, Ordering::Relaxed);
                // SAFETY: our read.
                unsafe { rw.unlock_shared(g) };
            });
            let (mut passive, mut active) = (0, 0);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(30) {
                passive = passive.max(rw.passive_waiters());
                active = active.max(rw.gate().active());
                std::thread::sleep(Duration::from_millis(1));
            }
            let read_early = read.load(Ordering::Relaxed);
            // SAFETY: our write.
            unsafe { rw.unlock_exclusive(w) };
            assert_eq!(passive, 0, "a read went through the gate (passive)");
            assert_eq!(active, 1, "a read took a slot");
            assert!(!read_early, "the read passed the writer");
        });
        assert!(read.load(Ordering::Relaxed));
    }

    #[test]
    fn stress_at_1_2_8_and_64_threads() {
        let lock = Pft::INIT;
        testing::stress_1_2_8_and_downgrade(&lock);
        let mut cfg = testing::StressConfig::new(64);
        cfg.ops_per_thread = 2_000;
        testing::stress(&lock, &cfg);
        // Oversubscribed, with a limit of one and the gate engaged at the
        // start (a quiet streak may disengage it later).
        let lock = Restricted::with_limit(PfTicket::<crate::wait::DefaultWait>::new(), 1);
        lock.engage();
        assert!(lock.is_engaged());
        testing::stress(&lock, &cfg);
    }
}
