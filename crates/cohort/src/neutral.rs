//! C-RW-NP: the neutral-preference cohort reader-writer lock (PPoPP'13
//! Section 3.2, Figure 3).
//!
//! # Protocol
//!
//! ```text
//! reader:                          writer:
//!   acquire writer mutex             acquire writer mutex
//!   arrive at ReadIndr               while ReadIndr not empty: wait
//!   release writer mutex             <write critical section>
//!   <read critical section>          release writer mutex
//!   depart
//! ```
//!
//! Everybody passes through the writer mutex, so admission follows its
//! order (for a cohort: FIFO per level, batched per node) and neither side
//! is preferred. A reader arrives while holding the mutex, so a writer that
//! holds it afterwards sees every earlier reader: no Dekker pair is needed.
//! The price: every read takes and releases the mutex, so reads serialize
//! on it (briefly) and scale only as far as the cohort mutex does.

use crate::CPtlTkt;
use crate::indicator::{IngressEgress, ReadIndicator};
use crate::rw::{Parts, ReaderToken, WriterMutex, impl_raw_rwlock};

/// The neutral-preference lock over writer mutex `M` and read indicator
/// `I`; see the [module docs](self). [`CRwNp`](crate::CRwNp) is the paper's
/// configuration.
pub struct NeutralPref<M = CPtlTkt, I = IngressEgress> {
    parts: Parts<M, I>,
}

impl_raw_rwlock!(NeutralPref {});

impl<M: WriterMutex, I: ReadIndicator> NeutralPref<M, I> {
    /// Read-locks through `node`'s part of the mutex and indicator.
    #[inline]
    pub fn lock_shared_on(&self, node: usize) -> ReaderToken {
        let guard = self.parts.writer.lock_on(node);
        let token = self.parts.arrive(node);
        // No thread parks on this lock's gate waiting for the mutex (readers
        // and writers queue inside it), so no wake-up is needed.
        // SAFETY: our own acquisition.
        unsafe { self.parts.writer.unlock(guard) };
        token
    }

    /// Read-locks if the mutex is free. Readers pass through the mutex
    /// too, so this can fail while only readers hold the lock: when
    /// another reader is passing through it at that moment (or, on several
    /// nodes, while the global lock is held or requested), as
    /// `lock_api`'s `try_lock_shared` allows.
    #[inline]
    pub fn try_lock_shared_on(&self, node: usize) -> Option<ReaderToken> {
        let guard = self.parts.writer.try_lock_on(node)?;
        let token = self.parts.arrive(node);
        // SAFETY: our own acquisition.
        unsafe { self.parts.writer.unlock(guard) };
        Some(token)
    }

    /// Write-locks, queueing on `node`'s part of the mutex.
    #[inline]
    pub fn lock_exclusive_on(&self, node: usize) -> M::Guard {
        let guard = self.parts.writer.lock_on(node);
        if !self.parts.readers.is_empty() {
            self.parts.wait_drained();
        }
        self.parts.enter();
        guard
    }

    /// Write-locks if the mutex is free and no reader is inside.
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
        // SAFETY: forwarded from the caller; waiters queue in the mutex.
        unsafe { self.parts.writer.unlock(guard) }
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
