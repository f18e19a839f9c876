//! Try and timed forms of every lock of the workspace (issue 14): a try
//! form never blocks and never fails on a free lock; a timed form never
//! gives up before its deadline and returns soon after it. Each check runs
//! on a quiet machine and again with 16 threads spinning on its cores.
#![cfg(not(loom))]

use std::time::Duration;

use lock_api::RawRwLock;
use rwlock_core::testing::{check_timed, check_timed_upgrade, check_try_forms, with_busy_threads};
use rwlock_core::{BrLock, PfQueue, PfTicket, PthreadRwLock};

type ParkingLot = parking_lot::RawRwLock;

const TIMEOUT: Duration = Duration::from_millis(100);
/// How late a failed attempt may return (scheduling noise; more when 16
/// threads compete for the cores).
const SLACK: Duration = Duration::from_millis(250);
const BUSY_SLACK: Duration = Duration::from_secs(1);
const BUSY: usize = 16;

/// The table is shared by every `Bravo` lock of the process: one test at a
/// time, so that another test's fast reader cannot take the slot a check
/// expects.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn try_forms_of_every_lock(slack: Duration) {
    fn one<L: RawRwLock + Sync>(slack: Duration) {
        let lock = L::INIT;
        check_try_forms(&lock, slack);
    }
    one::<PfTicket>(slack);
    one::<PfQueue>(slack);
    one::<BrLock>(slack);
    one::<PthreadRwLock>(slack);
    one::<ParkingLot>(slack);
    one::<bravo::RawRwLock>(slack);
    one::<bravo::RawPfQueue>(slack);
    one::<bravo::RawPfTicket>(slack);
    one::<bravo::RawPthread>(slack);
    one::<bravo::Bravo<BrLock>>(slack);
    one::<bravo::Bravo<cohort::CRwWp>>(slack);
    one::<bravo::Bravo<prwlock::PrwLock>>(slack);
    one::<cohort::CRwWp>(slack);
    one::<cohort::CRwRpOpt>(slack);
    one::<cohort::CRwRp>(slack);
    one::<cohort::CRwNp>(slack);
    one::<cohort::DrTicket>(slack);
    one::<prwlock::PrwLock>(slack);
    // A biased BRAVO lock: the try-read takes the fast path.
    let lock = bravo::RawRwLock::INIT;
    bias(&lock);
    check_try_forms(&lock, slack);
}

/// The cohort mutex's `try_lock`, beside a holder on another thread.
fn cohort_mutex_try_lock(slack: Duration) {
    use lock_api::RawMutex;
    let m = cohort::CPtlTkt::INIT;
    let g = m
        .try_lock()
        .expect("try_lock failed on a free cohort mutex");
    // SAFETY: our lock.
    unsafe { m.unlock(g) };
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let m = &m;
        s.spawn(move || {
            let g = m.lock();
            held_tx.send(()).unwrap();
            let _ = done_rx.recv();
            // SAFETY: this thread's lock.
            unsafe { m.unlock(g) };
        });
        held_rx.recv().unwrap();
        let t0 = std::time::Instant::now();
        assert!(m.try_lock().is_none(), "try_lock beside a holder");
        assert!(
            t0.elapsed() <= slack,
            "try_lock blocked for {:?}",
            t0.elapsed()
        );
        done_tx.send(()).unwrap();
    });
    assert!(!m.is_locked());
}

fn bias<L: RawRwLock, P: bravo::Policy>(lock: &bravo::Bravo<L, P>) {
    for _ in 0..1000 {
        let g = lock.lock_shared();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        if lock.is_biased() {
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    panic!("slow reads never enabled the bias");
}

/// Every lock with timed forms: BRAVO over parking_lot (default policy and
/// Listing 1, unbiased and biased) and parking_lot itself for reference.
fn timed_forms(slack: Duration) {
    let lock = ParkingLot::INIT;
    check_timed(&lock, TIMEOUT, slack);
    check_timed_upgrade(&lock, TIMEOUT, slack);
    for biased in [false, true] {
        let lock = bravo::RawRwLock::INIT;
        if biased {
            bias(&lock);
        }
        check_timed(&lock, TIMEOUT, slack);
        let lock = bravo::RawRwLock::INIT;
        if biased {
            bias(&lock);
        }
        check_timed_upgrade(&lock, TIMEOUT, slack);
        let lock = bravo::Bravo::<ParkingLot, bravo::Listing1>::INIT;
        if biased {
            bias(&lock);
        }
        check_timed(&lock, TIMEOUT, slack);
    }
}

#[test]
fn try_forms_never_block_and_never_fail_on_a_free_lock() {
    let _serial = serial();
    try_forms_of_every_lock(SLACK);
    cohort_mutex_try_lock(SLACK);
}

#[test]
fn try_forms_oversubscribed() {
    let _serial = serial();
    with_busy_threads(BUSY, || {
        try_forms_of_every_lock(BUSY_SLACK);
        cohort_mutex_try_lock(BUSY_SLACK);
    });
}

#[test]
fn timed_forms_keep_their_deadline() {
    let _serial = serial();
    timed_forms(SLACK);
}

#[test]
fn timed_forms_keep_their_deadline_oversubscribed() {
    let _serial = serial();
    with_busy_threads(BUSY, || timed_forms(BUSY_SLACK));
}

/// `is_locked()` is true for a reader that holds the lock while other
/// readers come and go, for every lock.
#[test]
fn is_locked_holds_for_a_reader_of_every_lock() {
    let _serial = serial();
    fn one<L: RawRwLock + Sync>() {
        let lock = L::INIT;
        rwlock_core::testing::check_is_locked_under_reader_churn(&lock, 200_000);
    }
    one::<PfTicket>();
    one::<PfQueue>();
    one::<BrLock>();
    one::<PthreadRwLock>();
    one::<bravo::RawRwLock>();
    one::<bravo::RawPfQueue>();
    one::<cohort::CRwWp>();
    one::<cohort::CRwRpOpt>();
    one::<cohort::CRwRp>();
    one::<cohort::CRwNp>();
    one::<cohort::DrTicket>();
    one::<cohort::WriterPref<cohort::CPtlTkt, cohort::PerNode>>();
    one::<cohort::WriterPref<cohort::CPtlTkt, cohort::Central>>();
    one::<prwlock::PrwLock>();
    let lock = bravo::RawRwLock::INIT;
    bias(&lock);
    rwlock_core::testing::check_is_locked_under_reader_churn(&lock, 20_000);
}
