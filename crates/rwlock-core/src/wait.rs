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
//! yielding) and exists to measure what parking costs. [`ParkWhenShared`]
//! parks after the first yield where the thread's yields show its CPU
//! shared (cohort's reader-preference locks use it).
//!
//! A waiter that holds a claim others wait on (a phase-fair reader counted in
//! a phase) waits with [`Backoff::snooze_or_retreat`]: where it would yield or
//! park while this thread's recent yields gave the CPU to other threads (the
//! kernel's per-thread count of context switches says so), it is told to give
//! the claim up first. With a core for every running thread the yields find
//! nobody else to run and nothing changes; with more threads than cores no
//! writer waits for a reader that is not running.
//!
//! Two parking primitives:
//! - [`Waiters`]: a waiter count embedded in a lock. A thread waiting for the
//!   lock state to change registers, reads a wake epoch, re-checks the state,
//!   and sleeps unless the epoch moved (checked under the parking-lot bucket
//!   lock); a thread that changes the state checks the count after its
//!   change and, if somebody registered, bumps the epoch and wakes everybody
//!   parked on the lock ([`Waiters::wake_all`]), or only the first few, who
//!   pass the wake on ([`Waiters::wake_some`]), or only those parked with a
//!   given tag, such as a ticket ([`Waiters::wake_tagged`]). The lock
//!   outlives its users, so its address is a safe parking key. The lock's
//!   own re-check never runs under the bucket lock, so it may panic (the
//!   waiter deregisters as it unwinds).
//! - [`Latch`]: a one-shot gate on a waiter's own queue node (MCS-style local
//!   spinning). The opener touches the node in one atomic operation, or under
//!   the bucket lock while the waiter is provably still inside `park`, so the
//!   node may live on the waiter's stack.
//!
//! Inside a loom model a waiter yields once to the model (so the "state
//! changed between two checks" paths are explored) and then parks on a loom
//! `Mutex` + `Condvar` pair standing for the parking-lot bucket, so a lost
//! wake-up shows up as a loom deadlock. The verification is split in two,
//! to keep the models' state space (and CI time) down: the models of
//! `Waiters` itself (this module's `loom_tests`) run the real build's
//! protocol (register / read the epoch / re-check / sleep unless the epoch
//! moved / wake), and prove it never loses a wake-up; every lock's models
//! run the specification that protocol implements (register, then re-check
//! the state under the bucket lock and sleep until woken), which has the
//! same observable behaviour with two atomic accesses fewer per wait. (Unbounded spinning
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
    /// Whether a waiter whose CPU other threads wait for
    /// ([`cpu_shared_lately`]) parks after its first yield instead of
    /// yielding `YIELD_ROUNDS` times (only with `PARK`).
    const PARK_WHEN_SHARED: bool = false;
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

/// [`SpinYieldPark`], except that a waiter whose CPU other threads wait
/// for parks after its first yield. There each yield can put the waiter
/// behind every runnable thread for a time slice, while a parked waiter is
/// woken when what it waits for changes; the price is a futex wake for the
/// thread that changes it. For waiters whose delay holds others back (the
/// cohort crate's reader-preference locks: a writer draining readers, the
/// readers it holds back).
#[derive(Debug, Clone, Copy, Default)]
pub struct ParkWhenShared;

impl WaitPolicy for ParkWhenShared {
    const SPIN_ROUNDS: u32 = SpinYieldPark::SPIN_ROUNDS;
    const YIELD_ROUNDS: u32 = SpinYieldPark::YIELD_ROUNDS;
    const PARK: bool = true;
    const PARK_WHEN_SHARED: bool = true;
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
    /// Give up your claim, then call again
    /// ([`Backoff::snooze_or_retreat`] only).
    Retreat,
}

/// Whether a snooze may answer `Retreat`. A retreating snooze measures
/// every yield; a plain one, the first yield of each wait.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    Plain,
    CanRetreat,
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
    ///
    /// The first yield of each wait is measured: two `getrusage` calls
    /// beside the `sched_yield` tell whether it gave the CPU to another
    /// thread, which [`cpu_shared_lately`] reports (the restriction gate's
    /// evidence that threads outnumber cores).
    #[inline]
    pub fn snooze(&mut self) -> Snooze {
        self.snooze_inner(Watch::Plain)
    }

    /// Like [`snooze`](Self::snooze), for a waiter that holds a claim
    /// other threads may wait on, and that it can give up (a phase-fair
    /// reader counted in a phase). Where `snooze` would leave the CPU
    /// (yield or park) while this thread shares its CPU with other
    /// runnable threads, it returns [`Snooze::Retreat`] instead, without
    /// waiting: the caller gives its claim up, so that nobody waits for a
    /// thread that is not running, and calls again. Pass `can_retreat ==
    /// false` once the claim is given up: the wait goes on as `snooze`'s.
    ///
    /// "Shares its CPU": one of the last [`SHARED_MEMORY`] yields this
    /// thread measured here gave the CPU to another thread (the kernel
    /// counted one more context switch of this thread, which happens only
    /// when another thread was waiting for the CPU; on targets other than
    /// Linux, the yield took longer than [`LEFT_CPU_AFTER`]). With a core
    /// for every running thread, yields find nobody else to run, and this
    /// never returns `Retreat`. Inside a loom model it returns `Retreat`
    /// where `snooze` would park (so that the models take the path).
    #[inline]
    pub fn snooze_or_retreat(&mut self, can_retreat: bool) -> Snooze {
        self.snooze_inner(if can_retreat {
            Watch::CanRetreat
        } else {
            Watch::Plain
        })
    }

    #[inline]
    fn snooze_inner(&mut self, watch: Watch) -> Snooze {
        // Asked only where the backoff would leave the CPU, not while it spins.
        let retreat = || watch == Watch::CanRetreat && cpu_shared_lately();
        if cfg!(loom) {
            // Inside a model: one scheduling point, then park (see module docs).
            if self.step == 0 {
                self.step = 1;
                spin_loop();
                return Snooze::Waited;
            }
            return if retreat() {
                Snooze::Retreat
            } else {
                Snooze::Park
            };
        }
        if self.step < W::SPIN_ROUNDS {
            for _ in 0..(1u32 << self.step.min(16)) {
                spin_loop();
            }
        } else if self.step - W::SPIN_ROUNDS < W::YIELD_ROUNDS || !W::PARK {
            if retreat() {
                return Snooze::Retreat;
            }
            if self.step == W::SPIN_ROUNDS {
                note_deep_wait();
            } else if W::PARK && W::PARK_WHEN_SHARED && cpu_shared_lately() {
                // Past the first yield, and this thread's measured yields
                // say its CPU is shared.
                return Snooze::Park;
            }
            // A retreating waiter measures every yield (it asks after each);
            // others measure the first of each wait, which is evidence
            // enough for the gate at one `getrusage` pair per deep wait.
            if watch == Watch::CanRetreat || self.step == W::SPIN_ROUNDS {
                yield_measured();
            } else {
                yield_now();
            }
        } else {
            if retreat() {
                return Snooze::Retreat;
            }
            if W::YIELD_ROUNDS == 0 && self.step == W::SPIN_ROUNDS {
                note_deep_wait();
            }
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
        W::PARK
            && (self.step >= W::SPIN_ROUNDS.saturating_add(W::YIELD_ROUNDS)
                || (W::PARK_WHEN_SHARED && self.step > W::SPIN_ROUNDS && cpu_shared_lately()))
    }
}

/// The CPUs the process may run on ([`std::thread::available_parallelism`],
/// which honours affinity masks and cgroup quotas), at least 1; read once.
pub fn running_cpus() -> u32 {
    use std::sync::OnceLock;
    static CPUS: OnceLock<u32> = OnceLock::new();
    *CPUS.get_or_init(|| {
        // Not a cancellation point (reads cgroup files inside a lock call).
        without_cancellation(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get().min(u32::MAX as usize) as u32)
        })
    })
}

/// On targets without a per-thread context-switch count, a yield that
/// took at least this long is taken to have given the CPU to another
/// thread (a `sched_yield` that finds nobody else to run returns in well
/// under a microsecond).
pub const LEFT_CPU_AFTER: core::time::Duration = core::time::Duration::from_micros(20);

/// How many measured yields in a row that found the CPU free it takes
/// before a thread whose yield last gave its CPU away stops counting as
/// sharing it ([`Backoff::snooze_or_retreat`]).
pub const SHARED_MEMORY: u8 = 64;

std::thread_local! {
    /// Counts down from [`SHARED_MEMORY`] after a yield that gave the CPU
    /// away, one step per measured yield that did not.
    static CPU_SHARED: core::cell::Cell<u8> = const { core::cell::Cell::new(0) };
}

/// Whether one of this thread's last [`SHARED_MEMORY`] measured yields
/// gave its CPU to another thread: evidence that threads outnumber the
/// CPUs this one runs on. Every [`Backoff`] measures the first yield of
/// each wait. Inside a loom model: always.
#[inline]
pub fn cpu_shared_lately() -> bool {
    cfg!(loom) || CPU_SHARED.with(|c| c.get() != 0)
}

/// Whether a waiter queued behind others may start its backoff over when it
/// sees the queue move, instead of parking ([`Latch::wait_while_moving`],
/// cohort's ticket lock): only while its CPU is its own (not
/// [`cpu_shared_lately`]), since its spinning on a shared CPU would take the
/// CPU from the threads ahead of it. Inside a loom model: always, so that
/// the models explore the restart.
#[inline]
pub fn may_restart_when_queue_moves() -> bool {
    cfg!(loom) || !cpu_shared_lately()
}

/// Sets (or clears) this thread's evidence that its CPU is shared, as if
/// its last measured yield had (or had not for [`SHARED_MEMORY`] yields)
/// given the CPU away: for tests of what the evidence decides.
#[cfg(test)]
pub(crate) fn set_cpu_shared(shared: bool) {
    CPU_SHARED.with(|c| c.set(if shared { SHARED_MEMORY } else { 0 }));
}

/// Yields, remembers for [`cpu_shared_lately`] whether another thread
/// ran on this CPU meanwhile, and says whether one did: for code that
/// gives its CPU away for as long as that helps someone (`prwlock::rcu`'s
/// readers while a synchronizer waits for a descheduled one), or that
/// waits by other means than [`Backoff`] and wants the same evidence
/// (`ldu`'s drains, which then call [`note_deep_wait`] to engage their
/// gate).
#[cold]
pub fn yield_measured() -> bool {
    let left = yield_switched();
    CPU_SHARED.with(|c| {
        c.set(if left {
            SHARED_MEMORY
        } else {
            c.get().saturating_sub(1)
        })
    });
    left
}

/// Yields, and says whether another thread ran on this CPU meanwhile.
fn yield_switched() -> bool {
    #[cfg(target_os = "linux")]
    {
        // A yield that switches to another thread counts as an involuntary
        // context switch of the yielding one (the task stays runnable).
        fn switches() -> Option<libc::c_long> {
            let mut usage = core::mem::MaybeUninit::<libc::rusage>::uninit();
            // SAFETY: getrusage fills `usage` on success; read only then.
            unsafe {
                (libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) == 0)
                    .then(|| usage.assume_init().ru_nivcsw)
            }
        }
        let before = switches();
        yield_now();
        match (before, switches()) {
            (Some(a), Some(b)) => b != a,
            // getrusage cannot fail with these arguments; if it did, assume
            // the worst case, like a heavily loaded machine.
            _ => true,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let start = std::time::Instant::now();
        yield_now();
        start.elapsed() >= LEFT_CPU_AFTER
    }
}

std::thread_local! {
    /// Set when a wait of this thread outlasted its spinning (see
    /// [`take_deep_wait`]).
    static DEEP_WAIT: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether a wait of the calling thread went past spinning into yielding
/// or parking since the last call (which clears the flag). A wait goes
/// deep when the thread it waits for does not finish within a few
/// microseconds: its critical section is long, or it is not running,
/// which is the rule when threads outnumber cores.
/// [`Restricted`](crate::Restricted) reads it after each acquisition to
/// decide whether to restrict concurrency (a deep wait in another lock
/// since the last check counts too: a false alarm costs one engagement,
/// which then lapses).
#[inline(always)]
pub fn take_deep_wait() -> bool {
    DEEP_WAIT.with(|d| {
        if d.get() {
            d.set(false);
            true
        } else {
            false
        }
    })
}

/// Records a deep wait of the calling thread (every [`Backoff`] does on
/// its first yield; a lock that waits by other means calls it itself).
#[inline]
pub fn note_deep_wait() {
    DEEP_WAIT.with(|d| d.set(true));
}

/// Runs `f` with the calling thread's POSIX cancellation disabled, then
/// restores the state it had: for work inside a lock call that may reach
/// a cancellation point, once (a table's or the topology's first creation
/// opens and reads files: `open` and `read` are cancellation points, and
/// glibc acts on a pending cancellation as soon as one is entered; found
/// in review, 2026-11-29, through the preload library: `pthread_cancel`
/// ended a thread inside its first timed read, in BRAVO's table creation,
/// which asks `available_parallelism`, which reads `/proc/self/cgroup`).
/// Not for a hot path: two calls into the C library.
pub fn without_cancellation<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // glibc and musl: `PTHREAD_CANCEL_ENABLE` is 0, `..._DISABLE` 1.
        const DISABLE: libc::c_int = 1;
        // Not in the libc crate for Linux.
        // SAFETY: the C library's signature (POSIX).
        unsafe extern "C" {
            fn pthread_setcancelstate(state: libc::c_int, old: *mut libc::c_int) -> libc::c_int;
        }
        struct Restore(libc::c_int);
        impl Drop for Restore {
            fn drop(&mut self) {
                let mut ignored = 0;
                // A state read back from the C library.
                // SAFETY: a valid state and out-pointer.
                unsafe { pthread_setcancelstate(self.0, &mut ignored) };
            }
        }
        let mut old = 0;
        // SAFETY: a valid state and out-pointer.
        unsafe { pthread_setcancelstate(DISABLE, &mut old) };
        let _restore = Restore(old);
        f()
    }
    #[cfg(not(all(target_os = "linux", not(loom))))]
    f()
}

/// Sleeps for `d` without being a thread-cancellation point.
///
/// `std::thread::sleep` calls glibc's `nanosleep`, which `pthread_cancel`
/// may act on: a lock call that sleeps in its slow path would then end the
/// thread inside the lock call, unwinding through frames that do not
/// expect it, where glibc's own `pthread_rwlock_*` functions are never
/// cancellation points (found in review, 2026-11-29, through the preload
/// library: BRAVO's revoking writer, and every timed wait). On Linux this
/// makes the `clock_nanosleep` system call itself, which glibc does not
/// treat as a cancellation point; elsewhere it is `std::thread::sleep`.
/// A signal that interrupts the sleep ends it early (the callers re-check
/// and sleep again).
pub fn sleep_uncancelled(d: core::time::Duration) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a valid timespec; a null remainder is allowed.
        unsafe {
            libc::syscall(
                libc::SYS_clock_nanosleep,
                libc::CLOCK_MONOTONIC,
                0,
                &ts as *const libc::timespec,
                core::ptr::null_mut::<libc::timespec>(),
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    std::thread::sleep(d);
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
/// - waiter: `count += 1` (SeqCst RMW), `fence(SeqCst)`, read the **wake
///   epoch** `e` (Acquire), re-check the lock state with the caller's
///   `ready`, and if it is still not ready park, with the parking-lot bucket
///   lock's re-check being only "the epoch is still `e`";
/// - waker: change the lock state with a **SeqCst read-modify-write**, then
///   [`wake_all`](Self::wake_all) loads the count with SeqCst and, if it is
///   not zero, bumps the epoch (a Release RMW) and unparks every waiter.
///
/// Either the waker's load sees the waiter's increment, or the increment
/// comes later in the single SeqCst order, and then the waiter's `ready`
/// after its fence sees the waker's state change and it does not park. In
/// the first case the waker bumps the epoch: if the waiter read the bumped
/// value, its `ready` (after that Acquire) sees the state change; if it read
/// the older one, then either the waker's unpark takes the bucket lock
/// after the waiter queued itself (and wakes it), or before, and then the
/// waiter's re-check under that lock sees the bump and does not sleep.
///
/// The caller's `ready` therefore never runs inside `parking_lot_core`'s
/// `validate` callback (which must not panic and must not call into
/// parking_lot): a `ready` that panics unwinds normally, deregistering the
/// waiter on the way out. The epochs live in a small process-wide table of
/// cache-padded counters indexed by a hash of the parking key (a bump for
/// one lock may make a waiter of another lock that shares the stripe
/// re-check once; it never makes anybody sleep through a wake-up), so a
/// `Waiters` stays one `u32`.
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
    /// Inside a model the wake epoch is the `Waiters`' own (the process-wide
    /// table would need loom atomics built per execution).
    #[cfg(loom)]
    epoch: crate::sync::AtomicU64,
    /// The model's stand-in for the parking-lot bucket.
    #[cfg(loom)]
    bucket: ModelBucket,
}

/// Stripes of the wake-epoch table (see [`Waiters`]).
#[cfg(not(loom))]
const EPOCH_STRIPES: usize = 64;

/// The wake epochs of every [`Waiters`] of the process, by key hash.
#[cfg(not(loom))]
static EPOCHS: [crate::CachePadded<core::sync::atomic::AtomicU64>; EPOCH_STRIPES] =
    [const { crate::CachePadded::new(core::sync::atomic::AtomicU64::new(0)) }; EPOCH_STRIPES];

/// Decrements the waiter count when dropped: a registered waiter
/// deregisters however it leaves `park_after`, unwinding included.
struct Registered<'a>(&'a AtomicU32);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        // A loom model that failed (a deadlock it found) unwinds through
        // here, and loom forbids touching its atomics then.
        if cfg!(loom) && std::thread::panicking() {
            return;
        }
        // Relaxed: the count is only a hint to wakers; a stale non-zero
        // value costs one needless epoch bump and unpark_all.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Waiters {
    crate::loom_const_fn! {
        /// No waiters.
        pub fn new() -> Self {
            Waiters {
                count: AtomicU32::new(0),
                #[cfg(loom)]
                epoch: crate::sync::AtomicU64::new(0),
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

    /// This `Waiters`' wake epoch: bumped by every waking `wake_all*`,
    /// `wake_some` and `wake_tagged`.
    #[inline]
    fn epoch(&self) -> &crate::sync::AtomicU64 {
        #[cfg(loom)]
        {
            &self.epoch
        }
        #[cfg(not(loom))]
        {
            // Fibonacci hashing of the address: neighbouring locks land on
            // different stripes.
            let stripe = (self.key() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
            &EPOCHS[stripe as usize % EPOCH_STRIPES]
        }
    }

    /// Waits with policy `W` until `ready()` returns true.
    ///
    /// `ready` must read the state that wakers change before calling
    /// [`wake_all`](Self::wake_all). It runs on the calling thread only,
    /// never inside the parking lot's bucket lock: if it panics, the panic
    /// propagates to the caller and the thread is no longer counted as a
    /// waiter.
    #[inline]
    pub fn wait_until<W: WaitPolicy>(&self, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &|| {}, None, None)
    }

    /// Like [`wait_until`](Self::wait_until), for a waiter that only one
    /// particular change concerns: it parks with `tag`, and
    /// [`wake_tagged`](Self::wake_tagged)`(tag)` wakes it (and any other
    /// thread parked with that tag) while the other parked threads sleep
    /// on. A ticket lock's waiter passes its ticket, and a hand-off wakes
    /// only the next in line instead of every waiter. `wake_all` and
    /// `wake_some` wake tagged waiters too. Where the wakers call
    /// `wake_tagged`, every waiter must be tagged: an untagged one parks
    /// as tag 0, and a `wake_tagged` with another tag leaves it asleep.
    #[inline]
    pub fn wait_until_tagged<W: WaitPolicy>(&self, tag: usize, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &|| {}, None, Some(tag))
    }

    /// Like [`wait_until`](Self::wait_until), but where the waiter would
    /// leave a CPU that other threads are waiting for (it yields or parks
    /// while threads outnumber cores: [`Backoff::snooze_or_retreat`]), it
    /// calls `retreat` once first, then goes on waiting for `ready()`.
    ///
    /// A waiter that has to share its CPU may not get it back for a time
    /// slice; `retreat` gives up a claim that other threads would otherwise
    /// wait on meanwhile: a phase-fair reader withdraws from the reader
    /// phase it was counted in, so the next writer does not wait for a
    /// thread that is not running. With no more threads than cores the
    /// yields find nobody else to run, and `retreat` is never called.
    /// `retreat` runs on the calling thread, outside any lock.
    #[inline]
    pub fn wait_until_or_retreat<W: WaitPolicy>(
        &self,
        mut ready: impl FnMut() -> bool,
        mut retreat: impl FnMut(),
    ) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &|| {}, Some(&mut retreat), None)
    }

    /// Like [`wait_until`](Self::wait_until), for wakers that change the
    /// state with a plain store and no fence of their own (asymmetric
    /// fences, as in prwlock's readers).
    ///
    /// Protocol: the waiter registers, runs `barrier` (a heavy barrier such as
    /// `membarrier`, which acts as a full fence on every running thread of the
    /// process), then reads the wake epoch and re-checks `ready`. The waker
    /// stores its state change, runs the matching light barrier (at least a
    /// compiler fence), then calls
    /// [`wake_all_after_barrier`](Self::wake_all_after_barrier). The pair of
    /// barriers gives the same "one of us sees the other" guarantee as the
    /// SeqCst pair of [`wait_until`](Self::wait_until); the epoch closes the
    /// window between the re-check and sleeping, as there. `ready` and
    /// `barrier` may panic, as for `wait_until`.
    #[inline]
    pub fn wait_until_with_barrier<W: WaitPolicy>(
        &self,
        mut ready: impl FnMut() -> bool,
        barrier: impl Fn(),
    ) {
        if ready() {
            return;
        }
        self.wait_slow::<W>(&mut ready, &barrier, None, None)
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
    /// under the bucket lock (a no-op for `wait_until`), and `retreat`
    /// once, when the backoff says so ([`Backoff::snooze_or_retreat`]).
    #[cold]
    fn wait_slow<W: WaitPolicy>(
        &self,
        ready: &mut dyn FnMut() -> bool,
        barrier: &dyn Fn(),
        mut retreat: Option<&mut dyn FnMut()>,
        tag: Option<usize>,
    ) {
        let mut backoff = Backoff::<W>::new();
        let watched = retreat.is_some();
        loop {
            if ready() {
                return;
            }
            let snooze = if watched {
                backoff.snooze_or_retreat(retreat.is_some())
            } else {
                backoff.snooze()
            };
            if snooze == Snooze::Retreat {
                if let Some(r) = retreat.take() {
                    r();
                }
                continue;
            }
            if snooze == Snooze::Park {
                self.park_after(ready, barrier, tag);
            }
        }
    }

    #[cold]
    fn park_after(&self, ready: &mut dyn FnMut() -> bool, barrier: &dyn Fn(), tag: Option<usize>) {
        // SeqCst RMW then SeqCst fence: pairs with the waker's SeqCst RMW on
        // the lock state and SeqCst load of `count` (see the type docs).
        self.count.fetch_add(1, Ordering::SeqCst);
        // From here on, however we leave (a panicking `ready` included), the
        // count goes back down.
        let _registered = Registered(&self.count);
        fence(Ordering::SeqCst);
        // For wakers without a fence of their own (see
        // `wait_until_with_barrier`); a no-op for `wait_until`.
        barrier();
        // The lock models check their locks against the specification of
        // this wait (see the module docs): re-check under the bucket lock.
        #[cfg(loom)]
        if !model::epochs() {
            match tag {
                None => self.bucket.park_while(|| !ready()),
                Some(tag) => self.bucket.park_tagged(tag, || !ready()),
            }
            return;
        }
        // Acquire: pairs with the Release bump in `wake_all_slow`; a waker
        // whose bump we read changed the state before it, and `ready` below
        // sees that change.
        let epoch = self.epoch().load(Ordering::Acquire);
        if ready() {
            return;
        }
        // Relaxed (both re-checks): under the bucket lock, which the waker's
        // unpark takes after its bump, so a bump made before we queued is
        // seen (the lock orders it); a later one finds us queued.
        #[cfg(loom)]
        match tag {
            None => self
                .bucket
                .park_while(|| self.epoch().load(Ordering::Relaxed) == epoch),
            Some(tag) => self
                .bucket
                .park_tagged(tag, || self.epoch().load(Ordering::Relaxed) == epoch),
        }
        #[cfg(not(loom))]
        // The key is the address of this `Waiters`, part of a lock that
        // outlives every thread using it; `validate` is one atomic load.
        // SAFETY: our own key; `validate` neither panics nor calls parking_lot.
        unsafe {
            parking_lot_core::park(
                self.key(),
                || self.epoch().load(Ordering::Relaxed) == epoch,
                || {},
                |_, _| {},
                parking_lot_core::ParkToken(tag.unwrap_or(0)),
                None,
            );
        }
    }

    /// Wakes the threads parked on this lock with `tag`
    /// ([`wait_until_tagged`](Self::wait_until_tagged)); the others stay
    /// parked, and those registered but not yet parked re-check, as for
    /// [`wake_all`](Self::wake_all). Call it right after the state change
    /// (a SeqCst read-modify-write) that makes the waiters of `tag` ready.
    #[inline]
    pub fn wake_tagged(&self, tag: usize) {
        if self.anyone_registered() {
            self.wake_tagged_slow(tag);
        }
    }

    #[cold]
    fn wake_tagged_slow(&self, tag: usize) {
        self.bump_epoch();
        #[cfg(loom)]
        self.bucket.notify_tagged(tag);
        #[cfg(not(loom))]
        self.unpark_filter(|token| {
            if token.0 == tag {
                parking_lot_core::FilterOp::Unpark
            } else {
                parking_lot_core::FilterOp::Skip
            }
        });
    }

    /// Wakes every thread parked on this lock. Call it right after the state
    /// change, which must have been a SeqCst read-modify-write.
    #[inline]
    pub fn wake_all(&self) {
        if self.anyone_registered() {
            self.wake_all_slow();
        }
    }

    /// The wakers' check, right after their SeqCst state change: has a
    /// waiter registered?
    #[inline]
    fn anyone_registered(&self) -> bool {
        // loom models the SeqCst load below as Acquire; the fence gives the
        // model the store-load ordering the real build gets from C++20 SeqCst.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        // SeqCst: pairs with the waiter's SeqCst increment and fence
        // (store-load ordering after the caller's SeqCst RMW).
        self.count.load(Ordering::SeqCst) != 0
    }

    /// Wakes at most `n` of the threads parked on this lock, the longest
    /// parked first; the others stay parked. Call it right after the state
    /// change, as [`wake_all`](Self::wake_all). A thread that registered
    /// but has not parked yet does not park (the wake epoch moves, as in
    /// `wake_all`), and is not counted in `n`.
    ///
    /// The caller owns the rest: a thread left parked sleeps until the next
    /// wake of this `Waiters`. The intended use is a relay (GCR's idea,
    /// `crate::restricted`, applied to a wake-up): the waker wakes as many
    /// as can run, and each woken thread, once what it waited for is done,
    /// wakes one more (`wake_some(1)`), so that where threads outnumber the
    /// CPUs a change that releases many waiters makes only a few runnable
    /// at a time, and every one of them still wakes while the state holds.
    /// `n == 0` wakes nobody.
    #[inline]
    pub fn wake_some(&self, n: u32) {
        if n != 0 && self.anyone_registered() {
            self.wake_some_slow(n);
        }
    }

    #[cold]
    fn wake_some_slow(&self, n: u32) {
        self.bump_epoch();
        #[cfg(loom)]
        self.bucket.notify(n);
        #[cfg(not(loom))]
        {
            let mut left = n;
            self.unpark_filter(|_| {
                if left == 0 {
                    parking_lot_core::FilterOp::Stop
                } else {
                    left -= 1;
                    parking_lot_core::FilterOp::Unpark
                }
            });
        }
    }

    /// The wakers' epoch bump, before they unpark anybody.
    #[inline]
    fn bump_epoch(&self) {
        #[cfg(loom)]
        if !model::epochs() {
            return;
        }
        // Release RMW: orders the caller's state change before the bump, so
        // a waiter that reads the bumped epoch (Acquire) sees the change; an
        // RMW so that concurrent bumps are never lost.
        self.epoch().fetch_add(1, Ordering::Release);
    }

    /// Unparks the threads parked on this lock that `filter` picks, in the
    /// order they parked (`parking_lot_core::unpark_filter`).
    #[cfg(not(loom))]
    fn unpark_filter(
        &self,
        filter: impl FnMut(parking_lot_core::ParkToken) -> parking_lot_core::FilterOp,
    ) {
        // The key is our own lock's address, and the lock outlives its
        // users; the callers' filters and the token callback neither panic
        // nor call into parking_lot.
        // SAFETY: as just said.
        unsafe {
            parking_lot_core::unpark_filter(self.key(), filter, |_| {
                parking_lot_core::DEFAULT_UNPARK_TOKEN
            });
        }
    }

    #[cold]
    fn wake_all_slow(&self) {
        self.bump_epoch();
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
/// One waiter: a second thread waiting on the same latch is never parked
/// (its park finds the latch already `PARKED` and returns), so once its
/// backoff is spent it spins on a core until the latch opens, neither
/// yielding nor sleeping (found in review, 2026-11-28; no lock of the
/// workspace waits on another waiter's node).
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

    /// Like [`wait`](Self::wait), for a waiter queued behind others whose
    /// hand-offs it can watch: where the backoff would park, `moved()` is
    /// asked whether the queue ahead moved since it was last asked, and if
    /// it did, and this thread has a CPU of its own
    /// ([`may_restart_when_queue_moves`]), the backoff starts over instead. The waiter
    /// then parks only when the queue stalls (a holder that is slow or not
    /// running), not because many are ahead of it: with one backoff for the
    /// whole wait, a long queue on many cores outlasts the budget, waiters
    /// park, and every hand-off costs a futex wake-up. A waiter that shares
    /// its CPU waits as in `wait` (its spinning would take the CPU from the
    /// threads ahead). Inside a loom model the CPU counts as its own, so
    /// the models explore the restart.
    #[inline]
    pub fn wait_while_moving<W: WaitPolicy>(&self, mut moved: impl FnMut() -> bool) {
        let mut backoff = Backoff::<W>::new();
        while !self.is_open() {
            if backoff.should_park() && may_restart_when_queue_moves() && moved() {
                backoff = Backoff::new();
                continue;
            }
            if backoff.snooze() == Snooze::Park {
                self.park();
            }
        }
    }

    /// Like [`wait`](Self::wait), calling `retreat` once where the wait
    /// would leave a CPU that other threads are waiting for (see
    /// [`Waiters::wait_until_or_retreat`]).
    #[inline]
    pub fn wait_or_retreat<W: WaitPolicy>(&self, retreat: impl FnOnce()) {
        let mut backoff = Backoff::<W>::new();
        let mut retreat = Some(retreat);
        while !self.is_open() {
            match backoff.snooze_or_retreat(retreat.is_some()) {
                Snooze::Waited => {}
                Snooze::Park => self.park(),
                Snooze::Retreat => {
                    if let Some(r) = retreat.take() {
                        r();
                    }
                }
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

/// Which wait protocol a loom model runs (see the module docs).
#[cfg(loom)]
mod model {
    use core::cell::Cell;

    std::thread_local! {
        /// Set by the models of `Waiters` itself; loom runs a model's
        /// threads on the thread that calls `loom::model`.
        static EPOCHS: Cell<bool> = const { Cell::new(false) };
    }

    /// Whether the model runs the real build's epoch protocol (`true`) or
    /// the specification the lock models check against (`false`).
    pub(super) fn epochs() -> bool {
        EPOCHS.with(Cell::get)
    }

    /// Selects the protocol for the models this thread runs next.
    #[cfg(test)]
    pub(super) fn set_epochs(on: bool) {
        EPOCHS.with(|e| e.set(on));
    }
}

/// A loom model's parking-lot bucket: a mutex (the bucket lock) and a
/// condition variable (the sleeping queue). Untagged sleepers re-check
/// their condition at every notification (a model of `unpark_all` that
/// lets a woken thread sleep on while its condition holds); tagged ones
/// ([`Waiters::wait_until_tagged`]) are queued and sleep until a
/// notification takes them off the queue, as `unpark_filter` does, so
/// that a model sees a tagged wake that misses its thread.
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct ModelBucket {
    lock: loom::sync::Mutex<TaggedSleepers>,
    queue: loom::sync::Condvar,
}

/// The tagged sleepers of a [`ModelBucket`], in the order they parked.
#[cfg(loom)]
#[derive(Debug, Default)]
struct TaggedSleepers {
    next: u64,
    /// (sleeper id, tag).
    parked: std::vec::Vec<(u64, usize)>,
}

#[cfg(loom)]
impl ModelBucket {
    pub(crate) fn new() -> Self {
        ModelBucket {
            lock: loom::sync::Mutex::new(TaggedSleepers::default()),
            queue: loom::sync::Condvar::new(),
        }
    }

    /// Re-checks `blocked` under the bucket lock and, while it holds,
    /// sleeps with `tag` until a notification takes this sleeper off the
    /// queue (parking_lot_core's `validate`, then `park` with a token).
    pub(crate) fn park_tagged(&self, tag: usize, mut blocked: impl FnMut() -> bool) {
        let mut guard = self.lock.lock().unwrap();
        if !blocked() {
            return;
        }
        let id = guard.next;
        guard.next += 1;
        guard.parked.push((id, tag));
        while guard.parked.iter().any(|&(i, _)| i == id) {
            guard = self.queue.wait(guard).unwrap();
        }
    }

    /// Wakes the tagged sleepers with `tag` (`unpark_filter` on the token).
    pub(crate) fn notify_tagged(&self, tag: usize) {
        let mut guard = self.lock.lock().unwrap();
        guard.parked.retain(|&(_, t)| t != tag);
        self.queue.notify_all();
    }

    /// Re-checks `blocked` under the bucket lock and sleeps while it holds
    /// (parking_lot_core's `validate`, then sleep until unparked).
    pub(crate) fn park_while(&self, mut blocked: impl FnMut() -> bool) {
        let mut guard = self.lock.lock().unwrap();
        while blocked() {
            guard = self.queue.wait(guard).unwrap();
        }
    }

    pub(crate) fn notify_all(&self) {
        let mut guard = self.lock.lock().unwrap();
        guard.parked.clear();
        self.queue.notify_all();
    }

    /// Wakes at most `n` sleepers (`unpark_filter` stopping after `n`):
    /// the `n` longest parked tagged ones if there are any, untagged ones
    /// otherwise (the model does not mix the two kinds in one bucket).
    pub(crate) fn notify(&self, n: u32) {
        let mut guard = self.lock.lock().unwrap();
        if guard.parked.is_empty() {
            for _ in 0..n {
                self.queue.notify_one();
            }
        } else {
            let n = (n as usize).min(guard.parked.len());
            guard.parked.drain(..n);
            self.queue.notify_all();
        }
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
    fn a_wait_among_busy_threads_counts_as_sharing_the_cpu_and_retreats() {
        // Twice as many busy threads as CPUs: some yield of ours gives the
        // CPU to one of them.
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..2 * running_cpus())
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // Relaxed: a trigger only.
                    while !stop.load(Ordering::Relaxed) {
                        core::hint::spin_loop();
                    }
                })
            })
            .collect();
        // Up to 5 s of yields, not a fixed count: the scheduler may pick the
        // yielder again for a while when the busy threads have run more than
        // their share (EEVDF eligibility), and a loaded machine starts them
        // late.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let shared = loop {
            // A plain wait: spins out, then its first yield is measured.
            let mut wait = Backoff::<SpinYieldPark>::new();
            for _ in 0..=SpinYieldPark::SPIN_ROUNDS {
                assert_eq!(wait.snooze(), Snooze::Waited);
            }
            if cpu_shared_lately() {
                break true;
            }
            if std::time::Instant::now() >= deadline {
                break false;
            }
        };
        // Relaxed: a trigger only.
        stop.store(true, Ordering::Relaxed);
        for t in busy {
            t.join().unwrap();
        }
        assert!(
            shared,
            "5 s of waits among busy threads never yielded the CPU away"
        );
        // The backoff of a waiter with a claim now says to give it up where
        // it would yield, and a waiter without one yields.
        let mut b = Backoff::<SpinYieldPark>::new();
        let mut snoozes = 0;
        let first = loop {
            match b.snooze_or_retreat(true) {
                Snooze::Waited => snoozes += 1,
                other => break other,
            }
        };
        assert_eq!(first, Snooze::Retreat);
        assert_eq!(
            snoozes,
            SpinYieldPark::SPIN_ROUNDS,
            "retreated before spinning out"
        );
        assert_eq!(b.snooze_or_retreat(false), Snooze::Waited);
    }

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

    /// `ParkWhenShared`: past its first yield, a waiter on a CPU shared
    /// lately parks; on a CPU of its own it yields on as `SpinYieldPark`
    /// does, which never parks early.
    #[test]
    fn park_when_shared_parks_after_one_yield_on_a_shared_cpu() {
        let mut b = Backoff::<ParkWhenShared>::new();
        // The spin rounds and the first yield.
        for _ in 0..=ParkWhenShared::SPIN_ROUNDS {
            assert_eq!(b.snooze(), Snooze::Waited);
        }
        set_cpu_shared(true);
        assert!(b.should_park());
        assert_eq!(b.snooze(), Snooze::Park);
        set_cpu_shared(false);
        assert!(!b.should_park());
        for _ in 1..ParkWhenShared::YIELD_ROUNDS {
            assert_eq!(b.snooze(), Snooze::Waited);
        }
        assert_eq!(b.snooze(), Snooze::Park);

        let mut b = Backoff::<SpinYieldPark>::new();
        for _ in 0..=SpinYieldPark::SPIN_ROUNDS {
            assert_eq!(b.snooze(), Snooze::Waited);
        }
        set_cpu_shared(true);
        assert!(!b.should_park());
        assert_eq!(b.snooze(), Snooze::Waited);
        set_cpu_shared(false);
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

    /// Waits (up to 10 s, else fails) until `out` counts `n` woken threads,
    /// then 100 ms more for any thread woken beyond `n` to show; returns
    /// the count.
    fn count_once_woken(out: &crate::sync::AtomicU32, n: u32) -> u32 {
        use std::time::{Duration, Instant};
        let start = Instant::now();
        while out.load(Ordering::SeqCst) < n {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a woken thread never ran"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        out.load(Ordering::SeqCst)
    }

    /// `wake_some(n)` wakes at most `n` parked threads, the others stay
    /// parked until a later wake; a relay (each woken thread wakes one
    /// more) wakes them all. A `wake_some` that woke everybody fails the
    /// first count; a relay that lost a thread hangs the test (its join).
    #[test]
    fn wake_some_wakes_at_most_n_and_a_relay_wakes_every_waiter() {
        use std::time::Duration;
        const THREADS: u32 = 5;
        for relay in [false, true] {
            let go = Arc::new(AtomicBool::new(false));
            let out = Arc::new(crate::sync::AtomicU32::new(0));
            let waiters = Arc::new(Waiters::new());
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (go, out, w) = (go.clone(), out.clone(), waiters.clone());
                    std::thread::spawn(move || {
                        // Acquire: pairs with the SeqCst swap below.
                        w.wait_until::<SpinYieldPark>(|| go.load(Ordering::Acquire));
                        out.fetch_add(1, Ordering::SeqCst);
                        if relay {
                            w.wake_some(1);
                        }
                    })
                })
                .collect();
            // Every thread registered, then time for all of them to park
            // (a straggler that had not would see the epoch move and leave:
            // a false failure, on a machine that stalls it for a second).
            while waiters.count.load(Ordering::SeqCst) < THREADS {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_secs(1));
            go.swap(true, Ordering::SeqCst);
            let woken_by = |n: u32| count_once_woken(&out, n);
            if relay {
                waiters.wake_some(1);
                assert_eq!(woken_by(THREADS), THREADS);
            } else {
                waiters.wake_some(2);
                assert_eq!(woken_by(2), 2, "wake_some(2) woke more than 2");
                waiters.wake_some(0);
                waiters.wake_some(1);
                assert_eq!(woken_by(3), 3, "wake_some(1) woke more than 1");
                waiters.wake_all();
                assert_eq!(woken_by(THREADS), THREADS);
            }
            for h in handles {
                h.join().unwrap();
            }
        }
    }

    /// `wake_tagged(t)` wakes the threads parked with `t` and no other
    /// (PF-T's ticket hand-off). Each thread waits for a shared counter to
    /// reach its own tag; a `wake_tagged` that woke every thread, or that
    /// woke by another tag, fails a count; one that missed its thread hangs
    /// the join (the test's 10 s bound then fails it).
    #[test]
    fn wake_tagged_wakes_only_the_threads_parked_with_that_tag() {
        use std::time::Duration;
        const THREADS: usize = 4;
        let turn = Arc::new(crate::sync::AtomicUsize::new(0));
        let out = Arc::new(crate::sync::AtomicU32::new(0));
        let woke = Arc::new(crate::sync::AtomicUsize::new(0));
        let waiters = Arc::new(Waiters::new());
        let handles: Vec<_> = (1..=THREADS)
            .map(|tag| {
                let (turn, out, woke, w) =
                    (turn.clone(), out.clone(), woke.clone(), waiters.clone());
                std::thread::spawn(move || {
                    // Acquire: pairs with the SeqCst stores below.
                    w.wait_until_tagged::<SpinYieldPark>(tag, || {
                        woke.fetch_add(1, Ordering::Relaxed);
                        turn.load(Ordering::Acquire) >= tag
                    });
                    out.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        while waiters.count.load(Ordering::SeqCst) < THREADS as u32 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Time for every thread to park (see the `wake_some` test).
        std::thread::sleep(Duration::from_secs(1));
        let checks_parked = woke.load(Ordering::Relaxed);
        // Every thread's condition now holds; only tag 2's is woken.
        turn.store(THREADS, Ordering::SeqCst);
        let woken_by = |n: u32| count_once_woken(&out, n);
        waiters.wake_tagged(2);
        assert_eq!(woken_by(1), 1, "wake_tagged(2) woke another tag's thread");
        // Exactly one more check of a condition: tag 2's, after its wake.
        assert_eq!(woke.load(Ordering::Relaxed), checks_parked + 1);
        waiters.wake_tagged(THREADS + 7);
        assert_eq!(woken_by(1), 1, "a tag nobody parked with woke a thread");
        waiters.wake_tagged(4);
        assert_eq!(woken_by(2), 2);
        waiters.wake_all();
        assert_eq!(woken_by(THREADS as u32), THREADS as u32);
        for h in handles {
            h.join().unwrap();
        }
    }

    /// Regression (issue 14): `ready` used to run inside parking_lot's
    /// `validate` callback, where a panic aborts the process. It now runs
    /// before parking: the panic reaches the caller, the waiter count goes
    /// back to zero, and the `Waiters` keeps working.
    #[test]
    fn a_panicking_ready_unwinds_and_deregisters() {
        let waiters = Waiters::new();
        // Panic at the first call, during the spin, and at the re-check
        // made after registering (the call that used to run in `validate`).
        for panic_at in [Some(1u32), Some(5), None] {
            let mut calls = 0;
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                waiters.wait_until::<SpinYieldPark>(|| {
                    calls += 1;
                    // SeqCst: reads our own registration.
                    let registered = waiters.count.load(Ordering::SeqCst) != 0;
                    if Some(calls) == panic_at || (panic_at.is_none() && registered) {
                        panic!("ready panicked (expected by this test)");
                    }
                    false
                })
            }));
            assert!(outcome.is_err(), "the panic did not reach the caller");
            // SeqCst: a plain check after the fact.
            assert_eq!(
                waiters.count.load(Ordering::SeqCst),
                0,
                "a waiter whose ready panicked stayed registered"
            );
        }
        // The same `Waiters` still parks and wakes.
        let flag = Arc::new(crate::sync::AtomicBool::new(false));
        let waiters = Arc::new(waiters);
        let (f, w) = (flag.clone(), waiters.clone());
        let h = std::thread::spawn(move || {
            w.wait_until::<SpinYieldPark>(|| f.load(Ordering::Acquire));
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SeqCst RMW: the state change of the wake protocol.
        flag.swap(true, Ordering::SeqCst);
        waiters.wake_all();
        h.join().unwrap();
    }

    /// `ready` may call into parking_lot (it used to run under a bucket lock
    /// of parking_lot_core, where that is forbidden): here it takes and
    /// releases a contended parking_lot mutex while the waiter parks.
    #[test]
    fn ready_may_use_parking_lot() {
        let state = Arc::new(crate::sync::AtomicU32::new(0));
        let mutex = Arc::new(parking_lot::Mutex::new(0u64));
        let waiters = Arc::new(Waiters::new());
        let (s, m, w) = (state.clone(), mutex.clone(), waiters.clone());
        let h = std::thread::spawn(move || {
            w.wait_until::<SpinYieldPark>(|| {
                *m.lock() += 1;
                s.load(Ordering::Acquire) != 0
            })
        });
        for _ in 0..200 {
            let g = mutex.lock();
            std::thread::sleep(std::time::Duration::from_micros(50));
            drop(g);
        }
        state.fetch_add(1, Ordering::SeqCst);
        waiters.wake_all();
        h.join().unwrap();
        assert!(*mutex.lock() > 0);
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

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{AtomicBool, thread};
    use loom::sync::Arc;

    /// The wake protocol alone: a waiter parks until a flag is set, a waker
    /// sets it (SeqCst RMW) and calls `wake_all`. A lost wake-up (e.g. a
    /// waiter that sleeps without checking the wake epoch under the bucket
    /// lock) is a loom deadlock.
    #[test]
    fn waiters_never_lose_a_wake_up() {
        model::set_epochs(true);
        loom::model(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let waiters = Arc::new(Waiters::new());
            let waiter = {
                let (flag, waiters) = (flag.clone(), waiters.clone());
                thread::spawn(move || {
                    // Acquire: pairs with the waker's SeqCst swap.
                    waiters.wait_until::<DefaultWait>(|| flag.load(Ordering::Acquire));
                })
            };
            // The waker is a thread of its own: the model's main thread
            // built `waiters`, and loom never lets a thread re-read, after
            // its `yield_now`, a store it saw before it (the count's 0).
            let waker = thread::spawn(move || {
                yield_now();
                // SeqCst RMW: the state change `wake_all` requires.
                flag.swap(true, Ordering::SeqCst);
                waiters.wake_all();
            });
            waiter.join().unwrap();
            waker.join().unwrap();
        });
    }

    /// A relay: the waker sets the flag and wakes one waiter
    /// (`wake_some(1)`); each waiter, once past its wait, wakes one more.
    /// Whether a waiter is parked, registering or still checking when the
    /// wake comes, a waiter left asleep is a deadlock.
    #[test]
    fn waiters_relay_wakes_every_waiter() {
        model::set_epochs(true);
        loom::model(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let waiters = Arc::new(Waiters::new());
            let spawn = || {
                let (flag, waiters) = (flag.clone(), waiters.clone());
                thread::spawn(move || {
                    // Acquire: pairs with the waker's SeqCst swap.
                    waiters.wait_until::<DefaultWait>(|| flag.load(Ordering::Acquire));
                    waiters.wake_some(1);
                })
            };
            let (a, b) = (spawn(), spawn());
            // The waker is a thread of its own (see `waiters_never_lose_a_wake_up`).
            let waker = thread::spawn(move || {
                yield_now();
                // SeqCst RMW: the state change `wake_some` requires.
                flag.swap(true, Ordering::SeqCst);
                waiters.wake_some(1);
            });
            a.join().unwrap();
            b.join().unwrap();
            waker.join().unwrap();
        });
    }

    /// Two waiters, two state changes: the second waiter waits for the
    /// second change, so it may register, be woken by the first bump, find
    /// itself not ready and park again; a bump it misses is a deadlock.
    #[test]
    fn waiters_two_waiters_two_wakes() {
        model::set_epochs(true);
        loom::model(|| {
            let state = Arc::new(crate::sync::AtomicU32::new(0));
            let waiters = Arc::new(Waiters::new());
            let spawn = |target: u32| {
                let (state, waiters) = (state.clone(), waiters.clone());
                thread::spawn(move || {
                    // Acquire: pairs with the SeqCst increments.
                    waiters.wait_until::<DefaultWait>(|| state.load(Ordering::Acquire) >= target);
                })
            };
            let (a, b) = (spawn(1), spawn(2));
            yield_now();
            for _ in 0..2 {
                // SeqCst RMW: the state change `wake_all` requires.
                state.fetch_add(1, Ordering::SeqCst);
                waiters.wake_all();
            }
            a.join().unwrap();
            b.join().unwrap();
        });
    }
}
