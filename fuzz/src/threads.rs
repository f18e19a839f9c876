//! Target (b): 2 to 4 threads on one shared lock, each running the
//! operations and yield points the input gives it, with the stress
//! harness's invariants (`rwlock_core::testing`) and a watchdog.
//!
//! Input: a byte choosing the lock, a byte for the thread count, then one
//! byte per operation, dealt to the threads in turn. An operation byte:
//! bits 0-1 the kind (read, write, try_read, try_write), bit 2 a yield
//! before it, bit 3 a yield inside the critical section, bits 4-6 that many
//! spins inside, bit 7 a downgrade of a write before its release (where the
//! lock has one).
//!
//! Checked: an occupancy word (a writer alone, readers only with readers),
//! a zero-sum pair written by writers with plain load/store pairs and
//! summed by readers, `is_locked_exclusive()` inside each write and
//! `is_locked()` inside each read, the lock free at the end. A run that
//! has not finished within [`WATCHDOG`] (a lost wake-up, a livelock)
//! aborts the process with a message, which libFuzzer records as a crash.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicIsize, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Bytes;
use crate::subject::{Subject, Visitor, dispatch};

/// How long one input may run.
pub const WATCHDOG: Duration = Duration::from_secs(20);
const MAX_OPS_PER_THREAD: usize = 256;
const WRITER: isize = isize::MIN / 2;

/// Runs one input (panics or aborts on a broken invariant).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let selector = bytes.byte();
    let threads = 2 + usize::from(bytes.byte() % 3);
    let mut plans: Vec<Vec<u8>> = vec![Vec::new(); threads];
    for (i, &b) in bytes.rest().iter().enumerate() {
        let plan = &mut plans[i % threads];
        if plan.len() < MAX_OPS_PER_THREAD {
            plan.push(b);
        }
    }
    let _armed = Armed::new(selector);
    dispatch(selector, Run(&plans));
}

/// The watchdog: one thread for the process, polling the start time of the
/// run in progress (0: none).
static STARTED_NS: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

struct Armed;

impl Armed {
    fn new(selector: u8) -> Armed {
        static WATCHER: OnceLock<()> = OnceLock::new();
        let epoch = *EPOCH.get_or_init(Instant::now);
        WATCHER.get_or_init(|| {
            std::thread::spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(100));
                    // Relaxed: a timestamp; a late or early read only moves the
                    // verdict by one poll.
                    let started = STARTED_NS.load(Ordering::Relaxed);
                    if started != 0
                        && epoch.elapsed().as_nanos() as u64 - started > WATCHDOG.as_nanos() as u64
                    {
                        eprintln!(
                            "threads: an input ran for more than {WATCHDOG:?} (lock selector {}): \
                         a waiter was never woken, or the threads livelocked",
                            SELECTOR.load(Ordering::Relaxed)
                        );
                        std::process::abort();
                    }
                }
            });
        });
        // Relaxed: read only by the watchdog's message.
        SELECTOR.store(u64::from(selector), Ordering::Relaxed);
        // Relaxed: as above; never 0 (the epoch is taken before).
        STARTED_NS.store(epoch.elapsed().as_nanos() as u64 + 1, Ordering::Relaxed);
        Armed
    }
}

static SELECTOR: AtomicU64 = AtomicU64::new(0);

impl Drop for Armed {
    fn drop(&mut self) {
        // Relaxed: see `Armed::new`.
        STARTED_NS.store(0, Ordering::Relaxed);
    }
}

struct Run<'a>(&'a [Vec<u8>]);

/// The invariants' state. Relaxed throughout, as in the stress harness:
/// the occupancy checks are read-modify-writes of one word (exact whatever
/// their ordering), and nothing here may order the sections by itself.
struct Shared {
    occupancy: AtomicIsize,
    pair: [AtomicI64; 2],
}

impl Visitor for Run<'_> {
    type Output = ();
    fn visit<S: Subject>(self) {
        let lock = S::INIT;
        let shared = Shared {
            occupancy: AtomicIsize::new(0),
            pair: [AtomicI64::new(0), AtomicI64::new(0)],
        };
        // A broken invariant is reported by the worker that saw it (it
        // releases what it holds and stops), and panics here, on the
        // fuzzer's thread, after every worker is joined: libFuzzer's crash
        // handler then runs once and keeps the input. (A panic inside a
        // worker aborts at once under libfuzzer-sys's panic hook; two at a
        // time lost the input.)
        let failures: Vec<String> = std::thread::scope(|s| {
            let workers: Vec<_> = self
                .0
                .iter()
                .enumerate()
                .map(|(t, plan)| {
                    let (lock, shared) = (&lock, &shared);
                    s.spawn(move || {
                        for (i, &op) in plan.iter().enumerate() {
                            step(lock, shared, op, (t * 1000 + i) as i64 + 1)?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .filter_map(|w| w.join().expect("workers report, never panic").err())
                .collect()
        });
        if let Some(first) = failures.first() {
            panic!("{}: {first}", S::NAME);
        }
        let sum = shared.pair[0].load(Ordering::Relaxed) + shared.pair[1].load(Ordering::Relaxed);
        assert_eq!(
            sum,
            0,
            "{}: writers overlapped (zero-sum pair {sum})",
            S::NAME
        );
        assert_eq!(shared.occupancy.load(Ordering::Relaxed), 0, "{}", S::NAME);
        assert!(
            !lock.is_locked(),
            "{}: locked after every thread released it",
            S::NAME
        );
    }
}

fn pause(op: u8) {
    for _ in 0..(op >> 4) & 7 {
        std::hint::spin_loop();
    }
    if op & 8 != 0 {
        std::thread::yield_now();
    }
}

/// `Err(what)` when `bad`; keeps the first failure.
fn fail(result: &mut Result<(), String>, bad: bool, what: impl FnOnce() -> String) {
    if bad && result.is_ok() {
        *result = Err(what());
    }
}

/// One operation; every lock it takes is released before it returns, an
/// invariant broken or not.
fn step<S: Subject>(lock: &S, shared: &Shared, op: u8, x: i64) -> Result<(), String> {
    if op & 4 != 0 {
        std::thread::yield_now();
    }
    let mut result = Ok(());
    let write = op & 1 == 1;
    let attempt = op & 2 == 2;
    if write {
        let g = if attempt {
            match lock.try_lock_exclusive() {
                Some(g) => g,
                None => return Ok(()),
            }
        } else {
            lock.lock_exclusive()
        };
        let entered =
            shared
                .occupancy
                .compare_exchange(0, WRITER, Ordering::Relaxed, Ordering::Relaxed);
        fail(&mut result, entered.is_err(), || {
            format!("a writer entered while occupied ({entered:?})")
        });
        fail(&mut result, !lock.is_locked_exclusive(), || {
            "is_locked_exclusive() false inside a write".into()
        });
        let a = shared.pair[0].load(Ordering::Relaxed);
        shared.pair[0].store(a + x, Ordering::Relaxed);
        pause(op);
        let b = shared.pair[1].load(Ordering::Relaxed);
        shared.pair[1].store(b - x, Ordering::Relaxed);
        // Become a reader in the occupancy word before the downgrade
        // admits other readers (and back if the lock has no downgrade: the
        // write lock is still held, nobody entered).
        let down = op & 128 != 0
            && shared
                .occupancy
                .compare_exchange(WRITER, 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        let g = if down {
            // SAFETY: `g` is this thread's write acquisition of `lock`.
            match unsafe { lock.downgrade_(g) } {
                Ok(r) => {
                    read_section(lock, shared, op, &mut result);
                    // SAFETY: the read acquisition the downgrade gave.
                    unsafe { lock.unlock_shared(r) };
                    return result;
                }
                Err(g) => {
                    let back = shared.occupancy.compare_exchange(
                        1,
                        WRITER,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    fail(&mut result, back.is_err(), || {
                        format!("somebody entered during a write ({back:?})")
                    });
                    g
                }
            }
        } else {
            g
        };
        let left =
            shared
                .occupancy
                .compare_exchange(WRITER, 0, Ordering::Relaxed, Ordering::Relaxed);
        fail(&mut result, left.is_err(), || {
            format!("somebody entered during a write ({left:?})")
        });
        // SAFETY: `g` is this thread's write acquisition of `lock`.
        unsafe { lock.unlock_exclusive(g) };
    } else {
        let g = if attempt {
            match lock.try_lock_shared() {
                Some(g) => g,
                None => return Ok(()),
            }
        } else {
            lock.lock_shared()
        };
        let prev = shared.occupancy.fetch_add(1, Ordering::Relaxed);
        fail(&mut result, prev < 0, || {
            "a reader entered while a writer was inside".into()
        });
        read_section(lock, shared, op, &mut result);
        // SAFETY: `g` is this thread's read acquisition of `lock`.
        unsafe { lock.unlock_shared(g) };
    }
    result
}

/// The rest of a read section (occupancy already counted): ends with the
/// occupancy decrement, before the caller's unlock.
fn read_section<S: Subject>(lock: &S, shared: &Shared, op: u8, result: &mut Result<(), String>) {
    fail(result, !lock.is_locked(), || {
        "is_locked() false inside a read".into()
    });
    let a = shared.pair[0].load(Ordering::Relaxed);
    pause(op);
    let b = shared.pair[1].load(Ordering::Relaxed);
    let prev = shared.occupancy.fetch_sub(1, Ordering::Relaxed);
    fail(result, prev < 1, || {
        "reader count underflow: a writer was inside".into()
    });
    fail(result, a + b != 0, || {
        format!("a reader saw a half-done write ({a} + {b})")
    });
}
