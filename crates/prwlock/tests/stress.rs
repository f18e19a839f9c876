//! lock_api semantics and the shared stress harness (no writer beside
//! anybody, the zero-sum array) at 1, 2 and 8 threads, in the global domain
//! and in a domain of its own, with downgrades, nested reads past the
//! passive slots, and oversubscription.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lock_api::{RawRwLock, RawRwLockDowngrade};
use prwlock::{BarrierMode, Domain, PASSIVE_SLOTS, PrwLock};
use rwlock_core::testing::{self, StressConfig};

mod support;

#[test]
fn runs_in_the_expected_mode() {
    // The development and CI machines allow membarrier; the fallback has a
    // test binary of its own (fence_mode.rs), and scripts/vm-test runs this
    // file in every mode (PRWLOCK_EXPECT_MODE).
    assert_eq!(prwlock::barrier_mode(), support::expected_mode());
}

#[test]
fn lock_api_semantics() {
    let lock = PrwLock::new();
    testing::check_try_lock(&lock);
    testing::check_downgrade(&lock);
    testing::check_panic_releases(&prwlock::RwLock::new(0u64));
    static D: Domain = Domain::new();
    let lock = PrwLock::in_domain(&D);
    testing::check_try_lock(&lock);
    testing::check_downgrade(&lock);
}

#[test]
fn stress_global_domain() {
    let lock = PrwLock::new();
    let start = Instant::now();
    testing::stress_1_2_8_and_downgrade(&lock);
    eprintln!("stress 1/2/8 + downgrade at 8: {:.2?}", start.elapsed());
}

#[test]
fn stress_own_domain_read_mostly_oversubscribed() {
    static D: Domain = Domain::new();
    let lock = PrwLock::in_domain(&D);
    let mut cfg = StressConfig::new(16);
    cfg.write_percent = 2;
    cfg.ops_per_thread = 10_000;
    let report = testing::stress(&lock, &cfg);
    assert!(report.writes > 0 && report.reads > 0);
    let stats = D.stats();
    assert!(stats.records >= 1 && stats.records <= 17, "{stats:?}");
}

/// The harness at 1, 2, 8 and 64 threads with 30% writes in a domain of
/// its own: at 64 threads on a small machine the writes come close enough
/// for the write-heavy mode (`prwlock::policy`), so the run crosses between
/// passive and active reading under load; then the same with the mode off
/// (the paper's lock alone).
#[test]
fn stress_write_heavy_mode_at_1_2_8_and_64_threads() {
    static D: Domain = Domain::new();
    static PAPER: Domain = Domain::new();
    PAPER.set_write_heavy_mode(false);
    for (domain, threads) in [(&D, [1, 2, 8, 64]), (&PAPER, [1, 2, 8, 64])] {
        let lock = PrwLock::in_domain(domain);
        for threads in threads {
            let mut cfg = StressConfig::new(threads);
            cfg.write_percent = 30;
            cfg.ops_per_thread = if threads == 64 { 2_000 } else { 10_000 };
            let report = testing::stress(&lock, &cfg);
            assert!(report.writes > 0 && report.reads > 0);
            assert!(!lock.is_locked());
        }
    }
    let (d, paper) = (D.stats(), PAPER.stats());
    eprintln!("write-heavy mode allowed: {d:?}\nthe paper's lock: {paper:?}");
    assert_eq!(paper.active_mode_entries, 0);
    if prwlock::barrier_mode() == BarrierMode::Membarrier {
        assert!(d.active_mode_entries >= 1, "the mode never engaged: {d:?}");
    }
}

#[test]
fn nested_reads_beyond_the_passive_slots_use_the_active_count() {
    let locks: Vec<PrwLock> = (0..PASSIVE_SLOTS + 3).map(|_| PrwLock::new()).collect();
    let tokens: Vec<_> = locks.iter().map(|l| l.lock_shared()).collect();
    let passive = tokens.iter().filter(|t| t.is_passive()).count();
    assert_eq!(passive, PASSIVE_SLOTS);
    for (lock, token) in locks.iter().zip(&tokens) {
        assert!(lock.is_locked() && lock.try_lock_exclusive().is_none());
        assert_eq!(lock.active_readers(), usize::from(!token.is_passive()));
    }
    for (lock, token) in locks.iter().zip(tokens) {
        // SAFETY: our shared acquisitions.
        unsafe { lock.unlock_shared(token) };
        assert!(!lock.is_locked());
        let w = lock.try_lock_exclusive().expect("free after the read");
        // SAFETY: our exclusive acquisition.
        unsafe { lock.unlock_exclusive(w) };
    }
}

#[test]
fn the_same_lock_read_twice_by_one_thread() {
    let lock = PrwLock::new();
    let a = lock.lock_shared();
    let b = lock.lock_shared();
    // SAFETY: our shared acquisitions, released out of order.
    unsafe { lock.unlock_shared(a) };
    assert!(lock.is_locked() && lock.try_lock_exclusive().is_none());
    // SAFETY: as above.
    unsafe { lock.unlock_shared(b) };
    assert!(!lock.is_locked());
}

#[test]
#[should_panic(expected = "holds a read lock on it")]
fn write_inside_own_read_section_panics_instead_of_deadlocking() {
    let lock = PrwLock::new();
    let _r = lock.lock_shared();
    let _w = lock.lock_exclusive();
}

#[test]
fn readers_and_writers_across_two_domains() {
    static A: Domain = Domain::new();
    static B: Domain = Domain::new();
    let locks = Arc::new([
        PrwLock::in_domain(&A),
        PrwLock::in_domain(&B),
        PrwLock::new(),
    ]);
    let inside = Arc::new([
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ]);
    let stop = Arc::new(AtomicBool::new(false));
    // Stops the readers however the test ends: a failed assertion must not
    // leave them spinning beside the binary's other tests.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop_on_drop = StopOnDrop(stop.clone());
    // Readers that have completed a read. The writes start only once every
    // reader has: on a loaded machine all 3000 writes could otherwise finish
    // before any reader is scheduled, and nothing would run beside them.
    let readers_running = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|t| {
            let (locks, inside, stop) = (locks.clone(), inside.clone(), stop.clone());
            let readers_running = readers_running.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Nest reads across domains in a thread-dependent order.
                    let order = [(t) % 3, (t + 1) % 3];
                    let g0 = locks[order[0]].lock_shared();
                    inside[order[0]].fetch_add(1, Ordering::SeqCst);
                    let g1 = locks[order[1]].lock_shared();
                    inside[order[1]].fetch_add(1, Ordering::SeqCst);
                    inside[order[1]].fetch_sub(1, Ordering::SeqCst);
                    // SAFETY: our shared acquisitions.
                    unsafe { locks[order[1]].unlock_shared(g1) };
                    inside[order[0]].fetch_sub(1, Ordering::SeqCst);
                    // SAFETY: as above.
                    unsafe { locks[order[0]].unlock_shared(g0) };
                    n += 1;
                    if n == 1 {
                        // Relaxed: a progress count, only read to start the writes.
                        readers_running.fetch_add(1, Ordering::Relaxed);
                    }
                }
                n
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Relaxed: as the readers' increments.
    while readers_running.load(Ordering::Relaxed) < 4 {
        assert!(
            Instant::now() < deadline,
            "only {} of 4 readers read within 60 s",
            readers_running.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..3000 {
        let l = i % 3;
        let w = locks[l].lock_exclusive();
        assert_eq!(inside[l].load(Ordering::SeqCst), 0, "reader beside writer");
        // SAFETY: our exclusive acquisition.
        unsafe { locks[l].unlock_exclusive(w) };
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(reads >= 4, "{reads} reads");
    // Every write ran a consensus round of its own domain, or went without
    // one in write-heavy mode (prwlock::policy), which a round began.
    for d in [&A, &B] {
        let stats = d.stats();
        assert!(
            stats.version >= 1000 || (stats.version >= 1 && stats.active_mode_entries >= 1),
            "{stats:?}"
        );
    }
}

#[test]
fn downgrade_keeps_the_next_writer_out() {
    let lock = Arc::new(PrwLock::new());
    let w = lock.lock_exclusive();
    // SAFETY: our exclusive acquisition.
    let r = unsafe { lock.downgrade(w) };
    let l2 = lock.clone();
    let writer = std::thread::spawn(move || {
        let w = l2.lock_exclusive();
        // SAFETY: our exclusive acquisition.
        unsafe { l2.unlock_exclusive(w) };
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !writer.is_finished(),
        "writer entered beside a downgraded reader"
    );
    // SAFETY: our shared acquisition.
    unsafe { lock.unlock_shared(r) };
    writer.join().unwrap();
}

#[test]
fn footprint() {
    // The README's figures: 64 bytes of the paper's lock and its gate, 20
    // of write-heavy-mode policy (prwlock::policy), padded to 88.
    assert_eq!(std::mem::size_of::<PrwLock>(), 88);
    assert_eq!(std::mem::size_of::<prwlock::ReadToken>(), 8);
}

#[test]
fn force_fence_mode_is_refused_once_another_mode_runs() {
    if prwlock::barrier_mode() == BarrierMode::Fence {
        assert_eq!(prwlock::force_fence_mode(), Ok(()));
    } else {
        assert_eq!(prwlock::force_fence_mode(), Err(prwlock::ModeAlreadyChosen));
    }
}
