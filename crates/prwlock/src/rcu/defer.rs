//! Deferred reclamation ([`RcuDomain::defer`]): callbacks queued per
//! domain and run in batches after a grace period.
//!
//! The queue is one mutex-protected vector per domain. Every
//! [`RcuDomain::synchronize`] takes the whole queue before its grace
//! period and runs it afterwards, on the calling thread ("reclaimed by
//! whoever calls `synchronize`"); a `defer` that brings the queue to the
//! batch size calls `synchronize` itself (unless it runs inside a read
//! section or inside a callback, below). So the memory held back is
//! bounded by about one batch per thread: the queue (the batch size, plus
//! one callback per thread deferring at that moment, plus whatever is
//! deferred inside read sections, whose callers cannot wait for a grace
//! period and leave the batch to the next caller), and the batch each
//! thread inside `synchronize` took and holds until its grace period ends
//! (a reader that sleeps in its section makes every such thread hold one). `RcuCell` retires its old values here without boxing a
//! closure. The FCP paper's update throughput peaks below a batch of 100
//! (Fig. 22), where a grace period costs a few microseconds; here one
//! costs up to tens of microseconds on 2 cores with membarrier (an idle
//! registered thread forces one), and update throughput kept rising to a
//! batch of 1024 (`benches/rcu.rs`, `docs/rcu.md`): [`DEFAULT_BATCH`] is
//! the knee of that curve, 256.
//!
//! A callback that defers in turn (a destructor that retires the tail of a
//! chain with `defer_drop`, the usual way to free a linked structure
//! readers may still walk) never reclaims inside the callback: a batch run
//! inside a callback of a batch, once per link, grew the stack with the
//! chain until it overflowed (a 20 000-node chain on a 512 KiB stack). It
//! only queues, notes the domain if its queue reached the batch size, and
//! the outermost `synchronize` of the thread (the one that ran the first
//! batch) reclaims the noted domains in a loop once its batch has run: the
//! chain is freed one batch per grace period, at a constant stack depth.
//! The loop goes on while the batches it runs fill a queue again, for at
//! most [`DRAIN_ROUNDS`] grace periods per call: each round takes the
//! whole queue, other threads' deferrals included, whose destructors may
//! defer in turn, and a callback that defers itself (with batches of one)
//! would otherwise keep the call from ever returning. What is left stays
//! queued, above the batch size, for the domain's next reclaiming call (a
//! `defer`, `synchronize` or `barrier` outside a callback); a long chain
//! is freed over several calls. A thread notes up to [`NOTED_DOMAINS`]
//! domains at once; a callback that fills the queue of one more leaves it
//! the same way. If a callback panics, the loop does not run (the panic
//! resumes first) and the noted domains wait for the thread's next
//! outermost `synchronize`, which drains them then. (`synchronize` and
//! `barrier` called from inside a callback still run a batch there: what
//! is queued then.)
//!
//! While a thread unwinds from a panic, its `defer` (and an `RcuCell`
//! update, or a [`Retired`](super::Retired) dropped by the unwinding)
//! that fills the batch only queues: reclaiming there would resume a
//! callback's panic inside the unwinding, which aborts the process. The
//! next reclaiming call runs the batch.
//!
//! Callbacks run on whichever thread reclaims: a caller of `synchronize`
//! or `barrier`, or of a `defer` or `RcuCell` update that filled the
//! batch, which may be a thread in its thread-local teardown (a destructor
//! there that updates a cell). A callback must therefore not rely on the
//! thread-locals of the thread it runs on (`LocalKey::try_with`, not
//! `with`, if it must), as with `call_rcu`, whose callbacks run on another
//! thread. That thread may also be inside read sections of *other*
//! domains (and locks of its own): a callback that calls `synchronize` or
//! `barrier` on another domain then panics if the reclaiming thread is in
//! a section of that domain, and can deadlock with a thread that waits,
//! inside a section of that domain, for this batch (its `barrier`). Keep
//! callbacks to freeing memory; a callback that must wait for another
//! domain's grace period should `defer` on that domain instead.
//!
//! Drop order: the callbacks of one batch run in the order they were
//! deferred; batches taken by different threads may run at the same time,
//! each on its taker's thread. Nothing is kept per thread but the noted
//! domains (addresses of `'static` domains), so a thread's exit leaves
//! nothing behind; at process
//! exit, callbacks still queued in a `static` domain stay reachable from
//! it and do not run (call [`RcuDomain::barrier`] before returning from
//! `main` if they must). If a callback panics, the rest of its batch still
//! runs (other threads' callbacks among them), and then the first panic of
//! the batch propagates to the caller that reclaimed, which may be any
//! caller of `synchronize`, `barrier`, `defer` or an `RcuCell` update
//! (their "# Panics"); a later panic of the same batch is reported by the
//! panic hook and then dropped.

use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::RcuDomain;

/// The default batch size (see the module docs and `docs/rcu.md`).
pub const DEFAULT_BATCH: usize = 256;

/// A deferred callback: a boxed closure, or (for `RcuCell`'s retired
/// values, the common case) a pointer and the function that drops it, with
/// no allocation.
pub(super) enum Callback {
    Boxed(Box<dyn FnOnce() + Send>),
    Drop(*mut (), unsafe fn(*mut ())),
}

// SAFETY: `Drop` is only built by `defer_arc_drop` from an `Arc<T>` with
// `T: Send + Sync`, whose last drop may run on any thread.
unsafe impl Send for Callback {}

impl Callback {
    fn run(self) {
        // Our `Drop` must not run after this: the value is consumed here.
        let this = core::mem::ManuallyDrop::new(self);
        match &*this {
            Callback::Boxed(f) => {
                // `this` is never used again, so the box is moved out once.
                // SAFETY: a valid box, read once; its old place is forgotten.
                let f = unsafe { core::ptr::read(f) };
                f()
            }
            // The pair came from `defer_arc_drop`: `f` drops the `Arc`
            // that `p` was made from.
            // It runs once: `self` is consumed, its destructor never runs.
            // SAFETY: so the call is sound.
            Callback::Drop(p, f) => unsafe { f(*p) },
        }
    }
}

impl Drop for Callback {
    fn drop(&mut self) {
        // A `Drop` pair dropped without running (a batch abandoned after a
        // panicking callback) still frees its value.
        if let Callback::Drop(p, f) = *self {
            // SAFETY: as in `run`, which never lets this destructor run.
            unsafe { f(p) }
        }
    }
}

/// A domain's deferred callbacks.
pub(super) struct Queue {
    /// parking_lot's mutex rather than std's: it is compiled with the
    /// crate, so ThreadSanitizer (`scripts/tsan`) sees it order the queue;
    /// std's is precompiled and invisible to it. (Pushes and takes are
    /// short and rare next to a grace period.)
    items: Mutex<Items>,
    /// Signalled (under `items`) when a batch has run.
    batch_ran: Condvar,
    /// `items.queued.len()`, readable without the lock (statistics).
    len: AtomicUsize,
    batch: AtomicUsize,
}

/// What `Queue::items` guards.
struct Items {
    queued: Vec<Callback>,
    /// The ticket of the next batch taken.
    next_ticket: u64,
    /// Tickets of the batches taken whose callbacks have not all run. A
    /// `barrier` waits for the ones below the next ticket it reads, not
    /// for the count to reach zero: batches taken after its call (threads
    /// that keep deferring) cannot hold it up.
    running: Vec<u64>,
}

std::thread_local! {
    /// Batches this thread is running (a callback may reclaim in turn).
    /// `const` and without a destructor: readable during thread-local
    /// teardown, where destructors may defer.
    static RUNNING_BATCHES: Cell<u32> = const { Cell::new(0) };
}

/// How many domains a thread notes for its outermost `synchronize` to
/// reclaim (see the module docs).
pub const NOTED_DOMAINS: usize = 8;

/// At most this many grace periods, each with its batch, in the loop of one
/// outermost `synchronize` that reclaims what its callbacks deferred (see
/// the module docs).
pub const DRAIN_ROUNDS: usize = 64;

// std's thread-locals, not loom's, as `RUNNING_BATCHES`: no loom model
// defers (a model's threads would share them, all running on one OS
// thread).
std::thread_local! {
    /// Domains whose queue a callback of this thread brought to the batch
    /// size (addresses of `'static` domains; 0: free). `const` and without
    /// a destructor, as `RUNNING_BATCHES`.
    static NOTED: Cell<[usize; NOTED_DOMAINS]> = const { Cell::new([0; NOTED_DOMAINS]) };
    /// This thread is in `drain_noted`'s loop.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running a batch's callbacks.
fn in_callback() -> bool {
    RUNNING_BATCHES.with(Cell::get) != 0
}

/// A callback brought `domain`'s queue to the batch size: leave it to the
/// thread's outermost `synchronize` (`drain_noted`), or, with every entry
/// taken, to the domain's next reclaiming call.
fn note_filled(domain: &'static RcuDomain) {
    let addr = domain as *const RcuDomain as usize;
    NOTED.with(|noted| {
        let mut list = noted.get();
        if list.contains(&addr) {
            return;
        }
        if let Some(free) = list.iter_mut().find(|a| **a == 0) {
            *free = addr;
            noted.set(list);
        }
    });
}

/// Takes one noted domain.
fn take_noted() -> Option<&'static RcuDomain> {
    NOTED.with(|noted| {
        let mut list = noted.get();
        let entry = list.iter_mut().find(|a| **a != 0)?;
        let addr = core::mem::take(entry);
        noted.set(list);
        // SAFETY: only `note_filled` writes entries, from `&'static` domains.
        Some(unsafe { &*(addr as *const RcuDomain) })
    })
}

/// After the outermost `synchronize` of the thread has run its batch:
/// reclaims, in a loop, the domains its callbacks (and the callbacks of
/// the batches this runs) filled (see the module docs). Nothing inside a
/// callback or inside this loop already.
pub(super) fn drain_noted() {
    if in_callback() || DRAINING.with(Cell::get) {
        return;
    }
    /// Leaves the loop, unwinding included.
    struct Draining;
    impl Drop for Draining {
        fn drop(&mut self) {
            DRAINING.with(|d| d.set(false));
        }
    }
    DRAINING.with(|d| d.set(true));
    let _draining = Draining;
    let mut rounds = 0;
    while let Some(domain) = take_noted() {
        if rounds == DRAIN_ROUNDS {
            // The rest is left queued (module docs).
            while take_noted().is_some() {}
            return;
        }
        // Not inside a read section of that domain (it would wait for
        // itself): left queued, as a `defer` there leaves it.
        if domain.deferred.len() >= domain.batch_size() && !domain.in_read_section() {
            domain.synchronize();
            rounds += 1;
        }
    }
}

impl core::fmt::Debug for Queue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Queue")
            .field("len", &self.len())
            .field("batch", &self.batch.load(Ordering::Relaxed))
            .finish()
    }
}

impl Queue {
    pub(super) const fn new() -> Self {
        Queue {
            items: Mutex::new(Items {
                queued: Vec::new(),
                next_ticket: 0,
                running: Vec::new(),
            }),
            batch_ran: Condvar::new(),
            len: AtomicUsize::new(0),
            batch: AtomicUsize::new(DEFAULT_BATCH),
        }
    }

    pub(super) fn len(&self) -> usize {
        // Relaxed: a hint (an empty queue skips the lock) and a statistic;
        // whoever acts on the queue reads it under the lock.
        self.len.load(Ordering::Relaxed)
    }

    /// Queues `f`; whether the queue reached the batch size.
    fn push(&self, f: Callback) -> bool {
        let mut items = self.items.lock();
        items.queued.push(f);
        let n = items.queued.len();
        // Relaxed: under the lock.
        self.len.store(n, Ordering::Relaxed);
        n >= self.batch.load(Ordering::Relaxed)
    }

    /// Takes every queued callback; a non-empty batch counts as running
    /// until the returned token drops.
    pub(super) fn take(&self) -> (Vec<Callback>, InFlight<'_>) {
        // Every `synchronize` comes here: an empty queue costs no lock (a
        // callback queued meanwhile waits for the next caller, as one
        // queued just after the lock would).
        if self.len() == 0 {
            return (Vec::new(), InFlight(self, None));
        }
        let mut items = self.items.lock();
        let batch = core::mem::take(&mut items.queued);
        let ticket = (!batch.is_empty()).then(|| {
            let t = items.next_ticket;
            items.next_ticket += 1;
            items.running.push(t);
            t
        });
        // Relaxed: under the lock.
        self.len.store(0, Ordering::Relaxed);
        drop(items);
        (batch, InFlight(self, ticket))
    }

    /// Waits until every batch taken before the call has run.
    fn wait_taken_before(&self) {
        let mut items = self.items.lock();
        let mark = items.next_ticket;
        // The lock orders the batches' callbacks (their token's drop
        // takes it) before our return.
        while items.running.iter().any(|&t| t < mark) {
            self.batch_ran.wait(&mut items);
        }
    }
}

/// Runs a batch in order (after its grace period). If a callback panics,
/// the rest still run; then the first panic resumes.
pub(super) fn run(batch: Vec<Callback>) {
    if batch.is_empty() {
        return;
    }
    /// Counts the thread out of the batch.
    struct Running;
    impl Drop for Running {
        fn drop(&mut self) {
            RUNNING_BATCHES.with(|n| n.set(n.get() - 1));
        }
    }
    RUNNING_BATCHES.with(|n| n.set(n.get() + 1));
    let running = Running;
    let mut first_panic = None;
    for f in batch {
        // Unwind safety: a callback owns what it touches (it is `Send +
        // 'static`), and nothing of ours is mid-update across the call.
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.run())) {
            first_panic.get_or_insert(panic);
        }
    }
    drop(running);
    if let Some(panic) = first_panic {
        std::panic::resume_unwind(panic);
    }
}

/// A batch taken (its ticket; none for an empty one): running until
/// dropped (unwinding included).
pub(super) struct InFlight<'a>(&'a Queue, Option<u64>);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.1 {
            let mut items = self.0.items.lock();
            if let Some(i) = items.running.iter().position(|&t| t == ticket) {
                items.running.swap_remove(i);
            }
            drop(items);
            self.0.batch_ran.notify_all();
        }
    }
}

impl RcuDomain {
    /// Runs `f` after a grace period: once every read section of this
    /// domain that began before the call has ended (`call_rcu`). Callbacks
    /// are batched ([`set_batch_size`](Self::set_batch_size)) and run by
    /// whoever calls [`synchronize`](Self::synchronize) or
    /// [`barrier`](Self::barrier) next, on that thread; the call that
    /// fills a batch runs `synchronize` itself (not inside a callback: the
    /// `defer` module docs), the others return at once.
    /// See the `defer` module docs for the memory bound and drop order.
    ///
    /// Inside a read section of this domain the callback is only queued
    /// (the caller cannot wait for a grace period); a later call outside
    /// one, or [`barrier`](Self::barrier), runs it. So it is while the
    /// thread unwinds from a panic (module docs).
    ///
    /// # Panics
    /// If the batch this call runs has a callback that panics (the first
    /// such panic resumes here once the batch has run).
    pub fn defer(&'static self, f: impl FnOnce() + Send + 'static) {
        self.defer_callback(Callback::Boxed(Box::new(f)));
    }

    /// Drops `value` (one strong count) after a grace period, without
    /// boxing a closure (what `RcuCell` retires).
    pub(super) fn defer_arc_drop<T: Send + Sync + 'static>(&'static self, value: Arc<T>) {
        /// Drops the `Arc` behind `p`.
        ///
        /// # Safety
        /// `p` came from `Arc::<T>::into_raw`, and is dropped once.
        unsafe fn drop_arc<T>(p: *mut ()) {
            // SAFETY: the caller's contract.
            drop(unsafe { Arc::from_raw(p.cast_const().cast::<T>()) });
        }
        let p = Arc::into_raw(value).cast_mut().cast::<()>();
        self.defer_callback(Callback::Drop(p, drop_arc::<T>));
    }

    fn defer_callback(&'static self, f: Callback) {
        if self.deferred.push(f) && !self.in_read_section() {
            if in_callback() {
                // Not here: a batch per level of the stack (module docs).
                note_filled(self);
            } else if !std::thread::panicking() {
                self.reclaim();
            }
            // While the thread unwinds (a destructor that retires a value,
            // a `Retired` dropped by the unwinding), only queued: a
            // callback's panic resumed from here would be a panic during a
            // panic, which aborts the process (module docs).
        }
    }

    /// Drops `value` after a grace period ([`defer`](Self::defer)); the
    /// usual way to retire what a reader may still see.
    pub fn defer_drop<T: Send + 'static>(&'static self, value: T) {
        self.defer(move || drop(value))
    }

    /// Runs every callback deferred before the call, after a grace period
    /// (`rcu_barrier`): the queued ones here, and it waits for the batches
    /// other threads took before the call to finish running (not for those
    /// taken after it).
    ///
    /// Called from a deferred callback of any domain (or a destructor one
    /// runs, e.g. of a value an `RcuCell` retired), it runs what is queued
    /// but does not wait for batches in flight, this domain's included: its
    /// own batch may be among them, and two callbacks (of one domain or of
    /// two) waiting for each other's batches would deadlock.
    ///
    /// # Panics
    /// Inside a read section of this domain (see `synchronize`), or if a
    /// callback panics.
    pub fn barrier(&'static self) {
        assert!(
            !self.in_read_section(),
            "prwlock::rcu: barrier inside a read section of the same domain would wait for itself"
        );
        self.reclaim();
        if !in_callback() {
            // A batch another thread took before us may still be running.
            self.deferred.wait_taken_before();
        }
    }

    /// The batch size: a `defer` that brings the queue to it reclaims.
    pub fn batch_size(&self) -> usize {
        // Relaxed: a setting.
        self.deferred.batch.load(Ordering::Relaxed)
    }

    /// Sets the batch size ([`DEFAULT_BATCH`] until then); 1 reclaims at
    /// every `defer`.
    ///
    /// # Panics
    /// If `batch` is 0.
    pub fn set_batch_size(&self, batch: usize) {
        assert!(batch >= 1, "prwlock::rcu: a batch size must be at least 1");
        // Relaxed: a setting.
        self.deferred.batch.store(batch, Ordering::Relaxed);
    }

    /// Takes the queued callbacks, waits for a grace period, runs them
    /// (nothing when nothing is queued).
    fn reclaim(&'static self) {
        if self.deferred.len() != 0 {
            self.synchronize();
        }
    }
}
