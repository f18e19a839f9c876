//! A revocation must never leave the lock wedged (regression, issue 14).
//!
//! The reproduction: the process's first table use came in the middle of a
//! revocation (after `REVOKING` was set), and reported a malformed
//! `BRAVO_TABLE_SLOTS` with `eprintln!`, which panics when stderr is a pipe
//! whose reader is gone. Nothing restored the word: the write panicked,
//! the lock showed `revoking: true`, and the next write hung forever.
//!
//! The table is process-wide and sized once, so the scenario runs in a
//! child process (this test binary, re-executed) with `BRAVO_TABLE_SLOTS=3`
//! and stderr connected to a pipe whose read end the parent has closed.
#![cfg(not(loom))]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bravo::Bravo;
use lock_api::RawRwLock;

const CHILD: &str = "BRAVO_PANIC_SAFETY_CHILD";

/// The child's part: bias a lock, then write twice. Prints `child: ok`.
fn child() {
    let lock = Bravo::<parking_lot::RawRwLock>::new();
    // The first (slow) read sets the bias, and creates the table first,
    // with a malformed size in the environment and a dead stderr (since
    // 2026-11-27; before, the revoking write below created it).
    let g = lock.lock_shared();
    // SAFETY: our read.
    unsafe { lock.unlock_shared(g) };
    assert!(lock.is_biased(), "the first slow read biases the lock");
    // The write revokes.
    let first = std::panic::catch_unwind(|| {
        let g = lock.lock_exclusive();
        // SAFETY: our write.
        unsafe { lock.unlock_exclusive(g) };
    });
    assert!(first.is_ok(), "the revoking write panicked");
    assert!(
        !format!("{lock:?}").contains("revoking: true"),
        "a revocation was left running"
    );
    // A second write must not hang (the parent's timeout catches a hang).
    let g = lock.lock_exclusive();
    // SAFETY: our write.
    unsafe { lock.unlock_exclusive(g) };
    let g = lock
        .try_lock_exclusive()
        .expect("try_lock_exclusive fails on a free lock");
    // SAFETY: our write.
    unsafe { lock.unlock_exclusive(g) };
    assert_eq!(bravo::table::slots(), bravo::table::DEFAULT_SLOTS);
    println!("child: ok");
}

#[test]
fn revocation_survives_a_closed_stderr() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "revocation_survives_a_closed_stderr",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("BRAVO_TABLE_SLOTS", "3")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("re-executing the test binary");
    // Close the read end: the child's stderr is now a pipe nobody reads,
    // so writing to it fails (EPIPE; Rust programs ignore SIGPIPE).
    drop(child.stderr.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child hung: a write after the revocation never got the lock");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(
        status.success() && out.contains("child: ok"),
        "the child failed ({status}); its stdout:\n{out}"
    );
}

/// A `BRAVO_TABLE_SLOTS` that is not valid Unicode is reported on stderr
/// like any malformed value, and the default size is used (it was ignored
/// silently until review found it, 2026-11-27).
#[test]
fn a_size_that_is_not_unicode_is_reported() {
    const MODE: &str = "BRAVO_NOT_UNICODE_CHILD";
    if std::env::var_os(MODE).is_some() {
        let lock = Bravo::<parking_lot::RawRwLock>::new();
        let g = lock.lock_shared();
        // SAFETY: our read.
        unsafe { lock.unlock_shared(g) };
        println!("slots: {}", bravo::table::slots());
        return;
    }
    use std::os::unix::ffi::OsStrExt;
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_size_that_is_not_unicode_is_reported",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, "1")
        .env("BRAVO_TABLE_SLOTS", std::ffi::OsStr::from_bytes(b"\xff16"))
        .output()
        .expect("re-executing the test binary");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("ignoring BRAVO_TABLE_SLOTS") && stderr.contains("not valid UTF-8"),
        "{stderr}"
    );
    assert!(
        stdout.contains(&format!("slots: {}", bravo::table::DEFAULT_SLOTS)),
        "{stdout}"
    );
}
