//! What every lock family of the workspace shares, and the first two families.
//!
//! - [`sync`]: the loom-switchable facade every lock takes its atomics from.
//! - [`topology`]: NUMA nodes, CPU-to-node map, the current CPU and node.
//! - [`wait`]: spin, then yield, then park: no lock here spins without bound.
//! - [`thread_id`]: a cheap identity unique among live threads (for hashing).
//! - [`CachePadded`]: crossbeam-utils' padding (128 bytes on x86-64, the
//!   adjacent-line prefetcher's pair).
//! - Locks, each implementing [`lock_api::RawRwLock`]:
//!   [`PfTicket`] (Brandenburg-Anderson PF-T), [`PfQueue`] (PF-Q, the "BA" of
//!   the BRAVO paper), [`BrLock`] (one sub-lock per CPU) and [`PthreadRwLock`]
//!   (an adapter over `pthread_rwlock_t`, for comparison and wrapping).
//! - [`Restricted`]: concurrency restriction (GCR) over any lock, so that a
//!   lock with FIFO hand-offs does not collapse when threads outnumber the
//!   cores. The crate-root names of the three algorithms are restricted
//!   ([`PfTicket`] is `Restricted<pf_ticket::PfTicket>`): robust by
//!   default. The algorithms alone, for measurement or a model, are the
//!   modules' types ([`pf_ticket::PfTicket`], [`pf_queue::PfQueue`],
//!   [`brlock::BrLock`]).
//!
//! ```
//! use rwlock_core::{PfQueue, PfTicket, BrLock, PthreadRwLock};
//!
//! // A one-line alias gives the familiar guard-based API.
//! type RwLock<T> = lock_api::RwLock<PfQueue, T>;
//! static CONFIG: RwLock<u32> = RwLock::new(7);
//! assert_eq!(*CONFIG.read(), 7);
//! *CONFIG.write() += 1;
//! assert_eq!(*CONFIG.read(), 8);
//!
//! let t = lock_api::RwLock::<PfTicket, _>::new(vec![1, 2]);
//! t.write().push(3);
//! assert_eq!(t.read().len(), 3);
//!
//! let b = lock_api::RwLock::<BrLock, _>::new(String::from("a"));
//! b.write().push('b');
//! assert_eq!(&*b.read(), "ab");
//!
//! let p = lock_api::RwLock::<PthreadRwLock, _>::new(0u64);
//! *p.write() = 5;
//! assert_eq!(*p.read(), 5);
//! ```

#![deny(missing_docs)]

pub mod clock;
pub mod sync;
pub mod thread_id;
pub mod topology;
pub mod wait;

pub mod brlock;
#[cfg(all(loom, any(test, feature = "testing")))]
pub mod loom_support;
pub mod pf_queue;
pub mod pf_ticket;
mod phase_fair;
#[cfg(not(loom))]
pub mod pthread;
pub mod restricted;
pub mod ticket_wait;

#[cfg(all(any(test, feature = "testing"), not(loom)))]
pub mod testing;

pub use crossbeam_utils::CachePadded;

/// PF-T ([`pf_ticket::PfTicket`]) with its writers restricted to the
/// running CPUs ([`Restricted`]): the same lock where threads ≤ cores, no
/// collapse where they are not.
pub type PfTicket<W = wait::DefaultWait> = Restricted<pf_ticket::PfTicket<W>>;

/// PF-Q ([`pf_queue::PfQueue`]) with its writers restricted to the running
/// CPUs ([`Restricted`]).
pub type PfQueue<W = wait::DefaultWait> = Restricted<pf_queue::PfQueue<W>>;

/// The per-CPU brlock ([`brlock::BrLock`]) with its writers restricted to
/// the running CPUs ([`Restricted`]).
pub type BrLock<W = wait::DefaultWait> = Restricted<brlock::BrLock<W>>;
#[cfg(not(loom))]
pub use pthread::PthreadRwLock;
pub use restricted::Restricted;

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
