//! [`PrwLock`]: the passive reader-writer lock at user level (Liu, Zhang &
//! Chen, ATC'14, Figures 3, 4 and 7; Section 3.5; FCP Section 4.2).
//!
//! # State
//!
//! One 64-bit word, `state`:
//!
//! | bits  | name        | meaning                                                    |
//! |-------|-------------|------------------------------------------------------------|
//! | 0     | `WRITER`    | the writer mutex is held (acquiring, holding, or passed): readers stay out |
//! | 1     | `PASS`      | handed to a waiting writer without releasing (Fig. 4 `PASS`) |
//! | 2     | `EXCLUSIVE` | a writer finished consensus and holds the lock              |
//! | 3     | `NO_ID`     | the id is not assigned yet (set in `INIT`)                 |
//! | 4     | `SLOW_RELEASE` | sticky: some release of this lock needs the slow path (a hold was converted or taken in active mode, or the process runs in Fence mode) |
//! | 5     | `ACTIVE_MODE` | write-heavy mode: new readers take the active path, and writers need no heavy barrier (below) |
//! | 8..64 | id          | the lock's process-unique id (0 until first use)            |
//!
//! plus `active` (the paper's active-reader counter in its low 32 bits, a
//! count of active-mode acquisitions above, which paces the readers' clock
//! checks), the write-heavy-mode policy ([`crate::policy`]) and three wait queues
//! (readers waiting for `WRITER` to clear, writers waiting for the mutex, a
//! writer waiting for readers to leave). The readers' status lives in their
//! thread's record of the lock's [`Domain`].
//!
//! # Readers (Fig. 3 `ReadLock`, Fig. 7 `ReadUnlock`)
//!
//! ```text
//! lock:   slot <- id                (PASSIVE: Fig. 3 line 2)
//!         light barrier             (compiler fence: line 9's "barrier on non-TSO")
//!         if WRITER: slot <- FREE|version (report), wait for WRITER to
//!                    clear, reporting newer versions meanwhile, retry (lines 3-8)
//! unlock: slot <- FREE              (Fig. 7 line 2)
//!         light barrier
//!         if WRITER or SLOW_RELEASE (slow path):
//!             if this hold was converted: active -= 1 (Fig. 7 lines 3-5)
//!             Fence mode: a real fence, then the lock word again
//!             if WRITER: slot <- FREE|version (report, Fig. 7 line 6),
//!                        wake the writer if it parked waiting for readers
//! ```
//!
//! `SLOW_RELEASE` is sticky: the first `schedule_out` or active-mode read
//! of a lock sets it (before the hold it concerns exists, so the holder's
//! release sees it), and so does the lock's first use in Fence mode. From
//! then on the lock's releases check, off the fast path, whether their
//! hold was converted (Fig. 7's `preempted` flag, an owner-only bit per
//! slot) instead of every release loading its status word to find out.
//!
//! The paper reports on every release; here a release reports only when a
//! writer is at the door, the only time a report is read (one load of the
//! lock word instead of a load of the domain version and a store).
//!
//! No read-modify-write and no fence: a few loads and stores to the
//! thread's own record and lines that only writers write
//! (`tests/fast_path_asm.rs` checks the compiled fast path). A thread that
//! holds more than [`PASSIVE_SLOTS`](crate::PASSIVE_SLOTS) prwlocks of one
//! domain at once, or reads while its thread-locals are being destroyed,
//! reads in *active* mode: `active += 1`, SeqCst fence, check `WRITER`.
//!
//! # Writers (Fig. 4 `WriteLock`, `WriteUnlock`)
//!
//! ```text
//! lock:   take the writer mutex (sets WRITER); if it was PASSed, done (lines 1-4)
//!         v <- ++domain.version; SeqCst fence                       (line 6)
//!         phase 1: if some live record of the domain has not reported v
//!                  (after a short spin), one heavy barrier (membarrier:
//!                  the user-space AskForReport of lines 7-11);
//!                  then wait until no record holds id               (lines 12-14)
//!         phase 2: wait until active == 0                           (lines 15-16)
//! unlock: if writers wait, PASS (WRITER stays set: the next writer
//!         inherits the consensus), else clear WRITER and wake readers
//! ```
//!
//! Why it is correct: a reader publishes its hold, runs the light barrier,
//! then reads `WRITER`; a writer sets `WRITER`, runs the heavy barrier (or
//! knows the reader already reported its version, which it could only have
//! read after `WRITER` was set), then reads the reader's hold. The barrier
//! pair guarantees that at least one of them sees the other's store
//! ([`crate::barrier`]), so a reader either backs off or is waited for.
//! Readers read `WRITER` with Acquire and clear their hold with Release,
//! pairing with the writer's release and its Acquire scan: a read section
//! happens entirely before or entirely after a write section.
//!
//! Waiting: readers park on the lock until `WRITER` clears (woken by the
//! writer's release). A writer spins, yields, then parks until the readers
//! it waits for are gone; a passive reader's unlock checks (one load) whether
//! a writer is parked and wakes it, with the light/heavy barrier pair closing
//! the lost-wake-up window ([`Waiters::wait_until_with_barrier`]; the writer
//! runs the heavy barrier when its scan sees a hold, and a reader that
//! withdraws a hold taken after `WRITER`, which that scan may miss, runs a
//! full fence instead of the light barrier: `back_off`). A reader
//! that will block inside its critical section (I/O, a condition variable,
//! another lock) should call [`PrwLock::schedule_out`] first (Fig. 7
//! `ScheduleOut`): its hold moves to `active`, and a writer waiting for it
//! parks instead of polling. A reader that is merely descheduled needs
//! nothing: a writer waits for it (it reports when it runs again).
//!
//! # More threads than cores
//!
//! Two paths go through a [`Gate`] (GCR concurrency restriction,
//! `rwlock_core::restricted`): a reader that found `WRITER` set waits for
//! it through the gate, and so does every writer's whole acquisition (the
//! mutex, then the consensus: a writer costs a consensus anyway, so one
//! more load is nothing, and a writer waiting for readers counts as
//! active). Once such a wait has had to yield, at most as many threads as
//! the process has CPUs (and at most
//! `rwlock_core::restricted::DEFAULT_LIMIT_MAX`) wait at a time; the
//! rest, if their CPU is shared (their yields gave it away), sleep in the
//! gate's FIFO queue and are promoted within a millisecond each, and
//! `PASS` goes to writers that run. The read fast path never touches the gate.
//!
//! The gate alone was not enough: at 16 threads on 2 cores (10% writes,
//! empty critical sections) prwlock stayed near 0.3–0.4× its 2-thread
//! throughput, because nearly every write found descheduled, unreported
//! readers and paid a `membarrier` that takes tens of microseconds there.
//! The write-heavy mode below removes that cost.
//!
//! # Write-heavy mode (`ACTIVE_MODE`; policy in [`crate::policy`])
//!
//! When writes come so close together that their heavy barriers would
//! dominate (BRAVO's inhibition rule, with passive reading as the bias),
//! a writer switches the lock to *active reading*; readers then take the
//! paper's active path and writers run no heavy barrier:
//!
//! ```text
//! switch (a writer holding WRITER, passive-mode consensus):
//!         state |= ACTIVE_MODE, before the SeqCst fence and phase 1's
//!         reports or heavy barrier (the mode is *established* when that
//!         phase 1 ends; every later writer acquires after it)
//! reader: fast path: ACTIVE_MODE in the first load -> slow path;
//!         the check after the light barrier tests WRITER | ACTIVE_MODE
//!         (back off, then read actively)
//!         active read: active += 1 (SeqCst), SeqCst fence, check WRITER;
//!         one in 64 looks at the clock and, if the mode has run its course
//!         and no writer holds the lock, CASes ACTIVE_MODE off
//! writer: ACTIVE_MODE set at its consensus: SeqCst fence, no version bump,
//!         no reports, no heavy barrier; wait until no passive hold of the
//!         lock (a downgrade's, or one taken before the switch) and
//!         active == 0; end the mode (clear the bit) if it has run its course
//! ```
//!
//! Why the writer may skip the barrier: a reader takes a passive hold only
//! if its check after the light barrier saw neither `WRITER` nor
//! `ACTIVE_MODE`. The switching writer stored `ACTIVE_MODE` before its
//! heavy barrier (or before the version bump that reporting readers read),
//! so the barrier pair gives, for every reader: either its check saw the
//! bit, or its hold store is visible to the switching writer's scan (which
//! then waited for it), and so to every later writer, which acquires after
//! that writer's release. No passive hold can therefore appear unseen while
//! the bit stays set, and only the writers and the active counter's Dekker
//! pair (the readers' SeqCst RMW and fence, the writer's SeqCst RMW on
//! `state` and fence) remain, as in any counter-based lock. The bit changes
//! only under `WRITER` (the writer that holds it) or by a reader's CAS from
//! a value without `WRITER`, so it is stable for a writer between its
//! acquisition and its release. Leaving the mode needs nothing: the next
//! writer finds the bit clear and runs the paper's consensus.
//!
//! A write whose readers all reported (the writer alone, or with a core
//! for every thread) pays no barrier and, unless it comes within `N × B`
//! of an earlier write that did pay one (the mode's check comes before
//! the reports are read, since the mode bit must be stored before the
//! barrier), starts no mode and reads no clock; a lock whose writes are
//! rare stays passive. The mode can be
//! turned off per domain ([`Domain::set_write_heavy_mode`]) to measure the
//! paper's lock alone.
//!
//! # The kernel helper
//!
//! With `prwlock-sys`'s module loaded ([`BarrierMode::KernelHelper`]),
//! readers register their records with it on first use; the helper writes
//! into each record whether its owner is on a CPU, at every context switch.
//! Then:
//! - a record whose owner is off CPU counts as reported in the consensus:
//!   at 16 threads on 4 CPUs most readers are descheduled, unreported, and
//!   cost every write a heavy barrier in `Membarrier` mode; with the helper
//!   the writer waits for the running ones only;
//! - the heavy barrier, when one is still needed, is the helper's request,
//!   which interrupts only the CPUs running a registered reader of the
//!   domain that has not reported the version (`membarrier` interrupts
//!   every CPU running the process); the one before a writer parks asks for
//!   every CPU running a registered reader of the domain (reports say
//!   nothing about the wake-up flag). Where a record that must be reached is
//!   not registered (the helper refused it), `membarrier` as before.
//!
//! A writer waits for a descheduled holder as in the other modes (a short
//! spin, a few yields, then it parks until the holder's release wakes it).
//! Parking at once when the helper says the holder is off CPU was tried and
//! measured no different (docs/prwlock.md), so it is not done.
//!
//! Why skipping a reader that is off CPU is sound (`kmod/prwlock_helper.c`
//! and `Domain::all_reported`): the helper marks it off CPU after the
//! scheduler's full barrier that followed its last user-space store, and
//! marks it on CPU again, then runs `smp_mb()`, before it returns to user
//! space; the writer set `WRITER` and ran a SeqCst fence before it read the
//! mark. Either the writer sees the reader back on CPU, or the reader's
//! next check sees `WRITER`.
//!
//! Preference: consecutive writers hand the lock over with `PASS`, as the
//! paper's writer-preference variant does; readers wait until no writer is
//! queued. Reads are not recursive: a nested read of the same lock behind a
//! waiting writer deadlocks, as in any writer-preferring lock.

use core::marker::PhantomData;
use core::ptr;

use rwlock_core::clock;
use rwlock_core::restricted::Gate;
use rwlock_core::wait::{DefaultWait, Waiters};

use crate::barrier::{self, BarrierMode};
use crate::domain::{self, CONVERTED, Domain, FREE, Record, SLOW_RELEASE};
use crate::policy::{ModePolicy, READER_CLOCK_EVERY};
use crate::sync::{AtomicU32, AtomicU64, Ordering, fence, spin_loop};

mod lock_api_impls;
pub use lock_api_impls::ReadGuardExt;

const WRITER: u64 = 1;
const PASS: u64 = 1 << 1;
const EXCLUSIVE: u64 = 1 << 2;
/// Set until the lock's id is assigned (so that the read fast path tests
/// "writer in, or no id yet" with one instruction).
const NO_ID: u64 = 1 << 3;
/// Write-heavy mode (module docs): readers go active, writers skip the
/// heavy barrier. Set only by a writer that holds `WRITER`, before its
/// consensus's barrier; cleared by a writer that holds `WRITER` or, while
/// no writer does, by a reader.
const ACTIVE_MODE: u64 = 1 << 5;
const ID_SHIFT: u32 = 8;
/// The id bits of `state`. A lock's "id" below is these bits in place
/// (`id << ID_SHIFT`), which is also what its holds store in a status word:
/// below bit 61, clear of the FREE and CONVERTED tags.
const ID_MASK: u64 = !((1 << ID_SHIFT) - 1);

/// Ids are unique per process; 53 bits never run out, and the tags above
/// bit 60 never collide with an id.
static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// Rounds of spinning a writer gives readers to report its version before
/// it pays for a heavy barrier (each round: a scan of the domain's records
/// and `REPORT_SPINS` spin hints; about a microsecond in all, a third of a
/// `membarrier` on the development machine).
const REPORT_ROUNDS: u32 = 8;
const REPORT_SPINS: u32 = 16;

/// The holders' part of `active` (the paper's counter).
const ACTIVE_HOLDERS: u64 = u32::MAX as u64;
/// An active-mode acquisition: one holder, one arrival counted above.
const ACTIVE_ARRIVAL: u64 = 1 | 1 << 32;

/// The passive reader-writer lock. See the [module docs](self) for the
/// protocol and the [crate docs](crate) for when to use it.
///
/// ```
/// use lock_api::RawRwLock;
/// type RwLock<T> = lock_api::RwLock<prwlock::PrwLock, T>;
///
/// static ROUTES: RwLock<Vec<u32>> = RwLock::new(Vec::new());
/// ROUTES.write().push(1);
/// assert_eq!(ROUTES.read()[0], 1);
/// ```
#[derive(Debug)]
pub struct PrwLock {
    state: AtomicU64,
    /// Readers in active mode (Fig. 3/7 `lock.active`) in the low 32 bits;
    /// active-mode acquisitions so far above.
    active: AtomicU64,
    /// Writers queued for the writer mutex (decides `PASS`).
    writers_waiting: AtomicU32,
    /// Readers waiting for `WRITER` to clear.
    readers: Waiters,
    /// Writers waiting for the writer mutex.
    writers: Waiters,
    /// The writer waiting for readers to leave.
    drain: Waiters,
    domain: &'static Domain,
    /// Concurrency restriction of the waiting paths (module docs,
    /// "More threads than cores").
    gate: Gate,
    /// When to switch to and from active reading ([`crate::policy`]).
    policy: ModePolicy,
}

/// What a read acquisition hands to its release: the status word (slot of
/// the thread's record) that holds it, one register. An active-mode hold
/// points to a sentinel's word. Not `Send`: the record belongs to the
/// thread. `Sync`, so that a read guard can be shared with other threads
/// (scoped threads reading through `&guard`), as parking_lot's can.
pub struct ReadToken {
    word: &'static AtomicU64,
    _not_send: PhantomData<*const Record>,
}

// SAFETY: a shared `&ReadToken` gives only `is_passive`, a pure read of the
// word's address; the release that stores to the word takes the token by
// value, on the thread that owns it (it is not `Send`). (The guard's
// `schedule_out` acts on the calling thread's own holds, whichever thread
// that is.)
unsafe impl Sync for ReadToken {}

impl core::fmt::Debug for ReadToken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReadToken")
            .field("passive", &self.is_passive())
            .finish()
    }
}

/// What a write acquisition hands to its release (nothing thread-bound: a
/// write guard may be released, or downgraded, on another thread).
#[derive(Debug)]
pub struct WriteToken(PhantomData<()>);

impl ReadToken {
    #[inline(always)]
    fn passive(record: &'static Record, slot: usize) -> Self {
        ReadToken {
            word: record.slot(slot),
            _not_send: PhantomData,
        }
    }

    fn active() -> Self {
        ReadToken {
            word: domain::active_record().slot(0),
            _not_send: PhantomData,
        }
    }

    /// Whether this hold was taken in passive mode (a slot of the thread's
    /// record) rather than on the lock's active counter. A passive hold
    /// converted by [`PrwLock::schedule_out`] still answers `true`.
    pub fn is_passive(&self) -> bool {
        !domain::is_active_word(self.word)
    }
}

impl Default for PrwLock {
    fn default() -> Self {
        Self::new()
    }
}

impl PrwLock {
    /// An unlocked lock in the process-wide [`Domain::global`].
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::in_domain(&domain::GLOBAL)
    }

    /// An unlocked lock in the process-wide domain (loom build: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::in_domain(Domain::global())
    }

    rwlock_core::loom_const_fn! {
        /// An unlocked lock in `domain`: its writers reach consensus only
        /// with readers of that domain's locks.
        pub fn in_domain(domain: &'static Domain) -> Self {
            PrwLock {
                state: AtomicU64::new(NO_ID),
                active: AtomicU64::new(0),
                writers_waiting: AtomicU32::new(0),
                readers: Waiters::new(),
                writers: Waiters::new(),
                drain: Waiters::new(),
                domain,
                gate: Gate::new(),
                policy: ModePolicy::new(),
            }
        }
    }

    /// A lock for a loom model with the given write-heavy-mode policy.
    #[cfg(all(loom, test))]
    pub(crate) fn for_model(model: crate::policy::ModelPolicy) -> Self {
        let mut lock = Self::new();
        lock.policy = ModePolicy::for_model(model);
        lock
    }

    /// The domain this lock reaches consensus in.
    pub fn domain(&self) -> &'static Domain {
        self.domain
    }

    /// Readers holding the lock in active mode now (a snapshot).
    pub fn active_readers(&self) -> usize {
        // Relaxed: a snapshot for diagnostics.
        (self.active.load(Ordering::Relaxed) & ACTIVE_HOLDERS) as usize
    }

    /// Whether the lock is in write-heavy mode now (new readers take the
    /// active path; see [`crate::policy`]). A snapshot.
    pub fn is_write_heavy_mode(&self) -> bool {
        // Relaxed: a snapshot.
        self.state.load(Ordering::Relaxed) & ACTIVE_MODE != 0
    }

    /// The lock's id, assigning one on first use.
    #[inline(always)]
    pub(crate) fn id(&self) -> u64 {
        // Relaxed: the id never changes once set; coherence gives every
        // later load of `state` by this thread the same id.
        self.id_in(self.state.load(Ordering::Relaxed))
    }

    /// The id in a loaded `state` word, assigning one if it has none yet.
    #[inline(always)]
    fn id_in(&self, word: u64) -> u64 {
        let id = word & ID_MASK;
        if id != 0 { id } else { self.assign_id() }
    }

    #[cold]
    fn assign_id(&self) -> u64 {
        // Relaxed: uniqueness only.
        let fresh = NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        assert!(fresh < 1 << (61 - ID_SHIFT), "prwlock ids exhausted");
        // In Fence mode every release takes the slow path (for its fence):
        // set with the id, before any hold of the lock exists.
        let slow = if barrier::barrier_mode() == BarrierMode::Fence {
            SLOW_RELEASE
        } else {
            0
        };
        // Relaxed: the id is not a publication; the low bits are kept.
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & ID_MASK != 0 {
                return s & ID_MASK;
            }
            match self.state.compare_exchange_weak(
                s,
                (s & !NO_ID) | slow | fresh << ID_SHIFT,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return fresh << ID_SHIFT,
                Err(now) => s = now,
            }
        }
    }

    // ---------------------------------------------------------------- readers

    /// Fig. 3 `ReadLock`'s common case, in `Membarrier` mode with the
    /// thread's record cached: store, compiler fence, load.
    #[inline(always)]
    fn read_fast(&self) -> Option<ReadToken> {
        // A sentinel with no free slot if the thread has no cached record.
        let record = domain::cached(self.domain);
        // Relaxed: a first look (id, and skip the store if a writer is in);
        // the check that counts is the one after the barrier.
        let word = self.state.load(Ordering::Relaxed);
        // WRITER, NO_ID and ACTIVE_MODE clear (and so PASS and EXCLUSIVE,
        // which only exist beside WRITER): the word is the lock's id, perhaps
        // with SLOW_RELEASE, which writers ignore in a hold.
        if word & (WRITER | NO_ID | ACTIVE_MODE) != 0 {
            return None;
        }
        let id = word;
        if !record.first_slot_free() {
            return None;
        }
        let slot = 0;
        // Ordered before the load of `state` below by the light barrier,
        // which pairs with a writer's heavy barrier (or its version report,
        // see the module docs). Release (a plain `mov` on x86-64, like
        // Relaxed): the slot may have last held another lock, and a writer
        // of that lock that reads this value must still be ordered after
        // that earlier hold's release (a Relaxed store would end the
        // release sequence of the `FREE` store it reads past).
        record.slot(slot).store(id, Ordering::Release);
        barrier::light();
        // Acquire: pairs with the writer's releasing RMW on `state`, so the
        // critical section sees the last writer's stores. ACTIVE_MODE too:
        // once a writer established it, later writers skip the heavy barrier
        // (module docs, "Write-heavy mode").
        if self.state.load(Ordering::Acquire) & (WRITER | ACTIVE_MODE) == 0 {
            return Some(ReadToken::passive(record, slot));
        }
        self.back_off(record, slot);
        None
    }

    /// A writer came in between: withdraw the hold (Fig. 3 lines 4-5).
    ///
    /// A full fence, not the light barrier of an unlock: the writer's
    /// heavy barrier before it parks pairs with a reader's light one only
    /// if its scan saw the hold (`drain_readers`), and the scan is sure to
    /// see only holds taken before `WRITER`. This hold, taken after, may
    /// still sit in the store buffer at that scan, become visible to the
    /// writer's re-check (so it parks), and be withdrawn by a store whose
    /// wake-up test read the waiter count before the writer raised it: a
    /// writer parked for good (found in review, 2026-11-28; loom cannot
    /// show it, since inside a model the light barrier is a SeqCst fence).
    /// With the fence, the withdrawal and the count load are a Dekker pair
    /// with the writer's count increment, fence and re-check: it sees the
    /// slot free, or this load sees its count and wakes it. Backing off is
    /// the cold path of a read that met a writer.
    #[cold]
    #[inline(never)]
    fn back_off(&self, record: &Record, slot: usize) {
        // Release: pairs with the writer's Acquire scan; reports the version
        // (Fig. 3 lines 4-5).
        record
            .slot(slot)
            .store(FREE | self.domain.version(), Ordering::Release);
        // SeqCst fence: pairs with the waiter's SeqCst count increment and
        // fence before its re-check (`Waiters::wait_until_with_barrier`).
        fence(Ordering::SeqCst);
        self.drain.wake_all_after_barrier();
    }

    /// One acquisition outside the fast path; `None` if a writer is in.
    #[cold]
    #[inline(never)]
    fn read_attempt(&self) -> Option<ReadToken> {
        // Relaxed: the id (as in `id`), and a first look at the mode and the
        // sticky bit; the passive path checks the mode again after its
        // barrier.
        let word = self.state.load(Ordering::Relaxed);
        // A writer holds or waits: fail before taking a hold (as
        // `read_fast` does). A momentary hold would be withdrawn at once,
        // but its withdrawal wakes the parked writer, which may pay a heavy
        // barrier before parking again (found in review: 4 threads polling
        // `try_lock_shared` every 50 µs cost a parked writer 70 ms of CPU
        // in 0.5 s). A stale look only fails early, as a try may; a
        // waiting reader retries once it saw `WRITER` clear.
        if word & WRITER != 0 {
            return None;
        }
        let id = self.id_in(word);
        if word & ACTIVE_MODE == 0 {
            let mode = barrier::barrier_mode();
            let reserved =
                domain::register(self.domain).and_then(|r| r.free_slot().map(|slot| (r, slot)));
            if let Some((record, slot)) = reserved {
                // Release, ordered by the barrier below: as in `read_fast`.
                record.slot(slot).store(id, Ordering::Release);
                barrier::light_in(mode);
                // Acquire: as in `read_fast`.
                let state = self.state.load(Ordering::Acquire);
                if state & (WRITER | ACTIVE_MODE) == 0 {
                    return Some(ReadToken::passive(record, slot));
                }
                self.back_off(record, slot);
                if state & WRITER != 0 {
                    return None;
                }
                // Write-heavy mode began meanwhile: read actively.
            }
        }
        self.read_active(word)
    }

    /// Active mode (Fig. 3 ReadUnlock's `else` branch, taken up front): for
    /// a thread with no free slot, and for everybody in write-heavy mode.
    fn read_active(&self, word: u64) -> Option<ReadToken> {
        // Sticky, so a look that saw it set spares the RMW (coherence: our
        // later loads see it too).
        if word & SLOW_RELEASE == 0 {
            self.mark_slow_release();
        }
        // SeqCst RMW then SeqCst fence, pairing with the writer's SeqCst
        // fence between setting WRITER and reading `active` (a Dekker pair;
        // the fence also makes loom see it).
        let before = self.active.fetch_add(ACTIVE_ARRIVAL, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // Acquire: as in `read_fast`.
        let state = self.state.load(Ordering::Acquire);
        if state & WRITER != 0 {
            self.release_active();
            return None;
        }
        if state & ACTIVE_MODE != 0 && (before >> 32).is_multiple_of(READER_CLOCK_EVERY) {
            self.maybe_leave_active_mode(state);
        }
        Some(ReadToken::active())
    }

    /// An active-mode reader's clock check (one acquisition in
    /// `READER_CLOCK_EVERY`): once the mode has run its course, clear
    /// `ACTIVE_MODE` while no writer holds the lock, so that the next
    /// readers are passive again and the next writer measures its barrier.
    #[cold]
    #[inline(never)]
    fn maybe_leave_active_mode(&self, state: u64) {
        if self.policy.expired(clock::now()) {
            // Relaxed: a mode change publishes nothing. Fails if a writer
            // took WRITER meanwhile: the mode is stable under a writer, which
            // may rely on it (see `consensus`).
            let _ = self.state.compare_exchange(
                state,
                state & !ACTIVE_MODE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_shared_slow(&self) -> ReadToken {
        if let Some(token) = self.read_attempt() {
            return token;
        }
        // A writer is in: the waiting part goes through the gate.
        self.gate.wait(|| self.wait_and_read())
    }

    /// Waits for `WRITER` to clear, then reads; again while a writer came
    /// in first.
    fn wait_and_read(&self) -> ReadToken {
        loop {
            let record = domain::find(self.domain);
            // Acquire: the writer's release publishes its section; the wake
            // protocol needs the writer's SeqCst RMW before `wake_all`.
            self.readers.wait_until::<DefaultWait>(|| {
                if self.state.load(Ordering::Acquire) & WRITER == 0 {
                    return true;
                }
                // Still shut out: keep reporting the domain version, so that
                // the writer (which may have bumped it after we backed off)
                // can skip its heavy barrier for us. (Not in loom models,
                // where the skip cannot matter, see loom_tests.rs, and the
                // extra stores multiply the interleavings.)
                if let Some(record) = record.filter(|_| !cfg!(loom)) {
                    record.report(self.domain.version());
                }
                false
            });
            if let Some(token) = self.read_attempt() {
                return token;
            }
        }
    }

    #[inline(always)]
    fn unlock_shared_inline(&self, token: ReadToken) {
        let word = token.word;
        // Release: pairs with the writer's Acquire scan (`Record::holds`):
        // the read section happens before the writer's (Fig. 7 line 2).
        // For an active-mode token this is a store to a sentinel nobody
        // reads.
        word.store(FREE, Ordering::Release);
        barrier::light();
        // Relaxed: ordered after our store by the light barrier, which
        // pairs with the writer's heavy barrier: a writer that parked
        // waiting for us set WRITER before its barrier, so either it sees
        // our slot free or we see WRITER here. SLOW_RELEASE was set by this
        // thread before it converted this hold or took it in active mode
        // (coherence: we see our own earlier RMW), or at the lock's first
        // use in Fence mode.
        let state = self.state.load(Ordering::Relaxed);
        if state & (WRITER | SLOW_RELEASE) != 0 {
            self.unlock_shared_slow(token, state);
        }
    }

    /// A writer is at the door as we leave: report the version (Fig. 7
    /// line 6; reports only matter while a writer seeks consensus) and wake
    /// the writer if it parked waiting for readers.
    #[cold]
    #[inline(never)]
    fn release_under_writer(&self, word: &AtomicU64) {
        // Release: pairs with the writer's Acquire in `all_reported`.
        word.store(FREE | self.domain.version(), Ordering::Release);
        self.drain.wake_all_after_barrier();
    }

    /// The rest of a release whose status word is already FREE, when the
    /// lock word said WRITER or SLOW_RELEASE.
    #[cold]
    #[inline(never)]
    fn unlock_shared_slow(&self, token: ReadToken, mut state: u64) {
        if !token.is_passive() {
            self.release_active();
            return;
        }
        let (record, slot) = Record::locate(token.word);
        if record.take_converted(slot) {
            // Fig. 7 lines 3-5: the hold lives on the active count.
            self.release_active();
            return;
        }
        if barrier::barrier_mode() == BarrierMode::Fence {
            // The light barrier of Fence mode, then the check again.
            barrier::light_in(BarrierMode::Fence);
            // Relaxed: as in `unlock_shared_inline`.
            state = self.state.load(Ordering::Relaxed);
        }
        if state & WRITER != 0 {
            self.release_under_writer(token.word);
        }
    }

    /// Sets the sticky SLOW_RELEASE bit before this thread takes a hold
    /// whose release needs the slow path.
    #[cold]
    fn mark_slow_release(&self) {
        // Relaxed: read by this same thread's later release (coherence);
        // other threads' releases of plain holds may take the slow path
        // needlessly, which is harmless.
        self.state.fetch_or(SLOW_RELEASE, Ordering::Relaxed);
    }

    /// `active -= 1`, waking a writer waiting for the last one.
    #[cold]
    #[inline(never)]
    fn release_active(&self) {
        // SeqCst RMW (Release for the read section): the state change the
        // `drain` wait protocol requires before `wake_all`.
        if self.active.fetch_sub(1, Ordering::SeqCst) & ACTIVE_HOLDERS == 1 {
            self.drain.wake_all();
        }
    }

    /// The user-level `ScheduleOut` of Fig. 7: converts the calling
    /// thread's passive read holds of this lock to active ones, so that a
    /// writer waiting for them sleeps until they are released instead of
    /// polling. Call it inside a read section before blocking (I/O, a
    /// condition variable, another lock). Returns how many holds were
    /// converted (0 if the thread holds none in passive mode). The holds
    /// are released as usual; a converted hold never turns passive again.
    ///
    /// ```
    /// use prwlock::{ReadGuardExt, RwLock};
    ///
    /// let config = RwLock::new(String::from("v1"));
    /// let guard = config.read();
    /// assert_eq!(guard.schedule_out(), 1); // about to block while reading
    /// std::thread::sleep(std::time::Duration::from_millis(1));
    /// assert_eq!(&*guard, "v1");
    /// drop(guard);
    /// *config.write() = String::from("v2");
    /// ```
    pub fn schedule_out(&self) -> usize {
        // Relaxed: our own view of the id.
        let id = self.state.load(Ordering::Relaxed) & ID_MASK;
        let Some(record) = (id != 0).then(|| domain::find(self.domain)).flatten() else {
            return 0;
        };
        let mut converted = 0;
        for slot in 0..crate::PASSIVE_SLOTS {
            if record.is_hold_of(slot, id) {
                self.mark_slow_release();
                record.mark_converted(slot);
                // SeqCst: the increment must precede the tag below for any
                // writer (which reads the slot with Acquire, then `active`).
                self.active.fetch_add(1, Ordering::SeqCst);
                // Release: pairs with the writer's Acquire scan, publishing
                // the increment above.
                record.slot(slot).store(id | CONVERTED, Ordering::Release);
                converted += 1;
            }
        }
        converted
    }

    // ---------------------------------------------------------------- writers

    /// Takes the writer mutex; returns whether it was passed by the previous
    /// writer (consensus inherited).
    #[inline]
    fn acquire_writer(&self) -> bool {
        self.id();
        // Relaxed: the CAS validates it.
        let free = self.state.load(Ordering::Relaxed);
        // SeqCst: the WRITER store must precede our later reads of reader
        // status (with the fence in `consensus`); Acquire for the previous
        // writer's section.
        if free & (WRITER | PASS) == 0
            && self
                .state
                .compare_exchange(free, free | WRITER, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        {
            return false;
        }
        self.acquire_writer_slow()
    }

    #[cold]
    #[inline(never)]
    fn acquire_writer_slow(&self) -> bool {
        // SeqCst: read by the releasing writer to decide PASS; that writer
        // reads it after its own section, so it sees us (or we see WRITER
        // clear below).
        self.writers_waiting.fetch_add(1, Ordering::SeqCst);
        let passed = loop {
            // Relaxed: the CASes below validate it.
            let s = self.state.load(Ordering::Relaxed);
            if s & PASS != 0 {
                // Acquire: pairs with the passing writer's SeqCst RMW.
                if self
                    .state
                    .compare_exchange(s, s & !PASS, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
                {
                    break true;
                }
                continue;
            }
            if s & WRITER == 0 {
                // SeqCst: as in `acquire_writer`.
                if self
                    .state
                    .compare_exchange(s, s | WRITER, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
                {
                    break false;
                }
                continue;
            }
            self.writers.wait_until::<DefaultWait>(|| {
                // Relaxed: a wake-up condition; the CAS above acquires.
                let s = self.state.load(Ordering::Relaxed);
                s & PASS != 0 || s & WRITER == 0
            });
        };
        // SeqCst: before our release reads this count, so that we never
        // PASS to ourselves.
        self.writers_waiting.fetch_sub(1, Ordering::SeqCst);
        passed
    }

    /// Fig. 4 lines 6-16, after the writer mutex was taken fresh. With
    /// `wait == false` (try-lock) it checks once and reports whether the
    /// readers are all gone.
    fn consensus(&self, own: *const Record, wait: bool) -> bool {
        let id = self.id();
        // Relaxed: we hold WRITER, under which only we change ACTIVE_MODE.
        if self.state.load(Ordering::Relaxed) & ACTIVE_MODE != 0 {
            // Write-heavy mode, established by an earlier writer's consensus
            // (module docs): no passive hold can appear unseen, so no heavy
            // barrier. The SeqCst fence orders our WRITER store before the
            // reads of `active` (Dekker with the active readers' fence) and
            // of the slots (holds taken before the mode began).
            fence(Ordering::SeqCst);
            if !(self.domain.write_heavy_mode() && self.policy.keep_active(clock::now())) {
                // Relaxed: as the readers' clear; from our release on, new
                // readers are passive and the next writer runs the paper's
                // consensus.
                self.state.fetch_and(!ACTIVE_MODE, Ordering::Relaxed);
            }
            return self.drain_readers(id, self.domain.version(), own, wait);
        }
        if self.domain.write_heavy_mode() && self.policy.inhibits_passive() {
            // The previous barrier was paid less than N × B ago: switch to
            // active reading. Set before the fence and the barrier below,
            // like WRITER: a reader that misses it is seen by our scan.
            // Relaxed: ordered by the SeqCst fence below.
            self.state.fetch_or(ACTIVE_MODE, Ordering::Relaxed);
            self.policy.entered(clock::now());
            self.domain.count_active_mode_entry();
        }
        let version = self.domain.bump();
        // SeqCst fence: orders our WRITER (and ACTIVE_MODE) store and
        // version increment before the reads of reader status below
        // (store-load ordering: with the active readers' SeqCst fence, with
        // the heavy barrier for passive ones, and for records claimed
        // concurrently, see `Domain::claim`).
        fence(Ordering::SeqCst);
        if let Err(start) = self.reports_arrive(version, own, wait) {
            // AskForReport, for every straggler at once (the kernel
            // helper's targeted consensus where it can).
            self.domain.count_barrier();
            self.domain.heavy_barrier(version, own, false);
            self.policy.barrier_paid(start, clock::now());
        }
        self.drain_readers(id, version, own, wait)
    }

    /// Fig. 4 lines 12-16 after phase 1's reports or barrier: waits until
    /// no passive hold of `id` and no active reader is left (with `wait ==
    /// false`, checks once).
    fn drain_readers(&self, id: u64, version: u64, own: *const Record, wait: bool) -> bool {
        if wait {
            let drained = || self.drained(id);
            // Before parking: a passive reader releases with a plain store,
            // so pair its light barrier with a heavy one, on every CPU that
            // runs a reader of the domain (`all`: reports say nothing about
            // the wake-up flag); when only active readers are left (their
            // release is an RMW followed by `wake_all`), the SeqCst fence is
            // enough. No new passive hold of `id` can appear meanwhile
            // (WRITER).
            let before_park = || {
                if self.domain.any_holds(id) {
                    self.domain.heavy_barrier(version, own, true);
                }
            };
            self.drain
                .wait_until_with_barrier::<DefaultWait>(drained, before_park);
            true
        } else {
            self.drained(id)
        }
    }

    /// Whether every reader of the domain reported `version`, perhaps after
    /// a short spin (readers report on every release). If not, the clock
    /// reading at the first look that found a straggler: the heavy barrier's
    /// cost for the write-heavy-mode policy counts from there (the clock is
    /// read only on this path, so a writer whose readers report pays no
    /// clock reading).
    fn reports_arrive(&self, version: u64, own: *const Record, wait: bool) -> Result<(), u64> {
        if barrier::barrier_mode() == BarrierMode::Fence {
            // Readers run a SeqCst fence; our fence above pairs with it.
            return Ok(());
        }
        if self.domain.all_reported(version, own) {
            return Ok(());
        }
        let start = clock::now();
        if !wait || cfg!(loom) {
            return Err(start);
        }
        for _ in 0..REPORT_ROUNDS {
            for _ in 0..REPORT_SPINS {
                spin_loop();
            }
            if self.domain.all_reported(version, own) {
                return Ok(());
            }
        }
        Err(start)
    }

    /// Phase 1 then phase 2: no record holds `id` passively, then no active
    /// reader. In this order: a conversion increments `active` before it
    /// tags its slot (Release), so a writer that sees the slot no longer
    /// holding `id` (Acquire) also sees the increment.
    fn drained(&self, id: u64) -> bool {
        // SeqCst load of `active`: pairs with the active readers' SeqCst
        // increment and fence (Dekker).
        !self.domain.any_holds(id) && self.active.load(Ordering::SeqCst) & ACTIVE_HOLDERS == 0
    }

    /// The calling thread's record, after checking that it does not read
    /// this lock (a write request inside one's own read section would wait
    /// for itself forever). Not checked for a thread in its teardown that
    /// retired more records than it could keep (`domain::retired_unkept`:
    /// holds leaked in more than four domains at its exit), whose record
    /// here may be the one lost.
    fn own_record_not_reading(&self) -> *const Record {
        let own = domain::find(self.domain);
        // No registration: none yet, or the thread's thread-locals are being
        // destroyed, when a read guard that outlived them holds on the
        // record the thread retired (checked, but not the writer's own).
        if let Some(r) = own.or_else(|| domain::find_retired(self.domain)) {
            assert!(
                !r.holds_any_mode(self.id()),
                "PrwLock: write lock requested by a thread that holds a read lock on it \
                 (it would wait for itself forever)"
            );
        }
        own.map_or(ptr::null(), |r| r as *const Record)
    }

    /// Releases the writer mutex with `WRITER` cleared (never `PASS`).
    fn release_writer_free(&self) {
        // SeqCst RMW: Release for the write section; the state change the
        // wait protocols require before `wake_all`.
        self.state
            .fetch_and(!(WRITER | EXCLUSIVE), Ordering::SeqCst);
        self.readers.wake_all();
        self.writers.wake_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lock_api::RawRwLock;
    use std::time::Duration;

    /// Active-mode tokens spread over the sentinels by thread, read as
    /// active on every thread, and a passive token never does.
    #[test]
    fn active_tokens_spread_over_the_sentinels() {
        // All alive at once: a thread that starts after another exited may
        // get its identity, and so its sentinel.
        let all_in = std::sync::Barrier::new(16);
        let words: Vec<usize> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..16)
                .map(|_| {
                    s.spawn(|| {
                        let token = ReadToken::active();
                        assert!(!token.is_passive());
                        // The same sentinel for every hold of the thread.
                        assert!(ptr::eq(token.word, ReadToken::active().word));
                        all_in.wait();
                        token.word as *const AtomicU64 as usize
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut distinct = words.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() > 1,
            "16 threads shared one sentinel: {words:x?}"
        );
        let lock = PrwLock::new();
        let token = lock.lock_shared();
        if crate::barrier::barrier_mode() != BarrierMode::Fence {
            assert!(token.is_passive());
        }
        // SAFETY: the read acquisition just made.
        unsafe { lock.unlock_shared(token) };
    }

    /// A reader and a writer that wait long behind a writer engage the
    /// lock's gate (so the next waits are restricted), and both get in.
    #[test]
    fn deep_waits_engage_the_gate() {
        for wait_as_writer in [false, true] {
            let lock = PrwLock::new();
            let w = lock.lock_exclusive();
            assert!(!lock.gate.is_engaged());
            std::thread::scope(|s| {
                rwlock_core::testing::spawn_and_hold(s, Duration::from_millis(20), || {
                    if wait_as_writer {
                        let g = lock.lock_exclusive();
                        // SAFETY: our write.
                        unsafe { lock.unlock_exclusive(g) };
                    } else {
                        let g = lock.lock_shared();
                        // SAFETY: our read.
                        unsafe { lock.unlock_shared(g) };
                    }
                });
                // SAFETY: our write.
                unsafe { lock.unlock_exclusive(w) };
            });
            assert!(
                lock.gate.is_engaged(),
                "a deep wait ({}) did not engage the gate",
                if wait_as_writer { "writer" } else { "reader" }
            );
            assert_eq!(lock.gate.active(), 0);
            assert!(!lock.is_locked());
        }
    }
}
