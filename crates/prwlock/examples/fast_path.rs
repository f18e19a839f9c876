//! The read fast paths, out of line so that their machine code can be
//! read: `tests/fast_path_asm.rs` builds this example in release mode and
//! checks the disassembly of `prwlock_read_pair` and `rcu_read_pair` (an
//! `RcuCell` load plus one dereference) for `lock`-prefixed instructions
//! and fences. Run it to see what an uncontended pair costs here, beside
//! parking_lot's and beside the floor the issue names (a store, a compiler
//! fence, a load and a store: what any fence-free reader must do), each
//! round timing the three loops back to back:
//!
//! ```text
//! cargo run --release -p prwlock --example fast_path
//! objdump -d --no-show-raw-insn target/release/examples/fast_path | grep -A40 '<prwlock_read_pair>:'
//! ```

use std::hint::black_box;
use std::time::Instant;

use std::sync::atomic::{AtomicU64, Ordering, compiler_fence};

use lock_api::RawRwLock;
use prwlock::PrwLock;
use prwlock::rcu::RcuCell;

/// One read lock and unlock: the function the asm test reads.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn prwlock_read_pair(lock: &PrwLock) {
    let token = lock.lock_shared();
    // SAFETY: our own shared acquisition.
    unsafe { lock.unlock_shared(token) };
}

/// One `RcuCell` load and dereference: the RCU function the asm test reads.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn rcu_read_pair(cell: &RcuCell<u64>) -> u64 {
    *cell.load()
}

fn main() {
    let cell = RcuCell::from_pointee(7u64);
    // First use: registers this thread's record in the RCU domain.
    assert_eq!(rcu_read_pair(&cell), 7);
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
        static STATUS: AtomicU64 = AtomicU64::new(0);
        static WRITER: AtomicU64 = AtomicU64::new(0);
        let (status, writer) = (&STATUS, &WRITER);
        let start = Instant::now();
        for i in 0..u64::from(PAIRS) {
            // Relaxed and a compiler fence: the floor, not a lock.
            status.store(black_box(i), Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if black_box(writer.load(Ordering::Relaxed)) != 0 {
                break;
            }
            status.store(black_box(0), Ordering::Relaxed);
        }
        let floor = start.elapsed().as_secs_f64() * 1e9 / f64::from(PAIRS);
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..PAIRS {
            sum = sum.wrapping_add(*black_box(&cell).load());
        }
        black_box(sum);
        let rcu = start.elapsed().as_secs_f64() * 1e9 / f64::from(PAIRS);
        println!("rcu load + deref: {rcu:.2} ns");
        println!(
            "read pair: prwlock {prw:.2} ns, parking_lot {plt:.2} ns (ratio {:.3}); \
             store-fence-load-store floor {floor:.2} ns",
            prw / plt
        );
    }
}
