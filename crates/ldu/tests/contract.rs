//! What `synchronize`, `totals` and `Drop` promise at their edges: a
//! synchronize that finds the log empty while another thread's drain is
//! still applying waits for it; a panic in an item's `Drop` during a drain
//! keeps the totals in step with the target, and during the log's own drop
//! releases the other pending items all the same. (Each failed before its
//! fix; found in review.)

#![cfg(not(loom))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ldu::{Ldu, Target, Tracked};

/// A target whose insert of 0 takes a while (and says when it started).
#[derive(Default)]
struct Slow {
    applied: Arc<AtomicUsize>,
    entered: Arc<AtomicBool>,
}

impl Target for Slow {
    type Item = u32;
    fn apply_insert(&mut self, item: Arc<Tracked<u32>>) {
        if **item == 0 {
            self.entered.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
        }
        self.applied.fetch_add(1, Ordering::SeqCst);
    }
    fn apply_remove(&mut self, _item: Arc<Tracked<u32>>) {}
}

#[test]
fn synchronize_waits_for_a_drain_under_way() {
    let applied = Arc::new(AtomicUsize::new(0));
    let entered = Arc::new(AtomicBool::new(false));
    let log: Arc<Ldu<Slow>> = Arc::new(Ldu::new(Slow {
        applied: applied.clone(),
        entered: entered.clone(),
    }));
    let (slow, mine) = (Arc::new(Tracked::new(0u32)), Arc::new(Tracked::new(1u32)));
    log.logical_insert(&slow);
    log.logical_insert(&mine);
    let other = {
        let log = log.clone();
        std::thread::spawn(move || log.synchronize())
    };
    // The other thread took both entries and is applying the first.
    while !entered.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    log.synchronize();
    assert_eq!(
        applied.load(Ordering::SeqCst),
        2,
        "synchronize returned before this thread's insert was applied"
    );
    other.join().unwrap();
}

/// An item whose `Drop` panics once while armed.
struct Bomb(Arc<AtomicBool>);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0.swap(false, Ordering::SeqCst) {
            panic!("an item's Drop panics");
        }
    }
}

#[derive(Default)]
struct Bag(Vec<Arc<Tracked<Bomb>>>);

impl Target for Bag {
    type Item = Bomb;
    fn apply_insert(&mut self, item: Arc<Tracked<Bomb>>) {
        self.0.push(item);
    }
    fn apply_remove(&mut self, item: Arc<Tracked<Bomb>>) {
        let i = self.0.iter().position(|x| Arc::ptr_eq(x, &item)).unwrap();
        self.0.swap_remove(i);
    }
}

#[test]
fn totals_count_what_a_panicking_drain_applied() {
    let log: Ldu<Bag> = Ldu::default();
    let armed = Arc::new(AtomicBool::new(false));
    let kept: Vec<_> = (0..3)
        .map(|_| Arc::new(Tracked::new(Bomb(armed.clone()))))
        .collect();
    for it in &kept {
        log.logical_insert(it);
    }
    // A cancelled pair whose entry holds the item's last count: the drain
    // drops it, and its `Drop` panics.
    let doomed = Arc::new(Tracked::new(Bomb(armed.clone())));
    log.logical_insert(&doomed);
    log.logical_remove(&doomed);
    drop(doomed);
    armed.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| log.synchronize())).is_err());
    armed.store(false, Ordering::SeqCst);
    let members = log.read(|b| b.0.len());
    let totals = log.totals();
    assert_eq!(members, 3);
    assert_eq!(
        totals.inserted as usize - totals.removed as usize,
        members,
        "{totals:?}"
    );
}

#[test]
fn dropping_a_log_releases_every_pending_item_when_one_drop_panics() {
    let armed = Arc::new(AtomicBool::new(false));
    let log: Ldu<Bag> = Ldu::default();
    let items: Vec<_> = (0..3)
        .map(|_| Arc::new(Tracked::new(Bomb(armed.clone()))))
        .collect();
    for it in &items {
        log.logical_insert(it);
    }
    let weak: Vec<_> = items.iter().map(Arc::downgrade).collect();
    drop(items);
    // The first entry released (the newest) panics.
    armed.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(move || drop(log))).is_err());
    armed.store(false, Ordering::SeqCst);
    let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
    assert_eq!(alive, 0, "pending items leaked");
}
