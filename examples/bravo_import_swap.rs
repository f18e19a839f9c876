//! Story 3: code written for `parking_lot::RwLock`, moved to BRAVO by
//! changing one `use` line. Everything below is parking_lot 0.13's API:
//! a `static` lock, upgradable reads, mapped guards, timed and fair
//! operations.
//!
//! `cargo run --release --example bravo_import_swap`

use std::time::Duration;

// Was: use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard};
use bravo::{MappedRwLockReadGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard};

struct Config {
    name: String,
    limits: Vec<u32>,
}

static CONFIG: RwLock<Option<Config>> = RwLock::new(None);

/// Initialise once, race-free: check under an upgradable read, upgrade only
/// if needed.
fn config() -> MappedRwLockReadGuard<'static, Config> {
    let guard = CONFIG.upgradable_read();
    let guard = if guard.is_none() {
        let mut w = RwLockUpgradableReadGuard::upgrade(guard);
        *w = Some(Config {
            name: "default".into(),
            limits: vec![10, 20, 30],
        });
        lock_api::RwLockWriteGuard::downgrade(w)
    } else {
        RwLockUpgradableReadGuard::downgrade(guard)
    };
    RwLockReadGuard::map(guard, |c| c.as_ref().expect("initialised above"))
}

fn main() {
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let mut sum = 0u64;
                for _ in 0..50_000 {
                    let c = config();
                    sum += c.limits.iter().map(|&l| l as u64).sum::<u64>();
                    assert_eq!(c.name, "default");
                }
                sum
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 50_000 * 60);
    }
    if let Some(mut w) = CONFIG.try_write_for(Duration::from_millis(100)) {
        w.as_mut().unwrap().limits.push(40);
    }
    let c = config();
    println!("config {:?} with limits {:?}", c.name, c.limits);
    assert_eq!(c.limits.len(), 4);
    drop(c);
    // Fair unlocking hands the lock to a waiting writer first.
    RwLockReadGuard::unlock_fair(CONFIG.read());
}
