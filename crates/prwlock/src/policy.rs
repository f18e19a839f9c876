//! When a [`PrwLock`](crate::PrwLock)'s readers stop being passive: the
//! write-heavy mode.
//!
//! A passive reader costs a store, a compiler fence and a load, but a
//! writer pays for it with a heavy barrier whenever some reader of the
//! domain has not reported its version: `membarrier` interrupts every CPU
//! running the process. With more threads than cores nearly every reader is
//! descheduled and unreported, so nearly every write pays it. Measured on
//! the 2-core development VM (`docs/prwlock.md`): 0.4 µs alone, 10.6 µs
//! beside one busy thread of the process, 89 µs beside 15 (the caller
//! waits for CPUs it shares with them). A write-heavy lock then runs at the
//! barrier's pace; the paper's own answer is the kernel helper (ATC'14
//! Section 3.5), which a host without the module lacks.
//!
//! The answer here is BRAVO's (Dice & Kogan, USENIX ATC 2019, Section 3,
//! `InhibitUntil`), with passive reading in the role of bias: after a write
//! that paid a heavy barrier taking `B`, passive reading is *inhibited* for
//! `N × B` ([`INHIBIT_MULTIPLIER`]). A writer that arrives inside that
//! window switches the lock to *active mode* (state bit `ACTIVE_MODE`):
//! readers then take the paper's active path (Fig. 3: `active += 1`, fence,
//! check `WRITER`), which costs a shared read-modify-write like any
//! counter-based lock, and writers need no heavy barrier at all. While
//! writes keep arriving within `N × B` of each other the mode stays, but
//! for at most [`PROBE_MULTIPLIER`]` × B` after it began; then it ends and
//! passive reading is tried (and measured) again. Only a write that paid a
//! heavy barrier sets the window: a write whose readers reported the
//! version starts the mode only within `N × B` of such a write, so one or
//! two threads with a core each keep the paper's lock.
//!
//! The bound is BRAVO's: in passive mode the heavy barriers take at most
//! about `1 / N` of the time, because writes closer together than that
//! switch the lock to active mode; a probe costs about two heavy barriers
//! per `PROBE_MULTIPLIER × B`, under 1%.
//!
//! Why skipping the barrier is sound in active mode is the lock's business
//! (its module docs, "Write-heavy mode"); this module only decides, with
//! plain atomics that are hints: a stale reading can delay or hasten a
//! switch, never break the protocol.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rwlock_core::clock::now;

/// `N`: after a write that paid a heavy barrier taking `B`, a writer that
/// arrives within `N × B` switches the lock to active reading (BRAVO's
/// default multiplier).
pub const INHIBIT_MULTIPLIER: u64 = 9;

/// Active mode lasts at most this many heavy-barrier costs before passive
/// reading is tried again (the price of the probe: about two barriers per
/// period, under 1%).
pub const PROBE_MULTIPLIER: u64 = 256;

/// An active-mode reader consults the clock on one acquisition in this many
/// (counted on the lock's `active` word, which its increment returns for
/// free). Inside a loom model, every one.
pub(crate) const READER_CLOCK_EVERY: u64 = if cfg!(loom) { 1 } else { 64 };

/// What a loom model wants of the policy (the clock is constant there, so
/// the timed policy would never switch).
#[cfg(loom)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelPolicy {
    /// As outside models: with a constant clock, never switch.
    Timed,
    /// Every passive-mode writer switches to active mode; writers and
    /// readers in active mode find it expired at once (so they switch back).
    SwitchAndExpire,
}

/// A lock's write-heavy-mode policy: three clock readings and a cost.
#[derive(Debug)]
pub(crate) struct ModePolicy {
    /// Passive reading is inhibited until this reading (0: no window is
    /// open, so a passive-mode writer need not read the clock).
    passive_after: AtomicU64,
    /// Active mode is not extended past this reading (time to probe).
    probe_at: AtomicU64,
    /// The last heavy barrier's cost, in clock units (at least 1; saturates
    /// at `u32::MAX` units, about 90 s with a 3 GHz TSC).
    barrier_cost: AtomicU32,
    #[cfg(loom)]
    model: ModelPolicy,
}

impl ModePolicy {
    /// A policy that inhibits nothing yet.
    pub(crate) const fn new() -> Self {
        ModePolicy {
            passive_after: AtomicU64::new(0),
            probe_at: AtomicU64::new(0),
            barrier_cost: AtomicU32::new(1),
            #[cfg(loom)]
            model: ModelPolicy::Timed,
        }
    }

    /// A policy for a loom model.
    #[cfg(all(loom, test))]
    pub(crate) const fn for_model(model: ModelPolicy) -> Self {
        let mut policy = Self::new();
        policy.model = model;
        policy
    }

    /// A passive-mode writer about to run its consensus: whether it should
    /// switch the lock to active mode first (a heavy barrier was paid less
    /// than `N × B` ago). Reads the clock only while a window may be open,
    /// and closes a window it finds past, so that a lock whose writes pay
    /// no barrier never reads the clock here.
    pub(crate) fn inhibits_passive(&self) -> bool {
        #[cfg(loom)]
        if self.model == ModelPolicy::SwitchAndExpire {
            return true;
        }
        // Relaxed, here and below: hints (module docs).
        let until = self.passive_after.load(Ordering::Relaxed);
        if until == 0 {
            return false;
        }
        if now() < until {
            return true;
        }
        self.passive_after.store(0, Ordering::Relaxed);
        false
    }

    /// The writer at `now` switched the lock to active mode: the probe is
    /// due `PROBE_MULTIPLIER × B` from now, and the mode lasts at least
    /// `N × B` (this write counts as one that came close).
    pub(crate) fn entered(&self, now: u64) {
        let cost = self.cost();
        self.probe_at.store(
            now.saturating_add(cost.saturating_mul(PROBE_MULTIPLIER)),
            Ordering::Relaxed,
        );
        self.extend(now, cost);
    }

    fn cost(&self) -> u64 {
        self.barrier_cost.load(Ordering::Relaxed).into()
    }

    /// `passive_after = max(passive_after, min(now + N × B, probe_at))`.
    fn extend(&self, now: u64, cost: u64) {
        let probe = self.probe_at.load(Ordering::Relaxed);
        let until = now
            .saturating_add(cost.saturating_mul(INHIBIT_MULTIPLIER))
            .min(probe);
        self.passive_after.fetch_max(until, Ordering::Relaxed);
    }

    /// A passive-mode consensus that began at `start` needed a heavy
    /// barrier, done at `end`: remember its cost and inhibit passive reading
    /// for `N` times it.
    pub(crate) fn barrier_paid(&self, start: u64, end: u64) {
        let cost = end.saturating_sub(start).clamp(1, u32::MAX.into());
        self.barrier_cost.store(cost as u32, Ordering::Relaxed);
        self.passive_after.store(
            end.saturating_add(cost.saturating_mul(INHIBIT_MULTIPLIER)),
            Ordering::Relaxed,
        );
    }

    /// An active-mode writer at `now`: whether the mode should go on. If it
    /// should (the previous write was within `N × B`), the window is
    /// extended by `N × B` from now, but not past the probe.
    pub(crate) fn keep_active(&self, now: u64) -> bool {
        #[cfg(loom)]
        if self.model == ModelPolicy::SwitchAndExpire {
            return false;
        }
        if self.expired(now) {
            return false;
        }
        self.extend(now, self.cost());
        true
    }

    /// Whether active mode has run its course at `now` (an active-mode
    /// reader asks, once in [`READER_CLOCK_EVERY`] acquisitions).
    pub(crate) fn expired(&self, now: u64) -> bool {
        #[cfg(loom)]
        if self.model == ModelPolicy::SwitchAndExpire {
            return true;
        }
        now >= self.passive_after.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_barrier_inhibits_passive_reading_for_n_times_its_cost() {
        let p = ModePolicy::new();
        assert!(!p.inhibits_passive());
        let t = now();
        // A barrier that took 2^30 clock units (half a minute): inhibited now.
        p.barrier_paid(t, t + (1 << 30));
        assert!(p.inhibits_passive());
        assert!(!p.expired(t + (1 << 30) + (1 << 30) * INHIBIT_MULTIPLIER - 1));
        assert!(p.expired(t + (1 << 30) + (1 << 30) * INHIBIT_MULTIPLIER));
        // One that ended long ago: the window is closed, and marked so.
        let q = ModePolicy::new();
        q.barrier_paid(0, 1);
        assert!(!q.inhibits_passive());
        assert_eq!(q.passive_after.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn active_mode_extends_with_frequent_writes_but_not_past_the_probe() {
        let p = ModePolicy::new();
        p.barrier_paid(0, 10); // B = 10, inhibited until 100
        p.entered(50); // probe at 50 + 2560
        let mut t = 50;
        // Writes every 80 units (< N × B = 90) keep the mode...
        while t + 80 < 50 + 10 * PROBE_MULTIPLIER {
            t += 80;
            assert!(p.keep_active(t), "ended early at {t}");
        }
        // ...until the probe.
        assert!(p.expired(50 + 10 * PROBE_MULTIPLIER));
        assert!(!p.keep_active(50 + 10 * PROBE_MULTIPLIER));
        // A gap longer than N × B ends it too.
        let q = ModePolicy::new();
        q.barrier_paid(0, 10);
        q.entered(50);
        assert!(q.keep_active(60));
        assert!(!q.keep_active(60 + 10 * INHIBIT_MULTIPLIER));
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let p = ModePolicy::new();
        p.barrier_paid(u64::MAX - (1 << 40), u64::MAX);
        p.entered(u64::MAX - 1);
        assert!(p.inhibits_passive());
        assert!(p.keep_active(u64::MAX - 1));
    }
}
