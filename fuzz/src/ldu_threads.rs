//! Target (h): LDU with 2 or 3 threads on one log (`ldu_ops` is its
//! sequential model on one thread): logical inserts and removes, some on
//! items a thread owns and some on items every thread updates,
//! `synchronize` and reads racing each other as the input deals them.
//!
//! Input: a byte choosing the thread count (bit 0: 2 or 3) and the log's
//! lock (bit 1: parking_lot's, LDU's default, or the workspace's PF-T),
//! then one byte per operation, dealt to the threads in turn (at most 256
//! each). An operation byte: bits 0-2 the kind (0-3 a logical update, 4 a
//! `synchronize`, 5 and 6 a read, 7 a yield), bit 3 insert or remove (for
//! a read: iterate too), bits 4-7 the item: 0-7 one of the thread's own
//! (of the first [`OWNED`] of the [`ITEMS`], item `i` is thread
//! `i % threads`'s), 8-15 one of the shared ones.
//!
//! Only its owner updates an owned item, so each thread keeps the model
//! of its own items, as `ldu_ops` does, while the other threads' batches
//! apply its updates. Checked:
//! - an update of an owned item changes something exactly when the model
//!   says it must (`Update::changed`), whoever applies the pending ones;
//! - after a `synchronize`, no entry of the log holds a count of the
//!   caller's own items (each has ours, plus the target's if a member):
//!   whichever thread's batch took them, it has applied them;
//! - a read (which applies what is pending first) finds each owned item of
//!   the reader in the target exactly when the model says so, and every
//!   item's membership bit agrees with the target (another thread may flip
//!   it in between only for a shared item, so those are checked at the
//!   end);
//! - at the end, after a last `synchronize`: every item's membership bit
//!   agrees with the target and, for owned items, with its owner's model;
//!   the batches inserted minus removed what the target holds; no entry of
//!   the log keeps a count (an item's count is ours plus the target's);
//!   after the log drops only ours are left.
//!
//! A run that has not ended within [`crate::WATCHDOG`] aborts
//! ([`crate::Armed`]): an updater waiting for a link that never comes
//! (`wait_linked`, `wait_untaken`) is the hang this looks for.

use std::sync::Arc;

use ldu::{Ldu, OrderedSet, Tracked};
use lock_api::RawRwLock;

use crate::Bytes;

/// Items in a run; the first [`OWNED`] are owned.
pub const ITEMS: usize = 12;
/// Items with an owner.
pub const OWNED: usize = 8;
const MAX_OPS_PER_THREAD: usize = 256;

/// Runs one input (panics or aborts on a broken promise).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let config = bytes.byte();
    let threads = 2 + usize::from(config & 1);
    let plans = crate::deal(bytes.rest(), threads, MAX_OPS_PER_THREAD);
    if config & 2 == 0 {
        run_on::<parking_lot::RawRwLock>(&plans, "Ldu over parking_lot");
    } else {
        run_on::<rwlock_core::PfTicket>(&plans, "Ldu over PF-T");
    }
}

type Set = OrderedSet<u32>;
type Item = Arc<Tracked<u32>>;

fn run_on<R: RawRwLock + Send + Sync>(plans: &[Vec<u8>], name: &'static str) {
    let _armed = crate::Armed::new(
        "ldu_threads",
        name,
        "an updater or a synchronize waited for ever",
    );
    let threads = plans.len();
    let log: Ldu<Set, R> = Ldu::new(Set::default());
    // Values repeat, so that items share a value in the target.
    let items: Vec<Item> = (0..ITEMS)
        .map(|i| Arc::new(Tracked::new((i % 5) as u32)))
        .collect();
    // Each worker returns its model of its owned items (or what broke).
    let models: Vec<Result<[bool; ITEMS], String>> = std::thread::scope(|s| {
        let workers: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(t, plan)| {
                let (log, items) = (&log, &items);
                s.spawn(move || {
                    let mut member = [false; ITEMS];
                    for (step, &op) in plan.iter().enumerate() {
                        step_one(log, items, &mut member, t, threads, op)
                            .map_err(|e| format!("{name}, thread {t}, step {step}: {e}"))?;
                    }
                    Ok(member)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("workers report, never panic"))
            .collect()
    });
    let mut owned = [false; ITEMS];
    for (t, model) in models.iter().enumerate() {
        match model {
            Err(e) => panic!("ldu_threads: {e}"),
            Ok(member) => {
                for i in (0..OWNED).filter(|i| i % threads == t) {
                    owned[i] = member[i];
                }
            }
        }
    }
    log.synchronize();
    let in_target: Vec<bool> = log.read(|s| items.iter().map(|it| s.contains(it)).collect());
    for (i, it) in items.iter().enumerate() {
        assert_eq!(
            it.is_member(),
            in_target[i],
            "ldu_threads, {name}: item {i}'s membership bit against the target at the end"
        );
        if i < OWNED {
            assert_eq!(
                in_target[i], owned[i],
                "ldu_threads, {name}: owned item {i} against its owner's model at the end"
            );
        }
        assert_eq!(
            Arc::strong_count(it),
            1 + usize::from(in_target[i]),
            "ldu_threads, {name}: item {i}: a count left in the log, or the target's missing"
        );
    }
    let totals = log.totals();
    let held = in_target.iter().filter(|&&m| m).count() as u64;
    assert_eq!(
        totals.inserted - totals.removed,
        held,
        "ldu_threads, {name}: the batches inserted minus removed ({totals:?}) against the {held} items held"
    );
    assert_eq!(
        totals.entries,
        totals.inserted + totals.removed + totals.cancelled,
        "ldu_threads, {name}: entries are not applied plus cancelled ({totals:?})"
    );
    drop(log);
    for (i, it) in items.iter().enumerate() {
        assert_eq!(
            Arc::strong_count(it),
            1,
            "ldu_threads, {name}: item {i}: a count outlived the log"
        );
    }
}

/// One operation of thread `t`; `member` is its model of its owned items.
fn step_one<R: RawRwLock>(
    log: &Ldu<Set, R>,
    items: &[Item],
    member: &mut [bool; ITEMS],
    t: usize,
    threads: usize,
    op: u8,
) -> Result<(), String> {
    // Bits 4-7: one of this thread's own items (0-7), or a shared one.
    let n = usize::from(op >> 4);
    let i = if n < 8 {
        let own = (OWNED - t).div_ceil(threads);
        t + threads * (n % own)
    } else {
        OWNED + (n - 8) % (ITEMS - OWNED)
    };
    match op & 7 {
        0..=3 => {
            let insert = op & 8 == 0;
            let u = if insert {
                log.logical_insert(&items[i])
            } else {
                log.logical_remove(&items[i])
            };
            if i < OWNED {
                let changes = member[i] != insert;
                if u.changed() != changes {
                    return Err(format!(
                        "{} of owned item {i} (member {}) returned {u:?}",
                        if insert { "insert" } else { "remove" },
                        member[i]
                    ));
                }
                member[i] = insert;
            }
        }
        4 => {
            let s = log.synchronize();
            if s.entries != s.inserted + s.removed + s.cancelled {
                return Err(format!(
                    "a batch's entries are not applied plus cancelled ({s:?})"
                ));
            }
            // Every entry of ours linked before the call is applied and
            // gone (perhaps by another thread's batch, which the call
            // waits for): an own item's counts are ours and the target's.
            for j in (t..OWNED).step_by(threads) {
                let count = Arc::strong_count(&items[j]);
                if count != 1 + usize::from(member[j]) {
                    return Err(format!(
                        "after synchronize: own item {j} (member {}) has {count} counts",
                        member[j]
                    ));
                }
            }
        }
        5 | 6 => {
            log.read(|s: &Set| -> Result<(), String> {
                for (j, it) in items.iter().enumerate() {
                    let mine = j < OWNED && j % threads == t;
                    if mine && s.contains(it) != member[j] {
                        return Err(format!(
                            "read: own item {j} in the target: {}, model {}",
                            s.contains(it),
                            member[j]
                        ));
                    }
                    // Only its owner flips an owned item's bit (a shared
                    // one may move meanwhile: checked at the end).
                    if mine && it.is_member() != member[j] {
                        return Err(format!("read: own item {j}'s membership bit"));
                    }
                }
                if op & 8 != 0 {
                    // Every member iterated is an item, once, ascending.
                    let seen: Vec<u32> = s.iter().map(|it| *it.get()).collect();
                    if seen.windows(2).any(|w| w[0] > w[1]) || seen.len() != s.len() {
                        return Err(format!("read: iteration {seen:?}, len {}", s.len()));
                    }
                }
                Ok(())
            })?;
        }
        _ => std::thread::yield_now(),
    }
    Ok(())
}
