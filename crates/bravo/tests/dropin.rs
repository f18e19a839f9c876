//! `use parking_lot::X` → `use bravo::X` compiles unchanged: the same code
//! is instantiated against both crates, and must behave the same.
#![cfg(not(loom))]

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
