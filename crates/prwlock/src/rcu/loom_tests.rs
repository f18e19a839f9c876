//! loom models of FCP-RCU (`RUSTFLAGS="--cfg loom"`, bounded by
//! `LOOM_MAX_PREEMPTIONS`); barriers modelled as in `crate::loom_tests`
//! (both sides a SeqCst fence).
//!
//! The retired value is a loom `UnsafeCell` that the synchronizer writes
//! (poisons) after `synchronize` returns: a reader that still reads the old
//! value then is a causality violation; a lost wake-up of the sleeping
//! synchronizer is a deadlock.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use rwlock_core::sync::UnsafeCell;

use super::RcuDomain;

/// Two values behind an index: readers load the index inside a section and
/// read that value; the updater switches the index, synchronizes, then
/// poisons the old value.
struct Shared {
    current: AtomicUsize,
    values: [UnsafeCell<u64>; 2],
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            current: AtomicUsize::new(0),
            values: [UnsafeCell::new(10), UnsafeCell::new(20)],
        })
    }

    /// One read section: the value the index named must not be poisoned.
    fn read(&self, domain: &'static RcuDomain) {
        let _g = domain.read();
        // Acquire: pairs with the updater's Release switch.
        let i = self.current.load(Ordering::Acquire);
        // The model checks this read against the poisoning write.
        // SAFETY: a shared read of an initialized value.
        let v = self.values[i].with(|p| unsafe { *p });
        assert_ne!(v, 0, "a reader saw a retired value");
    }

    /// Switches to value 1, synchronizes, poisons value 0.
    fn update(&self, domain: &'static RcuDomain) {
        // Release: publishes value 1.
        self.current.store(1, Ordering::Release);
        domain.synchronize();
        // SAFETY: no reader may still read value 0 (the property checked).
        self.values[0].with_mut(|p| unsafe { *p = 0 });
    }
}

/// A registered reader (fast path) against an updater: the reader's
/// section began before or after the version bump (the model tries both),
/// and its release may find the synchronizer sleeping.
#[test]
fn loom_tests_rcu_fast_reader_vs_synchronize() {
    loom::model(|| {
        let domain = RcuDomain::global();
        let s = Shared::new();
        s.read(domain); // registers the main thread's record
        let u = {
            let s = s.clone();
            thread::spawn(move || s.update(domain))
        };
        thread::yield_now();
        s.read(domain);
        s.read(domain);
        u.join().unwrap();
    });
}

/// A reader's first section (registration, then the section) against an
/// updater, and two concurrent synchronizers that may share a round.
#[test]
fn loom_tests_rcu_first_reader_vs_two_synchronizers() {
    loom::model(|| {
        let domain = RcuDomain::global();
        let s = Shared::new();
        let r = {
            let s = s.clone();
            thread::spawn(move || s.read(domain))
        };
        let other = thread::spawn(move || domain.synchronize());
        thread::yield_now();
        s.update(domain);
        r.join().unwrap();
        other.join().unwrap();
    });
}
