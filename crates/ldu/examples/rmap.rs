//! The paper's use case: a file's reverse map (which mappings cover a page),
//! updated by fork-heavy processes without taking its lock.
//!
//! Worker threads play processes that fork and exit: each "fork" maps the
//! parent's regions of the file into the child (logical inserts), each
//! "exit" unmaps them (logical removes). A short-lived child's mappings are
//! usually cancelled in the log before anybody applies them (update-side
//! absorbing). A "page reclaim" thread now and then asks which mappings
//! cover a page: that read applies the pending updates in one batch.
//!
//! ```text
//! cargo run --release -p ldu --example rmap
//! ```

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ldu::{IntervalSet, Ldu, Ranged, Tracked, Update};

/// A mapping of pages of the file into one process (Linux: a VMA).
#[derive(Debug)]
struct Vma {
    pages: Range<u64>,
    pid: u64,
}

impl Ranged for Vma {
    fn range(&self) -> Range<u64> {
        self.pages.clone()
    }
}

type Rmap = Ldu<IntervalSet<Vma>>;

/// The regions of the file every process maps (text, data, a library).
const REGIONS: [Range<u64>; 3] = [0..64, 64..80, 200..260];

fn fork(rmap: &Rmap, pid: u64, counts: &mut [u64; 4]) -> Vec<Arc<Tracked<Vma>>> {
    REGIONS
        .iter()
        .map(|r| {
            let vma = Arc::new(Tracked::new(Vma {
                pages: r.clone(),
                pid,
            }));
            record(counts, rmap.logical_insert(&vma));
            vma
        })
        .collect()
}

fn exit(rmap: &Rmap, vmas: Vec<Arc<Tracked<Vma>>>, counts: &mut [u64; 4]) {
    for vma in &vmas {
        record(counts, rmap.logical_remove(vma));
    }
    // Dropping our Arcs is fine: the log keeps pending entries alive.
}

fn record(counts: &mut [u64; 4], u: Update) {
    counts[match u {
        Update::Absorbed => 0,
        Update::Merged => 1,
        Update::Enqueued => 2,
        Update::Unchanged => 3,
        other => unreachable!("a new outcome: {other:?}"),
    }] += 1;
}

fn main() {
    let rmap: Arc<Rmap> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let run_for = Duration::from_millis(500);

    // Eight long-lived processes...
    let mut counts = [0u64; 4];
    let long_lived: Vec<_> = (0..8).map(|pid| fork(&rmap, pid, &mut counts)).collect();
    // ...and two threads forking and reaping short-lived children.
    let workers: Vec<_> = (1..=2u64)
        .map(|w| {
            let (rmap, stop) = (rmap.clone(), stop.clone());
            thread::spawn(move || {
                let mut counts = [0u64; 4];
                let mut pid = w * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    pid += 1;
                    let child = fork(&rmap, pid, &mut counts);
                    exit(&rmap, child, &mut counts);
                }
                counts
            })
        })
        .collect();

    let start = Instant::now();
    let mut lookups = 0u64;
    while start.elapsed() < run_for {
        // Page reclaim: who maps page 70?
        let mappers = rmap.read(|set| set.stabbing(70).count());
        assert!(mappers >= 8, "the 8 long-lived processes map page 70");
        lookups += 1;
        thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);

    for w in workers {
        let c = w.join().unwrap();
        counts.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    }
    let totals = rmap.totals();
    let (members, on_page_70) = rmap.read(|set| {
        let pids: Vec<u64> = set.stabbing(70).map(|v| v.pid).collect();
        assert!(pids.iter().all(|&pid| pid < 8));
        (set.len(), pids.len())
    });
    assert_eq!(
        members,
        8 * REGIONS.len(),
        "only the long-lived processes' mappings remain"
    );
    assert_eq!(on_page_70, 8);

    let updates: u64 = counts.iter().sum();
    println!(
        "{updates} logical updates in {run_for:?} (2 forking threads), {lookups} reverse-map lookups"
    );
    println!(
        "  absorbed {} ({:.1}%), merged {}, enqueued {}",
        counts[0],
        100.0 * counts[0] as f64 / updates as f64,
        counts[1],
        counts[2]
    );
    println!(
        "  applied under the lock: {} inserts, {} removes; {} cancelled entries skipped",
        totals.inserted, totals.removed, totals.cancelled
    );
    println!("  final reverse map: {members} mappings, {on_page_70} cover page 70");
    drop(long_lived);
}
