//! Cross-crate behaviour of the raw locks behind `lock_api`: guard types,
//! `Send`-ness, statics, and heavy oversubscription through the safe API.

use std::sync::atomic::{AtomicUsize, Ordering};

use lock_api::{RawRwLock, RwLock};
use rwlock_core::{BrLock, PfQueue, PfTicket, PthreadRwLock};

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

#[test]
fn guards_are_send_where_unlocking_elsewhere_is_correct() {
    // Stateless (PF-T), phase (PF-Q) and sub-lock index (brlock) may be
    // released by another thread.
    assert_send::<lock_api::RwLockReadGuard<'static, PfTicket, u8>>();
    assert_send::<lock_api::RwLockWriteGuard<'static, PfTicket, u8>>();
    assert_send::<lock_api::RwLockReadGuard<'static, PfQueue, u8>>();
    assert_send::<lock_api::RwLockWriteGuard<'static, PfQueue, u8>>();
    assert_send::<lock_api::RwLockReadGuard<'static, BrLock, u8>>();
    assert_send::<lock_api::RwLockWriteGuard<'static, BrLock, u8>>();
    // pthread's are not (see the compile_fail doc-test in rwlock_core::pthread).
    assert_sync::<RwLock<PthreadRwLock, u8>>();
    assert_sync::<RwLock<BrLock, u8>>();
    // Cohort locks: a reader's indicator slot, a writer's cohort node and a
    // ticket may all be released from another thread.
    assert_send::<lock_api::RwLockReadGuard<'static, cohort::CRwWp, u8>>();
    assert_send::<lock_api::RwLockWriteGuard<'static, cohort::CRwWp, u8>>();
    assert_send::<lock_api::RwLockWriteGuard<'static, cohort::DrTicket, u8>>();
    assert_send::<lock_api::MutexGuard<'static, cohort::CPtlTkt, u8>>();
    assert_sync::<cohort::RwLock<u8>>();
    // prwlock: the write guard may move; the read guard carries the
    // thread's status record and is not Send (compile_fail doc-test in the
    // prwlock crate docs).
    assert_send::<lock_api::RwLockWriteGuard<'static, prwlock::PrwLock, u8>>();
    assert_sync::<prwlock::RwLock<u8>>();
}

#[test]
fn read_guard_released_on_another_thread() {
    fn check<R: RawRwLock + Sync>(lock: &RwLock<R, u32>)
    where
        R::SharedGuard: Send,
    {
        let guard = lock.read();
        std::thread::scope(|s| {
            s.spawn(move || assert_eq!(*guard, 0));
        });
        *lock.write() += 1;
        assert_eq!(*lock.read(), 1);
    }
    check(&RwLock::<PfTicket, u32>::new(0));
    check(&RwLock::<PfQueue, u32>::new(0));
    check(&RwLock::<BrLock, u32>::new(0));
    check(&RwLock::<cohort::CRwWp, u32>::new(0));
    check(&RwLock::<cohort::CRwRpOpt, u32>::new(0));
    check(&RwLock::<cohort::CRwNp, u32>::new(0));
    check(&RwLock::<bravo::Bravo<cohort::CRwWp>, u32>::new(0));
}

static COUNTER_T: RwLock<PfTicket, u64> = RwLock::new(0);
static COUNTER_Q: RwLock<PfQueue, u64> = RwLock::new(0);
static COUNTER_B: RwLock<BrLock, u64> = RwLock::new(0);
static COUNTER_P: RwLock<PthreadRwLock, u64> = RwLock::new(0);
static COUNTER_WP: RwLock<cohort::CRwWp, u64> = RwLock::new(0);
static COUNTER_RP_OPT: RwLock<cohort::CRwRpOpt, u64> = RwLock::new(0);
static COUNTER_RP: RwLock<cohort::CRwRp, u64> = RwLock::new(0);
static COUNTER_NP: RwLock<cohort::CRwNp, u64> = RwLock::new(0);
static COUNTER_DR: RwLock<cohort::DrTicket, u64> = RwLock::new(0);
static COUNTER_BRAVO_WP: RwLock<bravo::Bravo<cohort::CRwWp>, u64> = RwLock::new(0);
static COUNTER_PRW: RwLock<prwlock::PrwLock, u64> = RwLock::new(0);
static COUNTER_BRAVO_PRW: RwLock<bravo::Bravo<prwlock::PrwLock>, u64> = RwLock::new(0);

/// 64 threads on however few cores: every lock must make progress by
/// yielding and parking, never by spinning out its time slices (a lock that
/// cannot turns this test from milliseconds into minutes).
fn oversubscribed<R: RawRwLock + Sync>(lock: &'static RwLock<R, u64>) {
    const THREADS: usize = 64;
    const OPS: usize = 2_000;
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let reads = &reads;
            s.spawn(move || {
                for i in 0..OPS {
                    if (i + t) % 10 == 0 {
                        *lock.write() += 1;
                    } else {
                        let v = *lock.read();
                        std::hint::black_box(v);
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(*lock.read(), (THREADS * OPS / 10) as u64);
    assert_eq!(reads.load(Ordering::Relaxed), THREADS * OPS * 9 / 10);
}

#[test]
fn sixty_four_threads_through_statics() {
    oversubscribed(&COUNTER_T);
    oversubscribed(&COUNTER_Q);
    oversubscribed(&COUNTER_B);
    oversubscribed(&COUNTER_P);
}

#[test]
fn sixty_four_threads_through_cohort_statics() {
    oversubscribed(&COUNTER_WP);
    oversubscribed(&COUNTER_RP_OPT);
    oversubscribed(&COUNTER_RP);
    oversubscribed(&COUNTER_NP);
    oversubscribed(&COUNTER_DR);
    oversubscribed(&COUNTER_BRAVO_WP);
}

#[test]
fn sixty_four_threads_through_prwlock_statics() {
    oversubscribed(&COUNTER_PRW);
    oversubscribed(&COUNTER_BRAVO_PRW);
}

#[test]
fn sixty_four_threads_through_the_cohort_mutex() {
    static M: cohort::Mutex<u64> = cohort::Mutex::new(0);
    std::thread::scope(|s| {
        for _ in 0..64 {
            s.spawn(|| {
                for _ in 0..500 {
                    *M.lock() += 1;
                }
            });
        }
    });
    assert_eq!(*M.lock(), 64 * 500);
}

#[test]
fn a_locked_lock_may_be_moved_and_dropped() {
    // lock_api: "a caller with exclusive ownership of the lock object may move
    // or drop it even while it is locked".
    fn check<R: RawRwLock>() {
        let lock = RwLock::<R, Vec<u8>>::new(vec![1]);
        std::mem::forget(lock.read());
        let moved = Box::new(lock);
        assert!(moved.is_locked());
        drop(moved);
        let lock = RwLock::<R, Vec<u8>>::new(vec![2]);
        std::mem::forget(lock.write());
        let moved = Box::new(lock);
        assert!(moved.is_locked_exclusive());
        drop(moved);
    }
    check::<PfTicket>();
    check::<PfQueue>();
    check::<BrLock>();
    check::<PthreadRwLock>();
    check::<cohort::CRwWp>();
    check::<cohort::CRwRpOpt>();
    check::<cohort::CRwNp>();
    check::<cohort::DrTicket>();
    check::<prwlock::PrwLock>();
}
