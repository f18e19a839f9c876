//! LDU against the usual ways to share a set, on update-heavy workloads
//! (the LDU paper's regime: a reverse map that forks and exits hammer).
//!
//! ```text
//! cargo bench --bench ldu                      # defaults: about 30 s
//! cargo bench --bench ldu -- --threads 1,2,4,8 --reads 0,1,10 --keys 4096 --reps 7
//! cargo bench --bench ldu -- --sets ldu --threads 4 --reads 1,10   # LDU and the mutex only
//! ```
//!
//! T threads loop for a fixed interval over a universe of `--keys` keys (half
//! of them members at the start): with probability `--reads` percent a
//! lookup of a random key, otherwise an insert or a remove (even odds) of a
//! random key. Sets compared:
//!
//! - `ldu`: `Ldu<OrderedSet<u64>>`, over its default lock (one `Arc<Tracked<u64>>` per key, made up
//!   front, as the objects of a reverse map exist before they are mapped);
//!   a lookup is `read`, which first applies the pending log;
//! - `Mutex<BTreeSet>` and `RwLock<BTreeSet>` (std);
//! - `SkipSet` (crossbeam-skiplist, lock-free);
//! - `ldu over PF-T`: the same log over the workspace's phase-fair ticket
//!   lock instead of parking_lot's (its default), to show why the default.
//!
//! The interval of an LDU run ends only after a final `synchronize`: the
//! work the log deferred is paid inside the measurement. Each point is the
//! median of `--reps` runs; the runs of all sets are interleaved so they see
//! the same machine. A ratio is a set's median over `Mutex<BTreeSet>`'s
//! median, both from the same invocation.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::Duration;

use crossbeam_skiplist::SkipSet;
use ldu::{Ldu, OrderedSet, Tracked};
use numa_rwlocks::cli::list;
use numa_rwlocks::workloads::{Rng, StartGate};

const HELP: &str = "\
ldu bench: update-heavy set workloads, LDU vs Mutex/RwLock<BTreeSet> vs SkipSet
(and LDU over PF-T instead of its default lock)

options (lists are comma-separated):
  --threads LIST     thread counts (default 1,2,4)
  --reads LIST       lookup percentages, decimals allowed (default 0,1)
  --keys N           key universe (default 4096)
  --duration-ms N    measurement interval of one run (default 200)
  --reps N           runs per point, median reported (default 5)
  --sets LIST        columns to run, by their printed names (default all;
                     Mutex<BTreeSet> always runs: the ratios are to it)
";

/// A set under test; `finish` runs inside the measured interval.
trait SharedSet: Send + Sync + 'static {
    fn insert(&self, k: usize);
    fn remove(&self, k: usize);
    fn contains(&self, k: usize) -> bool;
    fn finish(&self) {}
}

struct MutexSet(Mutex<BTreeSet<u64>>);
impl SharedSet for MutexSet {
    fn insert(&self, k: usize) {
        self.0.lock().unwrap().insert(k as u64);
    }
    fn remove(&self, k: usize) {
        self.0.lock().unwrap().remove(&(k as u64));
    }
    fn contains(&self, k: usize) -> bool {
        self.0.lock().unwrap().contains(&(k as u64))
    }
}

struct RwLockSet(RwLock<BTreeSet<u64>>);
impl SharedSet for RwLockSet {
    fn insert(&self, k: usize) {
        self.0.write().unwrap().insert(k as u64);
    }
    fn remove(&self, k: usize) {
        self.0.write().unwrap().remove(&(k as u64));
    }
    fn contains(&self, k: usize) -> bool {
        self.0.read().unwrap().contains(&(k as u64))
    }
}

struct Skip(SkipSet<u64>);
impl SharedSet for Skip {
    fn insert(&self, k: usize) {
        self.0.insert(k as u64);
    }
    fn remove(&self, k: usize) {
        self.0.remove(&(k as u64));
    }
    fn contains(&self, k: usize) -> bool {
        self.0.contains(&(k as u64))
    }
}

struct LduSet<R: lock_api::RawRwLock = parking_lot::RawRwLock> {
    log: Ldu<OrderedSet<u64>, R>,
    items: Vec<Arc<Tracked<u64>>>,
}
impl<R: lock_api::RawRwLock + Send + Sync + 'static> SharedSet for LduSet<R> {
    fn insert(&self, k: usize) {
        self.log.logical_insert(&self.items[k]);
    }
    fn remove(&self, k: usize) {
        self.log.logical_remove(&self.items[k]);
    }
    fn contains(&self, k: usize) -> bool {
        self.log.read(|s| s.contains_value(&(k as u64)))
    }
    fn finish(&self) {
        self.log.synchronize();
    }
}

/// The set every ratio is against.
const MUTEX: &str = "Mutex<BTreeSet>";

const SETS: [&str; 5] = ["ldu", MUTEX, "RwLock<BTreeSet>", "SkipSet", "ldu over PF-T"];

fn make_ldu<R: lock_api::RawRwLock + Send + Sync + 'static>(keys: usize) -> Arc<dyn SharedSet> {
    let s = LduSet::<R> {
        log: Ldu::new(OrderedSet::new()),
        items: (0..keys as u64)
            .map(|k| Arc::new(Tracked::new(k)))
            .collect(),
    };
    for k in (0..keys).step_by(2) {
        s.insert(k);
    }
    s.log.synchronize();
    Arc::new(s)
}

fn make(name: &str, keys: usize) -> Arc<dyn SharedSet> {
    let start = (0..keys).step_by(2).map(|k| k as u64);
    match name {
        "ldu" => make_ldu::<parking_lot::RawRwLock>(keys),
        "ldu over PF-T" => make_ldu::<rwlock_core::PfTicket>(keys),
        MUTEX => Arc::new(MutexSet(Mutex::new(start.collect()))),
        "RwLock<BTreeSet>" => Arc::new(RwLockSet(RwLock::new(start.collect()))),
        "SkipSet" => Arc::new(Skip(start.collect())),
        _ => unreachable!(),
    }
}

/// One run: total operations per second.
fn run(set: Arc<dyn SharedSet>, threads: usize, reads_pct: f64, keys: usize, d: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(StartGate::new(threads));
    let read_threshold = (reads_pct / 100.0 * u32::MAX as f64) as u64;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (set, stop, start) = (set.clone(), stop.clone(), start.clone());
            thread::spawn(move || {
                let mut rng = Rng::new(t);
                let mut ops = 0u64;
                let mut hits = 0u64;
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let r = rng.next_u64();
                        let k = ((r >> 33) as usize) % keys;
                        if (r & 0xFFFF_FFFF) < read_threshold {
                            hits += set.contains(k) as u64;
                        } else if r & (1 << 32) == 0 {
                            set.insert(k);
                        } else {
                            set.remove(k);
                        }
                    }
                    ops += 64;
                }
                std::hint::black_box(hits);
                ops
            })
        })
        .collect();
    let t0 = start.open();
    thread::sleep(d);
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    set.finish();
    ops as f64 / t0.elapsed().as_secs_f64()
}

/// The median; for an even count the mean of the two middle values.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> ExitCode {
    let mut threads = vec![1usize, 2, 4];
    let mut reads = vec![0.0f64, 1.0];
    let mut keys = 4096usize;
    let mut duration = Duration::from_millis(200);
    let mut reps = 5usize;
    let mut sets: Vec<&str> = SETS.to_vec();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let parsed: Result<(), String> = (|| {
            match a.as_str() {
                "--threads" => threads = list("--threads", &value()?)?,
                "--reads" => reads = list("--reads", &value()?)?,
                "--keys" => keys = value()?.parse().map_err(|_| "bad --keys")?,
                "--duration-ms" => {
                    duration =
                        Duration::from_millis(value()?.parse().map_err(|_| "bad --duration-ms")?)
                }
                "--reps" => reps = value()?.parse().map_err(|_| "bad --reps")?,
                "--sets" => {
                    let wanted = value()?;
                    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
                    if let Some(bad) = wanted.iter().find(|w| !SETS.contains(w)) {
                        return Err(format!("unknown set {bad:?} (sets: {})", SETS.join(", ")));
                    }
                    sets = SETS
                        .into_iter()
                        .filter(|s| *s == MUTEX || wanted.contains(s))
                        .collect();
                }
                "--help" | "-h" => {
                    print!("{HELP}");
                    std::process::exit(0);
                }
                "--bench" => {} // passed by `cargo bench`
                other => return Err(format!("unknown option {other}")),
            }
            Ok(())
        })();
        if let Err(e) = parsed {
            eprintln!("ldu bench: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    }
    if keys < 2
        || reps == 0
        || duration.is_zero()
        || threads.contains(&0)
        || reads.iter().any(|r| !(0.0..=100.0).contains(r))
    {
        eprintln!(
            "ldu bench: need --keys >= 2, --reps >= 1, --duration-ms >= 1, threads >= 1, reads in 0..=100\n\n{HELP}"
        );
        return ExitCode::from(2);
    }

    println!(
        "ldu bench: {keys} keys, {} ms runs, median of {reps}, {} CPUs available",
        duration.as_millis(),
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("throughput in M ops/s (ratio to Mutex<BTreeSet> in the same run)\n");
    print!("{:>7} {:>7}", "reads%", "threads");
    for s in &sets {
        print!(" {s:>24}");
    }
    println!();
    let mut acceptance = None;
    for &r in &reads {
        for &t in &threads {
            let mut samples: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
            for _ in 0..reps {
                for (i, name) in sets.iter().enumerate() {
                    samples[i].push(run(make(name, keys), t, r, keys, duration));
                }
            }
            let medians: Vec<f64> = samples.into_iter().map(median).collect();
            let median_of = |name: &str| sets.iter().position(|s| *s == name).map(|i| medians[i]);
            let base = median_of(MUTEX).expect("Mutex<BTreeSet> always runs");
            print!("{r:>7} {t:>7}");
            for m in &medians {
                let cell = format!("{:.2} ({:.2}x)", m / 1e6, m / base);
                print!(" {cell:>24}");
            }
            println!();
            if r == 0.0 && t == 2 {
                acceptance = median_of("ldu").map(|ldu| ldu / base);
            }
        }
    }
    if let Some(ratio) = acceptance {
        println!("\nupdate-only, 2 threads: ldu / Mutex<BTreeSet> = {ratio:.2}");
    }
    ExitCode::SUCCESS
}
