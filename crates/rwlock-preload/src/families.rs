//! The lock types behind each [`Family`](crate::Family), and the dispatch
//! from a family to its monomorphised shim.

use crate::shim::PreloadLock;
use libc::c_int;
use lock_api::RawRwLock;

/// `bravo::RwLock`'s lock, BRAVO over parking_lot, with the policy for
/// locks that C code may copy ([`bravo::policy::UncountedPolicy`]: a
/// `memcpy`'d biased lock is a bias the default policy's process-wide
/// count never saw).
pub type Bravo = bravo::Bravo<parking_lot::RawRwLock, bravo::policy::UncountedPolicy>;
/// BRAVO over PF-Q, with the same policy.
pub type BravoPfq = bravo::Bravo<rwlock_core::PfQueue, bravo::policy::UncountedPolicy>;
/// PF-Q, writers restricted to the running CPUs.
pub type Pfq = rwlock_core::PfQueue;
/// PF-T, writers restricted to the running CPUs.
pub type Pft = rwlock_core::PfTicket;
/// The per-CPU brlock, writers restricted.
pub type Brlock = rwlock_core::BrLock;
/// Cohort C-RW-WP.
pub type CohortWp = cohort::CRwWp;
/// Cohort C-RW-NP.
pub type CohortNp = cohort::CRwNp;
/// Cohort C-RW-RP.
pub type CohortRp = cohort::CRwRp;
/// Cohort, reader or writer preference from the lock's kind.
pub type Cohort = ByKind<cohort::CRwRp, cohort::CRwWp>;
/// The passive reader-writer lock.
pub type Prwlock = prwlock::PrwLock;
/// parking_lot's lock.
pub type ParkingLot = parking_lot::RawRwLock;

// parking_lot's state word and BRAVO's bias word, both 0 when
// unlocked and unbiased (`zero_init_is_init` checks it).
// SAFETY: as the lines above say.
unsafe impl PreloadLock for Bravo {
    const ZERO_INIT: bool = true;
}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for BravoPfq {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for Pfq {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for Pft {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for Brlock {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for CohortWp {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for CohortNp {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for CohortRp {}
// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl PreloadLock for Prwlock {}
// SAFETY: parking_lot's state word, 0 when unlocked (checked below).
unsafe impl PreloadLock for ParkingLot {
    const ZERO_INIT: bool = true;
}

/// glibc's `PTHREAD_RWLOCK_PREFER_READER_NP` (also the default kind).
pub const PREFER_READER_NP: c_int = 0;
/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NP`.
pub const PREFER_WRITER_NP: c_int = 1;
/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
pub const PREFER_WRITER_NONRECURSIVE_NP: c_int = 2;

/// One of two locks, chosen when the `pthread_rwlock_t` is made from its
/// kind: `R` for the reader-preferring kind (glibc's default), `W` for
/// either writer-preferring kind.
#[derive(Debug)]
pub enum ByKind<R, W> {
    /// The reader-preferring lock.
    Reader(R),
    /// The writer-preferring lock.
    Writer(W),
}

/// A guard of one of the two locks.
#[derive(Debug)]
pub enum Either<A, B> {
    /// The reader-preferring lock's.
    Reader(A),
    /// The writer-preferring lock's.
    Writer(B),
}

// SAFETY: out of line (the default `ZERO_INIT`).
unsafe impl<R: PreloadLock, W: PreloadLock> PreloadLock for ByKind<R, W> {
    fn for_kind(kind: c_int) -> Self {
        if kind == PREFER_WRITER_NP || kind == PREFER_WRITER_NONRECURSIVE_NP {
            ByKind::Writer(W::INIT)
        } else {
            ByKind::Reader(R::INIT)
        }
    }
}

// each method forwards to the one lock the value holds, and a guard
// goes back to the lock that made it (its variant says which; a value never
// changes variant).
// SAFETY: as the lines above say.
unsafe impl<R: RawRwLock, W: RawRwLock> RawRwLock for ByKind<R, W> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = ByKind::Reader(R::INIT);
    type SharedGuard = Either<R::SharedGuard, W::SharedGuard>;
    type ExclusiveGuard = Either<R::ExclusiveGuard, W::ExclusiveGuard>;

    fn lock_shared(&self) -> Self::SharedGuard {
        match self {
            ByKind::Reader(l) => Either::Reader(l.lock_shared()),
            ByKind::Writer(l) => Either::Writer(l.lock_shared()),
        }
    }

    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        match self {
            ByKind::Reader(l) => l.try_lock_shared().map(Either::Reader),
            ByKind::Writer(l) => l.try_lock_shared().map(Either::Writer),
        }
    }

    unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
        match (self, guard) {
            // SAFETY: the guard of this lock (same variant).
            (ByKind::Reader(l), Either::Reader(g)) => unsafe { l.unlock_shared(g) },
            // SAFETY: as above.
            (ByKind::Writer(l), Either::Writer(g)) => unsafe { l.unlock_shared(g) },
            _ => unreachable!("a guard of the other variant"),
        }
    }

    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        match self {
            ByKind::Reader(l) => Either::Reader(l.lock_exclusive()),
            ByKind::Writer(l) => Either::Writer(l.lock_exclusive()),
        }
    }

    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        match self {
            ByKind::Reader(l) => l.try_lock_exclusive().map(Either::Reader),
            ByKind::Writer(l) => l.try_lock_exclusive().map(Either::Writer),
        }
    }

    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        match (self, guard) {
            // SAFETY: the guard of this lock (same variant).
            (ByKind::Reader(l), Either::Reader(g)) => unsafe { l.unlock_exclusive(g) },
            // SAFETY: as above.
            (ByKind::Writer(l), Either::Writer(g)) => unsafe { l.unlock_exclusive(g) },
            _ => unreachable!("a guard of the other variant"),
        }
    }

    fn is_locked(&self) -> bool {
        match self {
            ByKind::Reader(l) => l.is_locked(),
            ByKind::Writer(l) => l.is_locked(),
        }
    }

    fn is_locked_exclusive(&self) -> bool {
        match self {
            ByKind::Reader(l) => l.is_locked_exclusive(),
            ByKind::Writer(l) => l.is_locked_exclusive(),
        }
    }
}

/// Calls `shim::$op::<L>(args)` with `L` the lock type of `$family`
/// (never the passthrough: the caller forwards that one to glibc).
macro_rules! on_family {
    ($family:expr, $op:ident($($arg:expr),*)) => {{
        use $crate::families as f;
        use $crate::shim;
        match $family {
            $crate::Family::Bravo => shim::$op::<f::Bravo>($($arg),*),
            $crate::Family::BravoPfq => shim::$op::<f::BravoPfq>($($arg),*),
            $crate::Family::Pfq => shim::$op::<f::Pfq>($($arg),*),
            $crate::Family::Pft => shim::$op::<f::Pft>($($arg),*),
            $crate::Family::Brlock => shim::$op::<f::Brlock>($($arg),*),
            $crate::Family::CohortWp => shim::$op::<f::CohortWp>($($arg),*),
            $crate::Family::CohortNp => shim::$op::<f::CohortNp>($($arg),*),
            $crate::Family::CohortRp => shim::$op::<f::CohortRp>($($arg),*),
            $crate::Family::Cohort => shim::$op::<f::Cohort>($($arg),*),
            $crate::Family::Prwlock => shim::$op::<f::Prwlock>($($arg),*),
            $crate::Family::ParkingLot => shim::$op::<f::ParkingLot>($($arg),*),
            $crate::Family::Passthrough => unreachable!("the passthrough is glibc's"),
        }
    }};
}
pub(crate) use on_family;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shim;

    fn is_all_zero<L: PreloadLock>() -> bool {
        let v = L::INIT;
        let ptr = (&v as *const L).cast::<u8>();
        // The two locks checked have no padding: one or two machine words.
        // SAFETY: reads the value's own bytes.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, size_of::<L>()) };
        bytes.iter().all(|b| *b == 0)
    }

    #[test]
    fn zero_init_is_init() {
        assert!(is_all_zero::<Bravo>());
        assert!(is_all_zero::<ParkingLot>());
    }

    #[test]
    fn which_families_live_inline() {
        assert!(
            shim::is_inline::<Bravo>(),
            "the default family needs no allocation"
        );
        assert!(shim::is_inline::<ParkingLot>());
        assert!(!shim::is_inline::<Prwlock>());
        assert!(!shim::is_inline::<CohortWp>());
        assert!(!shim::is_inline::<Pfq>());
    }

    #[test]
    fn by_kind_picks_from_the_kind() {
        assert!(matches!(
            Cohort::for_kind(PREFER_READER_NP),
            ByKind::Reader(_)
        ));
        assert!(matches!(
            Cohort::for_kind(PREFER_WRITER_NP),
            ByKind::Writer(_)
        ));
        assert!(matches!(
            Cohort::for_kind(PREFER_WRITER_NONRECURSIVE_NP),
            ByKind::Writer(_)
        ));
        assert!(matches!(Cohort::for_kind(77), ByKind::Reader(_)));
        let l = Cohort::for_kind(PREFER_WRITER_NONRECURSIVE_NP);
        let g = l.lock_shared();
        assert!(l.is_locked() && !l.is_locked_exclusive());
        assert!(l.try_lock_exclusive().is_none());
        // SAFETY: the guard just taken.
        unsafe { l.unlock_shared(g) };
        let g = l.lock_exclusive();
        assert!(l.is_locked_exclusive());
        // SAFETY: as above.
        unsafe { l.unlock_exclusive(g) };
        assert!(!l.is_locked());
    }
}
