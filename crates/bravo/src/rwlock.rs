//! Ready-made types: the `parking_lot` drop-in and aliases over this
//! workspace's locks.
//!
//! The names at the crate root (`RwLock`, `RwLockReadGuard`, ...) are
//! `parking_lot` 0.13's, over `Bravo<parking_lot::RawRwLock>`: code that
//! uses `parking_lot::RwLock` compiles unchanged after
//! `use parking_lot::RwLock` becomes `use bravo::RwLock`, including
//! `static` locks (`RwLock::new` is `const`), upgradable reads, `map`ped
//! guards, timed and fair operations.

/// `Bravo` over parking_lot's raw reader-writer lock.
pub type RawRwLock = crate::Bravo<parking_lot::RawRwLock>;

/// A reader-writer lock: parking_lot's, with BRAVO's reader fast path.
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// RAII shared access, released on drop.
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;

/// RAII exclusive access, released on drop.
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;

/// RAII upgradable read access, released on drop.
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;

/// A read guard mapped to part of the data ([`RwLockReadGuard::map`]).
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;

/// A write guard mapped to part of the data ([`RwLockWriteGuard::map`]).
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;

/// `Bravo` over the phase-fair queue lock (PF-Q, the paper's "BA").
pub type RawPfQueue = crate::Bravo<rwlock_core::PfQueue>;

/// A reader-writer lock: BRAVO over PF-Q.
pub type PfQueueRwLock<T> = lock_api::RwLock<RawPfQueue, T>;

/// `Bravo` over the phase-fair ticket lock (PF-T).
pub type RawPfTicket = crate::Bravo<rwlock_core::PfTicket>;

/// A reader-writer lock: BRAVO over PF-T.
pub type PfTicketRwLock<T> = lock_api::RwLock<RawPfTicket, T>;

/// `Bravo` over `pthread_rwlock_t` (the paper's setting, via
/// [`rwlock_core::PthreadRwLock`]). Its guards are not `Send`.
#[cfg(not(loom))]
pub type RawPthread = crate::Bravo<rwlock_core::PthreadRwLock>;

/// A reader-writer lock: BRAVO over `pthread_rwlock_t`.
#[cfg(not(loom))]
pub type PthreadRwLock<T> = lock_api::RwLock<RawPthread, T>;
