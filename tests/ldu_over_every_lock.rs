//! `Ldu<S, R>` takes any `lock_api::RawRwLock` for its target: run the same
//! concurrent workload with every family of the workspace and the peers
//! underneath, and check the result against what the threads did.

use std::sync::Arc;
use std::thread;

use ldu::{Ldu, OrderedSet, Tracked, Update};
use lock_api::RawRwLock;

/// Four threads (twice this machine's cores) insert and remove their own
/// items and read between; one item is shared by all and raced on.
fn workload<R: RawRwLock + Send + Sync + 'static>() {
    let log: Arc<Ldu<OrderedSet<u64>, R>> = Arc::new(Ldu::new(OrderedSet::new()));
    let shared = Arc::new(Tracked::new(u64::MAX));
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (log, shared) = (log.clone(), shared.clone());
            thread::spawn(move || {
                let mine: Vec<_> = (0..32)
                    .map(|i| Arc::new(Tracked::new(t * 100 + i)))
                    .collect();
                let (mut ins, mut rem) = (0u64, 0u64);
                for round in 0..200usize {
                    let it = &mine[round % 32];
                    if round % 3 == 2 {
                        log.logical_remove(it);
                    } else {
                        log.logical_insert(it);
                    }
                    let u = if round % 2 == 0 {
                        ins += 1;
                        log.logical_insert(&shared)
                    } else {
                        rem += 1;
                        log.logical_remove(&shared)
                    };
                    if u == Update::Unchanged {
                        if round % 2 == 0 { ins -= 1 } else { rem -= 1 }
                    }
                    if round % 25 == 0 {
                        let seen = log.read(|s| s.contains(it));
                        assert_eq!(seen, it.is_member());
                    }
                }
                let members: Vec<bool> = mine.iter().map(|it| it.is_member()).collect();
                (mine, members, ins, rem)
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let (ins, rem) = results.iter().fold((0, 0), |(a, b), r| (a + r.2, b + r.3));
    assert!(ins == rem || ins == rem + 1, "{ins} {rem}");
    log.read(|s| {
        assert_eq!(s.contains(&shared), ins == rem + 1);
        let mut len = (ins == rem + 1) as usize;
        for (mine, members, _, _) in &results {
            for (it, &m) in mine.iter().zip(members) {
                assert_eq!(s.contains(it), m);
                len += m as usize;
            }
        }
        assert_eq!(s.len(), len);
    });
}

#[test]
fn ldu_over_every_family() {
    workload::<rwlock_core::PfTicket>();
    workload::<rwlock_core::PfQueue>();
    workload::<rwlock_core::BrLock>();
    workload::<rwlock_core::PthreadRwLock>();
    workload::<bravo::Bravo<rwlock_core::PfQueue>>();
    workload::<cohort::CRwWp>();
    workload::<cohort::CRwNp>();
    workload::<prwlock::PrwLock>();
    workload::<parking_lot::RawRwLock>();
}
