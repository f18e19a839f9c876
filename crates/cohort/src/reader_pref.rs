//! C-RW-RP: the reader-preference cohort reader-writer lock (PPoPP'13
//! Section 3.3, Figure 4).
//!
//! # Protocol
//!
//! ```text
//! reader:                                   writer:
//!   start: while RBarrier != 0: wait          start: acquire writer mutex
//!   arrive at ReadIndr                        if ReadIndr not empty:
//!   while writer mutex is locked: wait          release writer mutex
//!     (on a shared CPU, at most 16 times:       wait until empty, raising
//!      depart, wait until the mutex is            RBarrier once out of patience
//!      free or the hold seen has ended,         goto start
//!      goto start)                            lower RBarrier if raised
//!   <read critical section>                   <write critical section>
//!   depart                                    release writer mutex
//! ```
//!
//! The Dekker pair is the writer-preference lock's ([`crate::writer_pref`]),
//! with the roles swapped: a reader that meets a writer stays arrived and
//! waits, so the writer, which sees it, backs off (the paper's reader; the
//! departure in brackets is this library's, "Oversubscription" below).
//!
//! # Anti-starvation and the pathology
//!
//! A writer that waits for readers longer than its patience (1000 checks
//! by default, counted across its retries, each of which ends a group of
//! 64; about `PATIENCE_TIME` past its first yield; on a shared CPU, 16
//! checks, or its first yield where no earlier wait showed the CPU shared:
//! `rw.rs`, "Patience") raises RBarrier, which stops *new*
//! readers; the arrived ones drain and the writer gets in
//! (`tests/starvation.rs`). Readers arrived while writers hand the writer
//! mutex to each other (each sees them and backs off) wait
//! for the whole circulation: the "superfluous writer ownership circulation"
//! that [`crate::reader_pref_opt`] removes. Section 4.3's pathology (writers
//! starve, so few threads become readers again) is in the crate docs.
//!
//! # Oversubscription
//!
//! A reader that waits arrived is a reader the writers wait for: each
//! writer that takes the mutex sees it and backs off. While the reader
//! keeps its CPU that costs nothing, it enters as soon as the mutex is
//! free. Once it sleeps (on a CPU shared with other runnable threads, the
//! RP locks park after their first yield) it holds every writer back until
//! the scheduler runs it again, writers raise RBarrier against it, and
//! each barrier that comes down wakes every reader parked behind it. On 2
//! cores, at 10% writes with empty critical sections, C-RW-RP held its
//! 2-thread throughput up to 16 threads, then fell to 0.42× at 32 threads
//! and 0.05× at 64 (`docs/cohort.md`, "C-RW-RP past 16 threads").
//!
//! So a reader whose wait would leave a CPU that other threads wait for
//! (`rwlock_core::wait::Backoff::snooze_or_retreat`, the evidence PF-T's
//! readers use to withdraw from a phase: one of the thread's recent
//! measured yields gave its CPU away) departs before it yields. Departing
//! is always safe: the reader has not entered. It then waits until the
//! mutex is free or the hold it saw has ended (the holder counts its
//! releases, as C-RW-WP's do), and starts over: barrier, arrival, check.
//!
//! Writers that do not see a departed reader enter before it. Two things
//! bound that. The reader waits for the hold it saw to end, not for the
//! mutex to fall free, which a relay of writers (one inside, the next
//! queued) never lets happen. And after `MAX_RETREATS` (16) departures
//! in one acquisition it waits arrived, like the paper's readers, so the
//! writers back off for it. Without either, a relay of two writers kept a
//! reader on a shared CPU out for as long as it ran (`tests/starvation.rs`,
//! `writer_stream_cannot_starve_a_c_rw_rp_reader_on_a_shared_cpu`; found in
//! review). The reader's preference over the writers thus holds in full
//! for readers whose waits keep their CPU (with a CPU per thread, yields
//! find nobody else to run, and no reader departs); on a shared CPU a
//! reader gives way to the writers at most 16 times per acquisition.
//!
//! Readers held back by RBarrier park in a place of their own. On a shared
//! CPU the lowering that brings the barrier down wakes as many of them as
//! there are CPUs, and each passes the wake on to one more once it is past
//! the barrier (`rw.rs`, "Waiting"): waking a hundred at once made them
//! all runnable at once, and the lock fell to a tenth of its 2-thread
//! throughput at 256 to 384 threads on 2 cores (`docs/cohort.md`, "C-RW-RP
//! at 256 threads").

use core::cell::Cell;

use crate::CPtlTkt;
use crate::indicator::{IngressEgress, ReadIndicator};
use crate::rw::{Parts, Patience, ReaderToken, WriterMutex, dekker_fence, impl_raw_rwlock};

/// How many times one read acquisition may depart while it waits for the
/// writer mutex (module docs, "Oversubscription"); then it waits arrived,
/// and the writers back off for it, as for the paper's readers. 4 (PF-T's
/// bound on withdrawals) collapsed at 64 threads on 2 cores in some runs;
/// 16 did not (`docs/cohort.md`, "C-RW-RP past 16 threads"). Inside a
/// loom model, where every wait counts as on a shared CPU, one: the model
/// then covers both the retreat and the wait arrived after it, in a
/// bounded state space.
const MAX_RETREATS: u32 = if cfg!(loom) { 1 } else { 16 };

/// The reader-preference lock over writer mutex `M` and read indicator
/// `I`; see the [module docs](self). [`CRwRp`](crate::CRwRp) is the
/// paper's configuration.
pub struct ReaderPref<M = CPtlTkt, I = IngressEgress> {
    parts: Parts<M, I, true>,
}

impl_raw_rwlock!(ReaderPref {});

impl<M: WriterMutex, I: ReadIndicator> ReaderPref<M, I> {
    /// Read-locks, arriving at `node`'s indicator slot (reduced modulo the
    /// slot count) instead of the current node's.
    #[inline]
    pub fn lock_shared_on(&self, node: usize) -> ReaderToken {
        if !self.parts.barrier_down() {
            self.parts.wait_barrier_down_rp();
        }
        let token = self.parts.arrive(node);
        if self.parts.writer.is_locked() {
            return self.lock_shared_slow(node, token);
        }
        token
    }

    /// The writer mutex was held when the reader arrived: wait for it to
    /// be free, arrived (a writer that sees us backs off), unless the wait
    /// would leave a CPU that other threads wait for; then depart first,
    /// wait until the mutex is free or the hold we saw has ended, and
    /// arrive again, at most [`MAX_RETREATS`] times (module docs,
    /// "Oversubscription").
    #[cold]
    fn lock_shared_slow(&self, node: usize, mut token: ReaderToken) -> ReaderToken {
        let mut retreats_left = MAX_RETREATS;
        loop {
            let mut arrived = Some(token);
            // The release count when we departed (`None`: still arrived).
            let departed_at: Cell<Option<u32>> = Cell::new(None);
            let ready = || {
                !self.parts.writer.is_locked()
                    || departed_at
                        .get()
                        .is_some_and(|n| self.parts.releases() != n)
            };
            let retreat = || {
                if retreats_left > 0 {
                    retreats_left -= 1;
                    if let Some(t) = arrived.take() {
                        departed_at.set(Some(self.parts.releases()));
                        #[cfg(all(test, not(loom), target_os = "linux"))]
                        tests::RETREATS.with(|r| r.set(r.get() + 1));
                        // `arrived` is now None: this arrival departs once.
                        // SAFETY: our own arrival, not yet departed.
                        unsafe { self.parts.depart(t) };
                    }
                }
            };
            self.parts.wait_until_rp_or_retreat(ready, retreat);
            if let Some(t) = arrived {
                return t;
            }
            // Departed, and the mutex was free or the hold we saw ended:
            // arrive anew, as at the start.
            if !self.parts.barrier_down() {
                self.parts.wait_barrier_down_rp();
            }
            token = self.parts.arrive(node);
            if !self.parts.writer.is_locked() {
                return token;
            }
        }
    }

    /// Read-locks if no barrier is up and the writer mutex is free.
    #[inline]
    pub fn try_lock_shared_on(&self, node: usize) -> Option<ReaderToken> {
        if !self.parts.barrier_down() {
            return None;
        }
        let token = self.parts.arrive(node);
        if self.parts.writer.is_locked() {
            // SAFETY: our own arrival.
            unsafe { self.parts.depart(token) };
            return None;
        }
        Some(token)
    }

    /// Write-locks, queueing on `node`'s part of the writer mutex.
    #[inline]
    pub fn lock_exclusive_on(&self, node: usize) -> M::Guard {
        let guard = self.parts.writer.lock_on(node);
        dekker_fence();
        if self.parts.readers.is_empty() {
            self.parts.enter();
            return guard;
        }
        self.lock_exclusive_slow(node, guard)
    }

    /// Readers were inside when the writer took the mutex: the retry loop
    /// of Fig. 4 (lines 13-21), with one patience for all its rounds.
    #[cold]
    fn lock_exclusive_slow(&self, node: usize, mut guard: M::Guard) -> M::Guard {
        let mut patience = Patience::default();
        loop {
            // Readers have priority: give the mutex up and wait for them.
            self.parts.count_release();
            // SAFETY: our own acquisition.
            unsafe { self.parts.release_writer(guard) };
            self.parts.wait_drained_patiently(&mut patience);
            guard = self.parts.writer.lock_on(node);
            dekker_fence();
            if self.parts.readers.is_empty() {
                if patience.raised {
                    self.parts.lower_barrier();
                }
                self.parts.enter();
                return guard;
            }
        }
    }

    /// Write-locks if the writer mutex is free and no reader is inside.
    #[inline]
    pub fn try_lock_exclusive_on(&self, node: usize) -> Option<M::Guard> {
        self.parts.try_write_alone(node)
    }

    /// Releases a write acquisition.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    #[inline]
    pub unsafe fn unlock_exclusive_guard(&self, guard: M::Guard) {
        self.parts.leave();
        self.parts.count_release();
        // SAFETY: forwarded from the caller.
        unsafe { self.parts.release_writer(guard) }
    }

    /// Turns a write acquisition into a read acquisition.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    pub unsafe fn downgrade_guard(&self, guard: M::Guard) -> ReaderToken {
        self.parts.count_release();
        // SAFETY: forwarded from the caller.
        unsafe { self.parts.downgrade(guard) }
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ticket::TicketLock;

    thread_local! {
        /// How many times this thread's read acquisitions departed while
        /// they waited (counted by `lock_shared_slow` in test builds).
        pub(super) static RETREATS: Cell<u32> = const { Cell::new(0) };
    }

    use rwlock_core::testing::pin_to;

    /// A writer holds the lock; a reader pinned to one CPU, beside a busy
    /// thread there if `shared`, waits for it. Returns how many times the
    /// reader departed while it waited (200 ms, then the writer leaves and
    /// the reader gets in).
    fn retreats_while_waiting(shared: bool) -> u32 {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
        // Patience u32::MAX: no barrier, the reader's wait is the only path.
        let lock = ReaderPref::from_parts(TicketLock::new(), IngressEgress::new(1), u32::MAX);
        let stop = AtomicBool::new(false);
        let read = AtomicBool::new(false);
        let retreats = AtomicU32::new(u32::MAX);
        let busy = AtomicBool::new(false);
        let w = lock.lock_exclusive_on(0);
        std::thread::scope(|s| {
            if shared {
                s.spawn(|| {
                    pin_to(cpu);
                    busy.store(true, Ordering::Relaxed);
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
                // The reader's yields must find the busy thread there.
                while !busy.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            s.spawn(|| {
                pin_to(cpu);
                RETREATS.with(|r| r.set(0));
                let r = lock.lock_shared_on(0);
                retreats.store(RETREATS.with(Cell::get), Ordering::Relaxed);
                read.store(true, Ordering::Relaxed);
                // SAFETY: our own acquisition.
                unsafe { lock.parts.depart(r) };
            });
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !read.load(Ordering::Relaxed),
                "a reader got in beside a writer"
            );
            // SAFETY: our own acquisition.
            unsafe { lock.unlock_exclusive_guard(w) };
            let start = Instant::now();
            while !read.load(Ordering::Relaxed) {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "the reader did not get in after the writer left"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert!(lock.parts.readers.is_empty() && !lock.parts.writer.is_locked());
        retreats.load(Ordering::Relaxed)
    }

    /// On a CPU it shares with a busy thread, a reader that meets a writer
    /// departs while it waits (module docs, "Oversubscription"), so that
    /// writers do not wait for a thread that is not running, at most
    /// `MAX_RETREATS` times; with its CPU to itself it stays arrived, as
    /// the paper's readers do. Wants a quiet machine for the second half
    /// (`#[ignore]`: `scripts/test` runs it alone); a busy moment from
    /// elsewhere fails one try of three at most.
    #[test]
    #[ignore = "wants a quiet machine: scripts/test runs it alone"]
    fn a_reader_departs_while_it_waits_only_on_a_shared_cpu() {
        let shared = retreats_while_waiting(true);
        assert!(
            (1..=MAX_RETREATS).contains(&shared),
            "a reader that shared its CPU with a busy thread departed {shared} times while it \
             waited (1 to {MAX_RETREATS} expected)"
        );
        assert!(
            (0..3).any(|_| retreats_while_waiting(false) == 0),
            "a reader with a CPU of its own departed while it waited, three tries out of three"
        );
    }
}
