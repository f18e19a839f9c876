//! Target (b): 2 to 4 threads on one shared lock, each running the
//! operations and yield points the input gives it, with the stress
//! harness's invariants (`rwlock_core::testing`) and a watchdog.
//!
//! Input: a byte choosing the lock, a byte for the thread count, then one
//! byte per operation, dealt to the threads in turn. An operation byte:
//! bits 0-2 the kind (read, write, try_read, try_write, timed read, timed
//! write, upgradable read, try_upgradable / timed upgradable read: the
//! upgradable kinds are a read and a try_read on a lock without an
//! upgradable mode, the timed ones try forms on a lock without timeouts),
//! bit 3 a yield before it, bit 4 a yield inside the section, bits 5-6
//! 0 to 24 spins inside it and the timeout of a timed kind (zero, 1 µs,
//! 50 µs, 1 ms), bit 7 a downgrade of a write before its release (where
//! the lock has one) or an upgrade of an upgradable read (blocking after a
//! blocking acquisition, else a try, timed if the op has a timeout) and a
//! write section when it succeeds.
//!
//! Checked: an occupancy word (a writer alone, readers only with readers,
//! an upgrade returning only to a thread alone inside), at most one
//! upgradable reader, a zero-sum pair written by writers with plain
//! load/store pairs and summed by readers, `is_locked_exclusive()` inside
//! each write and `is_locked()` inside each read, the lock free at the end.
//! A run that has not finished within [`crate::WATCHDOG`] (a lost
//! wake-up, a livelock) aborts the process with a message, which libFuzzer
//! records as a crash ([`crate::Armed`]).

use std::sync::atomic::{AtomicI64, AtomicIsize, Ordering};
use std::time::Duration;

use crate::Bytes;
use crate::subject::{Subject, Visitor, dispatch};

const MAX_OPS_PER_THREAD: usize = 256;
const WRITER: isize = isize::MIN / 2;
const TIMEOUTS: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_micros(1),
    Duration::from_micros(50),
    Duration::from_millis(1),
];

/// Runs one input (panics or aborts on a broken invariant).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let selector = bytes.byte();
    dispatch(selector, Input(bytes.rest()));
}

/// Runs `data` (an input without its selector byte: the thread count, then
/// the operations) on lock type `S`.
pub fn run_on<S: Subject>(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let threads = 2 + usize::from(bytes.byte() % 3);
    let plans = crate::deal(bytes.rest(), threads, MAX_OPS_PER_THREAD);
    let _armed = crate::Armed::new(
        "threads",
        S::NAME,
        "a waiter was never woken, or the threads livelocked",
    );
    run_plans::<S>(&plans);
}

struct Input<'a>(&'a [u8]);

impl Visitor for Input<'_> {
    type Output = ();
    fn visit<S: Subject>(self) {
        run_on::<S>(self.0);
    }
}

/// The invariants' state. Relaxed throughout, as in the stress harness:
/// the occupancy checks are read-modify-writes of one word (exact whatever
/// their ordering), and nothing here may order the sections by itself.
struct Shared {
    /// Readers inside (upgradable ones included), or [`WRITER`].
    occupancy: AtomicIsize,
    /// Upgradable readers inside: at most one.
    upgradable: AtomicIsize,
    pair: [AtomicI64; 2],
}

fn run_plans<S: Subject>(plans: &[Vec<u8>]) {
    let lock = S::INIT;
    let shared = Shared {
        occupancy: AtomicIsize::new(0),
        upgradable: AtomicIsize::new(0),
        pair: [AtomicI64::new(0), AtomicI64::new(0)],
    };
    // A broken invariant is reported by the worker that saw it (it
    // releases what it holds and stops), and panics here, on the
    // fuzzer's thread, after every worker is joined: libFuzzer's crash
    // handler then runs once and keeps the input. (A panic inside a
    // worker aborts at once under libfuzzer-sys's panic hook; two at a
    // time lost the input.)
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = plans
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
    assert_eq!(shared.upgradable.load(Ordering::Relaxed), 0, "{}", S::NAME);
    assert!(
        !lock.is_locked(),
        "{}: locked after every thread released it",
        S::NAME
    );
}

/// Spins (and a yield, if asked) inside a section.
fn pause(op: u8) {
    for _ in 0..((op >> 5) & 3) * 8 {
        std::hint::spin_loop();
    }
    if op & 16 != 0 {
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
    if op & 8 != 0 {
        std::thread::yield_now();
    }
    let mut result = Ok(());
    let d = TIMEOUTS[usize::from(op >> 5) & 3];
    match op & 7 {
        kind @ (1 | 3 | 5) => {
            let g = match kind {
                1 => Some(lock.lock_exclusive()),
                3 => lock.try_lock_exclusive(),
                _ => lock
                    .try_write_for(d)
                    .unwrap_or_else(|| lock.try_lock_exclusive()),
            };
            if let Some(g) = g {
                enter_write(shared, &mut result, "a writer entered while occupied");
                write_section(lock, shared, op, x, g, true, &mut result);
            }
        }
        kind @ (6 | 7) if S::UPGRADABLE => {
            let u = match kind {
                6 => lock.lock_upgradable_(),
                _ if d.is_zero() => lock.try_upgradable().flatten(),
                _ => lock.try_upgradable_for(d).flatten(),
            };
            if let Some(u) = u {
                upgradable_section(lock, shared, op, x, u, &mut result);
            }
        }
        kind => {
            let g = match kind {
                // 6: a blocking read where there is no upgradable mode.
                0 | 6 => Some(lock.lock_shared()),
                4 => lock
                    .try_read_for(d)
                    .unwrap_or_else(|| lock.try_lock_shared()),
                // 2, and 7 where there is no upgradable mode.
                _ => lock.try_lock_shared(),
            };
            if let Some(g) = g {
                enter_read(shared, &mut result);
                read_section(lock, shared, op, &mut result);
                // SAFETY: `g` is this thread's read acquisition of `lock`.
                unsafe { lock.unlock_shared(g) };
            }
        }
    }
    result
}

/// Counts a writer in; `what` when somebody else is inside.
fn enter_write(shared: &Shared, result: &mut Result<(), String>, what: &str) {
    let entered =
        shared
            .occupancy
            .compare_exchange(0, WRITER, Ordering::Relaxed, Ordering::Relaxed);
    fail(result, entered.is_err(), || format!("{what} ({entered:?})"));
}

/// Counts a reader in.
fn enter_read(shared: &Shared, result: &mut Result<(), String>) {
    let prev = shared.occupancy.fetch_add(1, Ordering::Relaxed);
    fail(result, prev < 0, || {
        "a reader entered while a writer was inside".into()
    });
}

/// A write section (the writer already counted in) and its release: the
/// zero-sum pair updated around a pause; with bit 7 of `op` and
/// `may_downgrade`, downgraded to a read section first where the lock has
/// `downgrade`.
fn write_section<S: Subject>(
    lock: &S,
    shared: &Shared,
    op: u8,
    x: i64,
    g: S::ExclusiveGuard,
    may_downgrade: bool,
    result: &mut Result<(), String>,
) {
    fail(result, !lock.is_locked_exclusive(), || {
        "is_locked_exclusive() false inside a write".into()
    });
    let a = shared.pair[0].load(Ordering::Relaxed);
    shared.pair[0].store(a + x, Ordering::Relaxed);
    pause(op);
    let b = shared.pair[1].load(Ordering::Relaxed);
    shared.pair[1].store(b - x, Ordering::Relaxed);
    // Become a reader in the occupancy word before the downgrade admits
    // other readers (and back if the lock has no downgrade: the write lock
    // is still held, nobody entered).
    let down = may_downgrade
        && op & 128 != 0
        && shared
            .occupancy
            .compare_exchange(WRITER, 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    let g = if down {
        // SAFETY: `g` is this thread's write acquisition of `lock`.
        match unsafe { lock.downgrade_(g) } {
            Ok(r) => {
                read_section(lock, shared, op, result);
                // SAFETY: the read acquisition the downgrade gave.
                unsafe { lock.unlock_shared(r) };
                return;
            }
            Err(g) => {
                let back = shared.occupancy.compare_exchange(
                    1,
                    WRITER,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                fail(result, back.is_err(), || {
                    format!("somebody entered during a write ({back:?})")
                });
                g
            }
        }
    } else {
        g
    };
    let left = shared
        .occupancy
        .compare_exchange(WRITER, 0, Ordering::Relaxed, Ordering::Relaxed);
    fail(result, left.is_err(), || {
        format!("somebody entered during a write ({left:?})")
    });
    // SAFETY: `g` is this thread's write acquisition of `lock`.
    unsafe { lock.unlock_exclusive(g) };
}

/// An upgradable read section and its release: counted as a reader and as
/// the one upgradable holder, the pair read around a pause; with bit 7 of
/// `op`, an upgrade (blocking for kind 6, else `try_upgrade`, timed when
/// the op has a timeout) and, if it succeeds, a write section.
fn upgradable_section<S: Subject>(
    lock: &S,
    shared: &Shared,
    op: u8,
    x: i64,
    u: S::Up,
    result: &mut Result<(), String>,
) {
    enter_read(shared, result);
    let prev = shared.upgradable.fetch_add(1, Ordering::Relaxed);
    fail(result, prev != 0, || {
        format!("an upgradable reader entered beside {prev} others")
    });
    fail(result, !lock.is_locked(), || {
        "is_locked() false inside an upgradable read".into()
    });
    let a = shared.pair[0].load(Ordering::Relaxed);
    pause(op);
    let b = shared.pair[1].load(Ordering::Relaxed);
    fail(result, a + b != 0, || {
        format!("an upgradable reader saw a half-done write ({a} + {b})")
    });
    let u = if op & 128 != 0 {
        let d = TIMEOUTS[usize::from(op >> 5) & 3];
        let got = match op & 7 {
            // SAFETY: `u` is this thread's upgradable acquisition of `lock`.
            6 => Ok(unsafe { lock.upgrade_(u) }),
            // SAFETY: as above.
            _ if d.is_zero() => unsafe { lock.try_upgrade_(u) },
            // SAFETY: as above.
            _ => unsafe { lock.try_upgrade_for_(u, d) },
        };
        match got {
            Ok(w) => {
                shared.upgradable.fetch_sub(1, Ordering::Relaxed);
                // Only this thread may be inside: from one reader to the writer.
                let entered = shared.occupancy.compare_exchange(
                    1,
                    WRITER,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                fail(result, entered.is_err(), || {
                    format!("an upgrade returned while others were inside ({entered:?})")
                });
                write_section(lock, shared, op, x, w, false, result);
                return;
            }
            Err(u) => u,
        }
    } else {
        u
    };
    shared.upgradable.fetch_sub(1, Ordering::Relaxed);
    let prev = shared.occupancy.fetch_sub(1, Ordering::Relaxed);
    fail(result, prev < 1, || {
        "reader count underflow: a writer was inside an upgradable read".into()
    });
    // SAFETY: `u` is this thread's upgradable acquisition of `lock`.
    unsafe { lock.unlock_upgradable_(u) };
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
