//! How a lock waits: spin briefly with exponential backoff, then yield, then park.
//!
//! The papers' locks spin. On a machine with more runnable threads than cores
//! (the normal case for us), a spinning waiter can burn the very time slice the
//! lock holder needs, so every wait in the workspace goes through [`Backoff`]:
//!
//! 1. `SPIN_ROUNDS` rounds of `2^k` spin hints (k = 0, 1, ...);
//! 2. `YIELD_ROUNDS` calls to `sched_yield`;
//! 3. then, if the policy allows it, the thread parks (futex through
//!    `parking_lot_core`) until the lock state it waits for changes.
//!
//! The policy is a type parameter of each lock ([`WaitPolicy`]); the default is
//! [`SpinYieldPark`]. [`SpinYield`] never parks (it still never spins without
//! yielding) and exists to measure what parking costs.
//!
//! Two parking primitives:
//! - [`Waiters`]: a waiter count embedded in a lock. A thread waiting for the
//!   lock state to change registers, re-checks under the parking-lot bucket
//!   lock, and sleeps; a thread that changes the state checks the count after
//!   its change and wakes everybody parked on the lock. The lock outlives its
//!   users, so its address is a safe parking key.
//! - [`Latch`]: a one-shot gate on a waiter's own queue node (MCS-style local
//!   spinning). The opener touches the node in one atomic operation, or under
//!   the bucket lock while the waiter is provably still inside `park`, so the
//!   node may live on the waiter's stack.
//!
//! Inside a loom model a waiter yields once to the model (so the "state
//! changed between two checks" paths are explored) and then parks on a loom
//! `Mutex` + `Condvar` pair standing for the parking-lot bucket: the same
//! register / re-check-under-the-bucket-lock / wake protocol as the real
//! build, so a lost wake-up shows up as a loom deadlock. (Unbounded spinning
//! cannot be modelled: with two spinners loom's schedule space is infinite.)
//! One deviation: loom models SeqCst loads as Acquire, so it cannot see the
//! store-load ordering that a SeqCst RMW followed by a SeqCst load gives in
//! C++20; in a model, [`Waiters::wake_all`] adds the equivalent
//! `fence(SeqCst)`. The oversubscribed stress tests cover the real build (a
//! lost wake-up hangs them).

use core::marker::PhantomData;

use crate::sync::{AtomicU32, Ordering, fence, spin_loop, yield_now};

/// How long a waiter spins and yields before it parks.
pub trait WaitPolicy: Send + Sync + 'static {
    /// Rounds of exponential spinning: round `k` issues `2^k` spin hints.
    const SPIN_ROUNDS: u32;
    /// `sched_yield` calls after spinning.
    const YIELD_ROUNDS: u32;
    /// Whether to park after that (otherwise yield forever).
    const PARK: bool;
}

/// Default policy: about 127 spin hints (a few microseconds at most), 8 yields, then park.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinYieldPark;

impl WaitPolicy for SpinYieldPark {
    const SPIN_ROUNDS: u32 = 7;
    const YIELD_ROUNDS: u32 = 8;
    const PARK: bool = true;
}

/// Spin, then yield forever: never sleeps in the kernel, but never spins
/// without giving the core away either. For measurement and latency-critical
/// setups with no more threads than cores.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinYield;

impl WaitPolicy for SpinYield {
    const SPIN_ROUNDS: u32 = 7;
    const YIELD_ROUNDS: u32 = u32::MAX;
    const PARK: bool = false;
}

/// The policy locks use unless told otherwise.
pub type DefaultWait = SpinYieldPark;

/// What [`Backoff::snooze`] did, or asks the caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snooze {
    /// Spun or yielded; re-check and call again.
    Waited,
    /// The policy says park now.
    Park,
}

/// Progressive backoff for one wait (compare crossbeam-utils' `Backoff`, which
/// yields but never parks).
#[derive(Debug)]
pub struct Backoff<W: WaitPolicy = DefaultWait> {
    step: u32,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> Default for Backoff<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: WaitPolicy> Backoff<W> {
    /// A fresh backoff.
    #[inline]
    pub const fn new() -> Self {
        Backoff {
            step: 0,
            _policy: PhantomData,
        }
    }

    /// Waits a little longer than last time, or says it is time to park.
    #[inline]
    pub fn snooze(&mut self) -> Snooze {
        if cfg!(loom) {
            // Inside a model: one scheduling point, then park (see module docs).
            if self.step == 0 {
                self.step = 1;
                spin_loop();
                return Snooze::Waited;
            }
            return Snooze::Park;
        }
        if self.step < W::SPIN_ROUNDS {
            for _ in 0..(1u32 << self.step.min(16)) {
                spin_loop();
            }
        } else if self.step - W::SPIN_ROUNDS < W::YIELD_ROUNDS || !W::PARK {
            yield_now();
        } else {
            return Snooze::Park;
        }
        self.step = self.step.saturating_add(1);
        Snooze::Waited
    }

    /// Whether the next [`snooze`](Self::snooze) would park.
    #[inline]
    pub fn should_park(&self) -> bool {
        if cfg!(loom) {
            return self.step > 0;
        }
        W::PARK && self.step >= W::SPIN_ROUNDS.saturating_add(W::YIELD_ROUNDS)
    }
}

/// Spins with `W` until `ready()` holds, never parking (the caller has no way
/// to be woken). Used only for waits that are bounded by another thread's
/// next few instructions (e.g. a queue successor linking itself in).
#[inline]
pub fn spin_until<W: WaitPolicy>(mut ready: impl FnMut() -> bool) {
    let mut backoff = Backoff::<W>::new();
    while !ready() {
        if backoff.snooze() == Snooze::Park {
            // Bounded wait: keep giving the core away instead of sleeping.
            yield_now();
        }
    }
}

/// The count of threads parked (or about to park) on a lock.
///
/// Protocol (a Dekker pair; the orderings below are what make it work):
/// - waiter: `count += 1` (SeqCst RMW), `fence(SeqCst)`, then under the
///   parking-lot bucket lock re-check the lock state, park only if not ready;
/// - waker: change the lock state with a **SeqCst read-modify-write**, then
///   [`wake_all`](Self::wake_all) loads the count with SeqCst.
///
/// Either the waker's load sees the waiter's increment (and unparks it; if the
/// waiter has not reached `park` yet, it takes the bucket lock after the
/// unpark and so sees the new state in its re-check), or the increment comes
/// later in the single SeqCst order, and then the waiter's load after its fence
/// sees the waker's state change and it does not park.
///
/// A second protocol serves wakers that change the state with a plain store
/// and only a compiler fence (prwlock's readers):
/// [`wait_until_with_barrier`](Self::wait_until_with_barrier) runs a heavy
/// barrier (`membarrier`) between registering and re-checking, and the
/// waker calls [`wake_all_after_barrier`](Self::wake_all_after_barrier)
/// after its store and light barrier.
#[derive(Debug, Default)]
pub struct Waiters {
    count: AtomicU32,
    /// The model's stand-in for the parking-lot bucket.
    #[cfg(loom)]
    bucket: ModelBucket,
}

impl Waiters {
    crate::loom_const_fn! {
        /// No waiters.
        pub fn new() -> Self {
            Waiters {
                count: AtomicU32::new(0),
                #[cfg(loom)]
                bucket: ModelBucket::new(),
            }
        }
    }

    #[cfg(not(loom))]
    #[inline]
    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// Waits with policy `W` until `ready()` returns true.
    ///
    /// `ready` must read the state that wakers change before calling
    /// [`wake_all`](Self::wake_all); it must not panic.
    #[inline]
    pub fn wait_until<W: WaitPolicy>(&self, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &|| {})
    }

    /// Like [`wait_until`](Self::wait_until), for wakers that change the
    /// state with a plain store and no fence of their own (asymmetric
    /// fences, as in prwlock's readers).
    ///
    /// Protocol: the waiter registers, runs `barrier` (a heavy barrier such as
    /// `membarrier`, which acts as a full fence on every running thread of the
    /// process), then re-checks `ready` under the bucket lock. The waker
    /// stores its state change, runs the matching light barrier (at least a
    /// compiler fence), then calls
    /// [`wake_all_after_barrier`](Self::wake_all_after_barrier). The pair of
    /// barriers gives the same "one of us sees the other" guarantee as the
    /// SeqCst pair of [`wait_until`](Self::wait_until).
    #[inline]
    pub fn wait_until_with_barrier<W: WaitPolicy>(
        &self,
        mut ready: impl FnMut() -> bool,
        barrier: impl Fn(),
    ) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &barrier)
    }

    /// The waker's side of
    /// [`wait_until_with_barrier`](Self::wait_until_with_barrier): call it
    /// after the state change and the light barrier that pairs with the
    /// waiter's heavy barrier.
    #[inline]
    pub fn wake_all_after_barrier(&self) {
        // Relaxed: the caller's light barrier and the waiter's heavy barrier
        // order this load after the caller's state change and the waiter's
        // increment before its re-check (see `wait_until_with_barrier`).
        if self.count.load(Ordering::Relaxed) != 0 {
            self.wake_all_slow();
        }
    }

    /// Spins, yields, then parks, running `barrier` before each re-check
    /// under the bucket lock (a no-op for `wait_until`).
    #[cold]
    fn wait_slow<W: WaitPolicy>(&self, ready: &mut dyn FnMut() -> bool, barrier: &dyn Fn()) {
        let mut backoff = Backoff::<W>::new();
        loop {
            if ready() {
                return;
            }
            if backoff.snooze() == Snooze::Park {
                self.park_after(ready, barrier);
            }
        }
    }

    #[cold]
    fn park_after(&self, ready: &mut dyn FnMut() -> bool, barrier: &dyn Fn()) {
        // SeqCst RMW then SeqCst fence: pairs with the waker's SeqCst RMW on
        // the lock state and SeqCst load of `count` (see the type docs).
        self.count.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // For wakers without a fence of their own (see
        // `wait_until_with_barrier`); a no-op for `wait_until`.
        barrier();
        #[cfg(loom)]
        self.bucket.park_while(|| !ready());
        #[cfg(not(loom))]
        // The key is the address of this `Waiters`, part of a lock that
        // outlives every thread using it; `ready` must not panic.
        // SAFETY: our own key; `validate` neither panics nor calls parking_lot.
        unsafe {
            parking_lot_core::park(
                self.key(),
                || !ready(),
                || {},
                |_, _| {},
                parking_lot_core::DEFAULT_PARK_TOKEN,
                None,
            );
        }
        // Relaxed: the count is only a hint to wakers; a stale non-zero value
        // costs one needless unpark_all.
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes every thread parked on this lock. Call it right after the state
    /// change, which must have been a SeqCst read-modify-write.
    #[inline]
    pub fn wake_all(&self) {
        // loom models the SeqCst load below as Acquire; the fence gives the
        // model the store-load ordering the real build gets from C++20 SeqCst.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        // SeqCst: pairs with the waiter's SeqCst increment and fence
        // (store-load ordering after the caller's SeqCst RMW).
        if self.count.load(Ordering::SeqCst) != 0 {
            self.wake_all_slow();
        }
    }

    #[cold]
    fn wake_all_slow(&self) {
        #[cfg(loom)]
        self.bucket.notify_all();
        #[cfg(not(loom))]
        // SAFETY: our own lock's address; no callback.
        unsafe {
            parking_lot_core::unpark_all(self.key(), parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
    }
}

const LATCH_OPEN: u32 = 0;
const LATCH_WAITING: u32 = 1;
const LATCH_PARKED: u32 = 2;

/// A one-shot gate in a waiter's own queue node: the waiter spins on it
/// locally, then parks; exactly one other thread opens it once.
///
/// The opener may not touch the latch after the waiter has seen it open
/// (the node may be a stack slot that is gone by then). [`open`](Self::open)
/// guarantees that: either one CAS `WAITING -> OPEN` (the waiter is still
/// spinning and sees it afterwards), or, when the waiter announced `PARKED`,
/// the store of `OPEN` happens inside `unpark_one`'s callback under the
/// bucket lock, when the waiter is either asleep in the queue or about to
/// validate under that same lock, so it cannot have left yet.
#[derive(Debug)]
pub struct Latch {
    state: AtomicU32,
    /// The model's stand-in for the parking-lot bucket.
    #[cfg(loom)]
    bucket: ModelBucket,
}

impl Default for Latch {
    fn default() -> Self {
        Self::new()
    }
}

impl Latch {
    crate::loom_const_fn! {
        /// A closed latch.
        pub fn new() -> Self {
            Latch {
                state: AtomicU32::new(LATCH_WAITING),
                #[cfg(loom)]
                bucket: ModelBucket::new(),
            }
        }
    }

    /// Whether the latch was opened. Acquire: pairs with the Release in `open`.
    #[inline]
    pub fn is_open(&self) -> bool {
        self.state.load(Ordering::Acquire) == LATCH_OPEN
    }

    /// Waits with policy `W` until the latch is opened.
    #[inline]
    pub fn wait<W: WaitPolicy>(&self) {
        let mut backoff = Backoff::<W>::new();
        while !self.is_open() {
            if backoff.snooze() == Snooze::Park {
                self.park();
            }
        }
    }

    #[cold]
    fn park(&self) {
        // Acquire on failure: the latch is open and we return to a caller that
        // reads what the opener published.
        if self
            .state
            .compare_exchange(
                LATCH_WAITING,
                LATCH_PARKED,
                Ordering::Relaxed,
                Ordering::Acquire,
            )
            .is_err()
        {
            return;
        }
        #[cfg(loom)]
        self.bucket
            .park_while(|| self.state.load(Ordering::Relaxed) == LATCH_PARKED);
        #[cfg(not(loom))]
        // The key is this latch's address, alive while we wait.
        // SAFETY: our own key; `validate` neither panics nor calls parking_lot.
        unsafe {
            let key = self as *const Self as usize;
            parking_lot_core::park(
                key,
                || self.state.load(Ordering::Relaxed) == LATCH_PARKED,
                || {},
                |_, _| {},
                parking_lot_core::DEFAULT_PARK_TOKEN,
                None,
            );
        }
    }

    /// Opens the latch and wakes its waiter.
    ///
    /// # Safety
    ///
    /// `this` must point to a live latch that has not been opened yet and
    /// whose waiter is still waiting on it (or has not started yet). After the
    /// call the latch may already be freed: the caller must not use `this`
    /// again.
    #[inline]
    pub unsafe fn open(this: *const Latch) {
        // This is our last access unless the waiter parked. After a
        // successful WAITING -> OPEN the waiter may free the latch while
        // `state` is still in scope but no longer used: the same pattern as
        // `Arc::drop` (rust-lang/rust#55005), accepted in practice.
        // SAFETY: the latch is live per the contract.
        let state = unsafe { &(*this).state };
        // Release: pairs with the Acquire in `is_open`/`park`, publishing
        // whatever the opener wrote before (e.g. the lock hand-off).
        match state.compare_exchange(
            LATCH_WAITING,
            LATCH_OPEN,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => {}
            Err(_) => Self::open_parked(this),
        }
    }

    #[cfg(loom)]
    #[cold]
    fn open_parked(this: *const Latch) {
        // The waiter is parked, or about to check under the bucket lock,
        // which we hold while storing OPEN.
        // SAFETY: so the waiter cannot have left: the latch is alive.
        let latch = unsafe { &*this };
        latch.bucket.notify_one_after(|| {
            debug_assert_eq!(latch.state.load(Ordering::Relaxed), LATCH_PARKED);
            // Release: pairs with the waiter's Acquire in `is_open`.
            latch.state.store(LATCH_OPEN, Ordering::Release);
        });
    }

    #[cfg(not(loom))]
    #[cold]
    fn open_parked(this: *const Latch) {
        // The waiter announced PARKED and cannot leave before it sees OPEN,
        // which we store under the bucket lock inside the callback.
        // SAFETY: so the latch stays alive until then; the key is its address.
        unsafe {
            parking_lot_core::unpark_one(this as usize, |_| {
                // Release: pairs with the waiter's Acquire in `is_open`.
                (*this).state.store(LATCH_OPEN, Ordering::Release);
                parking_lot_core::DEFAULT_UNPARK_TOKEN
            });
        }
    }
}

/// A loom model's parking-lot bucket: a mutex (the bucket lock) and a
/// condition variable (the sleeping queue).
#[cfg(loom)]
#[derive(Debug, Default)]
struct ModelBucket {
    lock: loom::sync::Mutex<()>,
    queue: loom::sync::Condvar,
}

#[cfg(loom)]
impl ModelBucket {
    fn new() -> Self {
        ModelBucket {
            lock: loom::sync::Mutex::new(()),
            queue: loom::sync::Condvar::new(),
        }
    }

    /// Re-checks `blocked` under the bucket lock and sleeps while it holds
    /// (parking_lot_core's `validate`, then sleep until unparked).
    fn park_while(&self, mut blocked: impl FnMut() -> bool) {
        let mut guard = self.lock.lock().unwrap();
        while blocked() {
            guard = self.queue.wait(guard).unwrap();
        }
    }

    fn notify_all(&self) {
        let _guard = self.lock.lock().unwrap();
        self.queue.notify_all();
    }

    /// Runs `f` under the bucket lock, then wakes a sleeper (`unpark_one`
    /// with a callback).
    fn notify_one_after(&self, f: impl FnOnce()) {
        let _guard = self.lock.lock().unwrap();
        f();
        self.queue.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn backoff_reaches_park_only_with_parking_policy() {
        let mut b = Backoff::<SpinYieldPark>::new();
        let mut steps = 0;
        while b.snooze() == Snooze::Waited {
            steps += 1;
            assert!(steps < 100, "SpinYieldPark never asked to park");
        }
        assert_eq!(
            steps,
            SpinYieldPark::SPIN_ROUNDS + SpinYieldPark::YIELD_ROUNDS
        );
        assert!(b.should_park());

        let mut b = Backoff::<SpinYield>::new();
        for _ in 0..1000 {
            assert_eq!(b.snooze(), Snooze::Waited);
        }
        assert!(!b.should_park());
    }

    #[test]
    fn waiters_wake_parked_threads_without_loss() {
        // Many rounds of: N threads park until a counter reaches a value, one
        // thread advances it. A lost wake-up hangs this test.
        let state = Arc::new(crate::sync::AtomicU32::new(0));
        let waiters = Arc::new(Waiters::new());
        for round in 1..=200u32 {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let (s, w) = (state.clone(), waiters.clone());
                    std::thread::spawn(move || {
                        w.wait_until::<SpinYieldPark>(|| s.load(Ordering::Acquire) >= round)
                    })
                })
                .collect();
            if round % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            state.fetch_add(1, Ordering::SeqCst);
            waiters.wake_all();
            for h in handles {
                h.join().unwrap();
            }
        }
    }

    #[test]
    fn latch_opens_spinning_and_parked_waiters() {
        for delay_us in [0u64, 50, 2000] {
            for _ in 0..50 {
                let latch = Arc::new(Latch::new());
                let seen = Arc::new(AtomicBool::new(false));
                let (l, s) = (latch.clone(), seen.clone());
                let h = std::thread::spawn(move || {
                    l.wait::<SpinYieldPark>();
                    assert!(s.load(Ordering::Relaxed), "latch opened before the write");
                });
                if delay_us > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(delay_us));
                }
                seen.store(true, Ordering::Relaxed);
                // SAFETY: the latch is alive (Arc) and opened once.
                unsafe { Latch::open(&*latch) };
                h.join().unwrap();
                assert!(latch.is_open());
            }
        }
    }
}
