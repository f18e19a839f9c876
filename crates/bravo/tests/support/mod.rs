//! Helpers shared by the unit tests (`src/raw.rs` includes this file with
//! `#[path]`) and the integration tests of this crate. Public API only.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// From the including module: `bravo::{Bravo, Policy}` in the integration
// tests, `crate::{Bravo, Policy}` in the unit tests.
use super::{Bravo, Policy};
use lock_api::RawRwLock;

/// Biases `lock` through slow reads, once the inhibit window of the last
/// revocation has passed (readers consult the clock on one slow read in
/// 16, so this may take a few reads).
pub fn bias<L: RawRwLock, P: Policy>(lock: &Bravo<L, P>) {
    for _ in 0..1000 {
        let g = lock.lock_shared();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        if lock.is_biased() {
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    panic!("slow reads never enabled the bias");
}

/// A thread that takes a fast-path read, holds it for `hold`, releases it.
pub struct FastReader {
    inside: Arc<AtomicBool>,
    left: Arc<AtomicBool>,
    handle: JoinHandle<Instant>,
}

impl FastReader {
    /// Spawns the reader and returns once it is inside (on the fast path).
    pub fn spawn<L, P>(lock: Arc<Bravo<L, P>>, hold: Duration) -> FastReader
    where
        L: RawRwLock + Send + Sync + 'static,
        P: Policy,
    {
        let (inside, left) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let handle = {
            let (inside, left) = (inside.clone(), left.clone());
            std::thread::spawn(move || {
                let g = lock.lock_shared();
                assert!(
                    g.is_fast(),
                    "the reader of a biased lock takes the fast path"
                );
                inside.store(true, Ordering::SeqCst);
                std::thread::sleep(hold);
                left.store(true, Ordering::SeqCst);
                // SAFETY: our read.
                unsafe { lock.unlock_shared(g) };
                Instant::now()
            })
        };
        while !inside.load(Ordering::SeqCst) {
            assert!(!handle.is_finished(), "the reader failed before entering");
            std::thread::yield_now();
        }
        FastReader {
            inside,
            left,
            handle,
        }
    }

    /// Whether the reader has released its read.
    pub fn has_left(&self) -> bool {
        self.left.load(Ordering::SeqCst)
    }

    /// Joins the reader; returns when it released.
    pub fn join(self) -> Instant {
        self.handle.join().expect("reader thread")
    }
}
