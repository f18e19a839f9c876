//! Hash collisions are certain here: this test binary's table has ONE slot,
//! so every reader of every lock hashes to it.
//!
//! The hazard (public BRAVO ports have shipped it): threads T and U collide
//! on a slot for the same lock; U holds it on the fast path, T fell back to
//! the slow path. T's unlock must release T's acquisition of the underlying
//! lock and leave U's slot alone. An unlock that decided "fast or slow" from
//! the slot's content (it holds this lock, so clear it) fails
//! `slow_unlock_leaves_colliding_fast_slot_alone` and hangs or trips the
//! zero-sum check of the stress runs.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

mod support;
use bravo::{Bravo, Listing1, Policy};
use lock_api::RawRwLock;
use rwlock_core::testing;

type Pl = Bravo<parking_lot::RawRwLock, Listing1>;

/// Configures the one-slot table and serialises the tests of this binary:
/// they share the slot, and each test's assertions about who holds it
/// assume nobody else runs.
fn one_slot() -> std::sync::MutexGuard<'static, ()> {
    let guard = rwlock_core::testing::serial();
    bravo::table::configure(1).expect("this binary's table has one slot");
    assert_eq!(bravo::table::slots(), 1);
    guard
}

#[test]
fn slow_unlock_leaves_colliding_fast_slot_alone() {
    let _serial = one_slot();
    let lock = Arc::new(Pl::new());
    support::bias(&*lock);
    let (held, release, done) = (
        Arc::new(Barrier::new(2)),
        Arc::new(Barrier::new(2)),
        Arc::new(AtomicBool::new(false)),
    );
    let u = {
        let (lock, held, release, done) =
            (lock.clone(), held.clone(), release.clone(), done.clone());
        std::thread::spawn(move || {
            let g = lock.lock_shared();
            assert!(g.is_fast(), "U takes the only slot");
            held.wait();
            release.wait();
            done.store(true, Ordering::SeqCst);
            // SAFETY: U's read.
            unsafe { lock.unlock_shared(g) };
        })
    };
    held.wait();
    // T: same lock, same (only) slot, taken by U: slow path.
    let t = lock.lock_shared();
    assert!(!t.is_fast(), "T collides with U and takes the slow path");
    assert!(lock.inner().is_locked(), "T holds the underlying lock");
    // SAFETY: T's read.
    unsafe { lock.unlock_shared(t) };
    assert!(
        !lock.inner().is_locked(),
        "T's unlock did not release T's read of the underlying lock"
    );
    assert!(
        lock.is_locked(),
        "T's unlock cleared U's slot: U is still inside"
    );
    assert!(
        lock.try_lock_exclusive().is_none(),
        "a writer got in while U (fast path) is inside"
    );
    // A writer must wait for U.
    let w = {
        let (lock, done) = (lock.clone(), done.clone());
        std::thread::spawn(move || {
            let g = lock.lock_exclusive();
            let after_u = done.load(Ordering::SeqCst);
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(g) };
            after_u
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    release.wait();
    u.join().unwrap();
    assert!(w.join().unwrap(), "the writer entered before U left");
    assert!(!lock.is_locked());
}

#[test]
fn two_locks_share_the_one_slot() {
    let _serial = one_slot();
    let (a, b) = (Pl::new(), Pl::new());
    support::bias(&a);
    support::bias(&b);
    let ga = a.lock_shared();
    let gb = b.lock_shared();
    assert!(ga.is_fast() && !gb.is_fast());
    assert!(b.try_lock_exclusive().is_none());
    // SAFETY: our reads.
    unsafe {
        b.unlock_shared(gb);
        let w = b
            .try_lock_exclusive()
            .expect("b is free; a's reader is not b's");
        b.unlock_exclusive(w);
        a.unlock_shared(ga);
    }
    assert!(!a.is_locked() && !b.is_locked());
}

#[test]
fn stress_with_certain_collisions() {
    let _serial = one_slot();
    testing::stress_1_2_8(&Pl::new());
    testing::stress_1_2_8(&Bravo::<rwlock_core::PfQueue>::new());
    testing::stress_1_2_8(&Bravo::<parking_lot::RawRwLock>::new());
    let mut cfg = testing::StressConfig::new(8);
    cfg.write_percent = 1;
    testing::stress(&Bravo::<rwlock_core::PfTicket>::new(), &cfg);
}
