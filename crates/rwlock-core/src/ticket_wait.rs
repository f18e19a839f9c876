//! How the holder of a ticket waits for its turn in a FIFO ticket lock
//! (Mellor-Crummey & Scott, 1991: `next` hands out tickets, the owner's
//! release advances the counter of the ticket served). Written once here for
//! every ticket queue of the workspace: cohort's `TicketLock` (the cohort
//! mutex's local lock, the C-RW-* and DR-ticket writer locks) and PF-T's
//! writer tickets ([`PfTicket`](crate::pf_ticket::PfTicket), and through it
//! every sub-lock of [`BrLock`](crate::brlock::BrLock)).
//!
//! # The wait
//!
//! [`Waiters::wait_for_turn`]`(t, seen, served)` returns once `served` reads `t`:
//!
//! 1. While more than one ticket is ahead, a waiter with a CPU of its own
//!    ([`may_restart_when_queue_moves`]) watches the queue move: it waits
//!    with a fresh backoff for each hand-off, so it parks only when no
//!    hand-off happened for a whole spin-and-yield budget (the holder is
//!    slow or not running), not because the queue ahead is long. With one
//!    backoff for the whole wait, a queue of 15 on 16 cores outlasted the
//!    budget, every waiter parked, and each hand-off then cost a futex
//!    wake-up (cohort mutex: 0.24 M ops/s against parking_lot's 7.4 M,
//!    `docs/cohort.md`, "Many cores"; PF-T at 20% writes and 4 threads on
//!    16 cores: 0.2× parking_lot, `docs/restriction.md`, "PF-T's writer
//!    queue on 16 cores").
//! 2. The next in line, if its CPU is its own, waits with [`NextInLine`]:
//!    the policy's spinning, then a long run of yields before it parks, so
//!    that a hand-off rarely waits for a futex wake-up, while a successor
//!    behind a long critical section still goes to sleep.
//! 3. A waiter that shares its CPU (threads outnumber cores: not
//!    [`may_restart_when_queue_moves`]), wherever it is in the queue, waits
//!    for its own ticket with the lock's policy `W` alone, one backoff for
//!    the whole wait: its spinning would take the CPU from the threads
//!    ahead of it (the oversubscribed unrestricted cohort mutex lost half its
//!    throughput when it restarted too), and so would a long run of yields
//!    as the next in line. Until 2026-11-27 such a waiter waited to be next,
//!    then as in 2; waiting as here instead, at 64 threads on 2 cores the
//!    unrestricted cohort mutex and C-RW-NP gained 1.5-1.6×, and PF-T and
//!    brlock unrestricted lost nothing against their own earlier wait
//!    (`docs/restriction.md`, "PF-T's writer queue on 16 cores").
//!
//! # Parking tags
//!
//! Each wait parks tagged with the first value of the served counter that
//! ends it ([`Waiters::wait_until_tagged`]): a waiter for its own turn with
//! its ticket `t`; a watcher that saw `s` served, with `s + 1`. The served
//! counter takes every value in turn and only the release writes it, so the
//! release that serves `g` must call [`Waiters::wake_tagged`]`(g.tag())`
//! right after its SeqCst read-modify-write of the counter; it wakes
//! exactly the waits that `g` ends, and no wait is left without the wake
//! that ends it. Waking every parked waiter at each release sent all but
//! one back to sleep, and with hundreds of threads on 2 cores that herd ate
//! the CPUs (`docs/cohort.md`, "384 threads: one wake per hand-off").
//!
//! Checked by loom through its users, which are thin: cohort's model
//! `loom_tests_ticket_lock_three_in_line` (three contenders, the only shape
//! with two tickets ahead, so the watcher's path; a watcher tagged `s`
//! instead of `s + 1` deadlocks it) and PF-T's writer models (two writers:
//! the next in line's path; a PF-T release that wakes the ticket after the
//! one it serves deadlocks `pft_two_writers_one_reader`). Inside a model
//! every CPU counts as its own, so way 3 is the real build's alone: the unit
//! test below (8 threads queueing on a `u32` counter across its wrap; on 2
//! cores most of its waits go this way) and the oversubscribed stress tests
//! run it, and a wake it lost would hang them: parked with `t - 1`, it
//! hangs the unit test, as does a watcher parked with the value it saw.

use core::marker::PhantomData;

use crate::sync::Ordering;
use crate::wait::{DefaultWait, WaitPolicy, Waiters, may_restart_when_queue_moves};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The value of a ticket counter: `u32` or `u64`. Counters wrap; only
/// differences and equality matter.
pub trait TicketValue: Copy + Eq + sealed::Sealed {
    /// How many tickets `self` is behind `served` (wrapping).
    fn behind(self, served: Self) -> u64;
    /// The next ticket (wrapping).
    fn succ(self) -> Self;
    /// The previous ticket (wrapping).
    fn pred(self) -> Self;
    /// The parking tag of the waits that serving `self` ends (module docs).
    /// Truncated where `usize` is narrower: two tags that collide only wake
    /// a thread early.
    fn tag(self) -> usize;
}

macro_rules! ticket_value {
    ($($t:ty),*) => {$(
        impl TicketValue for $t {
            #[inline]
            fn behind(self, served: Self) -> u64 {
                u64::from(self.wrapping_sub(served))
            }
            #[inline]
            fn succ(self) -> Self {
                self.wrapping_add(1)
            }
            #[inline]
            fn pred(self) -> Self {
                self.wrapping_sub(1)
            }
            #[inline]
            fn tag(self) -> usize {
                self as usize
            }
        }
    )*};
}

ticket_value!(u32, u64);

/// How the next ticket in line waits: policy `W`'s spinning and parking,
/// with at least 128 yields before it parks, so that a hand-off to a
/// successor that is merely descheduled costs no futex wake-up, while a
/// successor behind a long critical section (a writer waiting for readers,
/// a guard held across I/O) still goes to sleep instead of yielding forever.
#[derive(Debug, Clone, Copy, Default)]
pub struct NextInLine<W = DefaultWait>(PhantomData<W>);

/// Yields of the next in line before it parks, at least.
pub const NEXT_IN_LINE_YIELDS: u32 = 128;

impl<W: WaitPolicy> WaitPolicy for NextInLine<W> {
    const SPIN_ROUNDS: u32 = W::SPIN_ROUNDS;
    const YIELD_ROUNDS: u32 = if W::YIELD_ROUNDS > NEXT_IN_LINE_YIELDS {
        W::YIELD_ROUNDS
    } else {
        NEXT_IN_LINE_YIELDS
    };
    const PARK: bool = W::PARK;
    const PARK_WHEN_SHARED: bool = W::PARK_WHEN_SHARED;
}

impl Waiters {
    /// Waits, as the holder of ticket `t`, until `served` (a load of the
    /// served counter with the ordering it is given) returns `t`; see the
    /// [module docs](self) for the three ways it waits and the tags it
    /// parks with. `seen` is the value the caller's own load found (not
    /// `t`): the wait starts from it instead of loading again. The last load
    /// is `served(Acquire)`, so the caller's critical section is ordered
    /// after the release that served `t` if that release wrote the counter
    /// with Release (or stronger).
    ///
    /// The release that serves a ticket `g` must call
    /// [`wake_tagged`](Self::wake_tagged)`(g.tag())` on the same
    /// `Waiters` right after its SeqCst read-modify-write of the counter,
    /// and nothing else may park on this `Waiters` untagged.
    #[cold]
    pub fn wait_for_turn<W: WaitPolicy, T: TicketValue>(
        &self,
        t: T,
        mut seen: T,
        served: impl Fn(Ordering) -> T,
    ) {
        // Relaxed is enough to decide *how* to wait; the Acquire load of the
        // last wait decides *that* we are served.
        let served_us = || served(Ordering::Acquire) == t;
        loop {
            if !may_restart_when_queue_moves() {
                self.wait_until_tagged::<W>(t.tag(), served_us);
                return;
            }
            if t.behind(seen) <= 1 {
                self.wait_until_tagged::<NextInLine<W>>(t.tag(), served_us);
                return;
            }
            let mut now = seen;
            self.wait_until_tagged::<W>(seen.succ().tag(), || {
                now = served(Ordering::Relaxed);
                now != seen
            });
            seen = now;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::SpinYield;

    #[test]
    fn distances_wrap() {
        assert_eq!(0u32.behind(u32::MAX), 1);
        assert_eq!(u32::MAX.succ(), 0);
        assert_eq!(0u32.pred(), u32::MAX);
        assert_eq!(1u64.behind(u64::MAX), 2);
        assert_eq!(5u64.tag(), 5);
    }

    #[test]
    fn next_in_line_keeps_the_policy_and_yields_longer() {
        type N = NextInLine<DefaultWait>;
        assert_eq!(N::SPIN_ROUNDS, DefaultWait::SPIN_ROUNDS);
        assert_eq!(N::YIELD_ROUNDS, NEXT_IN_LINE_YIELDS);
        const { assert!(N::PARK) };
        // A policy that never parks still never parks.
        const { assert!(!NextInLine::<SpinYield>::PARK) };
        assert_eq!(NextInLine::<SpinYield>::YIELD_ROUNDS, u32::MAX);
    }

    /// A minimal ticket lock on `wait_for_turn`, its counters started just
    /// before `u32` wraps. 8 threads take it 300 times each and sleep inside
    /// it, so that queues form and waiters park: half of them claim a CPU of
    /// their own before each acquisition (the watcher's way and the next in
    /// line's), half a shared one (way 3). None is ever inside with another,
    /// and none sleeps through its turn (the test would hang: a way-3 wait
    /// parked with `t - 1`, or a watcher parked with the value it saw, does).
    #[test]
    fn a_u32_ticket_queue_across_the_wrap() {
        use crate::sync::AtomicU32;
        use crate::wait::set_cpu_shared;
        use std::sync::atomic::AtomicUsize;
        struct Queue {
            next: AtomicU32,
            served: AtomicU32,
            waiters: Waiters,
            inside: AtomicUsize,
            done: AtomicUsize,
        }
        const START: u32 = u32::MAX - 1_000;
        const EACH: usize = 300;
        let q = Queue {
            next: AtomicU32::new(START),
            served: AtomicU32::new(START),
            waiters: Waiters::new(),
            inside: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        };
        std::thread::scope(|s| {
            for i in 0..8 {
                let q = &q;
                s.spawn(move || {
                    for _ in 0..EACH {
                        set_cpu_shared(i % 2 == 1);
                        let t = q.next.fetch_add(1, Ordering::Relaxed);
                        let seen = q.served.load(Ordering::Acquire);
                        if seen != t {
                            q.waiters
                                .wait_for_turn::<DefaultWait, u32>(t, seen, |o| q.served.load(o));
                        }
                        assert_eq!(q.inside.fetch_add(1, Ordering::Relaxed), 0);
                        std::thread::sleep(std::time::Duration::from_micros(20));
                        q.done.fetch_add(1, Ordering::Relaxed);
                        q.inside.fetch_sub(1, Ordering::Relaxed);
                        let g = q.served.fetch_add(1, Ordering::SeqCst).succ();
                        q.waiters.wake_tagged(g.tag());
                    }
                });
            }
        });
        assert_eq!(q.done.load(Ordering::Relaxed), 8 * EACH);
        assert_eq!(
            q.served.load(Ordering::Relaxed),
            START.wrapping_add((8 * EACH) as u32)
        );
    }
}
