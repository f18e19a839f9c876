//! The read fast path, out of line so that its machine code can be read:
//! `tests/fast_path_asm.rs` builds this example in release mode and checks
//! the disassembly of `prwlock_read_pair` for `lock`-prefixed instructions
//! and fences. Run it to see what an uncontended pair costs here:
//!
//! ```text
//! cargo run --release -p prwlock --example fast_path
//! objdump -d --no-show-raw-insn target/release/examples/fast_path | grep -A40 '<prwlock_read_pair>:'
//! ```

use std::time::Instant;

use lock_api::RawRwLock;
use prwlock::PrwLock;

/// One read lock and unlock: the function the asm test reads.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn prwlock_read_pair(lock: &PrwLock) {
    let token = lock.lock_shared();
    // SAFETY: our own shared acquisition.
    unsafe { lock.unlock_shared(token) };
}

fn main() {
    let lock = PrwLock::new();
    // First use: registers this thread's record and assigns the lock's id.
    prwlock_read_pair(&lock);
    let pl = <parking_lot::RawRwLock as RawRwLock>::INIT;
    const PAIRS: u32 = 20_000_000;
    for _ in 0..6 {
        let start = Instant::now();
        for _ in 0..PAIRS {
            let token = lock.lock_shared();
            // SAFETY: our own shared acquisition.
            unsafe { lock.unlock_shared(token) };
        }
        let prw = start.elapsed().as_secs_f64() * 1e9 / f64::from(PAIRS);
        let start = Instant::now();
        for _ in 0..PAIRS {
            let guard = pl.lock_shared();
            // SAFETY: our own shared acquisition.
            unsafe { pl.unlock_shared(guard) };
        }
        let plt = start.elapsed().as_secs_f64() * 1e9 / f64::from(PAIRS);
        println!(
            "read pair: prwlock {prw:.2} ns, parking_lot {plt:.2} ns (ratio {:.3})",
            prw / plt
        );
    }
}
