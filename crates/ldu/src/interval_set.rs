//! An interval set keyed by ranges: the paper's use case (Section 4, Fig. 5),
//! a reverse map from a file's pages to the mappings (VMAs) that cover them.

use core::fmt;
use core::ops::Range;
use std::collections::BTreeMap;

use rwlock_core::sync::Arc;

use crate::{Target, Tracked};

/// A value that covers a half-open range of `u64` keys (pages, offsets,
/// addresses). It is a logic error for the range to change while the item
/// is a member of an [`IntervalSet`]: queries may then miss or wrongly
/// report that item, and its removal panics if its start changed. The
/// other members are not affected (the set keeps each member's length as
/// it was inserted).
pub trait Ranged {
    /// The keys covered, `start..end`; empty when `start >= end`.
    fn range(&self) -> Range<u64>;
}

impl Ranged for Range<u64> {
    fn range(&self) -> Range<u64> {
        self.clone()
    }
}

/// Items indexed by the ranges they cover, answering "which members
/// overlap these keys?" (Linux answers it with an augmented interval tree).
///
/// Members are kept in a `BTreeMap` by `(start, identity)`, and the lengths
/// of the members in a second map, so the longest member `L` is known. An
/// overlap query for `a..b` visits the members starting in
/// `a - L .. b`: `O(log n + m)` for `m` such members, which stays close to
/// the answer when members have similar lengths (mappings of one file), and
/// degrades towards a scan when one member is far longer than the others.
/// Empty ranges can be members but overlap nothing.
///
/// ```
/// use std::ops::Range;
/// use std::sync::Arc;
/// use ldu::{IntervalSet, Ldu, Tracked};
///
/// let rmap: Ldu<IntervalSet<Range<u64>>> = Ldu::default();
/// let (lo, hi) = (Arc::new(Tracked::new(0..10)), Arc::new(Tracked::new(8..20)));
/// rmap.logical_insert(&lo);
/// rmap.logical_insert(&hi);
/// rmap.read(|set| {
///     assert_eq!(set.stabbing(9).count(), 2);
///     assert_eq!(set.overlapping(10..12).map(|it| it.start).collect::<Vec<_>>(), [8]);
/// });
/// ```
pub struct IntervalSet<T> {
    /// Members, with their length when inserted (a range whose end
    /// changed meanwhile must still take its own length out of `lengths`,
    /// not another member's: found in review).
    by_start: BTreeMap<(u64, usize), Member<T>>,
    /// Member length -> how many members have it.
    lengths: BTreeMap<u64, usize>,
}

/// A member and its length when inserted.
type Member<T> = (Arc<Tracked<T>>, u64);

impl<T: Ranged> Default for IntervalSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The map key of an item: its start and its identity.
fn key<T: Ranged>(item: &Arc<Tracked<T>>) -> ((u64, usize), u64) {
    let r = item.get().range();
    (
        (r.start, Arc::as_ptr(item) as usize),
        r.end.saturating_sub(r.start),
    )
}

impl<T: Ranged> IntervalSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        IntervalSet {
            by_start: BTreeMap::new(),
            lengths: BTreeMap::new(),
        }
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// Whether this very item is a member.
    pub fn contains(&self, item: &Arc<Tracked<T>>) -> bool {
        self.by_start.contains_key(&key(item).0)
    }

    /// The members in order of their range's start.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        self.by_start.values().map(|(item, _)| item)
    }

    /// The members whose range shares at least one key with `keys`, in order
    /// of their start.
    pub fn overlapping(&self, keys: Range<u64>) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        let longest = self.lengths.last_key_value().map_or(0, |(len, _)| *len);
        let (lo, hi) = if keys.start < keys.end {
            (keys.start.saturating_sub(longest), keys.end)
        } else {
            (0, 0) // an empty query overlaps nothing
        };
        self.by_start
            .range((lo, 0)..(hi, 0))
            .map(|(_, (item, _))| item)
            .filter(move |item| {
                let r = item.get().range();
                r.start < r.end && r.start < keys.end && keys.start < r.end
            })
    }

    /// The members whose range contains `key` (a reverse-map lookup: which
    /// mappings cover this page).
    pub fn stabbing(&self, key: u64) -> impl Iterator<Item = &Arc<Tracked<T>>> + '_ {
        // `key..key + 1`; the last key (u64::MAX) cannot be covered by a
        // half-open range, so it gets the empty query.
        let end = key.checked_add(1).unwrap_or(key);
        self.overlapping(key..end)
    }
}

impl<T: Ranged> Target for IntervalSet<T> {
    type Item = T;

    fn apply_insert(&mut self, item: Arc<Tracked<T>>) {
        let (k, len) = key(&item);
        let previous = self.by_start.insert(k, (item, len));
        assert!(
            previous.is_none(),
            "ldu::IntervalSet: apply_insert of a member (log invariant broken)"
        );
        *self.lengths.entry(len).or_insert(0) += 1;
    }

    fn apply_remove(&mut self, item: Arc<Tracked<T>>) {
        let (k, _) = key(&item);
        let Some((_, len)) = self.by_start.remove(&k) else {
            panic!(
                "ldu::IntervalSet: apply_remove of a non-member (log invariant broken, or the item's range changed while a member)"
            );
        };
        match self.lengths.get_mut(&len) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                self.lengths.remove(&len);
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for IntervalSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.by_start.values().map(|(it, _)| it.get()))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    type Item = Arc<Tracked<Range<u64>>>;

    fn set(ranges: &[Range<u64>]) -> (IntervalSet<Range<u64>>, Vec<Item>) {
        let mut s = IntervalSet::new();
        let items: Vec<_> = ranges
            .iter()
            .map(|r| Arc::new(Tracked::new(r.clone())))
            .collect();
        items.iter().for_each(|it| s.apply_insert(it.clone()));
        (s, items)
    }

    fn starts<'a>(it: impl Iterator<Item = &'a Item>) -> Vec<u64> {
        it.map(|i| i.start).collect()
    }

    #[test]
    fn overlap_queries_match_a_scan() {
        let ranges: Vec<Range<u64>> = (0..200u64)
            .map(|i| {
                let start = (i * 7919) % 500;
                start..start + 1 + (i * 31) % 40
            })
            .chain([100..100, 0..1000]) // an empty one and a long one
            .collect();
        let (mut s, items) = set(&ranges);
        for round in 0..2 {
            for a in (0..1100).step_by(13) {
                for len in [0, 1, 5, 60] {
                    let q = a..a + len;
                    let mut want: Vec<u64> = ranges
                        .iter()
                        .zip(&items)
                        .filter(|(r, it)| {
                            s.contains(it)
                                && q.start < q.end
                                && r.start < r.end
                                && r.start < q.end
                                && q.start < r.end
                        })
                        .map(|(r, _)| r.start)
                        .collect();
                    want.sort();
                    assert_eq!(
                        starts(s.overlapping(q.clone())),
                        want,
                        "query {q:?} round {round}"
                    );
                }
                assert_eq!(s.stabbing(a).count(), s.overlapping(a..a + 1).count());
            }
            // Remove the long one: queries shrink back to their neighbourhood.
            if round == 0 {
                s.apply_remove(items.last().unwrap().clone());
            }
        }
        assert_eq!(s.len(), 201);
        assert_eq!(s.stabbing(u64::MAX).count(), 0);
    }

    #[test]
    fn equal_ranges_are_distinct_members() {
        let (mut s, items) = set(&[3..9, 3..9]);
        assert_eq!(s.stabbing(4).count(), 2);
        s.apply_remove(items[0].clone());
        assert!(!s.contains(&items[0]) && s.contains(&items[1]));
        assert_eq!(starts(s.iter()), [3]);
        assert_eq!(format!("{s:?}"), "[3..9]");
    }

    #[test]
    #[should_panic(expected = "apply_insert of a member")]
    fn target_checks_the_log_invariant() {
        let (mut s, items) = set(&[1..2, 5..6]);
        s.apply_insert(items[0].clone());
    }

    /// A member whose end changed (a logic error) is removed with the
    /// length it was inserted with: the other members stay found. Before,
    /// the removal took the other member's length out, and `stabbing(140)`
    /// missed it.
    #[test]
    fn a_changed_end_does_not_hide_another_member() {
        use std::sync::atomic::{AtomicU64, Ordering};
        struct Span(u64, AtomicU64);
        impl Ranged for Span {
            fn range(&self) -> Range<u64> {
                self.0..self.1.load(Ordering::Relaxed)
            }
        }
        let mut s = IntervalSet::new();
        let a = Arc::new(Tracked::new(Span(0, AtomicU64::new(5))));
        let b = Arc::new(Tracked::new(Span(50, AtomicU64::new(150))));
        s.apply_insert(a.clone());
        s.apply_insert(b.clone());
        assert_eq!(s.stabbing(140).count(), 1);
        a.1.store(100, Ordering::Relaxed);
        s.apply_remove(a);
        assert_eq!(s.len(), 1);
        assert_eq!(s.stabbing(140).count(), 1);
    }
}
