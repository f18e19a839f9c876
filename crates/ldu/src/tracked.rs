//! The objects that take part in a log: a value plus its two log nodes.
//!
//! The paper (Fig. 2, Fig. 5) embeds in every object an insert node and a
//! remove node, each with a `mark`, and two bit sets on the object: `exist`
//! (the node is in the log, so it is enqueued at most once) and `used` (the
//! log still refers to the node, so it must not be freed). Here:
//!
//! - the two nodes are the two link words of `LduNode`'s `next` (the log is a
//!   singly linked list threaded through them) plus their bits in one state
//!   word;
//! - memory safety does not depend on `used`: an entry in the log owns a
//!   strong count of the item's `Arc`, so an owner may drop its `Arc` while
//!   an entry is pending and the item lives until the entry is applied;
//! - `used` means "linked": set by the thread that enqueued the node once its
//!   push has succeeded. A thread that marks a node another thread is still
//!   pushing waits for it (a few instructions, like an MCS unlock waiting
//!   for its successor's link), so that every operation is in the log when
//!   its call returns (read-your-writes);
//! - `taken` (no counterpart in the paper): a synchronize took the node out
//!   of the log before its enqueuer set `used`. The synchronize does not
//!   wait for the enqueuer (it holds the target's write lock, and the
//!   enqueuer may be preempted); the enqueuer, seeing `taken` when it sets
//!   `used`, clears both. Until then nobody may enqueue the node again.
//!
//! # State word (one `AtomicU32`)
//!
//! ```text
//! bit 0   MEMBER          logical membership: what a synchronize will make true
//! bit 1   MARK[insert]    the insert node's mark (paper: add_node.mark)
//! bit 2   EXIST[insert]   the insert node is claimed for, or in, the log
//! bit 3   USED[insert]    the insert node's enqueuer has linked it (and the
//!                         node is in the log, unless TAKEN is also set)
//! bit 4   TAKEN[insert]   taken out of the log before USED was set
//! bit 5   MARK[remove]    the remove node's mark (paper: del_node.mark)
//! bit 6   EXIST[remove]
//! bit 7   USED[remove]
//! bit 8   TAKEN[remove]
//! ```
//!
//! The paper's kernel never runs an insert and a remove of one object at the
//! same time, so it can keep the marks in separate words. This library takes
//! no such promise from its callers: every logical operation is one
//! compare-and-swap on this word, which orders concurrent operations on one
//! item (each takes effect at its CAS) and keeps three invariants:
//!
//! - at most one of the two marks is set;
//! - `MARK[insert]` implies `MEMBER`, `MARK[remove]` implies not `MEMBER`;
//!   with no mark set, `MEMBER` equals "the item is in the target" once every
//!   synchronize in progress has finished;
//! - per node: `MARK` implies `EXIST`; `EXIST` and `TAKEN` are never both
//!   set; `USED` implies `EXIST` or `TAKEN` (the second only between a late
//!   enqueuer's `fetch_or` and its `fetch_and`); at most one of an item's two
//!   nodes has `EXIST`.
//!
//! So an insert of a member and a remove of a non-member change nothing
//! ([`Update::Unchanged`](crate::Update::Unchanged)), absorbing is always
//! right (a remove cancels a pending insert only of an item that is not in
//! the target), and the target sees `apply_insert` only for items it does not
//! hold and `apply_remove` only for items it holds.

use core::fmt;
use core::ops::Deref;
use core::sync::atomic::AtomicUsize as PlainAtomicUsize;

use rwlock_core::sync::{AtomicU32, AtomicUsize, Ordering};

/// Which of an item's two log nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Insert = 0,
    Remove = 1,
}

impl Op {
    #[inline]
    pub(crate) fn opposite(self) -> Op {
        match self {
            Op::Insert => Op::Remove,
            Op::Remove => Op::Insert,
        }
    }

    #[inline]
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The op tagged in bit 0 of a log entry.
    #[inline]
    pub(crate) fn from_tag(tag: usize) -> Op {
        if tag & 1 == 0 { Op::Insert } else { Op::Remove }
    }
}

pub(crate) const MEMBER: u32 = 1 << 0;

/// The node's mark: its operation is pending and not cancelled.
#[inline]
pub(crate) const fn mark(op: Op) -> u32 {
    1 << (1 + 4 * op as u32)
}

/// The node is claimed for the log (set by the enqueuer's CAS) or in it.
#[inline]
pub(crate) const fn exist(op: Op) -> u32 {
    1 << (2 + 4 * op as u32)
}

/// The node is linked into the log (set after the enqueuer's push).
#[inline]
pub(crate) const fn used(op: Op) -> u32 {
    1 << (3 + 4 * op as u32)
}

/// A synchronize took the node before its enqueuer set `used`; the
/// enqueuer clears it (with `used`) right after.
#[inline]
pub(crate) const fn taken(op: Op) -> u32 {
    1 << (4 + 4 * op as u32)
}

/// The log nodes and bits every [`Tracked`] item carries (32 bytes).
///
/// Users see it only through [`Tracked::is_member`] and the `Debug` output;
/// all its fields belong to the log.
pub struct LduNode {
    /// See the module docs for the bits.
    pub(crate) state: AtomicU32,
    /// The log this item is bound to (0: none yet). A plain atomic, outside
    /// the loom model: it only detects misuse and orders nothing.
    pub(crate) log: PlainAtomicUsize,
    /// The insert node's and the remove node's links: the next (older) log
    /// entry, an `Arc<Tracked<T>>` raw pointer with the op in bit 0, or 0.
    /// Written only by the thread that owns the node's `EXIST` claim (the
    /// enqueuer, then the synchronize that took the node).
    pub(crate) next: [AtomicUsize; 2],
}

impl LduNode {
    fn new() -> Self {
        LduNode {
            state: AtomicU32::new(0),
            log: PlainAtomicUsize::new(0),
            next: [AtomicUsize::new(0), AtomicUsize::new(0)],
        }
    }
}

impl fmt::Debug for LduNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a snapshot for humans, ordered with nothing.
        let s = self.state.load(Ordering::Relaxed);
        let node = |op: Op| {
            let mut v = String::new();
            for (bit, name) in [
                (mark(op), "mark"),
                (exist(op), "exist"),
                (used(op), "used"),
                (taken(op), "taken"),
            ] {
                if s & bit != 0 {
                    if !v.is_empty() {
                        v.push('|');
                    }
                    v.push_str(name);
                }
            }
            v
        };
        f.debug_struct("LduNode")
            .field("member", &(s & MEMBER != 0))
            .field("insert", &node(Op::Insert))
            .field("remove", &node(Op::Remove))
            .finish()
    }
}

/// A value that takes part in an [`Ldu`](crate::Ldu) log: the value plus its
/// insert and remove log nodes.
///
/// Items are shared as `Arc<Tracked<T>>`: the owner keeps one, the log keeps
/// one per pending entry, the target keeps one while the item is in it. An
/// item belongs to the first log that updates it, for life; using it with
/// another log panics.
///
/// ```
/// use std::sync::Arc;
/// use ldu::{Ldu, OrderedSet, Tracked};
///
/// let log: Ldu<OrderedSet<u32>> = Ldu::default();
/// let seven = Arc::new(Tracked::new(7));
/// log.logical_insert(&seven);
/// assert!(seven.is_member());
/// assert_eq!(**seven, 7); // Deref to the value
/// assert!(log.read(|set| set.contains(&seven)));
/// ```
pub struct Tracked<T> {
    pub(crate) node: LduNode,
    value: T,
}

impl<T> Tracked<T> {
    /// Wraps `value`; the item is in no log and not a member.
    pub fn new(value: T) -> Self {
        Tracked {
            node: LduNode::new(),
            value,
        }
    }

    /// The value.
    #[inline]
    pub fn get(&self) -> &T {
        &self.value
    }

    /// Logical membership: whether the last logical insert or remove that
    /// took effect was an insert. The target agrees after the next
    /// [`synchronize`](crate::Ldu::synchronize).
    #[inline]
    pub fn is_member(&self) -> bool {
        // Acquire: pairs with the AcqRel CAS of the logical operation that
        // set or cleared the bit.
        self.node.state.load(Ordering::Acquire) & MEMBER != 0
    }

    /// The log nodes (for `Debug` and diagnostics).
    pub fn ldu_node(&self) -> &LduNode {
        &self.node
    }

    /// Unwraps the value (for an item out of its `Arc`, e.g. through
    /// `Arc::into_inner` once the log and the target have let go of it).
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for Tracked<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("value", &self.value)
            .field("node", &self.node)
            .finish()
    }
}
