//! Target (a): one thread's operation sequence on one lock, checked against
//! a reference state machine of what `lock_api` promises.
//!
//! Input: a byte choosing the lock ([`crate::subject::dispatch`]), then one
//! byte per operation: the low 5 bits the operation, the high 3 bits its
//! argument (which read to release; for a timed form `_for` or `_until`
//! and a timeout of zero, 1 µs or 50 µs, or for `_until` a deadline already
//! past). The operations: try_read, try_write, read, write and their
//! unlocks (plain and fair), the timed reads, writes and upgradable reads,
//! downgrade, try_upgradable, upgradable (blocking), try_upgrade, upgrade
//! (blocking), timed upgrades, downgrade_upgradable,
//! downgrade_to_upgradable, the three bumps, and "release everything".
//! Each is issued only where the lock has it; a blocking one only where it
//! cannot wait for this thread itself; an unlock only of what is held.
//!
//! The model is this thread's holds: its reads, its write, its upgradable
//! read. Every answer is determined by them except those lock_api leaves
//! to the lock:
//! - a try form (timed or not, any deadline, past ones included) on a free
//!   lock succeeds;
//! - a write, or a try_read / try_upgradable while a write (or, for
//!   try_upgradable, an upgradable) is held, fails; try_read and
//!   try_upgradable next to reads may go either way (a lock may prefer a
//!   writer nobody announced);
//! - a timed form that fails does so no earlier than its deadline;
//! - try_upgrade and its timed forms succeed exactly when no read is held;
//! - after every operation `is_locked()` is whether anything is held and
//!   `is_locked_exclusive()` whether a write is (a downgrade, an upgrade, a
//!   bump keeps what the model says);
//! - at the end, everything released, the lock is free and a write goes
//!   through.

use std::time::{Duration, Instant};

use crate::Bytes;
use crate::subject::{Subject, Visitor, dispatch};

const MAX_READS: usize = 24;
const TIMEOUTS: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_micros(1),
    Duration::from_micros(50),
];

/// Runs one input (panics on a broken promise).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let selector = bytes.byte();
    dispatch(selector, Ops(bytes.rest()));
}

/// Runs the operations `ops` (an input without its selector byte) on lock
/// type `S`.
pub fn run_on<S: Subject>(ops: &[u8]) {
    Ops(ops).visit::<S>();
}

/// A timed form's limit, from an operation's argument bits.
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// `_for` this long.
    For(Duration),
    /// `_until` this instant (possibly past).
    Until(Instant),
}

impl Limit {
    fn new(arg: usize) -> Limit {
        if arg & 1 == 0 {
            Limit::For(TIMEOUTS[(arg >> 1) % 3])
        } else {
            let now = Instant::now();
            Limit::Until(match arg >> 1 {
                0 => now.checked_sub(Duration::from_millis(1)).unwrap_or(now),
                1 => now,
                2 => now + TIMEOUTS[1],
                _ => now + TIMEOUTS[2],
            })
        }
    }

    /// Asserts that a timed attempt that failed did not give up before its
    /// deadline (`t0`: when it was called).
    fn check_failed<S: Subject>(self, t0: Instant, what: &str) {
        let (took, deadline) = (t0.elapsed(), Instant::now());
        match self {
            Limit::For(d) => assert!(
                took >= d,
                "{}: {what} failed after {took:?}, before its {d:?} timeout",
                S::NAME
            ),
            Limit::Until(t) => assert!(
                deadline >= t,
                "{}: {what} failed {:?} before its deadline",
                S::NAME,
                t - deadline
            ),
        }
    }
}

struct Ops<'a>(&'a [u8]);

impl Visitor for Ops<'_> {
    type Output = ();
    fn visit<S: Subject>(self) {
        let lock = S::INIT;
        let mut held = Held::<S> {
            reads: Vec::new(),
            write: None,
            up: None,
        };
        for (step, &b) in self.0.iter().take(4096).enumerate() {
            let arg = usize::from(b >> 5);
            let what = held.step(&lock, b & 31, arg);
            held.check(&lock, step, what);
        }
        held.release_all(&lock);
        assert!(
            !lock.is_locked(),
            "{}: locked after every hold was released",
            S::NAME
        );
        let g = lock
            .try_lock_exclusive()
            .unwrap_or_else(|| panic!("{}: try_write failed on a released lock", S::NAME));
        // SAFETY: just acquired.
        unsafe { lock.unlock_exclusive(g) };
    }
}

/// What this thread holds.
struct Held<S: Subject> {
    reads: Vec<S::SharedGuard>,
    write: Option<S::ExclusiveGuard>,
    up: Option<S::Up>,
}

impl<S: Subject> Held<S> {
    fn free(&self) -> bool {
        self.reads.is_empty() && self.write.is_none() && self.up.is_none()
    }

    /// Runs operation `op` with argument `arg`; says what it did.
    fn step(&mut self, lock: &S, op: u8, arg: usize) -> &'static str {
        match op {
            0 | 27 => self.try_read(lock, lock.try_lock_shared(), "try_read"),
            1 | 28 => self.try_write(lock, lock.try_lock_exclusive(), "try_write"),
            2 if self.write.is_none() && self.reads.len() < MAX_READS => {
                self.reads.push(lock.lock_shared());
                "read"
            }
            3 if self.free() => {
                self.write = Some(lock.lock_exclusive());
                "write"
            }
            4 | 29 if !self.reads.is_empty() => {
                let g = self.reads.swap_remove(arg % self.reads.len());
                // SAFETY: a read acquisition of `lock` by this thread.
                unsafe { lock.unlock_shared(g) };
                "unlock_read"
            }
            5 | 30 if self.write.is_some() => {
                let g = self.write.take().expect("checked");
                // SAFETY: the write acquisition of `lock` by this thread.
                unsafe { lock.unlock_exclusive(g) };
                "unlock_write"
            }
            6 => {
                let limit = Limit::new(arg);
                let t0 = Instant::now();
                let got = match limit {
                    Limit::For(d) => lock.try_read_for(d),
                    Limit::Until(t) => lock.try_read_until(t),
                };
                match got {
                    Some(got) => {
                        let what = self.try_read(lock, got, "timed try_read");
                        if what == "try_read: refused" {
                            limit.check_failed::<S>(t0, "timed try_read");
                        }
                        what
                    }
                    None => "skip",
                }
            }
            7 => {
                let limit = Limit::new(arg);
                let t0 = Instant::now();
                let got = match limit {
                    Limit::For(d) => lock.try_write_for(d),
                    Limit::Until(t) => lock.try_write_until(t),
                };
                match got {
                    Some(got) => {
                        let what = self.try_write(lock, got, "timed try_write");
                        if what == "try_write: refused" {
                            limit.check_failed::<S>(t0, "timed try_write");
                        }
                        what
                    }
                    None => "skip",
                }
            }
            8 if self.write.is_some() => {
                let g = self.write.take().expect("checked");
                // SAFETY: the write acquisition of `lock` by this thread.
                match unsafe { lock.downgrade_(g) } {
                    Ok(r) => {
                        self.reads.push(r);
                        "downgrade"
                    }
                    Err(g) => {
                        self.write = Some(g);
                        "skip"
                    }
                }
            }
            9 => match lock.try_upgradable() {
                Some(got) => self.try_up(lock, got, "try_upgradable"),
                None => "skip",
            },
            10 => {
                let limit = Limit::new(arg);
                let t0 = Instant::now();
                let got = match limit {
                    Limit::For(d) => lock.try_upgradable_for(d),
                    Limit::Until(t) => lock.try_upgradable_until(t),
                };
                match got {
                    Some(got) => {
                        let what = self.try_up(lock, got, "timed try_upgradable");
                        if what == "try_upgradable: refused" {
                            limit.check_failed::<S>(t0, "timed try_upgradable");
                        }
                        what
                    }
                    None => "skip",
                }
            }
            11 | 31 if self.up.is_some() => {
                let g = self.up.take().expect("checked");
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                unsafe { lock.unlock_upgradable_(g) };
                "unlock_upgradable"
            }
            12 if self.up.is_some() => {
                let g = self.up.take().expect("checked");
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                let got = unsafe { lock.try_upgrade_(g) };
                self.upgraded(got, "try_upgrade");
                "try_upgrade"
            }
            13 if self.up.is_some() && self.reads.len() < MAX_READS => {
                let g = self.up.take().expect("checked");
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                self.reads.push(unsafe { lock.downgrade_upgradable_(g) });
                "downgrade_upgradable"
            }
            14 if self.write.is_some() => {
                let g = self.write.take().expect("checked");
                // SAFETY: the write acquisition of `lock` by this thread.
                match unsafe { lock.downgrade_to_upgradable_(g) } {
                    Ok(u) => {
                        self.up = Some(u);
                        "downgrade_to_upgradable"
                    }
                    Err(g) => {
                        self.write = Some(g);
                        "skip"
                    }
                }
            }
            15 => {
                let what = self.try_read(lock, lock.try_lock_shared(), "try_read");
                if what == "try_read: got" {
                    let g = self.reads.pop().expect("just pushed");
                    // SAFETY: the read acquisition just made.
                    unsafe { lock.unlock_shared(g) };
                }
                "try_read+unlock"
            }
            16 if self.write.is_none() && self.up.is_none() => match lock.lock_upgradable_() {
                Some(u) => {
                    self.up = Some(u);
                    "upgradable"
                }
                None => "skip",
            },
            17 if self.up.is_some() && self.reads.is_empty() => {
                let g = self.up.take().expect("checked");
                // This thread holds no read that the upgrade would wait for.
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                self.write = Some(unsafe { lock.upgrade_(g) });
                "upgrade"
            }
            18 if self.up.is_some() => {
                let g = self.up.take().expect("checked");
                let limit = Limit::new(arg);
                let t0 = Instant::now();
                let got = match limit {
                    // SAFETY: the upgradable acquisition of `lock` by this thread.
                    Limit::For(d) => unsafe { lock.try_upgrade_for_(g, d) },
                    // SAFETY: as above.
                    Limit::Until(t) => unsafe { lock.try_upgrade_until_(g, t) },
                };
                if self.upgraded(got, "timed try_upgrade") {
                    "timed try_upgrade: got"
                } else {
                    limit.check_failed::<S>(t0, "timed try_upgrade");
                    "timed try_upgrade: refused"
                }
            }
            19 if S::FAIR && !self.reads.is_empty() => {
                let g = self.reads.swap_remove(arg % self.reads.len());
                // SAFETY: a read acquisition of `lock` by this thread.
                unsafe { lock.unlock_shared_fair_(g) };
                "unlock_read_fair"
            }
            20 if S::FAIR && self.write.is_some() => {
                let g = self.write.take().expect("checked");
                // SAFETY: the write acquisition of `lock` by this thread.
                unsafe { lock.unlock_exclusive_fair_(g) };
                "unlock_write_fair"
            }
            21 if self.up.is_some() => {
                let g = self.up.take().expect("checked");
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                match unsafe { lock.unlock_upgradable_fair_(g) } {
                    Ok(()) => "unlock_upgradable_fair",
                    Err(g) => {
                        self.up = Some(g);
                        "skip"
                    }
                }
            }
            22 if S::FAIR && !self.reads.is_empty() => {
                let i = arg % self.reads.len();
                // This thread holds no write (it holds a read).
                // SAFETY: a read acquisition of `lock` by this thread.
                unsafe { lock.bump_shared_(&mut self.reads[i]) };
                "bump_shared"
            }
            23 if S::FAIR && self.write.is_some() => {
                // SAFETY: the write acquisition of `lock` by this thread.
                unsafe { lock.bump_exclusive_(self.write.as_mut().expect("checked")) };
                "bump_exclusive"
            }
            24 if self.up.is_some() => {
                let up = self.up.as_mut().expect("checked");
                // SAFETY: the upgradable acquisition of `lock` by this thread.
                let bumped = unsafe { lock.bump_upgradable_(up) };
                if bumped { "bump_upgradable" } else { "skip" }
            }
            25 => {
                let what = self.try_write(lock, lock.try_lock_exclusive(), "try_write");
                if what == "try_write: got" {
                    let g = self.write.take().expect("just taken");
                    // SAFETY: the write acquisition just made.
                    unsafe { lock.unlock_exclusive(g) };
                }
                "try_write+unlock"
            }
            26 => {
                self.release_all(lock);
                "release_all"
            }
            _ => "skip",
        }
    }

    /// Records the result of an upgrade attempt (which must succeed exactly
    /// when this thread holds no read); whether it succeeded.
    fn upgraded(&mut self, got: Result<S::ExclusiveGuard, S::Up>, what: &str) -> bool {
        let readers = self.reads.len();
        match got {
            Ok(w) => {
                if readers != 0 {
                    std::mem::forget(w);
                    panic!("{}: {what} succeeded next to {readers} reads", S::NAME);
                }
                self.write = Some(w);
                true
            }
            Err(g) => {
                self.up = Some(g);
                assert_ne!(
                    readers,
                    0,
                    "{}: {what} failed with no other holder",
                    S::NAME
                );
                false
            }
        }
    }

    fn try_read(
        &mut self,
        lock: &S,
        got: Option<S::SharedGuard>,
        what: &'static str,
    ) -> &'static str {
        let free = self.free();
        match got {
            Some(g) => {
                if self.write.is_some() {
                    std::mem::forget(g);
                    panic!(
                        "{}: {what} succeeded while this thread holds the write lock",
                        S::NAME
                    );
                }
                if self.reads.len() >= MAX_READS {
                    // SAFETY: just acquired.
                    unsafe { lock.unlock_shared(g) };
                } else {
                    self.reads.push(g);
                }
                "try_read: got"
            }
            None => {
                assert!(!free, "{}: {what} failed on a free lock", S::NAME);
                "try_read: refused"
            }
        }
    }

    fn try_write(
        &mut self,
        _lock: &S,
        got: Option<S::ExclusiveGuard>,
        what: &'static str,
    ) -> &'static str {
        let free = self.free();
        match got {
            Some(g) => {
                if !free {
                    let (r, w, u) = (self.reads.len(), self.write.is_some(), self.up.is_some());
                    // Leak it: the lock is broken and must not be unlocked twice.
                    std::mem::forget(g);
                    panic!(
                        "{}: {what} succeeded while this thread holds {r} reads, write {w}, upgradable {u}",
                        S::NAME
                    );
                }
                self.write = Some(g);
                "try_write: got"
            }
            None => {
                assert!(!free, "{}: {what} failed on a free lock", S::NAME);
                "try_write: refused"
            }
        }
    }

    fn try_up(&mut self, _lock: &S, got: Option<S::Up>, what: &'static str) -> &'static str {
        let free = self.free();
        match got {
            Some(g) => {
                if self.write.is_some() || self.up.is_some() {
                    std::mem::forget(g);
                    panic!(
                        "{}: {what} succeeded next to this thread's write or upgradable hold",
                        S::NAME
                    );
                }
                self.up = Some(g);
                "try_upgradable: got"
            }
            None => {
                assert!(!free, "{}: {what} failed on a free lock", S::NAME);
                "try_upgradable: refused"
            }
        }
    }

    fn check(&self, lock: &S, step: usize, what: &str) {
        let any = !self.free();
        let exclusive = self.write.is_some();
        assert_eq!(
            lock.is_locked(),
            any,
            "{}: is_locked() after step {step} ({what}) with {} reads, write {exclusive}, upgradable {}",
            S::NAME,
            self.reads.len(),
            self.up.is_some()
        );
        assert_eq!(
            lock.is_locked_exclusive(),
            exclusive,
            "{}: is_locked_exclusive() after step {step} ({what}) with {} reads, write {exclusive}, upgradable {}",
            S::NAME,
            self.reads.len(),
            self.up.is_some()
        );
    }

    fn release_all(&mut self, lock: &S) {
        for g in self.reads.drain(..) {
            // SAFETY: this thread's read acquisitions of `lock`.
            unsafe { lock.unlock_shared(g) };
        }
        if let Some(g) = self.write.take() {
            // SAFETY: this thread's write acquisition of `lock`.
            unsafe { lock.unlock_exclusive(g) };
        }
        if let Some(g) = self.up.take() {
            // SAFETY: this thread's upgradable acquisition of `lock`.
            unsafe { lock.unlock_upgradable_(g) };
        }
    }
}
