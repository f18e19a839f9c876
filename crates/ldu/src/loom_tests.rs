//! loom models (`RUSTFLAGS="--cfg loom"`, bounded by `LOOM_MAX_PREEMPTIONS`)
//! of logical insert vs logical remove vs synchronize on one item.
//!
//! Modelled: the item's state word, the log's head and links (loom
//! atomics), the items' `Arc`s (loom's: a strong count that a model leaks
//! or frees twice fails the model), and the target's lock (the workspace's
//! `PfTicket`, itself loom-modelled). Not modelled: the target's contents
//! are a plain `BTreeMap` behind the lock (mutual exclusion is the lock's
//! own model's business); the item-to-log binding is a plain atomic.
//!
//! Each model checks the outcome against the sequential specification: on
//! one item the operations that changed something alternate, so their
//! counts give the final membership, which the target must agree with
//! after a final synchronize, with every log count released.
//!
//! Mutations these models catch (each tried):
//! - dropping the wait for an unlinked node in a merge
//!   (`merged_update_is_in_the_log_on_return` reads a stale target) or in an
//!   insert that finds the item a member
//!   (`unchanged_insert_is_in_the_log_on_return`);
//! - reading a node's link after giving the node back in `drain`
//!   (`node_relinked_while_a_synchronize_walks_the_log`: the walk follows
//!   the relinked node and loses B's entry);
//! - an enqueuer that ignores TAKEN (`late_enqueuer_gives_a_taken_node_back`:
//!   the node is never usable again);
//! - an enqueuer that claims a node while TAKEN is set
//!   (`reclaim_waits_for_a_late_enqueuer`);
//! - a push CAS or a drain swap weakened to Relaxed
//!   (`two_items_pushed_concurrently`: the drain reads a stale link and
//!   loses an entry; the other models push from one thread at a time, and
//!   passed with either mutation; found in review, 2026-11-28).

use loom::sync::Arc;
use loom::thread;
use rwlock_core::pf_ticket::PfTicket;

use crate::{Ldu, OrderedSet, Tracked, Update};

type Log = Ldu<OrderedSet<u32>, PfTicket>;

fn log() -> Arc<Log> {
    Arc::new(Ldu::with_lock(PfTicket::new(), OrderedSet::new()))
}

/// Changed-operation counts on one item must alternate from `start`.
fn check(log: &Log, item: &Arc<Tracked<u32>>, start_member: bool, inserts: u32, removes: u32) {
    let (flips, returns) = if start_member {
        (removes, inserts)
    } else {
        (inserts, removes)
    };
    assert!(
        flips == returns || flips == returns + 1,
        "{inserts} {removes}"
    );
    let member = start_member != (flips == returns + 1);
    assert_eq!(item.is_member(), member);
    log.synchronize();
    assert_eq!(log.read(|t| t.contains(item)), member);
    // Owner + target when a member: the log holds no count any more.
    assert_eq!(Arc::strong_count(item), 1 + member as usize);
}

/// One logical insert (or remove) on another thread; joins to 1 if it
/// changed the membership.
fn spawn_update(log: &Arc<Log>, item: &Arc<Tracked<u32>>, insert: bool) -> thread::JoinHandle<u32> {
    let (log, item) = (log.clone(), item.clone());
    thread::spawn(move || {
        changed(if insert {
            log.logical_insert(&item)
        } else {
            log.logical_remove(&item)
        })
    })
}

fn changed(u: Update) -> u32 {
    u.changed() as u32
}

#[test]
fn insert_vs_remove_vs_synchronize() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        let ins = spawn_update(&log, &item, true);
        let rem = spawn_update(&log, &item, false);
        // Without this yield, loom (0.7, LOOM_MAX_PREEMPTIONS=3) never ran
        // these models' synchronize between the other thread's push and its
        // USED (instrumented: the TAKEN path was never taken); with it, it
        // does. The yields after the other models' spawns are for the same
        // reason.
        thread::yield_now();
        log.synchronize();
        let (i, r) = (ins.join().unwrap(), rem.join().unwrap());
        check(&log, &item, false, i, r);
    });
}

#[test]
fn member_remove_insert_vs_remove_vs_synchronize() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        assert_eq!(log.logical_insert(&item), Update::Enqueued);
        log.synchronize();
        let a = {
            let (log, item) = (log.clone(), item.clone());
            thread::spawn(move || {
                let r = changed(log.logical_remove(&item));
                (changed(log.logical_insert(&item)), r)
            })
        };
        thread::yield_now();
        let r2 = changed(log.logical_remove(&item));
        log.synchronize();
        let (i, r1) = a.join().unwrap();
        check(&log, &item, true, i, r1 + r2);
    });
}

#[test]
fn unchanged_insert_is_in_the_log_on_return() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        let ins = spawn_update(&log, &item, true);
        // An insert that finds the item a member (the other thread's insert
        // took effect, perhaps without linking its node yet) changes
        // nothing, but a read after it must see the item.
        thread::yield_now();
        let mine = changed(log.logical_insert(&item));
        assert!(log.read(|t| t.contains(&item)));
        let other = ins.join().unwrap();
        assert_eq!(mine + other, 1);
        check(&log, &item, false, 1, 0);
    });
}

#[test]
fn merged_update_is_in_the_log_on_return() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        let ins = spawn_update(&log, &item, true);
        // Remove until it cancels the other thread's insert, then insert:
        // the insert merges into the node the other thread has claimed and
        // may not have linked yet. Nobody removes afterwards, so this
        // thread's read must see the item.
        loop {
            match log.logical_remove(&item) {
                Update::Absorbed => break,
                u => assert_eq!(u, Update::Unchanged),
            }
            thread::yield_now();
        }
        assert_eq!(log.logical_insert(&item), Update::Merged);
        assert!(log.read(|t| t.contains(&item)));
        assert_eq!(ins.join().unwrap(), 1);
        check(&log, &item, false, 2, 1);
    });
}

#[test]
fn node_relinked_while_a_synchronize_walks_the_log() {
    loom::model(|| {
        let log = log();
        let (a, b) = (Arc::new(Tracked::new(1)), Arc::new(Tracked::new(2)));
        // A's insert node stays in the log, cancelled; B's insert is queued
        // behind it.
        assert_eq!(log.logical_insert(&a), Update::Enqueued);
        assert_eq!(log.logical_remove(&a), Update::Absorbed);
        assert_eq!(log.logical_insert(&b), Update::Enqueued);
        // Once the synchronize gives A's node back, this insert links it
        // again (rewriting its link) while the synchronize may still be
        // walking from it to B.
        let again = spawn_update(&log, &a, true);
        thread::yield_now();
        log.synchronize();
        assert_eq!(again.join().unwrap(), 1);
        check(&log, &a, false, 1, 0);
        check(&log, &b, false, 1, 0);
    });
}

#[test]
fn late_enqueuer_gives_a_taken_node_back() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        // The synchronize may take the insert node between the other
        // thread's push and its USED (it sets TAKEN instead of waiting).
        let ins = spawn_update(&log, &item, true);
        thread::yield_now();
        log.synchronize();
        assert_eq!(ins.join().unwrap(), 1);
        // The node must come back usable: remove, apply, insert again (the
        // same insert node is enqueued anew).
        assert!(log.logical_remove(&item).changed());
        log.synchronize();
        assert_eq!(log.logical_insert(&item), Update::Enqueued);
        check(&log, &item, false, 2, 1);
    });
}

#[test]
fn reclaim_waits_for_a_late_enqueuer() {
    loom::model(|| {
        let log = log();
        let item = Arc::new(Tracked::new(1));
        let first = spawn_update(&log, &item, true);
        // Remove (perhaps cancelling the first insert), then insert again:
        // this may find the insert node taken by the synchronize below
        // before its first enqueuer set USED, and must wait for TAKEN to
        // clear before linking the node again.
        let second = {
            let (log, item) = (log.clone(), item.clone());
            thread::spawn(move || {
                let r = changed(log.logical_remove(&item));
                let i = changed(log.logical_insert(&item));
                assert!(
                    log.read(|t| t.contains(&item)),
                    "an insert returned, nobody removes after"
                );
                (i, r)
            })
        };
        thread::yield_now();
        log.synchronize();
        let a = first.join().unwrap();
        let (i, r) = second.join().unwrap();
        check(&log, &item, false, a + i, r);
    });
}

/// Two pushes race on the log's head (two items, so both enqueue), with a
/// synchronize draining beside them: the push's Release CAS and the
/// drain's Acquire swap are what make the drain see each node's link.
#[test]
fn two_items_pushed_concurrently() {
    loom::model(|| {
        let log = log();
        let (a, b) = (Arc::new(Tracked::new(1)), Arc::new(Tracked::new(2)));
        let ta = spawn_update(&log, &a, true);
        let tb = spawn_update(&log, &b, true);
        thread::yield_now();
        log.synchronize();
        assert_eq!(ta.join().unwrap(), 1);
        assert_eq!(tb.join().unwrap(), 1);
        check(&log, &a, false, 1, 0);
        check(&log, &b, false, 1, 0);
    });
}
