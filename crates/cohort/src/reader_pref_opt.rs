//! C-RW-RP-opt: the reader-preference lock with the `WActive` flag
//! (PPoPP'13 Section 3.3, the loop that replaces Figure 4's lines 11-21).
//!
//! # Protocol
//!
//! ```text
//! reader:                                   writer:
//!   while RBarrier != 0: wait                 acquire writer mutex
//!   arrive at ReadIndr                        loop:
//!   while WActive: wait                         wait until ReadIndr empty,
//!   <read critical section>                       raising RBarrier once out
//!   depart                                        of patience
//!                                               WActive = true
//!                                               if ReadIndr empty: break
//!                                               WActive = false
//!                                             lower RBarrier if raised
//!                                             <write critical section>
//!                                             WActive = false
//!                                             release writer mutex
//! ```
//!
//! Readers watch `WActive`, the *logical* state of the writer mutex, instead
//! of the mutex itself, and the writer keeps the mutex while it waits for
//! readers. So writers no longer hand the mutex around while readers wait
//! (the "writer ownership circulation" of plain C-RW-RP): readers are held
//! back only in the short window between `WActive = true` and the writer's
//! re-check. `WActive` changes only under the writer mutex.
//!
//! The Dekker pair: the reader arrives (SeqCst RMW) then loads `WActive`
//! (SeqCst); the writer stores `WActive = true` (SeqCst) then scans the
//! indicator (SeqCst loads). Whichever comes first in the SeqCst order is
//! seen by the other.
//!
//! `WActive` is the lock's writer-state line (`WriterLine::state`, on
//! its own line: every writer writes it, every reader reads it): `IDLE`
//! is false, `ACTIVATING` (set, readers not re-checked yet) and `INSIDE`
//! (re-check passed: `is_locked_exclusive`) are true.

use rwlock_core::sync::Ordering;

use crate::CPtlTkt;
use crate::indicator::{IngressEgress, ReadIndicator};
use crate::rw::{
    ACTIVATING, IDLE, Parts, Patience, ReaderToken, WriterMutex, dekker_fence, impl_raw_rwlock,
};

/// The reader-preference lock with `WActive`, over writer mutex `M` and read
/// indicator `I`; see the [module docs](self). [`CRwRpOpt`](crate::CRwRpOpt)
/// is the paper's configuration.
pub struct ReaderPrefOpt<M = CPtlTkt, I = IngressEgress> {
    parts: Parts<M, I>,
}

impl_raw_rwlock!(ReaderPrefOpt {});

impl<M: WriterMutex, I: ReadIndicator> ReaderPrefOpt<M, I> {
    #[inline]
    fn writer_active(&self) -> bool {
        // SeqCst: the reader's half of the Dekker pair (module docs).
        self.parts.writer_line.state.load(Ordering::SeqCst) != IDLE
    }

    /// Read-locks, arriving at `node`'s indicator slot (reduced modulo the
    /// slot count) instead of the current node's.
    #[inline]
    pub fn lock_shared_on(&self, node: usize) -> ReaderToken {
        if !self.parts.barrier_down() {
            self.parts.wait_until_rp(|| self.parts.barrier_down());
        }
        let token = self.parts.arrive(node);
        if self.writer_active() {
            // Stay arrived: a validating writer that sees us steps back.
            self.parts.wait_until_rp(|| !self.writer_active());
        }
        token
    }

    /// Read-locks if no barrier is up and no writer is active.
    #[inline]
    pub fn try_lock_shared_on(&self, node: usize) -> Option<ReaderToken> {
        if !self.parts.barrier_down() {
            return None;
        }
        let token = self.parts.arrive(node);
        if self.writer_active() {
            // SAFETY: our own arrival.
            unsafe { self.parts.depart(token) };
            return None;
        }
        Some(token)
    }

    /// Sets `WActive` and re-checks the readers; clears it again (waking
    /// readers parked on it) if one is inside. The caller holds the writer
    /// mutex.
    #[inline]
    fn activate(&self) -> bool {
        // SeqCst: the writer's half of the Dekker pair (module docs).
        self.parts
            .writer_line
            .state
            .store(ACTIVATING, Ordering::SeqCst);
        dekker_fence();
        if self.parts.readers.is_empty() {
            // Still `WActive` for readers (a later value in the line's
            // modification order than the SeqCst store they pair with).
            self.parts.enter();
            return true;
        }
        self.deactivate();
        false
    }

    #[inline]
    fn deactivate(&self) {
        // SeqCst RMW: the parking protocol's state change (readers wait
        // for `WActive == false`); Release orders the write critical section
        // before readers that see it.
        self.parts.writer_line.state.swap(IDLE, Ordering::SeqCst);
        self.parts.wake();
    }

    /// Write-locks, queueing on `node`'s part of the writer mutex.
    #[inline]
    pub fn lock_exclusive_on(&self, node: usize) -> M::Guard {
        let guard = self.parts.writer.lock_on(node);
        if self.parts.readers.is_empty() && self.activate() {
            return guard;
        }
        self.lock_exclusive_slow(guard)
    }

    /// Readers were inside: the loop that replaces Fig. 4 lines 11-21 (wait
    /// for them, set `WActive`, validate), with one patience for all its
    /// rounds.
    #[cold]
    fn lock_exclusive_slow(&self, guard: M::Guard) -> M::Guard {
        let mut patience = Patience::default();
        loop {
            if !self.parts.readers.is_empty() {
                self.parts.wait_drained_patiently(&mut patience);
            }
            if self.activate() {
                break;
            }
        }
        if patience.raised {
            self.parts.lower_barrier();
        }
        guard
    }

    /// Write-locks if the writer mutex is free and no reader is inside.
    #[inline]
    pub fn try_lock_exclusive_on(&self, node: usize) -> Option<M::Guard> {
        let guard = self.parts.writer.try_lock_on(node)?;
        if self.parts.readers.is_empty() && self.activate() {
            return Some(guard);
        }
        // SAFETY: our own acquisition.
        unsafe { self.parts.release_writer(guard) };
        None
    }

    /// Releases a write acquisition.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    #[inline]
    pub unsafe fn unlock_exclusive_guard(&self, guard: M::Guard) {
        // Relaxed store would do for ordering (the mutex release follows),
        // but readers park on `WActive`: clear it with the SeqCst RMW the
        // parking protocol needs; `release_writer` wakes them.
        self.parts.writer_line.state.swap(IDLE, Ordering::SeqCst);
        // SAFETY: forwarded from the caller.
        unsafe { self.parts.release_writer(guard) }
    }

    /// Turns a write acquisition into a read acquisition: arrive, clear
    /// `WActive`, release the writer mutex.
    ///
    /// # Safety
    ///
    /// `guard` must come from an unreleased write acquisition of this lock.
    pub unsafe fn downgrade_guard(&self, guard: M::Guard) -> ReaderToken {
        let token = self.parts.arrive(crate::nodes::current());
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock_exclusive_guard(guard) };
        token
    }
}
