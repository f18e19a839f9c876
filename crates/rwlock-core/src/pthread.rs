//! A [`lock_api::RawRwLock`] adapter over the C library's `pthread_rwlock_t`.
//!
//! It exists so that the default POSIX lock (the papers' "pthread" baseline)
//! can be measured beside ours and wrapped by BRAVO. It is glibc's default
//! rwlock (reader-preferring on glibc: a stream of readers can hold off a
//! writer), unmodified.
//!
//! - `const INIT`: the `pthread_rwlock_t` is boxed on first use, so the
//!   adapter may be moved freely (POSIX does not allow moving an initialised
//!   `pthread_rwlock_t`); one pointer load per operation pays for that.
//! - Guards are not `Send`: POSIX leaves unlocking from another thread
//!   undefined. This adapter carries no per-acquisition state (the pthread
//!   lock tracks its own owner).
//!
//! ```compile_fail
//! // A pthread guard cannot leave its thread.
//! let lock = lock_api::RwLock::<rwlock_core::PthreadRwLock, u32>::new(0);
//! std::thread::scope(|s| {
//!     let guard = lock.read();
//!     s.spawn(move || drop(guard));
//! });
//! ```
//! - Panics: an error from `pthread_rwlock_*` (`EAGAIN`: too many readers;
//!   `EDEADLK`: the calling thread already holds the write lock; `EPERM` on
//!   unlock: not held) panics with the error's name rather than corrupting
//!   the lock.
//! - Dropping a lock that is still held (a guard was `mem::forget`-ten)
//!   leaks the boxed `pthread_rwlock_t` instead of destroying a locked lock.

use core::cell::UnsafeCell;
use core::fmt;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

/// `pthread_rwlock_t` behind `lock_api`; see the [module docs](self).
pub struct PthreadRwLock {
    inner: AtomicPtr<UnsafeCell<libc::pthread_rwlock_t>>,
}

// SAFETY: pthread rwlocks are designed to be shared between threads; the box
// is owned by this value.
unsafe impl Send for PthreadRwLock {}
// SAFETY: as above.
unsafe impl Sync for PthreadRwLock {}

fn check(op: &str, rc: libc::c_int) {
    if rc != 0 {
        let name = match rc {
            libc::EAGAIN => "EAGAIN (maximum number of read locks exceeded)",
            libc::EDEADLK => "EDEADLK (the calling thread already holds the lock)",
            libc::EPERM => "EPERM (the calling thread does not hold the lock)",
            libc::EINVAL => "EINVAL (invalid lock)",
            _ => "unexpected error",
        };
        panic!("{op} failed with {rc}: {name}");
    }
}

impl PthreadRwLock {
    /// An unlocked lock; the `pthread_rwlock_t` is allocated on first use.
    pub const fn new() -> Self {
        PthreadRwLock {
            inner: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[inline]
    fn raw(&self) -> *mut libc::pthread_rwlock_t {
        // Acquire: pairs with the Release CAS in `init`.
        let p = self.inner.load(Ordering::Acquire);
        if p.is_null() {
            return self.init();
        }
        UnsafeCell::raw_get(p)
    }

    #[cold]
    fn init(&self) -> *mut libc::pthread_rwlock_t {
        let fresh = Box::into_raw(Box::new(UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER)));
        // Release publishes the initialised box; Acquire on failure sees the winner's.
        match self.inner.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => UnsafeCell::raw_get(fresh),
            Err(winner) => {
                // SAFETY: `fresh` was never shared.
                drop(unsafe { Box::from_raw(fresh) });
                UnsafeCell::raw_get(winner)
            }
        }
    }
}

impl Default for PthreadRwLock {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PthreadRwLock {
    fn drop(&mut self) {
        let p = *self.inner.get_mut();
        if p.is_null() {
            return;
        }
        let raw = UnsafeCell::raw_get(p);
        // We have exclusive access, so a failed try-lock means an acquisition
        // was leaked (a forgotten guard): then leak the lock too.
        // SAFETY: `raw` is our initialised pthread rwlock.
        unsafe {
            if libc::pthread_rwlock_trywrlock(raw) == 0 {
                libc::pthread_rwlock_unlock(raw);
                libc::pthread_rwlock_destroy(raw);
                drop(Box::from_raw(p));
            }
            // Otherwise leak: destroying a held pthread rwlock is undefined.
        }
    }
}

impl fmt::Debug for PthreadRwLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PthreadRwLock")
            .field("allocated", &!self.inner.load(Ordering::Relaxed).is_null())
            .finish()
    }
}

// SAFETY: pthread rwlocks provide reader-writer exclusion with acquire/release
// semantics (POSIX memory synchronization for pthread_rwlock_* calls).
unsafe impl lock_api::RawRwLock for PthreadRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type SharedGuard = lock_api::GuardNoSend;
    type ExclusiveGuard = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) -> Self::SharedGuard {
        // SAFETY: `raw()` is a live, initialised pthread rwlock.
        check("pthread_rwlock_rdlock", unsafe {
            libc::pthread_rwlock_rdlock(self.raw())
        });
        lock_api::GuardNoSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        // SAFETY: as above.
        let rc = unsafe { libc::pthread_rwlock_tryrdlock(self.raw()) };
        match rc {
            0 => Some(lock_api::GuardNoSend::new()),
            libc::EBUSY | libc::EAGAIN => None,
            _ => {
                check("pthread_rwlock_tryrdlock", rc);
                None
            }
        }
    }

    #[inline]
    unsafe fn unlock_shared(&self, _guard: Self::SharedGuard) {
        // SAFETY: the caller holds a read lock taken by this thread.
        check("pthread_rwlock_unlock", unsafe {
            libc::pthread_rwlock_unlock(self.raw())
        });
    }

    #[inline]
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        // SAFETY: `raw()` is a live, initialised pthread rwlock.
        check("pthread_rwlock_wrlock", unsafe {
            libc::pthread_rwlock_wrlock(self.raw())
        });
        lock_api::GuardNoSend::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        // SAFETY: as above.
        let rc = unsafe { libc::pthread_rwlock_trywrlock(self.raw()) };
        match rc {
            0 => Some(lock_api::GuardNoSend::new()),
            libc::EBUSY => None,
            _ => {
                check("pthread_rwlock_trywrlock", rc);
                None
            }
        }
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _guard: Self::ExclusiveGuard) {
        // SAFETY: the caller holds the write lock taken by this thread.
        check("pthread_rwlock_unlock", unsafe {
            libc::pthread_rwlock_unlock(self.raw())
        });
    }

    fn is_locked(&self) -> bool {
        // POSIX offers no pure query; this adapter answers with a try-lock
        // that is immediately undone (documented deviation). Acquire: pairs
        // with the Release CAS in `init` (as in `raw`).
        if self.inner.load(Ordering::Acquire).is_null() {
            return false;
        }
        // SAFETY: live lock; an acquired write lock is released at once.
        unsafe {
            let raw = self.raw();
            if libc::pthread_rwlock_trywrlock(raw) == 0 {
                libc::pthread_rwlock_unlock(raw);
                false
            } else {
                true
            }
        }
    }

    fn is_locked_exclusive(&self) -> bool {
        // Acquire: pairs with the Release CAS in `init` (as in `raw`).
        if self.inner.load(Ordering::Acquire).is_null() {
            return false;
        }
        // SAFETY: live lock; an acquired read lock is released at once.
        unsafe {
            let raw = self.raw();
            match libc::pthread_rwlock_tryrdlock(raw) {
                0 => {
                    libc::pthread_rwlock_unlock(raw);
                    false
                }
                // EAGAIN: too many readers, certainly not a writer.
                libc::EAGAIN => false,
                _ => true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_api::RawRwLock;

    #[test]
    fn basic_and_move_after_use() {
        let l = PthreadRwLock::new();
        let g = l.lock_shared();
        assert!(l.try_lock_exclusive().is_none());
        // SAFETY: our shared acquisition.
        unsafe { l.unlock_shared(g) };
        // Moving after first use is fine: the pthread lock is boxed.
        let moved = Box::new(l);
        let g = moved.lock_exclusive();
        assert!(moved.is_locked_exclusive());
        // SAFETY: our exclusive acquisition.
        unsafe { moved.unlock_exclusive(g) };
        assert!(!moved.is_locked());
    }

    #[test]
    fn harness_1_2_8_threads() {
        let l = PthreadRwLock::new();
        crate::testing::check_try_lock(&l);
        crate::testing::stress_1_2_8(&l);
        crate::testing::check_panic_releases(&lock_api::RwLock::<PthreadRwLock, u64>::new(0));
    }

    #[test]
    #[should_panic(expected = "EDEADLK")]
    fn relocking_the_write_lock_panics() {
        let l = PthreadRwLock::new();
        let _g = l.lock_exclusive();
        let _h = l.lock_exclusive();
    }

    #[test]
    fn dropping_a_held_lock_leaks_instead_of_destroying() {
        let l = lock_api::RwLock::<PthreadRwLock, u32>::new(1);
        core::mem::forget(l.read());
        drop(l);
    }
}
