//! The cheap monotonic clock behind the locks' adaptive policies: BRAVO's
//! `InhibitUntil` (`bravo::policy`) and prwlock's write-heavy mode
//! (`prwlock::policy`).
//!
//! Both policies read the clock to time an expensive step (a BRAVO
//! revocation, a prwlock heavy barrier) and to compare the present against
//! a deadline derived from it. Only differences and comparisons of readings
//! are used, so the unit does not matter: `until = now + (now - start) × N`
//! holds in any unit.
//!
//! Measured on the 2-core development VM (`cargo bench --bench latency --
//! clock`: this clock 18.8 ns, `Instant::now()` 37 ns; a 5 M-call loop gave
//! `clock_gettime(CLOCK_MONOTONIC)` 35 ns and `CLOCK_MONOTONIC_COARSE` 9 ns
//! but with a 4 ms resolution, far coarser than a revocation, which takes
//! a few µs; see `docs/bravo.md`). Even the TSC costs about as much as an
//! uncontended lock pair here, so callers consult it off their fast paths,
//! and on slow paths only once in many acquisitions (bravo's
//! `raw::CLOCK_EVERY_MIN` to `raw::CLOCK_EVERY_MAX`; prwlock's active-mode
//! readers once in 64). On x86-64 the clock
//! is therefore the time-stamp counter (invariant on every x86-64 CPU Linux
//! reports `constant_tsc` for; a TSC that is not synchronised across sockets
//! only makes a policy less exact, never a lock incorrect, and
//! backwards steps saturate to zero); elsewhere it is `Instant` in
//! nanoseconds since the first reading.
//!
//! Readings are returned in units of [`UNIT_SHIFT`]-shifted ticks so that
//! they fit the 58 bits bravo's lock word keeps for them for decades of
//! uptime. Inside a loom model the clock is constant (0): the policies are
//! not what a model checks, and a constant keeps the model deterministic.

/// Readings are raw ticks shifted right by this much (about 21 ns per unit
/// with a 3 GHz TSC), so that they fit 58 bits: the 64-bit counter itself
/// wraps after about 195 years at 3 GHz, which the shift does not extend.
pub const UNIT_SHIFT: u32 = 6;

/// The current time in clock units (see the module docs).
#[cfg(all(target_arch = "x86_64", not(loom)))]
#[inline]
pub fn now() -> u64 {
    // `rdtsc` is available on every x86-64 CPU; it reads a counter and
    // writes no memory.
    // SAFETY: no preconditions.
    let ticks = unsafe { core::arch::x86_64::_rdtsc() };
    ticks >> UNIT_SHIFT
}

/// The current time in clock units (see the module docs).
#[cfg(all(not(target_arch = "x86_64"), not(loom)))]
#[inline]
pub fn now() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    (epoch.elapsed().as_nanos() as u64) >> UNIT_SHIFT
}

/// The current time in clock units: constant inside a loom model.
#[cfg(loom)]
#[inline]
pub fn now() -> u64 {
    0
}

/// Clock units per second, measured once (about 10 ms on first call).
///
/// Only statistics and reports convert units to seconds; the locks never do.
#[cfg(not(loom))]
pub fn units_per_second() -> f64 {
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let (t0, c0) = (Instant::now(), now());
        std::thread::sleep(Duration::from_millis(10));
        let (t1, c1) = (Instant::now(), now());
        let secs = (t1 - t0).as_secs_f64();
        (c1.saturating_sub(c0) as f64 / secs).max(1.0)
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_advancing() {
        let a = now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now();
        assert!(b > a, "clock did not advance over 2 ms: {a} -> {b}");
        let rate = units_per_second();
        // Between 1 MHz and 1 THz of units: a sanity bound, not a timing claim.
        assert!((1e6..1e12).contains(&rate), "implausible clock rate {rate}");
    }
}
