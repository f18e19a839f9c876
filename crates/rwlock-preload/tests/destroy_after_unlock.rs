//! POSIX destroy safety through the shim: thread B acquires a lock that
//! thread A is releasing, releases it, destroys it and frees its memory
//! while A may still be inside `pthread_rwlock_unlock`. The memory must not
//! be written after it is freed: this test's allocator fills freed blocks
//! with a poison byte and never reuses them, and the test checks that every
//! freed block still holds only poison at the end.
//!
//! Found in review (2026-11-27): a cohort release wrote the freed node
//! array (offset 8, node 0's ticket grant), 2 runs in 3 at 300 rounds,
//! with the lock on two nodes (A on CPU 0 = node 0, B on CPU 1 = node 1).
//! The cohort release now frees the global lock last, and `destroy` waits
//! for releases under way (`releasing`).

#![cfg(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    target_pointer_width = "64"
))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rwlock_core::topology::{Topology, current_node, refresh_current_cpu};
use rwlock_preload::shim::PreloadLock;
use rwlock_preload::{families, release_records, shim};

const POISON: u8 = 0xA5;

/// Poisons and keeps (never frees) blocks of 128 bytes or more freed while
/// `QUARANTINE` is on.
struct Quarantine;

static QUARANTINE: AtomicBool = AtomicBool::new(false);
static IN_DEALLOC: AtomicBool = AtomicBool::new(false);
static KEPT: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

// SAFETY: forwards to the system allocator, except that it may keep a
// freed block forever (never handing it out again).
unsafe impl GlobalAlloc for Quarantine {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if QUARANTINE.load(Ordering::Relaxed)
            && layout.size() >= 128
            && !IN_DEALLOC.swap(true, Ordering::Acquire)
        {
            // SAFETY: the block is the caller's to give up, `size` bytes.
            unsafe { std::ptr::write_bytes(p, POISON, layout.size()) };
            KEPT.lock().unwrap().push((p as usize, layout.size()));
            IN_DEALLOC.store(false, Ordering::Release);
            return;
        }
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Quarantine = Quarantine;

fn pin(cpu: usize) {
    rwlock_core::testing::pin_to(cpu);
    refresh_current_cpu();
}

/// Blocks written after they were freed (the first bytes that differ).
fn written_after_free() -> Vec<String> {
    KEPT.lock()
        .unwrap()
        .iter()
        .filter_map(|&(p, n)| {
            // SAFETY: kept blocks are never handed out again.
            let b = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
            let at = b.iter().position(|&x| x != POISON)?;
            Some(format!(
                "{p:#x} ({n} bytes) at offset {at}: {:02x?}",
                &b[at..(at + 8).min(n)]
            ))
        })
        .collect()
}

fn rounds<L: PreloadLock>(rounds: usize) {
    for _ in 0..rounds {
        // SAFETY: an all-zero `pthread_rwlock_t` is an initialiser's result.
        let rw = Box::into_raw(Box::new(unsafe {
            std::mem::zeroed::<libc::pthread_rwlock_t>()
        }));
        // SAFETY: a fresh lock.
        assert_eq!(unsafe { shim::init::<L>(rw, 0) }, 0);
        let at = rw as usize;
        let (held, go) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let a = s.spawn(move || {
                pin(0);
                let rw = at as *mut libc::pthread_rwlock_t;
                // The lock lives until B destroys it, after this thread's
                // unlock began (which B's destroy waits for).
                // SAFETY: so `rw` is a live lock for these calls.
                unsafe {
                    assert_eq!(shim::write::<L>(rw, shim::Wait::Block), 0);
                    held.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(1));
                    assert_eq!(shim::unlock::<L>(rw), 0);
                }
            });
            let b = s.spawn(move || {
                pin(1);
                let rw = at as *mut libc::pthread_rwlock_t;
                go.recv().unwrap();
                // SAFETY: as above; this thread destroys and frees last.
                unsafe {
                    assert_eq!(shim::write::<L>(rw, shim::Wait::Block), 0);
                    assert_eq!(shim::unlock::<L>(rw), 0);
                    assert_eq!(shim::destroy::<L>(rw), 0);
                    drop(Box::from_raw(rw));
                }
            });
            // Joined explicitly: a join waits for the thread's exit, after
            // its thread-local destructors have handed its release record
            // back, where the scope's own wait ends before them (and the
            // next round's threads would then claim fresh records).
            a.join().unwrap();
            b.join().unwrap();
        });
    }
}

#[test]
fn a_lock_destroyed_while_its_releaser_is_still_inside_unlock_is_not_written() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("skipped: needs 2 CPUs (CPU 0 on node 0, CPU 1 on node 1)");
        return;
    }
    Topology::init_global(Topology::parse("nodes=2").unwrap()).unwrap();
    pin(0);
    assert_eq!(current_node(), 0);
    pin(1);
    assert_eq!(current_node(), 1);
    QUARANTINE.store(true, Ordering::Relaxed);
    rounds::<families::CohortWp>(300);
    rounds::<families::CohortRp>(300);
    rounds::<families::CohortNp>(300);
    rounds::<families::Pfq>(100);
    rounds::<families::Bravo>(100);
    QUARANTINE.store(false, Ordering::Relaxed);
    let bad = written_after_free();
    assert!(bad.is_empty(), "freed lock memory written: {bad:#?}");
    // One record per thread alive at once: the exited threads' are reused.
    assert!(
        release_records() <= 8,
        "{} release records for 2 threads at a time",
        release_records()
    );
}
