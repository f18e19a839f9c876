//! Helpers for the tests that measure time or CPU: run one at a time, and
//! judge the best of a few rounds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The process's one-at-a-time lock for tests whose outcome depends on
/// the CPU they get (timings, CPU bounds, a shared table whose occupant
/// they assert): libtest runs a binary's tests on parallel threads, which
/// would otherwise steal each other's CPU or slots. Hold the guard for the
/// whole test. A test that panicked while holding it poisons nothing: the
/// next one takes it anyway.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `round` up to `rounds` times (at least once) and returns the
/// smallest result, stopping at the first that `good_enough` accepts. For
/// bounds on time or CPU a machine may blow once (a first run of a path
/// inside an emulator includes its translation; a loaded host deschedules
/// a virtual CPU and the guest charges the running thread): a protocol that
/// really costs too much fails every round.
pub fn best_of<T: Ord>(
    rounds: usize,
    good_enough: impl Fn(&T) -> bool,
    mut round: impl FnMut() -> T,
) -> T {
    let mut best = round();
    for _ in 1..rounds {
        if good_enough(&best) {
            break;
        }
        best = best.min(round());
    }
    best
}

/// Spawns `waiter` on `scope`, then returns `hold` after it started: for
/// a test that keeps a thread waiting (for a lock the caller holds) for
/// about `hold` before it releases. The hold counts from the waiter's
/// start, since on a loaded machine a new thread may not run for that
/// long.
pub fn spawn_and_hold<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    hold: Duration,
    waiter: impl FnOnce() + Send + 'scope,
) {
    let started = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&started);
    scope.spawn(move || {
        // Relaxed: only shortens the caller's wait below.
        flag.store(true, Ordering::Relaxed);
        waiter();
    });
    // Relaxed: as above.
    while !started.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    std::thread::sleep(hold);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_of_stops_at_the_first_good_round_and_keeps_the_least() {
        let mut calls = 0;
        let got = best_of(
            3,
            |&x| x < 10,
            || {
                calls += 1;
                [30, 5, 1][calls - 1]
            },
        );
        assert_eq!((got, calls), (5, 2), "stops once a round is good enough");
        let mut calls = 0;
        let got = best_of(
            3,
            |&x| x < 10,
            || {
                calls += 1;
                [30, 20, 25][calls - 1]
            },
        );
        assert_eq!((got, calls), (20, 3), "the least of every round");
        let mut calls = 0;
        assert_eq!(
            best_of(
                0,
                |_| false,
                || {
                    calls += 1;
                    7
                }
            ),
            7
        );
        assert_eq!(calls, 1, "at least one round");
    }
}
