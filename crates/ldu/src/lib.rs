//! LDU: a lock-less deferred-update log with update-side absorbing (Kyong &
//! Lim, "LDU: A Lightweight Concurrent Update Method with Deferred
//! Processing for Linux Kernel Scalability", Section 3, Figures 2 and 3).
//!
//! For update-heavy structures. An insert or remove does not touch the
//! structure and takes no lock: it is a CAS on the item, plus a CAS on a
//! global log's head (a lock-less list) when the item's node is not queued
//! yet; a remove that meets a pending insert of the same item cancels it
//! instead of logging anything (update-side absorbing; likewise an insert
//! meeting a pending remove).
//! The structure itself, the [`Target`], is updated in a batch, under its
//! write lock, when somebody needs to read it: [`Ldu::read`] first
//! [synchronizes](Ldu::synchronize), then reads: under the shared lock
//! when nothing was pending, else under the write lock it took to apply
//! the batch (so a long read then holds up every other reader and drain).
//!
//! ```
//! use std::sync::Arc;
//! use std::thread;
//! use ldu::{Ldu, OrderedSet, Tracked};
//!
//! let log: Arc<Ldu<OrderedSet<u32>>> = Arc::default();
//! let items: Arc<Vec<_>> = Arc::new((0..100).map(|k| Arc::new(Tracked::new(k))).collect());
//!
//! let workers: Vec<_> = (0..2)
//!     .map(|t| {
//!         let (log, items) = (Arc::clone(&log), Arc::clone(&items));
//!         thread::spawn(move || {
//!             for it in items.iter().skip(t).step_by(2) {
//!                 log.logical_insert(it); // no lock taken
//!                 if ***it % 10 == 0 {
//!                     log.logical_remove(it); // cancels the pending insert
//!                 }
//!             }
//!         })
//!     })
//!     .collect();
//! workers.into_iter().for_each(|w| w.join().unwrap());
//!
//! assert_eq!(log.read(|set| set.len()), 90);
//! ```
//!
//! # What is here
//! - [`Tracked<T>`]: an item (your value and its insert and remove log
//!   nodes), shared as `Arc<Tracked<T>>`.
//! - [`Ldu<S, R>`]: the log in front of a target `S`, guarded by any
//!   `lock_api::RawRwLock` `R` (default: parking_lot's `RawRwLock`; see
//!   [`Ldu`] for why).
//!   [`Ldu::logical_insert`] / [`Ldu::logical_remove`] report what they did
//!   ([`Update`]); [`Ldu::synchronize`] reports what it applied
//!   ([`SyncStats`]).
//! - Targets: [`OrderedSet`] (items by value) and [`IntervalSet`] (items by
//!   the key range they cover, the paper's reverse map), or your own
//!   structure implementing [`Target`].
//!
//! # Semantics
//! Every logical operation takes effect atomically at one CAS on the item,
//! so concurrent inserts and removes of one item are ordered (the paper's
//! kernel never issues them concurrently; this library does not ask that of
//! its callers). An insert of a member or a remove of a non-member changes
//! nothing. When a logical operation returns, any later `read` (in any
//! thread that synchronizes with the caller, and in the caller itself) sees
//! its effect. The target sees, per item, alternating inserts and removes,
//! starting with an insert. Updates of different items never wait for each
//! other; an update waits (a few instructions) only for a concurrent update
//! of the same item that has not finished enqueuing its log node, and reads
//! never wait for updaters. See [`ldu`] for the protocol and why absorbing
//! is safe.
//!
//! # When to use it
//! When updates dominate and reads can pay for a batch: each read with
//! pending updates takes the write lock, applies them and reads under it.
//! On a 2-core Intel Xeon VM, with up to 10% of operations reads, LDU ran
//! at 0.99× to 1.62× `Mutex<BTreeSet>` at 2 threads and 2.0× to 2.5× at
//! 16, but at 4 threads 0.82× to 0.87× with 1% reads (0.93× to 1.11× with
//! 0.1% and 10%) and at 3 threads 0.57× to 0.65× with 1% and 10%; a 2-core
//! AMD EPYC VM gave 1.01× to 2.32× from 2 to 16 threads. `docs/ldu.md`
//! has the runs and why 3 and 4 threads lose. A single thread pays the
//! log's own work (0.84× to 1.19×), and a read-mostly structure belongs
//! behind a reader-writer lock. Do not call [`Ldu::read`] or
//! [`Ldu::synchronize`] from inside a `read` closure or a [`Target`]
//! method: the write lock would wait for the read lock its own thread
//! holds.

#![deny(missing_docs)]

mod interval_set;
pub mod ldu;
mod ordered_set;
pub mod tracked;

#[cfg(all(test, loom))]
mod loom_tests;

pub use crate::interval_set::{IntervalSet, Ranged};
pub use crate::ldu::{Ldu, SyncStats, Target, Update};
pub use crate::ordered_set::OrderedSet;
pub use crate::tracked::{LduNode, Tracked};

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
