//! Opt-in counters (feature `stats`): does bias help this program?
//!
//! Process-wide, summed over all `Bravo` locks. Each thread counts into its
//! own cache-padded record (a plain load and store, no read-modify-write, so
//! counting does not bring back the shared-line traffic BRAVO removes);
//! [`snapshot`] sums the live threads' records and those of exited threads.
//! Without the feature every counting call compiles to nothing and
//! [`snapshot`] does not exist.
//!
//! ```
//! # #[cfg(feature = "stats")] {
//! let lock = bravo::RwLock::new(0);
//! for _ in 0..10 { drop(lock.read()); }
//! *lock.write() += 1;
//! let s = bravo::stats::snapshot();
//! assert!(s.fast_reads + s.slow_reads >= 10);
//! println!("{s}");
//! # }
//! ```

/// What can be counted.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
pub(crate) enum Event {
    /// A read acquired through the visible-readers table.
    FastRead = 0,
    /// A read acquired through the underlying lock.
    SlowRead,
    /// A fast-path attempt found its slot(s) taken (a collision).
    Collision,
    /// A fast-path attempt published its slot, then saw bias revoked.
    Raced,
    /// A slow reader set the bias.
    BiasSet,
    /// A writer revoked the bias.
    Revocation,
}

#[cfg_attr(not(feature = "stats"), allow(dead_code))]
const EVENTS: usize = 6;

#[cfg(all(feature = "stats", not(loom)))]
mod imp {
    use std::fmt;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use crossbeam_utils::CachePadded;

    use super::{EVENTS, Event};

    /// One thread's counts: [events..., revocation units, inhibit units].
    type Record = CachePadded<[AtomicU64; EVENTS + 2]>;

    struct Registry {
        live: Vec<Arc<Record>>,
        retired: [u64; EVENTS + 2],
    }

    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        live: Vec::new(),
        retired: [0; EVENTS + 2],
    });

    struct Local(Arc<Record>);

    impl Drop for Local {
        fn drop(&mut self) {
            let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            for (sum, c) in reg.retired.iter_mut().zip(self.0.iter()) {
                // Relaxed: this thread is the record's only writer.
                *sum += c.load(Ordering::Relaxed);
            }
            reg.live.retain(|r| !Arc::ptr_eq(r, &self.0));
        }
    }

    thread_local! {
        static LOCAL: Local = {
            let rec: Arc<Record> = Arc::new(CachePadded::new(Default::default()));
            REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).live.push(rec.clone());
            Local(rec)
        };
    }

    thread_local! {
        /// A count of this thread is running. `const`, no destructor.
        static COUNTING: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }

    #[inline]
    fn add(i: usize, n: u64) {
        // A count from inside a count is dropped: the thread's record is
        // created on its first count, which allocates and takes the
        // registry's mutex, and a program's allocator that takes a lock
        // (the LD_PRELOAD shim's `malloc` re-entry) would count again
        // there, deadlocking on that mutex (found by the re-entry test,
        // 2026-11-27).
        if COUNTING.with(|c| c.replace(true)) {
            return;
        }
        let _ = LOCAL.try_with(|l| {
            let c = &l.0[i];
            // Relaxed load and store: single writer; readers of a snapshot
            // see some recent value, which is all a statistic promises.
            c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        });
        COUNTING.with(|c| c.set(false));
    }

    #[inline]
    pub(crate) fn count(e: Event) {
        add(e as usize, 1);
    }

    pub(crate) fn revocation(units: u64, inhibit_units: u64) {
        add(Event::Revocation as usize, 1);
        add(EVENTS, units);
        add(EVENTS + 1, inhibit_units);
    }

    /// Counts since the process started, over every `Bravo` lock.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    pub struct Snapshot {
        /// Reads that took the fast path (visible-readers table).
        pub fast_reads: u64,
        /// Reads that took the slow path (the underlying lock).
        pub slow_reads: u64,
        /// Fast-path attempts that found their slot(s) taken.
        pub collisions: u64,
        /// Fast-path attempts that lost a race with a revoking writer.
        pub raced: u64,
        /// Times a slow reader enabled bias.
        pub bias_sets: u64,
        /// Revocations by writers.
        pub revocations: u64,
        /// Seconds writers spent revoking (scan and wait).
        pub revocation_secs: f64,
        /// Seconds of inhibit windows set by revocations (bias forbidden).
        pub inhibited_secs: f64,
    }

    impl Snapshot {
        /// Fraction of reads that took the fast path (0 when there were none).
        pub fn fast_ratio(&self) -> f64 {
            let all = self.fast_reads + self.slow_reads;
            if all == 0 {
                0.0
            } else {
                self.fast_reads as f64 / all as f64
            }
        }
    }

    impl fmt::Display for Snapshot {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "reads: {} fast, {} slow ({:.1}% fast); collisions {}, races {}; \
                 bias set {} times, revoked {} times ({:.3} ms revoking, {:.3} ms inhibited)",
                self.fast_reads,
                self.slow_reads,
                100.0 * self.fast_ratio(),
                self.collisions,
                self.raced,
                self.bias_sets,
                self.revocations,
                self.revocation_secs * 1e3,
                self.inhibited_secs * 1e3,
            )
        }
    }

    /// Sums the counts of every thread, live or exited.
    pub fn snapshot() -> Snapshot {
        // Before the registry lock: the first call calibrates the clock
        // (a 10 ms sleep), during which a thread's first count, which
        // registers it, would wait for the lock, a reader inside its read
        // section among them (found in review, 2026-11-29).
        let rate = crate::clock::units_per_second();
        let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let mut sum = reg.retired;
        for r in &reg.live {
            for (s, c) in sum.iter_mut().zip(r.iter()) {
                // Relaxed: a statistic (see `add`).
                *s += c.load(Ordering::Relaxed);
            }
        }
        drop(reg);
        Snapshot {
            fast_reads: sum[Event::FastRead as usize],
            slow_reads: sum[Event::SlowRead as usize],
            collisions: sum[Event::Collision as usize],
            raced: sum[Event::Raced as usize],
            bias_sets: sum[Event::BiasSet as usize],
            revocations: sum[Event::Revocation as usize],
            revocation_secs: sum[EVENTS] as f64 / rate,
            inhibited_secs: sum[EVENTS + 1] as f64 / rate,
        }
    }
}

#[cfg(any(not(feature = "stats"), loom))]
mod imp {
    use super::Event;

    #[inline(always)]
    pub(crate) fn count(_: Event) {}

    #[inline(always)]
    pub(crate) fn revocation(_units: u64, _inhibit_units: u64) {}
}

#[cfg(all(feature = "stats", not(loom)))]
pub use imp::{Snapshot, snapshot};
pub(crate) use imp::{count, revocation};
