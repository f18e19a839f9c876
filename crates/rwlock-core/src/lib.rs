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

#![warn(missing_docs)]

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

#[cfg(all(any(test, feature = "testing"), not(loom)))]
pub mod testing;

pub use brlock::BrLock;
pub use crossbeam_utils::CachePadded;
pub use pf_queue::PfQueue;
pub use pf_ticket::PfTicket;
#[cfg(not(loom))]
pub use pthread::PthreadRwLock;
