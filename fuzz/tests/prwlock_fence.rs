//! Replays the committed inputs of `prwlock_fence` (seeds and regressions),
//! in a process of its own: the target switches prwlock to its fence mode
//! for the whole process, which the other replays must not see.

#[test]
fn prwlock_fence() {
    numa_rwlocks_fuzz::replay("prwlock_fence", numa_rwlocks_fuzz::prwlock_fence::run);
}
