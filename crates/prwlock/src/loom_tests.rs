//! loom models (`RUSTFLAGS="--cfg loom"`, bounded by `LOOM_MAX_PREEMPTIONS`).
//!
//! The protected data is a loom `UnsafeCell`: a writer that overlaps anybody
//! is reported as a causality violation, a lost wake-up as a deadlock.
//!
//! What the models cannot see: loom has no IPIs and no `membarrier`. Both
//! sides of the asymmetric barrier are modelled as what `membarrier`
//! guarantees, a SeqCst fence: the reader's light barrier (a compiler fence
//! in the real build) is a SeqCst fence here (`sync::compiler_fence`), and
//! the writer's heavy barrier is a SeqCst fence (`barrier::heavy`). The
//! models therefore check the protocol built on the pair (status store,
//! barrier, writer-word check; WRITER store, barrier, status scan; version
//! reports; the wake-up of a parked writer by a reader's plain store), not
//! the kernel's implementation of the pair. Models run with the thread's
//! record cached, as in `Membarrier` mode; `Fence` mode is the same code
//! with real fences, covered by `tests/fence_mode.rs`.
//!
//! What that modelling hides, so that nobody reads more into a passing run:
//! - the writer always runs a SeqCst fence after setting WRITER, so inside
//!   a model `heavy()` adds nothing and the version-report skip of it
//!   (`Domain::all_reported`) cannot be wrong: a mutation of either passes.
//!   The skip's argument is in the module docs; `tests/barrier_skip.rs`
//!   checks when it is taken, not that it is safe;
//! - loom treats a SeqCst fence as synchronizing, which the C++20 model does
//!   not; a release-sequence slip after a light barrier (a Relaxed hold
//!   store, say) would pass here. `slot_reused_for_another_lock_vs_writer`
//!   keeps that pattern in the suite all the same;
//! - on real hardware, nothing in the test suite can catch a missing
//!   `membarrier`: the reader's store-buffer window is a few cycles.
//!
//! The write-heavy mode (`crate::policy`) has one model, with a policy that
//! switches at every passive-mode write and expires at once: it checks the
//! switch inside a consensus, active-mode readers against a writer that
//! skips the barrier, and both ways of leaving the mode (the writer's, and
//! a reader's CAS racing a writer's acquisition). Why a writer may skip the
//! barrier once the mode is established rests on the barrier pair again,
//! which the models cannot see (above).
//!
//! What the models do catch (each checked by mutation): a reader that
//! skips the writer check after its hold store (causality violation), a
//! reader's light barrier weakened below SeqCst (a lost wake-up of the
//! parked writer, or a causality violation), and a release that ignores
//! the sticky slow-release bit (a converted hold never leaves the active
//! count: deadlock).

use lock_api::{RawRwLock, RawRwLockDowngrade};
use loom::sync::Arc;
use loom::thread::{self, JoinHandle};
use rwlock_core::loom_support;

use crate::PrwLock;
use crate::policy::ModelPolicy;

type Shared = loom_support::Shared<PrwLock>;

fn shared() -> Arc<Shared> {
    Shared::new(PrwLock::new())
}

/// One write critical section on another thread.
fn spawn_write(s: &Arc<Shared>) -> JoinHandle<()> {
    let s = s.clone();
    thread::spawn(move || s.write())
}

/// The main thread's first read: registers its status record before the
/// other threads exist, so that its later reads take the fast path.
fn register(s: &Shared) {
    assert_eq!(s.read(), 0);
}

/// A reader on the slow path (its thread's first read: registration,
/// then Fig. 3) against a writer (Fig. 4). The main thread registers first,
/// so that the reader claims the second record of the first chunk (a
/// record made live by its bit, `domain::chunks`; the first record of a
/// chunk, live with the chunk's publication, is the RCU models' first
/// reader's).
#[test]
fn loom_tests_first_read_vs_writer() {
    loom::model(|| {
        let s = shared();
        register(&s);
        let r = {
            let s = s.clone();
            thread::spawn(move || assert!(s.read() <= 1))
        };
        s.write();
        r.join().unwrap();
        assert_eq!(s.read(), 1);
    });
}

/// A reader on the fast path (registered before the writer exists) against
/// a writer: the reader either backs off or is waited for, and a writer
/// parked waiting for it is woken by its plain release.
#[test]
fn loom_tests_fast_read_vs_writer() {
    loom::model(|| {
        let s = shared();
        register(&s);
        let w = spawn_write(&s);
        assert!(s.read() <= 1);
        w.join().unwrap();
        assert_eq!(s.read(), 1);
    });
}

/// A reader converts its hold before blocking (Fig. 7 `ScheduleOut`) while
/// a writer runs its consensus: the writer waits for the active count.
#[test]
fn loom_tests_scheduled_out_reader_vs_writer() {
    loom::model(|| {
        let s = shared();
        register(&s);
        let w = spawn_write(&s);
        let g = s.lock.lock_shared();
        assert!(s.lock.schedule_out() <= 1);
        // SAFETY: shared access under the lock.
        let v = s.data.with(|p| unsafe { *p });
        assert!(v <= 1);
        // SAFETY: our shared acquisition.
        unsafe { s.lock.unlock_shared(g) };
        w.join().unwrap();
        assert_eq!(s.read(), 1);
    });
}

/// Two writers (the second may be PASSed the lock and skip consensus) and
/// a registered reader: the reader is never let in between them unseen.
#[test]
fn loom_tests_passed_writers_vs_reader() {
    loom::model(|| {
        let s = shared();
        register(&s);
        let writers = [spawn_write(&s), spawn_write(&s)];
        assert!(s.read() <= 2);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(s.read(), 2);
    });
}

/// A downgraded writer keeps the next writer out (no PASS after a
/// downgrade).
#[test]
fn loom_tests_downgrade_vs_writer() {
    loom::model(|| {
        let s = shared();
        let w = spawn_write(&s);
        let g = s.lock.lock_exclusive();
        // SAFETY: exclusive access under the lock.
        s.data.with_mut(|p| unsafe { *p += 10 });
        // SAFETY: our exclusive acquisition.
        let r = unsafe { s.lock.downgrade(g) };
        // SAFETY: shared access under the lock.
        let v = s.data.with(|p| unsafe { *p });
        assert!(v == 10 || v == 11);
        // SAFETY: our shared acquisition.
        unsafe { s.lock.unlock_shared(r) };
        w.join().unwrap();
        assert_eq!(s.read(), 11);
    });
}

/// Two registered readers and a writer: the writer's consensus covers
/// both (one may report the version, the other need the barrier).
#[test]
fn loom_tests_two_fast_readers_vs_writer() {
    loom::model(|| {
        let s = shared();
        let (ready_tx, ready_rx) = loom::sync::mpsc::channel();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (s, ready) = (s.clone(), ready_tx.clone());
                thread::spawn(move || {
                    // Register (no writer yet), then read concurrently.
                    assert_eq!(s.read(), 0);
                    ready.send(()).unwrap();
                    assert!(s.read() <= 1);
                })
            })
            .collect();
        ready_rx.recv().unwrap();
        ready_rx.recv().unwrap();
        s.write();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(s.read(), 1);
    });
}

/// One thread reads lock A, then lock B of the same domain through the
/// same slot, while a writer writes A: the writer that reads B's hold in
/// the slot must still be ordered after the read of A (the hold store is
/// Release, continuing the release of A's hold).
#[test]
fn loom_tests_slot_reused_for_another_lock_vs_writer() {
    loom::model(|| {
        let a = shared();
        let b = shared();
        register(&b);
        let w = spawn_write(&a);
        assert!(a.read() <= 1);
        let g = b.lock.lock_shared();
        w.join().unwrap();
        // SAFETY: our shared acquisition.
        unsafe { b.lock.unlock_shared(g) };
        assert_eq!(a.read(), 1);
    });
}

/// Write-heavy mode: the first writer switches the lock to active reading
/// before its barrier, the second finds the mode established, skips the
/// barrier and ends the mode; a registered reader meanwhile reads passively
/// or actively (an active read may end the mode itself, racing the second
/// writer's acquisition) and never overlaps either writer.
#[test]
fn loom_tests_write_heavy_mode_switch_and_back() {
    loom::model(|| {
        let s = Shared::new(PrwLock::for_model(ModelPolicy::SwitchAndExpire));
        register(&s);
        let w = {
            let s = s.clone();
            thread::spawn(move || {
                s.write();
                s.write();
            })
        };
        assert!(s.read() <= 2);
        w.join().unwrap();
        assert_eq!(s.read(), 2);
    });
}
