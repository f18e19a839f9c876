//! The workspace's root package: the comparison harness (`benches/rwbench.rs`
//! drives [`workloads`] over every lock of [`registry`] and writes [`report`]s),
//! the criterion latency bench, examples and cross-crate tests (`tests/`).
//!
//! The locks themselves live in their own crates; this package re-exports
//! them so that benches, examples and tests name every family in one place.

pub use rwlock_core;

pub mod bench_lock;
#[cfg(has_ck)]
pub mod ck;
pub mod cli;
pub mod rcu_map;
pub mod registry;
pub mod report;
#[cfg(has_urcu)]
pub mod urcu;
pub mod workloads;
