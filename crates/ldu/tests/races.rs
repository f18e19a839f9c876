//! Races on purpose: many threads on one item, and an interval set updated
//! and queried by 1, 2, 8 and 64 threads (far more than cores).

#![cfg(not(loom))]

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use ldu::{IntervalSet, Ldu, OrderedSet, Tracked, Update};

#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    absorbed: u64,
    merged: u64,
    enqueued: u64,
    unchanged: u64,
    inserts_changed: u64,
    removes_changed: u64,
}

impl Counts {
    fn record(&mut self, insert: bool, u: Update) {
        match u {
            Update::Absorbed => self.absorbed += 1,
            Update::Merged => self.merged += 1,
            Update::Enqueued => self.enqueued += 1,
            Update::Unchanged => self.unchanged += 1,
            other => unreachable!("a new outcome: {other:?}"),
        }
        if u.changed() {
            if insert {
                self.inserts_changed += 1;
            } else {
                self.removes_changed += 1;
            }
        }
    }

    fn add(&mut self, o: &Counts) {
        self.absorbed += o.absorbed;
        self.merged += o.merged;
        self.enqueued += o.enqueued;
        self.unchanged += o.unchanged;
        self.inserts_changed += o.inserts_changed;
        self.removes_changed += o.removes_changed;
    }
}

/// Four threads run insert, remove, insert, ... on the same item while a
/// fifth synchronizes and reads: the absorbing path must run, and the
/// outcome must be a valid sequential order (changed operations alternate).
#[test]
fn insert_remove_insert_races_on_one_item() {
    const UPDATERS: usize = 4;
    const ITERS: u64 = 40_000;
    let log: Arc<Ldu<OrderedSet<u32>>> = Arc::default();
    let item = Arc::new(Tracked::new(42));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(UPDATERS + 1));

    let syncer = {
        let (log, item, stop, start) = (log.clone(), item.clone(), stop.clone(), start.clone());
        thread::spawn(move || {
            start.wait();
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                log.synchronize();
                log.read(|s| {
                    assert!(s.len() <= 1);
                    assert_eq!(s.len() == 1, s.contains(&item));
                });
                reads += 1;
            }
            reads
        })
    };
    let updaters: Vec<_> = (0..UPDATERS)
        .map(|t| {
            let (log, item, start) = (log.clone(), item.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let mut c = Counts::default();
                for k in 0..ITERS {
                    // Threads start out of phase: half begin with a remove.
                    let insert = (k + t as u64).is_multiple_of(2);
                    let u = if insert {
                        log.logical_insert(&item)
                    } else {
                        log.logical_remove(&item)
                    };
                    c.record(insert, u);
                }
                c
            })
        })
        .collect();
    let mut total = Counts::default();
    for u in updaters {
        total.add(&u.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let reads = syncer.join().unwrap();

    let (ins, rem) = (total.inserts_changed, total.removes_changed);
    assert!(ins == rem || ins == rem + 1, "{total:?}");
    let member = ins == rem + 1;
    assert_eq!(item.is_member(), member);
    assert_eq!(log.read(|s| s.contains(&item)), member);
    assert_eq!(
        Arc::strong_count(&item),
        1 + member as usize,
        "no count left in the log"
    );
    let sync = log.totals();
    println!("{total:?}, {reads} reads, {sync:?}");
    assert!(
        total.absorbed > 0,
        "the absorbing path never ran: {total:?}"
    );
    assert!(total.merged > 0 && total.enqueued > 0, "{total:?}");
    // Every entry taken out is either applied or skipped as cancelled; the
    // applied operations alternate too.
    assert_eq!(sync.entries, sync.inserted + sync.removed + sync.cancelled);
    assert!(
        sync.inserted == sync.removed || sync.inserted == sync.removed + 1,
        "{sync:?}"
    );
    assert_eq!(sync.inserted == sync.removed + 1, member);
}

#[derive(Debug)]
struct Mapping {
    pages: Range<u64>,
    owner: usize,
}

impl ldu::Ranged for Mapping {
    fn range(&self) -> Range<u64> {
        self.pages.clone()
    }
}

/// 1, 2, 8 and 64 threads (up to 32 times this machine's cores, where the
/// log's gate on its write lock can engage) map and unmap ranges of one "file"
/// while readers ask which mappings cover a page; every answer must be
/// right for the snapshot it was taken from, and the final set must be
/// exactly the mappings left mapped.
#[test]
fn interval_set_at_1_2_8_and_64_threads() {
    for threads in [1, 2, 8, 64] {
        interval_set(threads);
    }
}

fn interval_set(threads: usize) {
    const MAPPINGS: usize = 24;
    const ROUNDS: usize = 300;
    let log: Arc<Ldu<IntervalSet<Mapping>>> = Arc::default();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            thread::spawn(move || {
                let mine: Vec<_> = (0..MAPPINGS)
                    .map(|i| {
                        let start = ((t * 37 + i * 101) % 997) as u64;
                        Arc::new(Tracked::new(Mapping {
                            pages: start..start + 1 + (i as u64 % 16),
                            owner: t,
                        }))
                    })
                    .collect();
                let mut mapped = [false; MAPPINGS];
                for round in 0..ROUNDS {
                    let i = (round * 7 + t) % MAPPINGS;
                    let u = if mapped[i] {
                        log.logical_remove(&mine[i])
                    } else {
                        log.logical_insert(&mine[i])
                    };
                    assert!(u.changed(), "this thread alone updates its mappings");
                    mapped[i] = !mapped[i];
                    if round % 16 == t % 16 {
                        let page = ((round * 13) % 1000) as u64;
                        log.read(|set| {
                            for m in set.stabbing(page) {
                                assert!(m.pages.contains(&page));
                            }
                            let want = set.iter().filter(|m| m.pages.contains(&page)).count();
                            assert_eq!(set.stabbing(page).count(), want);
                            // This thread's own mappings are exactly as it left them.
                            for (j, m) in mine.iter().enumerate() {
                                assert_eq!(set.contains(m), mapped[j]);
                            }
                        });
                    }
                }
                (mine, mapped)
            })
        })
        .collect();
    let mut expected = 0;
    let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    log.read(|set| {
        for (mine, mapped) in &results {
            for (m, &on) in mine.iter().zip(mapped) {
                assert_eq!(set.contains(m), on, "mapping of thread {}", m.owner);
                expected += on as usize;
            }
        }
        assert_eq!(set.len(), expected);
    });
}
