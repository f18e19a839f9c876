//! One interface over every lock the harness compares.
//!
//! The workloads are generic over [`BenchLock`] and monomorphised per lock,
//! so no lock pays for dynamic dispatch inside its critical section loop.

use lock_api::RawRwLock;

/// A reader-writer lock as the harness drives it: run a closure in read or
/// write mode. The protected data lives outside, in atomics, so that a
/// broken lock is measured rather than undefined. Only RWBench checks it
/// (writers' zero-sum updates, summed at the end: two writers inside at
/// once lose an update); readers read random elements and check nothing,
/// so a lock that lets a reader beside a writer passes here. Exclusion is
/// what the stress harness (`rwlock_core::testing`), the fuzz targets,
/// ThreadSanitizer and the loom models check; the benchmark only measures.
pub trait BenchLock: Send + Sync + 'static {
    /// A fresh, unlocked lock.
    fn create() -> Self
    where
        Self: Sized;
    /// Runs `f` holding read permission.
    fn read<T>(&self, f: impl FnOnce() -> T) -> T;
    /// Runs `f` holding write permission.
    fn write<T>(&self, f: impl FnOnce() -> T) -> T;
}

/// Any `lock_api::RawRwLock` (ours, parking_lot's, the pthread adapter).
#[derive(Debug)]
pub struct Raw<R: RawRwLock>(lock_api::RwLock<R, ()>);

impl<R> BenchLock for Raw<R>
where
    R: RawRwLock + Send + Sync + 'static,
{
    fn create() -> Self {
        Raw(lock_api::RwLock::new(()))
    }

    #[inline]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.0.read();
        f()
    }

    #[inline]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.0.write();
        f()
    }
}

/// prwlock as the paper has it: its locks live in a domain of their own
/// with the write-heavy mode off (`prwlock::policy`), so every write runs
/// the version consensus and, for unreported readers, the heavy barrier.
#[derive(Debug)]
pub struct PrwPassiveOnly(Raw<prwlock::PrwLock>);

static PASSIVE_ONLY: prwlock::Domain = prwlock::Domain::new();

impl BenchLock for PrwPassiveOnly {
    fn create() -> Self {
        PASSIVE_ONLY.set_write_heavy_mode(false);
        PrwPassiveOnly(Raw(lock_api::RwLock::from_raw(
            prwlock::PrwLock::in_domain(&PASSIVE_ONLY),
            (),
        )))
    }

    #[inline]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.read(f)
    }

    #[inline]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.write(f)
    }
}

/// A mutex (`lock_api::RawMutex`) driven as a reader-writer lock: reads
/// and writes both take it. The paper's "Cohort" line: what reader-writer
/// locks must beat.
#[derive(Debug)]
pub struct Mutex<R: lock_api::RawMutex>(lock_api::Mutex<R, ()>);

impl<R> BenchLock for Mutex<R>
where
    R: lock_api::RawMutex + Send + Sync + 'static,
{
    fn create() -> Self {
        Mutex(lock_api::Mutex::new(()))
    }

    #[inline]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.0.lock();
        f()
    }

    #[inline]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.0.lock();
        f()
    }
}

/// A `BenchLock` over a std-like lock whose guards come in a `Result`
/// (poisoning is ignored: the harness never panics inside).
macro_rules! std_like {
    ($(#[$m:meta])* $name:ident, $inner:ty) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        pub struct $name($inner);

        impl BenchLock for $name {
            fn create() -> Self {
                $name::default()
            }

            #[inline]
            fn read<T>(&self, f: impl FnOnce() -> T) -> T {
                let _guard = self.0.read().unwrap_or_else(|e| e.into_inner());
                f()
            }

            #[inline]
            fn write<T>(&self, f: impl FnOnce() -> T) -> T {
                let _guard = self.0.write().unwrap_or_else(|e| e.into_inner());
                f()
            }
        }
    };
}

std_like!(
    /// `std::sync::RwLock`.
    Std,
    std::sync::RwLock<()>
);
std_like!(
    /// crossbeam-utils' `ShardedLock` (per-shard reader locks, a writer takes all).
    Sharded,
    crossbeam_utils::sync::ShardedLock<()>
);

/// No lock at all: readers and writers run concurrently. Exists only to prove
/// that the harness's zero-sum check catches a lock that lets a write overlap
/// (tests, and `--locks no_lock` by hand); never part of a default run.
#[derive(Debug, Default)]
pub struct NoLock;

impl BenchLock for NoLock {
    fn create() -> Self {
        NoLock
    }

    #[inline]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        f()
    }

    #[inline]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        f()
    }
}
