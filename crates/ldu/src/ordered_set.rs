//! An ordered set of items, the simplest [`Target`].

use core::fmt;
use core::ops::RangeBounds;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use rwlock_core::sync::Arc;

use crate::{Target, Tracked};

/// The members with one value: usually one.
struct Members<T> {
    first: Arc<Tracked<T>>,
    rest: Vec<Arc<Tracked<T>>>,
}

impl<T> Members<T> {
    fn iter(&self) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        core::iter::once(&self.first).chain(self.rest.iter())
    }

    fn contains(&self, item: &Arc<Tracked<T>>) -> bool {
        self.iter().any(|m| Arc::ptr_eq(m, item))
    }
}

/// Items ordered by value (a `BTreeMap` underneath, keyed by a clone of
/// each member's value so that searches compare values in place instead of
/// following a pointer per comparison).
///
/// Membership is by item identity: two distinct items with equal values can
/// both be members (they are kept side by side, in insertion order), and
/// [`contains`](Self::contains) asks about one item. As with `BTreeSet`, an
/// item's value must not change order while it is a member.
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
    map: BTreeMap<T, Members<T>>,
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
            map: BTreeMap::new(),
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
        self.map.get(item.get()).is_some_and(|m| m.contains(item))
    }

    /// Whether some member has a value equal to `value`.
    pub fn contains_value(&self, value: &T) -> bool {
        self.map.contains_key(value)
    }

    /// The members in value order (equal values in insertion order).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        self.map.values().flat_map(Members::iter)
    }

    /// The members whose values lie in `range`, in order.
    pub fn range<Q>(&self, range: Q) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_
    where
        Q: RangeBounds<T>,
    {
        self.map.range(range).flat_map(|(_, m)| m.iter())
    }

    /// The member with the smallest value.
    pub fn first(&self) -> Option<&Arc<Tracked<T>>> {
        self.map.first_key_value().map(|(_, m)| &m.first)
    }

    /// The member with the largest value (the last inserted of equals).
    pub fn last(&self) -> Option<&Arc<Tracked<T>>> {
        self.map
            .last_key_value()
            .map(|(_, m)| m.rest.last().unwrap_or(&m.first))
    }
}

impl<T: Ord + Clone> Target for OrderedSet<T> {
    type Item = T;

    fn apply_insert(&mut self, item: Arc<Tracked<T>>) {
        match self.map.entry(item.get().clone()) {
            Entry::Vacant(slot) => {
                slot.insert(Members {
                    first: item,
                    rest: Vec::new(),
                });
            }
            Entry::Occupied(mut equal) => {
                assert!(
                    !equal.get().contains(&item),
                    "ldu::OrderedSet: apply_insert of a member (log invariant broken)"
                );
                equal.get_mut().rest.push(item);
            }
        }
        self.len += 1;
    }

    fn apply_remove(&mut self, item: Arc<Tracked<T>>) {
        // One search in the usual case (the only member with its value).
        let Some((key, mut members)) = self.map.remove_entry(item.get()) else {
            missing()
        };
        if Arc::ptr_eq(&members.first, &item) {
            if !members.rest.is_empty() {
                members.first = members.rest.remove(0);
                self.map.insert(key, members);
            }
        } else {
            let Some(i) = members.rest.iter().position(|r| Arc::ptr_eq(r, &item)) else {
                self.map.insert(key, members);
                missing()
            };
            members.rest.remove(i);
            self.map.insert(key, members);
        }
        self.len -= 1;
    }
}

#[cold]
fn missing() -> ! {
    panic!(
        "ldu::OrderedSet: apply_remove of a non-member (log invariant broken, or a value changed order while a member)"
    )
}

impl<T: fmt::Debug> fmt::Debug for OrderedSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.map.values().flat_map(Members::iter).map(|it| it.get()))
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

    #[test]
    #[should_panic(expected = "apply_remove of a non-member")]
    fn target_checks_the_log_invariant() {
        let mut s = OrderedSet::new();
        s.apply_remove(Arc::new(Tracked::new(1)));
    }
}
