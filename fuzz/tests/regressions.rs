//! Replays every committed input of every target through the same code the
//! fuzzer runs: the seed corpus (`corpus/<target>/`) and the inputs that
//! once crashed (`regressions/<target>/`, kept forever by `scripts/fuzz`).
//! `prwlock_fence` needs a process of its own: `tests/prwlock_fence.rs`.

use numa_rwlocks_fuzz::{ldu_ops, ldu_threads, lock_ops, parsers, rcu_ops, replay, threads};

#[test]
fn lock_ops() {
    replay("lock_ops", lock_ops::run);
}

#[test]
fn threads() {
    replay("threads", threads::run);
}

#[test]
fn ldu_ops() {
    replay("ldu_ops", ldu_ops::run);
}

#[test]
fn ldu_threads() {
    replay("ldu_threads", ldu_threads::run);
}

#[test]
fn rcu_ops() {
    replay("rcu_ops", rcu_ops::run);
}

#[test]
fn parsers() {
    replay("parsers", parsers::run);
}
