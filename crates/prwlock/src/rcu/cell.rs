//! [`RcuCell`]: an `Arc<T>` that readers load inside an RCU section without
//! touching its reference count, in `arc_swap::ArcSwap`'s shape.
//!
//! The cell owns one strong count of the `Arc` it points to. Readers
//! dereference the raw pointer inside a section ([`RcuCell::load`],
//! [`RcuCell::get`]); an update swaps the pointer and hands the old count
//! to [`RcuDomain::defer_drop`], so the old value is dropped (if nobody
//! else holds an `Arc` of it) only after every section that could have
//! loaded it has ended.
//!
//! Moving from arc-swap: `ArcSwap::from_pointee` / `new` / `load` /
//! `load_full` / `store` / `swap` / `rcu` / `compare_and_swap` are here
//! with the same meaning; `load()`'s guard derefs to `T` as arc-swap's
//! does (through its `Arc`). The guard borrows the cell and stays on its
//! thread; `load_full` gives an `Arc<T>` to keep or send.

use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use std::sync::Arc;

use super::{RcuDomain, RcuReadGuard};
use crate::sync::{AtomicPtr, Ordering};

/// A shared `Arc<T>` for read-mostly data: loads cost a read section (no
/// atomic read-modify-write, no fence), updates defer the old value's drop
/// past a grace period of the cell's [`RcuDomain`].
///
/// # Guards are sections
///
/// One difference to watch when moving: a guard is a read section, and
/// sections nest. Reassigning a guard (`cur = cell.load()` in a loop)
/// takes the new guard before the old one drops, so the thread never
/// leaves its section. Every grace period of the domain then waits until
/// the thread lets go: a `synchronize`, a `barrier`, and the `store` or
/// `swap` that fills a batch of retired values (with [`new`](Self::new),
/// those of the global domain, which every such cell shares). An arc-swap
/// guard held that way only pins one value. Drop the old guard first
/// (`drop(cur); cur = cell.load();`), or keep an `Arc` from
/// [`load_full`](Self::load_full). Found in a new user's trial: a reader
/// refreshing its guard every 10 µs stopped a writer of 1000 `store`s at
/// the 256th for as long as the reader ran (3 s; 62 µs for all 1000 with
/// arc-swap).
///
/// A thread keeps one domain's record at hand. Loads that alternate
/// between cells of two domains take the slower lookup at each switch
/// (7.1 to 7.7 ns a load in that trial, against 1.1 to 1.8 ns for one
/// domain and 4.4 to 4.7 ns for `ArcSwap::load`): keep the cells a thread
/// reads together in one domain.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use prwlock::rcu::RcuCell;
///
/// let cell = RcuCell::from_pointee(1u64);
/// assert_eq!(*cell.load(), 1);
/// cell.store(Arc::new(2));
/// let previous = cell.compare_and_swap(&cell.load_full(), Arc::new(3));
/// assert_eq!(*previous, 2);
/// assert_eq!(*cell.load(), 3);
/// ```
///
/// A loaded value cannot outlive the cell, nor move to another thread
/// (use `load_full` for that):
///
/// ```compile_fail
/// let cell = prwlock::rcu::RcuCell::from_pointee(1u64);
/// let v = cell.load();
/// drop(cell);
/// assert_eq!(*v, 1);
/// ```
///
/// ```compile_fail
/// fn assert_send<T: Send>(_: T) {}
/// let cell = prwlock::rcu::RcuCell::from_pointee(1u64);
/// assert_send(cell.load());
/// ```
pub struct RcuCell<T> {
    /// `Arc::into_raw` of the current value; the cell owns one count.
    ptr: AtomicPtr<T>,
    domain: &'static RcuDomain,
    _owns: PhantomData<Arc<T>>,
}

/// A loaded value of an [`RcuCell`]: derefs to `T` until it drops, and
/// holds a read section of the cell's domain meanwhile.
pub struct RcuRef<'a, T> {
    value: &'a T,
    _section: RcuReadGuard,
}

impl<T> Deref for RcuRef<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for RcuRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T> RcuCell<T> {
    /// A cell holding `value`, in the global domain.
    pub fn new(value: Arc<T>) -> Self {
        Self::new_in(value, RcuDomain::global())
    }

    /// A cell holding `value`, in `domain`.
    pub fn new_in(value: Arc<T>, domain: &'static RcuDomain) -> Self {
        RcuCell {
            ptr: AtomicPtr::new(Arc::into_raw(value).cast_mut()),
            domain,
            _owns: PhantomData,
        }
    }

    /// `RcuCell::new(Arc::new(value))`.
    pub fn from_pointee(value: T) -> Self {
        Self::new(Arc::new(value))
    }

    /// `RcuCell::new_in(Arc::new(value), domain)`.
    pub fn from_pointee_in(value: T, domain: &'static RcuDomain) -> Self {
        Self::new_in(Arc::new(value), domain)
    }

    /// The domain whose grace periods retire this cell's old values.
    pub fn domain(&self) -> &'static RcuDomain {
        self.domain
    }

    /// The current value, inside a new read section (nested if the thread
    /// is in one already). A guard plus one dereference; no atomic RMW.
    ///
    /// The section lasts until the guard drops: `cur = cell.load()` in a
    /// loop nests a new section inside the old one each time and never
    /// leaves it, which holds back every update of the domain ([`RcuCell`],
    /// "Guards are sections"). Drop the old guard before loading again.
    #[inline]
    pub fn load(&self) -> RcuRef<'_, T> {
        let section = self.domain.read();
        // The section keeps the value alive: an update defers the drop of
        // the count it replaced past every section that could load it.
        // SAFETY: so the pointer is valid until `section` drops.
        let value = unsafe { &*self.current() };
        RcuRef {
            value,
            _section: section,
        }
    }

    /// The current value inside a section the caller holds: several cells
    /// of one domain read in one section (a guard per lookup is cheap, but
    /// this is cheaper still).
    ///
    /// # Panics
    /// If `section` belongs to another domain than the cell's.
    #[inline]
    pub fn get<'a>(&'a self, section: &'a RcuReadGuard) -> &'a T {
        assert!(
            core::ptr::eq(section.domain(), self.domain),
            "prwlock::rcu: RcuCell::get with a section of another domain"
        );
        // SAFETY: as in `load`; the result borrows the section.
        unsafe { &*self.current() }
    }

    /// A new strong reference to the current value.
    pub fn load_full(&self) -> Arc<T> {
        let _section = self.domain.read();
        let p = self.current();
        // The cell's own count keeps the value alive during the section.
        // SAFETY: `p` came from `Arc::into_raw` and is alive (above).
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    #[inline(always)]
    fn current(&self) -> *const T {
        // Acquire: pairs with the Release of the update that published the
        // pointer, so the value's contents are visible.
        self.ptr.load(Ordering::Acquire)
    }
}

impl<T: Send + Sync + 'static> RcuCell<T> {
    /// Replaces the value; the old one is dropped after a grace period.
    ///
    /// Reclamation runs on updating threads: the update that brings the
    /// domain's queue to its batch size ([`RcuDomain::set_batch_size`])
    /// runs a grace period and the batch. An update made inside a read
    /// section of the cell's domain (while holding a `load()` guard, say)
    /// only queues the old value, since it cannot wait for the grace
    /// period: if every update is made that way, nothing is reclaimed and
    /// the queue grows until a `defer`, `synchronize` or `barrier` of the
    /// domain outside a section. Read with `load_full` (or drop the guard)
    /// before updating from a loaded value.
    ///
    /// # Panics
    /// If a callback of the batch it runs panics (perhaps one that another
    /// thread deferred: [`RcuDomain::defer`]), after the rest of the batch
    /// has run.
    pub fn store(&self, value: Arc<T>) {
        let old = self.exchange(value);
        self.retire(old);
    }

    /// Replaces the value and returns the old one (a new reference: the
    /// cell's own is dropped after a grace period, so readers still in a
    /// section keep seeing a live value whatever the caller does with it).
    /// Reclaims as [`store`](Self::store) does.
    ///
    /// # Panics
    /// As `store`.
    pub fn swap(&self, value: Arc<T>) -> Arc<T> {
        let old = self.exchange(value);
        // The cell's count on `old` is still held (retired below, after a
        // grace period).
        // SAFETY: so `old`, from `Arc::into_raw`, is alive.
        let previous = unsafe {
            Arc::increment_strong_count(old);
            Arc::from_raw(old)
        };
        self.retire(old);
        previous
    }

    /// Stores `new` if the cell still holds `current` (pointer equality),
    /// and returns the value found either way (arc-swap's
    /// `compare_and_swap`): the swap happened iff
    /// `Arc::ptr_eq(&returned, current)`. On failure `new` is dropped.
    /// Reclaims as [`store`](Self::store) does.
    ///
    /// # Panics
    /// As `store`.
    pub fn compare_and_swap(&self, current: &Arc<T>, new: Arc<T>) -> Arc<T> {
        let expected = Arc::as_ptr(current).cast_mut();
        let fresh = Arc::into_raw(new).cast_mut();
        // AcqRel on success: Release publishes `new`'s contents, Acquire
        // reads the old value's (as `current`). Acquire on failure: we
        // return a reference to the value found.
        let section = self.domain.read();
        match self
            .ptr
            .compare_exchange(expected, fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(old) => {
                drop(section);
                // SAFETY: as in `swap`.
                let previous = unsafe {
                    Arc::increment_strong_count(old);
                    Arc::from_raw(old)
                };
                self.retire(old);
                previous
            }
            Err(found) => {
                // `found` is alive while our section lasts (see `load`).
                // SAFETY: from `Arc::into_raw`, alive.
                let previous = unsafe {
                    Arc::increment_strong_count(found);
                    Arc::from_raw(found)
                };
                drop(section);
                // SAFETY: `fresh` was never published; we own its count.
                drop(unsafe { Arc::from_raw(fresh) });
                previous
            }
        }
    }

    /// Updates the value with `f` in a compare-and-swap loop (arc-swap's
    /// `rcu`): `f` may run more than once under contention, and gets the
    /// current value each time. Returns the value replaced. Reclaims as
    /// [`store`](Self::store) does.
    ///
    /// # Panics
    /// As `store`, or if `f` panics.
    pub fn rcu<R, F>(&self, mut f: F) -> Arc<T>
    where
        F: FnMut(&Arc<T>) -> R,
        R: Into<Arc<T>>,
    {
        let mut current = self.load_full();
        loop {
            let new = f(&current).into();
            let previous = self.compare_and_swap(&current, new);
            if Arc::ptr_eq(&previous, &current) {
                return previous;
            }
            current = previous;
        }
    }

    fn exchange(&self, value: Arc<T>) -> *mut T {
        // AcqRel: Release publishes the new value's contents to readers
        // (Acquire in `current`); Acquire makes the old one's ours to drop.
        self.ptr
            .swap(Arc::into_raw(value).cast_mut(), Ordering::AcqRel)
    }

    /// Replaces the value and returns the old one as a [`Retired`], which
    /// hands it to the domain (drops it after a grace period) when it is
    /// dropped. For updates made under a lock of the caller's: `store`
    /// may run a grace period and a batch of deferred callbacks on the
    /// calling thread (once per batch), and while a lock is held that
    /// stalls every thread waiting for it; drop the `Retired` after
    /// releasing the lock instead.
    pub fn replace(&self, value: Arc<T>) -> Retired<T> {
        Retired {
            old: self.exchange(value),
            domain: self.domain,
        }
    }

    /// Drops the cell's count on `old` (swapped out, so ours) after a
    /// grace period.
    fn retire(&self, old: *mut T) {
        drop(Retired {
            old,
            domain: self.domain,
        });
    }
}

/// A value replaced in an [`RcuCell`] ([`RcuCell::replace`]): dropped
/// after a grace period once this is dropped. Readers may still see it
/// until then, so it gives no access to the value.
///
/// # Panics
/// Dropping it defers the value's drop, which may fill the domain's batch
/// and run it on this thread: a callback's panic (perhaps another
/// thread's callback) then resumes from the drop. Not while the thread
/// unwinds from a panic: the batch is then only queued (see the `defer`
/// docs of [`RcuDomain`]).
#[must_use = "dropping it retires the old value; drop it after releasing your locks"]
pub struct Retired<T: Send + Sync + 'static> {
    /// `Arc::into_raw` of the replaced value; one count, ours.
    old: *mut T,
    domain: &'static RcuDomain,
}

// SAFETY: only moves an `Arc<T>` count, which is Send for `T: Send + Sync`.
unsafe impl<T: Send + Sync + 'static> Send for Retired<T> {}

impl<T: Send + Sync + 'static> Drop for Retired<T> {
    fn drop(&mut self) {
        // It is dropped after every section that could have loaded it.
        // SAFETY: `old` came from `Arc::into_raw` and the count is ours.
        let old = unsafe { Arc::from_raw(self.old) };
        self.domain.defer_arc_drop(old);
    }
}

impl<T: Send + Sync + 'static> fmt::Debug for Retired<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retired").finish_non_exhaustive()
    }
}

impl<T> Drop for RcuCell<T> {
    fn drop(&mut self) {
        // No section can hold a value of this cell (their guards borrow
        // it), so the last count can go now.
        // Relaxed: `&mut self` is exclusive.
        let p = self.ptr.load(Ordering::Relaxed);
        // SAFETY: the pointer came from `Arc::into_raw`; the count is ours.
        drop(unsafe { Arc::from_raw(p) });
    }
}

impl<T: Default> Default for RcuCell<T> {
    fn default() -> Self {
        Self::from_pointee(T::default())
    }
}

impl<T> From<Arc<T>> for RcuCell<T> {
    fn from(value: Arc<T>) -> Self {
        Self::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for RcuCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RcuCell").field(&*self.load()).finish()
    }
}
