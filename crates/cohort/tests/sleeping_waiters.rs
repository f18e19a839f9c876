//! Waiters sleep behind a long critical section: the next ticket in line
//! yields for a while and then parks, instead of yielding for as long as
//! the holder keeps the lock (a write guard held across I/O, a writer
//! waiting for a slow reader). Measured as the process's CPU time while a
//! holder sleeps for `HOLD`: with every waiter yielding, the waiters alone
//! would burn about one core for the whole hold.
//!
//! Its own test binary: no other test may use CPU meanwhile.

use std::time::Duration;

use lock_api::RawRwLock;

const HOLD: Duration = Duration::from_millis(600);

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut u), 0);
        u
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs `hold` (which keeps the lock for `HOLD`) beside `waiters` threads
/// that each run `wait`; returns the CPU time the process used.
fn cpu_while(hold: impl FnOnce() + Send, waiters: usize, wait: impl Fn() + Sync) -> Duration {
    let before = cpu_time();
    std::thread::scope(|s| {
        s.spawn(hold);
        std::thread::sleep(Duration::from_millis(20));
        for _ in 0..waiters {
            s.spawn(&wait);
        }
    });
    cpu_time() - before
}

fn assert_mostly_asleep(what: &str, cpu: Duration) {
    eprintln!("{what}: {cpu:?} of CPU while the holder slept {HOLD:?}");
    assert!(
        cpu < HOLD / 3,
        "{what}: waiters burned {cpu:?} of CPU behind a {HOLD:?} critical section"
    );
}

#[test]
fn waiters_sleep_behind_long_critical_sections() {
    // Cohort mutex: three waiters on the holder's node, one on another.
    let m = cohort::CPtlTkt::with_config(2, 64);
    let cpu = cpu_while(
        || {
            let g = m.lock_on(0);
            std::thread::sleep(HOLD);
            // SAFETY: our own acquisition.
            unsafe { m.unlock_token(g) };
        },
        4,
        || {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let node = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2;
            let g = m.lock_on(node);
            // SAFETY: our own acquisition.
            unsafe { m.unlock_token(g) };
        },
    );
    assert_mostly_asleep("cohort mutex", cpu);
    assert!(!m.is_locked());

    // C-RW-WP: a reader holds; writers queue on the cohort (the first one
    // holds it while it waits for the reader).
    let l = cohort::CRwWp::with_nodes(2);
    let cpu = cpu_while(
        || {
            let r = l.lock_shared_on(0);
            std::thread::sleep(HOLD);
            // SAFETY: our own acquisition.
            unsafe { l.unlock_shared(r) };
        },
        3,
        || {
            let w = l.lock_exclusive_on(0);
            // SAFETY: our own acquisition.
            unsafe { l.unlock_exclusive(w) };
        },
    );
    assert_mostly_asleep("C-RW-WP writers behind a reader", cpu);

    // C-RW-RP-opt: the first writer keeps the mutex through its drain loop.
    let l = cohort::CRwRpOpt::with_nodes(2);
    let cpu = cpu_while(
        || {
            let r = l.lock_shared_on(1);
            std::thread::sleep(HOLD);
            // SAFETY: our own acquisition.
            unsafe { l.unlock_shared(r) };
        },
        3,
        || {
            let w = l.lock_exclusive_on(0);
            // SAFETY: our own acquisition.
            unsafe { l.unlock_exclusive(w) };
        },
    );
    assert_mostly_asleep("C-RW-RP-opt writers behind a reader", cpu);
}
