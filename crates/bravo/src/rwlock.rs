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

/// `Bravo` over parking_lot's recursive raw lock: a thread's nested read
/// never waits for a queued writer.
pub type RawRwLockRecursive = crate::Bravo<parking_lot::RawRwLockRecursive>;

/// parking_lot's `RecursiveRwLock` with BRAVO's reader fast path: a thread
/// may take a read it already holds even while a writer waits (blocking
/// or timed, and upgrades: BRAVO's writers wait for fast readers without
/// holding `L`, so the nested read gets `L`), where [`RwLock`] may
/// deadlock. An upgrade keeps the bias off from its revocation until `L`'s
/// upgrade returns (crate docs, "Try and timed writes"), so no fast reader
/// comes in that it would wait for holding `L`.
pub type RecursiveRwLock<T> = lock_api::RwLock<RawRwLockRecursive, T>;

/// RAII shared access to a [`RecursiveRwLock`], released on drop.
pub type RecursiveRwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLockRecursive, T>;

/// RAII exclusive access to a [`RecursiveRwLock`], released on drop.
pub type RecursiveRwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLockRecursive, T>;

/// RAII upgradable read access to a [`RecursiveRwLock`], released on drop.
pub type RecursiveRwLockUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawRwLockRecursive, T>;

/// A [`RecursiveRwLockReadGuard`] mapped to part of the data.
pub type MappedRecursiveRwLockReadGuard<'a, T> =
    lock_api::MappedRwLockReadGuard<'a, RawRwLockRecursive, T>;

/// A [`RecursiveRwLockWriteGuard`] mapped to part of the data.
pub type MappedRecursiveRwLockWriteGuard<'a, T> =
    lock_api::MappedRwLockWriteGuard<'a, RawRwLockRecursive, T>;
