//! Thread-local teardown with every lock of the workspace (written in
//! review, 2026-11-27, after FCP-RCU's teardown bugs; every test passed on
//! the locks as they were, except E, fixed since). A thread-local first
//! touched before a lock's own thread-locals is destroyed after them, so
//! its destructor runs with the lock's per-thread state gone:
//!
//! A: a read (or write) guard acquired normally, kept in a thread-local
//!    first touched before the lock's own thread-locals (so destroyed after
//!    them), released late: a writer (reader) from another thread must wait
//!    for it.
//! B: lock/unlock from a destructor that runs after the lock's own
//!    thread-locals are destroyed, racing another thread: mutual exclusion
//!    (a pair of counters written non-atomically under the write lock) and
//!    no hang, no panic.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use lock_api::{RawRwLock, RwLock};

struct Late(Option<Box<dyn FnOnce()>>);
impl Drop for Late {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f()
        }
    }
}

std::thread_local! {
    static LATE: RefCell<Option<Late>> = const { RefCell::new(None) };
}

/// Runs `f` on a thread; panics if it neither returns nor panics in `secs`.
fn watchdog(name: &str, secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: HANG (watchdog, {secs} s)"),
    }
}

type Pair = (u64, u64);

fn touch_late_first() {
    LATE.with(|l| *l.borrow_mut() = Some(Late(None)));
}

fn set_hook(f: impl FnOnce() + 'static) {
    LATE.with(|l| l.borrow_mut().as_mut().unwrap().0 = Some(Box::new(f)));
}

fn warm<R: RawRwLock>(lock: &RwLock<R, Pair>) {
    for _ in 0..2000 {
        drop(lock.read());
    }
    drop(lock.write());
    for _ in 0..2000 {
        drop(lock.read());
    }
}

/// A thread whose thread-local teardown runs what `body` hooks
/// (`set_hook`); `body` gets the channel on which the hook signals that the
/// teardown has begun, and the flag it sets just before its guards drop.
fn spawn_torn_down(
    body: impl FnOnce(mpsc::Sender<()>, Arc<AtomicBool>) + Send + 'static,
) -> (
    std::thread::JoinHandle<()>,
    mpsc::Receiver<()>,
    Arc<AtomicBool>,
) {
    let ended = Arc::new(AtomicBool::new(false));
    let (torn_tx, torn_rx) = mpsc::channel();
    let e = ended.clone();
    let t = std::thread::spawn(move || {
        touch_late_first();
        body(torn_tx, e);
    });
    (t, torn_rx, ended)
}

/// Keeps `guard` until the thread's teardown, then signals `torn`, waits
/// 200 ms, sets `ended` and drops it.
fn release_late<G: 'static>(guard: G, torn: mpsc::Sender<()>, ended: Arc<AtomicBool>) {
    set_hook(move || {
        torn.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        ended.store(true, Ordering::SeqCst);
        drop(guard);
    });
}

/// A: `write_guard == false`: a read guard alive in teardown, a writer
/// elsewhere; `true`: a write guard alive in teardown, a reader elsewhere.
fn guard_alive_in_teardown<R: RawRwLock + Send + Sync + 'static>(
    name: &'static str,
    write_guard: bool,
) {
    watchdog(name, 20, move || {
        let lock: &'static RwLock<R, Pair> = Box::leak(Box::new(RwLock::new((0, 0))));
        let (t, torn_rx, ended) = spawn_torn_down(move |torn_tx, e| {
            warm(lock);
            if write_guard {
                release_late(lock.write(), torn_tx, e);
            } else {
                release_late(lock.read(), torn_tx, e);
            }
        });
        torn_rx.recv().unwrap();
        if write_guard {
            let _r = lock.read();
            assert!(
                ended.load(Ordering::SeqCst),
                "{name}: a reader entered under a live write guard (torn down)"
            );
        } else {
            let _w = lock.write();
            assert!(
                ended.load(Ordering::SeqCst),
                "{name}: a writer entered under a live read guard (torn down)"
            );
        }
        t.join().unwrap();
        // The lock is free again.
        assert!(lock.try_write().is_some(), "{name}: lock left held");
    });
}

fn critical(lock: &RwLock<impl RawRwLock, Pair>, rounds: usize) {
    for i in 0..rounds {
        {
            let mut w = lock.write();
            w.0 += 1;
            std::hint::black_box(&mut *w);
            if i % 16 == 0 {
                std::thread::yield_now();
            }
            w.1 += 1;
        }
        let r = lock.read();
        assert_eq!(r.0, r.1, "a reader saw a half-done write");
        drop(r);
        if let Some(r) = lock.try_read() {
            assert_eq!(r.0, r.1);
        }
        if let Some(mut w) = lock.try_write() {
            w.0 += 1;
            w.1 += 1;
        } else {
            // count it anyway so the total is predictable
            let mut w = lock.write();
            w.0 += 1;
            w.1 += 1;
        }
    }
}

/// B: acquisitions in a destructor after the lock's thread-locals are gone.
fn ops_in_teardown<R: RawRwLock + Send + Sync + 'static>(name: &'static str) {
    watchdog(name, 60, move || {
        let lock: &'static RwLock<R, Pair> = Box::leak(Box::new(RwLock::new((0, 0))));
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            touch_late_first();
            warm(lock);
            set_hook(move || {
                go_tx.send(()).unwrap();
                critical(lock, 3000);
            });
        });
        go_rx.recv().unwrap();
        critical(lock, 3000);
        t.join().unwrap();
        let r = lock.read();
        assert_eq!(*r, (12000, 12000), "{name}: lost updates");
    });
}

macro_rules! every_lock {
    ($($name:ident: $ty:ty,)*) => {
        mod a_read_guard { use super::*; $( #[test] fn $name() { guard_alive_in_teardown::<$ty>(stringify!($name), false); } )* }
        mod a_write_guard { use super::*; $( #[test] fn $name() { guard_alive_in_teardown::<$ty>(stringify!($name), true); } )* }
        mod b_ops { use super::*; $( #[test] fn $name() { ops_in_teardown::<$ty>(stringify!($name)); } )* }
        mod c_churn { use super::*; $( #[test] fn $name() { churn::<$ty>(stringify!($name)); } )* }
    };
}

every_lock! {
    pf_ticket: rwlock_core::PfTicket,
    pf_queue: rwlock_core::PfQueue,
    brlock: rwlock_core::BrLock,
    pthread: rwlock_core::PthreadRwLock,
    bravo_pl: bravo::RawRwLock,
    bravo_pfq: bravo::RawPfQueue,
    bravo_pft: bravo::RawPfTicket,
    bravo_prw: bravo::Bravo<prwlock::PrwLock>,
    crw_np: cohort::CRwNp,
    crw_rp: cohort::CRwRp,
    crw_rp_opt: cohort::CRwRpOpt,
    crw_wp: cohort::CRwWp,
    dr_ticket: cohort::DrTicket,
    prw: prwlock::PrwLock,
}

/// C: several threads exit with a read guard alive in teardown while fresh
/// threads start (and may inherit per-thread ids, slots, records, home
/// blocks) and write. Invariant: while a writer holds the lock, no
/// teardown-held read guard is live (`live` is incremented after the
/// read is acquired and decremented before it is released).
fn churn<R: RawRwLock + Send + Sync + 'static>(name: &'static str) {
    use std::sync::atomic::AtomicUsize;
    watchdog(name, 60, move || {
        let lock: &'static RwLock<R, Pair> = Box::leak(Box::new(RwLock::new((0, 0))));
        let live: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        // a fresh thread per few writes: new per-thread state
                        std::thread::spawn(move || {
                            for _ in 0..20 {
                                let w = lock.write();
                                assert_eq!(
                                    live.load(Ordering::SeqCst),
                                    0,
                                    "{name}: writer in with a teardown read guard live"
                                );
                                drop(w);
                                drop(lock.read());
                            }
                        })
                        .join()
                        .unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let holders: Vec<_> = (0..24)
            .map(|i| {
                std::thread::spawn(move || {
                    touch_late_first();
                    warm(lock);
                    let g = lock.read();
                    live.fetch_add(1, Ordering::SeqCst);
                    set_hook(move || {
                        std::thread::sleep(Duration::from_millis(5 + (i % 5) * 10));
                        live.fetch_sub(1, Ordering::SeqCst);
                        drop(g);
                    });
                })
            })
            .collect();
        for h in holders {
            h.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.join().unwrap();
        }
        assert!(lock.try_write().is_some(), "{name}: lock left held");
    });
}

/// D (prwlock): in teardown, with the thread's record retired holding a
/// hold of `a`: a converted hold (schedule_out before teardown), reads of
/// another lock of the domain, a write of a third, a downgrade, and the
/// release of `a` last; a writer of `a` elsewhere must wait for it.
#[test]
fn d_prwlock_mixed_teardown() {
    use prwlock::{Domain, PrwLock, ReadGuardExt};
    static D: Domain = Domain::new();
    watchdog("d_prwlock", 20, || {
        let mk = || -> &'static RwLock<PrwLock, Pair> {
            Box::leak(Box::new(RwLock::from_raw(PrwLock::in_domain(&D), (0, 0))))
        };
        let (a, b, c) = (mk(), mk(), mk());
        let (t, torn_rx, ended) = spawn_torn_down(move |torn_tx, e| {
            warm(a);
            warm(b);
            let g = a.read();
            let g2 = a.read(); // a second hold of `a` in another slot
            assert_eq!(g.schedule_out(), 2);
            let g3 = a.read(); // passive again
            set_hook(move || {
                torn_tx.send(()).unwrap();
                for _ in 0..50 {
                    drop(b.read());
                    let mut w = c.write();
                    w.0 += 1;
                    w.1 += 1;
                    let r = lock_api::RwLockWriteGuard::downgrade(w);
                    assert_eq!(r.0, r.1);
                    drop(r);
                    std::thread::sleep(Duration::from_millis(2));
                }
                assert_eq!(g3.schedule_out(), 0, "no record: nothing converted");
                e.store(true, Ordering::SeqCst);
                drop(g2);
                drop(g);
                drop(g3);
            });
        });
        torn_rx.recv().unwrap();
        let w = a.write();
        assert!(
            ended.load(Ordering::SeqCst),
            "a writer entered under live teardown guards"
        );
        drop(w);
        t.join().unwrap();
        assert!(!a.is_locked() && !b.is_locked() && !c.is_locked());
        eprintln!("{:?}", D.stats());
    });
}

/// E (prwlock): a write request in teardown by a thread that holds a read of
/// the same lock panics, as it does outside teardown (it waited for itself
/// until the fix).
#[test]
fn e_prwlock_self_write_in_teardown_diagnostic() {
    use prwlock::PrwLock;
    let lock: &'static RwLock<PrwLock, Pair> = Box::leak(Box::new(RwLock::new((0, 0))));
    // Outside teardown: the documented-in-code diagnostic.
    let r = std::thread::spawn(move || {
        let _g = lock.read();
        let _w = lock.write();
    })
    .join();
    assert!(r.is_err(), "outside teardown: a panic");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        touch_late_first();
        warm(lock);
        let g = lock.read();
        set_hook(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _w = lock.write();
            }));
            tx.send(r.is_err()).unwrap();
            drop(g);
        });
    });
    match rx.recv_timeout(Duration::from_secs(3)) {
        Ok(panicked) => assert!(panicked),
        Err(_) => panic!(
            "in teardown: lock.write() under its own read guard HANGS instead of the diagnostic panic"
        ),
    }
}

/// F (bravo): a *fast-path* (table slot) read held in teardown; a writer
/// elsewhere must revoke and wait for it.
#[test]
fn f_bravo_fast_read_in_teardown() {
    watchdog("f_bravo", 20, || {
        let raw: &'static bravo::RawRwLock =
            Box::leak(Box::new(<bravo::RawRwLock as RawRwLock>::INIT));
        let (t, torn_rx, ended) = spawn_torn_down(move |torn_tx, e| {
            let g = loop {
                let g = raw.lock_shared();
                if g.is_fast() {
                    break g;
                }
                // SAFETY: our own acquisition.
                unsafe { raw.unlock_shared(g) };
                std::thread::sleep(Duration::from_millis(1));
            };
            set_hook(move || {
                torn_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
                e.store(true, Ordering::SeqCst);
                // SAFETY: our own acquisition.
                unsafe { raw.unlock_shared(g) };
                // and fast reads again during teardown
                for _ in 0..1000 {
                    let g = raw.lock_shared();
                    // SAFETY: our own acquisition.
                    unsafe { raw.unlock_shared(g) };
                }
            });
        });
        torn_rx.recv().unwrap();
        let w = raw.lock_exclusive();
        assert!(
            ended.load(Ordering::SeqCst),
            "bravo: writer entered under a live fast read"
        );
        // SAFETY: our own acquisition.
        unsafe { raw.unlock_exclusive(w) };
        t.join().unwrap();
    });
}
