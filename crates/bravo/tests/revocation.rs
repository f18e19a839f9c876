//! Writers revoking while readers stream, and how writers wait.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod support;
use bravo::{Bravo, Policy};
use lock_api::RawRwLock;

const WRITER: isize = isize::MIN / 2;

// The tests share the process's table; one asserts which path a read
// took, so they run one at a time.
use rwlock_core::testing::serial;

/// Readers loop on the fast path while writers revoke, over and over; the
/// occupancy word proves no writer is ever inside with anyone.
fn streaming<L: RawRwLock + Send + Sync + 'static, P: Policy>() -> usize {
    let lock = Arc::new(Bravo::<L, P>::new());
    let inside = Arc::new(AtomicIsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (lock, inside, stop, reads) =
                (lock.clone(), inside.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let g = lock.lock_shared();
                    assert!(
                        inside.fetch_add(1, Ordering::SeqCst) >= 0,
                        "reader beside writer"
                    );
                    std::hint::spin_loop();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    // SAFETY: our read.
                    unsafe { lock.unlock_shared(g) };
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut revocations = 0;
    for _ in 0..300 {
        std::thread::sleep(Duration::from_micros(300));
        if lock.is_biased() {
            revocations += 1;
        }
        let g = lock.lock_exclusive();
        assert!(!lock.is_biased(), "a writer is inside with the bias on");
        assert_eq!(
            inside.swap(WRITER, Ordering::SeqCst),
            0,
            "writer beside readers"
        );
        assert_eq!(inside.swap(0, Ordering::SeqCst), WRITER);
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(reads.load(Ordering::Relaxed) > 0);
    revocations
}

#[test]
fn readers_stream_while_writers_revoke() {
    let _serial = serial();
    let n = streaming::<parking_lot::RawRwLock, bravo::Listing1>();
    assert!(
        n > 0,
        "no write found the bias on: revocation never exercised"
    );
    let n = streaming::<parking_lot::RawRwLock, bravo::DefaultPolicy>();
    assert!(
        n > 0,
        "no write found the bias on: revocation never exercised"
    );
    let n = streaming::<rwlock_core::PfQueue, bravo::policy::Adaptive>();
    assert!(
        n > 0,
        "no write found the bias on: revocation never exercised"
    );
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_THREAD_CPUTIME_ID is always there on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A fast reader that sleeps 300 ms inside its critical section (blocked
/// or descheduled): the writer waits for it, enters as soon as it leaves,
/// and spends a small fraction of the wait on a CPU (it polls, then sleeps).
#[test]
fn writer_waits_for_a_blocked_reader_without_burning_a_core() {
    let _serial = serial();
    let lock = Arc::new(bravo::RawRwLock::new());
    support::bias(&*lock);
    let reader = support::FastReader::spawn(lock.clone(), Duration::from_millis(300));
    let cpu0 = thread_cpu_time();
    let g = lock.lock_exclusive();
    let entered = Instant::now();
    let cpu = thread_cpu_time() - cpu0;
    assert!(reader.has_left(), "writer entered beside the reader");
    // SAFETY: our write.
    unsafe { lock.unlock_exclusive(g) };
    let released = reader.join();
    let late = entered.saturating_duration_since(released);
    // Liveness bounds, generous for a loaded CI machine: the poll interval
    // is capped at 1 ms, and ~300 ms of waiting must not be spent spinning.
    assert!(
        late < Duration::from_millis(250),
        "writer entered {late:?} after the reader left"
    );
    assert!(
        cpu < Duration::from_millis(100),
        "writer burned {cpu:?} of CPU while waiting"
    );
}
