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
//! - [`parsers`]: every parser of outside input (`RWLOCK_TOPOLOGY`, sysfs
//!   cpulists and trees, `BRAVO_TABLE_SLOTS`, `RWLOCK_IMPL`).

use std::path::Path;
use std::sync::Mutex;

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
pub mod lock_ops;
pub mod parsers;
pub mod prwlock_fence;
pub mod subject;
pub mod threads;

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
