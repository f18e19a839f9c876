//! What the cohort integration tests share: every variant of the crate,
//! and a wrapper that pins each harness thread and gives it a node.
#![allow(dead_code)]

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use cohort::{
    CRwNp, CRwRp, CRwRpOpt, CRwWp, Central, Cohort, DrTicket, NeutralPref, PerNode, ReaderPref,
    ReaderPrefOpt, ReaderToken, TicketLock, WriterMutex, WriterPref,
};
use lock_api::{RawRwLock, RawRwLockDowngrade};
use rwlock_core::testing::{Hooked, Hooks, LockOp};

/// The `*_on` methods every lock of the crate has.
pub trait OnNode: RawRwLock<SharedGuard = ReaderToken> + RawRwLockDowngrade + Sync {
    fn make(nodes: usize) -> Self;
    fn shared_on(&self, node: usize) -> ReaderToken;
    fn exclusive_on(&self, node: usize) -> Self::ExclusiveGuard;
}

macro_rules! on_node {
    ($($t:ident),*) => {$(
        impl<M: WriterMutex, I: cohort::ReadIndicator> OnNode for $t<M, I> {
            fn make(nodes: usize) -> Self {
                $t::with_nodes(nodes)
            }
            fn shared_on(&self, node: usize) -> ReaderToken {
                self.lock_shared_on(node)
            }
            fn exclusive_on(&self, node: usize) -> Self::ExclusiveGuard {
                self.lock_exclusive_on(node)
            }
        }
    )*};
}
on_node!(NeutralPref, ReaderPref, ReaderPrefOpt, WriterPref);

/// Calls `$body` once per variant with `$t` bound to the type and `$name`
/// to its name.
#[macro_export]
macro_rules! for_every_variant {
    (|$name:ident, $t:ident| $body:block) => {{
        macro_rules! one {
            ($n:expr, $ty:ty) => {{
                type $t = $ty;
                let $name: &str = $n;
                $body
            }};
        }
        one!("C-RW-NP", cohort::CRwNp);
        one!("C-RW-RP", cohort::CRwRp);
        one!("C-RW-RP-opt", cohort::CRwRpOpt);
        one!("C-RW-WP", cohort::CRwWp);
        one!("DR-ticket", cohort::DrTicket);
        one!("C-RW-WP/per-node", cohort::WriterPref<cohort::CPtlTkt, cohort::PerNode>);
        one!("C-RW-WP/central", cohort::WriterPref<cohort::CPtlTkt, cohort::Central>);
        one!("C-RW-RP-opt/per-node", cohort::ReaderPrefOpt<cohort::CPtlTkt, cohort::PerNode>);
        one!(
            "C-RW-WP/ticket-global",
            cohort::WriterPref<cohort::Cohort<cohort::TicketLock, cohort::TicketLock>>
        );
    }};
}

// Keep the imports used in every test binary.
pub type _Used = (
    CRwNp,
    CRwRp,
    CRwRpOpt,
    CRwWp,
    DrTicket,
    Central,
    PerNode,
    Cohort<TicketLock, TicketLock>,
);

/// Pins the calling thread to the `n`-th CPU it may use (modulo their
/// number: `rwlock_core::testing::pin_to_allowed`).
pub fn pin_to(n: usize) {
    rwlock_core::testing::pin_to_allowed(n);
    rwlock_core::topology::refresh_current_cpu();
}

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's (node, cpu) once assigned.
    static PLACE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The calling thread's number among the threads that used a wrapper:
/// assigned on first use, when the thread is also pinned to CPU `n`.
pub fn thread_number() -> usize {
    PLACE.with(|p| match p.get() {
        Some(n) => n,
        None => {
            let n = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
            pin_to(n);
            p.set(Some(n));
            n
        }
    })
}

/// Pins each thread on its first acquisition (thread `n` to CPU `n`).
pub struct PinOnFirstUse;

impl Hooks for PinOnFirstUse {
    const INIT: Self = PinOnFirstUse;
    fn before(&self, _: LockOp) {
        thread_number();
    }
}

/// Pins each thread that uses it (thread `n` to CPU `n`), then locks
/// through the real topology: `current_node()` decides the node.
pub type Pinned<L> = Hooked<L, PinOnFirstUse>;

/// Pins each thread that uses it (thread `n` to CPU `n`) and sends it to
/// node `n % nodes` through the `*_on` methods: more active nodes than
/// the machine has CPUs.
pub struct Spread<L> {
    pub lock: L,
    pub nodes: usize,
}

// SAFETY: forwards to the inner lock; the blocking paths choose the node.
unsafe impl<L: OnNode> RawRwLock for Spread<L> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Spread {
        lock: L::INIT,
        nodes: 1,
    };
    type SharedGuard = L::SharedGuard;
    type ExclusiveGuard = L::ExclusiveGuard;
    fn lock_shared(&self) -> Self::SharedGuard {
        let n = thread_number();
        self.lock.shared_on(n % self.nodes)
    }
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        thread_number();
        self.lock.try_lock_shared()
    }
    unsafe fn unlock_shared(&self, g: Self::SharedGuard) {
        // SAFETY: forwarded.
        unsafe { self.lock.unlock_shared(g) }
    }
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        let n = thread_number();
        self.lock.exclusive_on(n % self.nodes)
    }
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        thread_number();
        self.lock.try_lock_exclusive()
    }
    unsafe fn unlock_exclusive(&self, g: Self::ExclusiveGuard) {
        // SAFETY: forwarded.
        unsafe { self.lock.unlock_exclusive(g) }
    }
    fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }
    fn is_locked_exclusive(&self) -> bool {
        self.lock.is_locked_exclusive()
    }
}

// SAFETY: forwards to the inner lock.
unsafe impl<L: OnNode> RawRwLockDowngrade for Spread<L> {
    unsafe fn downgrade(&self, g: Self::ExclusiveGuard) -> Self::SharedGuard {
        // SAFETY: forwarded.
        unsafe { self.lock.downgrade(g) }
    }
}

/// Every variant's stress test with pinned threads (thread `n` on CPU
/// `n`): 2 and 8 threads, then 4 that downgrade, on the global topology,
/// which has `nodes` nodes. Prints each variant's time.
pub fn every_variant_pinned(nodes: usize) {
    use rwlock_core::testing::{self, StressConfig};
    for_every_variant!(|name, L| {
        let lock = Pinned::new(<L>::new(), PinOnFirstUse);
        let start = std::time::Instant::now();
        for threads in [2, 8] {
            testing::stress(&lock, &StressConfig::new(threads));
        }
        testing::stress_downgrade(&lock, &StressConfig::new(4));
        assert!(lock.inner.reader_slots() <= nodes);
        eprintln!(
            "{name}: {nodes} nodes, 2+8+4 pinned threads in {:.2?}",
            start.elapsed()
        );
    });
}

/// The cohort mutex (C-PTL-TKT) with 8 pinned threads of 20,000
/// acquisitions each, on the global topology of `nodes` nodes: a lost
/// update of the counter means two owners at once.
pub fn cohort_mutex_pinned(nodes: usize) {
    use lock_api::RawMutex;
    use std::sync::atomic::AtomicU64;
    let m = Cohort::<cohort::PartitionedTicket, TicketLock>::new();
    let count = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                thread_number();
                for _ in 0..20_000 {
                    let g = m.lock();
                    // Relaxed load/store pair: a lost update means two owners.
                    let v = count.load(Ordering::Relaxed);
                    count.store(v + 1, Ordering::Relaxed);
                    // SAFETY: our own acquisition.
                    unsafe { RawMutex::unlock(&m, g) };
                }
            });
        }
    });
    assert_eq!(count.into_inner(), 8 * 20_000);
    assert_eq!(m.node_count(), nodes);
}
