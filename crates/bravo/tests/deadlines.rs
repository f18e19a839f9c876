//! Timed writes and upgrades wait until their deadline, also while another
//! writer's revocation is running (regression, issue 14: with the default
//! policy a blocked writer revokes without holding `L`, and a timed write
//! that got `L` meanwhile gave up at once, after about 1.5 µs of a 3 s
//! timeout; a timed upgrade likewise).
#![cfg(not(loom))]

mod support;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bravo::{Bravo, Policy};
use lock_api::{RawRwLock, RawRwLockTimed, RawRwLockUpgrade, RawRwLockUpgradeTimed};
use rwlock_core::testing::with_busy_threads;
use support::{FastReader, bias};

type Pl = Bravo<parking_lot::RawRwLock>;

// The tests share the process's visible-readers table: one at a time, so
// that no other test's reader takes the slot a fast reader here expects.
use rwlock_core::testing::serial;

fn revoking(lock: &Pl) -> bool {
    format!("{lock:?}").contains("revoking: true")
}

/// A fast reader holding the biased `lock` for `hold`, and a writer
/// blocked in `lock_exclusive` behind it, revoking the bias without
/// holding `L` (the default policy's early revocation).
fn reader_and_revoking_writer(lock: &Arc<Pl>, hold: Duration) -> (FastReader, JoinHandle<()>) {
    bias(lock);
    let reader = FastReader::spawn(lock.clone(), hold);
    let writer = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            let g = lock.lock_exclusive();
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(g) };
        })
    };
    let t0 = Instant::now();
    while !revoking(lock) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the writer never revoked"
        );
        std::thread::yield_now();
    }
    (reader, writer)
}

/// What the issue reproduced: the timed forms, given 3 s, must get the lock
/// once the reader leaves (at 500 ms), not give up at once.
fn timed_forms_outwait_a_running_revocation() {
    // A fresh lock each time: a revocation that waited 500 ms inhibits the
    // bias for several seconds after it.
    for form in ["try_lock_exclusive_for", "try_lock_exclusive_until"] {
        let lock = Arc::new(Pl::new());
        let (reader, writer) = reader_and_revoking_writer(&lock, Duration::from_millis(500));
        let t0 = Instant::now();
        let g = match form {
            "try_lock_exclusive_for" => lock.try_lock_exclusive_for(Duration::from_secs(3)),
            _ => lock.try_lock_exclusive_until(t0 + Duration::from_secs(3)),
        };
        let took = t0.elapsed();
        let g = g.unwrap_or_else(|| panic!("{form} gave up after {took:?} of a 3 s timeout"));
        assert!(
            reader.has_left(),
            "{form} got the lock beside a fast reader"
        );
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
        reader.join();
        writer.join().unwrap();
    }
    for form in ["try_upgrade_for", "try_upgrade_until"] {
        let lock = Arc::new(Pl::new());
        let (reader, writer) = reader_and_revoking_writer(&lock, Duration::from_millis(500));
        let u = lock.lock_upgradable();
        let t0 = Instant::now();
        // SAFETY: our upgradable read, handed back on failure.
        let result = unsafe {
            match form {
                "try_upgrade_for" => lock.try_upgrade_for(u, Duration::from_secs(3)),
                _ => lock.try_upgrade_until(u, t0 + Duration::from_secs(3)),
            }
        };
        let took = t0.elapsed();
        let Ok(g) = result else {
            panic!("{form} gave up after {took:?} of a 3 s timeout");
        };
        assert!(reader.has_left(), "{form} upgraded beside a fast reader");
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
        reader.join();
        writer.join().unwrap();
    }
}

/// A reader that outstays the deadline: the timed forms fail, no earlier
/// than the deadline and within `slack` after it, with the revocation
/// still running in the blocked writer.
fn timed_forms_fail_at_their_deadline(slack: Duration) {
    let lock = Arc::new(Pl::new());
    let timeout = Duration::from_millis(200);
    let check = |form: &str, ok: bool, t0: Instant| {
        let took = t0.elapsed();
        assert!(!ok, "{form} succeeded beside a fast reader");
        assert!(
            took >= timeout,
            "{form} gave up after {took:?} of {timeout:?}"
        );
        assert!(
            took <= timeout + slack,
            "{form} returned {took:?} after it started ({timeout:?} deadline, {slack:?} slack)"
        );
    };
    let (reader, writer) = reader_and_revoking_writer(&lock, Duration::from_millis(2_500));
    let t0 = Instant::now();
    check(
        "try_lock_exclusive_for",
        lock.try_lock_exclusive_for(timeout).is_some(),
        t0,
    );
    let t0 = Instant::now();
    check(
        "try_lock_exclusive_until",
        lock.try_lock_exclusive_until(t0 + timeout).is_some(),
        t0,
    );
    let u = lock.lock_upgradable();
    let t0 = Instant::now();
    // SAFETY: our upgradable read, handed back on failure.
    let u = match unsafe { lock.try_upgrade_for(u, timeout) } {
        Ok(_) => panic!("try_upgrade_for succeeded beside a fast reader"),
        Err(u) => u,
    };
    check("try_upgrade_for", false, t0);
    // SAFETY: our upgradable read.
    unsafe { lock.unlock_upgradable(u) };
    reader.join();
    writer.join().unwrap();
    assert!(!lock.is_locked());
}

#[test]
fn timed_write_and_upgrade_wait_for_a_running_revocation() {
    let _serial = serial();
    timed_forms_outwait_a_running_revocation();
}

#[test]
fn timed_write_and_upgrade_fail_at_their_deadline() {
    let _serial = serial();
    timed_forms_fail_at_their_deadline(Duration::from_millis(250));
}

/// The same with 16 threads spinning on the 2 cores of the development
/// machine (the deadline must hold on a busy machine too).
#[test]
fn timed_forms_hold_their_deadline_oversubscribed() {
    let _serial = serial();
    with_busy_threads(16, || {
        timed_forms_outwait_a_running_revocation();
        timed_forms_fail_at_their_deadline(Duration::from_secs(1));
    });
}
