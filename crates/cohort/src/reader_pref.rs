//! C-RW-RP: the reader-preference cohort reader-writer lock (PPoPP'13
//! Section 3.3, Figure 4).
//!
//! # Protocol
//!
//! ```text
//! reader:                                   writer:
//!   while RBarrier != 0: wait                 start: acquire writer mutex
//!   arrive at ReadIndr                        if ReadIndr not empty:
//!   while writer mutex is locked: wait          release writer mutex
//!   <read critical section>                     wait until empty, raising
//!   depart                                        RBarrier once out of patience
//!                                               goto start
//!                                             lower RBarrier if raised
//!                                             <write critical section>
//!                                             release writer mutex
//! ```
//!
//! The Dekker pair is the writer-preference lock's ([`crate::writer_pref`]),
//! with the roles swapped: a reader that meets a writer *stays* arrived and
//! waits, so the writer, which sees it, backs off.
//!
//! # Anti-starvation and the pathology
//!
//! A writer that waits for readers longer than its patience (1000 checks
//! by default, counted across its retries, each of which ends a group of
//! 64; about `PATIENCE_TIME` past its first yield; or its first yield on a
//! shared CPU: `rw.rs`, "Patience") raises RBarrier, which stops *new*
//! readers; the arrived ones drain and the writer gets in
//! (`tests/starvation.rs`). Readers arrived while writers hand the writer
//! mutex to each other (each sees them and backs off) wait
//! for the whole circulation: the "superfluous writer ownership circulation"
//! that [`crate::reader_pref_opt`] removes. Section 4.3's pathology (writers
//! starve, so few threads become readers again) is in the crate docs.

use crate::CPtlTkt;
use crate::indicator::{IngressEgress, ReadIndicator};
use crate::rw::{Parts, Patience, ReaderToken, WriterMutex, dekker_fence, impl_raw_rwlock};

/// The reader-preference lock over writer mutex `M` and read indicator
/// `I`; see the [module docs](self). [`CRwRp`](crate::CRwRp) is the
/// paper's configuration.
pub struct ReaderPref<M = CPtlTkt, I = IngressEgress> {
    parts: Parts<M, I>,
}

impl_raw_rwlock!(ReaderPref {});

impl<M: WriterMutex, I: ReadIndicator> ReaderPref<M, I> {
    /// Read-locks, arriving at `node`'s indicator slot (reduced modulo the
    /// slot count) instead of the current node's.
    #[inline]
    pub fn lock_shared_on(&self, node: usize) -> ReaderToken {
        if !self.parts.barrier_down() {
            self.parts.wait_until_rp(|| self.parts.barrier_down());
        }
        let token = self.parts.arrive(node);
        if self.parts.writer.is_locked() {
            // Stay arrived: a writer that sees us backs off.
            self.parts.wait_until_rp(|| !self.parts.writer.is_locked());
        }
        token
    }

    /// Read-locks if no barrier is up and the writer mutex is free.
    #[inline]
    pub fn try_lock_shared_on(&self, node: usize) -> Option<ReaderToken> {
        if !self.parts.barrier_down() {
            return None;
        }
        let token = self.parts.arrive(node);
        if self.parts.writer.is_locked() {
            // SAFETY: our own arrival.
            unsafe { self.parts.depart(token) };
            return None;
        }
        Some(token)
    }

    /// Write-locks, queueing on `node`'s part of the writer mutex.
    #[inline]
    pub fn lock_exclusive_on(&self, node: usize) -> M::Guard {
        let guard = self.parts.writer.lock_on(node);
        dekker_fence();
        if self.parts.readers.is_empty() {
            self.parts.enter();
            return guard;
        }
        self.lock_exclusive_slow(node, guard)
    }

    /// Readers were inside when the writer took the mutex: the retry loop
    /// of Fig. 4 (lines 13-21), with one patience for all its rounds.
    #[cold]
    fn lock_exclusive_slow(&self, node: usize, mut guard: M::Guard) -> M::Guard {
        let mut patience = Patience::default();
        loop {
            // Readers have priority: give the mutex up and wait for them.
            // SAFETY: our own acquisition.
            unsafe { self.parts.release_writer(guard) };
            self.parts.wait_drained_patiently(&mut patience);
            guard = self.parts.writer.lock_on(node);
            dekker_fence();
            if self.parts.readers.is_empty() {
                if patience.raised {
                    self.parts.lower_barrier();
                }
                self.parts.enter();
                return guard;
            }
        }
    }

    /// Write-locks if the writer mutex is free and no reader is inside.
    #[inline]
    pub fn try_lock_exclusive_on(&self, node: usize) -> Option<M::Guard> {
        self.parts.try_write_alone(node)
    }

    /// Releases a write acquisition.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    #[inline]
    pub unsafe fn unlock_exclusive_guard(&self, guard: M::Guard) {
        self.parts.leave();
        // SAFETY: forwarded from the caller.
        unsafe { self.parts.release_writer(guard) }
    }

    /// Turns a write acquisition into a read acquisition.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    pub unsafe fn downgrade_guard(&self, guard: M::Guard) -> ReaderToken {
        // SAFETY: forwarded from the caller.
        unsafe { self.parts.downgrade(guard) }
    }
}
