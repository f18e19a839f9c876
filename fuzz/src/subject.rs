//! The locks under test, behind one trait that says which `lock_api`
//! operations each one has, and [`dispatch`], which picks one from a byte.

use std::convert::Infallible;
use std::time::Duration;

use lock_api::{
    RawRwLock, RawRwLockDowngrade, RawRwLockTimed, RawRwLockUpgrade, RawRwLockUpgradeDowngrade,
    RawRwLockUpgradeTimed,
};

/// A lock under test: `RawRwLock`, plus the optional operations it has
/// (each default says "not supported" by returning `None` or `Err`).
pub trait Subject: RawRwLock + Sync {
    /// Its upgradable guard; `Infallible` when it has no upgradable mode.
    type Up;
    /// A name for messages.
    const NAME: &'static str;

    /// `try_lock_shared_for`, if the lock is timed.
    fn try_read_for(&self, _d: Duration) -> Option<Option<Self::SharedGuard>> {
        None
    }
    /// `try_lock_exclusive_for`, if the lock is timed.
    fn try_write_for(&self, _d: Duration) -> Option<Option<Self::ExclusiveGuard>> {
        None
    }
    /// `downgrade`, if the lock has it (else the guard comes back).
    ///
    /// # Safety
    /// `g` is the caller's exclusive acquisition of this lock.
    unsafe fn downgrade_(
        &self,
        g: Self::ExclusiveGuard,
    ) -> Result<Self::SharedGuard, Self::ExclusiveGuard> {
        Err(g)
    }
    /// `try_lock_upgradable`, if the lock has an upgradable mode.
    fn try_upgradable(&self) -> Option<Option<Self::Up>> {
        None
    }
    /// `try_lock_upgradable_for`, if the lock has both.
    fn try_upgradable_for(&self, _d: Duration) -> Option<Option<Self::Up>> {
        None
    }
    /// `unlock_upgradable`.
    ///
    /// # Safety
    /// `g` is the caller's upgradable acquisition of this lock.
    unsafe fn unlock_upgradable_(&self, g: Self::Up);
    /// `try_upgrade`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn try_upgrade_(&self, g: Self::Up) -> Result<Self::ExclusiveGuard, Self::Up>;
    /// `downgrade_upgradable`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn downgrade_upgradable_(&self, g: Self::Up) -> Self::SharedGuard;
    /// `downgrade_to_upgradable`, if the lock has it.
    ///
    /// # Safety
    /// `g` is the caller's exclusive acquisition of this lock.
    unsafe fn downgrade_to_upgradable_(
        &self,
        g: Self::ExclusiveGuard,
    ) -> Result<Self::Up, Self::ExclusiveGuard> {
        Err(g)
    }
}

/// The `Up`-taking methods of a lock without an upgradable mode: no value
/// of `Infallible` exists, so none of them can be called.
macro_rules! no_upgradable {
    () => {
        type Up = Infallible;
        unsafe fn unlock_upgradable_(&self, g: Infallible) {
            match g {}
        }
        unsafe fn try_upgrade_(&self, g: Infallible) -> Result<Self::ExclusiveGuard, Infallible> {
            match g {}
        }
        unsafe fn downgrade_upgradable_(&self, g: Infallible) -> Self::SharedGuard {
            match g {}
        }
    };
}

/// A lock with `downgrade` and no upgradable or timed mode.
macro_rules! downgrade_only {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl Subject for $t {
            const NAME: &'static str = $name;
            no_upgradable!();
            unsafe fn downgrade_(&self, g: Self::ExclusiveGuard) -> Result<Self::SharedGuard, Self::ExclusiveGuard> {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                Ok(unsafe { self.downgrade(g) })
            }
        }
    )*};
}

/// A lock with everything: downgrade, upgradable, timed.
macro_rules! full {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl Subject for $t {
            type Up = <$t as RawRwLockUpgrade>::UpgradableGuard;
            const NAME: &'static str = $name;
            fn try_read_for(&self, d: Duration) -> Option<Option<Self::SharedGuard>> {
                Some(self.try_lock_shared_for(d))
            }
            fn try_write_for(&self, d: Duration) -> Option<Option<Self::ExclusiveGuard>> {
                Some(self.try_lock_exclusive_for(d))
            }
            unsafe fn downgrade_(&self, g: Self::ExclusiveGuard) -> Result<Self::SharedGuard, Self::ExclusiveGuard> {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                Ok(unsafe { self.downgrade(g) })
            }
            fn try_upgradable(&self) -> Option<Option<Self::Up>> {
                Some(self.try_lock_upgradable())
            }
            fn try_upgradable_for(&self, d: Duration) -> Option<Option<Self::Up>> {
                Some(self.try_lock_upgradable_for(d))
            }
            unsafe fn unlock_upgradable_(&self, g: Self::Up) {
                // SAFETY: the caller's upgradable acquisition (this method's contract).
                unsafe { self.unlock_upgradable(g) }
            }
            unsafe fn try_upgrade_(&self, g: Self::Up) -> Result<Self::ExclusiveGuard, Self::Up> {
                // SAFETY: as above.
                unsafe { self.try_upgrade(g) }
            }
            unsafe fn downgrade_upgradable_(&self, g: Self::Up) -> Self::SharedGuard {
                // SAFETY: as above.
                unsafe { self.downgrade_upgradable(g) }
            }
            unsafe fn downgrade_to_upgradable_(&self, g: Self::ExclusiveGuard) -> Result<Self::Up, Self::ExclusiveGuard> {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                Ok(unsafe { self.downgrade_to_upgradable(g) })
            }
        }
    )*};
}

full! {
    parking_lot::RawRwLock => "parking_lot",
    bravo::Bravo<parking_lot::RawRwLock> => "Bravo<parking_lot>",
    rwlock_core::Restricted<parking_lot::RawRwLock> => "Restricted<parking_lot>",
}

downgrade_only! {
    bravo::Bravo<rwlock_core::PfQueue> => "Bravo<PF-Q>",
    bravo::Bravo<rwlock_core::PfTicket, bravo::policy::Listing1> => "Bravo<PF-T, Listing1>",
    rwlock_core::PfTicket => "PF-T",
    rwlock_core::PfQueue => "PF-Q",
    rwlock_core::BrLock => "brlock",
    rwlock_core::pf_ticket::PfTicket => "PF-T (unrestricted)",
    rwlock_core::pf_queue::PfQueue => "PF-Q (unrestricted)",
    rwlock_core::brlock::BrLock => "brlock (unrestricted)",
    cohort::CRwNp => "C-RW-NP",
    cohort::CRwRp => "C-RW-RP",
    cohort::CRwRpOpt => "C-RW-RP-opt",
    cohort::CRwWp => "C-RW-WP",
    cohort::DrTicket => "DR-ticket",
    prwlock::PrwLock => "prwlock",
}

impl Subject for rwlock_core::PthreadRwLock {
    const NAME: &'static str = "pthread";
    no_upgradable!();
}

/// Something to run on one lock type ([`dispatch`] picks it).
pub trait Visitor {
    /// What the visit returns.
    type Output;
    /// Runs on lock type `S`.
    fn visit<S: Subject>(self) -> Self::Output;
}

/// How many lock types [`dispatch`] chooses from.
pub const LOCKS: u8 = 18;

/// Runs `v` on the lock type that `selector % LOCKS` names.
pub fn dispatch<V: Visitor>(selector: u8, v: V) -> V::Output {
    match selector % LOCKS {
        0 => v.visit::<parking_lot::RawRwLock>(),
        1 => v.visit::<bravo::Bravo<parking_lot::RawRwLock>>(),
        2 => v.visit::<rwlock_core::Restricted<parking_lot::RawRwLock>>(),
        3 => v.visit::<bravo::Bravo<rwlock_core::PfQueue>>(),
        4 => v.visit::<bravo::Bravo<rwlock_core::PfTicket, bravo::policy::Listing1>>(),
        5 => v.visit::<rwlock_core::PfTicket>(),
        6 => v.visit::<rwlock_core::PfQueue>(),
        7 => v.visit::<rwlock_core::BrLock>(),
        8 => v.visit::<rwlock_core::pf_ticket::PfTicket>(),
        9 => v.visit::<rwlock_core::pf_queue::PfQueue>(),
        10 => v.visit::<rwlock_core::brlock::BrLock>(),
        11 => v.visit::<cohort::CRwNp>(),
        12 => v.visit::<cohort::CRwRp>(),
        13 => v.visit::<cohort::CRwRpOpt>(),
        14 => v.visit::<cohort::CRwWp>(),
        15 => v.visit::<cohort::DrTicket>(),
        16 => v.visit::<prwlock::PrwLock>(),
        _ => v.visit::<rwlock_core::PthreadRwLock>(),
    }
}
