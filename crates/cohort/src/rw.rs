//! What the four reader-writer locks share (PPoPP'13 Section 3.5, "RW lock
//! generalization"): a writer mutex with an `is_locked` query, a read
//! indicator, a central barrier for impatient waiters, and three parking
//! places.
//!
//! # Waiting
//!
//! Every wait of the reader-writer protocols ("while X: Pause" in the
//! paper's figures) goes through [`Waiters`]: spin, yield, park. A thread
//! that changes what others wait for (a reader departing, a writer
//! releasing, a barrier lowered, `WActive` cleared) does so with a SeqCst
//! read-modify-write and then calls `wake_all`, which costs one load of a
//! read-mostly line unless somebody parked.
//!
//! Writers waiting for the read indicator to empty park in a place of their
//! own; everyone else (readers waiting for a writer or a barrier, RP and WP
//! readers watching the release count) parks in the other. A departing
//! reader wakes the writers' place. In C-RW-RP that is all it wakes
//! (`Parts::QUIET_DEPARTURES`): nothing in the other place waits for a
//! departure, and with one place for both every departure while a writer
//! was parked woke every parked reader, which parked again
//! (`docs/cohort.md`, "C-RW-RP past 16 threads"). The other locks'
//! departures also wake the other place, as the one place did. Nothing
//! there needs it either (their loom models pass without it), but in one
//! measurement without it C-RW-RP-opt's writers waited longer, for a
//! reason not established (`docs/cohort.md`, ibid.).
//!
//! C-RW-RP's readers held back by RBarrier park in a third place, which
//! only the lowering that brings the barrier down wakes (a lowering that
//! leaves it up changes nothing they wait for). With a CPU per thread it
//! wakes them all. Where the lowering writer's recent yields gave its CPU
//! away ([`rwlock_core::wait::cpu_shared_lately`]) it wakes only as many as
//! there are CPUs, at most [`DEFAULT_LIMIT_MAX`]
//! ([`Waiters::wake_some`]), and each reader that comes out of that wait
//! wakes one more: a relay, GCR's restriction (`rwlock_core::restricted`)
//! applied to a wake-up. Behind a barrier at 256 threads on 2 cores about
//! a hundred readers were parked; waking them all at each lowering made
//! them all runnable at once, most found the next writer's barrier up when
//! they ran, and the woken ones preempted readers that were arrived,
//! which every writer then waited for. C-RW-RP fell to 0.1 to 0.5 times its
//! 2-thread throughput there (`docs/cohort.md`, "C-RW-RP at 256 threads").
//! Every parked reader is still woken while the barrier stays down: each
//! woken reader that finds it down passes the wake on; one that finds it
//! raised again parks again, and the lowering of that barrier wakes more.
//! Without the relay the loom model `loom_tests_c_rw_rp_barrier_relay`
//! leaves a reader parked for ever (a deadlock).
//!
//! # Patience
//!
//! An RP writer or a WP reader that waits `patience` checks (one spin hint
//! each, a `yield` every 64) runs out of patience. An RP writer then raises
//! RBarrier; a WP reader raises WBarrier against a relay of writers only
//! (below). Either then waits without a limit (spin, yield, park). The
//! paper used 1000 busy-wait iterations ([`DEFAULT_PATIENCE`]).
//!
//! An RP writer keeps its patience across its retries (Fig. 4 keeps
//! `bRaised` across `goto start`; the count is kept the same way), and a
//! retry ends the current group of 64 checks, as a yield does: its round
//! trip through the writer mutex took about as long as 64 checks. Without
//! this, a writer whose readers drained for a moment, then arrived again
//! before it retook the mutex, started over at each retry: on 2 cores with
//! 15 readers a writer went through up to 200 such retries, 0.4 µs each,
//! before it raised RBarrier, and its p99 wait stayed near 100 µs
//! (`docs/cohort.md`, "An RP writer's patience across its retries"). A WP
//! reader counts its patience from zero at each retry (its WBarrier holds
//! writers back), until the first time it runs out.
//!
//! A WP reader raises WBarrier only against a relay of writers: once a
//! write acquisition was released after its patience first ran out (the
//! count in `WriterLine`, noted then) and the mutex is held again. Behind
//! one writer's long hold (a writer preempted inside, or draining a reader
//! preempted inside) the barrier would hold back only the writers after it,
//! and each raiser must run again to lower it: at 64 threads on 2 cores
//! that took a scheduling round, and C-RW-WP's writer p50 wait was 120 ms
//! (`docs/cohort.md`, "WBarrier against a relay only"). Such a reader
//! waits for the hold to end or for a relay to show. The noted count is
//! kept across the acquisition's retries: a reader that saw the hold end
//! but lost the mutex's next hold to a writer raises at once at its retry,
//! without counting its patience again. Otherwise a writer that released
//! and retook the mutex, hold after hold, could keep it waiting for ever.
//!
//! Patience is also bounded in time: at the first of its yields that comes
//! [`PATIENCE_TIME`] or more after its first yield, a waiter raises the
//! barrier, however few checks it made. A patience of `u32::MAX` never
//! raises it (the locks' `from_parts` takes that for measurements). The
//! paper's waiters spin on a CPU of their own, so 1000 checks are short
//! (1000 spin hints took 9.7 µs on an Intel Xeon VM, more where a spin hint
//! is longer). With more threads than cores each of the 15 yields can give
//! the CPU away for a whole time slice: at 16 threads on 2 cores an RP
//! writer's p99 wait was 140 to 176 ms with the count alone, 28 ms with the
//! bound (`docs/cohort.md`, "Patience bounded in time"). With a CPU per
//! thread a yield returns at once and the count usually runs out first, as
//! in the paper.
//!
//! An RP writer's patience ends sooner where threads outnumber cores. The
//! evidence is [`rwlock_core::wait::cpu_shared_lately`]: one of the
//! thread's last 64 measured yields (an RP writer measures each of its
//! patience's yields, and its other waits measure their first) gave the
//! CPU to another thread. With that evidence the writer makes
//! [`SHARED_CPU_PATIENCE`] (16) checks, not yielding, and raises RBarrier;
//! without it, its patience ends at its first yield that gives the CPU
//! away. Each such yield lets readers keep arriving for a time slice or
//! more; and the 64 checks before the first yield point, of an indicator
//! that the readers on the other CPUs keep writing, were most of a
//! writer's wait at 16 threads on 2 CPUs (p99 2.2 to 5.4 µs, 11 to 13
//! times parking_lot's; `docs/cohort.md`, "C-RW-RP's writer patience on a
//! shared CPU"). On a shared CPU the readers' preference over a waiting
//! writer thus lasts 16 checks of the indicator per acquisition (a retry
//! after a moment's drain checks once more, then raises).
//!
//! The reader-preference locks also wait with [`ParkWhenShared`]: on a shared CPU a waiter (the writer draining
//! readers, the readers held back by RBarrier or by the writer) parks after
//! its first yield instead of yielding seven more times, each of which
//! could put it behind every runnable thread; a parked waiter is woken when
//! what it waits for changes (`docs/cohort.md`, "An RP writer's patience
//! on a shared CPU"). WP readers keep the time bound alone: their WBarrier
//! holds writers back, the opposite of what a writer-preference lock
//! promises. The evidence outlives a burst of load: until 64 measured
//! yields have found the CPU free, an RP writer's patience stays 16 checks.

use std::time::{Duration, Instant};

use rwlock_core::restricted::DEFAULT_LIMIT_MAX;
use rwlock_core::sync::{AtomicU8, AtomicU32, Ordering, spin_loop, yield_now};
use rwlock_core::wait::{DefaultWait, ParkWhenShared, Waiters};
use rwlock_core::{CachePadded, Restricted};

use crate::cohort::{Cohort, CohortToken, GlobalLock, LocalLock};
use crate::indicator::ReadIndicator;
use crate::ticket::TicketLock;

/// The paper's reader and writer patience: 1000 checks before raising a
/// barrier.
pub const DEFAULT_PATIENCE: u32 = 1000;

/// How long after its first yield a waiter's patience lasts, whatever its
/// count of checks: it raises the barrier at its first yield this long or
/// longer after the first (module docs, "Patience"). Ten times what 1000
/// spin hints took on the development VM, which leaves room for the
/// checks' own loads and for yields that return at once, so that with a
/// CPU per thread the count usually runs out first.
pub const PATIENCE_TIME: Duration = Duration::from_micros(100);

/// An RP writer's patience where its CPU is shared
/// ([`rwlock_core::wait::cpu_shared_lately`]): this many checks of the
/// read indicator, then it raises RBarrier (module docs, "Patience"). With
/// 64, the first yield point, a writer among 15 readers on 2 CPUs waited a
/// p99 of 2.2 to 5.4 µs, 11 to 13 times parking_lot's; with 16, 1.0 to
/// 3.1 µs, and the readers' throughput did not move (`docs/cohort.md`,
/// "C-RW-RP's writer patience on a shared CPU").
pub const SHARED_CPU_PATIENCE: u32 = 16;

/// How many of C-RW-RP's readers parked behind RBarrier its lowering
/// wakes on a shared CPU: one per CPU the process may run on, at most
/// [`DEFAULT_LIMIT_MAX`] (the restriction gate's cap), one inside a loom
/// model; each passes the wake on (module docs, "Waiting").
#[inline]
fn relay_width() -> u32 {
    if cfg!(loom) {
        1
    } else {
        rwlock_core::wait::running_cpus().min(DEFAULT_LIMIT_MAX)
    }
}

/// Whether a patient waiter's next yield would give its CPU to another
/// thread for a time slice ([`rwlock_core::wait::cpu_shared_lately`]):
/// then its patience ends there (module docs, "Patience"). Never true
/// inside a loom model, where the count decides.
#[inline]
fn shares_cpu() -> bool {
    !cfg!(loom) && rwlock_core::wait::cpu_shared_lately()
}

/// Called by a patient waiter at each of its yields: notes the first, and
/// says whether [`PATIENCE_TIME`] has passed since it. Never true inside a
/// loom model, whose threads have no clock: there the count decides.
#[inline]
fn note_yield_out_of_time(first_yield: &mut Option<Instant>) -> bool {
    if cfg!(loom) {
        return false;
    }
    match first_yield {
        None => {
            *first_yield = Some(Instant::now());
            false
        }
        Some(t) => t.elapsed() >= PATIENCE_TIME,
    }
}

/// One acquisition's patience: the checks made, the first yield and
/// whether it ran out, kept across the retries of its loop, as Fig. 4
/// keeps `bRaised` across `goto start`. A writer whose readers drain for a moment, then arrive again
/// before it retakes the mutex, goes on counting where it stopped instead
/// of starting over (module docs, "Patience").
#[derive(Debug, Default)]
pub(crate) struct Patience {
    checks: u32,
    first_yield: Option<Instant>,
    /// Ran out: this waiter raised the barrier (Fig. 4's `bRaised`).
    pub(crate) raised: bool,
    /// A WP reader: the writer mutex's [`releases`](Parts::releases) count
    /// when this acquisition's patience first ran out (module docs,
    /// "Patience"); kept by [`for_retry`](Self::for_retry).
    relay_since: Option<u32>,
}

impl Patience {
    /// Whether a WP reader's patience ran out in this acquisition (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn ran_out(&self) -> bool {
        self.relay_since.is_some()
    }

    /// A WP reader's patience for its next retry: the count starts over,
    /// the release count noted when it first ran out is kept.
    fn for_retry(&self) -> Patience {
        Patience {
            relay_since: self.relay_since,
            ..Patience::default()
        }
    }

    /// Checks `ready()` until it holds (false) or this patience of `limit`
    /// checks runs out (true: the caller raises its barrier). One spin
    /// hint a check, a yield every 64; it also runs out at the first yield
    /// [`PATIENCE_TIME`] or more after the first, and, for an RP writer
    /// (`rp_writer`), at a yield that would give away a CPU other threads
    /// wait for; an RP writer whose CPU is shared already has a patience
    /// of [`SHARED_CPU_PATIENCE`] checks.
    ///
    /// A call after the first is a retry: the caller's round trip through
    /// the writer mutex, which let readers in, took about as long as 64
    /// checks (0.4 to 0.5 µs against 0.6 µs on the development VM), so it
    /// ends the current group of 64 as a yield would, and the next check
    /// is a yield point.
    fn run_out(&mut self, limit: u32, ready: impl FnMut() -> bool, rp_writer: bool) -> bool {
        self.run_out_as(limit, ready, rp_writer, rp_writer && shares_cpu())
    }

    /// [`run_out`](Self::run_out), told whether the waiter is an RP writer
    /// whose CPU is shared (`shared_rp_writer`): its patience is then
    /// [`SHARED_CPU_PATIENCE`] checks at most (module docs, "Patience").
    fn run_out_as(
        &mut self,
        limit: u32,
        mut ready: impl FnMut() -> bool,
        rp_writer: bool,
        shared_rp_writer: bool,
    ) -> bool {
        let limit = if shared_rp_writer {
            limit.min(SHARED_CPU_PATIENCE)
        } else {
            limit
        };
        if self.checks != 0 {
            self.checks = (self.checks | 63).min(limit.saturating_sub(1));
        }
        while self.checks < limit {
            if ready() {
                return false;
            }
            self.checks += 1;
            spin_loop();
            if self.checks.is_multiple_of(64) {
                if self.checks == 64 {
                    // Outlasted spinning (see `Restricted`).
                    rwlock_core::wait::note_deep_wait();
                }
                if note_yield_out_of_time(&mut self.first_yield) || (rp_writer && shares_cpu()) {
                    break;
                }
                // More threads than cores is normal: let the thread we wait
                // for run (an RP writer's yields are measured: the
                // evidence `shares_cpu` reads).
                if rp_writer {
                    rwlock_core::wait::yield_measured();
                } else {
                    yield_now();
                }
            }
        }
        let out = !ready();
        if out && shared_rp_writer {
            // Outlasted its spin, short as it was: it raises RBarrier and
            // waits (see `Restricted`).
            rwlock_core::wait::note_deep_wait();
        }
        out
    }
}

/// Who waits patiently, and for what.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Impatient {
    /// A reader-preference writer, for the readers to drain; it raises
    /// RBarrier.
    RpWriter,
    /// A writer-preference reader, for the writer mutex to be free; it
    /// raises WBarrier, but only against a relay: a write acquisition
    /// released after its patience first ran out (the mutex's
    /// [`releases`](Parts::releases) count moved) and the mutex held again
    /// (module docs, "Patience").
    WpReader,
}

/// The mutex that orders writers in a reader-writer lock: a cohort lock, or
/// a plain lock for the DR-MCS control.
///
/// # Safety
///
/// A mutual exclusion lock with Acquire/Release semantics whose acquisition
/// includes a SeqCst read-modify-write that makes `is_locked` (SeqCst loads)
/// true until the release, and whose release is a SeqCst read-modify-write.
pub unsafe trait WriterMutex: Send + Sync {
    /// An unlocked mutex (unusable inside a loom model: use
    /// [`create`](Self::create)).
    const INIT: Self;
    /// What an acquisition carries to its release.
    type Guard;
    /// An unlocked mutex with `nodes` per-node parts (0: the topology's
    /// node count); mutexes without per-node parts ignore it.
    fn create(nodes: usize) -> Self;
    /// Acquires, queueing on `node`'s part where there is one.
    fn lock_on(&self, node: usize) -> Self::Guard;
    /// Acquires if free.
    fn try_lock_on(&self, node: usize) -> Option<Self::Guard>;
    /// Releases.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased acquisition of this mutex.
    unsafe fn unlock(&self, guard: Self::Guard);
    /// Held, or requested by a queued writer: a pure read.
    fn is_locked(&self) -> bool;
    /// Heap bytes taken once allocated.
    fn heap_bytes(&self) -> usize;
}

// SAFETY: a cohort is a mutex; its global lock's acquisition and release are
// SeqCst RMWs (`GlobalLock`'s contract), and a local hand-off keeps it held.
// With a single node the local lock stands in for the global one, with the
// same properties (`LocalLock`'s contract).
unsafe impl<G: GlobalLock, L: LocalLock> WriterMutex for Cohort<G, L> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Cohort::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use create()");

    type Guard = CohortToken;

    fn create(nodes: usize) -> Self {
        Cohort::with_config(nodes, crate::cohort::DEFAULT_HANDOFF_BOUND)
    }
    #[inline]
    fn lock_on(&self, node: usize) -> CohortToken {
        Cohort::lock_on(self, node)
    }
    #[inline]
    fn try_lock_on(&self, node: usize) -> Option<CohortToken> {
        Cohort::try_lock_on(self, node)
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
    fn heap_bytes(&self) -> usize {
        Cohort::heap_bytes(self)
    }
}

// SAFETY: every acquisition and release is `M`'s (the gate only delays a
// thread before it calls `M::lock_on`), so `M`'s contract holds.
unsafe impl<M: WriterMutex> WriterMutex for Restricted<M> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Restricted::new(M::INIT);
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use create()");

    type Guard = M::Guard;

    fn create(nodes: usize) -> Self {
        Restricted::new(M::create(nodes))
    }
    // `inline(always)`: see `Restricted::acquire`.
    #[inline(always)]
    fn lock_on(&self, node: usize) -> M::Guard {
        self.acquire(|m| m.try_lock_on(node), |m| m.lock_on(node))
    }
    #[inline]
    fn try_lock_on(&self, node: usize) -> Option<M::Guard> {
        self.inner().try_lock_on(node)
    }
    #[inline]
    unsafe fn unlock(&self, guard: M::Guard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner().unlock(guard) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        self.inner().is_locked()
    }
    fn heap_bytes(&self) -> usize {
        self.inner().heap_bytes()
    }
}

/// A ticket lock's acquisition: its ticket.
#[derive(Debug)]
pub struct Ticket(u64);

// SAFETY: a ticket lock: SeqCst `fetch_add` to acquire, SeqCst swap to release.
unsafe impl WriterMutex for TicketLock {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = TicketLock::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use create()");

    type Guard = Ticket;

    fn create(_nodes: usize) -> Self {
        TicketLock::new()
    }
    #[inline]
    fn lock_on(&self, _node: usize) -> Ticket {
        Ticket(self.acquire())
    }
    #[inline]
    fn try_lock_on(&self, _node: usize) -> Option<Ticket> {
        self.try_acquire().map(Ticket)
    }
    #[inline]
    unsafe fn unlock(&self, guard: Ticket) {
        // SAFETY: forwarded from the caller.
        unsafe { self.release(guard.0) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        TicketLock::is_locked(self)
    }
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// What a read acquisition carries to its release: the read-indicator slot
/// it arrived at (its node when it arrived), so that it departs from there
/// even if the thread migrated.
///
/// `Send`: departing is an atomic update any thread may make.
#[derive(Debug)]
pub struct ReaderToken {
    slot: usize,
}

impl ReaderToken {
    /// The read-indicator slot this reader arrived at.
    pub fn slot(&self) -> usize {
        self.slot
    }
}

/// The central barrier and the two parking places, on one read-mostly line.
#[derive(Debug)]
struct Gate {
    /// RBarrier (reader-preference locks) or WBarrier (writer preference):
    /// how many impatient waiters hold the other side back.
    barrier: AtomicU32,
    /// Threads waiting for the writer side: the writer mutex released, a
    /// barrier lowered, `WActive` cleared, the release count moved.
    waiters: Waiters,
    /// Writers waiting for the read indicator to empty; woken by departing
    /// readers alone (module docs, "Waiting").
    drained: Waiters,
    /// C-RW-RP's readers held back by RBarrier; woken when it comes down,
    /// all of them or, on a shared CPU, a relay (module docs, "Waiting").
    barred: Waiters,
}

/// No writer is past the writer mutex (`WriterLine::state`).
pub(crate) const IDLE: u8 = 0;
/// C-RW-RP-opt only: the writer set `WActive` and is re-checking the
/// readers (its consensus is not done).
pub(crate) const ACTIVATING: u8 = 1;
/// A writer finished its consensus: it is inside.
pub(crate) const INSIDE: u8 = 2;

/// What the holder of the writer mutex publishes. Written only by that
/// holder; on a line of its own, so that writers never write a line the
/// other locks' readers read on their fast path.
#[derive(Debug)]
pub(crate) struct WriterLine {
    /// `IDLE`, `ACTIVATING` or `INSIDE`: what the holder is doing. Read by
    /// `is_locked_exclusive` and, in C-RW-RP-opt, by readers (it is the
    /// paper's `WActive`: not `IDLE`).
    pub(crate) state: AtomicU8,
    /// C-RW-WP and C-RW-RP: how many times the writer mutex was released
    /// (wrapping; [`Parts::count_release`] says which releases count), read
    /// by waiting readers to tell one writer's long hold from a relay of
    /// writers ([`Impatient::WpReader`]), or, in C-RW-RP, by a departed
    /// reader to see the hold it met end.
    releases: AtomicU32,
}

/// The parts every reader-writer lock of this crate is made of.
///
/// `QUIET_DEPARTURES`: a departing reader wakes only the writers parked for
/// the indicator to empty (C-RW-RP), not also everyone parked in the other
/// place (the other locks; module docs, "Waiting").
#[derive(Debug)]
pub(crate) struct Parts<M, I, const QUIET_DEPARTURES: bool = false> {
    pub(crate) writer: M,
    pub(crate) readers: I,
    gate: CachePadded<Gate>,
    pub(crate) writer_line: CachePadded<WriterLine>,
    patience: u32,
}

impl<M: WriterMutex, I: ReadIndicator, const QUIET_DEPARTURES: bool> Parts<M, I, QUIET_DEPARTURES> {
    rwlock_core::loom_const_fn! {
        pub(crate) fn new(writer: M, readers: I, patience: u32) -> Self {
            Parts {
                writer,
                readers,
                gate: CachePadded::new(Gate {
                    barrier: AtomicU32::new(0),
                    waiters: Waiters::new(),
                    drained: Waiters::new(),
                    barred: Waiters::new(),
                }),
                writer_line: CachePadded::new(WriterLine {
                    state: AtomicU8::new(IDLE),
                    releases: AtomicU32::new(0),
                }),
                patience,
            }
        }
    }

    /// Parts for `nodes` nodes (0: the topology's) and the default patience.
    pub(crate) fn create(nodes: usize) -> Self {
        Self::new(M::create(nodes), I::with_nodes(nodes), DEFAULT_PATIENCE)
    }

    pub(crate) fn patience(&self) -> u32 {
        self.patience
    }

    /// Arrives at the read indicator. The caller then checks the writer
    /// side: the reader's half of a Dekker pair.
    #[inline]
    pub(crate) fn arrive(&self, node: usize) -> ReaderToken {
        let slot = self.readers.arrive(node);
        dekker_fence();
        ReaderToken { slot }
    }

    /// Departs from the slot `token` arrived at and wakes parked writers.
    ///
    /// # Safety
    ///
    /// `token` must be an arrival at this lock not yet departed.
    #[inline]
    pub(crate) unsafe fn depart(&self, token: ReaderToken) {
        // SAFETY: forwarded from the caller.
        unsafe { self.readers.depart(token.slot) };
        // The departure was a SeqCst RMW (ReadIndicator's contract). Only
        // writers wait for the indicator to empty; the other place too,
        // unless departures are quiet (module docs, "Waiting").
        self.gate.drained.wake_all();
        if !QUIET_DEPARTURES {
            self.gate.waiters.wake_all();
        }
    }

    /// The writer holding the mutex finished its consensus: from now until
    /// [`leave`](Self::leave), `is_locked_exclusive` says so.
    #[inline]
    pub(crate) fn enter(&self) {
        // Relaxed: only `is_locked_exclusive` (a snapshot) reads it, and the
        // writer's own thread sees its store in program order.
        self.writer_line.state.store(INSIDE, Ordering::Relaxed);
    }

    /// The writer is about to release the mutex (or downgrade). Call it
    /// before the release, whose SeqCst read-modify-write orders it.
    #[inline]
    pub(crate) fn leave(&self) {
        // Relaxed: see `enter`; the next writer acquires the mutex after
        // our release, so it is ordered after this store.
        self.writer_line.state.store(IDLE, Ordering::Relaxed);
    }

    /// C-RW-WP and C-RW-RP: counts a release of the writer mutex
    /// ([`releases`](Self::releases)): in C-RW-WP by a writer that was
    /// inside, in C-RW-RP also by one that backs off from readers. The
    /// holder calls it before the release, as [`leave`](Self::leave).
    #[inline]
    pub(crate) fn count_release(&self) {
        // Relaxed load and store: only the holder of the writer mutex
        // writes the count, and the mutex orders its holders. Readers only
        // read it to decide whether to raise WBarrier, or (a departed RP
        // reader) when to arrive again and check the mutex: liveness
        // choices; a stale value delays or hastens them, never an
        // exclusion.
        //
        // A WP reader (and a departed RP reader) parks on the count
        // (`wait_patiently`, `ReaderPref::lock_shared_slow`), and `Waiters`
        // asks for a SeqCst read-modify-write as the state change before
        // `wake_all`. Here that RMW is the mutex's release, which follows
        // this store in program order; for a cohort's local hand-off it is
        // the local lock's, and the global lock a reader checks does not
        // change. On x86-64 the release's locked instruction drains this
        // store first, so a reader that parks has seen it or is woken. The
        // language's memory model alone does not promise that: a reader
        // could read the old count and park unseen. The next release's
        // `wake_all` then wakes it. That is a raise (or an RP reader's new
        // arrival) one hold late, never a reader left parked while writers
        // come and go. A SeqCst store
        // here would close it at the cost of a locked instruction on every
        // write release.
        let n = self.writer_line.releases.load(Ordering::Relaxed);
        self.writer_line
            .releases
            .store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// C-RW-WP and C-RW-RP: the count of releases (a snapshot; see
    /// [`count_release`](Self::count_release)).
    #[inline]
    pub(crate) fn releases(&self) -> u32 {
        // Relaxed: see `count_release`.
        self.writer_line.releases.load(Ordering::Relaxed)
    }

    /// A writer is inside: exact from the writer's own thread, a snapshot
    /// from any other.
    #[inline]
    pub(crate) fn writer_inside(&self) -> bool {
        // Relaxed: a snapshot (see `enter`).
        self.writer_line.state.load(Ordering::Relaxed) == INSIDE
    }

    /// Releases the writer mutex and wakes threads parked on this lock.
    ///
    /// # Safety
    ///
    /// `guard` must be an unreleased acquisition of `writer`.
    #[inline]
    pub(crate) unsafe fn release_writer(&self, guard: M::Guard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.writer.unlock(guard) };
        // The release was a SeqCst RMW (WriterMutex's contract).
        self.gate.waiters.wake_all();
    }

    /// Wakes threads parked on this lock after a SeqCst RMW the caller made.
    #[inline]
    pub(crate) fn wake(&self) {
        self.gate.waiters.wake_all();
    }

    /// Waits (spin, yield, park) until `ready()`, as the reader-preference
    /// locks do: parking after one yield on a shared CPU
    /// ([`ParkWhenShared`]; module docs, "Patience").
    #[inline]
    pub(crate) fn wait_until_rp(&self, ready: impl FnMut() -> bool) {
        self.gate.waiters.wait_until::<ParkWhenShared>(ready);
    }

    /// [`wait_until_rp`](Self::wait_until_rp) for a waiter that holds a
    /// claim others may wait on (an arrived RP reader): where the wait
    /// would leave a CPU that other threads wait for, it calls `retreat`
    /// once, then goes on waiting ([`Waiters::wait_until_or_retreat`]).
    #[inline]
    pub(crate) fn wait_until_rp_or_retreat(
        &self,
        ready: impl FnMut() -> bool,
        retreat: impl FnMut(),
    ) {
        self.gate
            .waiters
            .wait_until_or_retreat::<ParkWhenShared>(ready, retreat);
    }

    /// C-RW-RP: a reader's wait for RBarrier to come down, in the place
    /// of its own, as the reader-preference locks wait
    /// ([`ParkWhenShared`]); then it passes the wake-up on to one more
    /// reader parked there, if any (module docs, "Waiting").
    #[inline]
    pub(crate) fn wait_barrier_down_rp(&self) {
        self.gate
            .barred
            .wait_until::<ParkWhenShared>(|| self.barrier_down());
        // No state change of ours: the barrier came down before `ready`
        // saw it. `wake_some`'s SeqCst load of the count pairs with a
        // later waiter's SeqCst increment and fence: either we see it
        // registered and wake it, or its re-check sees the barrier as we
        // did (or raised again: then the raiser's lowering wakes it).
        self.gate.barred.wake_some(1);
    }

    /// Waits (spin, yield, park) until `ready()`.
    #[inline]
    pub(crate) fn wait_until(&self, ready: impl FnMut() -> bool) {
        self.gate.waiters.wait_until::<DefaultWait>(ready);
    }

    /// Waits until the read indicator is empty (the writers of C-RW-NP and
    /// C-RW-WP).
    #[inline]
    pub(crate) fn wait_drained(&self) {
        self.gate
            .drained
            .wait_until::<DefaultWait>(|| self.readers.is_empty());
    }

    /// [`wait_drained`](Self::wait_drained) as the reader-preference
    /// writers wait ([`ParkWhenShared`]).
    #[inline]
    pub(crate) fn wait_drained_rp(&self) {
        self.gate
            .drained
            .wait_until::<ParkWhenShared>(|| self.readers.is_empty());
    }

    /// An RP writer's wait for the readers to drain (Fig. 4 lines 15-20):
    /// patient until `patience` runs out, which raises RBarrier (the
    /// caller lowers it once inside if `patience.raised`), then without a
    /// limit.
    #[inline]
    pub(crate) fn wait_drained_patiently(&self, patience: &mut Patience) {
        if patience.raised {
            self.wait_drained_rp();
        } else {
            patience.raised = self.wait_patiently(patience, Impatient::RpWriter);
        }
    }

    /// A WP reader's wait at each try of one acquisition, with the
    /// acquisition's `patience`: [`wait_patiently`](Self::wait_patiently)
    /// with the check count started over and the release count noted when
    /// the patience first ran out kept (module docs, "Patience").
    pub(crate) fn wait_as_wp_reader(&self, patience: &mut Patience) -> bool {
        *patience = patience.for_retry();
        self.wait_patiently(patience, Impatient::WpReader)
    }

    /// Waits until what `who` waits for (the readers drained, or the writer
    /// gone), with a patience that runs out once `patience` checks have
    /// failed or at a yield [`PATIENCE_TIME`] or more after the first
    /// (never with `u32::MAX`); returns whether it raised its barrier (the
    /// caller lowers it). An RP writer raises RBarrier when its patience
    /// runs out. A WP reader raises WBarrier against a relay only: after
    /// its patience first ran out in this acquisition (`patience` carries
    /// the release count it noted then), once the count has moved and the
    /// mutex is held; it returns `false` if the mutex falls free first.
    /// `patience` carries the count across the caller's retries (a WP
    /// reader calls it through [`wait_as_wp_reader`](Self::wait_as_wp_reader)).
    ///
    /// An RP writer's patience also ends where the next yield would give
    /// away a CPU that other threads wait for (module docs, "Patience").
    pub(crate) fn wait_patiently(&self, patience: &mut Patience, who: Impatient) -> bool {
        let ready = || match who {
            Impatient::RpWriter => self.readers.is_empty(),
            Impatient::WpReader => !self.writer.is_locked(),
        };
        let wait = || match who {
            Impatient::RpWriter => self.wait_drained_rp(),
            Impatient::WpReader => self.wait_until(|| !self.writer.is_locked()),
        };
        let rp_writer = matches!(who, Impatient::RpWriter);
        if self.patience == u32::MAX {
            // No barrier, ever (measurements).
            wait();
            return false;
        }
        let wp_reader = matches!(who, Impatient::WpReader);
        // A WP reader whose patience already ran out in this acquisition
        // does not count it again (module docs, "Patience").
        let ran_out = wp_reader && patience.relay_since.is_some();
        if !ran_out && !patience.run_out(self.patience, ready, rp_writer) {
            return false;
        }
        if wp_reader {
            // Raise only against a relay: WBarrier would hold back only the
            // writers after the one inside, and each raiser must run again
            // to lower it. Wait for this hold to end, or for a relay to
            // show (a release since the patience first ran out, and the
            // mutex held again).
            let since = *patience.relay_since.get_or_insert_with(|| self.releases());
            self.wait_until(|| !self.writer.is_locked() || self.releases() != since);
            if !self.writer.is_locked() {
                return false;
            }
        }
        self.raise_barrier();
        wait();
        true
    }

    /// Whether no impatient waiter holds the barrier up.
    #[inline]
    pub(crate) fn barrier_down(&self) -> bool {
        // SeqCst: ordered with the impatient waiter's SeqCst increment, so a
        // thread that checks after the increment in the SeqCst order holds
        // back.
        self.gate.barrier.load(Ordering::SeqCst) == 0
    }

    fn raise_barrier(&self) {
        // SeqCst RMW: see `barrier_down`.
        self.gate.barrier.fetch_add(1, Ordering::SeqCst);
    }

    /// Lowers a barrier this thread raised, and wakes those it held back.
    /// C-RW-RP's readers (`barred`) wait for the barrier to be down, so
    /// only the last lowering wakes them: all of them, or, where this
    /// thread's recent yields gave its CPU away, as many as there are CPUs
    /// (at most [`DEFAULT_LIMIT_MAX`]; one inside a loom model), each of
    /// which wakes one more once past the barrier (module docs, "Waiting").
    pub(crate) fn lower_barrier(&self) {
        // SeqCst RMW: the parking protocol's state change.
        let before = self.gate.barrier.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0);
        self.gate.waiters.wake_all();
        if before == 1 {
            if rwlock_core::wait::cpu_shared_lately() {
                self.gate.barred.wake_some(relay_width());
            } else {
                self.gate.barred.wake_all();
            }
        }
    }

    /// Takes the writer mutex if it is free and no reader is inside (the
    /// try-write of every lock but RP-opt, which also sets `WActive`).
    #[inline]
    pub(crate) fn try_write_alone(&self, node: usize) -> Option<M::Guard> {
        let guard = self.writer.try_lock_on(node)?;
        dekker_fence();
        if !self.readers.is_empty() {
            // SAFETY: our own acquisition.
            unsafe { self.release_writer(guard) };
            return None;
        }
        self.enter();
        Some(guard)
    }

    /// Turns a write acquisition into a read acquisition: arrive, then
    /// release the writer mutex (no writer can enter in between).
    ///
    /// # Safety
    ///
    /// `guard` must be an unreleased acquisition of `writer`.
    #[inline]
    pub(crate) unsafe fn downgrade(&self, guard: M::Guard) -> ReaderToken {
        self.leave();
        let token = self.arrive(crate::nodes::current());
        // SAFETY: forwarded from the caller.
        unsafe { self.release_writer(guard) };
        token
    }

    /// Anybody holds or requested the lock: a pure read.
    pub(crate) fn is_locked(&self) -> bool {
        self.writer.is_locked() || !self.readers.is_empty()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.writer.heap_bytes() + self.readers.heap_bytes()
    }
}

/// Store-load ordering between "publish myself" and "look at the other
/// side". The real build gets it from the SeqCst read-modify-write and the
/// SeqCst loads around this point (C++20: both in the single SeqCst order);
/// loom models SeqCst loads as Acquire, so a model needs the explicit fence.
#[inline(always)]
pub(crate) fn dekker_fence() {
    #[cfg(loom)]
    rwlock_core::sync::fence(Ordering::SeqCst);
}

/// Implements `lock_api::RawRwLock` and `RawRwLockDowngrade` for a lock of
/// this crate from its inherent `*_on` methods.
macro_rules! impl_raw_rwlock {
    ($name:ident { $($field:ident: $init:expr),* }) => {
        impl<M: $crate::rw::WriterMutex, I: $crate::indicator::ReadIndicator> $name<M, I> {
            /// An unlocked lock: the writer mutex's and the read indicator's
            /// defaults (per-node parts for every node of the global
            /// topology, allocated on first use) and the paper's patience.
            #[cfg(not(loom))]
            pub const fn new() -> Self {
                Self::from_parts(M::INIT, I::INIT, $crate::rw::DEFAULT_PATIENCE)
            }

            /// An unlocked lock (loom build: not `const`).
            #[cfg(loom)]
            pub fn new() -> Self {
                Self::with_nodes(0)
            }

            /// An unlocked lock with `nodes` per-node parts (0: one per node
            /// of the global topology); threads of node `k` use part
            /// `k % nodes`.
            ///
            /// # Panics
            ///
            /// If `nodes` is above `rwlock_core::topology::MAX_NODES` (65536).
            pub fn with_nodes(nodes: usize) -> Self {
                let parts = $crate::rw::Parts::create(nodes);
                $name { parts, $($field: $init),* }
            }

            rwlock_core::loom_const_fn! {
                /// A lock from its parts: any writer mutex (a cohort with
                /// another hand-off bound, a ticket lock), any read
                /// indicator, and the patience in checks before a barrier
                /// goes up (0: at once; `u32::MAX`: never); whatever the
                /// count, a waiter also raises it at its first yield
                /// [`PATIENCE_TIME`] or more after its first.
                ///
                /// [`PATIENCE_TIME`]: crate::PATIENCE_TIME
                pub fn from_parts(writer: M, readers: I, patience: u32) -> Self {
                    $name {
                        parts: $crate::rw::Parts::new(writer, readers, patience),
                        $($field: $init),*
                    }
                }
            }

            /// The number of read-indicator slots (1 for a central
            /// counter, else the node count). The writer mutex and the
            /// indicator themselves are not exposed: acquiring or releasing
            /// them directly would skip the wake-ups this lock's waiters
            /// depend on.
            pub fn reader_slots(&self) -> usize {
                self.parts.readers.slots()
            }

            /// Bytes on the heap once the per-node parts are allocated
            /// (plus `size_of::<Self>()` inline).
            pub fn heap_bytes(&self) -> usize {
                self.parts.heap_bytes()
            }

            /// The patience (checks before raising a barrier).
            pub fn patience(&self) -> u32 {
                self.parts.patience()
            }

            /// Releases a read acquisition.
            ///
            /// # Safety
            ///
            /// `token` must come from an unreleased read acquisition of
            /// this lock.
            #[inline]
            pub unsafe fn unlock_shared_token(&self, token: $crate::rw::ReaderToken) {
                // SAFETY: forwarded from the caller.
                unsafe { self.parts.depart(token) }
            }
        }

        #[cfg(not(loom))]
        impl<M: $crate::rw::WriterMutex, I: $crate::indicator::ReadIndicator> Default
            for $name<M, I>
        {
            fn default() -> Self {
                Self::new()
            }
        }

        // SAFETY: the protocol in the module docs: no writer beside anybody
        // (checked by the stress tests and the loom models).
        unsafe impl<M: $crate::rw::WriterMutex, I: $crate::indicator::ReadIndicator>
            lock_api::RawRwLock for $name<M, I>
        {
            #[cfg(not(loom))]
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = Self::new();
            #[cfg(loom)]
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self =
                panic!("loom atomics have no const constructor: use with_nodes()");

            type SharedGuard = $crate::rw::ReaderToken;
            type ExclusiveGuard = M::Guard;

            #[inline]
            fn lock_shared(&self) -> Self::SharedGuard {
                self.lock_shared_on($crate::nodes::current())
            }

            #[inline]
            fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
                self.try_lock_shared_on($crate::nodes::current())
            }

            #[inline]
            unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
                // SAFETY: forwarded from the caller.
                unsafe { self.parts.depart(guard) }
            }

            #[inline]
            fn lock_exclusive(&self) -> Self::ExclusiveGuard {
                self.lock_exclusive_on($crate::nodes::current())
            }

            #[inline]
            fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
                self.try_lock_exclusive_on($crate::nodes::current())
            }

            #[inline]
            unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
                // SAFETY: forwarded from the caller.
                unsafe { self.unlock_exclusive_guard(guard) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.parts.is_locked()
            }

            /// True from the moment a writer is past its consensus with
            /// the readers until it releases: exact on the writer's own
            /// thread (a `debug_assert!` in a write section holds), a
            /// snapshot elsewhere. Readers waiting or retrying meanwhile
            /// do not change the answer.
            #[inline]
            fn is_locked_exclusive(&self) -> bool {
                self.parts.writer_inside()
            }
        }

        // SAFETY: `downgrade_guard` arrives as a reader before it releases
        // the writer mutex, so no writer can slip in between.
        unsafe impl<M: $crate::rw::WriterMutex, I: $crate::indicator::ReadIndicator>
            lock_api::RawRwLockDowngrade for $name<M, I>
        {
            #[inline]
            unsafe fn downgrade(&self, guard: Self::ExclusiveGuard) -> Self::SharedGuard {
                // SAFETY: forwarded from the caller.
                unsafe { self.downgrade_guard(guard) }
            }
        }

        impl<M, I> core::fmt::Debug for $name<M, I>
        where
            M: $crate::rw::WriterMutex + core::fmt::Debug,
            I: $crate::indicator::ReadIndicator + core::fmt::Debug,
        {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("parts", &self.parts)
                    .finish_non_exhaustive()
            }
        }
    };
}

pub(crate) use impl_raw_rwlock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Readers that drain for a moment between a writer's retries (here:
    /// `ready` holds at every third check, and the writer then "finds them
    /// back" and retries) must not reset its patience: it runs out within
    /// about `DEFAULT_PATIENCE / 64` retries. Starting over at each retry
    /// never runs out here (fewer than 64 checks a call), and counting
    /// on without ending the group of 64 takes about 500 retries.
    #[test]
    fn patience_runs_out_across_retries() {
        for rp_writer in [false, true] {
            let mut patience = Patience::default();
            let mut n = 0u32;
            let mut retries = 0u32;
            while !patience.run_out(
                DEFAULT_PATIENCE,
                || {
                    n += 1;
                    n.is_multiple_of(3)
                },
                rp_writer,
            ) {
                retries += 1;
                assert!(
                    retries <= DEFAULT_PATIENCE / 64 + 1,
                    "patience did not run out within {retries} retries (rp_writer: {rp_writer})"
                );
            }
        }
    }

    /// An RP writer whose CPU is shared raises its barrier after
    /// `SHARED_CPU_PATIENCE` checks, and a retry of it after one or two
    /// more; with a CPU of its own it checks at least until its first
    /// yield point (64 checks; `docs/cohort.md`, "C-RW-RP's writer
    /// patience on a shared CPU").
    #[test]
    fn a_shared_cpu_shortens_an_rp_writers_patience() {
        // One call of an RP writer's patience whose readers drain at the
        // `drain_at`-th check (never: `None`): whether it ran out, and
        // after how many checks.
        let call = |patience: &mut Patience, shared: bool, drain_at: Option<u32>| {
            let mut n = 0u32;
            let out = patience.run_out_as(
                DEFAULT_PATIENCE,
                || {
                    n += 1;
                    Some(n) == drain_at
                },
                true,
                shared,
            );
            (out, n)
        };
        let (out, shared) = call(&mut Patience::default(), true, None);
        assert!(
            out && (SHARED_CPU_PATIENCE..=SHARED_CPU_PATIENCE + 1).contains(&shared),
            "{shared} checks on a shared CPU"
        );
        let (out, own) = call(&mut Patience::default(), false, None);
        assert!(out && own > 64, "{own} checks with a CPU of its own");

        // A retry after the readers drained for a moment.
        let mut patience = Patience::default();
        assert!(!call(&mut patience, true, Some(3)).0);
        let (out, retry) = call(&mut patience, true, None);
        assert!(
            out && retry <= 2,
            "{retry} checks at a retry on a shared CPU"
        );
    }

    /// A patience that ran out on its last check still runs out at the
    /// next call (no check past the limit is ever needed).
    #[test]
    fn a_spent_patience_runs_out_at_once() {
        let mut patience = Patience {
            checks: DEFAULT_PATIENCE,
            ..Patience::default()
        };
        let mut calls = 0;
        assert!(patience.run_out(
            DEFAULT_PATIENCE,
            || {
                calls += 1;
                false
            },
            false
        ));
        assert!(calls <= 2, "{calls} checks");
    }
}
