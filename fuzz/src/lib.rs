//! The fuzz targets of the numa-rwlocks workspace, as plain functions of
//! the input bytes, so that the libFuzzer binaries (`fuzz_targets/`, built
//! by `scripts/fuzz` with cargo-fuzz) and the replay test
//! (`tests/regressions.rs`: every committed seed and every input that
//! once crashed) run the same code. Each `run` panics (and so the fuzzer
//! records a crash) when the code under test breaks a promise:
//!
//! - [`lock_ops`]: one thread's sequence of lock operations on one lock of
//!   the workspace, checked against a reference state machine of what
//!   `lock_api` promises;
//! - [`threads`]: 2 to 4 threads, each running the operations and yield
//!   points the input gives it on one shared lock, with the stress
//!   harness's invariants and a watchdog;
//! - [`prwlock_fence`]: both of those on prwlock in its fence mode (a
//!   process-wide choice, hence a target of its own);
//! - [`bravo_tiny`]: both of those on BRAVO's locks over a two-slot table,
//!   where threads' fast readers collide (also a process-wide choice);
//! - [`ldu_ops`]: LDU operation sequences against a sequential model;
//! - [`ldu_threads`]: 2 or 3 threads updating, synchronizing and reading
//!   one LDU log, each with the model of the items only it updates;
//! - [`rcu_ops`]: 1 to 3 threads running FCP-RCU read sections, cell
//!   updates, deferred callbacks, grace periods and barriers, with every
//!   value's life tracked: none dropped while a section that saw it lasts,
//!   none left behind;
//! - [`parsers`]: every parser of outside input (`RWLOCK_TOPOLOGY`, sysfs
//!   cpulists and trees, `BRAVO_TABLE_SLOTS`, `RWLOCK_IMPL`).

use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The input [`replay`] is running, per target (the replay tests of the
/// targets run in parallel), for a watchdog's message; libFuzzer names its
/// own crashing inputs.
static REPLAYING: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The path of the input [`replay`] is running for `target`, if any.
pub fn replaying(target: &str) -> Option<String> {
    let replaying = REPLAYING.lock().ok()?;
    replaying
        .iter()
        .find(|(t, _)| t == target)
        .map(|(_, path)| path.clone())
}

/// Notes (or, with `None`, forgets) the input `target`'s replay runs.
fn note_replaying(target: &str, path: Option<String>) {
    if let Ok(mut replaying) = REPLAYING.lock() {
        replaying.retain(|(t, _)| t != target);
        if let Some(path) = path {
            replaying.push((target.to_string(), path));
        }
    }
}

pub mod bravo_tiny;
pub mod ldu_ops;
pub mod ldu_threads;
pub mod lock_ops;
pub mod parsers;
pub mod prwlock_fence;
pub mod rcu_ops;
pub mod subject;
pub mod threads;

/// How long one input of a target with threads may run ([`Armed`]).
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// The runs in progress that a watchdog guards: (id, target, subject, what
/// a hang means, start).
type Runs = Vec<(u64, &'static str, &'static str, &'static str, Instant)>;
static RUNS: Mutex<Runs> = Mutex::new(Vec::new());

/// A watchdog over one run of a target with threads: if the run has not
/// ended (the value dropped) within [`WATCHDOG`], the process aborts with a
/// message naming the target, its subject (the lock under test) and the
/// input being replayed, which libFuzzer records as a crash. One watcher
/// thread serves the process; runs of several targets (the replay tests run
/// in parallel) are watched separately.
#[derive(Debug)]
pub struct Armed(u64);

impl Armed {
    /// Starts watching a run of `target` on `subject`; `hang` says what a
    /// run that never ends means there.
    pub fn new(target: &'static str, subject: &'static str, hang: &'static str) -> Armed {
        static WATCHER: OnceLock<()> = OnceLock::new();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        WATCHER.get_or_init(|| {
            std::thread::spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(100));
                    let late = RUNS.lock().ok().and_then(|runs| {
                        runs.iter()
                            .find(|r| r.4.elapsed() > WATCHDOG)
                            .map(|r| (r.1, r.2, r.3))
                    });
                    if let Some((target, subject, hang)) = late {
                        let inputs = REPLAYING
                            .lock()
                            .map(|r| r.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>())
                            .unwrap_or_default();
                        // To the process's stderr: libtest captures
                        // `eprintln!` from threads a test spawns, so the
                        // replay of the committed inputs lost the message.
                        use std::io::Write;
                        let _ = writeln!(
                            std::io::stderr(),
                            "{target}: an input ran for more than {WATCHDOG:?} on {subject}: \
                             {hang}{}",
                            if inputs.is_empty() {
                                String::new()
                            } else {
                                format!(" (replaying {})", inputs.join(", "))
                            }
                        );
                        std::process::abort();
                    }
                }
            });
        });
        // Relaxed: a unique id; nothing is published with it.
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut runs) = RUNS.lock() {
            runs.push((id, target, subject, hang, Instant::now()));
        }
        Armed(id)
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Ok(mut runs) = RUNS.lock() {
            runs.retain(|r| r.0 != self.0);
        }
    }
}

/// Runs `run` on every committed input of `target`: the seed corpus
/// (`corpus/<target>/`) and the inputs that once crashed
/// (`regressions/<target>/`), in name order, skipping dot files. Returns
/// how many ran; panics if there were none (a target without seeds is a
/// mistake) or one cannot be read.
pub fn replay(target: &str, run: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("directory entry").path())
            .collect();
        paths.sort();
        for path in paths {
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            let data = std::fs::read(&path).expect("read an input");
            eprintln!("{target}: {}", path.display());
            note_replaying(target, Some(path.display().to_string()));
            run(&data);
            count += 1;
        }
    }
    note_replaying(target, None);
    assert!(count > 0, "no committed input for {target}");
    count
}

/// Deals `ops` to `threads` threads in turn (the first byte to thread 0,
/// the next to thread 1, ...), at most `max_per_thread` each: the plans
/// of the targets with threads.
pub fn deal(ops: &[u8], threads: usize, max_per_thread: usize) -> Vec<Vec<u8>> {
    let mut plans: Vec<Vec<u8>> = vec![Vec::new(); threads];
    for (i, &b) in ops.iter().enumerate() {
        let plan = &mut plans[i % threads];
        if plan.len() < max_per_thread {
            plan.push(b);
        }
    }
    plans
}

/// Reads the input a byte at a time; zero once it is exhausted.
#[derive(Debug)]
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    /// Over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes(data)
    }

    /// The next byte, or 0 once the input is exhausted.
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// What is left.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }
}
