//! What the prwlock integration tests share (each test file uses part of it).
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

/// A liveness bound, far above any expected time (not a performance check):
/// 10 s, or `PRWLOCK_TEST_LIVENESS_S` seconds (scripts/vm-test gives 60,
/// where qemu's TCG runs the oversubscribed tests 10 to 20 times slower).
pub fn liveness() -> Duration {
    match std::env::var("PRWLOCK_TEST_LIVENESS_S") {
        Err(_) => Duration::from_secs(10),
        Ok(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 => Duration::from_secs(n),
            _ => panic!("PRWLOCK_TEST_LIVENESS_S={s:?}: expected a positive number of seconds"),
        },
    }
}

/// Runs `f` on a thread of its own and fails if it has not finished within
/// [`liveness`] (a watchdog: a hang fails the test instead of stalling it).
pub fn within_liveness<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let bound = liveness();
    match rx.recv_timeout(bound) {
        Ok(v) => {
            worker.join().unwrap();
            v
        }
        Err(_) => panic!("{what}: no progress within {bound:?}"),
    }
}

/// The barrier mode this run expects: `PRWLOCK_EXPECT_MODE` (`kernel-helper`,
/// `membarrier` or `fence`, as scripts/vm-test sets it for each of its
/// runs), `membarrier` when unset (the development and CI machines allow
/// it and have no kernel helper loaded).
pub fn expected_mode() -> prwlock::BarrierMode {
    match std::env::var("PRWLOCK_EXPECT_MODE").as_deref() {
        Err(std::env::VarError::NotPresent) | Ok("membarrier") => prwlock::BarrierMode::Membarrier,
        Ok("kernel-helper") => prwlock::BarrierMode::KernelHelper,
        Ok("fence") => prwlock::BarrierMode::Fence,
        other => {
            panic!("PRWLOCK_EXPECT_MODE={other:?}: expected kernel-helper, membarrier or fence")
        }
    }
}

/// CPU time the calling thread has used.
pub fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD on the calling thread, valid pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
