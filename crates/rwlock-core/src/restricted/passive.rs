//! The gate's passive queue: FIFO tickets, the head ticket's holder is the
//! *standby* (GCR's head of the passive list, Dice & Kogan, Figure 2
//! lines 8–14), everybody behind it sleeps.
//!
//! ```text
//!  head: the ticket now served (the standby's)
//!  tail: tickets handed out (tail - head threads are passive)
//! ```
//!
//! Protocol:
//! - join: `ticket = tail++`; while `head != ticket`, park on the queue's
//!   key, the parking-lot `validate` re-checking `head != ticket` under the
//!   bucket lock;
//! - hand over (the standby, once admitted): `head = ticket + 1`, then
//!   unpark the thread holding `ticket + 1`, **always**.
//!
//! Why no wake-up is lost: the hand-over's store precedes its unpark, which
//! takes the bucket lock that the sleeper's `validate` runs under. Either
//! the unpark takes that lock after the sleeper queued itself (and wakes
//! it), or before, and then the `validate` that follows it in the lock's
//! order sees the new `head` and does not sleep.
//!
//! The hand-over used to skip the unpark when a Relaxed load of `tail`
//! said nobody held the next ticket. That is a store-load (Dekker) pair
//! without the ordering it needs: the standby's `head` store and `tail`
//! load against the joiner's `tail` increment and `head` load may each read
//! the other's old value, and then the joiner sleeps with nobody left to
//! wake it. It happened: a writer of Kyoto Cabinet's `kccachetest` under
//! `rwlock-preload`'s prwlock family slept forever in the queue after every
//! other thread had finished. The unpark now always takes the bucket lock,
//! once per passive admission, on a path that has just slept at least one
//! poll. `scripts/ab-rwbench` against the skipping version (16 threads on
//! 2 cores, 10% writes, empty sections, Intel Xeon, 2026-11-25): six
//! restricted locks at 0.989 to 1.007 of its throughput, prwlock at 1.040
//! over 6 rounds. Both tests
//! below fail on the skipping version: the loom model
//! (`a_hand_over_always_wakes_the_next_ticket`) with a deadlock, and the
//! real-build stress (`tickets_are_served_in_order_at_1_2_8_and_64_threads`)
//! with threads left asleep, in 2 of 5 runs on the 2-core development VM.
//!
//! Inside a loom model the parking lot is the model's bucket (a loom
//! `Mutex` + `Condvar`, see [`wait`](crate::wait)), so a lost wake-up is a
//! deadlock that loom reports.
//!
//! # Orderings
//!
//! `tail`: the join's Release read-modify-write pairs with `len`'s Acquire
//! loads (a count of one moment, see `join`). `head`: the hand-over's Release
//! store pairs with the next standby's Acquire load, so what the previous
//! standby did happens before the next one runs; the re-check under the
//! bucket lock may be Relaxed (the bucket lock orders it after the store).

use crate::sync::{AtomicU32, Ordering};

pub(super) struct PassiveQueue {
    /// The ticket now served (the standby's).
    head: AtomicU32,
    /// Tickets handed out.
    tail: AtomicU32,
    /// The model's stand-in for the parking-lot bucket.
    #[cfg(loom)]
    bucket: crate::wait::ModelBucket,
}

impl PassiveQueue {
    crate::loom_const_fn! {
        /// Nobody queued.
        pub(super) fn new() -> Self {
            PassiveQueue {
                head: AtomicU32::new(0),
                tail: AtomicU32::new(0),
                #[cfg(loom)]
                bucket: crate::wait::ModelBucket::new(),
            }
        }
    }

    /// Threads in the queue, the standby included (a snapshot: a tail and
    /// a head of one moment, never more threads than there are).
    pub(super) fn len(&self) -> u32 {
        // The same tail before and after the head: no thread joined in
        // between, so the count is one the queue held. (A tail read alone
        // before the head can be overtaken by it, and the difference wraps
        // to about 4 billion: found in review.) Acquire on `head` pairs
        // with `hand_over`'s Release store, which follows the served
        // thread's `fetch_add` of `tail`: the tail read after it is no
        // smaller than the head, so the difference does not wrap. Acquire
        // on `tail`: keeps the reads in this order, and pairs with the
        // joins' Release (`join`), so the head is no older than the tail.
        let mut tail = self.tail.load(Ordering::Acquire);
        loop {
            let head = self.head.load(Ordering::Acquire);
            let again = self.tail.load(Ordering::Acquire);
            if again == tail {
                return tail.wrapping_sub(head);
            }
            tail = again;
        }
    }

    /// Takes a ticket and sleeps until it is served; returns it (the
    /// caller is then the standby and must [`hand_over`](Self::hand_over)
    /// it).
    pub(super) fn join(&self) -> u32 {
        // Release: pairs with the Acquire loads of `tail` in `len`. The
        // joins form one release sequence, so a `len` that reads this
        // ticket's tail also sees every head stored before any of the
        // joins up to it (a joiner's own earlier `hand_over` included), and
        // does not pair the new tail with a head older than that (on a
        // weakly ordered target it could, counting a thread already gone;
        // found in review). Entry into the queue is ordered by `head`.
        let ticket = self.tail.fetch_add(1, Ordering::Release);
        // Acquire: pairs with the Release store of `hand_over`.
        while self.head.load(Ordering::Acquire) != ticket {
            self.park_while_not_served(ticket);
        }
        ticket
    }

    /// Serves the ticket after `ticket` and wakes its holder.
    pub(super) fn hand_over(&self, ticket: u32) {
        let next = ticket.wrapping_add(1);
        // Release: pairs with the next standby's Acquire load in `join`.
        // The store precedes the unpark below, which takes the bucket lock
        // that the sleeper's re-check runs under (module docs).
        self.head.store(next, Ordering::Release);
        self.unpark(next);
    }

    #[cfg(not(loom))]
    fn key(&self) -> usize {
        &self.head as *const AtomicU32 as usize
    }

    #[cfg(not(loom))]
    fn park_while_not_served(&self, ticket: u32) {
        // The key is an address inside this queue, which outlives its
        // waiters (the lock that holds it does); the token is our ticket, by
        // which `unpark` picks us; validate is one load, which neither
        // panics nor calls into parking_lot.
        // SAFETY: as just said: a live key, and a validate parking_lot allows.
        unsafe {
            parking_lot_core::park(
                self.key(),
                // Relaxed: runs under the bucket lock (module docs).
                || self.head.load(Ordering::Relaxed) != ticket,
                || {},
                |_, _| {},
                parking_lot_core::ParkToken(ticket as usize),
                None,
            );
        }
    }

    #[cfg(not(loom))]
    fn unpark(&self, ticket: u32) {
        // SAFETY: our own key; the filter and the callback do not panic.
        unsafe {
            parking_lot_core::unpark_filter(
                self.key(),
                |token| {
                    if token.0 == ticket as usize {
                        parking_lot_core::FilterOp::Unpark
                    } else {
                        parking_lot_core::FilterOp::Skip
                    }
                },
                |_| parking_lot_core::DEFAULT_UNPARK_TOKEN,
            );
        }
    }

    #[cfg(loom)]
    fn park_while_not_served(&self, ticket: u32) {
        // Relaxed: under the bucket lock, as in the real build.
        self.bucket
            .park_while(|| self.head.load(Ordering::Relaxed) != ticket);
    }

    #[cfg(loom)]
    fn unpark(&self, _ticket: u32) {
        // Every sleeper re-checks its own ticket under the bucket lock, so
        // waking all of them is `unpark_filter` for the model.
        self.bucket.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU32 as StdU32;
    use std::time::Duration;

    /// The real build, 1, 2, 8 and 64 threads each passing through the
    /// queue many times: tickets are served in order, one standby at a
    /// time, and every thread gets through (a lost wake-up would leave one
    /// asleep: the watchdog reports it instead of hanging the test run).
    #[test]
    fn tickets_are_served_in_order_at_1_2_8_and_64_threads() {
        for threads in [1u32, 2, 8, 64] {
            let rounds = 20_000 / threads;
            let q = Arc::new(PassiveQueue::new());
            let served = Arc::new(StdU32::new(0));
            let (done, finished) = std::sync::mpsc::channel();
            for _ in 0..threads {
                let (q, served, done) = (q.clone(), served.clone(), done.clone());
                std::thread::spawn(move || {
                    for _ in 0..rounds {
                        let t = q.join();
                        // Relaxed: only the standby of the moment writes it,
                        // and the hand-over orders the standbys.
                        let n = served.load(Ordering::Relaxed);
                        assert_eq!(n, t, "ticket {t} served out of turn");
                        served.store(n.wrapping_add(1), Ordering::Relaxed);
                        q.hand_over(t);
                    }
                    done.send(()).unwrap();
                });
            }
            for i in 0..threads {
                finished
                    .recv_timeout(Duration::from_secs(60))
                    .unwrap_or_else(|_| {
                        panic!(
                            "{threads} threads: {} still in the queue after 60 s (lost wake-up?)",
                            threads - i
                        )
                    });
            }
            assert_eq!(q.len(), 0);
            assert_eq!(served.load(Ordering::Relaxed), rounds * threads);
        }
    }

    /// `len` while 4 threads pass through the queue never says more than 4
    /// (before: 4294967295, a head read past the tail read before it).
    #[test]
    fn len_never_exceeds_the_threads_queued() {
        const THREADS: u32 = 4;
        let q = Arc::new(PassiveQueue::new());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let passers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (q, stop) = (q.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let t = q.join();
                        q.hand_over(t);
                    }
                })
            })
            .collect();
        let t0 = std::time::Instant::now();
        let (mut most, mut samples) = (0, 0u64);
        while t0.elapsed() < Duration::from_millis(500) {
            most = most.max(q.len());
            samples += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for p in passers {
            p.join().unwrap();
        }
        assert!(most <= THREADS, "len() said {most} ({samples} samples)");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Three threads pass through the queue one after another, each the
    /// standby in turn: every ticket is served and every thread finishes.
    /// A lost wake-up is a loom deadlock; the hand-over that skipped the
    /// unpark on a Relaxed `tail` load fails here.
    #[test]
    fn a_hand_over_always_wakes_the_next_ticket() {
        loom::model(|| {
            let q = Arc::new(PassiveQueue::new());
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let q = q.clone();
                    loom::thread::spawn(move || {
                        let t = q.join();
                        q.hand_over(t);
                    })
                })
                .collect();
            let t = q.join();
            q.hand_over(t);
            for th in threads {
                th.join().unwrap();
            }
            assert_eq!(q.len(), 0);
        });
    }
}
