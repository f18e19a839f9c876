//! Threads come and go: records are reused, exited threads never hold up a
//! writer, locks can be dropped while their readers' threads live on, a
//! leaked guard retires its record, and reads still work while a thread's
//! thread-locals are being destroyed.

mod support;

use std::sync::{Arc, Barrier, mpsc};

use lock_api::RawRwLock;
use prwlock::{Domain, PrwLock};
use support::within_liveness;

#[test]
fn records_are_reused_by_later_threads() {
    static D: Domain = Domain::new();
    let lock = Arc::new(prwlock::RwLock::from_raw(PrwLock::in_domain(&D), 0u64));
    for i in 0..200 {
        let l = lock.clone();
        std::thread::spawn(move || {
            if i % 10 == 0 {
                *l.write() += 1;
            }
            let _ = *l.read();
        })
        .join()
        .unwrap();
    }
    let stats = D.stats();
    assert_eq!(
        stats.records, 1,
        "one thread at a time needs one record: {stats:?}"
    );
    assert_eq!((stats.in_use, stats.retired), (0, 0), "{stats:?}");
    assert_eq!(*lock.read(), 20);
}

#[test]
fn concurrent_threads_come_and_go_under_writers() {
    static D: Domain = Domain::new();
    // Passive reading throughout, so that every thread registers a record:
    // in write-heavy mode (prwlock::policy) readers read actively and this
    // test's writes come close enough for it.
    D.set_write_heavy_mode(false);
    let lock = Arc::new(prwlock::RwLock::from_raw(PrwLock::in_domain(&D), 0u64));
    let l = lock.clone();
    within_liveness("8 rounds of 16 threads", move || {
        for round in 0..8 {
            // 16 threads at a time; each round's threads exit before the
            // next round starts, so the records are reused.
            let handles: Vec<_> = (0..16)
                .map(|t| {
                    let l = l.clone();
                    std::thread::spawn(move || {
                        for i in 0..200 {
                            if (i + t + round) % 50 == 0 {
                                *l.write() += 1;
                            } else {
                                let _ = *l.read();
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
    });
    assert_eq!(*lock.read(), 8 * 16 * 4);
    let stats = D.stats();
    // 16 threads at once and this one, plus a few: a claim that races a
    // release (the record off the walks, not yet free) takes the next free
    // record (seen once, 18, in the 2-node VM under TCG, 2026-11-27).
    // Without reuse it would be 129.
    assert!(stats.records <= 24, "records not reused: {stats:?}");
    // The main thread read above: its record is the one still in use.
    assert_eq!((stats.in_use, stats.retired), (1, 0), "{stats:?}");
}

#[test]
fn writers_never_wait_for_exited_threads() {
    static D: Domain = Domain::new();
    let lock = Arc::new(PrwLock::in_domain(&D));
    let handles: Vec<_> = (0..32)
        .map(|_| {
            let l = lock.clone();
            std::thread::spawn(move || {
                let t = l.lock_shared();
                // SAFETY: our shared acquisition.
                unsafe { l.unlock_shared(t) };
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let l = lock.clone();
    within_liveness("a write after 32 readers exited", move || {
        let w = l.lock_exclusive();
        // SAFETY: our exclusive acquisition.
        unsafe { l.unlock_exclusive(w) };
    });
    let stats = D.stats();
    // Exited threads' records are free: no barrier was needed for them.
    assert_eq!((stats.in_use, stats.heavy_barriers), (0, 0), "{stats:?}");
}

#[test]
fn a_lock_can_be_dropped_while_its_readers_live_on() {
    static D: Domain = Domain::new();
    let (to_threads, from_main): (Vec<_>, Vec<_>) = (0..4).map(|_| mpsc::channel()).unzip();
    let done = Arc::new(Barrier::new(5));
    let handles: Vec<_> = from_main
        .into_iter()
        .map(|rx: mpsc::Receiver<Arc<PrwLock>>| {
            let done = done.clone();
            std::thread::spawn(move || {
                for lock in rx {
                    let t = lock.lock_shared();
                    // SAFETY: our shared acquisition.
                    unsafe { lock.unlock_shared(t) };
                    drop(lock);
                    done.wait();
                }
            })
        })
        .collect();
    for _ in 0..50 {
        // A fresh lock each round, often at the address of the last one.
        let lock = Arc::new(PrwLock::in_domain(&D));
        for tx in &to_threads {
            tx.send(lock.clone()).unwrap();
        }
        done.wait();
        let w = lock.try_lock_exclusive().expect("no reader left");
        // SAFETY: our exclusive acquisition.
        unsafe { lock.unlock_exclusive(w) };
        drop(lock);
    }
    drop(to_threads);
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(D.stats().records, 4);
}

#[test]
fn a_leaked_read_guard_keeps_its_lock_and_retires_its_record() {
    static D: Domain = Domain::new();
    let leaked = Arc::new(prwlock::RwLock::from_raw(PrwLock::in_domain(&D), 1u8));
    let l = leaked.clone();
    std::thread::spawn(move || std::mem::forget(l.read()))
        .join()
        .unwrap();
    let stats = D.stats();
    assert_eq!((stats.in_use, stats.retired), (0, 1), "{stats:?}");
    assert!(leaked.try_write().is_none(), "a leaked read keeps the lock");
    // Other locks of the domain, and new threads, are unaffected.
    let other = Arc::new(prwlock::RwLock::from_raw(PrwLock::in_domain(&D), 2u8));
    let o = other.clone();
    std::thread::spawn(move || *o.write() += 1).join().unwrap();
    assert_eq!(*other.read(), 3);
    assert_eq!(D.stats().records, 2, "the retired record is not reused");
}

#[test]
fn a_lock_dropped_with_a_leaked_read_does_not_hold_up_its_successor() {
    static D: Domain = Domain::new();
    // Slots name locks by id: a new lock at the address of a dropped,
    // leaked-read lock is free.
    let first = Box::new(PrwLock::in_domain(&D));
    let address = &*first as *const PrwLock as usize;
    let _leaked = first.lock_shared(); // never unlocked
    drop(first);
    let mut same_address = 0;
    for _ in 0..8 {
        let next = Box::new(PrwLock::in_domain(&D));
        same_address += usize::from(&*next as *const PrwLock as usize == address);
        let w = next.try_lock_exclusive().expect("a fresh lock is free");
        // SAFETY: our exclusive acquisition.
        unsafe { next.unlock_exclusive(w) };
        let r = next.try_lock_shared().expect("and readable");
        // SAFETY: our shared acquisition.
        unsafe { next.unlock_shared(r) };
    }
    eprintln!("{same_address} of 8 successors reused the dropped lock's address");
}

#[test]
fn reads_work_while_thread_locals_are_destroyed() {
    static D: Domain = Domain::new();
    type Lock = lock_api::RwLock<PrwLock, u32>;
    struct ReadsOnDrop(Arc<Lock>, mpsc::Sender<u32>);
    impl Drop for ReadsOnDrop {
        fn drop(&mut self) {
            let v = *self.0.read();
            *self.0.write() += 1;
            self.1.send(v).unwrap();
        }
    }
    std::thread_local! {
        static LATE: std::cell::RefCell<Option<ReadsOnDrop>> = const { std::cell::RefCell::new(None) };
    }
    let lock = Arc::new(Lock::from_raw(PrwLock::in_domain(&D), 7));
    let (tx, rx) = mpsc::channel();
    let l = lock.clone();
    std::thread::spawn(move || {
        // Registered before the thread's first read, so (destructors run in
        // reverse order) it is destroyed after the prwlock registration:
        // its read finds no record and takes the active path.
        LATE.with(|late| *late.borrow_mut() = Some(ReadsOnDrop(l.clone(), tx)));
        assert_eq!(*l.read(), 7);
    })
    .join()
    .unwrap();
    assert_eq!(rx.recv().unwrap(), 7);
    assert_eq!(*lock.read(), 8);
    assert!(!lock.is_locked());
    let stats = D.stats();
    assert_eq!(
        (stats.records, stats.in_use, stats.retired),
        (1, 1, 0),
        "the thread gave its record back, and the main thread reused it: {stats:?}"
    );
}

/// A read guard kept in a thread-local that outlives the thread's records
/// (destroyed after them): the record is retired with the hold still in
/// it, and a writer waits for the guard, not for the thread's exit.
#[test]
fn a_read_guard_alive_during_thread_local_teardown_keeps_its_lock() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static D: Domain = Domain::new();
    type Lock = prwlock::RwLock<u64>;
    struct Held {
        guard: Option<lock_api::RwLockReadGuard<'static, PrwLock, u64>>,
        torn_down: mpsc::Sender<()>,
        ended: Arc<AtomicBool>,
    }
    impl Drop for Held {
        fn drop(&mut self) {
            let guard = self.guard.take().expect("a guard");
            self.torn_down.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
            // SeqCst: read by the writer once it has the lock.
            self.ended.store(true, Ordering::SeqCst);
            drop(guard);
        }
    }
    std::thread_local! {
        static HELD: std::cell::RefCell<Option<Held>> = const { std::cell::RefCell::new(None) };
    }
    let lock: &'static Lock = Box::leak(Box::new(Lock::from_raw(PrwLock::in_domain(&D), 0)));
    let (torn_tx, torn_rx) = mpsc::channel();
    let ended = Arc::new(AtomicBool::new(false));
    let e = ended.clone();
    let holder = std::thread::spawn(move || {
        // First touched before the thread's first read: destroyed after
        // the thread's records are given back.
        HELD.with(|h| {
            *h.borrow_mut() = Some(Held {
                guard: None,
                torn_down: torn_tx,
                ended: e,
            })
        });
        let guard = lock.read();
        HELD.with(|h| h.borrow_mut().as_mut().unwrap().guard = Some(guard));
    });
    torn_rx.recv().unwrap();
    *lock.write() += 1;
    assert!(
        ended.load(Ordering::SeqCst),
        "a writer entered under a live read guard"
    );
    holder.join().unwrap();
    assert_eq!(*lock.read(), 1);
    // The record was retired while the guard lived, and given back once
    // it had dropped (`a_record_retired_in_teardown_is_given_back_...`).
    assert_eq!(D.stats().retired, 0, "{:?}", D.stats());
}

/// A read guard cached in a thread-local destroyed after the thread's
/// records retires the record at the teardown; once the guard has dropped,
/// the record is given back at the thread's very end, so that short-lived
/// threads with such a cache neither pile up records nor slow every later
/// write down. (Found in review, 2026-11-29: after 1000 such threads,
/// 1000 records stayed retired and a write took 5.9 µs instead of 22 ns.)
#[test]
fn a_record_retired_in_teardown_is_given_back_once_its_guard_drops() {
    static D: Domain = Domain::new();
    type Lock = prwlock::RwLock<u64>;
    type Guard = lock_api::RwLockReadGuard<'static, PrwLock, u64>;
    std::thread_local! {
        static CACHED: std::cell::RefCell<Option<Guard>> = const { std::cell::RefCell::new(None) };
    }
    let lock: &'static Lock = Box::leak(Box::new(Lock::from_raw(PrwLock::in_domain(&D), 0)));
    const THREADS: usize = 64;
    for _ in 0..THREADS {
        std::thread::spawn(move || {
            // First touched before the thread's first read: destroyed after
            // the thread's records, with the guard in it.
            CACHED.with(|c| *c.borrow_mut() = None);
            let guard = lock.read();
            CACHED.with(|c| *c.borrow_mut() = Some(guard));
        })
        .join()
        .unwrap();
    }
    assert!(!lock.is_locked());
    let stats = D.stats();
    assert_eq!((stats.in_use, stats.retired), (0, 0), "{stats:?}");
    assert!(
        stats.records <= 2,
        "{THREADS} threads one after another reuse a record: {stats:?}"
    );
    *lock.write() += 1;
    assert_eq!(*lock.read(), 1);
}

/// The same with the guard leaked in the thread-local's destructor: the
/// record keeps its hold, stays retired, and is never given to another
/// thread.
#[test]
fn a_record_retired_in_teardown_with_a_leaked_guard_stays_retired() {
    static D: Domain = Domain::new();
    type Lock = prwlock::RwLock<u64>;
    type Guard = lock_api::RwLockReadGuard<'static, PrwLock, u64>;
    struct Leaks(Option<Guard>);
    impl Drop for Leaks {
        fn drop(&mut self) {
            std::mem::forget(self.0.take());
        }
    }
    std::thread_local! {
        static CACHED: std::cell::RefCell<Leaks> = const { std::cell::RefCell::new(Leaks(None)) };
    }
    let lock: &'static Lock = Box::leak(Box::new(Lock::from_raw(PrwLock::in_domain(&D), 0)));
    std::thread::spawn(move || {
        CACHED.with(|c| c.borrow_mut().0 = None);
        let guard = lock.read();
        CACHED.with(|c| c.borrow_mut().0 = Some(guard));
    })
    .join()
    .unwrap();
    let stats = D.stats();
    assert_eq!((stats.in_use, stats.retired), (0, 1), "{stats:?}");
    assert!(lock.try_write().is_none(), "the leaked read still holds");
    let other: &'static Lock = Box::leak(Box::new(Lock::from_raw(PrwLock::in_domain(&D), 0)));
    std::thread::spawn(move || *other.read()).join().unwrap();
    assert_eq!(D.stats().records, 2, "the retired record is not reused");
}

/// A write request under the thread's own read guard panics (it would wait
/// for itself) also when the guard outlived the thread's registrations, in
/// its thread-local teardown. (Found in review, 2026-11-27: there it
/// waited forever.)
#[test]
fn a_write_under_a_read_guard_kept_through_teardown_panics() {
    static D: Domain = Domain::new();
    type Lock = prwlock::RwLock<u64>;
    struct Held(
        Option<lock_api::RwLockReadGuard<'static, PrwLock, u64>>,
        &'static Lock,
        mpsc::Sender<bool>,
    );
    impl Drop for Held {
        fn drop(&mut self) {
            let lock = self.1;
            let panicked =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(lock.write())))
                    .is_err();
            drop(self.0.take());
            let _ = self.2.send(panicked);
        }
    }
    std::thread_local! {
        static HELD: std::cell::RefCell<Option<Held>> = const { std::cell::RefCell::new(None) };
    }
    let lock: &'static Lock = Box::leak(Box::new(Lock::from_raw(PrwLock::in_domain(&D), 0)));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // First touched before the thread's first read: destroyed after
        // its records are given back.
        HELD.with(|h| *h.borrow_mut() = Some(Held(None, lock, tx)));
        let guard = lock.read();
        HELD.with(|h| h.borrow_mut().as_mut().unwrap().0 = Some(guard));
    });
    let panicked = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the write waited for the thread's own read guard");
    assert!(panicked);
    *lock.write() += 1;
}
