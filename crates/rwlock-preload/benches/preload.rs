//! The shim's overhead, one thread, uncontended: a read pair and a write
//! pair through the library's code (the family's lock found from the
//! `pthread_rwlock_t`, the read hold kept in the thread's table, the
//! writer's key in the lock) against the same lock called directly through
//! `lock_api`, for each family; and the exported C entry points (family
//! dispatch and the process-shared check included) for the default family.
//!
//! `cargo bench -p rwlock-preload --bench preload` (criterion medians; the
//! crate's README has a run).

#![cfg(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    target_pointer_width = "64"
))]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lock_api::RawRwLock;
use rwlock_preload::families as f;
use rwlock_preload::shim::{self, PreloadLock, Wait};

fn direct<L: RawRwLock>(iters: u64, write: bool) -> Duration {
    let l = L::INIT;
    let t = Instant::now();
    for _ in 0..iters {
        if write {
            let g = black_box(&l).lock_exclusive();
            // SAFETY: the guard just taken.
            unsafe { l.unlock_exclusive(g) };
        } else {
            let g = black_box(&l).lock_shared();
            // SAFETY: the guard just taken.
            unsafe { l.unlock_shared(g) };
        }
    }
    t.elapsed()
}

fn shimmed<L: PreloadLock>(iters: u64, write: bool) -> Duration {
    // SAFETY: an all-zero pthread_rwlock_t is the static initialiser.
    let mut rw: libc::pthread_rwlock_t = unsafe { std::mem::zeroed() };
    let p = &mut rw as *mut libc::pthread_rwlock_t;
    // Locked and unlocked by this thread only, destroyed unlocked.
    // SAFETY: `p` is a private, unused lock.
    unsafe {
        assert_eq!(shim::init::<L>(p, 0), 0);
        let t = Instant::now();
        for _ in 0..iters {
            let r = if write {
                shim::write::<L>(black_box(p), Wait::Block)
            } else {
                shim::read::<L>(black_box(p), Wait::Block)
            };
            debug_assert_eq!(r, 0);
            shim::unlock::<L>(p);
        }
        let e = t.elapsed();
        assert_eq!(shim::destroy::<L>(p), 0);
        e
    }
}

fn exported(iters: u64, write: bool) -> Duration {
    // SAFETY: an all-zero pthread_rwlock_t is the static initialiser.
    let mut rw: libc::pthread_rwlock_t = unsafe { std::mem::zeroed() };
    let p = &mut rw as *mut libc::pthread_rwlock_t;
    // SAFETY: as in `shimmed`, through the exported functions.
    unsafe {
        let t = Instant::now();
        for _ in 0..iters {
            if write {
                rwlock_preload::pthread_rwlock_wrlock(black_box(p));
            } else {
                rwlock_preload::pthread_rwlock_rdlock(black_box(p));
            }
            rwlock_preload::pthread_rwlock_unlock(p);
        }
        let e = t.elapsed();
        rwlock_preload::pthread_rwlock_destroy(p);
        e
    }
}

fn overhead(c: &mut Criterion) {
    macro_rules! family {
        ($g:expr, $name:literal, $t:ty, $write:expr) => {
            $g.bench_function(concat!($name, "/direct"), |b| {
                b.iter_custom(|n| direct::<$t>(n, $write))
            });
            $g.bench_function(concat!($name, "/shim"), |b| {
                b.iter_custom(|n| shimmed::<$t>(n, $write))
            });
        };
    }
    for (group, write) in [("preload_read_pair", false), ("preload_write_pair", true)] {
        let mut g = c.benchmark_group(group);
        family!(g, "bravo", f::Bravo, write);
        g.bench_function("bravo/exported", |b| b.iter_custom(|n| exported(n, write)));
        family!(g, "bravo-pfq", f::BravoPfq, write);
        family!(g, "pfq", f::Pfq, write);
        family!(g, "pft", f::Pft, write);
        family!(g, "brlock", f::Brlock, write);
        family!(g, "cohort-wp", f::CohortWp, write);
        family!(g, "prwlock", f::Prwlock, write);
        family!(g, "parking_lot", f::ParkingLot, write);
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    targets = overhead
}
criterion_main!(benches);
