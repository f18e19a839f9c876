//! lock_api requires that forgetting a guard be safe. A reader count that
//! wraps after 2^24 forgotten read guards would then admit a writer beside a
//! live reader (found in review: `&mut T` aliasing `&T` from safe code). The
//! reader counters are 64 bits wide; this checks the old wrap point.

#![cfg(not(loom))]

use lock_api::RwLock;
use rwlock_core::{BrLock, PfQueue, PfTicket, Restricted, brlock};

fn forget_2_pow_24_readers<R: lock_api::RawRwLock>(lock: &RwLock<R, u64>) {
    let live = lock.read();
    for _ in 0..(1u32 << 24) - 1 {
        std::mem::forget(lock.read());
    }
    assert!(lock.is_locked());
    assert!(
        lock.try_write().is_none(),
        "a writer was admitted beside a live reader after 2^24 forgotten read guards"
    );
    assert_eq!(*live, 0);
}

#[test]
fn pf_ticket_reader_count_does_not_wrap() {
    forget_2_pow_24_readers(&RwLock::<PfTicket, u64>::new(0));
}

#[test]
fn pf_queue_reader_count_does_not_wrap() {
    forget_2_pow_24_readers(&RwLock::<PfQueue, u64>::new(0));
}

#[test]
fn brlock_reader_count_does_not_wrap() {
    forget_2_pow_24_readers(&RwLock::<BrLock, u64>::from_raw(
        Restricted::new(brlock::BrLock::with_sub_locks(1)),
        0,
    ));
}
