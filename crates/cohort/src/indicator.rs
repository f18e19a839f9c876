//! Read indicators (PPoPP'13 Section 3.6): how a reader-writer lock's
//! readers make themselves visible to writers.
//!
//! A read indicator offers *arrive*, *depart* and *is-empty*; writers only
//! read it. Three implementations, all behind [`ReadIndicator`]:
//!
//! | indicator | reader arrive / depart | writer's check | footprint |
//! | --- | --- | --- | --- |
//! | [`Central`] | one shared counter: `+1` / `-1` | one load | 128 B inline |
//! | [`PerNode`] | its node's counter: `+1` / `-1` | one load per node | 128 B per node (heap) |
//! | [`IngressEgress`] (default) | its node's `ingress += 1` / `egress += 1` | two loads per node, egress first | 128 B per node (heap) |
//!
//! The per-node counters sit one node per 128-byte sector (two cache lines:
//! the adjacent-line prefetcher's pair), so readers of different nodes never
//! share a line. [`IngressEgress`] additionally splits arrivals from
//! departures inside a node ("we divide contention arising from rapid
//! intra-node arrival and departure of readers"); the pair shares its node's
//! sector, as in the paper.
//!
//! # Departing where one arrived
//!
//! `arrive` returns the slot it incremented; the lock keeps it in the read
//! guard and `depart` decrements (or, for ingress/egress, balances) that same
//! slot, even if the thread migrated to another node in between. A departure
//! on another node's counters would leave one node negative and another
//! positive forever (or, for ingress/egress, break `egress <= ingress`).
//!
//! # Why egress before ingress
//!
//! Both counters of a node only grow and `egress <= ingress` always. A
//! writer that reads `egress = e` and then `ingress = i` with `i == e` knows
//! that at the moment it read `ingress`, `egress >= e = i = ingress`: the node
//! had no reader then. Reading in the other order can be fooled: read
//! `ingress = 5` (one reader inside), the reader departs and another arrives
//! (`egress = 5`, `ingress = 6`), read `egress = 5`: "empty", with a reader
//! inside.
//!
//! # Orderings
//!
//! `arrive` is a SeqCst read-modify-write and the writer's check SeqCst
//! loads: the reader's and the writer's halves of the Dekker pairs in the
//! locks ("publish, then look at the other side"). `depart` is a SeqCst
//! read-modify-write too: its Release half orders the read critical section
//! before the writer that sees the departure, and the locks' parking
//! protocol (`Waiters::wake_all`) needs the state change to be a SeqCst RMW.

use core::fmt;

use rwlock_core::CachePadded;
use rwlock_core::sync::{AtomicUsize, Ordering};

use crate::nodes::{self, NodeArray};

/// Readers' visibility to writers: see the [module docs](self).
///
/// # Safety
///
/// `is_empty` may return true only if every `arrive` that precedes it in
/// the SeqCst order was balanced by its `depart`; `arrive` must be a SeqCst
/// read-modify-write, `depart` a SeqCst read-modify-write, `is_empty` made
/// of SeqCst loads.
pub unsafe trait ReadIndicator: Send + Sync {
    /// An indicator with one slot per node of the global topology (where it
    /// has per-node slots), allocated on first use. Unusable inside a loom
    /// model (use [`with_nodes`](Self::with_nodes)).
    const INIT: Self;

    /// An indicator with `nodes` slots (0: one per node of the global
    /// topology); indicators without per-node slots ignore it.
    fn with_nodes(nodes: usize) -> Self;

    /// Announces a reader on `node` (reduced modulo the slot count); returns
    /// the slot to pass to [`depart`](Self::depart).
    fn arrive(&self, node: usize) -> usize;

    /// Withdraws a reader from `slot`.
    ///
    /// # Safety
    ///
    /// `slot` must come from an `arrive` on this indicator not yet departed.
    unsafe fn depart(&self, slot: usize);

    /// Whether no reader is announced: a pure read.
    fn is_empty(&self) -> bool;

    /// The number of slots.
    fn slots(&self) -> usize;

    /// Heap bytes taken once allocated.
    fn heap_bytes(&self) -> usize;
}

/// One counter for all readers (the paper's "C-RW-WP-1RC"): the baseline
/// that does not scale.
pub struct Central {
    count: CachePadded<AtomicUsize>,
}

impl Central {
    rwlock_core::loom_const_fn! {
        /// No reader.
        pub fn new() -> Self {
            Central { count: CachePadded::new(AtomicUsize::new(0)) }
        }
    }
}

// SAFETY: SeqCst RMWs on one counter that returns to 0 exactly when every
// arrival departed; `is_empty` is one SeqCst load.
unsafe impl ReadIndicator for Central {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Central::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use with_nodes()");

    fn with_nodes(_nodes: usize) -> Self {
        Central::new()
    }

    #[inline]
    fn arrive(&self, _node: usize) -> usize {
        // SeqCst: the reader's half of the Dekker pair (module docs).
        self.count.fetch_add(1, Ordering::SeqCst);
        0
    }

    #[inline]
    unsafe fn depart(&self, _slot: usize) {
        // SeqCst: Release for the critical section, RMW for the parking
        // protocol (module docs).
        let before = self.count.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0, "Central::depart without arrive");
    }

    #[inline]
    fn is_empty(&self) -> bool {
        // SeqCst: the writer's half of the Dekker pair.
        self.count.load(Ordering::SeqCst) == 0
    }

    fn slots(&self) -> usize {
        1
    }

    fn heap_bytes(&self) -> usize {
        0
    }
}

/// One counter per node (the paper's "C-RW-WP-4RC"): readers of different
/// nodes never share a line; readers of one node share one counter.
pub struct PerNode {
    counts: NodeArray<CachePadded<AtomicUsize>>,
}

impl PerNode {
    rwlock_core::loom_const_fn! {
        /// `nodes` counters (0: one per node of the global topology),
        /// allocated on first use.
        ///
        /// # Panics
        ///
        /// If `nodes` is above `rwlock_core::topology::MAX_NODES` (65536).
        pub fn new(nodes: usize) -> Self {
            PerNode { counts: NodeArray::new(nodes) }
        }
    }
}

fn zero() -> CachePadded<AtomicUsize> {
    CachePadded::new(AtomicUsize::new(0))
}

// SAFETY: a reader increments and decrements the same counter (its slot
// travels in the guard), so all counters are 0 exactly when every arrival
// departed; `is_empty` reads each with SeqCst (after the SeqCst load of the
// array pointer, see `NodeArray::allocated`).
unsafe impl ReadIndicator for PerNode {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = PerNode::new(0);
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use with_nodes()");

    fn with_nodes(nodes: usize) -> Self {
        PerNode::new(nodes)
    }

    #[inline]
    fn arrive(&self, node: usize) -> usize {
        let counts = self.counts.get(zero);
        let slot = nodes::reduce(node, counts.len());
        // SeqCst: the reader's half of the Dekker pair (module docs).
        counts[slot].fetch_add(1, Ordering::SeqCst);
        slot
    }

    #[inline]
    unsafe fn depart(&self, slot: usize) {
        let counts = self
            .counts
            .allocated()
            .expect("PerNode::depart without arrive");
        // SeqCst: Release for the critical section, RMW for parking.
        let before = counts[slot].fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0, "PerNode::depart without arrive");
    }

    #[inline]
    fn is_empty(&self) -> bool {
        match self.counts.allocated() {
            // SeqCst: the writer's half of the Dekker pair.
            Some(counts) => counts.iter().all(|c| c.load(Ordering::SeqCst) == 0),
            // No reader ever arrived (arrival allocates first).
            None => true,
        }
    }

    fn slots(&self) -> usize {
        self.counts.len()
    }

    fn heap_bytes(&self) -> usize {
        self.counts.heap_bytes()
    }
}

/// A node's arrival and departure counts, on one 128-byte sector.
#[derive(Debug)]
struct Pair {
    ingress: AtomicUsize,
    egress: AtomicUsize,
}

fn pair() -> CachePadded<Pair> {
    CachePadded::new(Pair {
        ingress: AtomicUsize::new(0),
        egress: AtomicUsize::new(0),
    })
}

/// Per-node ingress and egress counters (the paper's default): a node is
/// empty when its two counters are equal.
pub struct IngressEgress {
    pairs: NodeArray<CachePadded<Pair>>,
}

impl IngressEgress {
    rwlock_core::loom_const_fn! {
        /// `nodes` counter pairs (0: one per node of the global topology),
        /// allocated on first use.
        ///
        /// # Panics
        ///
        /// If `nodes` is above `rwlock_core::topology::MAX_NODES` (65536).
        pub fn new(nodes: usize) -> Self {
            IngressEgress { pairs: NodeArray::new(nodes) }
        }
    }
}

// SAFETY: a reader increments `ingress` and later `egress` of the same slot
// (it travels in the guard); both only grow, `egress <= ingress`, and the
// writer reads egress first (module docs), so equality means "no reader at
// the moment ingress was read"; all SeqCst.
unsafe impl ReadIndicator for IngressEgress {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = IngressEgress::new(0);
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use with_nodes()");

    fn with_nodes(nodes: usize) -> Self {
        IngressEgress::new(nodes)
    }

    #[inline]
    fn arrive(&self, node: usize) -> usize {
        let pairs = self.pairs.get(pair);
        let slot = nodes::reduce(node, pairs.len());
        // SeqCst: the reader's half of the Dekker pair (module docs).
        pairs[slot].ingress.fetch_add(1, Ordering::SeqCst);
        slot
    }

    #[inline]
    unsafe fn depart(&self, slot: usize) {
        let pairs = self
            .pairs
            .allocated()
            .expect("IngressEgress::depart without arrive");
        // SeqCst: Release for the critical section, RMW for parking.
        pairs[slot].egress.fetch_add(1, Ordering::SeqCst);
    }

    #[inline]
    fn is_empty(&self) -> bool {
        match self.pairs.allocated() {
            Some(pairs) => pairs.iter().all(|p| {
                // Egress first, then ingress (module docs). SeqCst: the
                // writer's half of the Dekker pair.
                let egress = p.egress.load(Ordering::SeqCst);
                let ingress = p.ingress.load(Ordering::SeqCst);
                ingress == egress
            }),
            // No reader ever arrived (arrival allocates first).
            None => true,
        }
    }

    fn slots(&self) -> usize {
        self.pairs.len()
    }

    fn heap_bytes(&self) -> usize {
        self.pairs.heap_bytes()
    }
}

impl fmt::Debug for Central {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Central")
            .field("empty", &self.is_empty())
            .finish()
    }
}

impl fmt::Debug for PerNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerNode")
            .field("counts", &self.counts)
            .field("empty", &self.is_empty())
            .finish()
    }
}

impl fmt::Debug for IngressEgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IngressEgress")
            .field("pairs", &self.pairs)
            .field("empty", &self.is_empty())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn exercise<I: ReadIndicator>(ind: &I) {
        assert!(ind.is_empty());
        let a = ind.arrive(0);
        let b = ind.arrive(1);
        let c = ind.arrive(7);
        assert!(!ind.is_empty());
        // Out of order, and from slots that may differ from our node now.
        // SAFETY: departing our own arrivals.
        unsafe {
            ind.depart(b);
            assert!(!ind.is_empty());
            ind.depart(a);
            ind.depart(c);
        }
        assert!(ind.is_empty());
    }

    #[test]
    #[should_panic(expected = "MAX_NODES")]
    fn a_node_count_above_max_nodes_is_refused() {
        let _ = IngressEgress::new(usize::MAX);
    }

    #[test]
    fn every_indicator_balances_arrivals_and_departures() {
        exercise(&Central::new());
        exercise(&PerNode::new(3));
        exercise(&IngressEgress::new(3));
        exercise(&PerNode::new(0));
        exercise(&IngressEgress::new(0));
    }

    #[test]
    fn a_reader_departs_from_the_slot_it_arrived_at() {
        let ind = IngressEgress::new(4);
        let slot = ind.arrive(6);
        assert_eq!(slot, 2, "node 6 of 4 slots reduces to slot 2");
        // The thread "migrated" to node 1 meanwhile: departing by the
        // token keeps node 1's pair balanced.
        let other = ind.arrive(1);
        // SAFETY: our own arrivals.
        unsafe {
            ind.depart(slot);
            assert!(!ind.is_empty(), "node 1's reader is still inside");
            ind.depart(other);
        }
        assert!(ind.is_empty());
    }

    #[test]
    fn per_node_slots_live_on_their_own_sector() {
        assert_eq!(core::mem::size_of::<CachePadded<Pair>>() % 128, 0);
        let ind = IngressEgress::new(4);
        ind.arrive(0);
        let pairs = ind.pairs.allocated().unwrap();
        let a = &*pairs[0] as *const Pair as usize;
        let b = &*pairs[1] as *const Pair as usize;
        assert!(b - a >= 128 && a.is_multiple_of(128));
        assert_eq!(
            ind.heap_bytes(),
            4 * core::mem::size_of::<CachePadded<Pair>>()
        );
        assert!(PerNode::new(0).slots() >= 1);
    }
}
