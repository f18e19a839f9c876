//! Targets (a) and (b) on prwlock in its fence mode
//! ([`prwlock::BarrierMode::Fence`], the process-wide fallback when
//! `membarrier` is refused: readers run a real `fence(SeqCst)` and take the
//! slow paths written for that mode). The mode is chosen once per process,
//! so this is a target (and a replay test) of its own; the `lock_ops` and
//! `threads` targets run prwlock in the default mode, `membarrier` where
//! the kernel allows it (the kernel-helper mode needs a module loaded).
//!
//! Input: a byte whose low bit chooses [`crate::lock_ops`] (0) or
//! [`crate::threads`] (1), then that target's input without its lock
//! selector.

use crate::Bytes;
use crate::{lock_ops, threads};

/// Runs one input (panics on a broken promise). Panics if this process's
/// prwlocks already run in another mode.
pub fn run(data: &[u8]) {
    prwlock::force_fence_mode()
        .expect("prwlock_fence needs a process of its own: prwlock's mode is already chosen");
    assert_eq!(prwlock::barrier_mode(), prwlock::BarrierMode::Fence);
    let mut bytes = Bytes::new(data);
    if bytes.byte() & 1 == 0 {
        lock_ops::run_on::<prwlock::PrwLock>(bytes.rest());
    } else {
        threads::run_on::<prwlock::PrwLock>(bytes.rest());
    }
}
