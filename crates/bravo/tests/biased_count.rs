//! The process-wide count of biased periods (`src/raw/biased.rs`): every
//! way a bias begins and ends keeps it balanced, and an uncounted policy
//! never touches it. Its own process (one test), so that no other test's
//! locks move the count.

use std::time::Duration;

use bravo::Bravo;
use bravo::policy::UncountedPolicy;
use bravo::raw::biased_locks;
use lock_api::{RawRwLock, RawRwLockTimed};

type Pl = Bravo<parking_lot::RawRwLock>;

/// One read on a fresh thread, whose first slow read consults the clock
/// and so sets the bias of a lock that was never revoked.
fn bias<L: RawRwLock + Sync, P: bravo::Policy>(lock: &Bravo<L, P>) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = lock.lock_shared();
            // SAFETY: the read just taken.
            unsafe { lock.unlock_shared(g) };
        });
    });
    assert!(lock.is_biased(), "a first slow read biases a fresh lock");
}

fn write<L: RawRwLock>(lock: &L) {
    let g = lock.lock_exclusive();
    // SAFETY: the write just taken.
    unsafe { lock.unlock_exclusive(g) };
}

#[test]
fn every_biased_period_is_counted_once_and_ended_once() {
    assert_eq!(biased_locks(), 0);

    // Set, then ended by a write's revocation or by a drop.
    let a = Box::new(Pl::new());
    let b = Box::new(Pl::new());
    bias(&*a);
    bias(&*b);
    assert_eq!(biased_locks(), 2);
    write(&*a);
    assert!(!a.is_biased());
    assert_eq!(biased_locks(), 1, "a revocation ends its period");
    drop(b);
    assert_eq!(biased_locks(), 0, "dropping a biased lock ends its period");

    // With the count at 0 a write does not load the word, and must still
    // see that nothing is biased: a fresh lock's write, then its first
    // read sets the bias again.
    write(&*a);
    assert_eq!(biased_locks(), 0);

    // Moved while biased: still one period, ended at its new address.
    let m = Pl::new();
    bias(&m);
    let moved = Box::new(m);
    assert_eq!(biased_locks(), 1);
    write(&*moved);
    assert!(!moved.is_biased());
    assert_eq!(biased_locks(), 0);

    // A timed write that gives up beside a fast reader puts the bias
    // back: the period goes on, and the next write ends it.
    let t = Pl::new();
    bias(&t);
    std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = &t;
        s.spawn(move || {
            let g = t.lock_shared();
            assert!(g.is_fast());
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            // SAFETY: the read taken above.
            unsafe { t.unlock_shared(g) };
        });
        held_rx.recv().unwrap();
        assert!(
            t.try_lock_exclusive_for(Duration::from_millis(20))
                .is_none()
        );
        assert!(t.is_biased(), "the timed write gave the bias back");
        assert_eq!(biased_locks(), 1);
        done_tx.send(()).unwrap();
    });
    write(&t);
    assert_eq!(biased_locks(), 0);

    // An uncounted policy never moves the count.
    let u = Bravo::<parking_lot::RawRwLock, UncountedPolicy>::new();
    bias(&u);
    assert_eq!(biased_locks(), 0);
    write(&u);
    assert!(!u.is_biased());
    assert_eq!(biased_locks(), 0);

    // A biased lock never dropped stays counted, and other locks' writers
    // then load their words (still correct: a biased one is revoked).
    let leaked: &'static Pl = Box::leak(Box::new(Pl::new()));
    bias(leaked);
    let c = Pl::new();
    bias(&c);
    assert_eq!(biased_locks(), 2);
    write(&c);
    assert!(!c.is_biased(), "with the count above 0 a write revokes");
    assert_eq!(biased_locks(), 1);
}
