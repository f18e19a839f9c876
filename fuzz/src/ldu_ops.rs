//! Target (c): LDU operation sequences against a sequential model.
//!
//! Input: a byte choosing the target structure (even: an `OrderedSet` of
//! 8 items over 5 values, so that some items share a value; odd: an
//! `IntervalSet` of 8 ranges, overlapping, nested, one empty, two equal),
//! then one byte per operation: logical insert or remove of an item,
//! `synchronize`, or a read. The model is each item's logical membership,
//! and its membership in the target as of the last batch applied (by a
//! `synchronize` or a read). Checked:
//! - a logical insert changes something exactly when the item is not a
//!   member, a remove exactly when it is (`Update::changed`), and a change
//!   that meets the opposite pending change absorbs it (`Update::Absorbed`:
//!   the target already holds what the call asks for);
//! - a read sees exactly the model: for the ordered set its length, what
//!   it iterates (ascending by value), every item's `contains`,
//!   `contains_value`, `first` and `last`; for the interval set every
//!   item's `contains`, what it iterates, `stabbing` at every key and
//!   `overlapping` for a query from the operation byte, against a scan of
//!   the model's members;
//! - `synchronize` reports as inserted and removed exactly the items whose
//!   membership the batch changed, and as entries those plus the
//!   cancelled ones; `totals` is the sum of every batch, reads' included;
//! - after `synchronize`, every item's membership bit is the model and the
//!   log holds no reference count (an item's count is ours plus the
//!   target's when it is a member); the same at the end, and after the log
//!   is dropped only ours are left.

use std::ops::Range;
use std::sync::Arc;

use ldu::{IntervalSet, Ldu, OrderedSet, SyncStats, Target, Tracked, Update};

use crate::Bytes;

const ITEMS: usize = 8;

/// Runs one input (panics on a broken promise).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    if bytes.byte() & 1 == 0 {
        run_on::<OrderedSet<u32>>(bytes.rest());
    } else {
        run_on::<IntervalSet<Range<u64>>>(bytes.rest());
    }
}

/// A target structure with its items and the reads the model checks.
trait Checked: Target + Default + Sized {
    /// The values of the [`ITEMS`] items.
    fn values() -> [Self::Item; ITEMS];
    /// Checks a read of `self` against `member` (which items are members);
    /// `query` comes from the operation byte.
    fn check(
        &self,
        items: &[Arc<Tracked<Self::Item>>],
        member: &[bool; ITEMS],
        query: u8,
        at: &str,
    );
}

impl Checked for OrderedSet<u32> {
    fn values() -> [u32; ITEMS] {
        [3, 1, 4, 1, 0, 2, 4, 3]
    }

    fn check(&self, items: &[Arc<Tracked<u32>>], member: &[bool; ITEMS], _query: u8, at: &str) {
        let members: Vec<u32> = (0..ITEMS)
            .filter(|&i| member[i])
            .map(|i| *items[i].get())
            .collect();
        assert_eq!(self.len(), members.len(), "{at}: len");
        assert_eq!(self.is_empty(), members.is_empty(), "{at}: is_empty");
        let seen: Vec<u32> = self.iter().map(|it| *it.get()).collect();
        let mut sorted = members.clone();
        sorted.sort_unstable();
        assert_eq!(seen, sorted, "{at}: iteration (ascending by value)");
        for (i, it) in items.iter().enumerate() {
            assert_eq!(self.contains(it), member[i], "{at}: contains(item {i})");
        }
        for v in 0..6 {
            assert_eq!(
                self.contains_value(&v),
                members.contains(&v),
                "{at}: contains_value({v})"
            );
        }
        assert_eq!(
            self.first().map(|it| *it.get()),
            sorted.first().copied(),
            "{at}: first"
        );
        assert_eq!(
            self.last().map(|it| *it.get()),
            sorted.last().copied(),
            "{at}: last"
        );
    }
}

impl Checked for IntervalSet<Range<u64>> {
    fn values() -> [Range<u64>; ITEMS] {
        [0..4, 2..6, 4..8, 4..8, 10..10, 0..16, 15..16, 7..9]
    }

    fn check(
        &self,
        items: &[Arc<Tracked<Range<u64>>>],
        member: &[bool; ITEMS],
        query: u8,
        at: &str,
    ) {
        let is = |it: &Arc<Tracked<Range<u64>>>| {
            items
                .iter()
                .position(|m| Arc::ptr_eq(m, it))
                .expect("a member that is one of the items")
        };
        for (i, it) in items.iter().enumerate() {
            assert_eq!(self.contains(it), member[i], "{at}: contains(item {i})");
        }
        let mut seen: Vec<usize> = self.iter().map(is).collect();
        assert_eq!(self.len(), seen.len(), "{at}: len and iteration");
        seen.sort_unstable();
        let members: Vec<usize> = (0..ITEMS).filter(|&i| member[i]).collect();
        assert_eq!(seen, members, "{at}: iteration");
        // Which members overlap `keys`, by a scan of the model.
        let expect = |keys: &Range<u64>| -> Vec<usize> {
            members
                .iter()
                .copied()
                .filter(|&i| {
                    let r = items[i].get();
                    r.start < r.end && r.start < keys.end && keys.start < r.end
                })
                .collect()
        };
        for key in 0..=17 {
            let mut got: Vec<usize> = self.stabbing(key).map(is).collect();
            got.sort_unstable();
            assert_eq!(got, expect(&(key..key + 1)), "{at}: stabbing({key})");
        }
        let start = u64::from(query >> 3) % 18;
        let keys = start..start + u64::from(query & 7);
        let got: Vec<&Arc<Tracked<Range<u64>>>> = self.overlapping(keys.clone()).collect();
        assert!(
            got.windows(2).all(|w| w[0].get().start <= w[1].get().start),
            "{at}: overlapping({keys:?}) not in order of start"
        );
        let mut got: Vec<usize> = got.into_iter().map(is).collect();
        got.sort_unstable();
        assert_eq!(got, expect(&keys), "{at}: overlapping({keys:?})");
    }
}

fn run_on<S: Checked>(ops: &[u8]) {
    let log: Ldu<S> = Ldu::default();
    let items: Vec<Arc<Tracked<S::Item>>> = S::values()
        .into_iter()
        .map(|v| Arc::new(Tracked::new(v)))
        .collect();
    // Logical membership, and membership in the target (what the last
    // batch applied).
    let mut member = [false; ITEMS];
    let mut applied = [false; ITEMS];
    let mut totals = SyncStats::default();
    for (step, &b) in ops.iter().take(4096).enumerate() {
        let i = usize::from(b >> 4) % ITEMS;
        match b & 7 {
            0..=2 => {
                let insert = b & 8 == 0;
                let item = &items[i];
                let u = if insert {
                    log.logical_insert(item)
                } else {
                    log.logical_remove(item)
                };
                let changes = member[i] != insert;
                assert_eq!(
                    u.changed(),
                    changes,
                    "step {step}: {} of item {i} (member {}) returned {u:?}",
                    if insert { "insert" } else { "remove" },
                    member[i]
                );
                if changes && applied[i] == insert {
                    assert_eq!(
                        u,
                        Update::Absorbed,
                        "step {step}: item {i}'s opposite change was pending, not absorbed"
                    );
                }
                member[i] = insert;
            }
            3 | 4 => {
                let stats = log.synchronize();
                check_batch(&stats, &mut applied, &member, step);
                add(&mut totals, &stats);
                check_settled(&items, &member, step);
            }
            _ => {
                log.read(|s| s.check(&items, &member, b, &format!("step {step}: read")));
                // The read applied a batch: its stats are only in `totals`.
                let now = log.totals();
                let batch = SyncStats {
                    entries: now.entries - totals.entries,
                    inserted: now.inserted - totals.inserted,
                    removed: now.removed - totals.removed,
                    cancelled: now.cancelled - totals.cancelled,
                };
                check_batch(&batch, &mut applied, &member, step);
                totals = now;
            }
        }
    }
    let stats = log.synchronize();
    check_batch(&stats, &mut applied, &member, usize::MAX);
    add(&mut totals, &stats);
    assert_eq!(
        log.totals(),
        totals,
        "totals are not the sum of the batches"
    );
    check_settled(&items, &member, usize::MAX);
    drop(log);
    for (i, it) in items.iter().enumerate() {
        assert_eq!(
            Arc::strong_count(it),
            1,
            "item {i}: a count outlived the log"
        );
    }
}

/// Checks a batch's statistics against the model's change since the last
/// batch (`applied` to `member`), then records it as applied.
fn check_batch(
    stats: &SyncStats,
    applied: &mut [bool; ITEMS],
    member: &[bool; ITEMS],
    step: usize,
) {
    let flips = |to: bool| {
        (0..ITEMS)
            .filter(|&i| applied[i] != member[i] && member[i] == to)
            .count() as u64
    };
    assert_eq!(
        (stats.inserted, stats.removed),
        (flips(true), flips(false)),
        "step {step}: a batch's inserted and removed ({stats:?}) against the model's changes"
    );
    assert_eq!(
        stats.entries,
        stats.inserted + stats.removed + stats.cancelled,
        "step {step}: entries are not applied plus cancelled ({stats:?})"
    );
    *applied = *member;
}

fn add(totals: &mut SyncStats, s: &SyncStats) {
    totals.entries += s.entries;
    totals.inserted += s.inserted;
    totals.removed += s.removed;
    totals.cancelled += s.cancelled;
}

fn check_settled<T>(items: &[Arc<Tracked<T>>], member: &[bool; ITEMS], step: usize) {
    for (i, it) in items.iter().enumerate() {
        assert_eq!(
            it.is_member(),
            member[i],
            "step {step}: item {i}'s membership bit"
        );
        assert_eq!(
            Arc::strong_count(it),
            1 + usize::from(member[i]),
            "step {step}: item {i}: a count left in the log, or the target's missing"
        );
    }
}
