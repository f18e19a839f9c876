//! Target (a): one thread's operation sequence on one lock, checked against
//! a reference state machine of what `lock_api` promises.
//!
//! Input: a byte choosing the lock ([`crate::subject::dispatch`]), then one
//! byte per operation: try_read, try_write, read, write, the unlocks,
//! try_read_for / try_write_for / try_upgradable_for with a zero, 1 µs or
//! 50 µs timeout, downgrade, try_upgradable, try_upgrade,
//! downgrade_upgradable and downgrade_to_upgradable, each issued only where
//! the lock has it. Blocking acquisitions are issued only where they cannot
//! wait for this thread itself; unlocks only of what is held.
//!
//! The model (holds of this thread only, so every answer is determined by
//! them except one that lock_api leaves to the lock):
//! - a try form (timed or not) on a free lock succeeds; a try_write, or a
//!   try_read / try_upgradable while a write (or, for try_upgradable, an
//!   upgradable) is held, fails; try_read and try_upgradable next to reads
//!   may go either way (a lock may prefer a writer nobody announced);
//! - try_upgrade succeeds exactly when no read is held;
//! - after every operation `is_locked()` is whether anything is held and
//!   `is_locked_exclusive()` whether a write is;
//! - at the end, everything released, the lock is free and a write goes
//!   through.

use std::time::Duration;

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
            let arg = usize::from(b >> 4);
            let d = TIMEOUTS[arg % 3];
            let what = match b & 15 {
                0 => held.try_read(&lock, lock.try_lock_shared(), "try_read"),
                1 => held.try_write(&lock, lock.try_lock_exclusive(), "try_write"),
                2 if held.write.is_none() && held.reads.len() < MAX_READS => {
                    held.reads.push(lock.lock_shared());
                    "read"
                }
                3 if held.free() => {
                    held.write = Some(lock.lock_exclusive());
                    "write"
                }
                4 if !held.reads.is_empty() => {
                    let g = held.reads.swap_remove(arg % held.reads.len());
                    // SAFETY: a read acquisition of `lock` by this thread.
                    unsafe { lock.unlock_shared(g) };
                    "unlock_read"
                }
                5 if held.write.is_some() => {
                    let g = held.write.take().expect("checked");
                    // SAFETY: the write acquisition of `lock` by this thread.
                    unsafe { lock.unlock_exclusive(g) };
                    "unlock_write"
                }
                6 => match lock.try_read_for(d) {
                    Some(got) => held.try_read(&lock, got, "try_read_for"),
                    None => "skip",
                },
                7 => match lock.try_write_for(d) {
                    Some(got) => held.try_write(&lock, got, "try_write_for"),
                    None => "skip",
                },
                8 if held.write.is_some() => {
                    let g = held.write.take().expect("checked");
                    // SAFETY: the write acquisition of `lock` by this thread.
                    match unsafe { lock.downgrade_(g) } {
                        Ok(r) => {
                            held.reads.push(r);
                            "downgrade"
                        }
                        Err(g) => {
                            held.write = Some(g);
                            "skip"
                        }
                    }
                }
                9 => match lock.try_upgradable() {
                    Some(got) => held.try_up(&lock, got, "try_upgradable"),
                    None => "skip",
                },
                10 => match lock.try_upgradable_for(d) {
                    Some(got) => held.try_up(&lock, got, "try_upgradable_for"),
                    None => "skip",
                },
                11 if held.up.is_some() => {
                    let g = held.up.take().expect("checked");
                    // SAFETY: the upgradable acquisition of `lock` by this thread.
                    unsafe { lock.unlock_upgradable_(g) };
                    "unlock_upgradable"
                }
                12 if held.up.is_some() => {
                    let g = held.up.take().expect("checked");
                    let readers = held.reads.len();
                    // SAFETY: the upgradable acquisition of `lock` by this thread.
                    match unsafe { lock.try_upgrade_(g) } {
                        Ok(w) => {
                            assert_eq!(
                                readers,
                                0,
                                "{}: try_upgrade succeeded next to {readers} reads",
                                S::NAME
                            );
                            held.write = Some(w);
                        }
                        Err(g) => {
                            assert_ne!(
                                readers,
                                0,
                                "{}: try_upgrade failed with no other holder",
                                S::NAME
                            );
                            held.up = Some(g);
                        }
                    }
                    "try_upgrade"
                }
                13 if held.up.is_some() && held.reads.len() < MAX_READS => {
                    let g = held.up.take().expect("checked");
                    // SAFETY: the upgradable acquisition of `lock` by this thread.
                    held.reads.push(unsafe { lock.downgrade_upgradable_(g) });
                    "downgrade_upgradable"
                }
                14 if held.write.is_some() => {
                    let g = held.write.take().expect("checked");
                    // SAFETY: the write acquisition of `lock` by this thread.
                    match unsafe { lock.downgrade_to_upgradable_(g) } {
                        Ok(u) => {
                            held.up = Some(u);
                            "downgrade_to_upgradable"
                        }
                        Err(g) => {
                            held.write = Some(g);
                            "skip"
                        }
                    }
                }
                15 => {
                    let what = held.try_read(&lock, lock.try_lock_shared(), "try_read");
                    if what == "try_read: got" {
                        let g = held.reads.pop().expect("just pushed");
                        // SAFETY: the read acquisition just made.
                        unsafe { lock.unlock_shared(g) };
                    }
                    "try_read+unlock"
                }
                _ => "skip",
            };
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
                    self.reads.push(g);
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
        lock: &S,
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
                let _ = lock;
                self.write = Some(g);
                "try_write: got"
            }
            None => {
                assert!(!free, "{}: {what} failed on a free lock", S::NAME);
                "try_write: refused"
            }
        }
    }

    fn try_up(&mut self, lock: &S, got: Option<S::Up>, what: &'static str) -> &'static str {
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
                let _ = lock;
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
