//! [`Hooked`]: a lock that forwards every `lock_api` operation to the lock
//! it wraps, running a test's hooks around the acquisitions.
//!
//! Tests use it to put a pause where a preemption would fall (BRAVO's
//! upgrade window), to pin each thread on its first acquisition (cohort's
//! node tests), or to count the locks alive (the preload shim's install
//! race), without writing the forwarding again for each.

use lock_api::{RawRwLock, RawRwLockDowngrade, RawRwLockUpgrade};

/// The acquisition a [`Hooks`] callback is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOp {
    /// `lock_shared`.
    Shared,
    /// `try_lock_shared`.
    TryShared,
    /// `lock_exclusive`.
    Exclusive,
    /// `try_lock_exclusive`.
    TryExclusive,
    /// `lock_upgradable`.
    Upgradable,
    /// `try_lock_upgradable`.
    TryUpgradable,
    /// `upgrade`.
    Upgrade,
    /// `try_upgrade`.
    TryUpgrade,
}

/// What a [`Hooked`] lock runs around each acquisition of the lock it
/// wraps. Both default to nothing.
pub trait Hooks {
    /// The hooks of [`Hooked`]'s `RawRwLock::INIT`.
    const INIT: Self;
    /// Runs before the wrapped lock's acquisition.
    fn before(&self, _op: LockOp) {}
    /// Runs once the wrapped lock's acquisition answered (a try form's
    /// failure included).
    fn after(&self, _op: LockOp) {}
}

/// No hooks: the plain forwarding.
impl Hooks for () {
    const INIT: Self = ();
}

/// `L` with [`Hooks`] `H` around its acquisitions; releases, downgrades
/// and queries are forwarded as they are. Implements `RawRwLock`, and
/// `RawRwLockDowngrade` and `RawRwLockUpgrade` where `L` does.
#[derive(Debug, Default)]
pub struct Hooked<L, H = ()> {
    /// The lock every operation goes to.
    pub inner: L,
    /// What runs around its acquisitions.
    pub hooks: H,
}

impl<L, H> Hooked<L, H> {
    /// `inner` with `hooks`.
    pub const fn new(inner: L, hooks: H) -> Self {
        Hooked { inner, hooks }
    }

    #[inline]
    fn around<T>(&self, op: LockOp, f: impl FnOnce(&L) -> T) -> T
    where
        H: Hooks,
    {
        self.hooks.before(op);
        let out = f(&self.inner);
        self.hooks.after(op);
        out
    }
}

// SAFETY: every operation is `L`'s, with `L`'s guards; the hooks only run
// beside them (a hook that never returns only delays its caller).
unsafe impl<L: RawRwLock, H: Hooks> RawRwLock for Hooked<L, H> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Hooked {
        inner: L::INIT,
        hooks: H::INIT,
    };
    type SharedGuard = L::SharedGuard;
    type ExclusiveGuard = L::ExclusiveGuard;

    fn lock_shared(&self) -> Self::SharedGuard {
        self.around(LockOp::Shared, L::lock_shared)
    }
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        self.around(LockOp::TryShared, L::try_lock_shared)
    }
    unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_shared(guard) }
    }
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        self.around(LockOp::Exclusive, L::lock_exclusive)
    }
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        self.around(LockOp::TryExclusive, L::try_lock_exclusive)
    }
    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_exclusive(guard) }
    }
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }
}

// SAFETY: as above.
unsafe impl<L: RawRwLockDowngrade, H: Hooks> RawRwLockDowngrade for Hooked<L, H> {
    unsafe fn downgrade(&self, guard: Self::ExclusiveGuard) -> Self::SharedGuard {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.downgrade(guard) }
    }
}

// SAFETY: as above.
unsafe impl<L: RawRwLockUpgrade, H: Hooks> RawRwLockUpgrade for Hooked<L, H> {
    type UpgradableGuard = L::UpgradableGuard;

    fn lock_upgradable(&self) -> Self::UpgradableGuard {
        self.around(LockOp::Upgradable, L::lock_upgradable)
    }
    fn try_lock_upgradable(&self) -> Option<Self::UpgradableGuard> {
        self.around(LockOp::TryUpgradable, L::try_lock_upgradable)
    }
    unsafe fn unlock_upgradable(&self, guard: Self::UpgradableGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_upgradable(guard) }
    }
    unsafe fn upgrade(&self, guard: Self::UpgradableGuard) -> Self::ExclusiveGuard {
        // The guard is an upgradable read of `inner`.
        // SAFETY: forwarded from the caller.
        self.around(LockOp::Upgrade, |l| unsafe { l.upgrade(guard) })
    }
    unsafe fn try_upgrade(
        &self,
        guard: Self::UpgradableGuard,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // The guard is an upgradable read of `inner`.
        // SAFETY: forwarded from the caller.
        self.around(LockOp::TryUpgrade, |l| unsafe { l.try_upgrade(guard) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PfTicket;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the hook calls, before and after.
    struct Count(AtomicUsize, AtomicUsize);

    impl Hooks for Count {
        const INIT: Self = Count(AtomicUsize::new(0), AtomicUsize::new(0));
        fn before(&self, _: LockOp) {
            // Relaxed: single-threaded test.
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn after(&self, _: LockOp) {
            // Relaxed: single-threaded test.
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn forwards_every_operation_and_hooks_the_acquisitions() {
        let lock = Hooked::<PfTicket, Count>::INIT;
        crate::testing::check_try_lock(&lock);
        crate::testing::check_downgrade(&lock);
        // Relaxed: single-threaded test.
        let (before, after) = (
            lock.hooks.0.load(Ordering::Relaxed),
            lock.hooks.1.load(Ordering::Relaxed),
        );
        assert!(before > 0, "no acquisition was hooked");
        assert_eq!(before, after);
        assert!(!lock.is_locked());
    }
}
