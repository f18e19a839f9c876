//! NUMA-aware cohort locks (Calciu, Dice, Lev, Luchangco, Marathe & Shavit,
//! "NUMA-Aware Reader-Writer Locks", PPoPP 2013).
//!
//! Writers batch per NUMA node through a **cohort mutex**; readers write
//! only their own node's **read indicator**. On a multi-socket machine a
//! read then writes no cache line that another socket's readers write (it
//! still reads the writer-side lines, which a writer on another node
//! changes, so reads beside writes do take cross-socket misses), and a run
//! of writes from one node keeps the lock and the data in that node's
//! caches.
//!
//! | type | what it is | paper |
//! | --- | --- | --- |
//! | [`CPtlTkt`] = [`Cohort`]`<`[`PartitionedTicket`]`, `[`TicketLock`]`>` | the cohort mutex C-PTL-TKT; also a [`lock_api::RawMutex`] | Section 3.1 |
//! | [`CRwNp`] = [`NeutralPref`] | readers and writers all pass the cohort mutex | Section 3.2, Figure 3 |
//! | [`CRwRp`] = [`ReaderPref`] | readers first; writers back off, RBarrier when impatient | Section 3.3, Figure 4 |
//! | [`CRwRpOpt`] = [`ReaderPrefOpt`] | reader preference with the `WActive` flag | Section 3.3 (the loop) |
//! | [`CRwWp`] = [`WriterPref`] | writers first; readers back off, WBarrier when impatient | Section 3.4, Figure 5 |
//! | [`DrTicket`] = [`WriterPref`]`<`[`Restricted`]`<`[`TicketLock`]`>, `[`IngressEgress`]`>` | DR-MCS, the paper's control: distributed readers, a plain FIFO lock for writers | Section 3.5 |
//!
//! **Robust by default.** The reader-writer aliases above and [`Mutex`]
//! put their writer mutex behind [`Restricted`] (GCR concurrency
//! restriction, `rwlock_core::restricted`): once a waiter has had to yield,
//! at most one fewer threads than the process has CPUs (and at most
//! `rwlock_core::restricted::DEFAULT_LIMIT_MAX`) wait for the mutex
//! (the holder runs on another), and the rest, if their CPU is shared,
//! sleep in a FIFO queue and are promoted within a millisecond each.
//! A FIFO cohort hand-off then goes to a thread that runs instead of one
//! that is descheduled (without it C-RW-NP falls to 0.01× its 2-thread
//! throughput at 16 threads on 2 cores; see `docs/restriction.md`). A
//! thread whose yields find nobody else to run is never held back, so
//! where every thread has a core the paper's hand-off bound and
//! preferences hold unchanged; beyond that they hold among the admitted
//! waiters. [`unrestricted`] has the algorithms alone.
//!
//! Every reader-writer lock is generic over its writer mutex
//! ([`WriterMutex`]: any [`Cohort`], or a [`TicketLock`]) and its read
//! indicator ([`ReadIndicator`]: [`IngressEgress`] by default, [`PerNode`],
//! [`Central`]), and implements [`lock_api::RawRwLock`] and
//! [`lock_api::RawRwLockDowngrade`]; `is_locked` and `is_locked_exclusive`
//! are pure reads (momentary snapshots, as lock_api says).
//!
//! ```
//! // A one-line alias gives the usual guard API.
//! type RwLock<T> = lock_api::RwLock<cohort::CRwWp, T>;
//! static TABLE: RwLock<Vec<u32>> = RwLock::new(Vec::new());
//! TABLE.write().push(1);
//! assert_eq!(TABLE.read().len(), 1);
//!
//! // The cohort mutex on its own.
//! let m = lock_api::Mutex::<cohort::CPtlTkt, u64>::new(0);
//! *m.lock() += 1;
//! assert_eq!(*m.lock(), 1);
//!
//! // Other parts: a per-node counter indicator and a cohort that hands
//! // the lock to at most 8 local successors in a row.
//! use cohort::{PerNode, WriterPref};
//! let custom = WriterPref::from_parts(cohort::CPtlTkt::with_config(0, 8), PerNode::new(0), 200);
//! let l = lock_api::RwLock::from_raw(custom, 5u8);
//! assert_eq!(*l.read(), 5);
//! ```
//!
//! # Nodes
//!
//! Per-node parts are sized by
//! [`Topology::global`](rwlock_core::topology::Topology::global)'s node
//! count on first use (`const INIT` and `new()` allocate nothing), or by the
//! count given to `with_nodes` / `with_config`. A thread uses the part of
//! [`current_node`](rwlock_core::topology::current_node) (reduced modulo the
//! count); the part it used travels in its guard, so a thread that migrates
//! inside its critical section still releases what it took. The `*_on`
//! methods take an explicit node instead (tests, and callers that know
//! where they run). Set `RWLOCK_TOPOLOGY` (for instance `each-cpu` or
//! `nodes=2`) to try multi-node behaviour on a one-node machine.
//!
//! # Waiting
//!
//! The paper's locks spin. These spin briefly, yield, then park
//! ([`rwlock_core::wait`]), so they stay usable with far more threads than
//! cores. Patience (RP writers, WP readers) is counted in checks before a
//! barrier goes up ([`DEFAULT_PATIENCE`] = 1000, the paper's), and also
//! ends at the waiter's first yield [`PATIENCE_TIME`] or more after its
//! first, so that a waiter whose yields give its CPU away for whole time
//! slices raises its barrier after about one slice, not fifteen. An RP
//! writer whose yields show that other threads wait for its CPU raises
//! RBarrier after [`SHARED_CPU_PATIENCE`] (16) checks, without yielding
//! (module `rw`, "Patience"). A
//! C-RW-RP reader that would give its CPU away while it waits for the
//! writer mutex departs first, up to 16 times per acquisition, so that
//! writers do not wait for it while it is not running (module
//! `reader_pref`, "Oversubscription"); with a CPU per thread it waits
//! arrived, as in the paper. The
//! cohort's bound on consecutive local hand-offs is
//! [`DEFAULT_HANDOFF_BOUND`] = 64.
//!
//! # Which preference
//!
//! - **C-RW-WP** (the default choice): in the paper, and on read-mostly
//!   workloads generally, the fastest. A writer waits only for readers that
//!   arrived before it; readers that meet a writer step back and are then
//!   admitted together when the writers are done, which packs readers into
//!   large concurrent batches. Impatient readers raise WBarrier, so writers
//!   cannot starve them.
//! - **C-RW-RP-opt**: when reads should not wait behind queued writers
//!   (latency of reads matters more than throughput): a read waits only for
//!   a writer that is actually inside, or for the barrier of a writer that
//!   ran out of patience. Writers can still get in thanks to RBarrier.
//!   With more threads than cores a writer's patience ends where its wait
//!   would give its CPU away, and waiters park rather than yield, so reads
//!   yield to a writer within microseconds (writer p99 wait at 16 threads
//!   on 2 cores: 3–4 µs, about half parking_lot's in the same runs;
//!   `docs/cohort.md`).
//! - **C-RW-RP**: only for comparison: writers hand the mutex to each other
//!   while arrived readers wait for it to fall free ("writer ownership
//!   circulation"); C-RW-RP-opt fixes that.
//! - **C-RW-NP**: admission strictly in cohort-mutex order; reads serialize
//!   briefly on the mutex, so it scales only like a mutex. Useful where
//!   neither side may overtake the other.
//! - **DR-MCS** ([`DrTicket`]): when writes are so rare that batching them
//!   per node buys nothing; its writer lock is a plain ticket lock.
//!
//! **Recursive reads** (a thread that holds a read and reads again) can
//! deadlock with a waiting writer in every variant, as `lock_api` warns for
//! `read`: under WP and NP the writer holds the mutex and waits for the
//! first read while the second waits for the writer; under RP and RP-opt an
//! impatient writer's RBarrier stops the second read. Release before
//! reading again.
//!
//! **The reader-preference pathology** (Section 4.3): with a fixed pool of
//! threads that each read or write at random, a reader-preference lock
//! admits a writer only when no reader is active; when that writer is done
//! it soon reads again, so the writers that queued meanwhile stay blocked.
//! Most threads end up waiting to write while one writer or a few readers
//! run: a read-dominated workload gets *little reader concurrency*, because
//! starved writers never turn back into readers. Writer preference avoids
//! it: blocked readers pile up while writers pass, then enter together.
//!
//! # Footprint
//!
//! Bytes on x86-64 (where a cache-padded line is 128 bytes: the
//! adjacent-line prefetcher's pair), inline (`size_of`) plus what the lock
//! allocates on first use; printed by `cargo run --release --example
//! cohort_footprint`:
//!
//! | lock | inline | total, 1 node | 2 nodes | 4 nodes | 8 nodes |
//! | --- | ---: | ---: | ---: | ---: | ---: |
//! | [`CPtlTkt`] (cohort mutex) | 768 | 896 | 1024 | 1280 | 1792 |
//! | [`CRwNp`], [`CRwRp`], [`CRwRpOpt`], [`CRwWp`] | 1280 | 1536 | 1792 | 2304 | 3328 |
//! | [`DrTicket`] | 512 | 640 | 768 | 1024 | 1536 |
//! | `WriterPref<CPtlTkt, PerNode>` | 1152 | 1408 | 1664 | 2176 | 3200 |
//! | `WriterPref<CPtlTkt, Central>` | 1280 | 1408 | 1536 | 1792 | 2304 |
//!
//! The reader-writer aliases include their writer mutex's restriction gate
//! ([`Restricted`]: one line, padded to the lock's 128-byte alignment); the
//! `WriterPref<CPtlTkt, …>` rows and [`unrestricted`] have none.
//! Where it goes: the partitioned ticket lock is 5 lines (its request
//! counter and [`PARTITIONS`](partitioned_ticket::PARTITIONS) = 4 grant
//! slots), the cohort adds one line for its node array and bound, every
//! reader-writer lock one line for its barrier and parking count and one
//! for the writer's state (RP-opt's `WActive`; in every lock the flag
//! behind an exact `is_locked_exclusive`), written only by writers; per
//! node, one line for the local ticket lock and one for the reader
//! counters. For
//! comparison `parking_lot::RawRwLock` is 8 bytes and `bravo::RawRwLock` 16
//! (plus BRAVO's one process-wide table): a cohort lock is for a few hot
//! locks, not one per hash bucket.

#![deny(missing_docs)]

pub mod cohort;
pub mod indicator;
#[cfg(all(test, loom))]
mod loom_tests;
pub mod neutral;
mod nodes;
pub mod partitioned_ticket;
pub mod reader_pref;
pub mod reader_pref_opt;
pub mod rw;
pub mod ticket;
pub mod writer_pref;

pub use crate::cohort::{Cohort, CohortToken, DEFAULT_HANDOFF_BOUND, GlobalLock, LocalLock};
pub use indicator::{Central, IngressEgress, PerNode, ReadIndicator};
pub use neutral::NeutralPref;
pub use partitioned_ticket::PartitionedTicket;
pub use reader_pref::ReaderPref;
pub use reader_pref_opt::ReaderPrefOpt;
pub use rw::{DEFAULT_PATIENCE, PATIENCE_TIME, ReaderToken, SHARED_CPU_PATIENCE, WriterMutex};
pub use rwlock_core::Restricted;
pub use ticket::TicketLock;
pub use writer_pref::WriterPref;

/// C-PTL-TKT: the cohort mutex of partitioned-ticket global and ticket
/// local locks (Section 3.1), the algorithm alone ([`Mutex`] and the
/// reader-writer locks below use it restricted).
pub type CPtlTkt = Cohort<PartitionedTicket, TicketLock>;

/// C-PTL-TKT with its waiters restricted to the running CPUs
/// ([`Restricted`]): the writer mutex of every reader-writer lock below,
/// and [`Mutex`]'s lock. Restricting the writer mutex restricts the
/// writers of every preference, and C-RW-NP's readers too (they take it).
pub type RestrictedCPtlTkt = Restricted<CPtlTkt>;

/// C-RW-NP: neutral preference (Figure 3) over C-PTL-TKT and ingress/egress
/// indicators.
pub type CRwNp = NeutralPref<RestrictedCPtlTkt, IngressEgress>;

/// C-RW-RP: reader preference (Figure 4).
pub type CRwRp = ReaderPref<RestrictedCPtlTkt, IngressEgress>;

/// C-RW-RP-opt: reader preference with `WActive` (Section 3.3).
pub type CRwRpOpt = ReaderPrefOpt<RestrictedCPtlTkt, IngressEgress>;

/// C-RW-WP: writer preference (Figure 5), the paper's best performer.
pub type CRwWp = WriterPref<RestrictedCPtlTkt, IngressEgress>;

/// DR-MCS, the paper's control (Section 3.5): distributed (ingress/egress)
/// readers, writer preference, and a plain FIFO lock for writers (a ticket
/// lock here, where the paper used MCS), restricted.
pub type DrTicket = WriterPref<Restricted<TicketLock>, IngressEgress>;

/// `lock_api::Mutex` over the cohort mutex (restricted).
///
/// ```
/// static HITS: cohort::Mutex<u64> = cohort::Mutex::new(0);
/// *HITS.lock() += 1;
/// assert_eq!(*HITS.lock(), 1);
/// ```
pub type Mutex<T> = lock_api::Mutex<RestrictedCPtlTkt, T>;

/// The same locks without concurrency restriction: the papers' algorithms
/// alone, for measurement (they hand off to descheduled waiters when
/// threads outnumber the cores; see [`Restricted`]).
pub mod unrestricted {
    use crate::{
        CPtlTkt, IngressEgress, NeutralPref, ReaderPref, ReaderPrefOpt, TicketLock, WriterPref,
    };

    /// C-RW-NP over the unrestricted C-PTL-TKT.
    pub type CRwNp = NeutralPref<CPtlTkt, IngressEgress>;
    /// C-RW-RP over the unrestricted C-PTL-TKT.
    pub type CRwRp = ReaderPref<CPtlTkt, IngressEgress>;
    /// C-RW-RP-opt over the unrestricted C-PTL-TKT.
    pub type CRwRpOpt = ReaderPrefOpt<CPtlTkt, IngressEgress>;
    /// C-RW-WP over the unrestricted C-PTL-TKT.
    pub type CRwWp = WriterPref<CPtlTkt, IngressEgress>;
    /// DR-ticket over an unrestricted ticket lock.
    pub type DrTicket = WriterPref<TicketLock, IngressEgress>;
    /// `lock_api::Mutex` over the unrestricted cohort mutex.
    pub type Mutex<T> = lock_api::Mutex<CPtlTkt, T>;
}

/// `lock_api::RwLock` over C-RW-WP.
///
/// ```
/// static ROUTES: cohort::RwLock<Vec<u32>> = cohort::RwLock::new(Vec::new());
/// ROUTES.write().push(10);
/// let routes = ROUTES.read();
/// assert_eq!(routes[0], 10);
/// ```
pub type RwLock<T> = lock_api::RwLock<CRwWp, T>;

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
