//! A cheap per-thread identity, unique among live threads, for hashing.
//!
//! The identity is the address of a one-byte thread-local: no registration, no
//! global counter, nothing to clean up at thread exit, and one TLS address
//! computation per call (a `mov %fs:...` plus an add on x86-64 Linux). Two
//! threads alive at the same time never share it; a thread that starts after
//! another exited may get the exited thread's value, which is fine for the
//! purpose (hashing a reader into a table: the paper hashes `pthread_self`).
//! It is never 0.

use crate::sync::thread_local;

#[cfg(not(loom))]
thread_local! {
    static ANCHOR: u8 = const { 0 };
}

// loom's `thread_local!` has no `const` initialiser form.
#[cfg(loom)]
thread_local! {
    static ANCHOR: u8 = 0;
}

/// The calling thread's identity: non-zero, unique among live threads.
#[inline]
pub fn current() -> usize {
    ANCHOR.with(|a| a as *const u8 as usize)
}

/// Mix32-style finaliser of (a, b): a fast hash with good avalanche, used to
/// spread (lock address, thread identity) pairs over a table.
///
/// It is Murmur3's 64-bit finaliser (`fmix64`) over `a ^ rotate(b)`.
#[inline]
pub fn mix(a: usize, b: usize) -> u64 {
    let mut h = (a as u64) ^ (b as u64).rotate_left(32);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::{Arc, Barrier};

    #[test]
    fn stable_within_a_thread_and_nonzero() {
        let a = current();
        assert_ne!(a, 0);
        assert_eq!(a, current());
    }

    #[test]
    fn unique_among_live_threads() {
        let n = 16;
        let barrier = Arc::new(Barrier::new(n));
        let ids: Vec<usize> = (0..n)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    let id = current();
                    // Everybody alive at once before anyone exits.
                    b.wait();
                    id
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let set: HashSet<_> = ids.iter().copied().collect();
        assert_eq!(set.len(), n, "duplicate thread identities: {ids:?}");
    }

    #[test]
    fn mix_spreads_neighbouring_keys() {
        // Neighbouring lock addresses and thread ids must land in different
        // slots of a small table most of the time.
        let mut slots = HashSet::new();
        for lock in 0..64usize {
            slots.insert(mix(0x1000 + lock * 64, 0x7f00_0000_1000) % 4096);
        }
        assert!(
            slots.len() > 56,
            "poor spread: {} distinct of 64",
            slots.len()
        );
    }
}
