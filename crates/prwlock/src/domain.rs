//! Lock domains and the per-thread reader status records (paper Section 3.4
//! "lock domain", Section 3.5 "per-thread data structure").
//!
//! A [`Domain`] groups the prwlocks that reach consensus together: it owns a
//! version counter that every writer of every lock in it increments, and the
//! status records of the threads that read those locks. A thread gets one
//! record per domain on its first read there and gives it back when it exits
//! (a thread-local destructor); the next thread to register reuses it, so a
//! domain uses as many records as it ever had threads *at once* (allocated
//! 64 at a time, 8 KiB).
//! Records are never freed: domains are `'static` (the process-wide
//! [`Domain::global`], or a user's `static`), so a record pointer never
//! dangles, and a writer can walk the records without any reclamation
//! scheme. They live in chunks with a bitmap of the live ones, so that a
//! writer's walk visits the records of the threads registered now, not of
//! every thread the domain ever had at once (`chunks`).
//!
//! A record (the paper's `st`) holds, for its owner:
//! - `slots`: up to [`PASSIVE_SLOTS`] locks of the domain held in passive
//!   read mode, by lock id (0: free). Holding more at once is allowed: the
//!   extra ones are taken in active mode (the lock's shared counter). A slot
//!   converted by `schedule_out` holds `id | CONVERTED`, which writers do not
//!   wait for (the lock's active count stands for it instead);
//! - the last domain version its owner reported (Fig. 3/7: `st.version <-
//!   lock.version`): not a field of its own, but the free slots' words,
//!   `FREE | version`;
//!
//! Ids rather than addresses identify locks in slots: a read guard that is
//! leaked (`mem::forget`) keeps its lock read-locked forever, as in every
//! lock_api lock, but cannot block a later lock that happens to reuse the
//! address.

use core::cell::{Cell, RefCell};
use core::ptr;

use crossbeam_utils::CachePadded;

use crate::barrier;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

mod chunks;

/// Locks one thread can hold in passive mode at once, per domain. A further
/// nested read is taken in active mode (one atomic increment and decrement
/// on the lock's shared counter) and is otherwise the same.
pub const PASSIVE_SLOTS: usize = 4;

/// Tag of a slot whose passive hold was converted to an active one.
pub(crate) const CONVERTED: u64 = 1 << 63;
/// Tag of a free slot; the low bits are the version its owner reported.
pub(crate) const FREE: u64 = 1 << 62;
/// A lock-word bit (see prwlock.rs) that a hold word may carry, since the
/// read fast path stores the lock word as is: writers ignore it.
pub(crate) const SLOW_RELEASE: u64 = 1 << 4;
/// Bits of a hold word that are not the lock id.
const HOLD_FLAGS: u64 = SLOW_RELEASE;

const _: () = assert!(PASSIVE_SLOTS.is_power_of_two());
const _: () =
    assert!(core::mem::size_of::<[AtomicU64; PASSIVE_SLOTS]>() <= core::mem::align_of::<Record>());

/// One thread's reader status in one domain (the paper's per-core `st`,
/// per thread in user space). Aligned to 128 bytes so that no two records,
/// written by different readers on every acquisition, share a line pair.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct Record {
    /// Status words (see the module docs); written by the owner, read by
    /// writers.
    slots: [AtomicU64; PASSIVE_SLOTS],
    /// Owner-only: bit `i` says slot `i`'s hold was converted by
    /// `schedule_out` (Fig. 7's `preempted` flag). In an RCU domain's
    /// record (`crate::rcu`), the depth of nested sections instead.
    /// Always Relaxed.
    converted: AtomicU32,
    /// Claimed by a live thread.
    in_use: AtomicBool,
    /// Its thread exited while a guard was leaked: never reused.
    retired: AtomicBool,
    /// Registered with the kernel helper by its owner (who writes it;
    /// writers read it to know whether the helper can reach the owner).
    kernel: AtomicBool,
    /// The chunk that holds it (`chunks`), set before the chunk is
    /// published; null in the sentinels.
    chunk: *const chunks::Chunk,
    /// What a record of an RCU domain belongs to (`crate::rcu`: the
    /// address of its `RcuDomain`, which the release fast path needs, with
    /// bit 0 `rcu::NESTED_LIVE` while the owner's section has nested
    /// guards); set by the owner, read by the owner. 0 in a prwlock domain.
    context: AtomicUsize,
    /// Puts `on_cpu` where the kernel helper's ABI has it
    /// (`prwlock_sys::Record`; asserted below).
    _gap: u64,
    /// Written by the kernel helper at each context switch of the owner
    /// (`prwlock_sys::ON_CPU | cpu`, `OFF_CPU`), 0 while not registered.
    /// A std atomic in every build: only the kernel writes it.
    on_cpu: core::sync::atomic::AtomicU32,
}

// The kernel helper reads `slots` and writes `on_cpu` at the offsets of its
// ABI (`prwlock_sys::Record`, checked against the C header there).
#[cfg(not(loom))]
const _: () = {
    assert!(
        core::mem::offset_of!(Record, slots) == core::mem::offset_of!(prwlock_sys::Record, slots)
    );
    assert!(
        core::mem::offset_of!(Record, on_cpu) == core::mem::offset_of!(prwlock_sys::Record, on_cpu)
    );
    assert!(core::mem::size_of::<Record>() == core::mem::size_of::<prwlock_sys::Record>());
    assert!(core::mem::align_of::<Record>() == prwlock_sys::RECORD_ALIGN);
    assert!(PASSIVE_SLOTS == prwlock_sys::SLOTS && FREE == prwlock_sys::SLOT_FREE);
};

// SAFETY: every field is an atomic except `chunk`, which is written once
// before the record's chunk is published (Release CAS on the chunk list's
// head) and only read afterwards.
unsafe impl Sync for Record {}
// SAFETY: as above; a record is never moved after publication.
unsafe impl Send for Record {}

impl Record {
    /// A free record, not yet in a chunk (`chunks::Chunk` sets `chunk`).
    fn new() -> Self {
        Record {
            slots: core::array::from_fn(|_| AtomicU64::new(FREE)),
            converted: AtomicU32::new(0),
            in_use: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            kernel: AtomicBool::new(false),
            chunk: ptr::null(),
            context: AtomicUsize::new(0),
            _gap: 0,
            on_cpu: core::sync::atomic::AtomicU32::new(0),
        }
    }

    /// A record that is never in a domain, whose slots are never free (the
    /// fast path's "no record" answer: it falls through to the slow path
    /// without a null check) or always read as converted (the record of
    /// active-mode tokens: their release leaves the fast path on the tag).
    #[cfg(not(loom))]
    const fn sentinel(word: u64) -> Self {
        let mut slots = [const { AtomicU64::new(0) }; PASSIVE_SLOTS];
        let mut i = 0;
        while i < PASSIVE_SLOTS {
            slots[i] = AtomicU64::new(word);
            i += 1;
        }
        Record {
            slots,
            converted: AtomicU32::new(0),
            in_use: AtomicBool::new(true),
            retired: AtomicBool::new(true),
            kernel: AtomicBool::new(false),
            chunk: ptr::null(),
            context: AtomicUsize::new(0),
            _gap: 0,
            on_cpu: core::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The same record with `context` as its context word (sentinels only).
    #[cfg(not(loom))]
    const fn with_context(self, context: usize) -> Self {
        Record {
            context: AtomicUsize::new(context),
            ..self
        }
    }

    #[cfg(loom)]
    fn with_context(self, context: usize) -> Self {
        Record {
            context: AtomicUsize::new(context),
            ..self
        }
    }

    #[cfg(loom)]
    fn sentinel(word: u64) -> Self {
        Record {
            slots: core::array::from_fn(|_| AtomicU64::new(word)),
            converted: AtomicU32::new(0),
            in_use: AtomicBool::new(true),
            retired: AtomicBool::new(true),
            kernel: AtomicBool::new(false),
            chunk: ptr::null(),
            context: AtomicUsize::new(0),
            _gap: 0,
            on_cpu: core::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The record and slot of a status word (the read token).
    pub(crate) fn locate(word: &AtomicU64) -> (&'static Record, usize) {
        let addr = word as *const AtomicU64 as usize;
        let base = addr & !(core::mem::align_of::<Record>() - 1);
        // Tokens point into a record's `slots`, which `repr(C)` puts at
        // offset 0 and which fit in the record's first 128 bytes (asserted
        // below).
        // SAFETY: so `base` is a record, and records are never freed.
        let record = unsafe { &*(base as *const Record) };
        (record, (addr - base) / core::mem::size_of::<AtomicU64>())
    }

    /// Whether slot `slot`'s hold of lock `id` (flags ignored) is here.
    #[inline]
    pub(crate) fn is_hold_of(&self, slot: usize, id: u64) -> bool {
        // Relaxed: the owner reads its own store.
        self.slots[slot].load(Ordering::Relaxed) & !HOLD_FLAGS == id
    }

    /// Marks slot `slot`'s hold converted (owner only).
    pub(crate) fn mark_converted(&self, slot: usize) {
        // Relaxed: owner-only word.
        let mask = self.converted.load(Ordering::Relaxed);
        self.converted.store(mask | 1 << slot, Ordering::Relaxed);
    }

    /// Whether slot `slot`'s hold was converted, clearing the mark (owner
    /// only).
    pub(crate) fn take_converted(&self, slot: usize) -> bool {
        // Relaxed: owner-only word.
        let mask = self.converted.load(Ordering::Relaxed);
        if mask & 1 << slot == 0 {
            return false;
        }
        self.converted.store(mask & !(1 << slot), Ordering::Relaxed);
        true
    }

    /// The owner's context word (see the field; owner only).
    #[inline(always)]
    pub(crate) fn context(&self) -> usize {
        // Relaxed: owner-only word.
        self.context.load(Ordering::Relaxed)
    }

    /// Sets the owner's context word (owner only).
    pub(crate) fn set_context(&self, context: usize) {
        // Relaxed: owner-only word.
        self.context.store(context, Ordering::Relaxed);
    }

    /// Sections nested inside the current one (RCU records only; owner
    /// only).
    #[inline(always)]
    pub(crate) fn rcu_depth(&self) -> u32 {
        // Relaxed: owner-only word.
        self.converted.load(Ordering::Relaxed)
    }

    /// Sets [`rcu_depth`](Self::rcu_depth) (owner only).
    #[inline(always)]
    pub(crate) fn set_rcu_depth(&self, depth: u32) {
        // Relaxed: owner-only word.
        self.converted.store(depth, Ordering::Relaxed);
    }

    /// Whether slot 0 is free: the fast path uses slot 0 only (a nested
    /// read takes the slow path, which finds another slot).
    #[inline(always)]
    pub(crate) fn first_slot_free(&self) -> bool {
        // Relaxed: the owner reads its own stores.
        self.slots[0].load(Ordering::Relaxed) & FREE != 0
    }

    /// A free slot for a new passive hold (owner only; the caller's store
    /// of the lock id takes it).
    #[inline(always)]
    pub(crate) fn free_slot(&self) -> Option<usize> {
        // Relaxed: the owner reads its own stores.
        if self.slots[0].load(Ordering::Relaxed) & FREE != 0 {
            return Some(0);
        }
        self.free_nested_slot()
    }

    #[cold]
    #[inline(never)]
    fn free_nested_slot(&self) -> Option<usize> {
        // Relaxed: the owner reads its own stores.
        (1..PASSIVE_SLOTS).find(|&i| self.slots[i].load(Ordering::Relaxed) & FREE != 0)
    }

    /// The slot words, for the owner to publish holds and writers to read.
    #[inline(always)]
    pub(crate) fn slot(&self, slot: usize) -> &AtomicU64 {
        // The mask (PASSIVE_SLOTS is a power of two) spares the fast path a
        // bounds check; slot numbers come from `free_slot` and are in range.
        &self.slots[slot % PASSIVE_SLOTS]
    }

    /// Whether some slot holds lock `id` passively (writer side).
    #[inline]
    pub(crate) fn holds(&self, id: u64) -> bool {
        // Acquire: pairs with the owner's Release store that clears or
        // converts the slot, so a writer that sees it cleared also sees the
        // read critical section as finished (and a conversion's increment of
        // the active count).
        self.slots
            .iter()
            .any(|s| s.load(Ordering::Acquire) & !HOLD_FLAGS == id)
    }

    /// Whether some slot holds lock `id`, passively or converted (owner
    /// side, to diagnose a write request inside a read section).
    pub(crate) fn holds_any_mode(&self, id: u64) -> bool {
        // Relaxed: the owner reads its own stores.
        self.slots
            .iter()
            .any(|s| s.load(Ordering::Relaxed) & !(CONVERTED | HOLD_FLAGS) == id)
    }

    /// Whether the owner reported `version` or a later one (in a free slot)
    /// (writer side).
    #[inline]
    fn reported(&self, version: u64) -> bool {
        self.slots.iter().any(|s| {
            // Acquire: pairs with the owner's Release store of the report:
            // its earlier stores (holds still in place) are visible to us.
            let word = s.load(Ordering::Acquire);
            word & FREE != 0 && word & !FREE >= version
        })
    }

    /// Reports `version` in a free slot while the owner waits for a writer
    /// (owner only): the writer can then skip its heavy barrier.
    pub(crate) fn report(&self, version: u64) {
        if let Some(slot) = self.free_slot() {
            // Release: as for every report (see `reported`).
            self.slots[slot].store(FREE | version, Ordering::Release);
        }
    }

    /// Registers the record with the kernel helper, if the process runs
    /// in `KernelHelper` mode (owner only, right after claiming it). On
    /// failure (more domains than the helper tracks per thread, say) the
    /// record stays unregistered and writers use `membarrier` when it has
    /// not reported.
    #[cfg(not(loom))]
    fn register_with_kernel(&self, domain: &'static Domain) {
        let Some(dev) = barrier::device() else {
            return;
        };
        // Records are never freed (domains are 'static) and are only ever
        // status records, with the ABI's layout where the helper looks
        // (asserted above).
        // SAFETY: so the record stays valid and is what the helper expects.
        let registered = unsafe {
            dev.register(
                self as *const Record as *const prwlock_sys::Record,
                domain.cookie(),
            )
        };
        if registered.is_ok() {
            // Release: pairs with the Acquire in `Domain::heavy_barrier`: a
            // writer that sees the flag asks the helper, which has the
            // registration.
            self.kernel.store(true, Ordering::Release);
        }
    }

    /// Ends the kernel helper's registration (owner only, at thread exit).
    #[cfg(not(loom))]
    fn unregister_from_kernel(&self, domain: &'static Domain) {
        // Relaxed: the owner reads its own store.
        if !self.kernel.load(Ordering::Relaxed) {
            return;
        }
        if let Some(dev) = barrier::device() {
            let _ = dev.unregister(
                self as *const Record as *const prwlock_sys::Record,
                domain.cookie(),
            );
        }
        // Release: a writer that reads `false` uses membarrier for this
        // record, which is always sound.
        self.kernel.store(false, Ordering::Release);
    }

    /// Whether a consensus must consider this record: not `own`, not
    /// retired, owned by a live thread.
    #[inline]
    pub(crate) fn is_live_other(&self, own: *const Record) -> bool {
        !ptr::eq(self, own)
            // Acquire: pairs with `Record::release` (retired: its thread
            // has exited and takes no new hold).
            && !self.retired.load(Ordering::Acquire)
            // Acquire: a free record's last owner released it (Release); a
            // thread that claims it afterwards runs a SeqCst fence before
            // its first check of a writer word (see `claim`).
            && self.in_use.load(Ordering::Acquire)
    }

    /// Whether a wait for what this record holds must consider it: not
    /// `own`, and claimed, by a live thread or retired (its thread gave it
    /// back with a hold in it: a leaked guard, or one that a thread-local
    /// destroyed after the thread's records still owns, whose release is to
    /// come). A retired record takes no new hold, so reports and the
    /// barrier decision skip it (`is_live_other`); its holds do not end
    /// until their guards drop.
    #[inline]
    pub(crate) fn is_claimed_other(&self, own: *const Record) -> bool {
        // Acquire: as in `is_live_other` (a retired record stays in use).
        !ptr::eq(self, own) && self.in_use.load(Ordering::Acquire)
    }

    /// Whether the kernel helper saw the owner leave its CPU (and it has
    /// not run since). Only the helper writes `OFF_CPU`, and only while
    /// the record is registered (it writes 0 when the registration ends).
    #[inline]
    pub(crate) fn off_cpu(&self) -> bool {
        // Acquire: the helper writes the word after the scheduler's full
        // barrier that followed the owner's last user-space store (on the
        // x86-64 and arm64 kernels a plain store after smp_mb); the
        // writer's reads of the owner's slots come after this load.
        self.on_cpu.load(core::sync::atomic::Ordering::Acquire) & prwlock_sys::OFF_CPU != 0
    }

    /// Gives the record back at thread exit (or retires it if a hold is
    /// still in it, so that no other thread inherits a held slot: a leaked
    /// guard, or a live one in a thread-local destroyed after this one,
    /// whose release writes the slot later).
    /// Whether it retired the record.
    fn release(&self, _domain: &'static Domain) -> bool {
        #[cfg(not(loom))]
        self.unregister_from_kernel(_domain);
        // Relaxed: the owner reads its own stores.
        if self
            .slots
            .iter()
            .any(|s| s.load(Ordering::Relaxed) & FREE == 0)
        {
            // Release: pairs with the Acquire in `Domain::all_reported`,
            // which then skips this record (its owner takes no new hold;
            // the leaked ones stay visible to `holds`).
            self.retired.store(true, Ordering::Release);
            return true;
        }
        // Relaxed: owner-only word (a leaked converted guard's mark).
        self.converted.store(0, Ordering::Relaxed);
        // Off the walks first, then free (`chunks`, module docs).
        // SAFETY: a claimed record is in a published chunk, never freed.
        if let Some(chunk) = unsafe { self.chunk.as_ref() } {
            chunk.clear_live(self);
        }
        // Release: pairs with the Acquire CAS of the next owner in
        // `try_claim`, which so inherits this thread's reports and cleared
        // slots.
        self.in_use.store(false, Ordering::Release);
        false
    }

    /// Gives back a record that [`release`](Self::release) retired, once
    /// its holds have ended: what `release` does for a record without a
    /// hold. Run by the owner thread after its last thread-local
    /// destructor ([`late_reclaim`]), so after every release it made.
    /// Whether it did: a hold still in the record (a leaked guard, or one
    /// that a later destructor still owns) keeps it retired.
    #[cfg(not(loom))]
    fn reclaim(&self) -> bool {
        // Relaxed: the owner reads its own stores.
        if self
            .slots
            .iter()
            .any(|s| s.load(Ordering::Relaxed) & FREE == 0)
        {
            return false;
        }
        // Relaxed: owner-only word.
        self.converted.store(0, Ordering::Relaxed);
        // Off the walks first, then free, as in `release`.
        // SAFETY: a claimed record is in a published chunk, never freed.
        if let Some(chunk) = unsafe { self.chunk.as_ref() } {
            chunk.clear_live(self);
        }
        // Relaxed: published by the Release store below; a claimer that
        // reads it stale only skips the record (`try_claim`). A walker that
        // loaded the live bit before it was cleared may now take the record
        // for a live one, as it may during any `release`: it then runs a
        // heavy barrier it did not need, and waits for no hold (the slots
        // are free).
        self.retired.store(false, Ordering::Relaxed);
        // Release: pairs with the next owner's Acquire CAS in `try_claim`.
        self.in_use.store(false, Ordering::Release);
        true
    }

    /// Claims this record if it is free (`chunks::ChunkList::claim`).
    fn try_claim(&self) -> bool {
        !self.retired.load(Ordering::Relaxed)
            // Acquire on success: pairs with the last owner's Release in
            // `release`.
            && self
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Claims a record of a chunk not yet published (its publication
    /// orders this store).
    fn claim_fresh(&self) {
        // Relaxed: published by the chunk's Release CAS.
        self.in_use.store(true, Ordering::Relaxed);
    }
}

/// A set of prwlocks that reach reader consensus together (paper Section
/// 3.4): one version counter, one set of per-thread status records.
///
/// A writer of any lock in a domain increments the domain's version and, if
/// some reader of the domain has not reported it, issues one heavy barrier
/// for the whole process; it then waits only for readers of *its* lock.
/// Unrelated groups of locks can live in separate domains so that their
/// writers do not bump each other's version (which is what makes readers
/// report, and lets a writer skip the barrier).
///
/// ```
/// use prwlock::{Domain, PrwLock};
///
/// static TABLES: Domain = Domain::new();
/// static ROUTES: lock_api::RwLock<PrwLock, Vec<u32>> =
///     lock_api::RwLock::from_raw(PrwLock::in_domain(&TABLES), Vec::new());
///
/// ROUTES.write().push(7);
/// assert_eq!(ROUTES.read().len(), 1);
/// assert!(TABLES.stats().records >= 1);
/// ```
#[derive(Debug)]
pub struct Domain {
    /// Incremented by each writer's consensus (Fig. 4 line 6).
    version: CachePadded<AtomicU64>,
    /// The records, in chunks with a bitmap of the live ones (push-only;
    /// records are reused, never removed).
    records: chunks::ChunkList,
    /// Heavy barriers issued by writers of this domain's locks.
    barriers: AtomicU64,
    /// Whether the domain's locks may switch to active reading
    /// (`crate::policy`). Plain atomics even in loom builds: settings and
    /// statistics, not protocol.
    write_heavy_mode: core::sync::atomic::AtomicBool,
    /// Switches of this domain's locks to active reading (a statistic).
    active_mode_entries: core::sync::atomic::AtomicU64,
}

/// What a domain's records are (see [`Domain::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainStats {
    /// Records ever claimed: about the most threads registered at once (a
    /// claim that races a release, whose record is off the walks but not
    /// yet free, takes the next free record, so a few more under churn).
    pub records: usize,
    /// Records owned by a live thread now.
    pub in_use: usize,
    /// Records retired because their thread gave them back with a read
    /// still held: a leaked guard (retired for good), or one alive in a
    /// thread-local that is destroyed after the thread's records (given
    /// back at the thread's very end once that guard has dropped; retired
    /// for good if the thread had more than four such records).
    pub retired: usize,
    /// The domain's version: the number of passive-mode writer consensus
    /// rounds (a write in active mode, see [`crate::policy`], runs none).
    pub version: u64,
    /// Consensus rounds that needed a heavy barrier (`membarrier`) because
    /// some reader had not reported the round's version; the others skipped
    /// it. (A writer that parks waiting for passive readers to leave runs
    /// one more, not counted here.)
    pub heavy_barriers: u64,
    /// Times a lock of the domain switched to active reading because its
    /// writes came too close for their heavy barriers ([`crate::policy`]).
    pub active_mode_entries: u64,
}

#[cfg(not(loom))]
pub(crate) static GLOBAL: Domain = Domain::new();
#[cfg(not(loom))]
static NO_RECORD: Record = Record::sentinel(0);
/// How many sentinel records active-mode tokens spread over (see
/// [`active_record`]).
const ACTIVE_RECORDS: usize = 8;
const _: () = assert!(ACTIVE_RECORDS.is_power_of_two());

#[cfg(not(loom))]
static ACTIVE_RECORD: [Record; ACTIVE_RECORDS] =
    [const { Record::sentinel(CONVERTED) }; ACTIVE_RECORDS];
#[cfg(not(loom))]
static RCU_NO_RECORD: Record = Record::sentinel(0).with_context(crate::rcu::NESTED_LIVE);

#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: Domain = Domain::new();
    static ref NO_RECORD: Record = Record::sentinel(0);
    static ref ACTIVE_RECORD: [Record; ACTIVE_RECORDS] =
        core::array::from_fn(|_| Record::sentinel(CONVERTED));
    static ref RCU_NO_RECORD: Record = Record::sentinel(0).with_context(crate::rcu::NESTED_LIVE);
}

/// The record that the calling thread's active-mode read tokens point to
/// (its slots read as converted, so their release takes the slow path).
///
/// The release of every hold stores `FREE` to its token's word before it
/// looks at the lock, and nobody reads the word of an active-mode token.
/// One sentinel for the process made that store a line written by every
/// thread reading in active mode, on any lock: a line moved between
/// cores on each release, which the release's `active -= 1` (a locked
/// instruction, which waits for the store buffer) then waited for. So
/// threads are spread over [`ACTIVE_RECORDS`] sentinels, each 128 bytes,
/// by a hash of their identity.
#[inline]
pub(crate) fn active_record() -> &'static Record {
    let records: &'static [Record; ACTIVE_RECORDS] = &ACTIVE_RECORD;
    // Inside a model every thread shares the first: addresses differ
    // between executions, and the choice does not matter to the protocol.
    #[cfg(loom)]
    let index = 0;
    #[cfg(not(loom))]
    let index = {
        const FIBONACCI: u64 = 0x9e37_79b9_7f4a_7c15;
        let bits = ACTIVE_RECORDS.trailing_zeros();
        let hash = (rwlock_core::thread_id::current() as u64).wrapping_mul(FIBONACCI);
        // The top `bits` bits (none with one sentinel).
        hash.checked_shr(64 - bits).unwrap_or(0) as usize
    };
    &records[index]
}

/// Whether `word` is a slot of an active-mode sentinel (an active-mode
/// token's word).
#[inline]
pub(crate) fn is_active_word(word: &AtomicU64) -> bool {
    let records: &'static [Record; ACTIVE_RECORDS] = &ACTIVE_RECORD;
    let offset = (word as *const AtomicU64 as usize).wrapping_sub(records.as_ptr() as usize);
    offset < core::mem::size_of::<[Record; ACTIVE_RECORDS]>()
}

/// FCP-RCU's sentinel record: slot 0 never free (a section begun on it
/// leaves the fast path on the nesting test) and the context word's
/// `NESTED_LIVE` set (a guard that names it leaves the release's fast path
/// on the same test as a nested section's). The guards of sections
/// counted in `active` name it.
#[inline(always)]
pub(crate) fn rcu_no_record() -> &'static Record {
    #[cfg(not(loom))]
    {
        &RCU_NO_RECORD
    }
    #[cfg(loom)]
    {
        &RCU_NO_RECORD
    }
}

#[inline(always)]
fn no_record() -> &'static Record {
    #[cfg(not(loom))]
    {
        &NO_RECORD
    }
    #[cfg(loom)]
    {
        &NO_RECORD
    }
}

impl Default for Domain {
    fn default() -> Self {
        Self::new()
    }
}

impl Domain {
    rwlock_core::loom_const_fn! {
        /// An empty domain. Locks need it `'static`: put it in a `static`.
        pub fn new() -> Self {
            Domain {
                version: CachePadded::new(AtomicU64::new(0)),
                records: chunks::ChunkList::new(),
                barriers: AtomicU64::new(0),
                write_heavy_mode: core::sync::atomic::AtomicBool::new(true),
                active_mode_entries: core::sync::atomic::AtomicU64::new(0),
            }
        }
    }

    /// Whether the domain's locks may switch to active reading when their
    /// writes come so close together that heavy barriers would dominate
    /// (the write-heavy mode of [`crate::policy`]; on by default). Off, every
    /// lock of the domain stays the paper's passive lock, whatever its
    /// writes cost: for measurement, and for tests that count barriers.
    /// Takes effect at each lock's next passive-mode write; a lock already
    /// in active mode leaves it at its next write, or when the mode's time
    /// runs out (at most `N × B` later: its readers' clock checks look at
    /// the time only, not at this setting).
    pub fn set_write_heavy_mode(&self, allowed: bool) {
        // Relaxed: a setting; a write that misses a change behaves as before
        // it, which is correct either way.
        self.write_heavy_mode
            .store(allowed, core::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the write-heavy mode is allowed (see
    /// [`set_write_heavy_mode`](Self::set_write_heavy_mode)).
    pub fn write_heavy_mode(&self) -> bool {
        // Relaxed: as in `set_write_heavy_mode`.
        self.write_heavy_mode
            .load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a lock's switch to active reading.
    pub(crate) fn count_active_mode_entry(&self) {
        // Relaxed: a statistic.
        self.active_mode_entries
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }

    /// The process-wide domain that [`PrwLock::new`](crate::PrwLock::new)
    /// and `INIT` use.
    #[inline]
    pub fn global() -> &'static Domain {
        #[cfg(not(loom))]
        {
            &GLOBAL
        }
        #[cfg(loom)]
        {
            &GLOBAL
        }
    }

    /// The current version (Acquire: pairs with the writers' SeqCst
    /// increments, so a reader that reports it has seen their writer words).
    #[inline(always)]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// A writer's increment (Fig. 4 line 6). SeqCst: a release for readers
    /// that acquire the new value (see `version`), and part of the writer's
    /// store-load ordering before it reads records.
    pub(crate) fn bump(&self) -> u64 {
        self.version.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The live records of the domain: claimed by a running thread, or
    /// retired with a leaked hold (`chunks`: a free record holds nothing
    /// and has nothing to report).
    pub(crate) fn records(&self) -> chunks::Records<'_> {
        self.records.live()
    }

    /// Whether every live record other than `own` reported at least
    /// `version`, or (kernel helper) has its owner off CPU: then no reader
    /// of the domain can be in the window between its status store and its
    /// check of a writer word (see the lock's module docs), and the heavy
    /// barrier is not needed.
    pub(crate) fn all_reported(&self, version: u64, own: *const Record) -> bool {
        self.all_reported_by(own, |r| r.reported(version))
    }

    /// [`all_reported`](Self::all_reported) with the caller's test of a
    /// report (FCP-RCU's records report in slot 0 also inside a section).
    #[inline]
    pub(crate) fn all_reported_by(
        &self,
        own: *const Record,
        reported: impl Fn(&Record) -> bool,
    ) -> bool {
        self.records().all(|r| {
            !r.is_live_other(own)
                || reported(r)
                // The helper marked the owner off CPU after the scheduler's
                // full barrier (so its stores are visible), and marks it on
                // CPU again, then runs smp_mb(), before it returns to user
                // space: with our SeqCst fence after setting WRITER, either
                // we see it back on CPU or its next check sees WRITER. The
                // helper's own consensus skips such a thread for the same
                // reason (kmod/prwlock_helper.c); this spares the request.
                || r.off_cpu()
        })
    }

    /// The domain's name for the kernel helper: its address (domains are
    /// `'static`, so it is unique for the process's life).
    #[cfg(not(loom))]
    fn cookie(&'static self) -> u64 {
        self as *const Domain as u64
    }

    /// The heavy barrier for readers of this domain (the writer stored its
    /// writer bit and ran a SeqCst fence before). In `KernelHelper` mode,
    /// the helper's consensus: a barrier only on the CPUs running a
    /// registered reader of the domain that has not reported `version`
    /// (with `all`: every registered reader, as a writer about to park
    /// needs, see `PrwLock::consensus`), provided every record it must
    /// reach is registered; otherwise, and in `Membarrier` mode,
    /// `membarrier`. Records skipped here are skipped for the reasons
    /// `all_reported` gives (own, retired, free), except that with `all`
    /// a retired record counts: its owner may still be running (a guard
    /// alive in its thread-local teardown) and its release must see a
    /// parked waiter's flag, but it left the helper when it retired, so
    /// only `membarrier` reaches it.
    pub(crate) fn heavy_barrier(&'static self, version: u64, own: *const Record, all: bool) {
        #[cfg(not(loom))]
        if let Some(dev) = barrier::device() {
            let unreachable = self.records().any(|r| {
                (if all {
                    r.is_claimed_other(own)
                } else {
                    r.is_live_other(own) && !r.reported(version)
                })
                    // Acquire: pairs with the Release in
                    // `register_with_kernel` (a retired record reads false).
                    && !r.kernel.load(Ordering::Acquire)
            });
            if !unreachable && dev.consensus(self.cookie(), version, all).is_ok() {
                // SeqCst: the interrupted CPUs' barriers (the helper runs
                // smp_mb() after them) before our reads of reader status.
                fence(Ordering::SeqCst);
                return;
            }
        }
        let _ = (version, own, all);
        barrier::heavy();
    }

    /// Counts a consensus round's heavy barrier.
    pub(crate) fn count_barrier(&self) {
        // Relaxed: a statistic.
        self.barriers.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether any record holds lock `id` passively.
    pub(crate) fn any_holds(&self, id: u64) -> bool {
        self.records().any(|r| r.holds(id))
    }

    /// Counts of the domain's records (a snapshot: threads come and go).
    pub fn stats(&self) -> DomainStats {
        // Relaxed: statistics.
        let (records, in_use, retired) = self.records.counts(
            |r| r.in_use.load(Ordering::Relaxed),
            |r| r.retired.load(Ordering::Relaxed),
        );
        DomainStats {
            records,
            in_use,
            retired,
            // Relaxed: statistics.
            version: self.version.load(Ordering::Relaxed),
            heavy_barriers: self.barriers.load(Ordering::Relaxed),
            active_mode_entries: self
                .active_mode_entries
                .load(core::sync::atomic::Ordering::Relaxed),
        }
    }

    /// A record for the calling thread: a free one if there is one, else one
    /// of a new chunk.
    #[cold]
    fn claim(&'static self) -> &'static Record {
        let record = self.records.claim();
        // SeqCst fence: a writer that walked the records before the claim
        // set the record's live bit (and so did not see it, or saw it free)
        // ran a SeqCst fence after setting its writer word; this fence
        // follows it in the single SeqCst order, so our first check of a
        // writer word sees it (`chunks`, module docs).
        fence(Ordering::SeqCst);
        record
    }
}

/// The calling thread's records, one per domain it read in.
struct Registrations {
    list: RefCell<Vec<(&'static Domain, &'static Record)>>,
}

impl Drop for Registrations {
    fn drop(&mut self) {
        // `try_with`: loom's thread-locals (not std's `const` ones) may be
        // gone already when this destructor runs.
        let _ = REGISTRATIONS_GONE.try_with(|gone| gone.set(true));
        // The cache may be read by destructors that run after this one:
        // empty it first so that they register afresh (and, finding this
        // list gone, read in active mode).
        // (A null record is never read: `cached` reads the record only when
        // the domain matches, and no domain is null.)
        let _ = CACHE.try_with(|c| c.set((ptr::null(), ptr::null())));
        let _ = RCU_CACHE.try_with(|c| c.set((ptr::null(), ptr::null())));
        for (domain, record) in self.list.borrow_mut().drain(..) {
            if record.release(domain) {
                keep_retired(domain, record);
            }
        }
    }
}

/// Records the calling thread retired in its thread-local teardown (a hold
/// still in them), so that the thread can still tell it holds them
/// ([`find_retired`]). Bounded: a thread that retires more than this
/// (holds leaked or alive in more domains at once) keeps the first ones
/// and notes that it lost some ([`retired_unkept`]).
const RETIRED_KEPT: usize = 4;

/// [`RETIRED_KEPT`] pairs (domain, record) of the calling thread, null
/// when unused.
type RetiredHere = [(*const Domain, *const Record); RETIRED_KEPT];

fn keep_retired(domain: &'static Domain, record: &'static Record) {
    #[cfg(not(loom))]
    late_reclaim::arm();
    let kept = RETIRED_HERE
        .try_with(|kept| {
            let mut pairs = kept.get();
            let Some(free) = pairs.iter_mut().find(|(d, _)| d.is_null()) else {
                return false;
            };
            *free = (domain, record);
            kept.set(pairs);
            true
        })
        .unwrap_or(false);
    if !kept {
        let _ = RETIRED_UNKEPT.try_with(|u| u.set(true));
    }
}

/// Gives back, once the thread's thread-local destructors have all run,
/// the records it retired with a hold in them whose holds have ended since.
///
/// A guard kept in a thread-local that is destroyed after the thread's
/// registrations (first touched before the thread's first read) makes
/// [`Registrations`]' destructor retire the record; the guard drops a
/// moment later. Without this, every such thread left a record retired for
/// good, which every later write of the domain walked (found in review,
/// 2026-11-29: after 1000 such threads a write took 5.9 µs instead of
/// 22 ns). glibc runs a thread's `pthread_key_create` destructors after its
/// C++-style thread-local destructors (`__call_tls_dtors`, which run
/// Rust's), so a key armed at retirement runs after the guard's release.
/// Records still held then stay retired; the key is re-armed, and glibc
/// calls it again, up to `PTHREAD_DESTRUCTOR_ITERATIONS` times, in case a
/// later key's destructor owns the guard. Kept records only
/// ([`RETIRED_KEPT`]); the main thread's exit runs no key destructors.
#[cfg(not(loom))]
mod late_reclaim {
    use core::ffi::c_void;
    use core::ptr;
    use std::sync::OnceLock;

    use super::RETIRED_HERE;

    /// The key, or `None` if the process has no key left to give (the
    /// records then stay retired, as before).
    fn key() -> Option<libc::pthread_key_t> {
        static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();
        *KEY.get_or_init(|| {
            let mut key: libc::pthread_key_t = 0;
            // `run` has the destructor's signature and is sound on any thread.
            // SAFETY: `key` is a valid out-pointer; `run` is as above.
            let rc = unsafe { libc::pthread_key_create(&mut key, Some(run)) };
            (rc == 0).then_some(key)
        })
    }

    /// Has `run` called at the calling thread's exit.
    pub(super) fn arm() {
        if let Some(key) = key() {
            // A non-null value is what makes glibc call the destructor.
            // The value is a marker, never dereferenced.
            // SAFETY: a key from `pthread_key_create`, never deleted.
            unsafe { libc::pthread_setspecific(key, ptr::dangling::<u8>().cast()) };
        }
    }

    /// The key's destructor: reclaims the kept records whose holds ended.
    extern "C" fn run(_marker: *mut c_void) {
        let still_held = RETIRED_HERE
            .try_with(|kept| {
                let mut pairs = kept.get();
                let mut held = false;
                for pair in pairs.iter_mut().filter(|(_, r)| !r.is_null()) {
                    // SAFETY: records are never freed.
                    if unsafe { &*pair.1 }.reclaim() {
                        // No longer this thread's (`find_retired`).
                        *pair = (ptr::null(), ptr::null());
                    } else {
                        held = true;
                    }
                }
                kept.set(pairs);
                held
            })
            .unwrap_or(false);
        if still_held {
            arm();
        }
    }
}

/// Whether the calling thread retired a record it could not keep (beyond
/// [`RETIRED_KEPT`]): it can then no longer tell, in any domain, whether
/// it still holds something there ([`find_retired`] answers `None` for
/// that record's domain). FCP-RCU counts the thread as in a section of
/// every domain then, as it does for the sections it cannot count
/// (`ActiveHere::untracked`): a `defer` only queues and a `synchronize`
/// panics, rather than wait for the thread's own section. (Found in review
/// on 2026-11-28: it waited for itself, a hang at thread exit.)
pub(crate) fn retired_unkept() -> bool {
    RETIRED_UNKEPT.try_with(Cell::get).unwrap_or(true)
}

/// The record the calling thread retired in `domain` during its
/// thread-local teardown (see [`find`], which no longer answers then).
pub(crate) fn find_retired(domain: &'static Domain) -> Option<&'static Record> {
    // Only a thread whose registrations are gone has retired a record (the
    // common case, a thread that never read here, stops at this test;
    // `None` from a call back into the registrations counts as alive).
    if REGISTRATIONS_GONE
        .try_with(|gone| !gone.get())
        .unwrap_or(false)
    {
        return None;
    }
    RETIRED_HERE
        .try_with(|kept| {
            kept.get()
                .iter()
                .find(|(d, _)| ptr::eq(*d, domain))
                // SAFETY: records are never freed.
                .map(|&(_, r)| unsafe { &*r })
        })
        .ok()
        .flatten()
}

#[cfg(not(loom))]
crate::sync::thread_local! {
    /// The fast path's cache: the domain read in last and this thread's
    /// record there. `const` and without a destructor, so reading it is one
    /// thread-pointer-relative load and works during thread teardown.
    static CACHE: Cell<(*const Domain, *const Record)> =
        const { Cell::new((ptr::null(), &NO_RECORD)) };
    static REGISTRATIONS: Registrations =
        const { Registrations { list: RefCell::new(Vec::new()) } };
    /// FCP-RCU's fast-path cache (`crate::rcu`): the record domain read in
    /// last and this thread's record there, null when none. Separate from
    /// `CACHE` so that a thread that alternates between a prwlock and an
    /// RCU domain keeps both fast paths.
    static RCU_CACHE: Cell<(*const Domain, *const Record)> =
        const { Cell::new((ptr::null(), ptr::null())) };
    /// The records this thread retired in its teardown (`keep_retired`);
    /// `const` and without a destructor, so that it outlives
    /// `REGISTRATIONS`.
    static RETIRED_HERE: Cell<RetiredHere> =
        const { Cell::new([(ptr::null(), ptr::null()); RETIRED_KEPT]) };
    /// The thread retired a record `RETIRED_HERE` had no room for.
    static RETIRED_UNKEPT: Cell<bool> = const { Cell::new(false) };
    /// A call of `with_registrations` is running on this thread.
    static IN_REGISTRATIONS: Cell<bool> = const { Cell::new(false) };
    /// `REGISTRATIONS` has been destroyed (its destructor ran).
    static REGISTRATIONS_GONE: Cell<bool> = const { Cell::new(false) };
    /// `REGISTRATIONS` has been initialised (a `with_registrations` call
    /// reached it).
    static REGISTRATIONS_READY: Cell<bool> = const { Cell::new(false) };
}

// loom's `thread_local!` has no `const` initialiser form.
#[cfg(loom)]
crate::sync::thread_local! {
    static CACHE: Cell<(*const Domain, *const Record)> = Cell::new((ptr::null(), ptr::null()));
    static REGISTRATIONS: Registrations = Registrations { list: RefCell::new(Vec::new()) };
    static RCU_CACHE: Cell<(*const Domain, *const Record)> = Cell::new((ptr::null(), ptr::null()));
    static RETIRED_HERE: Cell<RetiredHere> = Cell::new([(ptr::null(), ptr::null()); RETIRED_KEPT]);
    static RETIRED_UNKEPT: Cell<bool> = Cell::new(false);
    static IN_REGISTRATIONS: Cell<bool> = Cell::new(false);
    static REGISTRATIONS_GONE: Cell<bool> = Cell::new(false);
    static REGISTRATIONS_READY: Cell<bool> = Cell::new(false);
}

/// The calling thread's record in `domain` if it is FCP-RCU's cached one
/// (`crate::rcu`'s fast path), else [`rcu_no_record`]. Set only in
/// `Membarrier` and `KernelHelper` modes, like [`cached`].
///
/// A select, not a branch: the reader's fast path then tests one word for
/// both "no cached record" and "nested section" (its slot 0 not free),
/// one conditional branch fewer in a path of a few instructions
/// (`docs/rcu.md`, "Fewer branches").
#[inline(always)]
pub(crate) fn rcu_cached(domain: &Domain) -> &'static Record {
    let (d, r) = RCU_CACHE.with(Cell::get);
    let r = core::hint::select_unpredictable(ptr::eq(d, domain), r, rcu_no_record());
    // The cell holds this thread's record (never freed) when the domain
    // matches, and the sentinel is a static.
    // SAFETY: so `r` points to a live record.
    unsafe { &*r }
}

/// FCP-RCU's registration: [`register_record`], then the RCU cache (in
/// the asymmetric modes only, as for prwlock's cache).
#[cold]
pub(crate) fn register_rcu(domain: &'static Domain) -> Option<&'static Record> {
    register_caching(domain, |cached| {
        let _ = RCU_CACHE.try_with(|c| c.set(cached));
    })
}

/// The cached record of `domain` for the calling thread, or a sentinel
/// whose slots are never free. Only set in `Membarrier` and `KernelHelper`
/// modes, so a real record here also says the light barrier is a compiler
/// fence.
#[inline(always)]
pub(crate) fn cached(domain: &Domain) -> &'static Record {
    let (d, r) = CACHE.with(Cell::get);
    if ptr::eq(d, domain) {
        // SAFETY: the cell holds this thread's record, never freed.
        unsafe { &*r }
    } else {
        no_record()
    }
}

/// The calling thread's record in `domain`, if it has one (no registration;
/// `None` too while the thread is registering somewhere, see
/// [`register_record`]).
#[inline]
pub(crate) fn find(domain: &'static Domain) -> Option<&'static Record> {
    if REGISTRATIONS_READY.try_with(Cell::get).unwrap_or(false) {
        // Initialised: an access allocates nothing, and `try_borrow` (in
        // `lookup`) answers a call back from inside a registration. Kept
        // small, so that it inlines into a writer's path.
        REGISTRATIONS
            .try_with(|regs| lookup(regs, domain))
            .ok()
            .flatten()
    } else {
        find_first(domain)
    }
}

/// [`find`] before the thread's registrations were first reached.
#[cold]
#[inline(never)]
fn find_first(domain: &'static Domain) -> Option<&'static Record> {
    with_registrations(|regs| lookup(regs, domain)).flatten()
}

/// The record of `domain` in `regs` (`None` while a registration of the
/// thread has the list borrowed).
#[inline]
fn lookup(regs: &Registrations, domain: &'static Domain) -> Option<&'static Record> {
    regs.list
        .try_borrow()
        .ok()?
        .iter()
        .find(|(d, _)| ptr::eq(*d, domain))
        .map(|&(_, r)| r)
}

/// `f` on the thread's registrations; `None` once they are destroyed, and
/// for a call that comes back from inside another such call of the thread.
/// The first use of `REGISTRATIONS` registers its destructor, and that
/// allocates; so does a registration (a chunk, the list's growth). A
/// program's allocator that takes a lock (through the LD_PRELOAD shim)
/// then calls back into a lock of this thread, whose read would recurse
/// into the registrations' initialisation without end (found in review,
/// 2026-11-27): it reads in active mode instead, as in the teardown.
fn with_registrations<R>(f: impl FnOnce(&Registrations) -> R) -> Option<R> {
    if IN_REGISTRATIONS
        .try_with(|busy| busy.replace(true))
        .unwrap_or(true)
    {
        return None;
    }
    let r = REGISTRATIONS.try_with(f).ok();
    if r.is_some() {
        let _ = REGISTRATIONS_READY.try_with(|ready| ready.set(true));
    }
    let _ = IN_REGISTRATIONS.try_with(|busy| busy.set(false));
    r
}

/// The calling thread's record in `domain`, registering it on first use.
/// `None` once the thread's thread-locals are being destroyed (the caller
/// then reads in active mode).
#[cold]
pub(crate) fn register(domain: &'static Domain) -> Option<&'static Record> {
    register_caching(domain, |cached| {
        let _ = CACHE.try_with(|c| c.set(cached));
    })
}

/// [`register_record`], then `cache` the pair (domain, record) in the
/// asymmetric modes only (a cached record tells a fast path that the light
/// barrier is a compiler fence).
fn register_caching(
    domain: &'static Domain,
    cache: impl FnOnce((*const Domain, *const Record)),
) -> Option<&'static Record> {
    let record = register_record(domain)?;
    if barrier::is_asymmetric(barrier::barrier_mode()) {
        cache((domain, record));
    }
    Some(record)
}

/// The calling thread's record in `domain`, registering it on first use,
/// without touching any fast-path cache. `None` once the thread's
/// thread-locals are being destroyed, and for a call that comes while the
/// thread is registering (an allocation below, of a chunk or of the list,
/// called back into a lock: a program's allocator that takes one, through
/// the LD_PRELOAD shim; found in review, 2026-11-27): such a read goes to
/// active mode, as in the teardown.
fn register_record(domain: &'static Domain) -> Option<&'static Record> {
    with_registrations(|regs| {
        if let Some(found) = lookup(regs, domain) {
            return Some(found);
        }
        let r = domain.claim();
        #[cfg(not(loom))]
        r.register_with_kernel(domain);
        regs.list.try_borrow_mut().ok()?.push((domain, r));
        Some(r)
    })
    .flatten()
}
