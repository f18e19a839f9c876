//! `use parking_lot::X` → `use bravo::X` compiles unchanged: the same code
//! is instantiated against both crates, and must behave the same.
#![cfg(not(loom))]

mod support;

// What `support` takes from its includer.
use bravo::{Bravo, Policy};

macro_rules! parking_lot_user_code {
    () => {
        use std::sync::Arc;
        use std::time::Duration;

        static TOTAL: RwLock<u64> = RwLock::new(0);

        pub fn run() -> u64 {
            let lock = Arc::new(RwLock::new(vec![1u32, 2, 3]));
            {
                let r: RwLockReadGuard<'_, Vec<u32>> = lock.read();
                let first: MappedRwLockReadGuard<'_, u32> = RwLockReadGuard::map(r, |v| &v[0]);
                assert_eq!(*first, 1);
            }
            {
                let w: RwLockWriteGuard<'_, Vec<u32>> = lock.write();
                let mut last: MappedRwLockWriteGuard<'_, u32> =
                    RwLockWriteGuard::map(w, |v| v.last_mut().unwrap());
                *last = 30;
            }
            {
                let u: RwLockUpgradableReadGuard<'_, Vec<u32>> = lock.upgradable_read();
                assert_eq!(u.len(), 3);
                let mut w = RwLockUpgradableReadGuard::upgrade(u);
                w.push(4);
                let r = RwLockWriteGuard::downgrade(w);
                assert_eq!(r.len(), 4);
            }
            assert!(lock.try_read_for(Duration::from_millis(10)).is_some());
            assert!(lock.try_write_for(Duration::from_millis(10)).is_some());
            {
                let r = lock.read();
                assert!(lock.try_write().is_none());
                RwLockReadGuard::unlock_fair(r);
            }
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let lock = lock.clone();
                    std::thread::spawn(move || {
                        for _ in 0..1000 {
                            let sum: u32 = lock.read().iter().sum();
                            assert!(sum >= 37);
                            if i == 0 {
                                *TOTAL.write() += 1;
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let v = Arc::try_unwrap(lock).unwrap().into_inner();
            assert_eq!(v, [1, 2, 30, 4]);
            *TOTAL.read()
        }
    };
}

mod with_parking_lot {
    use parking_lot::{
        MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard,
        RwLockUpgradableReadGuard, RwLockWriteGuard,
    };
    parking_lot_user_code!();
}

mod with_bravo {
    use bravo::{
        MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard,
        RwLockUpgradableReadGuard, RwLockWriteGuard,
    };
    parking_lot_user_code!();
}

#[test]
fn same_code_same_results() {
    assert_eq!(with_parking_lot::run(), 1000);
    assert_eq!(with_bravo::run(), 1000);
}

#[test]
fn aliases_over_workspace_locks() {
    let q = bravo::PfQueueRwLock::new(1);
    *q.write() += 1;
    assert_eq!(*q.read(), 2);
    let t = bravo::PfTicketRwLock::new(1);
    *t.write() += 1;
    assert_eq!(*t.read(), 2);
    let p = bravo::PthreadRwLock::new(1);
    *p.write() += 1;
    assert_eq!(*p.read(), 2);
}

/// parking_lot's recursive lock through `bravo::RecursiveRwLock`: a thread
/// that holds a read takes it again while a writer waits, blocking or
/// timed, with the bias on (the first read fast) and off (both through
/// `L`); the writer then gets the lock.
#[test]
fn recursive_reads_pass_a_waiting_writer() {
    use std::sync::Arc;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    for (biased, timed) in [(true, false), (true, true), (false, false), (false, true)] {
        let case = format!("biased {biased}, timed {timed}");
        let lock = Arc::new(bravo::RecursiveRwLock::new(0u32));
        if biased {
            // SAFETY: only read through, with the raw lock's own API.
            support::bias(unsafe { lock.raw() });
        }
        let (held_tx, held_rx) = channel();
        let (done_tx, done_rx) = channel();
        let reader = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let outer = lock.read();
                held_tx.send(()).unwrap();
                // Let the writer queue up (or start revoking).
                std::thread::sleep(Duration::from_millis(50));
                let nested = lock.read();
                let v = *nested;
                drop(nested);
                drop(outer);
                done_tx.send(v).unwrap();
            })
        };
        held_rx.recv().unwrap();
        let writer = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                if timed {
                    *lock
                        .try_write_for(Duration::from_secs(30))
                        .expect("the timed write timed out") += 1;
                } else {
                    *lock.write() += 1;
                }
            })
        };
        let v = done_rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{case}: the nested read waited for the writer"));
        assert_eq!(v, 0, "{case}");
        reader.join().unwrap();
        writer.join().unwrap();
        assert_eq!(*lock.read(), 1, "{case}");
    }
}

/// The same through an upgrade, by a thread whose hint says it last saw
/// the lock unbiased (it wrote it once) while another thread has biased
/// it since: the upgrade revokes while still upgradable, so the fast
/// reader's nested read gets `L` (found in review: the upgrade trusted the
/// stale hint, skipped that revocation, and waited for the reader holding
/// `L` exclusively, so the nested read waited for it for good).
#[test]
fn recursive_reads_pass_an_upgrade_whose_hint_is_stale() {
    use lock_api::{RawRwLock, RawRwLockUpgrade};
    use std::sync::Arc;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    let lock = Arc::new(bravo::RawRwLockRecursive::new());
    let (wrote_tx, wrote_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let upgrader = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            // This thread's hint: the lock unbiased.
            let w = lock.lock_exclusive();
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
            wrote_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let u = lock.lock_upgradable();
            // SAFETY: our upgradable read.
            let w = unsafe { lock.upgrade(u) };
            // SAFETY: our write.
            unsafe { lock.unlock_exclusive(w) };
        })
    };
    wrote_rx.recv().unwrap();
    // Biased by another thread: the upgrader's hint is now stale.
    {
        let lock = lock.clone();
        std::thread::spawn(move || support::bias(&*lock))
            .join()
            .unwrap();
    }
    let (held_tx, held_rx) = channel();
    let (done_tx, done_rx) = channel();
    let reader = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            let outer = lock.lock_shared();
            assert!(outer.is_fast(), "the outer read takes the fast path");
            held_tx.send(()).unwrap();
            // Let the upgrader upgrade.
            std::thread::sleep(Duration::from_millis(50));
            let nested = lock.lock_shared();
            // SAFETY: our reads.
            unsafe {
                lock.unlock_shared(nested);
                lock.unlock_shared(outer);
            }
            done_tx.send(()).unwrap();
        })
    };
    held_rx.recv().unwrap();
    go_tx.send(()).unwrap();
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the nested read waited for an upgrade that waited for its outer read");
    reader.join().unwrap();
    upgrader.join().unwrap();
}
