//! `is_locked_exclusive` is exact while a writer is inside (regression,
//! issue 14): it used to answer "writer mutex held and no reader arrived",
//! so a reader waiting at the indicator (RP, RP-opt: 1000 false answers in
//! 1000 polls) or arriving and departing around a failed `try_read` (WP,
//! NP, DR: about half false) made `debug_assert!(lock.is_locked_exclusive())`
//! fail inside a write section.
#![cfg(not(loom))]

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lock_api::RawRwLock;

/// Holds the write lock while one reader blocks in `lock_shared` and
/// another spins on `try_lock_shared`; polls `is_locked_exclusive` from
/// the writer's thread and from a third thread.
fn polls_exact<L: RawRwLock + Sync>(name: &str) {
    let lock = L::INIT;
    assert!(!lock.is_locked_exclusive(), "{name}: a free lock");
    let w = lock.lock_exclusive();
    let stop = AtomicBool::new(false);
    let tries = AtomicUsize::new(0);
    let observer_false = AtomicUsize::new(0);
    let polled = std::thread::scope(|outer| {
        // Blocked reader: waits (arrived, for RP and RP-opt) until the write ends.
        outer.spawn(|| {
            let g = lock.lock_shared();
            // SAFETY: our read.
            unsafe { lock.unlock_shared(g) };
        });
        // The spinning reader and the observer stop (and are joined)
        // before the write ends (the guard stops them on any exit).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                // Relaxed: a stop flag; the scope joins the threads.
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let polled = std::thread::scope(|s| {
            // Spinning reader: arrives and departs around failed try-reads.
            s.spawn(|| {
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    match lock.try_lock_shared() {
                        // SAFETY: our read.
                        Some(g) => unsafe { lock.unlock_shared(g) },
                        None => {
                            tries.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
            // A third thread's snapshot agrees while the writer stays inside.
            s.spawn(|| {
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    if !lock.is_locked_exclusive() {
                        observer_false.fetch_add(1, Ordering::Relaxed);
                    }
                    std::hint::spin_loop();
                }
            });
            let _stop = Stop(&stop);
            // Give the readers time to reach their waits, then poll.
            let t0 = Instant::now();
            let (mut polls, mut wrong) = (0u64, 0u64);
            while t0.elapsed() < Duration::from_millis(200)
                || (tries.load(Ordering::Relaxed) < 100 && t0.elapsed() < Duration::from_secs(30))
            {
                for _ in 0..1000 {
                    polls += 1;
                    if !lock.is_locked_exclusive() {
                        wrong += 1;
                    }
                }
                std::thread::yield_now();
            }
            (polls, wrong)
        });
        // SAFETY: our write; the blocked reader gets in after it.
        unsafe { lock.unlock_exclusive(w) };
        polled
    });
    // Asserted once every thread is joined and the lock released, so that
    // a failure reports instead of hanging.
    let (polls, wrong) = polled;
    assert!(
        tries.load(Ordering::Relaxed) >= 100,
        "{name}: the try-reader hardly ran"
    );
    assert_eq!(
        wrong, 0,
        "{name}: is_locked_exclusive() was false in {wrong} of {polls} polls by the writer"
    );
    assert_eq!(
        observer_false.load(Ordering::Relaxed),
        0,
        "{name}: another thread saw is_locked_exclusive() false during the write"
    );
    assert!(!lock.is_locked_exclusive(), "{name}: after the write");
    let r = lock.lock_shared();
    assert!(!lock.is_locked_exclusive(), "{name}: during a read");
    // SAFETY: our read.
    unsafe { lock.unlock_shared(r) };
}

#[test]
fn is_locked_exclusive_is_exact_beside_waiting_and_spinning_readers() {
    for_every_variant!(|name, L| {
        polls_exact::<L>(name);
    });
}

/// Through a try-write and a downgrade the flag follows the writer.
fn follows_try_write_and_downgrade<L: lock_api::RawRwLockDowngrade>(name: &str) {
    let lock = L::INIT;
    let w = lock.try_lock_exclusive().expect("free lock");
    assert!(
        lock.is_locked_exclusive(),
        "{name}: after try_lock_exclusive"
    );
    // SAFETY: our write.
    let r = unsafe { lock.downgrade(w) };
    assert!(!lock.is_locked_exclusive(), "{name}: after a downgrade");
    // SAFETY: our read.
    unsafe { lock.unlock_shared(r) };
}

#[test]
fn is_locked_exclusive_follows_try_write_and_downgrade() {
    for_every_variant!(|name, L| {
        follows_try_write_and_downgrade::<L>(name);
    });
}
