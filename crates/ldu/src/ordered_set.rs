//! An ordered set of items, the simplest [`Target`].

use core::fmt;
use core::ops::RangeBounds;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};

use rwlock_core::sync::Arc;

use crate::{Target, Tracked};

/// Items ordered by value (a `BTreeMap` underneath, keyed by a clone of
/// each member's value so that searches compare values in place instead of
/// following a pointer per comparison).
///
/// Membership is by item identity: two distinct items with equal values can
/// both be members (they are kept side by side, in insertion order), and
/// [`contains`](Self::contains) asks about one item. As with `BTreeSet`, an
/// item's value must not change order while it is a member.
///
/// The map holds one item pointer per value, the first member with that
/// value; later members with an equal value wait in a second map that stays
/// empty unless equal values meet. There each value's later members are
/// kept by an insertion number, and an index from each later member's
/// address to its number finds one by identity, so that a value with many
/// members costs a logarithm per insert, remove or `contains`, not a scan
/// of its members (a scan made 40,000 equal inserts take 0.3 s: found in a
/// new user's trial). A drain walks the map once per applied
/// entry, under the write lock, so its size is the drain's cache footprint:
/// by the layout of std's leaf node (11 keys and values, a parent pointer,
/// two `u16`), a leaf with `u64` keys takes 192 bytes, where the previous
/// layout (a 32-byte value per key) took 456 and a `BTreeSet<u64>` takes
/// 104. `docs/ldu.md` has the throughput this bought.
///
/// ```
/// use std::sync::Arc;
/// use ldu::{Ldu, OrderedSet, Tracked};
///
/// let log: Ldu<OrderedSet<&str>> = Ldu::default();
/// let (b, a) = (Arc::new(Tracked::new("b")), Arc::new(Tracked::new("a")));
/// log.logical_insert(&b);
/// log.logical_insert(&a);
/// log.read(|set| {
///     assert_eq!(set.iter().map(|it| ***it).collect::<Vec<_>>(), ["a", "b"]);
///     assert!(set.contains_value(&"a"));
///     assert_eq!(set.len(), 2);
/// });
/// ```
pub struct OrderedSet<T> {
    /// The first member of each value.
    firsts: BTreeMap<T, Arc<Tracked<T>>>,
    /// The later members of values with more than one, by insertion
    /// number (never an empty map).
    later: BTreeMap<T, BTreeMap<u64, Arc<Tracked<T>>>>,
    /// The insertion number of each later member, by its address (a
    /// member's `Arc` is held here, so no other item has that address).
    later_index: HashMap<usize, u64>,
    /// The next insertion number.
    next_later: u64,
    len: usize,
}

impl<T: Ord + Clone> Default for OrderedSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone> OrderedSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        OrderedSet {
            firsts: BTreeMap::new(),
            later: BTreeMap::new(),
            later_index: HashMap::new(),
            next_later: 0,
            len: 0,
        }
    }

    /// The number of member items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no item is a member.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this very item is a member.
    pub fn contains(&self, item: &Arc<Tracked<T>>) -> bool {
        self.firsts.get(item.get()).is_some_and(|first| {
            Arc::ptr_eq(first, item) || self.later_index.contains_key(&address(item))
        })
    }

    /// Whether some member has a value equal to `value`.
    pub fn contains_value(&self, value: &T) -> bool {
        self.firsts.contains_key(value)
    }

    /// The members in value order (equal values in insertion order).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        self.firsts
            .iter()
            .flat_map(|(value, first)| self.with_later(value, first))
    }

    /// The members whose values lie in `range`, in order.
    pub fn range<Q>(&self, range: Q) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_
    where
        Q: RangeBounds<T>,
    {
        self.firsts
            .range(range)
            .flat_map(|(value, first)| self.with_later(value, first))
    }

    /// The member with the smallest value.
    pub fn first(&self) -> Option<&Arc<Tracked<T>>> {
        self.firsts.first_key_value().map(|(_, first)| first)
    }

    /// The member with the largest value (the last inserted of equals).
    pub fn last(&self) -> Option<&Arc<Tracked<T>>> {
        self.firsts
            .last_key_value()
            .map(|(value, first)| self.later_of(value).next_back().unwrap_or(first))
    }
}

impl<T: Ord> OrderedSet<T> {
    /// The later members with `value` (usually none), in insertion order.
    #[inline]
    fn later_of(&self, value: &T) -> impl DoubleEndedIterator<Item = &Arc<Tracked<T>>> + '_ {
        let later = if self.later.is_empty() {
            None
        } else {
            self.later.get(value)
        };
        later.into_iter().flat_map(BTreeMap::values)
    }

    /// `first`, then the later members with its value.
    fn with_later<'a>(
        &'a self,
        value: &T,
        first: &'a Arc<Tracked<T>>,
    ) -> impl Iterator<Item = &'a Arc<Tracked<T>>> + 'a {
        core::iter::once(first).chain(self.later_of(value))
    }
}

impl<T: Ord + Clone> Target for OrderedSet<T> {
    type Item = T;

    fn apply_insert(&mut self, item: Arc<Tracked<T>>) {
        match self.firsts.entry(item.get().clone()) {
            Entry::Vacant(slot) => {
                slot.insert(item);
            }
            Entry::Occupied(first) => {
                // Check before changing anything: a panic here leaves the
                // set as it was.
                let addr = address(&item);
                assert!(
                    !Arc::ptr_eq(first.get(), &item) && !self.later_index.contains_key(&addr),
                    "ldu::OrderedSet: apply_insert of a member (log invariant broken)"
                );
                // The one comparing step first; then no user code runs.
                let later = self.later.entry(item.get().clone()).or_default();
                let n = self.next_later;
                self.next_later += 1;
                self.later_index.insert(addr, n);
                later.insert(n, item);
            }
        }
        self.len += 1;
    }

    fn apply_remove(&mut self, item: Arc<Tracked<T>>) {
        // Every comparison (the user's `Ord`, which may panic) comes before
        // the first change, so a panic leaves the set as it was. (Before, a
        // panic between taking the first member out and putting it back
        // lost that member, which need not be the item removed: found in
        // review.) One map operation changes the set: each BTreeMap
        // operation compares before it changes anything. The one exception
        // is an item that is not a member (the log's invariant already
        // broken, and `missing` panics next): the first member taken out
        // to compare is put back, comparing again, and an `Ord` that
        // panics there loses it from the set.
        //
        // The user's `Drop` runs only once the set is whole again: a key
        // taken out of a map (at most one per removal) is kept in `spent`
        // and dropped after `len` is right. (Before, a `Drop` that panicked
        // while the next equal member was between the two maps lost that
        // member, and left `len` one too high on the other paths: found in
        // review, 2026-11-29.) The `Arc`s dropped on the way are the
        // removed item's, whose caller still holds one, so they drop no
        // `T`.
        let spent: Option<T>;
        if self.later.is_empty() {
            // The usual case, one search: no member shares a value, so the
            // item is a member only as the first of its value.
            let Some((value, first)) = self.firsts.remove_entry(item.get()) else {
                missing()
            };
            if !Arc::ptr_eq(&first, &item) {
                self.firsts.insert(value, first);
                missing()
            }
            spent = Some(value);
        } else {
            let Entry::Occupied(mut first) = self.firsts.entry(item.get().clone()) else {
                missing()
            };
            let later = match self.later.entry(item.get().clone()) {
                Entry::Occupied(later) => Some(later),
                Entry::Vacant(_) => None,
            };
            // No comparison from here on.
            if Arc::ptr_eq(first.get(), &item) {
                match later {
                    // The next equal becomes the first.
                    Some(mut later) => {
                        let (_, next) = later
                            .get_mut()
                            .pop_first()
                            .expect("ldu::OrderedSet: an empty list of later members");
                        self.later_index.remove(&address(&next));
                        *first.get_mut() = next;
                        spent = later.get().is_empty().then(|| later.remove_entry().0);
                    }
                    None => spent = Some(first.remove_entry().0),
                }
            } else {
                let Some(mut later) = later else { missing() };
                let addr = address(&item);
                let Some(&n) = self.later_index.get(&addr) else {
                    missing()
                };
                // A later member of another value (its value changed order)
                // is not found here: refused before any change.
                if !later.get().get(&n).is_some_and(|m| Arc::ptr_eq(m, &item)) {
                    missing()
                }
                later.get_mut().remove(&n);
                self.later_index.remove(&addr);
                spent = later.get().is_empty().then(|| later.remove_entry().0);
            }
        }
        self.len -= 1;
        drop(spent);
    }
}

/// An item's identity while it is a member: its address (the set holds
/// its `Arc`, so no other item has it).
#[inline]
fn address<T>(item: &Arc<Tracked<T>>) -> usize {
    core::ptr::from_ref::<Tracked<T>>(item).addr()
}

#[cold]
fn missing() -> ! {
    panic!(
        "ldu::OrderedSet: apply_remove of a non-member (log invariant broken, or a value changed order while a member)"
    )
}

impl<T: Ord + fmt::Debug> fmt::Debug for OrderedSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                self.firsts
                    .iter()
                    .flat_map(|(value, first)| self.with_later(value, first))
                    .map(|it| it.get()),
            )
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Ldu;

    #[test]
    fn equal_values_are_distinct_members() {
        let log: Ldu<OrderedSet<u32>> = Ldu::default();
        let (a, b, c) = (
            Arc::new(Tracked::new(5)),
            Arc::new(Tracked::new(5)),
            Arc::new(Tracked::new(7)),
        );
        for it in [&a, &b, &c] {
            log.logical_insert(it);
        }
        log.read(|s| {
            assert_eq!(s.len(), 3);
            assert!(s.contains(&a) && s.contains(&b) && s.contains(&c));
            assert_eq!(s.iter().map(|it| ***it).collect::<Vec<_>>(), [5, 5, 7]);
            assert!(Arc::ptr_eq(s.first().unwrap(), &a));
            assert!(Arc::ptr_eq(s.last().unwrap(), &c));
            assert_eq!(s.range(6..).count(), 1);
        });
        // Removing the first of two equals keeps the second.
        log.logical_remove(&a);
        log.read(|s| {
            assert!(!s.contains(&a) && s.contains(&b));
            assert!(s.contains_value(&5));
            assert_eq!(s.len(), 2);
        });
        log.logical_remove(&b);
        log.read(|s| assert!(!s.contains_value(&5) && s.len() == 1));
        // Removing a later equal keeps the first.
        log.logical_insert(&a);
        log.logical_insert(&b);
        log.synchronize();
        log.logical_remove(&b);
        log.read(|s| assert!(s.contains(&a) && !s.contains(&b) && s.len() == 2));
    }

    /// The target alone against a model (a list kept in value order, equal
    /// values in insertion order), over random inserts and removes among
    /// few values, so that most values have several members.
    #[test]
    fn matches_a_sorted_list_with_many_equal_values() {
        let items: Vec<_> = (0..24).map(|i| Arc::new(Tracked::new(i % 5))).collect();
        let mut set = OrderedSet::new();
        let mut model: Vec<Arc<Tracked<u32>>> = Vec::new();
        // The cases the second map is for: a remove of a first member with
        // equals behind it (one is promoted), a remove of a later member,
        // an insert behind an equal value.
        let (mut promoted, mut later_removed, mut behind_equal) = (0u32, 0u32, 0u32);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let item = &items[(x >> 32) as usize % items.len()];
            let value = *item.get();
            if let Some(at) = model.iter().position(|m| Arc::ptr_eq(m, item)) {
                if at > 0 && *model[at - 1].get() == value {
                    later_removed += 1;
                } else if model.get(at + 1).is_some_and(|m| *m.get() == value) {
                    promoted += 1;
                }
                model.remove(at);
                set.apply_remove(item.clone());
            } else {
                if model.iter().any(|m| *m.get() == value) {
                    behind_equal += 1;
                }
                // After the last member with a value not above the item's.
                let at = model.partition_point(|m| *m.get() <= value);
                model.insert(at, item.clone());
                set.apply_insert(item.clone());
            }
            assert_sound(&set, &model, &items);
        }
        let cases = [promoted, later_removed, behind_equal];
        assert!(cases.iter().all(|&n| n >= 100), "too few cases: {cases:?}");
    }

    /// `set` holds exactly `model` (value order, equals in insertion
    /// order), seen through every accessor.
    fn assert_sound(
        set: &OrderedSet<u32>,
        model: &[Arc<Tracked<u32>>],
        items: &[Arc<Tracked<u32>>],
    ) {
        let got: Vec<_> = set.iter().collect();
        assert!(
            got.len() == model.len() && got.iter().zip(model).all(|(g, m)| Arc::ptr_eq(g, m)),
            "order differs"
        );
        assert_eq!(set.len(), model.len());
        assert_eq!(set.first().map(Arc::as_ptr), model.first().map(Arc::as_ptr));
        assert_eq!(set.last().map(Arc::as_ptr), model.last().map(Arc::as_ptr));
        let in_range: Vec<_> = set.range(1..3).map(Arc::as_ptr).collect();
        let model_range: Vec<_> = model
            .iter()
            .filter(|m| (1..3).contains(m.get()))
            .map(Arc::as_ptr)
            .collect();
        assert_eq!(in_range, model_range);
        for it in items {
            assert_eq!(set.contains(it), model.iter().any(|m| Arc::ptr_eq(m, it)));
        }
        for v in 0..5 {
            assert_eq!(set.contains_value(&v), model.iter().any(|m| ***m == v));
        }
        // The second map holds no empty list and no value without a first.
        assert!(
            set.later
                .iter()
                .all(|(v, l)| !l.is_empty() && set.firsts.contains_key(v))
        );
        // The index names exactly the later members, with their numbers.
        assert_eq!(
            set.later_index.len(),
            set.later.values().map(BTreeMap::len).sum::<usize>()
        );
        assert!(
            set.later
                .values()
                .flatten()
                .all(|(n, m)| set.later_index.get(&address(m)) == Some(n))
        );
        let values: Vec<u32> = model.iter().map(|m| ***m).collect();
        assert_eq!(
            format!("{set:?}"),
            format!("{:?}", values).replace('[', "{").replace(']', "}")
        );
    }

    /// A target method that panics on a broken log invariant leaves the
    /// set as it was: later answers stay right.
    #[test]
    fn a_rejected_operation_leaves_the_set_sound() {
        use std::panic::{AssertUnwindSafe, catch_unwind};
        let items: Vec<_> = [5, 5, 5, 7].map(|v| Arc::new(Tracked::new(v))).to_vec();
        let mut set = OrderedSet::new();
        for it in &items {
            set.apply_insert(it.clone());
        }
        // Inserting a first member with equals, a later member, a sole
        // member; removing a non-member with an equal value present, and
        // one without.
        let strangers = [5, 9].map(|v| Arc::new(Tracked::new(v)));
        let rejected: [(bool, &Arc<Tracked<u32>>); 5] = [
            (true, &items[0]),
            (true, &items[1]),
            (true, &items[3]),
            (false, &strangers[0]),
            (false, &strangers[1]),
        ];
        for (insert, item) in rejected {
            let r = catch_unwind(AssertUnwindSafe(|| {
                if insert {
                    set.apply_insert(item.clone());
                } else {
                    set.apply_remove(item.clone());
                }
            }));
            assert!(
                r.is_err(),
                "{} of {} accepted",
                ["remove", "insert"][insert as usize],
                ***item
            );
            assert_sound(&set, &items, &items);
        }
        // And it goes on working.
        set.apply_remove(items[3].clone());
        set.apply_remove(items[1].clone());
        assert_sound(&set, &[items[0].clone(), items[2].clone()], &items);
    }

    #[test]
    #[should_panic(expected = "apply_insert of a member")]
    fn target_rejects_inserting_a_member() {
        let mut s = OrderedSet::new();
        let it = Arc::new(Tracked::new(1));
        s.apply_insert(it.clone());
        s.apply_insert(it);
    }

    #[test]
    #[should_panic(expected = "apply_remove of a non-member")]
    fn target_checks_the_log_invariant() {
        let mut s = OrderedSet::new();
        s.apply_remove(Arc::new(Tracked::new(1)));
    }

    /// A comparator that panics at any one of a removal's comparisons
    /// leaves the set as it was: both members of the shared value still
    /// there, `len` agreeing with `iter`. Before, a panic after the first
    /// member was taken out lost it (member `a` below, when removing `b`).
    #[test]
    fn a_panicking_comparator_leaves_the_set_as_it_was() {
        use std::cell::Cell;
        use std::cmp::Ordering as CmpOrdering;
        use std::panic::{AssertUnwindSafe, catch_unwind};
        thread_local! {
            /// n > 0: the n-th comparison from now panics.
            static PANIC_AT: Cell<usize> = const { Cell::new(0) };
        }
        #[derive(Clone, Debug)]
        struct Key(u32);
        impl Ord for Key {
            fn cmp(&self, other: &Self) -> CmpOrdering {
                let n = PANIC_AT.get();
                if n > 0 {
                    PANIC_AT.set(n - 1);
                    assert_ne!(n, 1, "the comparator panics");
                }
                self.0.cmp(&other.0)
            }
        }
        impl PartialOrd for Key {
            fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
                Some(self.cmp(other))
            }
        }
        impl PartialEq for Key {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other) == CmpOrdering::Equal
            }
        }
        impl Eq for Key {}

        let mut panics = 0;
        for remove_first in [false, true] {
            for at in 1..64 {
                let mut s = OrderedSet::new();
                let items: Vec<_> = [1, 5, 5, 9]
                    .into_iter()
                    .map(|v| Arc::new(Tracked::new(Key(v))))
                    .collect();
                items.iter().for_each(|it| s.apply_insert(it.clone()));
                let gone = &items[if remove_first { 1 } else { 2 }];
                PANIC_AT.set(at);
                let r = catch_unwind(AssertUnwindSafe(|| s.apply_remove(gone.clone())));
                PANIC_AT.set(0);
                let left: Vec<_> = items
                    .iter()
                    .filter(|it| r.is_err() || !Arc::ptr_eq(it, gone))
                    .collect();
                panics += usize::from(r.is_err());
                assert_eq!(s.len(), left.len(), "panic at comparison {at}");
                assert_eq!(s.iter().count(), left.len(), "panic at comparison {at}");
                for it in left {
                    assert!(s.contains(it), "panic at comparison {at}: a member is gone");
                }
            }
        }
        assert!(panics > 2, "the comparator panicked inside a removal");
    }

    /// A `Drop` of the user's values that panics inside a removal leaves
    /// the set whole, with the item removed: the other members stay, `len`
    /// counts them. (Found in review, 2026-11-29: a panic while the next
    /// equal member was between the two maps lost it, and `len` stayed
    /// one too high.)
    #[test]
    fn a_panicking_drop_inside_a_removal_leaves_the_set_whole() {
        use std::cell::Cell;
        use std::panic::{AssertUnwindSafe, catch_unwind};
        thread_local! {
            /// n > 0: the n-th drop of a `Key` from now panics.
            static PANIC_AT: Cell<usize> = const { Cell::new(0) };
        }
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
        struct Key(u32);
        impl Drop for Key {
            fn drop(&mut self) {
                let n = PANIC_AT.get();
                if n > 0 {
                    PANIC_AT.set(n - 1);
                    assert_ne!(n, 1, "the drop panics");
                }
            }
        }
        let mut panics = 0;
        // Which member goes: a distinct value (the one-search path), the
        // first of equals (promotion), the last of equals, the first of
        // equals with one equal left.
        for (values, gone) in [
            (&[1, 5, 9][..], 1),
            (&[1, 5, 5, 9][..], 1),
            (&[1, 5, 5, 9][..], 2),
            (&[1, 5, 5, 5, 9][..], 1),
        ] {
            for at in 1..8 {
                let mut s = OrderedSet::new();
                let items: Vec<_> = values
                    .iter()
                    .map(|&v| Arc::new(Tracked::new(Key(v))))
                    .collect();
                items.iter().for_each(|it| s.apply_insert(it.clone()));
                let gone = &items[gone];
                PANIC_AT.set(at);
                let r = catch_unwind(AssertUnwindSafe(|| s.apply_remove(gone.clone())));
                PANIC_AT.set(0);
                panics += usize::from(r.is_err());
                // A drop before the first change (the key cloned for a
                // search) leaves the item in; after it, the item is out.
                // Either way the set is whole.
                let kept = r.is_err() && s.contains(gone);
                let left: Vec<_> = items
                    .iter()
                    .filter(|it| kept || !Arc::ptr_eq(it, gone))
                    .collect();
                let case = format!("{values:?} without item {gone:?}, drop {at} panics");
                assert!(
                    r.is_err() || !s.contains(gone),
                    "{case}: the item is still a member"
                );
                assert_eq!(s.len(), left.len(), "{case}");
                assert_eq!(s.iter().count(), left.len(), "{case}");
                for it in &left {
                    assert!(s.contains(it), "{case}: another member is gone");
                }
                for it in left {
                    s.apply_remove(it.clone());
                }
                assert!(s.is_empty() && s.later.is_empty() && s.later_index.is_empty());
            }
        }
        assert!(panics >= 4, "a drop panicked inside a removal in each case");
    }
}
