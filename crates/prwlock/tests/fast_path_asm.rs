//! The read fast path holds no `lock`-prefixed instruction and no fence:
//! builds `examples/fast_path.rs` in release mode (in a target directory of
//! its own, so that it never waits for the lock of the running `cargo
//! test`), disassembles `prwlock_read_pair` with `objdump`, and checks the
//! instructions of that function: the inlined `lock_shared` +
//! `unlock_shared` on the path where the thread's record is cached. The slow
//! paths are out-of-line `#[cold]` functions and only appear as calls.
//!
//! Needs `objdump` (Debian: binutils; `scripts/install-system-deps`).

use std::path::PathBuf;
use std::process::Command;

/// Instructions with an implicit or explicit bus lock, and fences.
fn is_serializing(mnemonic: &str, line: &str) -> bool {
    mnemonic == "lock"
        || line.contains(" lock ")
        || mnemonic.starts_with("xchg") && line.contains('(')
        || mnemonic.starts_with("cmpxchg")
        || mnemonic.starts_with("xadd")
        || mnemonic.ends_with("fence")
        || mnemonic == "cpuid"
}

fn disassemble(function: &str) -> Vec<String> {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().unwrap().parent().unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace.join("target"), PathBuf::from)
        .join("fast-path-asm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "prwlock",
            "--example",
            "fast_path",
        ])
        .arg("--target-dir")
        .arg(&target)
        // The check is about the code users get, not instrumented builds.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .expect("running cargo build for examples/fast_path.rs");
    assert!(status.success(), "building examples/fast_path.rs failed");
    let binary = target.join("release").join("examples").join("fast_path");
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "--no-addresses"])
        .arg(&binary)
        .output()
        .expect("objdump not found: run scripts/install-system-deps (binutils)");
    assert!(out.status.success(), "objdump failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.ends_with(&format!("<{function}>:")));
    assert!(lines.next().is_some(), "{function} not found in the binary");
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect()
}

#[test]
fn read_fast_path_has_no_locked_instruction_and_no_fence() {
    check_fast_path("prwlock_read_pair");
}

#[test]
fn rcu_read_fast_path_has_no_locked_instruction_and_no_fence() {
    check_fast_path("rcu_read_pair");
}

fn check_fast_path(function: &str) {
    let body = disassemble(function);
    eprintln!("{function}: {} instructions", body.len());
    for l in &body {
        eprintln!("    {l}");
    }
    let mnemonic = |l: &String| l.split_whitespace().next().unwrap_or("").to_owned();
    let bad: Vec<&String> = body
        .iter()
        .filter(|l| is_serializing(&mnemonic(l), l))
        .collect();
    assert!(
        bad.is_empty(),
        "serializing instructions on the fast path: {bad:?}"
    );
    // The check reads real code: the fast path's stores of the status word
    // (the hold, then FREE) and a thread-pointer-relative load of the
    // cached record are there.
    let stores = body
        .iter()
        .filter(|l| mnemonic(l).starts_with("mov") && l.ends_with(')'))
        .count();
    assert!(stores >= 2, "expected the status stores in: {body:#?}");
    assert!(
        body.iter().any(|l| l.contains("%fs:")),
        "expected a thread-local load in: {body:#?}"
    );
}
