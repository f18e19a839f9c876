//! Replays the committed inputs of `bravo_tiny` (seeds and regressions),
//! in a process of its own: the target sets BRAVO's table to two slots for
//! the whole process, which the other replays must not see.

#[test]
fn bravo_tiny() {
    numa_rwlocks_fuzz::replay("bravo_tiny", numa_rwlocks_fuzz::bravo_tiny::run);
}
