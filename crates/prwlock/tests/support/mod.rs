//! What the prwlock integration tests share.

use std::sync::mpsc;
use std::time::Duration;

/// A liveness bound, far above any expected time (not a performance check).
pub const LIVENESS: Duration = Duration::from_secs(10);

/// Runs `f` on a thread of its own and fails if it has not finished within
/// `LIVENESS` (a watchdog: a hang fails the test instead of stalling it).
pub fn within_liveness<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIVENESS) {
        Ok(v) => {
            worker.join().unwrap();
            v
        }
        Err(_) => panic!("{what}: no progress within {LIVENESS:?}"),
    }
}
