//! PF-Q: Brandenburg and Anderson's phase-fair queue reader-writer lock (the
//! "BA" lock of the BRAVO paper).
//!
//! Source: B. Brandenburg and J. Anderson, "Spin-based reader-writer
//! synchronization for multiprocessor real-time systems", Real-Time Systems
//! 2010; BRAVO (Dice & Kogan, ATC'19) Section 5: "In PF-Q active readers are
//! tallied on a central pair of counters in the same fashion as PF-T, but
//! waiting readers enqueue on an MCS-like queue ... waiting readers in PF-Q use
//! local spinning on a thread-local field in the enqueued element."
//!
//! # State
//!
//! ```text
//!  rin, rout      reader arrivals / departures, writer bits PRES|PHID in rin (as PF-T)
//!  wstate         LOCKED (bit 0): writer mutual exclusion; PHASE (bit 1): next writer's PHID;
//!                 DRAIN_AT (bit 2): bits 8-31 hold the holder's drain target (is_locked_exclusive)
//!  wtail          tail of the writers' MCS queue (null: empty)
//!  rtail[2]       one queue of blocked readers per writer phase; CLOSED when no
//!                 writer of that phase is present
//! ```
//!
//! # Protocol
//!
//! - **Writers** queue MCS-style: a writer swaps its stack node into `wtail`,
//!   links itself behind its predecessor and waits on its own node's
//!   [`Latch`]. At the head of the queue it takes `LOCKED`, then hands the head
//!   role to its successor (or empties the queue) and stops using its node: a
//!   node is needed only while waiting, as in Linux's qspinlock. With `LOCKED`
//!   held it opens `rtail[p]` for its phase `p`, announces itself in `rin`
//!   (`rticket = fetch_add(rin, PRES | p)`) and waits for `rout == rticket`.
//! - **Readers** do `fetch_add(rin, RINC)`; with no writer bits they are in.
//!   Otherwise they push a stack node onto `rtail[p]` with a CAS and wait on
//!   its latch; if the queue is `CLOSED` the writer has already left and they
//!   are in. The queue a blocked reader finds is always its writer's: the next
//!   writer (other phase) counts this reader in its `rticket` and cannot
//!   finish acquiring, so no writer of phase `p` can reopen `rtail[p]` before
//!   the reader has left.
//! - **Writer unlock** clears the writer bits, swaps `CLOSED` into `rtail[p]`,
//!   opens the latch of every reader it took out (reading each `next` before
//!   opening: the node may vanish right after), and releases `LOCKED` with the
//!   phase toggled.
//! - **Withdrawal** (not in the paper), as in PF-T: a queued reader that
//!   would leave a CPU other threads are waiting for takes its arrival back
//!   from `rin` while the writer bits are still those it found
//!   (`ReaderCounts::withdraw` in the shared reader side). It stays in the
//!   queue: the writer opens its latch as usual, and the reader then
//!   arrives anew.
//!
//! Readers wait for at most one writer phase and writers for at most one
//! reader phase, as in PF-T, while every reader keeps its CPU. A reader
//! that withdraws is counted by no writer until it arrives again, so the
//! writers that arrive meanwhile pass it: how many depends on how long it
//! stays off its CPU (the docs said five phases until 2026-11-28, which
//! no step enforces; found in review). It withdraws at most
//! `MAX_WITHDRAWALS` (4) times per acquisition, then waits counted, for
//! one writer phase, as in PF-T. Writers are FIFO among themselves except that a writer arriving at an
//! empty queue may take a free lock directly.
//!
//! One hazard user space cannot avoid (qspinlock disables preemption
//! instead): a queued writer preempted between its swap into `wtail` and
//! its link into the predecessor's node makes the head, which holds
//! `LOCKED`, wait for it (yielding) before it can hand the head role on.
//!
//! Like every fair (FIFO hand-off) lock, PF-T and PF-Q are slow when threads
//! outnumber cores: the lock is handed to a waiter that may be parked or
//! preempted. The comparison harness shows the cost (`cargo bench --bench
//! rwbench`, oversubscribed rows, `*_unrestricted`); parking_lot's barging
//! lock does not pay it. The crate's default types wrap the lock in
//! [`Restricted`](crate::Restricted), which keeps the writers to the running
//! CPUs, and readers withdraw as above.
//!
//! # Waiting and footprint
//!
//! Queue waits are local ([`Latch`]: spin, yield, park on the node; a queued
//! writer with a CPU of its own starts its backoff over while the writers
//! ahead keep taking and releasing `LOCKED`, so it parks only when the queue
//! stalls: [`Latch::wait_while_moving`]); the queue
//! head's wait for `LOCKED` and the writer's wait for departing readers go
//! through the lock's [`Waiters`]. 48 bytes on 64-bit targets (asserted in a
//! test), not padded.

use core::fmt;
use core::marker::PhantomData;
use core::ptr;

use crate::phase_fair::{
    MAX_WITHDRAWALS, NO_DRAIN, PRES, PUBLISH_DRAIN, RINC, ReaderCounts, WBITS, drain_mark,
};
use crate::sync::{AtomicPtr, AtomicU32, Ordering};
use crate::wait::{DefaultWait, Latch, WaitPolicy, Waiters, spin_until};

/// The phase bit, as `wstate` and the guard keep it.
const PHID: u32 = 0x1;

const LOCKED: u32 = 0x1;
const PHASE_SHIFT: u32 = 1;
/// In `wstate`, with `LOCKED`: bits 8-31 hold the holder's drain target
/// (`phase_fair::drain_mark`, whose low byte is zero), for
/// `is_locked_exclusive`. Only the holder of `LOCKED` writes `wstate` until
/// it releases it, and the release clears this bit.
const DRAIN_AT: u32 = 0x4;

/// A blocked reader's queue element, on its stack.
struct ReaderNode {
    /// Written before the node is published by the pushing CAS.
    next: AtomicPtr<ReaderNode>,
    latch: Latch,
}

/// A queued writer's element, on its stack.
struct WriterNode {
    next: AtomicPtr<WriterNode>,
    latch: Latch,
}

#[inline]
fn closed() -> *mut ReaderNode {
    ptr::without_provenance_mut(1)
}

/// The state an exclusive acquisition carries from lock to unlock: the
/// writer's phase bit (lock_api 0.5 per-acquisition state).
#[derive(Debug)]
pub struct PfQueueWriteGuard {
    phase: u32,
}

/// Brandenburg-Anderson phase-fair queue lock (PF-Q); see the [module docs](self).
///
/// Guards are `Send`: any thread may release an acquisition.
pub struct PfQueue<W: WaitPolicy = DefaultWait> {
    readers: ReaderCounts,
    wstate: AtomicU32,
    waiters: Waiters,
    wtail: AtomicPtr<WriterNode>,
    rtail: [AtomicPtr<ReaderNode>; 2],
    _policy: PhantomData<W>,
}

// SAFETY: the raw pointers in the queues point to nodes owned by waiting
// threads and are only dereferenced under the protocol above.
unsafe impl<W: WaitPolicy> Send for PfQueue<W> {}
// SAFETY: as above; all shared state is atomic.
unsafe impl<W: WaitPolicy> Sync for PfQueue<W> {}

impl<W: WaitPolicy> PfQueue<W> {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            PfQueue {
                readers: ReaderCounts::new(),
                wstate: AtomicU32::new(0),
                waiters: Waiters::new(),
                wtail: AtomicPtr::new(ptr::null_mut()),
                rtail: [
                    AtomicPtr::new(ptr::without_provenance_mut(1)),
                    AtomicPtr::new(ptr::without_provenance_mut(1)),
                ],
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
        // Withdrawn, and the writer of `w` has left: arrive anew.
        while self.read_wait_phase(w, &mut withdrawals_left) {
            w = self.readers.arrive();
            if w == 0 {
                return;
            }
        }
    }

    /// Waits out the writer phase `w`. Returns true if the reader withdrew
    /// from it instead ([`ReaderCounts::withdraw`]: it was about to leave
    /// the CPU) and must arrive again.
    #[inline]
    fn read_wait_phase(&self, w: u64, withdrawals_left: &mut u32) -> bool {
        let node = ReaderNode {
            next: AtomicPtr::new(ptr::null_mut()),
            latch: Latch::new(),
        };
        let me = &node as *const ReaderNode as *mut ReaderNode;
        let queue = &self.rtail[(w & u64::from(PHID)) as usize];
        // Acquire: if CLOSED, pairs with the writer's Release swap, after its
        // critical section. The writer opened this queue before its Release
        // announcement, which our Acquire RMW of rin read, so we never see a
        // CLOSED older than that opening.
        let mut tail = queue.load(Ordering::Acquire);
        loop {
            if tail == closed() {
                return false;
            }
            // Relaxed: published by the Release CAS below.
            node.next.store(tail, Ordering::Relaxed);
            // Release: publishes `next` to the writer's AcqRel swap. Acquire
            // on failure: a CLOSED read there must also synchronize.
            match queue.compare_exchange_weak(tail, me, Ordering::Release, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => tail = now,
            }
        }
        // The writer opens our latch after clearing the bits (Release in
        // `open`, Acquire in `wait`), whether or not we withdrew: the node
        // stays in its list until then.
        let mut withdrawn = false;
        node.latch.wait_or_retreat::<W>(|| {
            withdrawn = self.readers.withdraw_within(w, withdrawals_left);
        });
        withdrawn
    }

    #[inline]
    fn read_unlock(&self) {
        self.readers.depart();
        self.waiters.wake_all();
    }

    /// Takes `LOCKED` if it is free; returns the phase on success.
    #[inline]
    fn try_take_locked(&self) -> Option<u32> {
        // Relaxed: the CAS below orders.
        let s = self.wstate.load(Ordering::Relaxed);
        if s & LOCKED != 0 {
            return None;
        }
        // Acquire: pairs with the previous writer's Release of `LOCKED`.
        self.wstate
            .compare_exchange(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|s| (s >> PHASE_SHIFT) & PHID)
    }

    #[inline]
    fn write_lock(&self) -> u32 {
        // Fast path: nobody queued and the lock free. Relaxed: a hint; the CAS
        // in try_take_locked orders the acquisition.
        if self.wtail.load(Ordering::Relaxed).is_null()
            && let Some(phase) = self.try_take_locked()
        {
            self.announce(phase);
            return phase;
        }
        let phase = self.write_queue();
        self.announce(phase);
        phase
    }

    #[cold]
    fn write_queue(&self) -> u32 {
        let node = WriterNode {
            next: AtomicPtr::new(ptr::null_mut()),
            latch: Latch::new(),
        };
        let me = &node as *const WriterNode as *mut WriterNode;
        // AcqRel: Release publishes our node's initialisation to the successor
        // that reads it from wtail; Acquire makes the predecessor's node valid
        // to write into.
        let prev = self.wtail.swap(me, Ordering::AcqRel);
        if !prev.is_null() {
            // The predecessor keeps its node until it has handed the head role
            // on, which waits for this very link. Release: pairs with the
            // predecessor's Acquire load of `next`.
            // SAFETY: so `prev` is live.
            unsafe { (*prev).next.store(me, Ordering::Release) };
            // Writers ahead of us hand `LOCKED` on, each take and release
            // changing `wstate`: while that keeps happening we do not park
            // (`Latch::wait_while_moving`). Relaxed: only a hint of progress;
            // the latch's Acquire decides that we are the head.
            let mut seen = self.wstate.load(Ordering::Relaxed);
            node.latch.wait_while_moving::<W>(|| {
                let now = self.wstate.load(Ordering::Relaxed);
                let moved = now != seen;
                seen = now;
                moved
            });
        }
        // Head of the queue: the only queued writer competing for LOCKED.
        let phase = loop {
            if let Some(phase) = self.try_take_locked() {
                break phase;
            }
            self.waiters.wait_until::<W>(|| {
                // Relaxed: only a trigger to retry the Acquire CAS.
                self.wstate.load(Ordering::Relaxed) & LOCKED == 0
            });
        };
        // Hand the head role on. Relaxed on success: nobody reads our node
        // any more once the tail no longer names it.
        if self
            .wtail
            .compare_exchange(me, ptr::null_mut(), Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            // A successor swapped itself in; it links itself in its next
            // few instructions. Acquire: pairs with its Release link.
            spin_until::<W>(|| !node.next.load(Ordering::Acquire).is_null());
            let next = node.next.load(Ordering::Acquire);
            // We do not touch the successor's node after opening its latch.
            // SAFETY: the successor waits on its latch, alive until opened.
            unsafe { Latch::open(&(*next).latch) };
        }
        phase
    }

    /// With `LOCKED` held: opens this phase's reader queue, announces the
    /// writer and waits for the readers that came before.
    #[inline]
    fn announce(&self, phase: u32) {
        // Relaxed: published by the Release (AcqRel) announcement below, which
        // every reader that sees the bits reads with an Acquire RMW.
        self.rtail[phase as usize].store(ptr::null_mut(), Ordering::Relaxed);
        let rticket = self
            .readers
            .rin
            .fetch_add(PRES | u64::from(phase), Ordering::AcqRel)
            & !WBITS;
        self.publish_drain(phase, rticket);
        // `drained` Acquires: pairs with the departing readers' SeqCst
        // increments.
        if !self.readers.drained(rticket) {
            self.waiters
                .wait_until::<W>(|| self.readers.drained(rticket));
        }
    }

    /// With `LOCKED` held and the writer announced: publishes its drain
    /// target in `wstate`. A plain store, since only the holder writes
    /// `wstate` now (a competing CAS expects `LOCKED` clear and fails
    /// either way), on the line the writer has just written `rin` on.
    /// Relaxed: a snapshot's value; the release of `LOCKED` clears it
    /// before the next writer can take `LOCKED` and announce
    /// (`ReaderCounts::is_locked_exclusive`).
    #[inline]
    fn publish_drain(&self, phase: u32, rticket: u64) {
        if PUBLISH_DRAIN {
            self.wstate.store(
                LOCKED | DRAIN_AT | (phase << PHASE_SHIFT) | drain_mark(rticket),
                Ordering::Relaxed,
            );
        }
    }

    #[inline]
    fn try_write_lock(&self) -> Option<u32> {
        // Relaxed hint: do not barge past queued writers.
        if !self.wtail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let phase = self.try_take_locked()?;
        // Departures before arrivals (see PfTicket::try_write_lock). Acquire:
        // pairs with the departing readers' Release increments.
        let out = self.readers.rout.load(Ordering::Acquire);
        let r = self.readers.rin.load(Ordering::Relaxed);
        if r == out {
            // Relaxed: published by the Release CAS (see `announce`).
            self.rtail[phase as usize].store(ptr::null_mut(), Ordering::Relaxed);
            if self
                .readers
                .rin
                .compare_exchange(
                    r,
                    r | PRES | u64::from(phase),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                self.publish_drain(phase, r);
                return Some(phase);
            }
            // Never announced: no reader can have queued. Relaxed: restores
            // the initial state nobody observed.
            self.rtail[phase as usize].store(closed(), Ordering::Relaxed);
        }
        // Give LOCKED back with the phase unchanged. SeqCst RMW for the wake
        // protocol; Release pairs with the next writer's Acquire CAS.
        self.wstate.swap(phase << PHASE_SHIFT, Ordering::SeqCst);
        self.waiters.wake_all();
        None
    }

    /// Closes this phase's reader queue and admits every reader in it.
    #[inline]
    fn release_readers(&self, phase: u32) {
        // AcqRel: Release pairs with readers that read CLOSED (Acquire);
        // Acquire pairs with every pushing CAS (a release sequence of RMWs),
        // making their `next` fields visible.
        let mut cur = self.rtail[phase as usize].swap(closed(), Ordering::AcqRel);
        while !cur.is_null() {
            debug_assert_ne!(cur, closed(), "reader queue closed twice");
            // `next` is read before opening; the node is not touched after.
            // SAFETY: a queued reader's node lives until its latch is opened.
            unsafe {
                let next = (*cur).next.load(Ordering::Relaxed);
                Latch::open(&(*cur).latch);
                cur = next;
            }
        }
    }

    #[inline]
    fn write_unlock(&self, phase: u32) {
        // Release: publishes the critical section to readers that see the
        // bits clear (their Acquire RMW of rin). No SeqCst needed: blocked
        // readers wait on their own latches, not on `Waiters`.
        self.readers.rin.fetch_and(!WBITS, Ordering::Release);
        self.release_lockword(phase);
    }

    #[inline]
    fn release_lockword(&self, phase: u32) {
        // Close the queue even if it is empty: a reader that saw the bits may
        // be about to push.
        self.release_readers(phase);
        // SeqCst RMW: Release pairs with the next writer's Acquire CAS on
        // `wstate`; SeqCst for the wake protocol of `Waiters`.
        self.wstate
            .swap((phase ^ PHID) << PHASE_SHIFT, Ordering::SeqCst);
        self.waiters.wake_all();
    }

    #[inline]
    fn write_to_read(&self, phase: u32) {
        // Become a counted reader and clear the bits in one RMW (see PfTicket).
        // Release: pairs with the readers admitted by the clear.
        self.readers.rin.fetch_add(
            RINC.wrapping_sub(PRES | u64::from(phase)),
            Ordering::Release,
        );
        self.release_lockword(phase);
    }
}

impl<W: WaitPolicy> Default for PfQueue<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: WaitPolicy> fmt::Debug for PfQueue<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PfQueue")
            .field("rin", &self.readers.rin.load(Ordering::Relaxed))
            .field("rout", &self.readers.rout.load(Ordering::Relaxed))
            .field("wstate", &self.wstate.load(Ordering::Relaxed))
            .field(
                "writers_queued",
                &!self.wtail.load(Ordering::Relaxed).is_null(),
            )
            .finish()
    }
}

// SAFETY: mutual exclusion as argued in the module docs (loom model and
// stress tests); acquisitions Acquire, releases Release (see each ordering).
unsafe impl<W: WaitPolicy> lock_api::RawRwLock for PfQueue<W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics cannot be built in a const; use PfQueue::new()");

    type SharedGuard = lock_api::GuardSend;
    type ExclusiveGuard = PfQueueWriteGuard;

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
        PfQueueWriteGuard {
            phase: self.write_lock(),
        }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        self.try_write_lock()
            .map(|phase| PfQueueWriteGuard { phase })
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        self.write_unlock(guard.phase)
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.readers.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.readers.is_locked_exclusive(|| {
            // Relaxed: ordered after `rin`'s Acquire load (see there).
            let w = self.wstate.load(Ordering::Relaxed);
            if w & DRAIN_AT == 0 {
                NO_DRAIN
            } else {
                w & !0xff
            }
        })
    }
}

// SAFETY: the writer becomes a counted reader in the same RMW that clears its
// bits, and releases LOCKED only afterwards.
unsafe impl<W: WaitPolicy> lock_api::RawRwLockDowngrade for PfQueue<W> {
    #[inline]
    unsafe fn downgrade(&self, guard: Self::ExclusiveGuard) -> Self::SharedGuard {
        self.write_to_read(guard.phase);
        lock_api::GuardSend::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lock_api::RawRwLock;
    use std::sync::Arc;

    /// A reader is not told the lock is held exclusively while the writer
    /// it holds back has only announced itself; the writer, once in, is
    /// (review finding: PF-Q answered from the writer bits alone).
    #[test]
    fn a_writer_waiting_for_a_reader_is_not_exclusive_yet() {
        crate::phase_fair::check_waiting_writer_is_not_exclusive(
            &PfQueue::<DefaultWait>::new(),
            |l| l.lock_shared(),
            // Relaxed: polling for the announcement.
            |l| l.readers.rin.load(Ordering::Relaxed) & WBITS != 0,
        );
    }

    #[test]
    fn is_locked_holds_for_a_holder_under_reader_churn() {
        crate::testing::check_is_locked_under_reader_churn(
            &PfQueue::<DefaultWait>::new(),
            2_000_000,
        );
    }

    #[test]
    fn footprint() {
        assert_eq!(core::mem::size_of::<PfQueue>(), 48);
        assert!(core::mem::size_of::<crate::CachePadded<PfQueue>>() <= 128);
    }

    #[test]
    fn readers_queue_behind_a_writer_and_are_released_together() {
        let l = Arc::new(PfQueue::<DefaultWait>::new());
        let g = l.lock_exclusive();
        let readers: Vec<_> = (0..6)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    let g = l.lock_shared();
                    assert!(!l.is_locked_exclusive());
                    // SAFETY: our shared acquisition.
                    unsafe { l.unlock_shared(g) };
                })
            })
            .collect();
        // Let the readers arrive and queue (or park). Count the queued nodes,
        // not `rin`: six waiting readers outnumber this machine's CPUs, so
        // they withdraw from `rin` as they leave the CPU, and stay queued.
        let queued = || {
            let mut n = 0;
            let mut p = l.rtail[0].load(Ordering::Acquire);
            while !p.is_null() && p != closed() {
                n += 1;
                // A queued node lives until its latch opens: only our unlock.
                // SAFETY: so `p`, queued, is alive.
                p = unsafe { (*p).next.load(Ordering::Relaxed) };
            }
            n
        };
        while queued() < 6 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: our exclusive acquisition.
        unsafe { l.unlock_exclusive(g) };
        for r in readers {
            r.join().unwrap();
        }
        assert!(!l.is_locked());
        assert_eq!(l.rtail[0].load(Ordering::Relaxed), closed());
    }

    #[test]
    fn harness_1_2_8_threads() {
        let l = PfQueue::<DefaultWait>::new();
        crate::testing::check_try_lock(&l);
        crate::testing::check_downgrade(&l);
        for threads in [1, 2, 8] {
            crate::testing::stress_downgrade(&l, &crate::testing::StressConfig::new(threads));
        }
        crate::testing::check_panic_releases(&lock_api::RwLock::<PfQueue, u64>::new(0));
    }

    #[test]
    fn harness_without_parking() {
        let l = PfQueue::<crate::wait::SpinYield>::new();
        crate::testing::stress(&l, &crate::testing::StressConfig::new(8));
    }

    #[test]
    #[ignore = "wants a quiet machine: scripts/test runs it with --test-threads=1"]
    fn phase_fair() {
        crate::testing::check_phase_fairness(
            PfQueue::<DefaultWait>::new,
            &|l, readers, writers| {
                let rin = l.readers.rin.load(Ordering::Relaxed);
                let writer_present = rin & WBITS != 0;
                let writer_queued = !l.wtail.load(Ordering::Relaxed).is_null();
                rin >> 8 == u64::from(readers)
                    && match writers {
                        1 => writer_present,
                        _ => writer_present && writer_queued,
                    }
            },
        );
    }

    #[test]
    fn phase_alternates_and_counters_wrap() {
        let l = PfQueue::<DefaultWait>::new();
        l.readers.rin.store(u64::MAX - RINC + 1, Ordering::Relaxed);
        l.readers.rout.store(u64::MAX - RINC + 1, Ordering::Relaxed);
        let mut phases = Vec::new();
        for _ in 0..4 {
            let g = l.lock_exclusive();
            phases.push(g.phase);
            assert!(l.try_lock_shared().is_none());
            assert!(l.try_lock_exclusive().is_none());
            // SAFETY: our exclusive acquisition.
            unsafe { l.unlock_exclusive(g) };
            let g = l.lock_shared();
            assert!(l.try_lock_exclusive().is_none());
            // SAFETY: our shared acquisition.
            unsafe { l.unlock_shared(g) };
        }
        assert_eq!(phases, [0, 1, 0, 1]);
        assert!(!l.is_locked());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom_support::{self, Shared};
    use crate::sync::thread;
    use lock_api::{RawRwLock, RawRwLockDowngrade};

    /// Two writers through the MCS queue (head hand-off) and a reader.
    #[test]
    fn pfq_two_writers_one_reader() {
        loom_support::two_writers_one_reader(PfQueue::<DefaultWait>::new);
    }

    /// Readers queue on a writer's phase and are released by its unlock or
    /// its downgrade.
    #[test]
    fn pfq_writer_downgrade_two_readers() {
        loom::model(|| {
            let s = Shared::new(PfQueue::<DefaultWait>::new());
            let rs: Vec<_> = (0..2)
                .map(|_| {
                    let s = s.clone();
                    thread::spawn(move || s.read())
                })
                .collect();
            let g = s.lock.lock_exclusive();
            // SAFETY: exclusive access under the lock.
            s.data.with_mut(|p| unsafe { *p = 7 });
            // SAFETY: our exclusive acquisition.
            let g = unsafe { s.lock.downgrade(g) };
            // SAFETY: shared access under the downgraded lock.
            assert_eq!(s.data.with(|p| unsafe { *p }), 7);
            // SAFETY: our shared acquisition.
            unsafe { s.lock.unlock_shared(g) };
            for r in rs {
                let v = r.join().unwrap();
                assert!(v == 0 || v == 7);
            }
        });
    }

    /// try_lock_exclusive backs out cleanly against a reader and a writer.
    #[test]
    fn pfq_try_write_against_reader_and_writer() {
        loom::model(|| {
            let s = Shared::new(PfQueue::<DefaultWait>::new());
            let r = {
                let s = s.clone();
                thread::spawn(move || s.read())
            };
            let w = {
                let s = s.clone();
                thread::spawn(move || s.write())
            };
            if let Some(g) = s.lock.try_lock_exclusive() {
                s.add_and_unlock(g, 10);
            }
            let v = r.join().unwrap();
            assert!([0, 1, 10, 11].contains(&v));
            w.join().unwrap();
            let end = s.read();
            assert!(end == 1 || end == 11);
        });
    }

    /// The main thread holds the lock while two writers queue: the second
    /// queues behind the first, so the MCS link and the latch hand-off of
    /// the head role run (with two writers alone `prev` is never non-null).
    #[test]
    fn pfq_writer_queue_handoff() {
        loom::model(|| {
            let s = Shared::new(PfQueue::<DefaultWait>::new());
            let g = s.lock.lock_exclusive();
            let ws: Vec<_> = (0..2)
                .map(|_| {
                    let s = s.clone();
                    thread::spawn(move || s.write())
                })
                .collect();
            crate::sync::yield_now();
            s.add_and_unlock(g, 1);
            for w in ws {
                w.join().unwrap();
            }
            assert_eq!(s.read(), 3);
        });
    }

    /// A reader blocked by W1 (phase 0) while W2 (phase 1) and W3 (phase 0,
    /// the same reader queue reopened) follow: the reader must be admitted
    /// by W1's release, never strand in W3's queue.
    #[test]
    fn pfq_reader_across_three_writer_phases() {
        loom_support::reader_across_three_writer_phases(PfQueue::<DefaultWait>::new);
    }
}
