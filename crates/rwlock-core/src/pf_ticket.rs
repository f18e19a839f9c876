//! PF-T: Brandenburg and Anderson's phase-fair ticket reader-writer lock.
//!
//! Source: B. Brandenburg and J. Anderson, "Spin-based reader-writer
//! synchronization for multiprocessor real-time systems", Real-Time Systems
//! 2010, as summarised in the BRAVO paper (Dice & Kogan, ATC'19, Section 5:
//! "PF-T implements the reader indicator via a central pair of counters, one
//! incremented by arriving readers and the other incremented by departing
//! readers. Waiting readers busy-wait on a dedicated writer present bit
//! encoded in the reader arrival counter").
//!
//! # State (two `u64` and two `u32` words)
//!
//! ```text
//!  rin:  [ arrivals x RINC (56 bits) | 00000 | LAST | PRES | PHID ]   readers in, writer bits
//!  rout: [ departures x RINC         | 00000000                  ]   readers out
//!  win:  writer tickets handed out
//!  wout: writer tickets served
//! ```
//!
//! # Protocol
//!
//! - **Reader lock**: `w = fetch_add(rin, RINC) & (PRES|PHID)`. If no writer
//!   is present (`w == 0`) the reader is in. Otherwise it waits until the
//!   writer bits of `rin` differ from `w`: either that writer left, or the
//!   next writer (whose phase bit `PHID` differs) announced itself and is
//!   waiting for this very reader, which is therefore admitted. A reader
//!   waits for at most one writer phase.
//! - **Reader unlock**: `fetch_add(rout, RINC)`.
//! - **Writer lock**: take a ticket from `win`, wait until `wout` serves it
//!   (writers are FIFO among themselves), then announce presence with phase
//!   `p = !LAST` in one RMW that sets `PRES`, `PHID = p` and `LAST = p`, which
//!   returns `rticket`; wait until `rout` equals `rticket`'s counter: exactly
//!   the readers that arrived before the announcement have left. Readers
//!   arriving later are blocked by the bits, so a writer waits for at most one
//!   reader phase.
//! - **Writer unlock**: clear `PRES|PHID` (admits the blocked readers of this
//!   phase; `LAST` stays), then `fetch_add(wout, 1)` (admits the next writer).
//!
//! Why the phase lives in `rin` (`LAST`) rather than in the ticket's low bit
//! (as in the original): the reader's wait "bits differ from `w`" is only
//! safe because the next *announcing* writer has the other phase **and**
//! waits for that reader, so no writer of phase `w` can come back while the
//! reader still waits (a parked reader would otherwise sleep through the
//! change and deadlock with the writer that waits for it). A failed
//! `try_lock_exclusive` takes a ticket and gives it back without announcing;
//! with ticket-derived phases it would break the alternation (found by the
//! loom model `pft_failed_try_write_keeps_phases_alternating`).
//!
//! - **Withdrawal** (not in the paper; for more threads than cores): a
//!   blocked reader that would leave a CPU other threads are waiting for
//!   (it yields or parks while its recent yields gave the CPU away:
//!   [`Backoff::snooze_or_retreat`](crate::wait::Backoff::snooze_or_retreat))
//!   first takes its arrival back, with a CAS that subtracts `RINC` from
//!   `rin` only while the writer bits are still its `w`
//!   (`ReaderCounts::withdraw` in the shared reader side). Then it waits
//!   for the bits to change, or for `wout` to move (the writer of `w` has
//!   left: phases alternate, so the bits read `w` again once the writer
//!   after next announces, and a reader that was off its CPU meanwhile
//!   would otherwise sleep on), and arrives anew. While the bits are `w`, the writer
//!   of `w` does not count the reader (it announced first) and no later
//!   writer has announced (it would count the reader, and cannot finish
//!   before the reader departs), so no writer waits for a withdrawn
//!   reader. Without it, the next writer counts every reader blocked by
//!   this phase, and with 16 threads on 2 cores some of them are always
//!   descheduled: the writer waited about 50 µs for them to run again
//!   (`writer_latency`, 16 threads: p50/p99 45/100 µs before, 0.1/0.3 µs
//!   with it; `docs/restriction.md`). A reader withdraws at most
//!   `MAX_WITHDRAWALS` (4) times per acquisition; after that it waits
//!   counted, for one writer phase, as in the paper (and as a reader that
//!   keeps its CPU does). What withdrawal gives up: the writers that run
//!   while a withdrawn reader is off its CPU pass it, since it is counted
//!   by none of them; it arrives again at most `MAX_WITHDRAWALS` times
//!   after the writer it withdrew from leaves.
//!
//! The reader side (`rin`, `rout`) is shared with PF-Q (module
//! `phase_fair`); its counters are 64 bits wide so that forgotten read
//! guards cannot wrap them. The ticket counters are 32 bits and wrap
//! harmlessly: only equality matters.
//!
//! # Waiting
//!
//! Every wait goes through [`Waiters`] with the lock's [`WaitPolicy`]: spin,
//! yield, then park (a blocked reader through
//! [`Waiters::wait_until_or_retreat`], which withdraws it as above). Every
//! release is a SeqCst read-modify-write followed by a check of the waiter
//! count (the wake protocol documented on [`Waiters`]). A withdrawal wakes
//! nobody: writers wait for `rout`, which it does not change.
//!
//! Three parking places, each woken only by the change its waiters wait
//! for:
//! - `waiters`: readers blocked by the writer bits, woken by the writer
//!   that clears them (its unlock, or a downgrade); the next writer's
//!   announcement never has to wake them, since a clear comes first.
//! - `tickets`: writers waiting for their ticket
//!   ([`Waiters::wait_for_turn`], the workspace's one ticket wait: a writer
//!   with a CPU of its own watches the queue move and parks only when it
//!   stalls; the next in line yields long before it parks). Each parks
//!   tagged with the value of `wout` that ends its wait, and serving ticket
//!   `t` wakes those waits alone ([`Waiters::wake_tagged`]).
//! - `drained`: the announced writer waiting for the readers before it,
//!   woken by departures.
//!
//! With one place for all (as first written), every departure woke every
//! parked reader and writer, and every hand-off every queued writer. At 384
//! threads on 2 cores (RWBench, 10% writes, empty sections) PF-T and brlock
//! fell to 10 to 30 thousand operations a second in some runs, against 50
//! to 80 million in others (`docs/restriction.md`, "384 threads"). That
//! herd had also kept queued writers awake: once each writer slept until
//! its own ticket came up, with threads ≤ cores every queued writer
//! outlasted its budget and parked, and each hand-off waited for a futex
//! wake-up (20% writes, 4 threads on 16 cores: 0.2× parking_lot), until the
//! ticket wait watched the queue move (`docs/restriction.md`, "PF-T's
//! writer queue on 16 cores").
//!
//! # Footprint
//!
//! 40 bytes, 8-byte aligned (asserted in a test): the state above, the
//! writer's drain target (for `is_locked_exclusive`) and three 4-byte
//! waiter counts (32 bytes before the parking places were split).
//! The lock is not padded: put it in a [`CachePadded`](crate::CachePadded)
//! if neighbours would share its line.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;

use crate::phase_fair::{
    LOW, MAX_WITHDRAWALS, NO_DRAIN, PHID, PRES, PUBLISH_DRAIN, RINC, ReaderCounts, WBITS,
    drain_mark,
};
use crate::sync::{AtomicU32, Ordering};
use crate::ticket_wait::TicketValue;
use crate::wait::{DefaultWait, WaitPolicy, Waiters};

/// Phase of the most recent announcement; survives the writer's unlock.
const LAST: u64 = 0x4;

/// The low byte of `rin` after announcing over `low` (which has no writer
/// present): the phase flips, `PRES` is set.
#[inline]
const fn announced(low: u64) -> u64 {
    let phase = ((low & LAST) >> 2) ^ 1;
    (phase << 2) | PRES | (phase & PHID)
}

/// Brandenburg-Anderson phase-fair ticket lock (PF-T); see the [module docs](self).
///
/// Guards are stateless and `Send`: any thread may release an acquisition.
pub struct PfTicket<W: WaitPolicy = DefaultWait> {
    pub(crate) readers: ReaderCounts,
    win: AtomicU32,
    wout: AtomicU32,
    /// The announced writer's drain target (`phase_fair::drain_mark`), or
    /// `NO_DRAIN`: written only by the writer holding the ticket, read only
    /// by `is_locked_exclusive`.
    drain_at: AtomicU32,
    /// Readers blocked by a writer's bits: woken when a writer clears them
    /// (module docs, "Waiting").
    waiters: Waiters,
    /// Writers waiting for their ticket, each parked with it: a hand-off
    /// wakes the next in line alone.
    tickets: Waiters,
    /// The announced writer waiting for the readers before it to leave:
    /// woken by departures alone.
    drained: Waiters,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> PfTicket<W> {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            PfTicket {
                readers: ReaderCounts::new(),
                win: AtomicU32::new(0),
                wout: AtomicU32::new(0),
                drain_at: AtomicU32::new(NO_DRAIN),
                waiters: Waiters::new(),
                tickets: Waiters::new(),
                drained: Waiters::new(),
                _policy: PhantomData,
            }
        }
    }

    #[inline]
    fn read_lock(&self) {
        let w = self.readers.arrive();
        if w != 0 {
            self.read_wait(w);
        }
    }

    #[cold]
    fn read_wait(&self, mut w: u64) {
        let mut withdrawals_left = MAX_WITHDRAWALS;
        loop {
            // `wout` when the reader withdrew: it moves when the writer of
            // `w` leaves (module docs, "Withdrawal").
            let withdrawn = Cell::new(None::<u32>);
            // Acquire: as above; the bits change only by the writer's Release
            // clear or by the next writer's announcement, which follows that
            // clear in rin's modification order. `wout`: Acquire, as in
            // `write_lock`; it only says when to arrive again.
            self.waiters.wait_until_or_retreat::<W>(
                || {
                    self.readers.rin.load(Ordering::Acquire) & WBITS != w
                        || withdrawn
                            .get()
                            .is_some_and(|s| self.wout.load(Ordering::Acquire) != s)
                },
                || {
                    // Acquire: keeps this load before the withdrawal's CAS
                    // that finds the bits still `w` (a Relaxed load could
                    // take effect after it on a weakly ordered CPU and read
                    // a later writer's `wout`, so that the reader waited one
                    // writer phase more; found in review). Compared only.
                    let served = self.wout.load(Ordering::Acquire);
                    if self.readers.withdraw_within(w, &mut withdrawals_left) {
                        withdrawn.set(Some(served));
                    }
                },
            );
            if withdrawn.get().is_none() {
                return;
            }
            // Withdrawn, and the writer of `w` has left: arrive anew.
            w = self.readers.arrive();
            if w == 0 {
                return;
            }
        }
    }

    #[inline]
    fn read_unlock(&self) {
        self.readers.depart();
        // Only the announced writer waits for a departure (`rout`); the
        // others wait for writer bits or tickets, which it does not change.
        self.drained.wake_all();
    }

    #[inline]
    fn write_lock(&self) {
        // Relaxed: the ticket only orders writers; hand-off ordering comes from
        // the Acquire load of `wout` below.
        let ticket = self.win.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with the previous writer's Release increment of
        // `wout`, after its clear of the writer bits.
        let served = self.wout.load(Ordering::Acquire);
        if served != ticket {
            // Its last load is Acquire, as this one.
            self.tickets
                .wait_for_turn::<W, u32>(ticket, served, |order| self.wout.load(order));
        }
        self.announce();
    }

    /// Sets the writer bits and waits for the readers that came before.
    #[inline]
    fn announce(&self) {
        // Only the ticket holder changes the low byte, and it is ours now:
        // Relaxed is exact for the low byte (readers only add RINC).
        let low = self.readers.rin.load(Ordering::Relaxed) & LOW;
        debug_assert_eq!(low & WBITS, 0, "writer bits set under a fresh ticket");
        // Modular add of (new - old) rewrites exactly the low byte.
        let delta = announced(low).wrapping_sub(low);
        // Relaxed would suffice for exclusion (every reader RMW is ordered
        // against this one in rin's modification order); Acquire keeps the
        // previous writer's release chain obvious, and Release makes this
        // writer's ticket (its `wout` reading) visible to a reader that
        // Acquires these bits, so that the reader's `served` snapshot
        // before withdrawing (`read_lock`) is not older than this writer
        // (review, 2026-11-28: with Acquire alone it could be, and the
        // reader would arrive again under the same writer). Free on x86.
        let rticket = self.readers.rin.fetch_add(delta, Ordering::AcqRel) & !LOW;
        self.publish_drain(drain_mark(rticket));
        // `drained` Acquires: pairs with each departing reader's SeqCst
        // (Release) increment of `rout`: their reads happen before our writes.
        if !self.readers.drained(rticket) {
            self.drained
                .wait_until::<W>(|| self.readers.drained(rticket));
        }
    }

    /// Publishes the writer's drain target, or `NO_DRAIN`
    /// (`is_locked_exclusive`). Relaxed: a snapshot's value, stored where
    /// the writer has just written `rin` (one line). `NO_DRAIN` is stored
    /// before the hand-off to the next writer (`serve_next_writer`'s
    /// Release), which is what `ReaderCounts::is_locked_exclusive` relies on.
    #[inline]
    fn publish_drain(&self, at: u32) {
        if PUBLISH_DRAIN {
            self.drain_at.store(at, Ordering::Relaxed);
        }
    }

    #[inline]
    fn try_write_lock(&self) -> bool {
        // Cheap pre-check before taking a ticket: any reader or writer inside?
        // Relaxed: a hint only; the CASes below decide.
        let r = self.readers.rin.load(Ordering::Relaxed);
        if r & WBITS != 0 || r & !LOW != self.readers.rout.load(Ordering::Relaxed) {
            return false;
        }
        // Acquire: pairs with the previous writer's Release increment.
        let ticket = self.wout.load(Ordering::Acquire);
        // Relaxed: taking the ticket only excludes other writers.
        if self
            .win
            .compare_exchange(
                ticket,
                ticket.wrapping_add(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        // We are the only writer. Departures are read before arrivals: if
        // arrivals (read later) equal departures (read earlier), nobody was
        // inside in between, and the CAS below fails if anybody arrived since.
        // Acquire: pairs with the departing readers' Release increments.
        let out = self.readers.rout.load(Ordering::Acquire);
        let r = self.readers.rin.load(Ordering::Relaxed);
        let low = r & LOW;
        if r & !LOW == out
            && self
                .readers
                .rin
                .compare_exchange(
                    r,
                    (r & !LOW) | announced(low),
                    // AcqRel, as `announce`'s fetch_add: the Release half
                    // makes a reader that sees these bits see our ticket
                    // taken, so its snapshot of `wout` is not older than
                    // us (with Acquire alone a try-writer's reader could
                    // withdraw and arrive again under the same writer,
                    // one withdrawal wasted; not on x86, where the CAS is
                    // a full barrier; found in review, 2026-11-28).
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            self.publish_drain(drain_mark(r & !LOW));
            return true;
        }
        // Readers are inside: hand the ticket on without announcing. The
        // phase (`LAST`) is untouched, so announcing writers still alternate.
        self.serve_next_writer();
        false
    }

    #[inline]
    fn write_unlock(&self) {
        self.publish_drain(NO_DRAIN);
        // SeqCst RMW: Release publishes the critical section to the readers
        // blocked on the bits (their Acquire load or RMW of `rin`).
        self.readers.rin.fetch_and(!WBITS, Ordering::SeqCst);
        // The next writer first: waking the readers may take a futex wake
        // per parked reader, and it need not wait for that to see its turn.
        self.serve_next_writer();
        self.waiters.wake_all();
    }

    #[inline]
    fn serve_next_writer(&self) {
        // SeqCst RMW: Release pairs with the next writer's Acquire load of
        // `wout`; SeqCst for the wake protocol.
        let next = self.wout.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        self.tickets.wake_tagged(next.tag());
    }

    #[inline]
    fn write_to_read(&self) {
        self.publish_drain(NO_DRAIN);
        // Only the writer changes the bits while it holds the lock.
        let bits = self.readers.rin.load(Ordering::Relaxed) & WBITS;
        // One RMW turns the writer into a reader: add RINC, clear PRES|PHID
        // (adding RINC - bits rewrites exactly those bits, keeps LAST, and
        // counts one more reader). SeqCst: Release for the readers admitted
        // by the clear, SeqCst for the wake protocol.
        self.readers
            .rin
            .fetch_add(RINC.wrapping_sub(bits), Ordering::SeqCst);
        self.serve_next_writer();
        self.waiters.wake_all();
    }
}

impl<W: WaitPolicy> Default for PfTicket<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: WaitPolicy> fmt::Debug for PfTicket<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PfTicket")
            .field("rin", &self.readers.rin.load(Ordering::Relaxed))
            .field("rout", &self.readers.rout.load(Ordering::Relaxed))
            .field("win", &self.win.load(Ordering::Relaxed))
            .field("wout", &self.wout.load(Ordering::Relaxed))
            .finish()
    }
}

// SAFETY: readers and writers exclude each other as argued in the module docs
// (checked by the loom model and the stress tests); lock operations Acquire
// and unlock operations Release (see the comments at each ordering).
unsafe impl<W: WaitPolicy> lock_api::RawRwLock for PfTicket<W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics cannot be built in a const; use PfTicket::new()");

    type SharedGuard = lock_api::GuardSend;
    type ExclusiveGuard = lock_api::GuardSend;

    #[inline]
    fn lock_shared(&self) -> Self::SharedGuard {
        self.read_lock();
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        self.readers.try_arrive().then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock_shared(&self, _guard: Self::SharedGuard) {
        self.read_unlock()
    }

    #[inline]
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        self.write_lock();
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        self.try_write_lock().then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _guard: Self::ExclusiveGuard) {
        self.write_unlock()
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.readers.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        // Relaxed: ordered after `rin`'s Acquire load (see there).
        self.readers
            .is_locked_exclusive(|| self.drain_at.load(Ordering::Relaxed))
    }
}

// SAFETY: the downgrade turns the writer into a reader counted in `rin` before
// it clears the writer bits, in one RMW, so no writer can enter in between.
unsafe impl<W: WaitPolicy> lock_api::RawRwLockDowngrade for PfTicket<W> {
    #[inline]
    unsafe fn downgrade(&self, _guard: Self::ExclusiveGuard) -> Self::SharedGuard {
        self.write_to_read();
        lock_api::GuardSend::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lock_api::RawRwLock;

    /// A reader is not told the lock is held exclusively while the writer
    /// it holds back has only announced itself; the writer, once in, is
    /// (review finding: PF-T answered from the writer bits alone).
    #[test]
    fn a_writer_waiting_for_a_reader_is_not_exclusive_yet() {
        crate::phase_fair::check_waiting_writer_is_not_exclusive(
            &PfTicket::<DefaultWait>::new(),
            |l| l.lock_shared(),
            // Relaxed: polling for the announcement.
            |l| l.readers.rin.load(Ordering::Relaxed) & WBITS != 0,
        );
    }

    #[test]
    fn is_locked_holds_for_a_holder_under_reader_churn() {
        crate::testing::check_is_locked_under_reader_churn(
            &PfTicket::<DefaultWait>::new(),
            2_000_000,
        );
    }

    #[test]
    fn footprint() {
        assert_eq!(core::mem::size_of::<PfTicket>(), 40);
        assert!(core::mem::size_of::<crate::CachePadded<PfTicket>>() <= 128);
    }

    #[test]
    fn is_locked_is_a_pure_read() {
        let l = PfTicket::<DefaultWait>::new();
        assert!(!l.is_locked());
        let g = l.lock_shared();
        assert!(l.is_locked() && !l.is_locked_exclusive());
        let before = format!("{l:?}");
        let _ = (l.is_locked(), l.is_locked_exclusive());
        assert_eq!(before, format!("{l:?}"));
        // SAFETY: g is this lock's shared acquisition.
        unsafe { l.unlock_shared(g) };
        let g = l.lock_exclusive();
        assert!(l.is_locked() && l.is_locked_exclusive());
        // SAFETY: g is this lock's exclusive acquisition.
        unsafe { l.unlock_exclusive(g) };
        assert!(!l.is_locked());
    }

    #[test]
    fn harness_1_2_8_threads() {
        let l = PfTicket::<DefaultWait>::new();
        crate::testing::check_try_lock(&l);
        crate::testing::check_downgrade(&l);
        for threads in [1, 2, 8] {
            crate::testing::stress_downgrade(&l, &crate::testing::StressConfig::new(threads));
        }
        crate::testing::check_panic_releases(&lock_api::RwLock::<PfTicket, u64>::new(0));
    }

    #[test]
    fn harness_without_parking() {
        let l = PfTicket::<crate::wait::SpinYield>::new();
        crate::testing::stress(&l, &crate::testing::StressConfig::new(8));
    }

    #[test]
    #[ignore = "wants a quiet machine: scripts/test runs it with --test-threads=1"]
    fn phase_fair() {
        crate::testing::check_phase_fairness(
            PfTicket::<DefaultWait>::new,
            &|l, readers, writers| {
                let rin = l.readers.rin.load(Ordering::Relaxed);
                // The first writer must have announced itself (not merely taken
                // a ticket) before the second reader arrives, or that reader is
                // rightly admitted first.
                rin >> 8 == u64::from(readers)
                    && l.win.load(Ordering::Relaxed) == writers
                    && rin & WBITS != 0
            },
        );
    }

    #[test]
    fn counters_wrap() {
        let l = PfTicket::<DefaultWait>::new();
        l.readers.rin.store(u64::MAX - RINC + 1, Ordering::Relaxed);
        l.readers.rout.store(u64::MAX - RINC + 1, Ordering::Relaxed);
        l.win.store(u32::MAX, Ordering::Relaxed);
        l.wout.store(u32::MAX, Ordering::Relaxed);
        for _ in 0..4 {
            let g = l.lock_shared();
            assert!(l.try_lock_exclusive().is_none());
            // SAFETY: our shared acquisition.
            unsafe { l.unlock_shared(g) };
            let g = l.lock_exclusive();
            assert!(l.try_lock_shared().is_none());
            // SAFETY: our exclusive acquisition.
            unsafe { l.unlock_exclusive(g) };
        }
        assert!(!l.is_locked());
    }

    /// A withdrawn reader that stays off its CPU while writers of both
    /// phases pass arrives again once the writer it withdrew from has left:
    /// it goes back to sleep at most `MAX_WITHDRAWALS` times before it gets
    /// in. The writer (this thread) and the reader share one CPU, the
    /// reader at `SCHED_IDLE`, so that it runs only while the writer
    /// sleeps; each round the writer passes an A, B, A sequence of phases.
    /// Without the `wout` check the reader slept through every round (the
    /// bits read its `w` again): 10 of 10 (found in review).
    #[test]
    #[ignore = "pins two threads to one CPU, one at SCHED_IDLE: run alone (--ignored)"]
    #[cfg(target_os = "linux")]
    fn a_withdrawn_reader_arrives_again_after_its_writer_left() {
        use std::sync::atomic::AtomicU32 as Counter;
        use std::time::{Duration, Instant};

        use crate::testing::{allowed_cpus, pin_to};
        let cpu = allowed_cpus()[0];
        let pin = || pin_to(cpu);
        let status = |tid: u32| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap_or_default()
        };
        let voluntary = |s: &str| -> u64 {
            s.lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .map_or(0, |v| v.trim().parse().unwrap())
        };
        let l = PfTicket::<DefaultWait>::new();
        let phases = Counter::new(0);
        let got_in_at = Counter::new(u32::MAX);
        let tid = Counter::new(0);
        pin();
        let mut g = l.lock_exclusive();
        phases.fetch_add(1, Ordering::Relaxed);
        let reparked = std::thread::scope(|s| {
            s.spawn(|| {
                pin();
                // SAFETY: changes the calling thread's own policy.
                unsafe {
                    let p = libc::sched_param { sched_priority: 0 };
                    assert_eq!(libc::sched_setscheduler(0, libc::SCHED_IDLE, &p), 0);
                    tid.store(libc::gettid() as u32, Ordering::Relaxed);
                }
                // Withdraw at the first yield, as a reader on a shared CPU.
                crate::wait::set_cpu_shared(true);
                let r = l.lock_shared();
                got_in_at.store(phases.load(Ordering::Relaxed), Ordering::Relaxed);
                // SAFETY: the shared acquisition above.
                unsafe { l.unlock_shared(r) };
            });
            // Until the reader got in, or is asleep again after `before`
            // voluntary switches (then: their count now).
            let asleep_again = |before: u64| -> Option<u64> {
                let t0 = Instant::now();
                loop {
                    std::thread::sleep(Duration::from_millis(2));
                    if got_in_at.load(Ordering::Relaxed) != u32::MAX {
                        return None;
                    }
                    let t = tid.load(Ordering::Relaxed);
                    let st = status(t);
                    if t != 0 && st.contains("State:\tS") && voluntary(&st) > before {
                        return Some(voluntary(&st));
                    }
                    assert!(
                        t0.elapsed() < Duration::from_secs(20),
                        "the reader never slept"
                    );
                }
            };
            let mut switches = asleep_again(0).expect("the reader waits for the writer");
            assert_eq!(
                l.readers.rin.load(Ordering::Relaxed) >> 8,
                0,
                "the reader withdrew"
            );
            let mut reparked = 0;
            for _ in 0..10 {
                // SAFETY: our exclusive acquisition, each time.
                unsafe { l.unlock_exclusive(g) };
                g = l.lock_exclusive();
                phases.fetch_add(1, Ordering::Relaxed);
                // SAFETY: as above.
                unsafe { l.unlock_exclusive(g) };
                g = l.lock_exclusive();
                phases.fetch_add(1, Ordering::Relaxed);
                match asleep_again(switches) {
                    Some(n) => {
                        switches = n;
                        reparked += 1;
                    }
                    None => break,
                }
            }
            // SAFETY: as above.
            unsafe { l.unlock_exclusive(g) };
            reparked
        });
        assert_ne!(got_in_at.load(Ordering::Relaxed), u32::MAX);
        assert!(
            reparked <= MAX_WITHDRAWALS,
            "the reader went back to sleep {reparked} times"
        );
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom_support::{self, Shared};
    use crate::sync::thread;
    use lock_api::{RawRwLock, RawRwLockDowngrade};

    /// Two writers and a reader: writers exclude each other and the reader.
    #[test]
    fn pft_two_writers_one_reader() {
        loom_support::two_writers_one_reader(PfTicket::<DefaultWait>::new);
    }

    /// A failed `try_lock_exclusive` between two writers must keep the phase
    /// bit alternating between announcing writers, or a reader blocked by the
    /// first writer and counted by the second deadlocks with it.
    #[test]
    fn pft_failed_try_write_keeps_phases_alternating() {
        loom::model(|| {
            let s = Shared::new(PfTicket::<DefaultWait>::new());
            let w1 = {
                let s = s.clone();
                thread::spawn(move || s.write())
            };
            let r = {
                let s = s.clone();
                thread::spawn(move || s.read())
            };
            let w2 = {
                let s = s.clone();
                thread::spawn(move || {
                    if let Some(g) = s.lock.try_lock_exclusive() {
                        // SAFETY: our exclusive acquisition.
                        unsafe { s.lock.unlock_exclusive(g) };
                    }
                    s.write()
                })
            };
            w1.join().unwrap();
            r.join().unwrap();
            w2.join().unwrap();
            assert_eq!(s.read(), 2);
        });
    }

    /// A writer against two readers, one of which uses try-lock, and a
    /// downgrade: the downgraded reader still excludes writers.
    #[test]
    fn pft_readers_writer_downgrade() {
        loom::model(|| {
            let s = Shared::new(PfTicket::<DefaultWait>::new());
            let r = {
                let s = s.clone();
                thread::spawn(move || {
                    if let Some(g) = s.lock.try_lock_shared() {
                        // SAFETY: shared access under the lock.
                        s.data.with(|p| unsafe { *p });
                        // SAFETY: our shared acquisition.
                        unsafe { s.lock.unlock_shared(g) };
                    }
                    s.read()
                })
            };
            let w = {
                let s = s.clone();
                thread::spawn(move || {
                    let g = s.lock.lock_exclusive();
                    // SAFETY: exclusive access under the lock.
                    s.data.with_mut(|p| unsafe { *p += 1 });
                    // SAFETY: our exclusive acquisition.
                    let g = unsafe { s.lock.downgrade(g) };
                    // SAFETY: shared access under the downgraded lock.
                    let v = s.data.with(|p| unsafe { *p });
                    // SAFETY: our shared acquisition.
                    unsafe { s.lock.unlock_shared(g) };
                    v
                })
            };
            if let Some(g) = s.lock.try_lock_exclusive() {
                s.add_and_unlock(g, 10);
            }
            r.join().unwrap();
            let v = w.join().unwrap();
            assert!(v == 1 || v == 11);
        });
    }

    /// A reader blocked by W1 while W2 and W3 follow (W3 has W1's phase bit):
    /// the reader must see a change of the bits before W3 can announce.
    #[test]
    fn pft_reader_across_three_writer_phases() {
        loom_support::reader_across_three_writer_phases(PfTicket::<DefaultWait>::new);
    }
}
