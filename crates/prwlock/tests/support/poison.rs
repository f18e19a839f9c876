//! A global allocator for the RCU tests: every freed block of 16 to 512
//! bytes is filled with `POISON` bytes and kept in a quarantine of the last
//! `QUARANTINE` frees before it really goes back, so a reader that touches a
//! value after its grace period reads poison (not a reused, valid-looking
//! block) for as long as any realistic race window lasts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The byte freed memory is filled with.
pub const POISON: u8 = 0xA5;
/// The word a poisoned `u64` reads as.
pub const POISON_WORD: u64 = u64::from_ne_bytes([POISON; 8]);
const QUARANTINE: usize = 1 << 14;

pub struct Poisoning;

struct Ring {
    blocks: [(usize, usize, usize); QUARANTINE],
    next: usize,
}

/// The quarantine behind a test-and-set lock of its own rather than
/// `std::sync::Mutex`: it never allocates (this is the allocator), and its
/// atomics are compiled into the test, so ThreadSanitizer (`scripts/tsan`)
/// sees it order the ring's accesses (std's mutex is precompiled and
/// invisible to it).
struct Quarantine {
    locked: AtomicBool,
    ring: UnsafeCell<Ring>,
}

// SAFETY: `ring` is only touched between `lock`'s Acquire swap and
// `unlock`'s Release store, so one thread at a time.
unsafe impl Sync for Quarantine {}

impl Quarantine {
    /// Runs `f` on the ring, alone.
    fn with<R>(&self, f: impl FnOnce(&mut Ring) -> R) -> R {
        // Acquire: pairs with the Release store below, so the previous
        // holder's ring writes are visible.
        while self.locked.swap(true, Ordering::Acquire) {
            std::thread::yield_now();
        }
        // SAFETY: the flag is ours until the store below.
        let r = f(unsafe { &mut *self.ring.get() });
        // Release: publishes this holder's ring writes to the next one.
        self.locked.store(false, Ordering::Release);
        r
    }
}

static RING: Quarantine = Quarantine {
    locked: AtomicBool::new(false),
    ring: UnsafeCell::new(Ring {
        blocks: [(0, 0, 0); QUARANTINE],
        next: 0,
    }),
};

// SAFETY: defers to the system allocator; a block is handed back to it
// exactly once, with the layout it was allocated with.
unsafe impl GlobalAlloc for Poisoning {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !(16..=512).contains(&layout.size()) {
            // SAFETY: the caller's contract, forwarded.
            unsafe { System.dealloc(ptr, layout) };
            return;
        }
        // SAFETY: the block is ours until we free it (caller's contract).
        unsafe { ptr.write_bytes(POISON, layout.size()) };
        let evicted = RING.with(|ring| {
            let i = ring.next;
            ring.next = (i + 1) % QUARANTINE;
            std::mem::replace(
                &mut ring.blocks[i],
                (ptr as usize, layout.size(), layout.align()),
            )
        });
        if evicted.0 != 0 {
            // SAFETY: a block we quarantined, with its own layout.
            unsafe {
                System.dealloc(
                    evicted.0 as *mut u8,
                    Layout::from_size_align_unchecked(evicted.1, evicted.2),
                )
            };
        }
    }
}
