//! The RCU stress run shared by `rcu.rs` and `fence_mode.rs`: reader threads
//! load an `RcuCell` in a loop and check every value they see, updater
//! threads replace it through every update path. Meant for a binary whose
//! global allocator poisons freed memory (`poison.rs`): a value read after
//! its grace period then fails the check.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use prwlock::rcu::{RcuCell, RcuDomain};

use super::poison::POISON_WORD;

const WORDS: usize = 8;
/// Reads each reader thread makes at least, while updates go on.
const MIN_READS_PER_READER: usize = 20_000;

/// A value whose words are consecutive: poisoned or torn memory fails
/// [`Payload::check`]. Counts itself in `live` while it exists.
#[derive(Debug)]
pub struct Payload {
    words: [u64; WORDS],
    live: Arc<AtomicUsize>,
}

impl Payload {
    pub fn new(seq: u64, live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::Relaxed);
        Payload {
            words: core::array::from_fn(|i| (seq << 8) + i as u64),
            live: live.clone(),
        }
    }

    pub fn seq(&self) -> u64 {
        self.check();
        self.words[0] >> 8
    }

    /// Panics unless the value is intact.
    pub fn check(&self) {
        // Volatile: read what is in memory now, on every call.
        // SAFETY: a field of `self`, aligned and initialized.
        let w = |i: usize| unsafe { core::ptr::read_volatile(&self.words[i]) };
        let first = w(0);
        assert_ne!(first, POISON_WORD, "a reader saw freed (poisoned) memory");
        for i in 1..WORDS {
            assert_eq!(
                w(i),
                first + i as u64,
                "a reader saw a damaged value (word {i}): freed or torn"
            );
        }
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        for word in &mut self.words {
            // Volatile: the poison must reach memory before the block is
            // freed (and poisoned again by the allocator).
            // SAFETY: our own field.
            unsafe { core::ptr::write_volatile(word, POISON_WORD) };
        }
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a run did.
#[derive(Debug)]
pub struct Report {
    pub reads: usize,
    pub updates: usize,
}

impl Report {
    /// Panics unless every reader read its share while updates went on.
    pub fn check(&self, readers: usize) {
        assert!(
            self.reads >= readers * MIN_READS_PER_READER && self.updates > 0,
            "{self:?}"
        );
    }
}

/// `readers` threads read while `updaters` threads make `updates` updates
/// each at least, and on until every reader read `MIN_READS_PER_READER`
/// times (store, swap, compare-and-swap, rcu in turn); some sections nest,
/// yield or sleep. Checks every value read, then that after a barrier only
/// the current value is alive.
pub fn stress(
    domain: &'static RcuDomain,
    readers: usize,
    updaters: usize,
    updates: usize,
) -> Report {
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(RcuCell::new_in(Arc::new(Payload::new(0, &live)), domain));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(readers + updaters));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader_threads: Vec<_> = (0..readers)
        .map(|_| {
            let (cell, stop, start, reads) =
                (cell.clone(), stop.clone(), start.clone(), reads.clone());
            thread::spawn(move || {
                start.wait();
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    if n % 256 == 255 {
                        reads.fetch_add(256, Ordering::Relaxed);
                    }
                    let v = cell.load();
                    v.check();
                    if n.is_multiple_of(64) {
                        let section = domain.read();
                        cell.get(&section).check();
                        v.check();
                    }
                    if n.is_multiple_of(512) {
                        thread::yield_now();
                        v.check();
                    }
                    if n % 8192 == 8191 {
                        thread::sleep(Duration::from_micros(100));
                        v.check();
                    }
                    drop(v);
                    n += 1;
                }
                reads.fetch_add(n % 256, Ordering::Relaxed);
            })
        })
        .collect();
    let updater_threads: Vec<_> = (0..updaters)
        .map(|t| {
            let (cell, start, live, reads) =
                (cell.clone(), start.clone(), live.clone(), reads.clone());
            thread::spawn(move || {
                start.wait();
                // At least `updates` updates, and on until the readers have
                // read enough to overlap many of them.
                let min_reads = readers * MIN_READS_PER_READER;
                let mut i = 0;
                while i < updates || reads.load(Ordering::Relaxed) < min_reads {
                    let seq = ((t * updates + i) as u64) << 8;
                    // Under ThreadSanitizer (`scripts/tsan`, `--cfg tsan`)
                    // only `store`: the other updates hand the caller a
                    // strong count of the old value, and when the caller
                    // drops it before the deferred drop does, the free
                    // happens after std's `Arc` drop, whose Acquire fence
                    // (std is not instrumented) TSan cannot see; it would
                    // report every such free. With `store` the deferred drop
                    // is the last owner, so each free is ordered after the
                    // readers by the grace period alone, which is what the
                    // run checks. The other updates run here in the normal
                    // build, with the poison check.
                    let kind = if cfg!(tsan) { 0 } else { i % 4 };
                    match kind {
                        0 => cell.store(Arc::new(Payload::new(seq, &live))),
                        1 => drop(cell.swap(Arc::new(Payload::new(seq, &live)))),
                        2 => {
                            let current = cell.load_full();
                            assert!(current.seq() <= u64::MAX >> 8);
                            drop(
                                cell.compare_and_swap(&current, Arc::new(Payload::new(seq, &live))),
                            );
                        }
                        _ => drop(cell.rcu(|old| {
                            old.check();
                            Payload::new(seq, &live)
                        })),
                    }
                    i += 1;
                }
                i
            })
        })
        .collect();
    let mut made = 0;
    for t in updater_threads {
        made += t.join().expect("an updater failed");
    }
    stop.store(true, Ordering::Relaxed);
    for t in reader_threads {
        t.join().expect("a reader saw a retired value");
    }
    domain.barrier();
    assert_eq!(
        live.load(Ordering::Relaxed),
        1,
        "only the current value is alive"
    );
    drop(cell);
    assert_eq!(live.load(Ordering::Relaxed), 0);
    Report {
        reads: reads.load(Ordering::Relaxed),
        updates: made,
    }
}
