//! Targets (a) and (b) on BRAVO's locks over a table of two slots
//! ([`bravo::table::configure`] before the table's first use). With the
//! default 4096 slots each thread publishes in a block of its own, so the
//! other targets never make two threads' fast readers collide (a review on
//! 2026-11-28 counted no collision in 558 fuzzer-grown inputs): here every
//! thread's reads hash into the same two slots, so readers of different
//! threads collide and take the slow path beside fast readers, and a
//! revocation scans slots that other threads' reads hold, which is where
//! an unlock that decided from a slot's content, or a scan that skipped a
//! slot, would let a writer in beside a reader. The table's size is
//! chosen once per process, so this is a target (and a replay test) of its
//! own.
//!
//! Input: a byte whose low bit chooses [`crate::lock_ops`] (0) or
//! [`crate::threads`] (1) and whose higher bits choose the lock
//! (`Bravo<parking_lot>`, `Bravo<PF-Q>`, `Bravo<PF-T, Listing1>`, modulo
//! 3), then that target's input without its lock selector.

use crate::subject::Subject;
use crate::{Bytes, lock_ops, threads};

/// The table's size in this target's process.
pub const SLOTS: usize = 2;

/// Runs one input (panics on a broken promise). Panics if this process's
/// BRAVO table already exists with another size.
pub fn run(data: &[u8]) {
    static CONFIGURED: std::sync::Once = std::sync::Once::new();
    CONFIGURED.call_once(|| {
        bravo::table::configure(SLOTS)
            .expect("bravo_tiny needs a process of its own: BRAVO's table already exists");
    });
    assert_eq!(bravo::table::slots(), SLOTS);
    let mut bytes = Bytes::new(data);
    let mode = bytes.byte();
    let threaded = mode & 1 == 1;
    let rest = bytes.rest();
    match (mode >> 1) % 3 {
        0 => on::<bravo::Bravo<parking_lot::RawRwLock>>(threaded, rest),
        1 => on::<bravo::Bravo<rwlock_core::PfQueue>>(threaded, rest),
        _ => on::<bravo::Bravo<rwlock_core::PfTicket, bravo::policy::Listing1>>(threaded, rest),
    }
}

fn on<S: Subject>(threaded: bool, rest: &[u8]) {
    if threaded {
        threads::run_on::<S>(rest);
    } else {
        lock_ops::run_on::<S>(rest);
    }
}
