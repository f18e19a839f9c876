//! A gate engages on its own lock's deep waits only.

use lock_api::{RawMutex, RawRwLock};

/// A reader's deep wait on a C-RW-WP lock (a writer holds it for 50 ms)
/// does not engage the gate of an unrelated mutex that the same thread
/// then takes without waiting (found in review: it did).
#[test]
fn a_deep_wait_elsewhere_does_not_engage_an_unrelated_gate() {
    let rw = cohort::CRwWp::new();
    let mutex = cohort::RestrictedCPtlTkt::new(cohort::CPtlTkt::new());
    let w = rw.lock_exclusive();
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let r = rw.lock_shared();
            // SAFETY: the shared acquisition above.
            unsafe { rw.unlock_shared(r) };
            assert!(!mutex.is_engaged());
            let g = mutex.lock();
            // SAFETY: the acquisition above.
            unsafe { mutex.unlock(g) };
            mutex.is_engaged()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        // SAFETY: the exclusive acquisition above.
        unsafe { rw.unlock_exclusive(w) };
        assert!(
            !reader.join().unwrap(),
            "an uncontended lock of an unrelated mutex engaged its gate"
        );
    });
}
