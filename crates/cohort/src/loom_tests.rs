//! loom models (`RUSTFLAGS="--cfg loom"`, bounded by `LOOM_MAX_PREEMPTIONS`):
//! every access to the protected data goes through a loom `UnsafeCell`, so
//! a writer that overlaps anybody is reported as a causality violation, and
//! a lost wake-up as a deadlock.
//!
//! Every model thread runs on one OS thread, so the models choose nodes
//! with the `*_on` methods: two nodes, each with its own local lock and
//! indicator slot.

use loom::sync::Arc;
use loom::thread;

use crate::cohort::Cohort;
use crate::indicator::IngressEgress;
use crate::neutral::NeutralPref;
use crate::partitioned_ticket::PartitionedTicket;
use crate::reader_pref::ReaderPref;
use crate::reader_pref_opt::ReaderPrefOpt;
use crate::rw::ReaderToken;
use crate::ticket::TicketLock;
use crate::writer_pref::WriterPref;
use rwlock_core::sync::UnsafeCell;

/// A lock and the data it guards.
struct Shared<L> {
    lock: L,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what the models check.
unsafe impl<L: Sync> Sync for Shared<L> {}
// SAFETY: as above.
unsafe impl<L: Send> Send for Shared<L> {}

impl<L> Shared<L> {
    fn new(lock: L) -> Arc<Self> {
        Arc::new(Shared {
            lock,
            data: UnsafeCell::new(0),
        })
    }

    /// Adds 1; the caller holds the lock exclusively.
    fn bump(&self) {
        // SAFETY: exclusive access under the lock (loom reports it otherwise).
        self.data.with_mut(|p| unsafe { *p += 1 });
    }

    /// Reads; the caller holds the lock (shared or exclusive).
    fn get(&self) -> u32 {
        // SAFETY: shared access under the lock.
        self.data.with(|p| unsafe { *p })
    }
}

/// Spawns a thread that writes once (`bump`) from node `$node` under
/// `$s.lock`.
macro_rules! spawn_writer {
    ($s:expr, $node:expr) => {{
        let s = $s.clone();
        thread::spawn(move || {
            let g = s.lock.lock_exclusive_on($node);
            s.bump();
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_exclusive_guard(g) };
        })
    }};
}

/// Spawns a thread that reads once from node `$node` under `$s.lock`; it
/// returns the value it read.
macro_rules! spawn_reader {
    ($s:expr, $node:expr) => {{
        let s = $s.clone();
        thread::spawn(move || {
            let g = s.lock.lock_shared_on($node);
            let v = s.get();
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_shared_token(g) };
            v
        })
    }};
}

type CPtlTkt = Cohort<PartitionedTicket, TicketLock>;

/// Three acquisitions of the cohort mutex, two from node 0 (a local
/// hand-off is possible between them) and one from node 1; a hand-off
/// bound of 1 so that both exits of the release are explored.
#[test]
fn loom_tests_cohort_mutex_two_nodes() {
    loom::model(|| {
        let s = Shared::new(CPtlTkt::with_config(2, 1));
        let spawn = |node: usize| {
            let s = s.clone();
            thread::spawn(move || {
                let g = s.lock.lock_on(node);
                s.bump();
                // SAFETY: our own acquisition.
                unsafe { s.lock.unlock_token(g) };
            })
        };
        let a = spawn(0);
        let b = spawn(1);
        let g = s.lock.lock_on(0);
        s.bump();
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_token(g) };
        a.join().unwrap();
        b.join().unwrap();
        let g = s.lock.lock_on(1);
        assert_eq!(s.get(), 3);
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_token(g) };
        assert!(!s.lock.is_locked());
    });
}

/// A writer on node 0 and readers on nodes 1 and 0 (the main thread),
/// then a final write from node 1 that must see the first write.
macro_rules! writer_vs_two_readers {
    ($make:expr) => {
        loom::model(|| {
            let s = Shared::new($make);
            let w = spawn_writer!(s, 0);
            let r = {
                let s = s.clone();
                thread::spawn(move || {
                    let g: ReaderToken = s.lock.lock_shared_on(1);
                    let v = s.get();
                    // SAFETY: our own acquisition.
                    unsafe { s.lock.unlock_shared_token(g) };
                    v
                })
            };
            let g = s.lock.lock_shared_on(0);
            assert!(s.get() <= 1);
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_shared_token(g) };
            assert!(r.join().unwrap() <= 1);
            w.join().unwrap();
            let g = s.lock.lock_exclusive_on(1);
            assert_eq!(s.get(), 1);
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_exclusive_guard(g) };
        })
    };
}

/// C-RW-WP with ingress/egress indicators on two nodes. Patience 1 so that
/// a reader that meets the writer raises WBarrier after one more check.
#[test]
fn loom_tests_c_rw_wp_ingress_egress() {
    writer_vs_two_readers!(WriterPref::from_parts(
        CPtlTkt::with_config(2, 64),
        IngressEgress::new(2),
        1
    ));
}

/// C-RW-RP-opt with ingress/egress indicators on two nodes (the WActive
/// loop). Patience 1: the writer raises RBarrier after one more check.
#[test]
fn loom_tests_c_rw_rp_opt_ingress_egress() {
    writer_vs_two_readers!(ReaderPrefOpt::from_parts(
        CPtlTkt::with_config(2, 64),
        IngressEgress::new(2),
        1
    ));
}

/// C-RW-RP with ingress/egress indicators on two nodes: the writer hands
/// the mutex back while readers are inside, and a reader that meets it
/// stays arrived and waits (the RP locks' `ParkWhenShared` waits are the
/// models' usual park). Patience 1: the writer raises RBarrier after one
/// more check.
#[test]
fn loom_tests_c_rw_rp_ingress_egress() {
    writer_vs_two_readers!(ReaderPref::from_parts(
        CPtlTkt::with_config(2, 64),
        IngressEgress::new(2),
        1
    ));
}

/// C-RW-NP: readers arrive while holding the writer mutex, so a writer
/// that takes it after them sees them without a Dekker pair. Over a ticket
/// lock and one indicator slot (the nodes of `writer_vs_two_readers` map
/// to it): the two-node cohort mutex, which every read takes here, made
/// the model run about 10 minutes, and the mutex is modelled on its own
/// above.
#[test]
fn loom_tests_c_rw_np_reads_pass_the_mutex() {
    writer_vs_two_readers!(NeutralPref::from_parts(
        TicketLock::new(),
        IngressEgress::new(1),
        1
    ));
}

/// A downgrade (`Parts::downgrade`, shared by every lock of the crate:
/// arrive as a reader, then release the writer mutex) beside another
/// writer, C-RW-WP on one node: the downgraded read still sees its own
/// write, with no writer in between and none beside it.
#[test]
fn loom_tests_c_rw_wp_downgrade() {
    loom::model(|| {
        let s = Shared::new(WriterPref::from_parts(
            CPtlTkt::with_config(1, 64),
            IngressEgress::new(1),
            1,
        ));
        let w = spawn_writer!(s, 0);
        let g = s.lock.lock_exclusive_on(0);
        s.bump();
        let mine = s.get();
        // SAFETY: our own write acquisition.
        let r = unsafe { s.lock.downgrade_guard(g) };
        assert_eq!(s.get(), mine, "a writer got in during the downgrade");
        // SAFETY: the read the downgrade turned it into.
        unsafe { s.lock.unlock_shared_token(r) };
        w.join().unwrap();
        let g = s.lock.lock_shared_on(0);
        assert_eq!(s.get(), 2);
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_shared_token(g) };
        assert!(!lock_api::RawRwLock::is_locked(&s.lock));
    });
}

/// Two writers (a spawned thread and the main one) and a reader on one
/// node of `$make`; then a read that must see both writes. Evaluates to the
/// shared lock and data.
macro_rules! two_writers_and_a_reader {
    ($make:expr) => {{
        let s = Shared::new($make);
        let w = spawn_writer!(s, 0);
        let r = spawn_reader!(s, 0);
        let g = s.lock.lock_exclusive_on(0);
        s.bump();
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_exclusive_guard(g) };
        assert!(r.join().unwrap() <= 2);
        w.join().unwrap();
        let g = s.lock.lock_shared_on(0);
        assert_eq!(s.get(), 2);
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_shared_token(g) };
        s
    }};
}

/// C-RW-WP over a one-node cohort (the local lock alone is the mutex and
/// the writers' `is_locked`): two writers and a reader.
#[test]
fn loom_tests_c_rw_wp_one_node() {
    loom::model(|| {
        two_writers_and_a_reader!(WriterPref::from_parts(
            CPtlTkt::with_config(1, 64),
            IngressEgress::new(1),
            1
        ));
    });
}

/// C-RW-RP's reader retreat (`reader_pref`, "Oversubscription"; inside a
/// model every wait counts as on a shared CPU, and a reader retreats once
/// per acquisition): two writers and a reader over a ticket lock. A reader
/// that meets a writer departs, waits for the mutex to be free or the hold
/// it saw to end, and arrives again; meanwhile the other writer may take
/// the mutex, find no reader and enter, so the reader must check the mutex
/// again after arriving. No barrier (patience `u32::MAX`), which keeps the
/// model to this path. At least 4 preemptions: with the suite's 3 the
/// reader never reaches its wait after arriving again (a review found this
/// by mutation); 4 reaches it.
#[test]
fn loom_tests_c_rw_rp_reader_retreats() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(4, |b| b.max(4)));
    builder.check(|| {
        let s = two_writers_and_a_reader!(ReaderPref::from_parts(
            TicketLock::new(),
            IngressEgress::new(1),
            u32::MAX
        ));
        assert!(!lock_api::RawRwLock::is_locked(&s.lock));
    });
}

/// C-RW-RP with two writers, both out of patience at once (patience 1),
/// and a reader over a ticket lock: RBarrier is a count, so two writers
/// may hold it up together, and it comes down only when both have lowered
/// it; a reader parked behind it must still be woken by the last lowering.
#[test]
fn loom_tests_c_rw_rp_two_writers_raise_rbarrier() {
    loom::model(|| {
        let s = two_writers_and_a_reader!(ReaderPref::from_parts(
            TicketLock::new(),
            IngressEgress::new(1),
            1
        ));
        assert!(!lock_api::RawRwLock::is_locked(&s.lock));
    });
}

/// C-RW-RP-opt with two writers and a reader over a ticket lock: the
/// second writer waits in the mutex while the first holds `WActive`, so a
/// writer's `WActive` must be its own before it enters. Patience 1.
#[test]
fn loom_tests_c_rw_rp_opt_two_writers() {
    loom::model(|| {
        let s = two_writers_and_a_reader!(ReaderPrefOpt::from_parts(
            TicketLock::new(),
            IngressEgress::new(1),
            1
        ));
        assert!(!lock_api::RawRwLock::is_locked(&s.lock));
    });
}

/// C-RW-RP's relay behind RBarrier (`rw.rs`, "Waiting"; inside a model
/// the lowering always counts as on a shared CPU and wakes one reader):
/// the main thread reads while a writer, out of patience at once (patience
/// 1), raises RBarrier; two readers may then park behind it. The lowering
/// wakes one; that one must wake the other, or the model deadlocks.
#[test]
fn loom_tests_c_rw_rp_barrier_relay() {
    loom::model(|| {
        let s = Shared::new(ReaderPref::from_parts(
            TicketLock::new(),
            IngressEgress::new(1),
            1,
        ));
        let g = s.lock.lock_shared_on(0);
        let w = spawn_writer!(s, 0);
        let readers = [spawn_reader!(s, 0), spawn_reader!(s, 0)];
        assert_eq!(s.get(), 0);
        // SAFETY: our own acquisition.
        unsafe { s.lock.unlock_shared_token(g) };
        for r in readers {
            assert!(r.join().unwrap() <= 1);
        }
        w.join().unwrap();
        assert!(!lock_api::RawRwLock::is_locked(&s.lock));
    });
}

/// Three acquisitions of one ticket lock: the only shape in which a waiter
/// finds more than one ticket ahead of it, and so waits for the queue to
/// move (`TicketLock::wait_for`'s first loop, a fresh wait per hand-off)
/// before it waits as the next in line. A hand-off it misses would show up
/// as a deadlock, an overlap as a causality violation.
#[test]
fn loom_tests_ticket_lock_three_in_line() {
    loom::model(|| {
        let s = Shared::new(TicketLock::new());
        let spawn = || {
            let s = s.clone();
            thread::spawn(move || {
                let t = s.lock.acquire();
                s.bump();
                // SAFETY: our own acquisition.
                unsafe { s.lock.release(t) };
            })
        };
        let a = spawn();
        let b = spawn();
        let t = s.lock.acquire();
        s.bump();
        // SAFETY: our own acquisition.
        unsafe { s.lock.release(t) };
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(s.get(), 3);
        assert!(!s.lock.is_locked());
    });
}

/// The try paths: a try-read on node 0 and a try-write on node 1 race a
/// blocking read on node 0 (the main thread), over a ticket lock and one
/// indicator slot. The try-write's Dekker pair (mutex, fence, indicator)
/// against the readers' (arrive, check the mutex) must keep it out while
/// a reader is in, and its release must let the blocking reader in; a try
/// that fails must leave nothing behind (the lock free at the end, the
/// data counting the successful writes).
macro_rules! try_read_and_try_write_vs_reader {
    ($make:expr) => {
        loom::model(|| {
            let s = Shared::new($make);
            let try_reader = {
                let s = s.clone();
                thread::spawn(move || {
                    let t = s.lock.try_lock_shared_on(0)?;
                    let v = s.get();
                    // SAFETY: our own acquisition.
                    unsafe { s.lock.unlock_shared_token(t) };
                    Some(v)
                })
            };
            let try_writer = {
                let s = s.clone();
                thread::spawn(move || match s.lock.try_lock_exclusive_on(1) {
                    Some(g) => {
                        s.bump();
                        // SAFETY: our own acquisition.
                        unsafe { s.lock.unlock_exclusive_guard(g) };
                        1
                    }
                    None => 0,
                })
            };
            let g = s.lock.lock_shared_on(0);
            assert!(s.get() <= 1);
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_shared_token(g) };
            assert!(try_reader.join().unwrap().is_none_or(|v| v <= 1));
            let wrote = try_writer.join().unwrap();
            assert!(!lock_api::RawRwLock::is_locked(&s.lock));
            let g = s.lock.lock_exclusive_on(0);
            assert_eq!(s.get(), wrote);
            // SAFETY: our own acquisition.
            unsafe { s.lock.unlock_exclusive_guard(g) };
        })
    };
}

/// [`try_read_and_try_write_vs_reader`] on C-RW-WP, C-RW-RP, C-RW-RP-opt
/// and C-RW-NP (RP-opt's try-write sets `WActive`, NP's try-read takes the
/// mutex; the others share `try_write_alone`). Patience 1.
#[test]
fn loom_tests_c_rw_try_paths() {
    try_read_and_try_write_vs_reader!(NeutralPref::from_parts(
        TicketLock::new(),
        IngressEgress::new(1),
        1
    ));
    try_read_and_try_write_vs_reader!(WriterPref::from_parts(
        TicketLock::new(),
        IngressEgress::new(1),
        1
    ));
    try_read_and_try_write_vs_reader!(ReaderPref::from_parts(
        TicketLock::new(),
        IngressEgress::new(1),
        1
    ));
    try_read_and_try_write_vs_reader!(ReaderPrefOpt::from_parts(
        TicketLock::new(),
        IngressEgress::new(1),
        1
    ));
}
