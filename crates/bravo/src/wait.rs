//! How a revoking writer waits for a fast-path reader to leave.
//!
//! A fast reader's unlock is one store into its slot: it has no way to wake
//! anybody (waking would cost every reader a check of a shared word, the
//! traffic BRAVO exists to remove). The writer therefore polls, and polls
//! politely, since the reader may be descheduled or blocked inside its
//! critical section: about 127 spin hints, then 8 yields, then sleeps of
//! 1 µs doubling to 1 ms; where the first yield shows the CPU shared
//! ([`ParkWhenShared`]), the sleeps start after that one yield, since each
//! yield can then put the writer behind every runnable thread for a time
//! slice. A revocation's scan uses one such backoff for all the slots it
//! waits on (not a fresh one per slot). A reader that stays inside for
//! seconds costs the writer about a thousand wake-ups per second, never a
//! busy core. Inside a loom model every round is one yield to the model.
//!
//! Oversubscribed, a fast reader descheduled inside its section holds the
//! writer until the scheduler runs it again: with 63 reader threads in a
//! tight loop on 2 CPUs, the first revocation took 244 to 372 ms here
//! (`examples/revoke_probe.rs`; 261 to 497 ms with a fresh 8-yield
//! backoff per slot). The inhibit window (N times that cost) then keeps
//! the bias off, so later writes do not pay it: over 2 s, 37,055 writes
//! with a p99 wait of 0.2 µs and a maximum of 627 ms (`writer_latency`,
//! 64 threads, `--duration-ms 2000`; parking_lot in the same run: p99
//! 0.2 µs, maximum 248 ms). In a run as short as the harness default (150
//! ms) that first write is the only one, and its wait is the p99.

use std::time::Duration;

use rwlock_core::wait::{Backoff, ParkWhenShared};

const MIN_SLEEP: Duration = Duration::from_micros(1);
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Progressive waiting that ends in bounded sleeps.
#[derive(Debug)]
pub(crate) struct Sleeper {
    backoff: Backoff<ParkWhenShared>,
    sleep: Duration,
}

impl Sleeper {
    pub(crate) fn new() -> Self {
        Sleeper {
            backoff: Backoff::new(),
            sleep: MIN_SLEEP,
        }
    }

    /// Waits a little longer than last time.
    #[inline]
    #[cfg_attr(loom, allow(dead_code))] // models park on a `Waiters` instead
    pub(crate) fn snooze(&mut self) {
        self.snooze_at_most(MAX_SLEEP);
    }

    /// As [`snooze`](Self::snooze), sleeping no longer than `limit` (the
    /// time left before a deadline).
    #[inline]
    pub(crate) fn snooze_at_most(&mut self, limit: Duration) {
        if cfg!(loom) {
            crate::sync::yield_now();
            return;
        }
        if !self.backoff.should_park() {
            self.backoff.snooze();
            return;
        }
        // Not a cancellation point (a lock call must not be one).
        rwlock_core::wait::sleep_uncancelled(self.sleep.min(limit));
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
    }
}
