//! The workspace's root package: benchmarks (`benches/`), examples and
//! cross-crate tests (`tests/`) of the NUMA-aware reader-writer locks.
//!
//! The locks themselves live in their own crates; this package re-exports
//! them so that benches, examples and tests name every family in one place.

pub use rwlock_core;
