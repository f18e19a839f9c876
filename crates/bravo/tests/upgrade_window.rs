//! An upgrade keeps the bias off from its revocation until `L`'s upgrade
//! answers (`Bravo::hold_bias_off`; found in review, 2026-11-28). Before,
//! a slow reader that `L` had let in beside the upgradable read could set
//! the bias in between, and the upgrade, once `L` granted it, waited
//! holding exclusive access for the fast readers that came in meanwhile: a
//! `try_upgrade` blocked until they left, and a blocking upgrade
//! deadlocked with such a reader's nested read.
//!
//! `Delayed` is parking_lot's lock with hooks (`rwlock_core::testing::Hooked`)
//! that pause, armed once, where a preemption would open the window: at the start of `try_upgrade`, and
//! in `lock_shared` after `L`'s read is taken (before BRAVO's bias check).
//! Each pause lasts until the test has set the scene (a flag, not a
//! sleep, so that a loaded machine cannot end it early). The two tests arm
//! different pauses; a mutex keeps them apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use bravo::Bravo;
use lock_api::{RawRwLock, RawRwLockUpgrade};
use rwlock_core::testing::{Hooked, Hooks, LockOp, serial};

type Pl = parking_lot::RawRwLock;

/// How long the first test's slow reads go on.
const READS_FOR: Duration = Duration::from_millis(100);
/// How long the second test's slow reader stays paused once the upgrade
/// has called `L`'s `upgrade` (so that the upgrade is waiting in it).
const SETTLE: Duration = Duration::from_millis(50);

static PAUSE_TRY_UPGRADE: AtomicBool = AtomicBool::new(false);
static IN_TRY_UPGRADE: AtomicBool = AtomicBool::new(false);
static RESUME_TRY_UPGRADE: AtomicBool = AtomicBool::new(false);
static PAUSE_READ: AtomicBool = AtomicBool::new(false);
static IN_READ: AtomicBool = AtomicBool::new(false);
static IN_UPGRADE: AtomicBool = AtomicBool::new(false);

/// Waits until `flag` is set, for at most 10 s (a test whose scene never
/// comes fails on its own assertions instead of hanging).
fn wait_for(flag: &AtomicBool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !flag.load(Ordering::SeqCst) && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
}

/// The pauses, as hooks around parking_lot's operations.
struct Pauses;

impl Hooks for Pauses {
    const INIT: Self = Pauses;
    fn before(&self, op: LockOp) {
        match op {
            LockOp::TryUpgrade if PAUSE_TRY_UPGRADE.swap(false, Ordering::SeqCst) => {
                IN_TRY_UPGRADE.store(true, Ordering::SeqCst);
                wait_for(&RESUME_TRY_UPGRADE);
            }
            LockOp::Upgrade => IN_UPGRADE.store(true, Ordering::SeqCst),
            _ => {}
        }
    }
    fn after(&self, op: LockOp) {
        if op == LockOp::Shared && PAUSE_READ.swap(false, Ordering::SeqCst) {
            IN_READ.store(true, Ordering::SeqCst);
            wait_for(&IN_UPGRADE);
            thread::sleep(SETTLE);
        }
    }
}

type Delayed = Hooked<Pl, Pauses>;

/// `try_upgrade` on an unbiased lock; while it is inside `L`'s
/// `try_upgrade`, another thread's slow reads (which `L` lets in beside an
/// upgradable read) try to set the bias, and one more read is taken and
/// held until the upgrader answers. The answer must come while that read
/// is held (an `Err`: a reader is in), and the bias must stay off.
#[test]
fn try_upgrade_answers_while_a_reader_that_came_after_its_revocation_is_in() {
    let _serial = serial();
    let lock = Arc::new(Bravo::<Delayed>::new());
    let (tx, rx) = mpsc::channel();
    let upgrader = {
        let lock = lock.clone();
        thread::spawn(move || {
            let u = lock.lock_upgradable();
            PAUSE_TRY_UPGRADE.store(true, Ordering::SeqCst);
            // SAFETY: our upgradable read.
            let ok = match unsafe { lock.try_upgrade(u) } {
                // SAFETY: our write.
                Ok(w) => unsafe {
                    lock.unlock_exclusive(w);
                    true
                },
                // SAFETY: our upgradable read.
                Err(u) => unsafe {
                    lock.unlock_upgradable(u);
                    false
                },
            };
            tx.send(ok).unwrap();
        })
    };
    while !IN_TRY_UPGRADE.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    // Slow reads for a while: each may set the bias.
    let until = Instant::now() + READS_FOR;
    while Instant::now() < until {
        let g = lock.lock_shared();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        assert!(
            !lock.is_biased(),
            "a slow reader biased the lock while try_upgrade was in L's try_upgrade"
        );
    }
    let read = lock.lock_shared();
    RESUME_TRY_UPGRADE.store(true, Ordering::SeqCst);
    let answer = rx.recv_timeout(Duration::from_secs(3));
    // SAFETY: our read.
    unsafe { lock.unlock_shared(read) };
    assert_eq!(
        answer,
        Ok(false),
        "try_upgrade must fail at once beside a reader, not wait for it"
    );
    upgrader.join().unwrap();
}

/// A reader holds `L` (paused before BRAVO's bias check) when an
/// upgradable read upgrades, so `L`'s upgrade waits for it. Its bias check
/// must not set the bias (it looks, still holding `L`'s read). A third
/// thread reads twice, nested, as soon as it sees the bias or the reader
/// gone (its first read is fast if the bias got set). It must get through:
/// the upgrade may not wait for a fast reader while holding `L`, which the
/// nested read then queues on (without the hold this deadlocked in two
/// runs of five).
#[test]
fn an_upgrade_waiting_for_a_slow_reader_lets_no_fast_reader_in() {
    let _serial = serial();
    let lock = Arc::new(Bravo::<Delayed>::new());
    let slow_reader_done = Arc::new(AtomicBool::new(false));
    let slow_reader = {
        let lock = lock.clone();
        let done = slow_reader_done.clone();
        thread::spawn(move || {
            PAUSE_READ.store(true, Ordering::SeqCst);
            let g = lock.lock_shared();
            // Still holding `L`'s read, which the upgrade waits for: the
            // upgrade has not revoked anything since our bias check.
            let biased = lock.is_biased();
            // SAFETY: our read.
            unsafe { lock.unlock_shared(g) };
            done.store(true, Ordering::SeqCst);
            biased
        })
    };
    while !IN_READ.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    let upgrader = {
        let lock = lock.clone();
        thread::spawn(move || {
            let u = lock.lock_upgradable();
            // SAFETY: our upgradable read.
            let w = unsafe { lock.upgrade(u) };
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
        })
    };
    let (tx, rx) = mpsc::channel::<bool>();
    let nested_reader = {
        let lock = lock.clone();
        let done = slow_reader_done.clone();
        thread::spawn(move || {
            while !lock.is_biased() && !done.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            let saw_bias = lock.is_biased();
            let outer = lock.lock_shared();
            let inner = lock.lock_shared();
            // SAFETY: our reads.
            unsafe {
                lock.unlock_shared(inner);
                lock.unlock_shared(outer);
            }
            tx.send(saw_bias).unwrap();
        })
    };
    assert!(
        !slow_reader.join().unwrap(),
        "the slow reader biased the lock while the upgrade waited for it"
    );
    let saw_bias = rx
        .recv_timeout(Duration::from_secs(3))
        .expect("the nested read and the upgrade deadlocked");
    assert!(
        !saw_bias,
        "the slow reader biased the lock while the upgrade waited for it"
    );
    nested_reader.join().unwrap();
    upgrader.join().unwrap();
}

/// A thread holding a fast read while a writer (which holds `L` with
/// [`Listing1`](bravo::Listing1)) waits for it is not excluded by that
/// writer yet: `is_locked_exclusive` says `false`, as parking_lot's does
/// for a reader with a writer queued.
#[test]
fn is_locked_exclusive_is_false_while_a_writer_waits_for_fast_readers() {
    let _serial = serial();
    let lock = Arc::new(Bravo::<Pl, bravo::Listing1>::new());
    for _ in 0..10_000 {
        let g = lock.lock_shared();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        if lock.is_biased() {
            break;
        }
        thread::sleep(Duration::from_micros(100));
    }
    let read = lock.lock_shared();
    assert!(read.is_fast(), "the lock never biased");
    let writer = {
        let lock = lock.clone();
        thread::spawn(move || {
            let w = lock.lock_exclusive();
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
        })
    };
    // The writer takes `L`, then waits for our read.
    let t0 = Instant::now();
    while !lock.inner().is_locked_exclusive() && t0.elapsed() < Duration::from_secs(3) {
        thread::yield_now();
    }
    assert!(
        lock.inner().is_locked_exclusive(),
        "the writer never took L"
    );
    assert!(
        !lock.is_locked_exclusive(),
        "a fast reader is inside; the writer waits for it"
    );
    // SAFETY: our read.
    unsafe { lock.unlock_shared(read) };
    writer.join().unwrap();
    assert!(!lock.is_locked_exclusive());
}
