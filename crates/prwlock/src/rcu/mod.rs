//! FCP-RCU: read-copy update on prwlock's version consensus (Liu, Zhang &
//! Chen, FCP, IEEE TPDS; Section 5.1, Figures 7 and 8; user level in 5.2).
//!
//! Readers mark their thread's status record *in flight* with one store and
//! leave it with one store and one load: no atomic read-modify-write and no
//! fence. [`RcuDomain::synchronize`] advances the domain's version, takes
//! the readers' reports, asks the stragglers with the heavy barrier
//! (`membarrier`, or the kernel helper's targeted IPIs), then waits only for
//! the sections that began before its version: it finishes in microseconds
//! instead of waiting for every CPU to pass a context switch. On top of it:
//! [`RcuDomain::defer`] (reclamation in batches, [`defer`]) and
//! [`RcuCell`], a pointer cell in `arc_swap::ArcSwap`'s shape.
//!
//! ```
//! use std::sync::Arc;
//! use prwlock::rcu::RcuCell;
//!
//! let config = RcuCell::from_pointee(vec!["listen 80"]);
//! assert_eq!(config.load().len(), 1); // a guard that derefs to the Vec
//! config.rcu(|old| {
//!     let mut new = Vec::clone(old);
//!     new.push("listen 443");
//!     new
//! });
//! assert_eq!(*config.load(), ["listen 80", "listen 443"]);
//! let old: Arc<Vec<&str>> = config.swap(Arc::new(vec![]));
//! assert_eq!(old.len(), 2);
//! ```
//!
//! # State
//!
//! Per domain, `state` (one word, written by synchronizers, and by a
//! reader only to set the sticky `FENCED` flag, `mark_fenced`):
//!
//! | bits  | name      | meaning                                                        |
//! |-------|-----------|----------------------------------------------------------------|
//! | 0     | `PARKED`  | a synchronizer waits (and may sleep) for readers: releases wake it |
//! | 1     | `FENCED`  | sticky: the process runs in `Fence` mode; releases run a fence |
//! | 2..60 | version   | consensus rounds started, times 4 (`STEP`); slot words keep bit 61 for `HOLD`, so it wraps after 2^59 rounds (centuries) |
//!
//! Per thread and domain, slot 0 of its status record (`domain::Record`,
//! the layout the kernel helper reads):
//!
//! ```text
//! FREE | v    not in a section; v: the last version the thread reported
//! HOLD | v    in a section that began after the thread reported v
//! ```
//!
//! # Readers (Fig. 7 `RCUReadLock`, `RCUReadUnlock`)
//!
//! ```text
//! lock:   w <- slot; if w is HOLD: nested section (or no record), slow path
//!         slot <- HOLD | v(w)                      (st.reader <- INFLIGHT)
//!         light barrier                            (compiler fence: "barrier on non-TSO")
//! unlock: if NESTED_LIVE in the record's context: slow path
//!         slot <- FREE | v(w)                      (lines 2-3)
//!         light barrier                            (line 6)
//!         s <- state                               (line 8)
//!         if s != v(w) (a new version, PARKED or FENCED), slow path:
//!             FENCED: a real fence, s <- state again
//!             version newer: slot <- FREE | s      (lines 9-10: the report)
//!             PARKED: wake the synchronizer
//! ```
//!
//! Each test above is one conditional branch, and the fast path has no
//! other: a thread without a cached record for the domain gets a sentinel
//! record (`domain::rcu_no_record`) by a select, whose slot is never free,
//! so the nesting test sends it to the slow path; the second guard of a
//! section sets `NESTED_LIVE` in the record's context word (the domain's
//! address, which the release loads anyway) and the section's end clears
//! it, so every guard of a nested section, and a section counted in
//! `active` (whose guards name the sentinel, whose context has the flag),
//! leaves through the slow path, where the nesting depth is counted. On a
//! Zen 5 core the read pair went from 0.79-0.80 to 0.73-0.74 ns with two
//! branches fewer (`docs/rcu.md`, "Fewer branches").
//!
//! The paper's unlock has a second branch (line 5: a reader preempted in
//! its section was converted to an active one by the kernel, and leaves
//! through `rcu.active`). A user-level reader is never converted: a
//! synchronizer waits for a descheduled or blocked reader's own release,
//! sleeping (see below) rather than polling, which is what the conversion
//! buys in the paper, and it waits for nobody who started later (a
//! shared active counter would make it wait for every reader converted
//! meanwhile). Only a read that finds no record (the thread's
//! thread-locals are being destroyed) uses `active`.
//!
//! # Synchronize (Fig. 8 `SynchronizeRCU`)
//!
//! ```text
//! leader: v <- state += STEP; SeqCst fence                    (line 1)
//!         phase 1: every live record reported v (FREE|v' or HOLD|v', v' >= v),
//!                  or the helper saw its owner off CPU? then no barrier,
//!                  else (after a ~1 µs spin for reports) one heavy
//!                  barrier                                    (lines 4-7: AskForReport)
//!         phase 2: for each record holding HOLD|v' with v' < v: wait until
//!                  the slot changes (retired records too: a
//!                  guard may outlive its thread's records)    (lines 8-10)
//!         phase 3: wait until active == 0                     (lines 11-12)
//! ```
//!
//! Several callers batch into one round ("Generalization" in 5.1): a
//! caller needs a round that starts after its call; one leader runs rounds,
//! and a caller whose round another leader ran returns when it ends.
//!
//! Why it is correct. An updater publishes the new pointer, then calls
//! `synchronize`, whose version increment comes after the publication
//! (the caller's own read-modify-write on `state` heads a release sequence
//! that every later round's increment continues). A section that reads the
//! old pointer must be waited for; take a reader's record as phase 2 reads
//! it after the barrier decision:
//! - `HOLD|v'` or `FREE|v'` with `v' >= v`: the thread read the new version
//!   (Acquire, after the increment) before its current section began or
//!   at its end, so its section sees the new pointer or has ended (its
//!   stores are Release: the ended sections happen before our Acquire
//!   read);
//! - `FREE|v'` with `v' < v`: no section now, and the next one reads the
//!   new pointer: the heavy barrier ran (every running thread passed a full
//!   barrier, so its later loads see what we stored before), or the helper
//!   saw the owner off CPU (it runs `smp_mb()` before the owner returns to
//!   user space);
//! - `HOLD|v'` with `v' < v`: waited for until the slot changes. The
//!   change is the end of that section (a later section that reads the
//!   slot back to the same `HOLD|v'` only makes us wait longer).
//!
//! A fresh record (a thread's first read) follows `Domain::claim`'s SeqCst
//! fence, so that thread sees the new pointer or we see it in use.
//!
//! # Waiting
//!
//! A synchronizer spins briefly, yields, then sleeps
//! ([`Waiters::wait_until_with_barrier`]): it sets `PARKED` first, so the
//! release of the reader it waits for takes the slow path and wakes it;
//! the heavy barrier it runs before sleeping closes the lost-wake-up window
//! against the reader's plain store (the reader either stored before the
//! barrier, and the re-check sees it, or loads `state` after it and sees
//! `PARKED`). With more threads than cores a reader descheduled in its
//! section is waited for until it runs again: a synchronizer that sleeps
//! leaves it the CPU, and the other readers give theirs away too: a
//! release that finds `PARKED` (it already takes the slow path, to wake
//! the synchronizer) yields, again at each such release, until a yield
//! finds no other thread to run (then not again in that round). Without
//! that the descheduled reader waits for the scheduler to serve every
//! busy reader ahead of it a full time slice (33 ms with 16 readers on 2
//! cores, against 0.15 ms with it: `docs/rcu.md`). This is scheduling
//! only, the user-level stand-in for the kernel's boosting of preempted
//! RCU readers; it changes no shared word.
//!
//! # Orderings
//!
//! - reader's `HOLD` and `FREE` stores: Release (a `mov` on x86-64), paired
//!   with phase 1 and phase 2's Acquire loads of the slot;
//! - reader's load of `state`: Acquire, paired with the increment (SeqCst
//!   RMW, a release): a report of `v` means the reader saw what the updater
//!   published before round `v`;
//! - store-load (reader's slot store then its pointer loads, or its
//!   release then its `state` load): the light barrier paired with the
//!   heavy barrier, or with the helper's marks (see `crate::barrier`);
//! - the round's end: `done` is set with a SeqCst store (the leader is its
//!   only writer) after phase 2's Acquire reads; callers read it with
//!   Acquire, so every section waited for happens before `synchronize`
//!   returns.

mod cell;
mod defer;
#[cfg(all(test, loom))]
mod loom_tests;

pub use cell::{RcuCell, RcuRef, Retired};
pub use defer::{DEFAULT_BATCH, DRAIN_ROUNDS, NOTED_DOMAINS};

use core::marker::PhantomData;
use core::ptr;

use crossbeam_utils::CachePadded;
use rwlock_core::wait::{DefaultWait, Waiters};

use crate::barrier::{self, BarrierMode};
use crate::domain::{self, Domain, FREE, Record};
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence, spin_loop};

/// A synchronizer waits, and a release must wake it.
const PARKED: u64 = 1;
/// The process runs in `Fence` mode: releases run a real fence.
const FENCED: u64 = 1 << 1;
const FLAGS: u64 = PARKED | FENCED;
/// One version.
const STEP: u64 = 1 << 2;
/// A bit of an RCU record's context word (otherwise its domain's address,
/// aligned as `CachePadded`, so bit 0 is clear): the current section has had nested guards, so its
/// guards leave through `release_cold` (one test on the release's fast
/// path for that and for the sentinel record). Set by the second guard of
/// a section, cleared when the section ends.
pub(crate) const NESTED_LIVE: usize = 1;
const _: () = assert!(core::mem::align_of::<RcuDomain>() > NESTED_LIVE);
/// The release word of a guard that did not begin its section (one begun
/// by an earlier guard of the thread).
const NESTED: u64 = 0;
/// A status word of a thread inside a section (no `FREE` bit, so that the
/// kernel helper and `Record::reported` see it as not reported).
const HOLD: u64 = 1 << 61;
/// The version bits of a status word.
const VERSION: u64 = !(FREE | HOLD);

/// Rounds and spins of phase 1's wait for reports before it pays for a
/// heavy barrier (about a microsecond in all, as prwlock's writer). One
/// look and no spin inside a loom model: each spin there yields to the
/// model, which then runs the reader on, and the schedules where the
/// synchronizer overtakes a reader in its section would go unexplored.
const REPORT_ROUNDS: u32 = if cfg!(loom) { 1 } else { 8 };
const REPORT_SPINS: u32 = if cfg!(loom) { 0 } else { 16 };

/// A synchronizer of round `version` sleeps until a reader leaves its
/// section, and this thread, out of its own section, is running: give the
/// CPU away, so that a reader descheduled inside its section (the one the
/// synchronizer waits for) runs sooner. With more runnable threads than
/// cores that reader otherwise waits for the scheduler to come round to
/// it, a time slice for each thread ahead of it (`docs/rcu.md`, "Readers
/// give way"). Each release that finds the synchronizer parked yields
/// again, until a yield finds nobody else to run: then not again in this
/// round, so that with a CPU of its own a reader pays one yield per round
/// at most. Scheduling only: no shared memory is touched, so no model
/// needs it (and none runs it).
#[cold]
fn give_way(version: u64) {
    #[cfg(not(loom))]
    {
        std::thread_local! {
            /// The last round in which a yield of this thread found the
            /// CPU free.
            static CPU_FREE_IN: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
        }
        if CPU_FREE_IN.try_with(|r| r.get() == version).unwrap_or(true) {
            return;
        }
        if !rwlock_core::wait::yield_measured() {
            let _ = CPU_FREE_IN.try_with(|r| r.set(version));
        }
    }
    #[cfg(loom)]
    let _ = version;
}

/// Domains for which [`ACTIVE_HERE`] keeps a count.
const ACTIVE_KEPT: usize = 4;

/// The sections a thread holds in `active` (no record: its thread-locals
/// are being destroyed), so that it can still tell it is in one
/// (`RcuDomain::in_read_section`, which the checks of `synchronize`,
/// `defer` and `barrier` ask).
#[derive(Clone, Copy)]
struct ActiveHere {
    /// (domain address, sections), 0 when unused.
    per_domain: [(usize, u32); ACTIVE_KEPT],
    /// Sections of domains beyond the table: while any is open, the thread
    /// counts as in a section of every domain (a `defer` only queues, a
    /// `synchronize` panics rather than wait for itself).
    untracked: u32,
}

#[cfg(not(loom))]
crate::sync::thread_local! {
    /// `const` and without a destructor: usable during the teardown.
    static ACTIVE_HERE: core::cell::Cell<ActiveHere> = const {
        core::cell::Cell::new(ActiveHere { per_domain: [(0, 0); ACTIVE_KEPT], untracked: 0 })
    };
}

#[cfg(loom)]
crate::sync::thread_local! {
    static ACTIVE_HERE: core::cell::Cell<ActiveHere> =
        core::cell::Cell::new(ActiveHere { per_domain: [(0, 0); ACTIVE_KEPT], untracked: 0 });
}

impl ActiveHere {
    /// Counts a section of `domain` entering (`enter`) or leaving `active`
    /// on the calling thread.
    fn count(domain: &RcuDomain, enter: bool) {
        let key = domain as *const RcuDomain as usize;
        let _ = ACTIVE_HERE.try_with(|cell| {
            let mut here = cell.get();
            let entry = here
                .per_domain
                .iter_mut()
                .position(|e| e.0 == key && e.1 != 0);
            match (entry, enter) {
                (Some(i), true) => here.per_domain[i].1 += 1,
                (Some(i), false) => here.per_domain[i].1 -= 1,
                (None, true) => match here.per_domain.iter_mut().find(|e| e.1 == 0) {
                    Some(free) => *free = (key, 1),
                    None => here.untracked += 1,
                },
                (None, false) => here.untracked = here.untracked.saturating_sub(1),
            }
            cell.set(here);
        });
    }

    /// Whether the calling thread holds a section of `domain` in `active`
    /// (or one it could not count per domain).
    fn holds(domain: &RcuDomain) -> bool {
        let key = domain as *const RcuDomain as usize;
        ACTIVE_HERE
            .try_with(|cell| {
                let here = cell.get();
                here.untracked != 0 || here.per_domain.iter().any(|e| e.0 == key && e.1 != 0)
            })
            .unwrap_or(true)
    }
}

/// A group of RCU readers and synchronizers that reach consensus together
/// (FCP's lock domain, Section 3.4): one version, one set of per-thread
/// status records, one queue of deferred callbacks. A `synchronize` of one
/// domain never waits for readers of another.
///
/// Domains are `'static` (records are never freed): use
/// [`RcuDomain::global`] (what [`read`], [`synchronize`], [`defer`] and
/// [`RcuCell::new`] use) or a `static` of your own.
///
/// ```
/// use prwlock::rcu::{RcuCell, RcuDomain};
///
/// static ROUTES: RcuDomain = RcuDomain::new();
/// let table = RcuCell::from_pointee_in(vec![10u32], &ROUTES);
/// {
///     let guard = ROUTES.read();
///     assert_eq!(table.get(&guard)[0], 10);
/// }
/// table.store(std::sync::Arc::new(vec![20]));
/// ROUTES.barrier(); // the old table is dropped now
/// assert_eq!(ROUTES.stats().pending, 0);
/// ```
#[derive(Debug)]
pub struct RcuDomain {
    /// Version and flags (see the module docs).
    state: CachePadded<AtomicU64>,
    /// The status records, their kernel registrations and the heavy
    /// barrier. No prwlock lives in it: slot 0 of each record is RCU's.
    records: Domain,
    /// Readers without a record (thread-locals being destroyed).
    active: AtomicUsize,
    /// The synchronizer waiting for readers.
    readers_gone: Waiters,
    /// A leader runs the current round.
    leader: AtomicBool,
    /// The last version whose round ended.
    done: AtomicU64,
    /// Callers waiting for a round another leader runs.
    round_end: Waiters,
    /// Counters ([`RcuDomain::stats`]).
    synchronizes: AtomicU64,
    rounds: AtomicU64,
    barriers: AtomicU64,
    sleeps: AtomicU64,
    /// Deferred callbacks ([`RcuDomain::defer`]).
    deferred: defer::Queue,
}

/// What a domain has done ([`RcuDomain::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RcuStats {
    /// Calls of `synchronize` (each deferred batch makes one).
    pub synchronizes: u64,
    /// Consensus rounds run: fewer than `synchronizes` when calls batched.
    pub rounds: u64,
    /// Rounds that needed a heavy barrier (some reader had not reported).
    pub heavy_barriers: u64,
    /// Rounds whose synchronizer went to sleep waiting for a reader.
    pub sleeps: u64,
    /// Deferred callbacks waiting for a grace period.
    pub pending: usize,
    /// Status records (the most threads that read the domain at once).
    pub records: usize,
}

#[cfg(not(loom))]
static GLOBAL: RcuDomain = RcuDomain::new();

#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: RcuDomain = RcuDomain::new();
}

impl Default for RcuDomain {
    fn default() -> Self {
        Self::new()
    }
}

/// The global domain's [`RcuDomain::read`].
#[inline]
pub fn read() -> RcuReadGuard {
    RcuDomain::global().read()
}

/// The global domain's [`RcuDomain::synchronize`].
pub fn synchronize() {
    RcuDomain::global().synchronize()
}

/// The global domain's [`RcuDomain::defer`].
pub fn defer(f: impl FnOnce() + Send + 'static) {
    RcuDomain::global().defer(f)
}

/// The global domain's [`RcuDomain::defer_drop`].
pub fn defer_drop<T: Send + 'static>(value: T) {
    RcuDomain::global().defer_drop(value)
}

/// The global domain's [`RcuDomain::barrier`].
pub fn barrier() {
    RcuDomain::global().barrier()
}

impl RcuDomain {
    rwlock_core::loom_const_fn! {
        /// An empty domain; put it in a `static`.
        pub fn new() -> Self {
            RcuDomain {
                state: CachePadded::new(AtomicU64::new(0)),
                records: Domain::new(),
                active: AtomicUsize::new(0),
                readers_gone: Waiters::new(),
                leader: AtomicBool::new(false),
                done: AtomicU64::new(0),
                round_end: Waiters::new(),
                synchronizes: AtomicU64::new(0),
                rounds: AtomicU64::new(0),
                barriers: AtomicU64::new(0),
                sleeps: AtomicU64::new(0),
                deferred: defer::Queue::new(),
            }
        }
    }

    /// The process-wide domain.
    #[inline]
    pub fn global() -> &'static RcuDomain {
        #[cfg(not(loom))]
        {
            &GLOBAL
        }
        #[cfg(loom)]
        {
            &GLOBAL
        }
    }

    // ---------------------------------------------------------------- readers

    /// Enters a read-side critical section (Fig. 7 `RCUReadLock`): until
    /// the guard drops, nothing this domain's updaters retire through
    /// [`defer`](Self::defer) or [`synchronize`](Self::synchronize) is
    /// freed. Sections nest. The guard stays on its thread (not `Send`).
    ///
    /// Blocking inside a section is allowed (a synchronizer sleeps until
    /// the section ends) but delays every synchronizer of the domain.
    /// Calling `synchronize` or `barrier` inside one panics, since it would
    /// wait for itself; a `defer` (or an `RcuCell` update) inside one only
    /// queues, so a loop of updates inside one section never reclaims
    /// ([`RcuCell::store`]). Leaking the guard
    /// (`mem::forget`) leaves the thread in the section for good, as a
    /// leaked read guard keeps a lock read-locked: every later
    /// `synchronize` of the domain waits forever, even after the thread
    /// exits (a guard may outlive its thread's records, kept in a
    /// thread-local destroyed after them, and is waited for until it
    /// drops; a leaked one looks the same).
    ///
    /// Each thread keeps the record of the last domain it read at hand: a
    /// thread that alternates between domains finds its record by the
    /// slower lookup at each switch (a few nanoseconds more per section).
    #[inline]
    pub fn read(&'static self) -> RcuReadGuard {
        self.begin(domain::rcu_cached(&self.records), barrier::light)
    }

    /// Enters a section on `record` (Fig. 7 `RCUReadLock`), or one more
    /// guard of the section it is in, or (on the sentinel record: no
    /// cached one) takes the slow path; `light` is the light barrier of
    /// the process's mode.
    #[inline(always)]
    fn begin(&'static self, record: &'static Record, light: impl FnOnce()) -> RcuReadGuard {
        let slot = record.slot(0);
        // Relaxed: the owner reads its own last store (the sentinel's
        // slot is never written).
        let word = slot.load(Ordering::Relaxed);
        if word & FREE == 0 {
            return self.begin_nested(record);
        }
        // Release: a synchronizer that reads this word (Acquire) also sees
        // the end of our earlier sections. Ordered before the section's
        // loads by the light barrier, which pairs with the synchronizer's
        // heavy barrier.
        slot.store(word ^ (FREE | HOLD), Ordering::Release);
        light();
        RcuReadGuard::new(record, word)
    }

    /// `begin` found slot 0 in use: a nested section, or the sentinel.
    #[cold]
    #[inline(never)]
    fn begin_nested(&'static self, record: &'static Record) -> RcuReadGuard {
        if ptr::eq(record, domain::rcu_no_record()) {
            return self.read_slow();
        }
        record.nest();
        RcuReadGuard::new(record, NESTED)
    }

    /// A read without the cached record: the thread's first read in the
    /// domain, `Fence` mode, or thread-locals being destroyed.
    #[cold]
    #[inline(never)]
    fn read_slow(&'static self) -> RcuReadGuard {
        let mode = barrier::barrier_mode();
        if !barrier::is_asymmetric(mode) {
            self.mark_fenced();
        }
        match domain::register_rcu(&self.records) {
            Some(record) => {
                // The release fast path finds the domain through it (the
                // flag kept: in `Fence` mode every read comes here, nested
                // ones too).
                record.set_context(
                    self as *const RcuDomain as usize | record.context() & NESTED_LIVE,
                );
                self.begin(record, || barrier::light_in(mode))
            }
            None => {
                // SeqCst RMW and fence: a Dekker pair with the
                // synchronizer's SeqCst fence before it reads `active`.
                self.active.fetch_add(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                ActiveHere::count(self, true);
                RcuReadGuard::new(domain::rcu_no_record(), self as *const RcuDomain as u64)
            }
        }
    }

    /// Sets the sticky `FENCED` flag (Fence mode), before the first hold
    /// that relies on it.
    #[cold]
    fn mark_fenced(&self) {
        // Relaxed: our own RMW below is what our later loads see first.
        if self.state.load(Ordering::Relaxed) & FENCED == 0 {
            // SeqCst: one more RMW in the release sequence of `state`.
            self.state.fetch_or(FENCED, Ordering::SeqCst);
        }
    }

    /// The outermost release's slow path: a fence first in `Fence` mode,
    /// then the report (Fig. 7 lines 9-10) and the wake-up.
    #[cold]
    #[inline(never)]
    fn release_slow(&self, record: &Record, mut state: u64, reported: u64) {
        if state & FENCED != 0 {
            // SeqCst: the store-load ordering the light barrier lacks in
            // Fence mode (pairs with the synchronizer's SeqCst fences).
            fence(Ordering::SeqCst);
            // Acquire: as in `RcuReadGuard::drop`.
            state = self.state.load(Ordering::Acquire);
        }
        let version = state & !FLAGS;
        if version > reported & VERSION {
            // Release: the report (see the module docs' orderings).
            record.slot(0).store(FREE | version, Ordering::Release);
        }
        if state & PARKED != 0 {
            // Our stores, then the light barrier (the drop's), then this
            // load of the count: pairs with the synchronizer's heavy
            // barrier before it sleeps.
            self.readers_gone.wake_all_after_barrier();
            give_way(state & !FLAGS);
        }
    }

    /// A release that found `NESTED_LIVE` in its record's context word:
    /// a guard of a section that has (or had) nested guards, or one
    /// counted in `active` (the sentinel record).
    #[cold]
    #[inline(never)]
    fn release_cold(record: &'static Record, release: u64) {
        if ptr::eq(record, domain::rcu_no_record()) {
            // An active guard's word is its domain's address.
            // SAFETY: domains are 'static.
            let domain = unsafe { &*(release as *const RcuDomain) };
            // SeqCst: ends the section (a release for the synchronizer's
            // load) and is the RMW `wake_all` asks for.
            domain.active.fetch_sub(1, Ordering::SeqCst);
            domain.readers_gone.wake_all();
            ActiveHere::count(domain, false);
            return;
        }
        let depth = record.rcu_depth();
        if depth != 0 {
            // Other guards of the section are alive: the last ends it.
            return record.set_rcu_depth(depth - 1);
        }
        // The last guard: the one that began the section knows its word;
        // a nested one (the first guard dropped before it) rebuilds it
        // from the slot, `HOLD | v`.
        let release = if release & FREE != 0 {
            release
        } else {
            // Relaxed: own word.
            record.slot(0).load(Ordering::Relaxed) ^ (FREE | HOLD)
        };
        record.set_context(record.context() & !NESTED_LIVE);
        Self::of(record).end_section(record, release);
    }

    /// The domain of an RCU record (its context word, set at
    /// registration).
    #[inline(always)]
    fn of(record: &Record) -> &'static RcuDomain {
        // Only `read_slow` registers records of an RCU domain, and it sets
        // the context first; domains are 'static.
        // SAFETY: so the word is the address of a live domain.
        unsafe { &*((record.context() & !NESTED_LIVE) as *const RcuDomain) }
    }

    /// Ends the thread's section (Fig. 7 `RCUReadUnlock`).
    #[inline(always)]
    fn end_section(&self, record: &Record, release: u64) {
        // Release: ends the section for a synchronizer's Acquire read.
        record.slot(0).store(release, Ordering::Release);
        barrier::light();
        // Acquire: pairs with the round's increment (a report of the new
        // version must come after what the updater published).
        let state = self.state.load(Ordering::Acquire);
        if state | FREE != release {
            self.release_slow(record, state, release);
        }
    }

    /// Whether the calling thread is inside a section of this domain.
    pub fn in_read_section(&'static self) -> bool {
        match domain::find(&self.records) {
            // Relaxed: own word.
            Some(r) => r.slot(0).load(Ordering::Relaxed) & FREE == 0,
            None => self.in_section_without_record(),
        }
    }

    /// `in_read_section` for a thread without a record here: one that
    /// never read in the domain, or whose thread-locals are being
    /// destroyed, whose sections are then counted in `active` or open on
    /// the record it retired (a guard that outlived its registrations;
    /// if it retired more records than it could keep, any domain counts).
    #[cold]
    fn in_section_without_record(&'static self) -> bool {
        ActiveHere::holds(self)
            || domain::retired_unkept()
            || domain::find_retired(&self.records)
                // Relaxed: own word.
                .is_some_and(|r| r.slot(0).load(Ordering::Relaxed) & FREE == 0)
    }

    // ----------------------------------------------------------- synchronize

    /// Waits until every read section of this domain that began before the
    /// call has ended (Fig. 8 `SynchronizeRCU`), then runs the callbacks
    /// queued at the call ([`defer`](Self::defer): this grace period is
    /// theirs). A batch another thread took just before may still be
    /// running on that thread when this returns: [`barrier`](Self::barrier)
    /// waits for those too. Concurrent callers share rounds. From tens of
    /// nanoseconds (running readers report at once) to a few microseconds
    /// (one `membarrier` when some registered thread has not reported); a
    /// reader descheduled or blocked inside its section is waited for
    /// until it leaves it.
    ///
    /// The outermost call of a thread also reclaims, one batch per grace
    /// period and for at most [`DRAIN_ROUNDS`] of them, what the callbacks
    /// it ran deferred in turn once that fills a batch (a chain retired
    /// link by link; `defer` module docs).
    ///
    /// # Panics
    /// Inside a read section of this domain on the calling thread (it
    /// would wait for itself), or if a callback panics: once the rest of
    /// its batch has run, with the first panic, whoever deferred it.
    pub fn synchronize(&'static self) {
        assert!(
            !self.in_read_section(),
            "prwlock::rcu: synchronize inside a read section of the same domain would wait for \
             itself"
        );
        let own = domain::find(&self.records);
        // Taken after the check: a batch dropped before its grace period
        // would free what readers may still see.
        let (batch, in_flight) = self.deferred.take();
        self.grace_period(own.map_or(ptr::null(), |r| r as *const Record));
        defer::run(batch);
        drop(in_flight);
        defer::drain_noted();
    }

    /// [`synchronize`](Self::synchronize) without the callbacks; `own` is
    /// the caller's record (null if none), not in a section.
    fn grace_period(&'static self, own: *const Record) {
        // Relaxed: a statistic.
        self.synchronizes.fetch_add(1, Ordering::Relaxed);
        // An RMW, not a load: every later round's increment continues the
        // release sequence it heads, so what the caller published before
        // this call is visible to a reader that reads that round's version.
        let seen = self.state.fetch_add(0, Ordering::SeqCst) & !FLAGS;
        let target = seen + STEP;
        loop {
            // Acquire: pairs with the leader's SeqCst store of `done` after its
            // phase 2 reads (the sections it waited for happen before).
            if self.done.load(Ordering::Acquire) >= target {
                return;
            }
            if self
                .leader
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                let version = if self.done.load(Ordering::Acquire) >= target {
                    None
                } else {
                    Some(self.round(own))
                };
                if let Some(v) = version {
                    // A store, not `fetch_max`: only the leader writes
                    // `done`, and each round's version exceeds the last
                    // one's. (ThreadSanitizer has no hook for an atomic
                    // max, so it never saw a `fetch_max` release the
                    // sections this round waited for to the callers below,
                    // and reported their callbacks' frees as races.)
                    // Relaxed: our own last store, read back.
                    debug_assert!(self.done.load(Ordering::Relaxed) < v);
                    // SeqCst: release for waiting callers (Acquire above).
                    self.done.store(v, Ordering::SeqCst);
                }
                // SeqCst RMW then wake_all (its protocol).
                self.leader.swap(false, Ordering::SeqCst);
                self.round_end.wake_all();
                return;
            }
            self.round_end.wait_until::<DefaultWait>(|| {
                // Acquire (both): as above; `leader` pairs with the
                // leader's SeqCst swap.
                self.done.load(Ordering::Acquire) >= target || !self.leader.load(Ordering::Acquire)
            });
        }
    }

    /// One consensus round (the leader only); returns its version.
    fn round(&'static self, own: *const Record) -> u64 {
        // Relaxed: a statistic.
        self.rounds.fetch_add(1, Ordering::Relaxed);
        // SeqCst RMW: the release readers acquire by reading the version.
        let v = (self.state.fetch_add(STEP, Ordering::SeqCst) + STEP) & !FLAGS;
        // SeqCst: our increment before our reads of the records (pairs with
        // `Domain::claim`'s fence and the helper's marks).
        fence(Ordering::SeqCst);
        // Phase 1 (lines 4-7).
        let mut reported = false;
        for _ in 0..REPORT_ROUNDS {
            if self.all_reported(v, own) {
                reported = true;
                break;
            }
            // (Not a `for` over `0..REPORT_SPINS`: empty inside a
            // model, where clippy would call the range reversed.)
            (0..REPORT_SPINS).for_each(|_| spin_loop());
        }
        if !reported {
            // Relaxed: a statistic.
            self.barriers.fetch_add(1, Ordering::Relaxed);
            self.records.heavy_barrier(v, own, false);
        }
        // Phase 2 (lines 8-10): retired records too (their thread gave
        // them back inside a section: a leaked guard, or a live one in a
        // thread-local destroyed after the records, which ends later).
        let mut parked = false;
        for r in self.records.records() {
            if !r.is_claimed_other(own) {
                continue;
            }
            let slot = r.slot(0);
            // Acquire: pairs with the owner's Release stores.
            let word = slot.load(Ordering::Acquire);
            if word & FREE != 0 || word & VERSION >= v {
                continue;
            }
            if !parked {
                parked = true;
                // SeqCst: set before the heavy barrier that precedes any
                // sleep (see the module docs' "Waiting").
                self.state.fetch_or(PARKED, Ordering::SeqCst);
            }
            // Acquire: as above.
            self.readers_gone.wait_until_with_barrier::<DefaultWait>(
                || slot.load(Ordering::Acquire) != word,
                || self.heavy_barrier_before_sleep(v, own),
            );
        }
        // Phase 3 (lines 11-12): readers without a record. SeqCst load
        // after our SeqCst fence above: a Dekker pair with `read_slow`.
        if self.active.load(Ordering::SeqCst) != 0 {
            self.readers_gone
                .wait_until::<DefaultWait>(|| self.active.load(Ordering::SeqCst) == 0);
        }
        if parked {
            // SeqCst: an RMW of the release sequence, like every change.
            self.state.fetch_and(!PARKED, Ordering::SeqCst);
        }
        v
    }

    /// The barrier a synchronizer runs before it sleeps: every CPU running
    /// a registered reader (`all`: reports say nothing about `PARKED`).
    fn heavy_barrier_before_sleep(&'static self, v: u64, own: *const Record) {
        // Relaxed: a statistic (counted once per sleep attempt).
        self.sleeps.fetch_add(1, Ordering::Relaxed);
        self.records.heavy_barrier(v, own, true);
    }

    /// Phase 1's test: every live record other than `own` reported `v`
    /// (in or out of a section) or has its owner off CPU.
    fn all_reported(&self, v: u64, own: *const Record) -> bool {
        self.records.all_reported_by(own, |r| {
            // Acquire: pairs with the owner's Release report.
            r.slot(0).load(Ordering::Acquire) & VERSION >= v
        })
    }

    /// Counters of the domain (a snapshot).
    pub fn stats(&self) -> RcuStats {
        // Relaxed: statistics.
        RcuStats {
            synchronizes: self.synchronizes.load(Ordering::Relaxed),
            rounds: self.rounds.load(Ordering::Relaxed),
            heavy_barriers: self.barriers.load(Ordering::Relaxed),
            sleeps: self.sleeps.load(Ordering::Relaxed),
            pending: self.deferred.len(),
            records: self.records.stats().records,
        }
    }

    /// The barrier mode the domain's readers run in (the process's).
    pub fn barrier_mode(&self) -> BarrierMode {
        barrier::barrier_mode()
    }
}

impl Record {
    /// One more guard of the thread's current section.
    #[cold]
    #[inline(never)]
    fn nest(&self) {
        let depth = self.rcu_depth();
        // A wrapped depth would end the section under a live guard.
        assert!(
            depth < u32::MAX,
            "prwlock::rcu: too many nested read sections (leaked guards?)"
        );
        self.set_rcu_depth(depth + 1);
        // Kept until the section ends (`release_cold`), so that every
        // guard of it, the first included, leaves through the slow path.
        self.set_context(self.context() | NESTED_LIVE);
    }
}

/// A read-side critical section of an [`RcuDomain`] ([`RcuDomain::read`]).
/// Not `Send`: the section lives in its thread's status record.
///
/// Guards of one thread and domain may drop in any order: the section
/// ends when the last of them drops.
///
/// Two words, so that it travels in registers: the thread's record and
/// the status word that ends the section (`FREE | v`), kept by the guard
/// that began the section (the release then does not reload the word it
/// just stored); `NESTED` in the other guards of the section; for a
/// section counted in `active`, the sentinel record
/// (`domain::rcu_no_record`) and the domain's address.
#[must_use = "the section ends when the guard drops"]
#[derive(Debug)]
pub struct RcuReadGuard {
    record: &'static Record,
    release: u64,
    _not_send: PhantomData<*const ()>,
}

impl RcuReadGuard {
    #[inline(always)]
    fn new(record: &'static Record, release: u64) -> Self {
        RcuReadGuard {
            record,
            release,
            _not_send: PhantomData,
        }
    }

    /// The domain this section belongs to.
    ///
    /// `inline`: [`RcuCell::get`](crate::rcu::RcuCell::get) checks it on
    /// every call; out of line (a non-generic function of another crate),
    /// the call cost a read-mostly map about 5% of its lookups.
    #[inline]
    pub fn domain(&self) -> &'static RcuDomain {
        if ptr::eq(self.record, domain::rcu_no_record()) {
            // SAFETY: an active guard's word is its 'static domain's address.
            unsafe { &*(self.release as *const RcuDomain) }
        } else {
            RcuDomain::of(self.record)
        }
    }
}

impl Drop for RcuReadGuard {
    /// Fig. 7 `RCUReadUnlock`.
    #[inline]
    fn drop(&mut self) {
        let record = self.record;
        let context = record.context();
        if context & NESTED_LIVE != 0 {
            return RcuDomain::release_cold(record, self.release);
        }
        // No nested guard, so this guard began the section and holds its
        // word (`FREE | v`), and the record is not the sentinel: the
        // context word is the address of the record's 'static domain
        // (`RcuDomain::of`), with the flag clear.
        // SAFETY: so the cast names a live domain.
        let domain = unsafe { &*(context as *const RcuDomain) };
        domain.end_section(record, self.release);
    }
}
