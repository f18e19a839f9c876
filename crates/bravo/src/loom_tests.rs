//! loom models of the BRAVO protocol (run with `RUSTFLAGS="--cfg loom"`,
//! bounded by `LOOM_MAX_PREEMPTIONS`; see `scripts/test`).
//!
//! Each model guards a loom `UnsafeCell` with a `Bravo` lock: loom reports
//! any access not ordered by the lock (a reader beside a writer, or a
//! reader that misses the last writer's data) as a causality violation.
//! The underlying lock is PF-T or PF-Q (loom-instrumented through
//! `rwlock_core::sync`). The model's clock is constant and, in a model, a
//! revocation's inhibit window is zero and every slow read consults the
//! clock, so the next slow reader re-enables the bias: the models explore
//! bias being set, revoked and set again. Tables have 1 or 2 slots, so
//! collisions happen (second probes are covered by the tiny-table stress
//! test, not here).

use lock_api::RawRwLock;

use crate::policy::{self, Policy};
use crate::sync::{Arc, UnsafeCell, thread};
use crate::{Bravo, table};

struct Shared<L, P: Policy> {
    lock: Bravo<L, P>,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what the models check.
unsafe impl<L: Sync, P: Policy> Sync for Shared<L, P> {}

impl<L: RawRwLock, P: Policy> Shared<L, P> {
    fn new(make: fn() -> L) -> Arc<Self> {
        Arc::new(Shared {
            lock: Bravo::from_raw(make()),
            data: UnsafeCell::new(0),
        })
    }

    fn write(&self) {
        let g = self.lock.lock_exclusive();
        // SAFETY: exclusive access under the lock (loom reports it otherwise).
        self.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: our write.
        unsafe { self.lock.unlock_exclusive(g) };
    }

    fn read(&self) -> u32 {
        let g = self.lock.lock_shared();
        // SAFETY: shared access under the lock.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: our read.
        unsafe { self.lock.unlock_shared(g) };
        v
    }
}

/// Runs `f` on `s` in a new model thread.
fn spawn<L, P, R>(s: &Arc<Shared<L, P>>, f: fn(&Shared<L, P>) -> R) -> thread::JoinHandle<R>
where
    L: RawRwLock + Send + Sync + 'static,
    P: Policy,
    R: Send + 'static,
{
    let s = s.clone();
    thread::spawn(move || f(&s))
}

fn slots(n: usize) {
    table::configure(n).unwrap();
}

/// A biased lock: one reader on the fast path against one writer's
/// revocation (the store-load pair of Listing 1 l. 14-18 / 39-44).
///
/// Both run on spawned threads. With the writer on the model's main thread
/// (as until 2026-11-29), loom reported no race for a writer that never
/// revoked once it held `L` (`revoke_if_dirty` returning `true` at once):
/// one execution, no causality violation. Spawned, that mutation is
/// reported ("Concurrent read and write accesses to `UnsafeCell`").
fn fast_reader_vs_writer<L, P>(make: fn() -> L)
where
    L: RawRwLock + Send + Sync + 'static,
    P: Policy,
{
    loom::model(move || {
        let s = Shared::<L, P>::new(make);
        s.read(); // slow; enables the bias
        assert!(s.lock.is_biased());
        let r = spawn(&s, Shared::read);
        let w = spawn(&s, Shared::write);
        w.join().unwrap();
        let seen = r.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(s.read(), 1);
    });
}

#[test]
fn loom_tests_fast_reader_vs_writer_listing1() {
    slots(2);
    fast_reader_vs_writer::<_, policy::Listing1>(
        rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
    );
}

#[test]
fn loom_tests_fast_reader_vs_writer_default_policy() {
    slots(2);
    fast_reader_vs_writer::<_, crate::DefaultPolicy>(
        rwlock_core::pf_queue::PfQueue::<rwlock_core::wait::DefaultWait>::new,
    );
}

/// One slot: a reader collides with a fast reader that holds it and takes
/// the slow path; it releases its own acquisition while a writer revokes,
/// and the fast reader is still inside. An unlock deciding from the slot's
/// content (it holds this lock's tag) would clear the fast reader's slot
/// and leave `L` read-held: the writer would enter beside the fast reader,
/// or never. A reader that claimed the slot without a compare-and-swap
/// would share it, and its release would hide the fast reader the same way.
///
/// The fast reader's acquisition is made before the other threads start:
/// the race for the slot between two readers is `fast_reader_vs_writer`'s
/// store-load pair twice over, and leaving it open cost 272 s of loom time
/// in CI for no path this model does not take (both readers fast, each in
/// turn, is the collision-free case the other models cover).
#[test]
fn loom_tests_colliding_readers_vs_writer() {
    slots(1);
    loom::model(move || {
        let s = Shared::<_, policy::Listing1>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        s.read(); // slow; enables the bias
        let outer = s.lock.lock_shared();
        assert!(outer.is_fast(), "the bias is on and the slot free");
        let reader = spawn(&s, Shared::read);
        let writer = spawn(&s, Shared::write);
        // Loom reports a writer let in beside the fast read here.
        // SAFETY: shared access under the fast read.
        let seen = s.data.with(|p| unsafe { *p });
        assert_eq!(seen, 0, "a writer entered beside the fast reader");
        // SAFETY: our read.
        unsafe { s.lock.unlock_shared(outer) };
        assert!(reader.join().unwrap() <= 1);
        writer.join().unwrap();
        assert!(!s.lock.is_locked());
        assert_eq!(s.read(), 1);
    });
}

/// Two writers (one may revoke while the other holds `L`) and a reader
/// that re-enables the bias, over PF-T with policy `P`.
fn two_writers_and_a_reader<P: Policy>() {
    slots(2);
    loom::model(move || {
        let s = Shared::<_, P>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        s.read();
        let w = spawn(&s, Shared::write);
        let r = spawn(&s, Shared::read);
        s.write();
        w.join().unwrap();
        assert!(r.join().unwrap() <= 2);
        assert_eq!(s.read(), 2);
    });
}

/// Section 7's revocation before the lock, alone.
#[test]
fn loom_tests_revoke_before_lock_two_writers() {
    two_writers_and_a_reader::<policy::RevokeBeforeLock>();
}

/// The default policy: revocation before `L` (and writers that give `L`
/// back rather than wait for readers holding it), per-thread unbiased
/// hint, block scan, adaptive window.
#[test]
fn loom_tests_default_policy_two_writers() {
    two_writers_and_a_reader::<crate::DefaultPolicy>();
}

/// A reader's nested read (its slot taken by its own outer fast read, so
/// it goes through `L`) while a writer revokes: under the default policy the
/// writer never waits for fast readers holding `L`, so this cannot deadlock
/// (loom reports a deadlock otherwise; with Listing 1 it does deadlock).
#[test]
fn loom_tests_nested_read_vs_writer_default_policy() {
    slots(2);
    loom::model(move || {
        let s = Shared::<_, crate::DefaultPolicy>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        s.read();
        let w = spawn(&s, Shared::write);
        let outer = s.lock.lock_shared();
        if !outer.is_fast() {
            // A slow outer read holds PF-T itself: a nested read behind the
            // queued writer then deadlocks by PF-T's own phase fairness, as
            // with PF-T alone. Not what this model is about.
            // SAFETY: our read.
            unsafe { s.lock.unlock_shared(outer) };
            w.join().unwrap();
            return;
        }
        let inner = s.read();
        // SAFETY: shared access under the outer read.
        let v = s.data.with(|p| unsafe { *p });
        // SAFETY: our read.
        unsafe { s.lock.unlock_shared(outer) };
        assert_eq!(inner, v);
        w.join().unwrap();
        assert_eq!(s.read(), 1);
    });
}

/// A failed try-write restores the bias; readers on either path and a
/// try-writer never overlap.
#[test]
fn loom_tests_try_write_vs_fast_reader() {
    slots(2);
    loom::model(move || {
        let s = Shared::<_, policy::Listing1>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        s.read();
        let r = spawn(&s, Shared::read);
        if let Some(g) = s.lock.try_lock_exclusive() {
            // SAFETY: exclusive access under the lock.
            s.data.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: our write.
            unsafe { s.lock.unlock_exclusive(g) };
        }
        assert!(r.join().unwrap() <= 1);
    });
}

/// The hold an upgrade raises over the clean word (`hold_bias_off`): while
/// it is up no read takes the fast path, although a slow reader, which in
/// a model re-enables the bias at once, runs beside it. The holder writes
/// a cell that only fast readers read (it does not hold `L`, so slow
/// readers may be in; an upgrade's `L` excludes them later). Without the
/// `REVOKING` it raises (a plain revocation), the slow reader biases the
/// lock again and a fast reader reads beside the write: loom reports the
/// race (tried).
#[test]
fn loom_tests_bias_held_off_admits_no_fast_reader() {
    slots(2);
    loom::model(move || {
        let s = Shared::<_, crate::DefaultPolicy>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        let fast_only = Arc::new(UnsafeCell::new(0u32));
        s.read(); // slow; enables the bias
        let slow = spawn(&s, Shared::read);
        let fast = {
            let (s, cell) = (s.clone(), fast_only.clone());
            thread::spawn(move || {
                let g = s.lock.lock_shared();
                if g.is_fast() {
                    // The cell is written only while the bias is held off.
                    // SAFETY: no read is fast then (what loom checks).
                    cell.with(|p| unsafe { *p });
                }
                // SAFETY: our read.
                unsafe { s.lock.unlock_shared(g) };
            })
        };
        {
            let held = s.lock.hold_bias_off(crate::raw::Patience::Wait);
            assert!(held.is_some());
            assert!(!s.lock.is_biased());
            // SAFETY: no fast reader is inside while the hold is up.
            fast_only.with_mut(|p| unsafe { *p += 1 });
        }
        slow.join().unwrap();
        fast.join().unwrap();
    });
}

/// The default policy's writer revokes before taking `L`; a slow reader
/// sets the bias again before the writer has `L` (a model's inhibit window
/// is 0), and the same reader's next read may take the fast path. The
/// writer, once it holds `L`, must see that bias through the count (or the
/// word) and not enter beside that fast read. With the count never
/// raised, loom reports the race (tried).
#[test]
fn loom_tests_bias_set_again_before_the_writer_holds_l() {
    slots(2);
    loom::model(move || {
        let s = Shared::<_, crate::DefaultPolicy>::new(
            rwlock_core::pf_ticket::PfTicket::<rwlock_core::wait::DefaultWait>::new,
        );
        s.read(); // slow; enables the bias
        let w = spawn(&s, Shared::write);
        let r = spawn(&s, |s| s.read().max(s.read()));
        w.join().unwrap();
        assert!(r.join().unwrap() <= 1);
        assert_eq!(s.read(), 1);
    });
}
