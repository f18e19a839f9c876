//! The fallback for processes where `membarrier` is refused: forced here
//! (before any lock is used) and then run through the same checks. Its own
//! test binary, because the mode is chosen once per process.

use lock_api::RawRwLock;
use prwlock::rcu::RcuDomain;
use prwlock::{BarrierMode, PrwLock, ReadGuardExt};
use rwlock_core::testing;

#[path = "support/poison.rs"]
mod poison;
#[path = "support/rcu_stress.rs"]
mod rcu_stress;

#[global_allocator]
static ALLOC: poison::Poisoning = poison::Poisoning;

fn fence_mode() {
    prwlock::force_fence_mode().expect("no lock was used before");
    assert_eq!(prwlock::barrier_mode(), BarrierMode::Fence);
}

#[test]
fn semantics_in_fence_mode() {
    fence_mode();
    let lock = PrwLock::new();
    testing::check_try_lock(&lock);
    testing::check_downgrade(&lock);
    testing::check_panic_releases(&prwlock::RwLock::new(0u64));
    let token = lock.lock_shared();
    assert!(
        token.is_passive(),
        "fence mode still uses the status records"
    );
    // SAFETY: our shared acquisition.
    unsafe { lock.unlock_shared(token) };
}

#[test]
fn stress_in_fence_mode() {
    fence_mode();
    let lock = PrwLock::new();
    testing::stress_1_2_8_and_downgrade(&lock);
}

#[test]
fn schedule_out_in_fence_mode() {
    fence_mode();
    let lock = std::sync::Arc::new(prwlock::RwLock::new(1u32));
    let guard = lock.read();
    assert_eq!(guard.schedule_out(), 1);
    let l2 = lock.clone();
    let writer = std::thread::spawn(move || *l2.write() += 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(!writer.is_finished());
    drop(guard);
    writer.join().unwrap();
    assert_eq!(*lock.read(), 2);
}

/// FCP-RCU in Fence mode: readers fence, the release's slow path runs
/// (the domain's sticky flag), and no reader sees a retired value.
#[test]
fn rcu_stress_in_fence_mode() {
    fence_mode();
    static D: RcuDomain = RcuDomain::new();
    for readers in [1, 2, 8, 64] {
        rcu_stress::stress(&D, readers, 2, if readers > 8 { 100 } else { 400 }).check(readers);
    }
    assert!(D.stats().rounds > 0);
    assert_eq!(D.barrier_mode(), BarrierMode::Fence);
}

/// `PRWLOCK_FORCE_FENCE=1` selects the fallback without code: this test
/// runs the binary again with it, on `env_child` alone.
#[test]
fn environment_variable_selects_fence_mode() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "env_child", "--nocapture"])
        .env("PRWLOCK_FORCE_FENCE", "1")
        .env("PRWLOCK_ENV_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
fn env_child() {
    if std::env::var_os("PRWLOCK_ENV_CHILD").is_none() {
        return;
    }
    let lock = prwlock::RwLock::new(5);
    assert_eq!(*lock.read(), 5);
    assert_eq!(prwlock::barrier_mode(), BarrierMode::Fence);
}
