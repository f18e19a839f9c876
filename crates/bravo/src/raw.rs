//! [`Bravo<L>`]: the biased lock over any `lock_api::RawRwLock`.
//!
//! # The lock word
//!
//! Listing 1 keeps two fields, `RBias` and `InhibitUntil`; the paper notes
//! (footnote 4) that they fit one word, and here they do, with two more
//! flags, so that a `Bravo<L>` is `L` plus 8 bytes:
//!
//! ```text
//!  63                                 6 5        2   1          0
//! +------------------------------------+----------+----------+-------+
//! | time (58 bits, clock units)         | exponent | REVOKING | RBIAS |
//! +------------------------------------+----------+----------+-------+
//! ```
//!
//! - `RBIAS`: readers may take the fast path.
//! - `REVOKING`: a writer has cleared `RBIAS` and is scanning the table.
//!   Exactly one revocation runs at a time; other writers wait for the flag
//!   to drop, and readers never set `RBIAS` while it is up.
//! - `exponent`: the adaptive policy's `e`, 4-bit two's complement (0
//!   unless [`Policy::ADAPTIVE`]).
//! - `time`: while `RBIAS` is set, when it was set; otherwise
//!   `InhibitUntil`, before which slow readers may not set it again.
//!
//! # The slot tag
//!
//! A fast reader's slot names the lock and, as far as bits allow, its
//! biased period (the paper stores the address alone): the lock's address
//! with bit 0 set and, in bits no such address has, low bits of the time
//! the bias was set (which does not change while the bias is on). On
//! 64-bit targets:
//!
//! ```text
//!  63      56 55          48 47                          3   2   1    0
//! +----------+--------------+-----------------------------+-------+---+
//! | address  | time bits 0-7 | the lock's address bits 3-47 | t18 t17 | 1 |
//! +----------+--------------+-----------------------------+-------+---+
//! ```
//!
//! - **Two live locks never share a tag**, unless one contains the other
//!   at offset 0 (`Bravo<Bravo<L>>`, or an `L` whose first field the
//!   compiler placed at offset 0 is a `Bravo`), which is harmless: a
//!   writer of either then also waits for the other's readers, which are
//!   its own or finish without it, and misses none of its own. Otherwise
//!   their addresses differ in bits 3-47, which the tag keeps as they are
//!   (and bits 56-63, where AArch64's top-byte tags, MTE and HWASan put
//!   theirs, are the address's too). A bias is only ever set on a lock whose address has
//!   none of the period's bits: 8-aligned, which every `Bravo` is, and
//!   bits 48-55 clear, as every user-space address below 2^48 has (all of
//!   them on x86-64 and AArch64 Linux unless a program maps memory above
//!   it on purpose); a lock elsewhere is never biased and reads through
//!   `L`. (A biased lock moved by value to such an address keeps its bias
//!   until the next revocation; its tags could then match another lock's
//!   with a chance of about 2^-10.) On 32-bit targets the period takes
//!   bits 1-2 only. (Until 2026-11-28 the tag was the address XOR the whole
//!   word, which is not one-to-one: in 16 384 biased locks 133 pairs shared
//!   a tag, so dropping one lock cleared a live fast reader's slot of
//!   another, whose writer then entered beside that reader, and a thread
//!   reading one lock and writing the other waited for itself. Found in
//!   review; the unit test `no_two_live_locks_share_a_tag`.)
//! - **A lock built later at the same address** (after a lock with a
//!   `mem::forget`-ten fast read guard moved away) matches the slot that
//!   guard left only if its bias was set at a time equal in the tag's time
//!   bits: about one chance in 2^10 on 64-bit targets, 1 in 4 on 32-bit
//!   ones; with addresses alone its writers waited for that slot forever
//!   (found in review, 2026-11-27).
//! - **The tag is never 0**, and costs no space: a `Bravo<L>` stays `L`
//!   plus 8 bytes, which keeps the LD_PRELOAD shim's default family inside
//!   a `pthread_rwlock_t`.
//!
//! What it does not give: a lock moved while a fast read is held (through
//! the raw API, or in safe code once the read's guard is forgotten) no
//! longer sees that reader, so a raw `Bravo` must stay in place while
//! read-locked (the safe `RwLock` cannot move while a guard borrows it).
//!
//! # Protocol (Listing 1, with the line numbers of the paper)
//!
//! Reader (`lock_shared`):
//! 1. if `RBIAS` is clear in the word `w` (l. 12), take the slow path;
//! 2. CAS its slot from 0 to the tag of `w` (l. 14, `SeqCst`);
//! 3. re-load the word (l. 18, `SeqCst`): still `w` means a revoking
//!    writer will see the slot, so enter (the guard keeps the slot);
//!    otherwise clear the slot (l. 20) and take the slow path;
//! 4. slow path: acquire read permission on `L` (l. 24); then, still
//!    holding it, set `RBIAS` if it is clear, no revocation is running and
//!    `InhibitUntil` has passed (l. 25-26).
//!
//! Unlock: the guard says which path was taken (l. 29-33), never the
//! slot's content: a fast reader stores 0 into *its* slot; a slow reader
//! releases `L`. (Deciding from the content would let a slow reader whose
//! hash collides with a fast reader of the same lock clear that reader's
//! slot: a bug public ports have shipped; `tests/collisions.rs` catches it.)
//!
//! Writer (`lock_exclusive`): acquire `L` (l. 36); if `RBIAS` is set
//! (l. 37), revoke: CAS the word from `RBIAS` to `REVOKING`, a `SeqCst`
//! fence (l. 39, the store-load fence), scan every slot and wait while it
//! holds the tag of the biased word (l. 42-44), then store `InhibitUntil = now + N × (now -
//! start)` (l. 49) with `REVOKING` cleared.
//!
//! Why no reader and writer are ever inside together: the reader's CAS and
//! re-load and the writer's CAS and scan are a store-load (Dekker) pair,
//! both sides `SeqCst` (plus the writer's fence): either the reader's
//! re-load sees `RBIAS` cleared (it backs out), or the writer's scan sees
//! the reader's slot (it waits). `RBIAS` is only ever set by a thread
//! holding read permission on `L` (a slow reader) and only while no
//! revocation runs, so it cannot be set while a writer is inside.
//!
//! With [`Policy::CLEAN_BY_COUNT`] (the default policy) a writer holding
//! `L` first reads a process-wide count of biased periods, on a cache line
//! of its own; at 0 no lock of such a policy is biased, and it skips the
//! load of l. 37, whose line (`L`'s) another thread's failed acquisition
//! may just have taken (`raw/biased.rs`).
//!
//! With [`Policy::REVOKE_BEFORE_LOCK`] (Section 7) a writer runs the same
//! revocation before acquiring `L`, so readers arriving meanwhile get read
//! permission from `L` instead of queueing behind the writer, and runs it
//! again after acquiring `L` (a no-op unless a slow reader re-enabled bias
//! in between).
//!
//! # Orderings
//!
//! Each atomic access names what it pairs with. In short: slot CAS
//! `SeqCst` / word re-load `SeqCst` (reader) against word CAS `SeqCst` +
//! `fence(SeqCst)` + slot loads `Acquire` (writer); fast unlock `Release`
//! against the scan's `Acquire`; bias set `Release` (after acquiring `L`)
//! against the fast reader's re-load, which thereby sees every write the
//! last writer made before releasing `L`. Inside a loom model the reader
//! adds a `fence(SeqCst)` after its CAS, because loom models a `SeqCst`
//! load as `Acquire` and would otherwise report an impossible execution.

use core::fmt;
use core::marker::PhantomData;

use lock_api::{
    RawRwLock, RawRwLockDowngrade, RawRwLockFair, RawRwLockTimed, RawRwLockUpgrade,
    RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};

use crate::clock;
use crate::policy::{DefaultPolicy, Policy};
use crate::stats::{self, Event};
use crate::sync::{AtomicU64, AtomicUsize, Ordering, fence};
use crate::table::{self, Table};
use crate::wait;

const RBIAS: u64 = 1;
const REVOKING: u64 = 2;
const EXP_SHIFT: u32 = 2;
const EXP_MASK: u64 = 0xf << EXP_SHIFT;
const TIME_SHIFT: u32 = 6;
const TIME_MASK: u64 = u64::MAX >> TIME_SHIFT;
/// The adaptive exponent `e`, in `EXP_MIN..=EXP_MAX`, is stored as a 4-bit
/// two's complement number, so that a zero word means `e = 0`.
const EXP_MIN: i32 = -3;
const EXP_MAX: i32 = 6;

/// The biased word of the period a word belongs to: the word itself while
/// `RBIAS` is set, the word the revocation started from while `REVOKING`
/// is (its CAS cleared `RBIAS` and set `REVOKING`, nothing else); `None`
/// when neither is set (no fast reader can be in).
#[inline]
fn biased_word(word: u64) -> Option<u64> {
    if word & RBIAS != 0 {
        Some(word)
    } else if word & REVOKING != 0 {
        Some((word & !REVOKING) | RBIAS)
    } else {
        None
    }
}

#[inline]
fn time_of(word: u64) -> u64 {
    word >> TIME_SHIFT
}

#[inline]
fn exp_of(word: u64) -> i32 {
    // Sign-extend the 4-bit field.
    ((((word & EXP_MASK) >> EXP_SHIFT) as i32) << 28) >> 28
}

#[inline]
fn pack(flags: u64, exp: i32, time: u64) -> u64 {
    flags | (((exp as u64) << EXP_SHIFT) & EXP_MASK) | ((time & TIME_MASK) << TIME_SHIFT)
}

/// BRAVO over the reader-writer lock `L`.
///
/// See the [crate docs](crate) for when to use it and the [module
/// docs](self) for the protocol. `P` picks the bias policy and the
/// Section 7 refinements ([`DefaultPolicy`] unless named).
pub struct Bravo<L, P: Policy = DefaultPolicy> {
    /// `RBias`, `InhibitUntil` and two flags (see the module docs).
    state: AtomicU64,
    /// Inside a loom model only: writers parked until a running revocation
    /// ends (see `wait_revocation`).
    #[cfg(loom)]
    revocation_waiters: rwlock_core::wait::Waiters,
    inner: L,
    _policy: PhantomData<fn() -> P>,
}

/// Per-acquisition state of a read: the slot of a fast-path reader, or the
/// underlying lock's own read state.
///
/// `Send` exactly when `G` is: a fast-path slot may be released from any
/// thread (unlock stores 0 into the slot the guard names, whichever thread
/// runs it), so only the underlying lock's guard decides.
pub struct BravoSharedGuard<G> {
    repr: Repr<G>,
}

enum Repr<G> {
    Fast(&'static AtomicUsize),
    Slow(G),
}

impl<G> BravoSharedGuard<G> {
    /// Whether this read went through the visible-readers table.
    pub fn is_fast(&self) -> bool {
        matches!(self.repr, Repr::Fast(_))
    }
}

impl<G> fmt::Debug for BravoSharedGuard<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Fast(slot) => f
                .debug_tuple("Fast")
                .field(&(*slot as *const AtomicUsize))
                .finish(),
            Repr::Slow(_) => f.write_str("Slow"),
        }
    }
}

/// What a slow read does once it holds `L`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AfterSlowRead {
    /// Check the word: set the bias if a clock reading is due and
    /// `InhibitUntil` has passed, and update the unbiased hint.
    Check,
    /// Nothing: this thread last saw the lock unbiased and its countdown
    /// to the next clock reading has not run out (see `after_slow_read`),
    /// so the read holds `L` for no longer than `L` alone would.
    Nothing,
}

/// How long a revocation may wait for fast-path readers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Patience {
    /// Until they leave (their critical sections bound the wait).
    Wait,
    /// Not at all: one scan; if a reader is inside (or another revocation
    /// runs), restore the bias and fail. Only with `L` held for writing or
    /// for an upgradable read, which both exclude writers, so re-setting
    /// the bias cannot let a fast reader in beside one.
    Scan,
    /// Until the deadline, then as `Scan`; with `L` held as for `Scan`, or
    /// without it (a timed write's early revocation): a restore is safe
    /// whoever revokes ([`Revoking`]).
    Until(std::time::Instant),
}

impl Patience {
    /// How much longer a wait may last (`Duration::MAX`: unbounded);
    /// `None` when it must give up now.
    fn left(self) -> Option<std::time::Duration> {
        match self {
            Patience::Wait => Some(std::time::Duration::MAX),
            Patience::Scan => None,
            Patience::Until(deadline) => deadline
                .checked_duration_since(std::time::Instant::now())
                .filter(|left| !left.is_zero()),
        }
    }
}

/// A revocation in progress: `REVOKING` is set in the lock word. `end`
/// stores the word that ends it; dropped without `end` (a panic between
/// the two, which the code is written never to raise), it restores the
/// biased word the revocation started from, so that the next writer
/// revokes again instead of waiting forever for `REVOKING` to clear.
/// Restoring the bias is safe whoever the revoker was: no writer was
/// inside when the bias was seen set, and none could pass while
/// `REVOKING` was up.
struct Revoking<'a, L: RawRwLock, P: Policy> {
    lock: &'a Bravo<L, P>,
    /// The word the revocation started from (`RBIAS` set).
    word: u64,
}

impl<L: RawRwLock, P: Policy> Revoking<'_, L, P> {
    /// Ends the revocation with `word`.
    #[inline]
    fn end(self, word: u64) {
        let this = core::mem::ManuallyDrop::new(self);
        this.lock.end_revocation(word);
    }
}

impl<L: RawRwLock, P: Policy> Drop for Revoking<'_, L, P> {
    fn drop(&mut self) {
        self.lock.end_revocation(self.word);
    }
}

/// The bias held off across an upgrade ([`Bravo::hold_bias_off`]):
/// `REVOKING` is up over a clean word. Dropping it (after `L`'s upgrade
/// returned, or while unwinding from it) stores the clean word back, which
/// ends the hold as `end_revocation` ends a revocation: writers waiting for
/// `REVOKING` to drop go on, and slow readers may set the bias again once
/// `L` lets them in.
pub(crate) struct BiasHeldOff<'a, L: RawRwLock, P: Policy> {
    lock: &'a Bravo<L, P>,
    /// The clean word the hold was raised over.
    word: u64,
}

impl<L: RawRwLock, P: Policy> Drop for BiasHeldOff<'_, L, P> {
    fn drop(&mut self) {
        self.lock.end_revocation(self.word);
    }
}

impl<L: RawRwLock, P: Policy> Bravo<L, P> {
    rwlock_core::loom_const_fn! {
        /// An unlocked, unbiased lock.
        pub fn new() -> Self {
            Self::from_raw(L::INIT)
        }
    }

    rwlock_core::loom_const_fn! {
        /// Wraps an existing (unlocked) raw lock.
        pub fn from_raw(inner: L) -> Self {
            Bravo {
                state: AtomicU64::new(0),
                #[cfg(loom)]
                revocation_waiters: rwlock_core::wait::Waiters::new(),
                inner,
                _policy: PhantomData,
            }
        }
    }

    /// The underlying lock.
    ///
    /// Acquiring it directly bypasses the bias: a write acquired this way
    /// does not revoke it, so fast-path readers may run beside it. Use it
    /// for inspection only.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Whether readers may currently take the fast path (a snapshot).
    pub fn is_biased(&self) -> bool {
        // Relaxed: a snapshot for diagnostics.
        self.state.load(Ordering::Relaxed) & RBIAS != 0
    }

    #[inline]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// What a fast reader's slot holds while the bias word is `biased`
    /// (module docs, "The slot tag").
    #[inline(always)]
    fn tag(&self, biased: u64) -> usize {
        tag_of(self.addr(), biased)
    }

    /// The fast path (l. 12-21). `Err`: take the slow path, and what to
    /// do once `L` is held.
    #[inline]
    fn try_lock_fast(&self) -> Result<&'static AtomicUsize, AfterSlowRead> {
        if P::UNBIASED_HINT {
            match hints::unbiased_read(self.addr()) {
                Some(true) => return Err(AfterSlowRead::Nothing),
                Some(false) => return Err(AfterSlowRead::Check),
                None => {}
            }
        }
        self.try_lock_biased().ok_or(AfterSlowRead::Check)
    }

    /// The fast path without the hint: a fast read if the word shows the
    /// bias and the slot is won; `None`: take the slow path and check the
    /// word once `L` is held.
    #[inline(always)]
    fn try_lock_biased(&self) -> Option<&'static AtomicUsize> {
        // Relaxed: only a hint whether to try, and the tag to try with;
        // the re-load below decides.
        let word = self.state.load(Ordering::Relaxed);
        if word & RBIAS == 0 {
            return None;
        }
        self.publish(word)
    }

    /// Publishes a fast read in the biased period of `word`.
    #[inline]
    fn publish(&self, word: u64) -> Option<&'static AtomicUsize> {
        let table: &'static Table = table::table();
        let me = self.tag(word);
        let hash = reader_hash(self.addr());
        let mut slot = table.slot(hash);
        // SeqCst: the store half of the store-load pair with the revoking
        // writer's CAS on `state` + fence + scan (module docs).
        if slot
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            if !P::SECOND_PROBE {
                stats::count(Event::Collision);
                return None;
            }
            // A different slot whenever the table has two: the first
            // index XOR an odd number drawn from the hash's other half.
            slot = table.slot(second_probe(hash));
            // SeqCst: as the first probe.
            if slot
                .compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                stats::count(Event::Collision);
                return None;
            }
        }
        // loom models SeqCst loads as Acquire: give the model the store-load
        // ordering the real build has from the SeqCst CAS + SeqCst load.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        // SeqCst: the load half of the pair (l. 18); also Acquire of the
        // slow reader's Release bias set, so the last writer's writes are
        // visible to this reader. The same word: the biased period our tag
        // names (a revocation changes the word, and a later bias set
        // writes a later time).
        if self.state.load(Ordering::SeqCst) == word {
            stats::count(Event::FastRead);
            return Some(slot);
        }
        // Raced with a revocation (l. 20). Release, although nothing was
        // read under the slot: this store may overwrite the 0 with which an
        // earlier fast reader of this lock left the same slot, and a plain
        // store would end that Release sequence, so a writer's Acquire scan
        // reading *our* 0 would not be ordered after that reader's section.
        slot.store(0, Ordering::Release);
        stats::count(Event::Raced);
        None
    }

    /// A read through the fast path, or else through `slow` on `L`.
    #[inline]
    fn read_via(
        &self,
        slow: impl FnOnce(&L) -> Option<L::SharedGuard>,
    ) -> Option<BravoSharedGuard<L::SharedGuard>> {
        match self.try_lock_fast() {
            Ok(slot) => Some(BravoSharedGuard {
                repr: Repr::Fast(slot),
            }),
            Err(after) => {
                let g = slow(&self.inner)?;
                Some(self.slow_read(g, after))
            }
        }
    }

    /// Wraps a read acquisition of `L` (after maybe enabling bias).
    #[inline]
    fn slow_read(
        &self,
        g: L::SharedGuard,
        after: AfterSlowRead,
    ) -> BravoSharedGuard<L::SharedGuard> {
        stats::count(Event::SlowRead);
        if after == AfterSlowRead::Check {
            self.after_slow_read();
        }
        BravoSharedGuard {
            repr: Repr::Slow(g),
        }
    }

    /// After a slow-path read acquisition: maybe enable bias (l. 25-26).
    ///
    /// Reading the clock costs about as much as a whole uncontended lock
    /// pair (20 ns here: the hypervisor traps `rdtsc`), and under heavy
    /// writing every read is a slow read with bias off; so a thread
    /// consults the clock only on some slow reads, counted down per thread
    /// (in the spirit of the paper's first prototype, which enabled bias on
    /// a 1/100 Bernoulli trial). The count starts at [`CLOCK_EVERY_MIN`]
    /// and doubles, up to [`CLOCK_EVERY_MAX`], each time the reading finds
    /// `InhibitUntil` still ahead; a reading that finds it past resets it.
    /// With a steady rate of slow reads the doubling lets bias come back at
    /// most about one inhibit window late (the interval since the last
    /// reading is at most the time already spent waiting), and never more
    /// than `CLOCK_EVERY_MAX` slow reads of the thread late.
    ///
    /// A thread that last saw this lock unbiased (the hint) does not even
    /// load the word until its countdown runs out
    /// ([`AfterSlowRead::Nothing`]): the read then holds `L` exactly as
    /// long as a read of `L` alone, and the countdown, a thread-local
    /// decrement, happens before `L` is taken. It notices bias that another
    /// thread set at its next reading (after at most `CLOCK_EVERY_MAX`
    /// slow reads; a reading that finds the bias on restarts the interval
    /// at `CLOCK_EVERY_MIN`). Without the hint, bias off and no reading
    /// due, the rest is a load of the word, a countdown and a store of the
    /// hint; the clock and the CAS are out of line.
    #[inline]
    fn after_slow_read(&self) {
        // Relaxed: a hint; the CAS in `enable_bias` re-checks the word.
        let word = self.state.load(Ordering::Relaxed);
        if word & (RBIAS | REVOKING) == 0 && hints::clock_due() {
            self.enable_bias_if_due(word);
        } else if word & RBIAS != 0 {
            // Bias on: the next read may try the fast path, and the next
            // inhibit window starts the clock readings afresh.
            hints::saw_bias();
        } else if P::UNBIASED_HINT {
            // Off or being revoked: the next read may go straight to `L`.
            hints::set_unbiased(self.addr());
        }
    }

    /// Out of line, one slow read in `CLOCK_EVERY_MIN..=CLOCK_EVERY_MAX`:
    /// reads the clock, sets `RBIAS` if `InhibitUntil` has passed, and sets
    /// the hint and the next countdown from what it found.
    #[inline(never)]
    fn enable_bias_if_due(&self, word: u64) {
        let now = clock::now();
        // A lock that may not be biased (`taggable`) is never due: its
        // readings then lengthen the thread's interval, not reset it.
        let due = now >= time_of(word) && taggable(self.addr());
        hints::clock_read(due);
        let enabled = due && self.enable_bias(word, now);
        if P::UNBIASED_HINT {
            hints::set_unbiased(if enabled { 0 } else { self.addr() });
        }
    }

    /// Sets `RBIAS` (the caller found `InhibitUntil` past at `now`);
    /// whether it did.
    fn enable_bias(&self, word: u64, now: u64) -> bool {
        // Only where the slot tag is one-to-one (module docs, "The slot
        // tag"). Fast readers, which run only while a bias is set, find the
        // table created (`table::ensure`: not while this or another thread
        // creates it).
        if !taggable(self.addr()) || !table::ensure() {
            return false;
        }
        // Counted before the bias is set (`raw/biased.rs`).
        if P::CLEAN_BY_COUNT {
            biased::enter();
        }
        // Release: we hold read permission on `L`, acquired after the last
        // writer released it; fast readers that Acquire-load `RBIAS` (their
        // SeqCst re-load) thus see that writer's critical section. Failure
        // Relaxed: someone else changed the word; they decide.
        if self
            .state
            .compare_exchange(
                word,
                pack(RBIAS, exp_of(word), now),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            stats::count(Event::BiasSet);
            return true;
        }
        if P::CLEAN_BY_COUNT {
            biased::leave();
        }
        false
    }

    /// Revokes the bias if it is set, or waits for a running revocation.
    ///
    /// Returns `true` when, at return, `RBIAS` and `REVOKING` are clear and
    /// every fast-path reader that entered before has left (as seen through
    /// `Acquire`). With `Patience::Scan` (caller holds `L` for writing or
    /// upgradable) it returns `false`, bias restored, if a reader is inside
    /// or another revocation runs; with `Patience::Until` it waits for both
    /// until the deadline, and returns `false` only after it.
    ///
    /// # Panic safety
    ///
    /// Between setting `REVOKING` and storing the word again nothing can
    /// panic: no allocation, no I/O, no user code (the table, whose first
    /// use allocates and reads the environment, is fetched before), only
    /// atomics, the clock, `Instant::now` and sleeps. Should that ever
    /// change, [`Revoking`]'s `Drop` puts the biased word back instead of
    /// leaving `REVOKING` set, which would wedge every later writer.
    ///
    /// Out of line: a revocation fences and scans the table, so the call
    /// costs nothing beside it, while inlined into the writer's loop its
    /// registers pushed the caller's loop state onto the stack, a store
    /// between `L`'s locked acquire and release (`docs/bravo.md`, "No
    /// store between `L`'s locked instructions").
    #[cold]
    #[inline(never)]
    fn revoke(&self, patience: Patience) -> bool {
        loop {
            // Acquire: pairs with the Release store that ends a revocation
            // (whose scan saw this lock's fast readers leave) and with the
            // Release bias set by a slow reader.
            let word = self.state.load(Ordering::Acquire);
            if word & REVOKING != 0 {
                let deadline = match patience {
                    Patience::Scan => return false,
                    Patience::Wait => None,
                    Patience::Until(deadline) => Some(deadline),
                };
                if !self.wait_revocation(deadline) {
                    return false;
                }
                continue;
            }
            if word & RBIAS == 0 {
                return true;
            }
            // Fetched before `REVOKING` is set: the table's first use
            // allocates and reads the environment.
            let table = table::table();
            // SeqCst: the writer's half of the store-load pair (with the
            // fence below); Acquire on failure as the load above.
            if self
                .state
                .compare_exchange(
                    word,
                    (word & !RBIAS) | REVOKING,
                    Ordering::SeqCst,
                    Ordering::Acquire,
                )
                .is_err()
            {
                continue;
            }
            let revoking = Revoking { lock: self, word };
            // The store-load fence of l. 39: clearing RBIAS is ordered
            // before the scan's loads (pairs with the reader's SeqCst CAS
            // and re-load).
            fence(Ordering::SeqCst);
            let start = clock::now();
            let clear = scan::<P>(table, self.tag(word), patience);
            let end = clock::now();
            if !clear {
                // A reader is inside and we may not wait longer. Re-setting
                // the bias cannot let a fast reader in beside a writer,
                // whether or not the caller holds `L` ([`Revoking`]: no
                // writer was inside when the bias was seen set, and none
                // passed while `REVOKING` was up).
                revoking.end(word);
                return false;
            }
            let cost = end.saturating_sub(start).max(1);
            let mut exp = exp_of(word);
            if P::ADAPTIVE {
                // Bias that lived shorter than the window it will cost
                // did not pay: widen the window; otherwise narrow it.
                let lived = start.saturating_sub(time_of(word));
                exp = if lived < window::<P>(cost, exp) {
                    (exp + 1).min(EXP_MAX)
                } else {
                    (exp - 1).max(EXP_MIN)
                };
            }
            // Inside a loom model the clock is constant; a zero window lets
            // the next slow reader re-enable the bias, so that the models
            // explore bias set, revoked and set again.
            let inhibit = if cfg!(loom) {
                0
            } else {
                window::<P>(cost, exp)
            };
            revoking.end(pack(0, exp, end.saturating_add(inhibit)));
            // The period ended, after the store that ends it
            // (`raw/biased.rs`).
            if P::CLEAN_BY_COUNT {
                biased::leave();
            }
            stats::revocation(end.saturating_sub(start), inhibit);
            return true;
        }
    }

    /// Keeps the bias off across an upgrade of `L`: revokes as
    /// [`revoke`](Self::revoke) does, then raises `REVOKING` over the clean
    /// word, so that no slow reader sets `RBIAS` (`enable_bias` CASes from a
    /// word with `REVOKING` clear) until the returned [`BiasHeldOff`] drops.
    /// `None` where `revoke` returns `false` (`Patience::Scan` or `Until`: a
    /// fast reader inside, or another revocation past the deadline).
    ///
    /// Why: `L` lets readers in beside an upgradable read, and keeps the
    /// ones already in while its upgrade waits for them. Without the hold,
    /// one of those slow readers could set the bias between the
    /// revocation and `L`'s upgrade, and the upgrade, once `L` granted
    /// it, had to wait holding exclusive access for the fast readers that
    /// came in meanwhile: a `try_upgrade` that blocked until they left, and
    /// a deadlock with such a reader's nested read (found in review,
    /// `tests/upgrade_window.rs`). Other writers lose nothing while the
    /// hold is up: `L` excludes them while the upgradable read is held,
    /// and `revoke_early` runs only while `RBIAS` shows.
    #[cold]
    pub(crate) fn hold_bias_off(&self, patience: Patience) -> Option<BiasHeldOff<'_, L, P>> {
        loop {
            if !self.revoke(patience) {
                return None;
            }
            // Relaxed: a guess for the CAS, which decides.
            let word = self.state.load(Ordering::Relaxed);
            if word & (RBIAS | REVOKING) != 0 {
                // A slow reader set the bias again, or a writer's early
                // revocation runs: revoke (or wait for it) again.
                continue;
            }
            // Acquire: the word is clean, so the last revocation's scan saw
            // every fast reader leave; reading its `end_revocation` store
            // (or an RMW after it) orders their sections before ours, as
            // `revoke`'s own Acquire load does. Against a slow reader's bias
            // set the two CASes on one word exclude each other: whichever
            // comes second fails. Failure Relaxed: we try again.
            if self
                .state
                .compare_exchange(word, word | REVOKING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(BiasHeldOff { lock: self, word });
            }
        }
    }

    /// Waits until another writer's revocation ends, or until `deadline`;
    /// returns whether it ended.
    ///
    /// The revoker itself waits for readers by polling (a fast reader's
    /// unlock cannot wake anybody), so a writer queued behind it polls the
    /// same way: it waits for the same readers. Inside a loom model, two
    /// pollers make the schedule space infinite, so there the writer parks
    /// on a `Waiters` (its SeqCst re-check pairs with the SeqCst swap that
    /// ends the revocation) and the revoker wakes it: the same condition,
    /// waited for without spinning. (Models use no deadlines.)
    #[cold]
    fn wait_revocation(&self, deadline: Option<std::time::Instant>) -> bool {
        #[cfg(not(loom))]
        {
            let mut backoff = wait::Sleeper::new();
            // Acquire: as in `revoke`.
            while self.state.load(Ordering::Acquire) & REVOKING != 0 {
                match deadline {
                    Some(d) => {
                        let now = std::time::Instant::now();
                        if now >= d {
                            return false;
                        }
                        backoff.snooze_at_most(d - now);
                    }
                    None => backoff.snooze(),
                }
            }
            true
        }
        #[cfg(loom)]
        {
            let _ = deadline;
            self.revocation_waiters
                .wait_until::<rwlock_core::wait::DefaultWait>(|| {
                    // SeqCst: the `Waiters` protocol's re-check.
                    self.state.load(Ordering::SeqCst) & REVOKING == 0
                });
            true
        }
    }

    /// Ends a revocation: stores `word` (`REVOKING` clear) and wakes the
    /// writers a model parked on it.
    #[inline]
    fn end_revocation(&self, word: u64) {
        // SeqCst RMW (Release at least): pairs with the Acquire loads of
        // waiting writers, which thereby see the readers' departures the
        // scan acquired, and is the state change of the `Waiters` protocol
        // before `wake_all`.
        self.state.swap(word, Ordering::SeqCst);
        #[cfg(loom)]
        self.revocation_waiters.wake_all();
    }

    /// A write acquisition of `L` is held: make sure no fast reader is in.
    ///
    /// Listing 1 waits for fast readers holding `L`. With
    /// [`Policy::REVOKE_BEFORE_LOCK`] a writer never does: if one scan finds
    /// a reader (bias re-enabled since the early revocation, or a stale
    /// hint skipped it), it gives `L` back, waits for the readers without
    /// it, and returns `None` so that the caller acquires `L` again. A
    /// reader that needs `L` to finish (a nested read of the same lock,
    /// which finds its own slot taken) then gets it, as it would with `L`
    /// alone.
    #[inline]
    fn settle_write(&self, g: L::ExclusiveGuard) -> Option<L::ExclusiveGuard> {
        // No biased period anywhere: the word is clean, and not loading it
        // spares a coherence miss inside the critical section when another
        // thread's acquisition took the line (`raw/biased.rs`). Nor is the
        // hint stored: that compare and branch, after the count's two
        // dependent loads (its address comes from the GOT), cost 3 % of
        // the 1-thread, 50 %-write loop (`docs/bravo.md`); reads keep the
        // hint themselves, and a writer whose hint names another lock
        // finds the count before it would load the word
        // (`early_revocation_due`).
        if Self::no_bias_counted() {
            return Some(g);
        }
        let patience = if P::REVOKE_BEFORE_LOCK {
            Patience::Scan
        } else {
            Patience::Wait
        };
        if !self.revoke_if_dirty(patience) {
            // SAFETY: the write acquisition the caller just made.
            unsafe { self.inner.unlock_exclusive(g) };
            self.revoke(Patience::Wait);
            return None;
        }
        self.note_unbiased();
        Some(g)
    }

    /// A write (or upgradable) acquisition of `L` is held: revoke, waiting
    /// for fast readers if needed.
    #[inline]
    fn revoke_held(&self) {
        self.revoke_if_dirty(Patience::Wait);
        self.note_unbiased();
    }

    /// [`revoke`](Self::revoke), called only when the word shows bias or a
    /// running revocation (one inline load on the common, clean path).
    #[inline]
    fn revoke_if_dirty(&self, patience: Patience) -> bool {
        // Acquire: see `revoke`.
        self.state.load(Ordering::Acquire) & (RBIAS | REVOKING) == 0 || self.revoke(patience)
    }

    /// This thread holds `L` for writing with the bias off: remember it.
    #[inline]
    fn note_unbiased(&self) {
        if P::UNBIASED_HINT {
            hints::set_unbiased(self.addr());
        }
    }

    /// [`revoke_early`](Self::revoke_early) with a deadline: whether the
    /// bias is off (or was not seen) before it. A revocation that times
    /// out restores the biased word; that is safe without holding `L`, as
    /// [`Revoking`] says.
    fn revoke_early_until(&self, deadline: std::time::Instant) -> bool {
        !self.early_revocation_due() || self.revoke(Patience::Until(deadline))
    }

    /// Before acquiring `L` for writing (Section 7 refinement).
    #[inline]
    fn revoke_early(&self) {
        if self.early_revocation_due() {
            self.revoke(Patience::Wait);
        }
    }

    /// The policy keeps the count of biased periods and it reads 0: no
    /// lock of a counting policy is biased (`raw/biased.rs`; a caller that
    /// holds `L` for writing may treat its word as clean).
    #[inline(always)]
    fn no_bias_counted() -> bool {
        P::CLEAN_BY_COUNT && biased::none()
    }

    /// Whether a writer should revoke before taking `L`: the policy says
    /// so, this thread's hint does not say it last saw the lock unbiased,
    /// the count of biased periods (if the policy keeps it) is not 0, and
    /// the word shows the bias.
    #[inline]
    fn early_revocation_due(&self) -> bool {
        // Relaxed: a hint; the check under `L` (`revoke_held`, or the
        // timed write's scan) is the one that counts.
        P::REVOKE_BEFORE_LOCK
            && !(P::UNBIASED_HINT && hints::unbiased(self.addr()))
            && !Self::no_bias_counted()
            && self.state.load(Ordering::Relaxed) & RBIAS != 0
    }
}

/// Where a slot tag carries its biased period (module docs, "The slot
/// tag"): bits 1-2, which an 8-aligned address has clear, and, on 64-bit
/// targets, bits 48-55, which a user-space address below 2^48 has clear
/// (bits 56-63 are left to top-byte pointer tags).
#[cfg(target_pointer_width = "64")]
const TAG_PERIOD: usize = 0x00ff_0000_0000_0006;
#[cfg(not(target_pointer_width = "64"))]
const TAG_PERIOD: usize = 0x6;

/// The slot tag of the lock at `addr` in the biased period of `biased`:
/// the address with bit 0 set, XOR (here an OR: the address has none of
/// those bits, see `taggable`) low bits of the time, rotated into
/// `TAG_PERIOD` (time bits 0-7 to tag bits 48-55, and 17-18 to 1-2).
#[inline(always)]
fn tag_of(addr: usize, biased: u64) -> usize {
    #[cfg(target_pointer_width = "64")]
    let period = biased.rotate_left(42) as usize;
    #[cfg(not(target_pointer_width = "64"))]
    let period = (biased >> (TIME_SHIFT - 1)) as usize;
    (addr | 1) ^ (period & TAG_PERIOD)
}

/// Whether a lock at `addr` may be biased: its address has none of the
/// bits where tags carry the period, so that tags of live locks differ.
#[inline]
fn taggable(addr: usize) -> bool {
    addr & (TAG_PERIOD | 1) == 0
}

/// A thread reads the clock on one slow read with bias off in this many,
/// at first (every one inside a loom model, so that models re-enable the
/// bias); see `after_slow_read`.
pub const CLOCK_EVERY_MIN: u32 = if cfg!(loom) { 1 } else { 16 };

/// ... and in this many at most, after readings that found `InhibitUntil`
/// still ahead.
pub const CLOCK_EVERY_MAX: u32 = if cfg!(loom) { 1 } else { 1024 };

// Per-thread hints (`raw/hints.rs`).
mod hints;

// The count of biased periods (`raw/biased.rs`).
mod biased;
pub use biased::biased_locks;

/// `N × 2^exp × cost`, saturating.
#[inline]
fn window<P: Policy>(cost: u64, exp: i32) -> u64 {
    let base = cost.saturating_mul(P::SLOWDOWN_GUARD);
    if exp >= 0 {
        base.saturating_mul(1 << exp)
    } else {
        base >> (-exp)
    }
}

/// Waits until no slot holds `lock` (l. 42-44). With `Patience::Scan`,
/// returns `false` at the first slot that does.
fn scan<P: Policy>(table: &Table, lock: usize, patience: Patience) -> bool {
    // One backoff for the whole scan: its spins and its yield are spent
    // once, then it sleeps (see `wait`).
    let mut backoff = wait::Sleeper::new();
    for block in table.blocks() {
        if P::BLOCK_SCAN {
            // One branch per 16 slots: the common case is a table with no
            // reader of this lock left.
            // Acquire: pairs with the fast reader's Release unlock.
            let hit = block
                .iter()
                .fold(false, |hit, s| hit | (s.load(Ordering::Acquire) == lock));
            if !hit {
                continue;
            }
        }
        for slot in block {
            // Acquire: pairs with the fast reader's Release unlock (its
            // critical section happens before the writer's).
            if slot.load(Ordering::Acquire) == lock {
                // Acquire: as above.
                while slot.load(Ordering::Acquire) == lock {
                    let Some(left) = patience.left() else {
                        return false;
                    };
                    backoff.snooze_at_most(left);
                }
            }
        }
    }
    true
}

/// The slot hash of (lock, calling thread): the thread's home block (see
/// [`table`](crate::table), "Slot choice") in the bits above the block's 16
/// slots, and in the low 4 bits the lock's Fibonacci hash salted with the
/// home's number (so that threads sharing a block, beyond 256 threads with
/// 4096 slots, spread one lock over the block's slots).
#[cfg(not(loom))]
#[inline]
fn reader_hash(lock: usize) -> u64 {
    hash_at_home(lock, hints::home())
}

/// [`reader_hash`] for a thread whose home is `home`.
#[cfg(not(loom))]
#[inline]
fn hash_at_home(lock: usize, home: u64) -> u64 {
    const FIBONACCI: u64 = 0x9e37_79b9_7f4a_7c15;
    let within = ((lock as u64) ^ home.rotate_left(32)).wrapping_mul(FIBONACCI) >> 60;
    (home << table::BLOCK_BITS) | within
}

/// The second probe's hash ([`Policy::SECOND_PROBE`]): a different slot
/// whenever the table has two, the first index XOR an odd number drawn
/// from the hash's other half.
#[inline]
fn second_probe(hash: u64) -> u64 {
    hash ^ ((hash >> 32) | 1)
}

/// Inside a model: the loom thread's index within the execution, so the
/// slot choice is the same in every execution (addresses, and loom's
/// `ThreadId` hash, differ between executions). Thread `i` takes slot
/// `i mod slots`.
#[cfg(loom)]
fn reader_hash(_lock: usize) -> u64 {
    let id = format!("{:?}", loom::thread::current().id());
    id.trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .expect("loom ThreadId's Debug form")
}

impl<L: RawRwLock, P: Policy> Default for Bravo<L, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L, P: Policy> fmt::Debug for Bravo<L, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a snapshot for display.
        let word = self.state.load(Ordering::Relaxed);
        f.debug_struct("Bravo")
            .field("biased", &(word & RBIAS != 0))
            .field("revoking", &(word & REVOKING != 0))
            .finish_non_exhaustive()
    }
}

impl<L, P: Policy> Drop for Bravo<L, P> {
    /// A fast-path read guard that was `mem::forget`-ten leaves this lock's
    /// tag in its slot; clear such slots, which would otherwise take a slot
    /// of the table for good (a later lock matches them only by chance:
    /// module docs, "The slot tag"). Only a lock that is still biased can
    /// have any. It looks only where a fast read of this lock can have
    /// published: the two probes of each thread home handed out so far
    /// (4 slots for a program that ever ran 2 threads), or the whole table
    /// once that would be as many (the whole-table scan made a short-lived
    /// lock's life 1.25 µs instead of parking_lot's 0.19 µs, found by a
    /// new-user trial; `docs/bravo.md`). (A lock moved since the guard was forgotten leaves the slot
    /// behind: its tag names the old address.)
    fn drop(&mut self) {
        // Relaxed: we are the only user (`&mut self`).
        let word = self.state.load(Ordering::Relaxed);
        let Some(biased) = biased_word(word) else {
            return;
        };
        // The lock's counted period ends with it (`raw/biased.rs`). No
        // revocation runs (`&mut self`, and `Revoking` puts the biased word
        // back before unwinding leaves `revoke`); a word showing only
        // `REVOKING` would be a hold never ended, and stays counted.
        if P::CLEAN_BY_COUNT && word & RBIAS != 0 {
            biased::leave();
        }
        let me = tag_of(self as *const Self as usize, biased);
        let clear = |slot: &AtomicUsize| {
            // Relaxed: no guard of this lock is alive (`&mut self`), so a
            // slot holding our tag belongs to a forgotten guard. A load
            // first: a failed CAS still takes the line exclusive, and would
            // take every reader's line of the table.
            if slot.load(Ordering::Relaxed) == me {
                // Relaxed: as above.
                let _ = slot.compare_exchange(me, 0, Ordering::Relaxed, Ordering::Relaxed);
            }
        };
        let table = table::table();
        #[cfg(not(loom))]
        {
            // Every thread that read this lock took its home before its
            // read, which happens before this drop (`&mut self`): its home
            // is below the count. Home 0 also serves threads whose
            // thread-locals are gone.
            let homes = hints::homes_handed_out().max(1);
            if homes.saturating_mul(2) < table.len() as u64 {
                let lock = self as *const Self as usize;
                for home in 0..homes {
                    let hash = hash_at_home(lock, home);
                    clear(table.slot(hash));
                    clear(table.slot(second_probe(hash)));
                }
                return;
            }
        }
        table.slots().for_each(clear);
    }
}

// The `lock_api` trait impls (`raw/lock_api_impls.rs`).
mod lock_api_impls;

#[cfg(all(test, not(loom)))]
mod tests {
    use std::mem::size_of;
    use std::sync::Arc;
    use std::time::Duration;

    use rwlock_core::testing;
    use rwlock_core::{BrLock, PfQueue, PfTicket, PthreadRwLock};

    use super::*;
    use crate::policy;

    type Pl = Bravo<parking_lot::RawRwLock>;

    // Tests share the process's table; those asserting which path a read
    // took must not see another test's reader in their slot, so the tests
    // of this module run one at a time.
    use rwlock_core::testing::serial;

    use crate::test_support::{FastReader, bias as biased};

    #[test]
    fn footprint_is_inner_plus_one_word() {
        let _serial = serial();
        // One word, rounded up to `L`'s alignment (a restricted lock's
        // gate is cache-line aligned).
        fn check<L: RawRwLock>() {
            let (b, l) = (size_of::<Bravo<L>>(), size_of::<L>());
            let extra = 16.max(core::mem::align_of::<L>());
            assert!(
                b <= l + extra,
                "Bravo<{}>: {b} > {l} + {extra}",
                core::any::type_name::<L>()
            );
        }
        check::<parking_lot::RawRwLock>();
        check::<PfQueue>();
        check::<PfTicket>();
        check::<BrLock>();
        check::<rwlock_core::pf_queue::PfQueue>();
        check::<rwlock_core::pf_ticket::PfTicket>();
        check::<rwlock_core::brlock::BrLock>();
        check::<PthreadRwLock>();
        assert_eq!(size_of::<Pl>(), 16);
        assert_eq!(word_is_8_bytes(), 8);
    }

    fn word_is_8_bytes() -> usize {
        size_of::<AtomicU64>()
    }

    #[test]
    fn const_init_and_static() {
        let _serial = serial();
        static S: crate::RwLock<u32> = crate::RwLock::new(3);
        *S.write() += 1;
        assert_eq!(*S.read(), 4);
        let _ = <Pl as RawRwLock>::INIT;
    }

    #[test]
    fn first_slow_read_biases_then_reads_are_fast() {
        let _serial = serial();
        let lock = Pl::new();
        assert!(!lock.is_biased());
        let g = lock.lock_shared();
        assert!(!g.is_fast(), "an unbiased lock reads through L");
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        assert!(lock.is_biased());
        let g = lock.lock_shared();
        assert!(g.is_fast());
        assert!(lock.is_locked(), "a fast reader counts as a holder");
        assert!(!lock.inner().is_locked(), "the fast path does not touch L");
        assert!(!lock.is_locked_exclusive());
        assert!(lock.is_biased(), "is_locked does not revoke");
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        assert!(!lock.is_locked());
        // A write revokes; the next read is slow, and (N × a short
        // revocation later) re-enables the bias.
        let w = lock.lock_exclusive();
        assert!(!lock.is_biased());
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
    }

    #[test]
    fn try_write_beside_fast_reader_fails_and_keeps_bias() {
        let _serial = serial();
        let lock = Pl::new();
        biased(&lock);
        let r = lock.lock_shared();
        assert!(r.is_fast());
        assert!(
            lock.try_lock_exclusive().is_none(),
            "writer admitted beside a fast reader"
        );
        assert!(lock.is_biased(), "a failed try-write restores the bias");
        assert!(!lock.inner().is_locked(), "a failed try-write releases L");
        // SAFETY: our read.
        unsafe { lock.unlock_shared(r) };
        let w = lock.try_lock_exclusive().expect("free lock");
        assert!(!lock.is_biased());
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
    }

    #[test]
    fn recursive_read_fast_then_slow_releases_in_either_order() {
        let _serial = serial();
        recursive::<policy::Listing1>(false);
        // With a second probe the inner read takes the thread's other slot.
        recursive::<policy::SecondProbe>(true);
    }

    fn recursive<P: Policy>(second_fast: bool) {
        let lock = Bravo::<parking_lot::RawRwLock, P>::new();
        for first_outer in [true, false] {
            biased(&lock);
            let a = lock.lock_shared();
            let b = lock.lock_shared();
            assert!(a.is_fast(), "first read of a biased lock is fast");
            assert_eq!(b.is_fast(), second_fast, "second read finds its slot taken");
            // SAFETY: our reads.
            unsafe {
                if first_outer {
                    lock.unlock_shared(a);
                    lock.unlock_shared(b);
                } else {
                    lock.unlock_shared(b);
                    lock.unlock_shared(a);
                }
            }
            assert!(!lock.is_locked());
            let w = lock.try_lock_exclusive().expect("both reads released");
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
        }
    }

    #[test]
    fn dropping_a_biased_lock_clears_forgotten_slots() {
        let _serial = serial();
        let lock = Box::new(Pl::new());
        biased(&lock);
        let g = lock.lock_shared();
        assert!(g.is_fast());
        // Relaxed: a snapshot; nobody else uses the lock.
        let tag = lock.tag(lock.state.load(Ordering::Relaxed));
        // What `mem::forget` of a lock_api read guard leaves behind.
        #[allow(
            clippy::forget_non_drop,
            reason = "the raw state is what a guard forgets"
        )]
        core::mem::forget(g);
        assert!(table::table().contains(tag));
        drop(lock);
        assert!(
            !table::table().contains(tag),
            "drop left a forgotten slot behind"
        );
    }

    /// The same with forgotten fast reads of several threads (several
    /// homes), each thread's in both of its probes: the drop, which looks
    /// only at the slots this lock's reads can take, finds them all.
    #[test]
    fn dropping_a_biased_lock_clears_every_threads_forgotten_slots() {
        let _serial = serial();
        let lock = Box::new(Bravo::<parking_lot::RawRwLock, policy::SecondProbe>::new());
        biased(&lock);
        // Relaxed: a snapshot; the readers below only read.
        let tag = lock.tag(lock.state.load(Ordering::Relaxed));
        let fast = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    // The first read takes the first probe, the second
                    // (its first probe taken) the second probe.
                    for _ in 0..2 {
                        let g = lock.lock_shared();
                        if g.is_fast() {
                            fast.fetch_add(1, Ordering::Relaxed);
                        }
                        #[allow(
                            clippy::forget_non_drop,
                            reason = "the raw state is what a guard forgets"
                        )]
                        core::mem::forget(g);
                    }
                });
            }
        });
        let published = table::table()
            .slots()
            .filter(|s| s.load(Ordering::Relaxed) == tag)
            .count();
        assert_eq!(published, fast.load(Ordering::Relaxed));
        assert!(published >= 8, "only {published} of 12 reads took a slot");
        drop(lock);
        assert!(
            !table::table().contains(tag),
            "drop left a forgotten slot behind"
        );
    }

    /// A fast reader whose first load saw an earlier biased period (the
    /// bias was revoked and set again before its slot was published) backs
    /// out: its slot holds the old period's tag, which the new period's
    /// writers do not scan for.
    #[test]
    fn a_reader_of_an_earlier_biased_period_backs_out() {
        let _serial = serial();
        let lock = Pl::new();
        biased(&lock);
        // Relaxed: a snapshot; only this thread uses the lock.
        let old = lock.state.load(Ordering::Relaxed);
        let w = lock.lock_exclusive();
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
        biased(&lock);
        // Relaxed: as above.
        let new = lock.state.load(Ordering::Relaxed);
        assert_ne!(old, new, "the bias was set again, at a later time");
        assert!(
            lock.publish(old).is_none(),
            "entered with the tag of a period that ended"
        );
        let g = lock.publish(new).expect("the current period's tag");
        // SAFETY: the fast read just published.
        unsafe {
            lock.unlock_shared(BravoSharedGuard {
                repr: Repr::Fast(g),
            })
        };
    }

    /// A read guard forgotten on a lock that is then moved and dropped
    /// leaves its slot behind; a new lock built where the old one was does
    /// not wait for it. (Found in review, 2026-11-27: with the address
    /// alone in the slots, the new lock's first write waited forever.)
    #[test]
    fn a_forgotten_fast_read_does_not_hold_up_a_lock_at_its_old_address() {
        let _serial = serial();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut place: Box<lock_api::RwLock<Pl, u32>> = Box::new(lock_api::RwLock::new(0));
            // SAFETY: only reads and writes through the lock_api wrapper.
            biased(unsafe { place.raw() });
            let g = place.read();
            std::mem::forget(g);
            // The old lock moves out (and drops elsewhere); a fresh one
            // takes its place.
            let old = std::mem::replace(&mut *place, lock_api::RwLock::new(0));
            drop(old);
            // SAFETY: as above.
            biased(unsafe { place.raw() });
            *place.write() += 1;
            tx.send(*place.read()).unwrap();
        });
        let v = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the new lock's write waited for the old lock's forgotten reader");
        assert_eq!(v, 1);
    }

    #[test]
    fn guard_of_fast_reader_released_from_another_thread() {
        let _serial = serial();
        let lock = Arc::new(Bravo::<PfQueue>::new());
        biased(&*lock);
        let g = lock.lock_shared();
        assert!(g.is_fast());
        let l2 = lock.clone();
        // PF-Q read guards are Send, so the Bravo guard is too.
        std::thread::spawn(move || {
            // SAFETY: the read acquired above, moved here.
            unsafe { l2.unlock_shared(g) }
        })
        .join()
        .unwrap();
        assert!(!lock.is_locked());
    }

    #[test]
    fn writer_waits_for_fast_reader() {
        let _serial = serial();
        let lock = Arc::new(Pl::new());
        biased(&*lock);
        let reader = FastReader::spawn(lock.clone(), Duration::from_millis(30));
        let g = lock.lock_exclusive();
        assert!(
            reader.has_left(),
            "writer entered while a fast reader was inside"
        );
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
        reader.join();
    }

    #[test]
    fn upgrade_revokes() {
        let _serial = serial();
        use lock_api::RawRwLockUpgrade;
        let lock = Arc::new(Pl::new());
        biased(&*lock);
        let reader = FastReader::spawn(lock.clone(), Duration::from_millis(20));
        let u = lock.lock_upgradable();
        // SAFETY: our upgradable read.
        let w = unsafe { lock.upgrade(u) };
        assert!(reader.has_left(), "upgrade completed beside a fast reader");
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
        reader.join();
    }

    #[test]
    fn timed_and_try_upgrade_never_wait_past_their_deadline_for_fast_readers() {
        let _serial = serial();
        use lock_api::{RawRwLockTimed, RawRwLockUpgrade, RawRwLockUpgradeTimed};
        let lock = Pl::new();
        biased(&lock);
        // The caller itself holds a fast read: L alone would refuse the
        // write; so must Bravo, instead of waiting for its own slot.
        let r = lock.lock_shared();
        assert!(r.is_fast());
        let t0 = std::time::Instant::now();
        assert!(
            lock.try_lock_exclusive_for(Duration::from_millis(20))
                .is_none()
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "timed write overran");
        assert!(lock.is_biased(), "a failed timed write restores the bias");
        assert!(
            !lock.inner().is_locked_exclusive(),
            "a failed timed write releases L"
        );
        let u = lock.lock_upgradable();
        // SAFETY: our upgradable read, handed back on failure.
        let Err(u) = (unsafe { lock.try_upgrade(u) }) else {
            panic!("upgrade beside our own fast read");
        };
        // SAFETY: as above.
        let Err(u) = (unsafe { lock.try_upgrade_for(u, Duration::from_millis(20)) }) else {
            panic!("timed upgrade beside our own fast read");
        };
        assert!(lock.is_biased());
        // SAFETY: our reads.
        unsafe {
            lock.unlock_upgradable(u);
            lock.unlock_shared(r);
        }
        // Another thread's fast reader that leaves in time: the timed
        // write waits for it and succeeds.
        let lock = Arc::new(lock);
        biased(&*lock);
        let reader = FastReader::spawn(lock.clone(), Duration::from_millis(20));
        let w = lock
            .try_lock_exclusive_for(Duration::from_secs(10))
            .expect("the reader leaves well before the deadline");
        assert!(reader.has_left());
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
        reader.join();
    }

    /// A thread holds a fast read of a biased `Pl`, lets `writer` start on
    /// another thread, and 30 ms later takes a nested read (its slot taken
    /// by its own first read: the slow path through `L`). Panics with
    /// `what` unless the nested read is done within `within`; returns what
    /// the writer returned.
    fn nested_read_beside<T: Send + 'static>(
        writer: impl FnOnce(&Pl) -> T + Send + 'static,
        within: Duration,
        what: &str,
    ) -> T {
        let lock = Arc::new(Pl::new());
        biased(&*lock);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let reader = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let outer = lock.lock_shared();
                assert!(outer.is_fast());
                held_tx.send(()).unwrap();
                // Let the writer find the bias and start revoking.
                std::thread::sleep(Duration::from_millis(30));
                let nested = lock.lock_shared();
                assert!(!nested.is_fast(), "the nested read finds its slot taken");
                // SAFETY: our reads.
                unsafe {
                    lock.unlock_shared(nested);
                    lock.unlock_shared(outer);
                }
                done_tx.send(()).unwrap();
            })
        };
        held_rx.recv().unwrap();
        let writer = {
            let lock = lock.clone();
            std::thread::spawn(move || writer(&lock))
        };
        done_rx.recv_timeout(within).expect(what);
        reader.join().unwrap();
        writer.join().unwrap()
    }

    /// A nested read while a writer revokes: with the default policy the
    /// writer waits without holding `L`, so the nested read gets through.
    /// (With Listing 1 this deadlocks: the writer holds `L` while it waits
    /// for the outer read.)
    #[test]
    fn nested_read_while_a_writer_revokes() {
        let _serial = serial();
        nested_read_beside(
            |lock| {
                let g = lock.lock_exclusive();
                // SAFETY: our write.
                unsafe { lock.unlock_exclusive(g) };
            },
            Duration::from_secs(10),
            "a nested read behind a revoking writer deadlocked",
        );
    }

    /// The same with a timed writer (`try_lock_exclusive_for`): it too
    /// waits for the fast reader without holding `L`, so the nested read
    /// gets through and the writer gets the lock well before its deadline
    /// (found by a new-user trial: the timed writer held `L` while it
    /// waited, so the nested read waited out the whole timeout and the
    /// writer then failed).
    #[test]
    fn nested_read_while_a_timed_writer_revokes() {
        let _serial = serial();
        let wrote = nested_read_beside(
            |lock| {
                let g = lock.try_lock_exclusive_for(Duration::from_secs(20))?;
                // SAFETY: our write.
                unsafe { lock.unlock_exclusive(g) };
                Some(())
            },
            Duration::from_secs(5),
            "a nested read behind a timed writer waited for its deadline",
        );
        assert!(
            wrote.is_some(),
            "the timed writer failed although the reader left"
        );
    }

    /// The class behind issue 14's wedged lock: a panic while `REVOKING`
    /// is set (nothing in `revoke` can panic today; this injects one) must
    /// not leave it set. The guard restores the biased word, and the next
    /// writer revokes properly.
    #[test]
    fn a_panic_mid_revocation_restores_the_bias() {
        let _serial = serial();
        let lock = Pl::new();
        biased(&lock);
        // Relaxed: single-threaded test.
        let word = lock.state.load(Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lock.state
                .compare_exchange(
                    word,
                    (word & !RBIAS) | REVOKING,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .unwrap();
            let _revoking = Revoking { lock: &lock, word };
            panic!("injected into a revocation (expected by this test)");
        }));
        assert!(outcome.is_err());
        assert!(
            !format!("{lock:?}").contains("revoking: true"),
            "REVOKING left set"
        );
        assert!(lock.is_biased(), "the biased word is restored");
        let w = lock
            .try_lock_exclusive()
            .expect("a free lock after the panic");
        assert!(!lock.is_biased(), "the next writer revokes");
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(w) };
    }

    #[test]
    fn try_lock_semantics() {
        let _serial = serial();
        let lock = Pl::new();
        testing::check_try_lock(&lock);
        biased(&lock);
        testing::check_try_lock(&lock);
        let lock = Bravo::<PfQueue>::new();
        testing::check_try_lock(&lock);
        testing::check_downgrade(&lock);
        testing::check_downgrade(&Pl::new());
    }

    #[test]
    fn panics_release() {
        let _serial = serial();
        testing::check_panic_releases(&lock_api::RwLock::<Pl, u64>::new(0));
        testing::check_panic_releases(&lock_api::RwLock::<Bravo<PfTicket>, u64>::new(0));
    }

    #[test]
    fn stress_over_every_alias() {
        let _serial = serial();
        testing::stress_1_2_8(&Pl::new());
        testing::stress_1_2_8(&Bravo::<PfQueue>::new());
        testing::stress_1_2_8(&Bravo::<PfTicket>::new());
        testing::stress_1_2_8(&Bravo::<PthreadRwLock>::new());
        testing::stress_1_2_8(&Bravo::<BrLock>::new());
        testing::stress_downgrade(&Bravo::<PfQueue>::new(), &testing::StressConfig::new(8));
    }

    #[test]
    fn stress_every_policy_read_mostly() {
        let _serial = serial();
        fn run<P: Policy>() {
            for writes in [2, 50] {
                let mut cfg = testing::StressConfig::new(8);
                cfg.write_percent = writes;
                testing::stress(&Bravo::<parking_lot::RawRwLock, P>::new(), &cfg);
            }
        }
        run::<policy::Listing1>();
        run::<policy::RevokeBeforeLock>();
        run::<policy::SecondProbe>();
        run::<policy::BlockScan>();
        run::<policy::Adaptive>();
        run::<policy::UnbiasedHint>();
        run::<DefaultPolicy>();
    }

    #[test]
    fn oversubscribed_32_threads() {
        let _serial = serial();
        let mut cfg = testing::StressConfig::new(32);
        cfg.ops_per_thread = 5_000;
        testing::stress(&Pl::new(), &cfg);
        testing::stress(&Bravo::<PfQueue>::new(), &cfg);
    }

    /// Tags of live locks are one-to-one: 16 384 locks biased one after
    /// the other (the tag as the address XOR the word had 133 pairs with
    /// equal tags here), and random taggable addresses with random biased
    /// words. And the time reaches the tag (a lock rebuilt at an address
    /// with a new period does not match the old tag).
    #[test]
    fn no_two_live_locks_share_a_tag() {
        let _serial = serial();
        let locks: Vec<Pl> = (0..1 << 14).map(|_| Pl::new()).collect();
        let mut tags = std::collections::HashSet::new();
        for lock in &locks {
            // Slow reads back to back (no sleep between them, as `biased`
            // has): locks biased close in time are the ones whose words
            // differ in few bits.
            let mut reads = 0;
            while !lock.is_biased() {
                let g = lock.lock_shared();
                // SAFETY: our read.
                unsafe { lock.unlock_shared(g) };
                reads += 1;
                assert!(reads < 1_000_000, "slow reads never enabled the bias");
            }
            // Relaxed: this thread set it.
            let word = lock.state.load(Ordering::Relaxed);
            assert!(tags.insert(lock.tag(word)), "two live locks share a tag");
        }
        // No drops: each would scan the table (no slot holds their tags).
        std::mem::forget(locks);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seen = std::collections::HashMap::new();
        for _ in 0..100_000 {
            let addr = (next() & 0xff00_7fff_ffff_fff8) as usize;
            let word = next() | RBIAS;
            assert!(taggable(addr));
            let tag = tag_of(addr, word);
            assert_eq!(tag & 1, 1, "a tag is never 0");
            if let Some(&other) = seen.get(&tag) {
                assert_eq!(other, addr, "two addresses share a tag");
            }
            seen.insert(tag, addr);
        }
        let word = pack(RBIAS, 0, 12_345);
        let later = pack(RBIAS, 0, 12_346);
        assert_ne!(tag_of(0x1000, word), tag_of(0x1000, later));
        assert!(!taggable(0x1004));
        #[cfg(target_pointer_width = "64")]
        {
            assert!(!taggable(0x1_0000_0000_0000));
            // A top-byte pointer tag (AArch64 TBI, MTE, HWASan) is fine.
            assert!(taggable(0xb400_0000_1234_5678));
        }
    }

    #[test]
    fn packing_roundtrips() {
        let _serial = serial();
        assert_eq!(exp_of(0), 0, "a fresh word has exponent 0");
        for exp in EXP_MIN..=EXP_MAX {
            for t in [0u64, 1, 12345, TIME_MASK] {
                let w = pack(RBIAS, exp, t);
                assert_eq!((exp_of(w), time_of(w), w & RBIAS), (exp, t, RBIAS));
            }
        }
        assert_eq!(window::<policy::Listing1>(10, 0), 90);
        assert_eq!(window::<policy::Listing1>(10, 2), 360);
        assert_eq!(window::<policy::Listing1>(10, -1), 45);
        assert_eq!(window::<policy::Listing1>(u64::MAX, 6), u64::MAX);
    }

    #[test]
    fn a_thread_reads_every_lock_in_its_home_block_and_threads_differ() {
        const LOCKS: usize = 64;
        let block = |hash: u64| hash >> table::BLOCK_BITS;
        let barrier = std::sync::Barrier::new(8);
        let barrier = &barrier;
        let homes: Vec<u64> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(move || {
                        let hashes: Vec<u64> = (0..LOCKS)
                            .map(|i| reader_hash(0x10_0000 + i * 128))
                            .collect();
                        // Everybody alive at once before anyone exits.
                        barrier.wait();
                        let home = block(hashes[0]);
                        assert!(
                            hashes.iter().all(|&h| block(h) == home),
                            "one thread's slots left its home block: {hashes:x?}"
                        );
                        let within: std::collections::HashSet<u64> =
                            hashes.iter().map(|h| h & 15).collect();
                        assert!(
                            within.len() >= 12,
                            "{LOCKS} locks used only {} of the block's 16 slots",
                            within.len()
                        );
                        home
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let distinct: std::collections::HashSet<u64> = homes.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            homes.len(),
            "live threads share a home: {homes:?}"
        );
    }
}
