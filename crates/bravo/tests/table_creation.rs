//! The table's creation against a slow reader that wants to set a bias
//! (`table::ensure`, called holding `L` for reading). The creation
//! allocates, and a program's allocator may take a `Bravo` lock for
//! writing (through the LD_PRELOAD shim): a reader that waited for
//! another thread's creation (in `OnceLock::get_or_init`) while holding
//! that lock's read permission deadlocked with it (found in review,
//! 2026-11-28; the fix of 2026-11-27 covered only the same thread's
//! re-entry). Now `ensure` never waits for a creation under way.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The lock the "allocator" takes for writing.
static M: bravo::RwLock<u32> = bravo::RwLock::new(0);
/// Another lock, whose first slow read creates the table.
static M2: bravo::RwLock<u32> = bravo::RwLock::new(0);

static CREATOR_IN_ALLOC: AtomicBool = AtomicBool::new(false);
static READER_GOING: AtomicBool = AtomicBool::new(false);

std::thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

struct Hook;

// SAFETY: forwards to `System`.
unsafe impl GlobalAlloc for Hook {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The table's block array: 128-byte aligned (CachePadded).
        if layout.align() == 128 && ARMED.with(|a| a.replace(false)) {
            CREATOR_IN_ALLOC.store(true, Ordering::SeqCst);
            while !READER_GOING.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            // Let the reader reach `ensure`.
            std::thread::sleep(Duration::from_millis(200));
            // The allocator's own lock, for writing.
            *M.write() += 1;
        }
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Hook = Hook;

#[test]
fn a_slow_reader_does_not_wait_for_another_threads_table_creation() {
    let (tx, rx) = std::sync::mpsc::channel();
    let creator = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            ARMED.with(|a| a.set(true));
            // First slow read in a fresh thread: consults the clock, sets
            // the bias, creates the table first.
            drop(M2.read());
            tx.send("creator").unwrap();
        })
    };
    let reader = std::thread::spawn(move || {
        while !CREATOR_IN_ALLOC.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        READER_GOING.store(true, Ordering::SeqCst);
        // Fresh thread: a slow read of M that wants to set the bias and
        // finds the table being created by the other thread.
        drop(M.read());
        tx.send("reader").unwrap();
    });
    let mut done = Vec::new();
    for _ in 0..2 {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(who) => done.push(who),
            Err(_) => panic!(
                "deadlock: finished only {done:?} after 10 s (creator reached the \
                 table allocation: {}, reader started: {})",
                CREATOR_IN_ALLOC.load(Ordering::SeqCst),
                READER_GOING.load(Ordering::SeqCst)
            ),
        }
    }
    creator.join().unwrap();
    reader.join().unwrap();
}
