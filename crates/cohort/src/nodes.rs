//! Per-node storage, allocated on first use, and the choice of a node.
//!
//! A cohort lock keeps one entry per NUMA node (a local lock, a reader
//! counter). The node count is only known at run time
//! ([`Topology::global`]), yet every lock must offer a `const INIT` for
//! statics; so the array is allocated by the first operation that needs it
//! (a CAS publishes it; a racing loser frees its copy) and freed on drop,
//! exactly like `rwlock_core::BrLock`'s sub-locks.

use core::ptr;

use rwlock_core::sync::{AtomicPtr, AtomicUsize, Ordering};
use rwlock_core::topology::{MAX_NODES, Topology};

/// `len` entries of `T`, allocated on first use.
pub(crate) struct NodeArray<T> {
    ptr: AtomicPtr<T>,
    /// Entry count: fixed at construction, or 0 for "the topology's node
    /// count", resolved and stored here before the array is published.
    len: AtomicUsize,
}

// SAFETY: the array is owned by the `NodeArray` and only shared through `&self`.
unsafe impl<T: Send + Sync> Send for NodeArray<T> {}
// SAFETY: as above; `T: Sync` because `&self` hands out `&T` to any thread.
unsafe impl<T: Send + Sync> Sync for NodeArray<T> {}

impl<T> NodeArray<T> {
    rwlock_core::loom_const_fn! {
        /// `nodes` entries, or one per node of the global topology if `nodes`
        /// is 0; nothing is allocated yet.
        ///
        /// # Panics
        ///
        /// If `nodes` is above [`MAX_NODES`] (at compile time in a `const`):
        /// the allocation at first use would fail far from the bad count.
        pub(crate) fn new(nodes: usize) -> Self {
            assert!(
                nodes <= MAX_NODES,
                "cohort: a per-node count above rwlock_core::topology::MAX_NODES (65536)"
            );
            NodeArray {
                ptr: AtomicPtr::new(ptr::null_mut()),
                len: AtomicUsize::new(nodes),
            }
        }
    }

    /// The entries, allocating them with `make` on first use.
    #[inline]
    pub(crate) fn get(&self, make: impl FnMut() -> T) -> &[T] {
        match self.allocated() {
            Some(entries) => entries,
            None => self.init(make),
        }
    }

    /// The entries if they were allocated: a pure read.
    #[inline]
    pub(crate) fn allocated(&self) -> Option<&[T]> {
        // SeqCst (a plain load on x86): pairs with the SeqCst CAS in `init`
        // that published the array (and, before it, `len`). SeqCst rather
        // than Acquire so that a writer's reader scan, which comes after its
        // own SeqCst read-modify-write, cannot miss an array a reader
        // published before its SeqCst arrival (both are in the single SeqCst
        // order).
        let p = self.ptr.load(Ordering::SeqCst);
        if p.is_null() {
            return None;
        }
        // Relaxed: stored before the Release publication we acquired.
        let len = self.len.load(Ordering::Relaxed);
        // `init` published `p` as a leaked boxed slice of `len` initialised
        // entries; only `drop` (`&mut self`) frees it.
        // SAFETY: `p` points to `len` entries that outlive `&self`.
        Some(unsafe { core::slice::from_raw_parts(p, len) })
    }

    /// The entry count: the fixed count, or the topology's node count,
    /// fixed by the first caller that resolves it (a compare-and-swap from
    /// 0), so that every initialiser and reader agrees. (They could see
    /// different topologies: a call from inside the topology's first
    /// detection on its thread, an allocator's, sees a one-node stand-in;
    /// see `Topology::global`.)
    pub(crate) fn len(&self) -> usize {
        // Relaxed (all): the value is published with the array by `init`'s
        // Release CAS; before that only initialisers read it, and they agree
        // through this CAS.
        match self.len.load(Ordering::Relaxed) {
            0 => {
                let want = Topology::global().node_count().max(1);
                match self
                    .len
                    .compare_exchange(0, want, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => want,
                    Err(resolved) => resolved,
                }
            }
            n => n,
        }
    }

    #[cold]
    #[inline(never)]
    fn init(&self, make: impl FnMut() -> T) -> &[T] {
        let len = self.len();
        let fresh: Box<[T]> = core::iter::repeat_with(make).take(len).collect();
        let fresh = Box::into_raw(fresh) as *mut T;
        // SeqCst: publishes the initialised entries and `len` (Release), and
        // takes part in the single SeqCst order (see `allocated`). Acquire on
        // failure: the winner's entries must be visible to us.
        match self
            .ptr
            .compare_exchange(ptr::null_mut(), fresh, Ordering::SeqCst, Ordering::Acquire)
        {
            // SAFETY: we just published `fresh` with `len` entries.
            Ok(_) => unsafe { core::slice::from_raw_parts(fresh, len) },
            Err(winner) => {
                // SAFETY: `fresh` was never shared; rebuild the box to free it.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(fresh, len)) });
                // SAFETY: the winner's array, published with `len` entries.
                unsafe { core::slice::from_raw_parts(winner, len) }
            }
        }
    }

    /// Heap bytes this array takes once allocated.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.len() * core::mem::size_of::<T>()
    }
}

impl<T> Drop for NodeArray<T> {
    fn drop(&mut self) {
        // Relaxed: `&mut self` means no other thread can touch the array.
        let p = self.ptr.load(Ordering::Relaxed);
        if !p.is_null() {
            let len = self.len.load(Ordering::Relaxed);
            // `&mut self`: nobody else can reach the array any more.
            // SAFETY: `p` is the boxed slice of `len` entries `init` leaked.
            drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(p, len)) });
        }
    }
}

impl<T> core::fmt::Debug for NodeArray<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NodeArray")
            .field("len", &self.len())
            .field("allocated", &self.allocated().is_some())
            .finish()
    }
}

/// `node` reduced below `len` (avoiding the division on the common path).
#[inline]
pub(crate) fn reduce(node: usize, len: usize) -> usize {
    if node < len { node } else { node % len }
}

/// The node the calling thread runs on. Inside a loom model every thread
/// runs on one OS thread, so the real node would make the model
/// nondeterministic: every model thread "runs on node 0" and the models
/// choose nodes explicitly with the `*_on` methods.
#[cfg(not(loom))]
#[inline]
pub(crate) fn current() -> usize {
    rwlock_core::topology::current_node()
}

#[cfg(loom)]
#[inline]
pub(crate) fn current() -> usize {
    0
}
