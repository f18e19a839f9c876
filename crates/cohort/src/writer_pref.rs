//! C-RW-WP: the writer-preference cohort reader-writer lock (PPoPP'13
//! Section 3.4, Figure 5), and with a ticket lock for writers, the paper's
//! DR-MCS control.
//!
//! # Protocol
//!
//! ```text
//! reader:                                   writer:
//!   start: arrive at ReadIndr               while WBarrier != 0: wait
//!   if writer mutex is locked:              acquire writer mutex
//!     depart                                while ReadIndr not empty: wait
//!     wait until it is not locked,          <write critical section>
//!       raising WBarrier against a relay    release writer mutex
//!       once out of patience
//!     goto start
//!   lower WBarrier if raised
//!   <read critical section>
//!   depart
//! ```
//!
//! Readers and writers meet as in Dekker's idiom: the reader publishes its
//! arrival (a SeqCst RMW) and then checks the writer mutex (SeqCst loads);
//! the writer takes the mutex (a SeqCst RMW) and then scans the indicator
//! (SeqCst loads). In the single SeqCst order one of the two comes first,
//! and the other sees it: either the writer waits for the reader, or the
//! reader backs off. A writer that holds the mutex only waits for readers
//! that arrived before it, and readers that meet a writer depart, so the
//! writer cannot be starved by a stream of readers: writer preference.
//!
//! # Anti-starvation
//!
//! A reader that meets writers for longer than its patience (default 1000
//! checks, or about `PATIENCE_TIME` past its first yield: `rw.rs`,
//! "Patience") raises WBarrier, which stops *new* writers before the writer
//! mutex; writers already queued finish, the mutex falls free, the reader
//! gets in and lowers the barrier. A continuous stream of writers therefore
//! cannot hold a reader off forever (`tests/starvation.rs`).
//!
//! Unlike the paper, a reader raises WBarrier only against a relay: a
//! writer released the mutex after the reader's patience first ran out, and
//! the mutex is held again (`rw.rs`, "Patience"). Behind one writer's long
//! hold it waits for that hold to end; if it then loses the mutex to the
//! next writer, it raises at its retry without counting its patience again.
//! Against the paper, a reader thus also waits out the hold during which its
//! patience ran out, and the writers that queue behind that hold while the
//! barrier is still down; every later writer waits for its barrier.
//!
//! The guard of a read carries the indicator slot it arrived at; the guard
//! of a write carries the writer mutex's token (for a cohort, its node).

use crate::CPtlTkt;
use crate::indicator::{IngressEgress, ReadIndicator};
use crate::rw::{Parts, Patience, ReaderToken, WriterMutex, dekker_fence, impl_raw_rwlock};

/// The writer-preference lock over writer mutex `M` and read indicator `I`;
/// see the [module docs](self). [`CRwWp`](crate::CRwWp) is the paper's
/// configuration.
pub struct WriterPref<M = CPtlTkt, I = IngressEgress> {
    parts: Parts<M, I>,
}

impl_raw_rwlock!(WriterPref {});

impl<M: WriterMutex, I: ReadIndicator> WriterPref<M, I> {
    /// Read-locks, arriving at `node`'s indicator slot (reduced modulo the
    /// slot count) instead of the current node's. For tests, and for
    /// callers that know their node.
    #[inline]
    pub fn lock_shared_on(&self, node: usize) -> ReaderToken {
        // Peek first: while a writer is around, arriving only to depart
        // again would bounce the node's counter line for nothing.
        if !self.parts.writer.is_locked() {
            let token = self.parts.arrive(node);
            if !self.parts.writer.is_locked() {
                return token;
            }
            // A writer holds or requested the mutex: back off (Fig. 5
            // line 6) so that it can drain the readers.
            // SAFETY: our own arrival.
            unsafe { self.parts.depart(token) };
        }
        self.lock_shared_slow(node)
    }

    #[cold]
    fn lock_shared_slow(&self, node: usize) -> ReaderToken {
        let mut raised = false;
        let mut patience = Patience::default();
        loop {
            if raised {
                self.parts.wait_until(|| !self.parts.writer.is_locked());
            } else {
                // The count starts over at each retry: a WP reader's barrier
                // holds writers back, against what this lock promises, so it
                // waits its full patience each time, until the first time
                // it runs out; the release count noted then is kept (module
                // docs of `rw`, "Patience").
                raised = self.parts.wait_as_wp_reader(&mut patience);
            }
            let token = self.parts.arrive(node);
            if !self.parts.writer.is_locked() {
                if raised {
                    self.parts.lower_barrier();
                }
                return token;
            }
            // SAFETY: our own arrival.
            unsafe { self.parts.depart(token) };
        }
    }

    /// Read-locks if no writer holds or requested the writer mutex.
    #[inline]
    pub fn try_lock_shared_on(&self, node: usize) -> Option<ReaderToken> {
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
        if !self.parts.barrier_down() {
            // Impatient readers hold writers back (Fig. 5 lines 18-19).
            self.parts.wait_until(|| self.parts.barrier_down());
        }
        let guard = self.parts.writer.lock_on(node);
        dekker_fence();
        if !self.parts.readers.is_empty() {
            // Readers that arrived before us drain; later ones back off.
            self.parts.wait_drained();
        }
        self.parts.enter();
        guard
    }

    /// Write-locks if no barrier is up, the writer mutex is free and no
    /// reader is inside.
    #[inline]
    pub fn try_lock_exclusive_on(&self, node: usize) -> Option<M::Guard> {
        if !self.parts.barrier_down() {
            return None;
        }
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

    /// Turns a write acquisition into a read acquisition: arrive, then
    /// release the writer mutex (no writer can enter in between).
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

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ticket::TicketLock;

    /// A lock whose readers run out of patience at their first check, with
    /// a ticket lock as the writer mutex (which shows queued writers).
    fn impatient_lock() -> WriterPref<TicketLock, IngressEgress> {
        WriterPref::from_parts(TicketLock::new(), IngressEgress::new(1), 1)
    }

    /// Waits up to `limit` for `cond`, polling.
    fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        cond()
    }

    /// A reader out of patience raises WBarrier against a relay of writers,
    /// not against one writer's long hold (`Impatient::WpReader`); with
    /// patience 1 it runs out at once. A reader that raised behind the
    /// first writer fails the first check; one that never raises, the
    /// second. (A ticket lock as the writer mutex, to see the second
    /// writer queued.)
    #[test]
    fn wbarrier_goes_up_against_a_relay_not_one_long_hold() {
        let lock = impatient_lock();
        let lock = &lock;
        let first = lock.lock_exclusive_on(0);
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                let token = lock.lock_shared_on(0);
                // SAFETY: our own read acquisition.
                unsafe { lock.unlock_shared_token(token) };
            });
            // The reader waits out the first writer's hold: no barrier.
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(100) {
                if !lock.parts.barrier_down() {
                    // SAFETY: our own write acquisition.
                    unsafe { lock.unlock_exclusive_guard(first) };
                    reader.join().unwrap();
                    panic!("a reader raised WBarrier behind one writer's hold");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            // A second writer queues behind the first, which then hands the
            // mutex over: a relay.
            let (tx, rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let second = s.spawn(move || {
                let g = lock.lock_exclusive_on(0);
                tx.send(()).unwrap();
                // Hold until the main thread has looked at the barrier (or
                // has failed: its sender is then dropped).
                let _ = done_rx.recv_timeout(Duration::from_secs(20));
                // SAFETY: our own write acquisition.
                unsafe { lock.unlock_exclusive_guard(g) };
            });
            assert!(
                eventually(Duration::from_secs(10), || lock.parts.writer.has_waiters()),
                "the second writer did not queue"
            );
            // SAFETY: our own write acquisition.
            unsafe { lock.unlock_exclusive_guard(first) };
            rx.recv().unwrap();
            assert!(
                eventually(Duration::from_secs(10), || !lock.parts.barrier_down()),
                "a reader did not raise WBarrier against a relay of writers"
            );
            drop(done_tx);
            second.join().unwrap();
            reader.join().unwrap();
        });
        assert!(
            lock.parts.barrier_down(),
            "the reader did not lower WBarrier"
        );
    }

    /// A WP reader whose patience ran out in one hold, saw it end and
    /// lost the mutex to the next hold, raises WBarrier against that next
    /// hold at its retry, at once: the two tries of one acquisition, each
    /// through `wait_as_wp_reader` with the acquisition's patience, with
    /// the main thread taking the second hold only after the first try
    /// returned. A retry that notes the release count afresh (a new
    /// `Patience`, or a `for_retry` that drops the note) fails it: a writer
    /// releasing and retaking the mutex could then hold the reader off
    /// hold after hold.
    #[test]
    fn a_retry_after_patience_ran_out_raises_against_the_next_hold() {
        let lock = impatient_lock();
        let lock = &lock;
        let first = lock.lock_exclusive_on(0);
        let (started, started_rx) = std::sync::mpsc::channel();
        let (tried, tried_rx) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                let mut patience = Patience::default();
                // First try: patience 1 runs out against the first hold,
                // which then ends without another one beginning.
                started.send(()).unwrap();
                let raised = lock.parts.wait_as_wp_reader(&mut patience);
                tried.send((raised, patience.ran_out())).unwrap();
                // Retry, once the second hold has begun.
                go_rx.recv().unwrap();
                lock.parts.wait_as_wp_reader(&mut patience)
            });
            // Let the reader run out of patience and wait, then end the hold.
            started_rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: our own write acquisition.
            unsafe { lock.unlock_exclusive_guard(first) };
            let (raised_first, ran_out) = tried_rx.recv().unwrap();
            assert!(
                ran_out,
                "the reader's first try did not run out of patience (not scheduled for 200 ms?)"
            );
            assert!(
                !raised_first,
                "the first try raised WBarrier behind one writer's hold"
            );
            let second = lock.lock_exclusive_on(0);
            go.send(()).unwrap();
            let raised = eventually(Duration::from_secs(10), || !lock.parts.barrier_down());
            // SAFETY: our own write acquisition.
            unsafe { lock.unlock_exclusive_guard(second) };
            let retry_raised = reader.join().unwrap();
            assert!(
                raised,
                "a retry whose patience had run out did not raise WBarrier against the next hold"
            );
            assert!(retry_raised, "wait_patiently did not report its raise");
            lock.parts.lower_barrier();
        });
        assert!(lock.parts.barrier_down());
    }
}
