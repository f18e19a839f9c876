//! Target (c): LDU operation sequences against a sequential model.
//!
//! Input: one byte per operation on a log over an `OrderedSet` of 8 items:
//! logical insert or remove of an item, `synchronize`, or a read. The
//! model is each item's logical membership. Checked:
//! - a logical insert changes something exactly when the item is not a
//!   member, a remove exactly when it is (`Update::changed`), and a change
//!   that meets the opposite pending change absorbs it (`Update::Absorbed`:
//!   the target already holds what the call asks for);
//! - a read sees exactly the model (length, membership of every item, and
//!   the target iterates what it counts);
//! - after `synchronize`, every item's membership bit is the model and the
//!   log holds no reference count (an item's count is ours plus the
//!   target's when it is a member); the same at the end.

use std::sync::Arc;

use ldu::{Ldu, OrderedSet, Tracked, Update};

const ITEMS: usize = 8;

/// Runs one input (panics on a broken promise).
pub fn run(data: &[u8]) {
    let log: Ldu<OrderedSet<u32>> = Ldu::default();
    let items: Vec<Arc<Tracked<u32>>> = (0..ITEMS as u32)
        .map(|v| Arc::new(Tracked::new(v)))
        .collect();
    // Logical membership, and membership in the target (what the last
    // synchronize applied).
    let mut member = [false; ITEMS];
    let mut applied = [false; ITEMS];
    for (step, &b) in data.iter().take(4096).enumerate() {
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
                log.synchronize();
                applied = member;
                check_settled(&items, &member, step);
            }
            _ => {
                let (len, count, seen) = log.read(|s| {
                    let seen: Vec<bool> = items.iter().map(|it| s.contains(it)).collect();
                    (s.len(), s.iter().count(), seen)
                });
                applied = member;
                assert_eq!(
                    len, count,
                    "step {step}: the target's len and iteration differ"
                );
                assert_eq!(seen, member, "step {step}: a read missed an update");
                assert_eq!(len, member.iter().filter(|m| **m).count(), "step {step}");
            }
        }
    }
    log.synchronize();
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

fn check_settled(items: &[Arc<Tracked<u32>>], member: &[bool; ITEMS], step: usize) {
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
