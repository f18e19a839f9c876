//! The locks under test, behind one trait that says which `lock_api`
//! operations each one has, and [`dispatch`], which picks one from a byte.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use lock_api::{
    RawRwLock, RawRwLockDowngrade, RawRwLockFair, RawRwLockTimed, RawRwLockUpgrade,
    RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};

/// A lock under test: `RawRwLock`, plus the optional operations it has.
/// Each optional operation's default says "not supported": `None`, `false`
/// or the guard handed back in `Err`. The methods that take an upgradable
/// guard have no default: a lock without an upgradable mode has
/// `Up = Infallible`, so they can never be called.
pub trait Subject: RawRwLock + Sync {
    /// Its upgradable guard; `Infallible` when it has no upgradable mode.
    type Up;
    /// A name for messages.
    const NAME: &'static str;
    /// Whether it has `RawRwLockFair` (`unlock_*_fair`, `bump_*`).
    const FAIR: bool = false;
    /// Whether it has an upgradable mode (`RawRwLockUpgrade`).
    const UPGRADABLE: bool = false;

    /// `try_lock_shared_for`, if the lock is timed.
    fn try_read_for(&self, _d: Duration) -> Option<Option<Self::SharedGuard>> {
        None
    }
    /// `try_lock_shared_until`, if the lock is timed.
    fn try_read_until(&self, _t: Instant) -> Option<Option<Self::SharedGuard>> {
        None
    }
    /// `try_lock_exclusive_for`, if the lock is timed.
    fn try_write_for(&self, _d: Duration) -> Option<Option<Self::ExclusiveGuard>> {
        None
    }
    /// `try_lock_exclusive_until`, if the lock is timed.
    fn try_write_until(&self, _t: Instant) -> Option<Option<Self::ExclusiveGuard>> {
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
    /// `unlock_shared_fair` (plain `unlock_shared` unless [`Self::FAIR`]).
    ///
    /// # Safety
    /// `g` is the caller's shared acquisition of this lock.
    unsafe fn unlock_shared_fair_(&self, g: Self::SharedGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock_shared(g) }
    }
    /// `unlock_exclusive_fair` (plain `unlock_exclusive` unless
    /// [`Self::FAIR`]).
    ///
    /// # Safety
    /// `g` is the caller's exclusive acquisition of this lock.
    unsafe fn unlock_exclusive_fair_(&self, g: Self::ExclusiveGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock_exclusive(g) }
    }
    /// `bump_shared` (nothing unless [`Self::FAIR`]).
    ///
    /// # Safety
    /// `g` is the caller's shared acquisition of this lock, and the caller
    /// holds no exclusive acquisition.
    unsafe fn bump_shared_(&self, _g: &mut Self::SharedGuard) {}
    /// `bump_exclusive` (nothing unless [`Self::FAIR`]).
    ///
    /// # Safety
    /// `g` is the caller's exclusive acquisition of this lock.
    unsafe fn bump_exclusive_(&self, _g: &mut Self::ExclusiveGuard) {}
    /// `try_lock_upgradable`, if the lock has an upgradable mode.
    fn try_upgradable(&self) -> Option<Option<Self::Up>> {
        None
    }
    /// `try_lock_upgradable_for`, if the lock has both.
    fn try_upgradable_for(&self, _d: Duration) -> Option<Option<Self::Up>> {
        None
    }
    /// `try_lock_upgradable_until`, if the lock has both.
    fn try_upgradable_until(&self, _t: Instant) -> Option<Option<Self::Up>> {
        None
    }
    /// `lock_upgradable`, if the lock has an upgradable mode.
    fn lock_upgradable_(&self) -> Option<Self::Up> {
        None
    }
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
    /// `unlock_upgradable`.
    ///
    /// # Safety
    /// `g` is the caller's upgradable acquisition of this lock.
    unsafe fn unlock_upgradable_(&self, g: Self::Up);
    /// `unlock_upgradable_fair`, if the lock has `RawRwLockUpgradeFair`
    /// (else the guard comes back).
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn unlock_upgradable_fair_(&self, g: Self::Up) -> Result<(), Self::Up>;
    /// `bump_upgradable`, if the lock has `RawRwLockUpgradeFair` (whether it
    /// ran).
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn bump_upgradable_(&self, g: &mut Self::Up) -> bool;
    /// `upgrade` (blocking).
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn upgrade_(&self, g: Self::Up) -> Self::ExclusiveGuard;
    /// `try_upgrade`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn try_upgrade_(&self, g: Self::Up) -> Result<Self::ExclusiveGuard, Self::Up>;
    /// `try_upgrade_for`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn try_upgrade_for_(
        &self,
        g: Self::Up,
        d: Duration,
    ) -> Result<Self::ExclusiveGuard, Self::Up>;
    /// `try_upgrade_until`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn try_upgrade_until_(
        &self,
        g: Self::Up,
        t: Instant,
    ) -> Result<Self::ExclusiveGuard, Self::Up>;
    /// `downgrade_upgradable`.
    ///
    /// # Safety
    /// As `unlock_upgradable_`.
    unsafe fn downgrade_upgradable_(&self, g: Self::Up) -> Self::SharedGuard;
}

/// The `Up`-taking methods of a lock without an upgradable mode: no value
/// of `Infallible` exists, so none of them can be called.
macro_rules! no_upgradable {
    () => {
        type Up = Infallible;
        unsafe fn unlock_upgradable_(&self, g: Infallible) {
            match g {}
        }
        unsafe fn unlock_upgradable_fair_(&self, g: Infallible) -> Result<(), Infallible> {
            match g {}
        }
        unsafe fn bump_upgradable_(&self, g: &mut Infallible) -> bool {
            match *g {}
        }
        unsafe fn upgrade_(&self, g: Infallible) -> Self::ExclusiveGuard {
            match g {}
        }
        unsafe fn try_upgrade_(&self, g: Infallible) -> Result<Self::ExclusiveGuard, Infallible> {
            match g {}
        }
        unsafe fn try_upgrade_for_(
            &self,
            g: Infallible,
            _d: Duration,
        ) -> Result<Self::ExclusiveGuard, Infallible> {
            match g {}
        }
        unsafe fn try_upgrade_until_(
            &self,
            g: Infallible,
            _t: Instant,
        ) -> Result<Self::ExclusiveGuard, Infallible> {
            match g {}
        }
        unsafe fn downgrade_upgradable_(&self, g: Infallible) -> Self::SharedGuard {
            match g {}
        }
    };
}

/// A lock with `downgrade` and no upgradable, fair or timed mode.
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

/// A lock with everything: downgrade, fair, upgradable, timed, and
/// upgradable-fair when the block says how (`unlock_upgradable_fair_` and
/// `bump_upgradable_`; else both refuse).
macro_rules! full {
    ($($t:ty => $name:literal { $($upgrade_fair:tt)* }),* $(,)?) => {$(
        impl Subject for $t {
            type Up = <$t as RawRwLockUpgrade>::UpgradableGuard;
            const NAME: &'static str = $name;
            const FAIR: bool = true;
            const UPGRADABLE: bool = true;
            fn try_read_for(&self, d: Duration) -> Option<Option<Self::SharedGuard>> {
                Some(self.try_lock_shared_for(d))
            }
            fn try_read_until(&self, t: Instant) -> Option<Option<Self::SharedGuard>> {
                Some(self.try_lock_shared_until(t))
            }
            fn try_write_for(&self, d: Duration) -> Option<Option<Self::ExclusiveGuard>> {
                Some(self.try_lock_exclusive_for(d))
            }
            fn try_write_until(&self, t: Instant) -> Option<Option<Self::ExclusiveGuard>> {
                Some(self.try_lock_exclusive_until(t))
            }
            unsafe fn downgrade_(&self, g: Self::ExclusiveGuard) -> Result<Self::SharedGuard, Self::ExclusiveGuard> {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                Ok(unsafe { self.downgrade(g) })
            }
            unsafe fn unlock_shared_fair_(&self, g: Self::SharedGuard) {
                // SAFETY: the caller's shared acquisition (this method's contract).
                unsafe { self.unlock_shared_fair(g) }
            }
            unsafe fn unlock_exclusive_fair_(&self, g: Self::ExclusiveGuard) {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                unsafe { self.unlock_exclusive_fair(g) }
            }
            unsafe fn bump_shared_(&self, g: &mut Self::SharedGuard) {
                // No exclusive acquisition beside it (this method's contract).
                // SAFETY: the caller's shared acquisition (this method's contract).
                unsafe { self.bump_shared(g) }
            }
            unsafe fn bump_exclusive_(&self, g: &mut Self::ExclusiveGuard) {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                unsafe { self.bump_exclusive(g) }
            }
            fn try_upgradable(&self) -> Option<Option<Self::Up>> {
                Some(self.try_lock_upgradable())
            }
            fn try_upgradable_for(&self, d: Duration) -> Option<Option<Self::Up>> {
                Some(self.try_lock_upgradable_for(d))
            }
            fn try_upgradable_until(&self, t: Instant) -> Option<Option<Self::Up>> {
                Some(self.try_lock_upgradable_until(t))
            }
            fn lock_upgradable_(&self) -> Option<Self::Up> {
                Some(self.lock_upgradable())
            }
            unsafe fn downgrade_to_upgradable_(&self, g: Self::ExclusiveGuard) -> Result<Self::Up, Self::ExclusiveGuard> {
                // SAFETY: the caller's exclusive acquisition (this method's contract).
                Ok(unsafe { self.downgrade_to_upgradable(g) })
            }
            unsafe fn unlock_upgradable_(&self, g: Self::Up) {
                // SAFETY: the caller's upgradable acquisition (this method's contract).
                unsafe { self.unlock_upgradable(g) }
            }
            $($upgrade_fair)*
            unsafe fn upgrade_(&self, g: Self::Up) -> Self::ExclusiveGuard {
                // SAFETY: the caller's upgradable acquisition (this method's contract).
                unsafe { self.upgrade(g) }
            }
            unsafe fn try_upgrade_(&self, g: Self::Up) -> Result<Self::ExclusiveGuard, Self::Up> {
                // SAFETY: as above.
                unsafe { self.try_upgrade(g) }
            }
            unsafe fn try_upgrade_for_(&self, g: Self::Up, d: Duration) -> Result<Self::ExclusiveGuard, Self::Up> {
                // SAFETY: as above.
                unsafe { self.try_upgrade_for(g, d) }
            }
            unsafe fn try_upgrade_until_(&self, g: Self::Up, t: Instant) -> Result<Self::ExclusiveGuard, Self::Up> {
                // SAFETY: as above.
                unsafe { self.try_upgrade_until(g, t) }
            }
            unsafe fn downgrade_upgradable_(&self, g: Self::Up) -> Self::SharedGuard {
                // SAFETY: as above.
                unsafe { self.downgrade_upgradable(g) }
            }
        }
    )*};
}

/// `RawRwLockUpgradeFair`'s two methods, for `full!`.
macro_rules! upgrade_fair {
    () => {
        unsafe fn unlock_upgradable_fair_(&self, g: Self::Up) -> Result<(), Self::Up> {
            // SAFETY: the caller's upgradable acquisition (this method's contract).
            unsafe { self.unlock_upgradable_fair(g) };
            Ok(())
        }
        unsafe fn bump_upgradable_(&self, g: &mut Self::Up) -> bool {
            // SAFETY: the caller's upgradable acquisition (this method's contract).
            unsafe { self.bump_upgradable(g) };
            true
        }
    };
}

/// The refusal of a lock without `RawRwLockUpgradeFair`, for `full!`.
macro_rules! no_upgrade_fair {
    () => {
        unsafe fn unlock_upgradable_fair_(&self, g: Self::Up) -> Result<(), Self::Up> {
            Err(g)
        }
        unsafe fn bump_upgradable_(&self, _g: &mut Self::Up) -> bool {
            false
        }
    };
}

full! {
    parking_lot::RawRwLock => "parking_lot" { upgrade_fair!(); },
    bravo::Bravo<parking_lot::RawRwLock> => "Bravo<parking_lot>" { upgrade_fair!(); },
    // `Restricted` has no `RawRwLockUpgradeFair`.
    rwlock_core::Restricted<parking_lot::RawRwLock> => "Restricted<parking_lot>" { no_upgrade_fair!(); },
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

/// The selector of `prwlock::PrwLock` in [`dispatch`] (the `prwlock_fence`
/// target runs it alone).
pub const PRWLOCK: u8 = 16;

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
        PRWLOCK => v.visit::<prwlock::PrwLock>(),
        _ => v.visit::<rwlock_core::PthreadRwLock>(),
    }
}
