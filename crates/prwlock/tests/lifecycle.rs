//! Threads come and go: records are reused, exited threads never hold up a
//! writer, locks can be dropped while their readers' threads live on, a
//! leaked guard retires its record, and reads still work while a thread's
//! thread-locals are being destroyed.

use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use lock_api::RawRwLock;
use prwlock::{Domain, PrwLock};

/// A liveness bound, far above any expected time (not a performance check).
const LIVENESS: Duration = Duration::from_secs(10);

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
    let lock = Arc::new(prwlock::RwLock::from_raw(PrwLock::in_domain(&D), 0u64));
    let start = Instant::now();
    let mut handles = Vec::new();
    for round in 0..8 {
        for t in 0..16 {
            let l = lock.clone();
            handles.push(std::thread::spawn(move || {
                for i in 0..200 {
                    if (i + t + round) % 50 == 0 {
                        *l.write() += 1;
                    } else {
                        let _ = *l.read();
                    }
                }
            }));
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(start.elapsed() < LIVENESS);
    assert_eq!(*lock.read(), 8 * 16 * 4);
    let stats = D.stats();
    assert!(stats.records <= 129, "{stats:?}");
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
    let start = Instant::now();
    let w = lock.lock_exclusive();
    assert!(start.elapsed() < LIVENESS);
    // SAFETY: our exclusive acquisition.
    unsafe { lock.unlock_exclusive(w) };
    assert_eq!(D.stats().in_use, 0);
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
fn reads_work_while_thread_locals_are_destroyed() {
    struct ReadsOnDrop(Arc<prwlock::RwLock<u32>>, mpsc::Sender<u32>);
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
    let lock = Arc::new(prwlock::RwLock::new(7u32));
    let (tx, rx) = mpsc::channel();
    let l = lock.clone();
    std::thread::spawn(move || {
        // Registered before the thread's first read, so (destructors run in
        // reverse order) it is destroyed after the prwlock registration.
        LATE.with(|late| *late.borrow_mut() = Some(ReadsOnDrop(l.clone(), tx)));
        assert_eq!(*l.read(), 7);
    })
    .join()
    .unwrap();
    assert_eq!(rx.recv().unwrap(), 7);
    assert_eq!(*lock.read(), 8);
    assert!(!lock.is_locked());
}
