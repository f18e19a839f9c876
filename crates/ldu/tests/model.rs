//! Random multi-thread workloads checked against a sequential model.
//!
//! Each workload builds a fresh log over an [`OrderedSet`] with some items
//! already members, runs a random mix of logical inserts, removes,
//! synchronizes and reads from several threads at once (more threads than
//! this machine's cores), then synchronizes and compares the target with the
//! model. On one item the operations that changed something must alternate
//! (an insert of a member and a remove of a non-member change nothing), so
//! the per-item counts of changed operations give a valid sequential order's
//! outcome; the target, the items' membership bits and the `Arc` counts (no
//! count left in the log) must all agree with it. Items private to a thread
//! are also checked on every read during the run: a thread must see its own
//! completed updates (read-your-writes).

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use ldu::{Ldu, OrderedSet, Tracked, Update};

const WORKLOADS: usize = 10_000;
const THREADS: usize = 3;
const SHARED: usize = 5;
const PRIVATE: usize = 3;
const OPS: usize = 96;

/// SplitMix64: a tiny deterministic generator (reproducible failures).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Item = Arc<Tracked<u32>>;

struct Workload {
    seed: u64,
    log: Ldu<OrderedSet<u32>>,
    shared: Vec<Item>,
    private: Vec<Vec<Item>>,
    start_member: Vec<bool>,
}

/// What one thread did: changed inserts and removes per shared item, and
/// outcome counts.
#[derive(Default)]
struct Tally {
    inserts: [u32; SHARED],
    removes: [u32; SHARED],
    outcomes: [u64; 4],
}

fn outcome_index(u: Update) -> usize {
    match u {
        Update::Absorbed => 0,
        Update::Merged => 1,
        Update::Enqueued => 2,
        Update::Unchanged => 3,
        other => unreachable!("a new outcome: {other:?}"),
    }
}

fn run_thread(w: &Workload, t: usize) -> Tally {
    let mut rng = Rng(w.seed ^ (t as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let mut tally = Tally::default();
    let own = &w.private[t];
    // The thread's model of its private items (private items start out).
    let mut mine = [false; PRIVATE];
    for _ in 0..OPS {
        let r = rng.below(100);
        if r < 88 {
            let insert = r < 44;
            let private = rng.below(3) == 0;
            let i = rng.below(if private { PRIVATE } else { SHARED } as u64) as usize;
            let item = if private { &own[i] } else { &w.shared[i] };
            let u = if insert {
                w.log.logical_insert(item)
            } else {
                w.log.logical_remove(item)
            };
            tally.outcomes[outcome_index(u)] += 1;
            if private {
                assert_eq!(u.changed(), mine[i] != insert, "seed {} private op", w.seed);
                mine[i] = insert;
            } else if u.changed() {
                if insert {
                    tally.inserts[i] += 1;
                } else {
                    tally.removes[i] += 1;
                }
            }
        } else if r < 94 {
            w.log.synchronize();
        } else {
            // Read-your-writes on private items, and the target's own
            // consistency while others update it.
            let seen: Vec<bool> = w.log.read(|s| {
                assert_eq!(s.iter().count(), s.len());
                own.iter().map(|it| s.contains(it)).collect()
            });
            assert_eq!(
                seen, mine,
                "seed {}: a read missed this thread's own update",
                w.seed
            );
        }
    }
    tally
}

/// On one item the operations that changed something alternate, starting
/// with the one that flips the start state: the membership they leave, or
/// `None` when the counts cannot come from any sequential order.
fn final_membership(start_member: bool, inserts: u32, removes: u32) -> Option<bool> {
    let (flips, returns) = if start_member {
        (removes, inserts)
    } else {
        (inserts, removes)
    };
    if flips == returns {
        Some(start_member)
    } else if flips == returns + 1 {
        Some(!start_member)
    } else {
        None
    }
}

fn check(w: &Workload, tallies: &[Tally]) {
    w.log.synchronize();
    // Shared items: membership from the alternation rule. Private items:
    // the owner checked every one of its updates; their bit is the model.
    let mut expected: Vec<(&Item, bool)> = Vec::new();
    for (i, item) in w.shared.iter().enumerate() {
        let ins: u32 = tallies.iter().map(|t| t.inserts[i]).sum();
        let rem: u32 = tallies.iter().map(|t| t.removes[i]).sum();
        let member = final_membership(w.start_member[i], ins, rem).unwrap_or_else(|| {
            panic!(
                "seed {}: {ins} changed inserts and {rem} changed removes of item {i} do not alternate (start member: {})",
                w.seed, w.start_member[i]
            )
        });
        assert_eq!(item.is_member(), member, "seed {} item {i}", w.seed);
        expected.push((item, member));
    }
    expected.extend(w.private.iter().flatten().map(|it| (it, it.is_member())));
    for &(item, member) in &expected {
        assert_eq!(
            w.log.read(|s| s.contains(item)),
            member,
            "seed {} value {}",
            w.seed,
            ***item
        );
        // The workload's own count + the target's when a member.
        assert_eq!(
            Arc::strong_count(item),
            1 + member as usize,
            "seed {} value {}: a log count leaked",
            w.seed,
            ***item
        );
    }
    let expected_len = expected.iter().filter(|(_, m)| *m).count();
    assert_eq!(w.log.read(|s| s.len()), expected_len, "seed {}", w.seed);
}

fn build(seed: u64) -> Workload {
    let mut rng = Rng(seed);
    let log: Ldu<OrderedSet<u32>> = Ldu::default();
    let shared: Vec<Item> = (0..SHARED as u32)
        .map(|v| Arc::new(Tracked::new(v)))
        .collect();
    let private = (0..THREADS)
        .map(|t| {
            (0..PRIVATE)
                .map(|i| Arc::new(Tracked::new(100 + (t * PRIVATE + i) as u32)))
                .collect()
        })
        .collect();
    let mut start_member = Vec::new();
    for item in &shared {
        let member = rng.below(2) == 0;
        if member {
            assert_eq!(log.logical_insert(item), Update::Enqueued);
        }
        start_member.push(member);
    }
    // Some start members applied, some still pending in the log.
    if rng.below(2) == 0 {
        log.synchronize();
    }
    Workload {
        seed,
        log,
        shared,
        private,
        start_member,
    }
}

#[test]
fn random_workloads_match_a_sequential_model() {
    let slot: Arc<Mutex<Option<Arc<Workload>>>> = Arc::default();
    let start = Arc::new(Barrier::new(THREADS + 1));
    let done = Arc::new(Barrier::new(THREADS + 1));
    let stop = Arc::new(AtomicBool::new(false));
    // Released together: the last thread through the barrier flips `go`
    // and the others spin (briefly, yielding) on it, so the runs overlap.
    let arrived = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<Result<Tally, usize>>>> = Arc::default();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (slot, start, done, stop, arrived, results) = (
                slot.clone(),
                start.clone(),
                done.clone(),
                stop.clone(),
                arrived.clone(),
                results.clone(),
            );
            thread::spawn(move || {
                let mut round = 0usize;
                loop {
                    start.wait();
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    round += 1;
                    let w = slot.lock().unwrap().clone().unwrap();
                    arrived.fetch_add(1, Ordering::SeqCst);
                    while arrived.load(Ordering::SeqCst) < THREADS * round {
                        thread::yield_now();
                    }
                    // A failed check must fail the test, not leave the
                    // main thread waiting at the barrier.
                    let tally = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run_thread(&w, t)
                    }));
                    results.lock().unwrap().push(tally.map_err(|_| t));
                    done.wait();
                }
            })
        })
        .collect();

    // A lost update can also show up as a hang (a synchronize waiting for a
    // node nobody will link): fail within bounded time instead.
    let progress = Arc::new(AtomicUsize::new(0));
    {
        let progress = progress.clone();
        thread::spawn(move || {
            let mut last = usize::MAX;
            loop {
                thread::sleep(std::time::Duration::from_secs(30));
                let now = progress.load(Ordering::SeqCst);
                if now == last {
                    eprintln!("ldu model test: no progress for 30 s at workload {now}: aborting");
                    std::process::abort();
                }
                last = now;
            }
        });
    }

    let mut outcomes = [0u64; 4];
    let mut cancelled = 0;
    for n in 0..WORKLOADS {
        progress.store(n, Ordering::SeqCst);
        let w = Arc::new(build(0x5EED_0000 + n as u64));
        *slot.lock().unwrap() = Some(w.clone());
        start.wait();
        done.wait();
        let tallies: Vec<Tally> = std::mem::take(&mut *results.lock().unwrap())
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|t| panic!("workload {n}: thread {t} failed (its panic is above)"))
            })
            .collect();
        assert_eq!(tallies.len(), THREADS);
        check(&w, &tallies);
        for t in &tallies {
            for (o, n) in outcomes.iter_mut().zip(t.outcomes) {
                *o += n;
            }
        }
        cancelled += w.log.totals().cancelled;
    }
    stop.store(true, Ordering::SeqCst);
    start.wait();
    workers.into_iter().for_each(|w| w.join().unwrap());

    println!(
        "{WORKLOADS} workloads: absorbed {}, merged {}, enqueued {}, unchanged {}; {cancelled} cancelled entries skipped",
        outcomes[0], outcomes[1], outcomes[2], outcomes[3]
    );
    // Every path of Fig. 2 (and Fig. 3's skip of a cancelled entry) ran.
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
    assert!(cancelled > 0);
}
