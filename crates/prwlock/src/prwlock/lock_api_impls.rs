//! The `lock_api` traits of [`PrwLock`] and [`ReadGuardExt`]: thin
//! forwarding to the protocol steps in the parent module.

use core::marker::PhantomData;
use core::ptr;

use super::{ACTIVE_HOLDERS, EXCLUSIVE, ID_MASK, PASS, PrwLock, ReadToken, WRITER, WriteToken};
use crate::domain::{self, Record};
use crate::sync::Ordering;

// SAFETY: a shared hold is granted only when no writer holds the lock, and
// an exclusive hold only after every passive and active reader is gone and
// `WRITER` keeps new ones out (module docs); the try variants never block;
// `is_locked*` only read.
unsafe impl lock_api::RawRwLock for PrwLock {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = PrwLock::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use PrwLock::new()");

    type SharedGuard = ReadToken;
    type ExclusiveGuard = WriteToken;

    #[inline]
    fn lock_shared(&self) -> ReadToken {
        match self.read_fast() {
            Some(token) => token,
            None => self.lock_shared_slow(),
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<ReadToken> {
        self.read_fast().or_else(|| self.read_attempt())
    }

    #[inline]
    unsafe fn unlock_shared(&self, token: ReadToken) {
        self.unlock_shared_inline(token)
    }

    fn lock_exclusive(&self) -> WriteToken {
        let own = self.own_record_not_reading();
        // The whole acquisition (mutex, then consensus) waits through the
        // gate: a writer waiting for readers to leave counts as active.
        self.gate.wait(|| {
            if !self.acquire_writer() {
                self.consensus(own, true);
            }
        });
        // Relaxed: a flag for `is_locked_exclusive`; we hold the mutex.
        self.state.fetch_or(EXCLUSIVE, Ordering::Relaxed);
        WriteToken(PhantomData)
    }

    fn try_lock_exclusive(&self) -> Option<WriteToken> {
        let id = self.id();
        // A visible reader already makes the attempt fail: no need to shut
        // readers out and pay for a barrier to find out.
        // Relaxed: a hint; the consensus below decides.
        if self.active.load(Ordering::Relaxed) & ACTIVE_HOLDERS != 0 || self.domain.any_holds(id) {
            return None;
        }
        // Relaxed: the CAS validates it.
        let free = self.state.load(Ordering::Relaxed);
        if free & (WRITER | PASS) != 0 {
            return None;
        }
        // SeqCst: as in `acquire_writer`.
        self.state
            .compare_exchange(free, free | WRITER, Ordering::SeqCst, Ordering::Relaxed)
            .ok()?;
        let own = domain::find(self.domain).map_or(ptr::null(), |r| r as *const Record);
        if self.consensus(own, false) {
            // Relaxed: as in `lock_exclusive`.
            self.state.fetch_or(EXCLUSIVE, Ordering::Relaxed);
            Some(WriteToken(PhantomData))
        } else {
            // Readers are in: back out without PASS (a passed writer would
            // skip the consensus these readers defeat).
            self.release_writer_free();
            None
        }
    }

    unsafe fn unlock_exclusive(&self, _token: WriteToken) {
        // SeqCst: see `acquire_writer_slow`.
        if self.writers_waiting.load(Ordering::SeqCst) != 0 {
            // Fig. 4 WriteUnlock lines 1-2: WRITER stays set, so no reader
            // got in and the next writer inherits the consensus. SeqCst RMW
            // (Release for our section; required before `wake_all`).
            self.state.fetch_xor(EXCLUSIVE | PASS, Ordering::SeqCst);
            self.writers.wake_all();
        } else {
            self.release_writer_free();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Acquire/Relaxed: a snapshot, as lock_api documents.
        let s = self.state.load(Ordering::Acquire);
        let id = s & ID_MASK;
        s & WRITER != 0
            || (id != 0
                && (self.active.load(Ordering::Relaxed) & ACTIVE_HOLDERS != 0
                    || self.domain.any_holds(id)))
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot.
        self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0
    }
}

// SAFETY: the downgraded hold is published (slot or `active`) before the
// writer mutex is released, and released without PASS, so the next writer
// runs a full consensus that sees it (paper Section 3.4 "Downgrade").
unsafe impl lock_api::RawRwLockDowngrade for PrwLock {
    unsafe fn downgrade(&self, _token: WriteToken) -> ReadToken {
        let id = self.id();
        let reserved =
            domain::register(self.domain).and_then(|r| r.free_slot().map(|slot| (r, slot)));
        let token = match reserved {
            Some((record, slot)) => {
                // Published by the releasing RMW below, which the next
                // writer's CAS on `state` reads from; Release as in
                // `read_fast` (the slot's previous hold).
                record.slot(slot).store(id, Ordering::Release);
                ReadToken::passive(record, slot)
            }
            None => {
                self.mark_slow_release();
                // Relaxed: published by the releasing RMW below.
                self.active.fetch_add(1, Ordering::Relaxed);
                ReadToken::active()
            }
        };
        self.release_writer_free();
        token
    }
}

/// [`PrwLock::schedule_out`] on a `lock_api` read guard.
pub trait ReadGuardExt {
    /// Converts the calling thread's passive holds of the guard's lock to
    /// active ones before blocking; see [`PrwLock::schedule_out`].
    fn schedule_out(&self) -> usize;
}

impl<T: ?Sized> ReadGuardExt for lock_api::RwLockReadGuard<'_, PrwLock, T> {
    fn schedule_out(&self) -> usize {
        let lock = lock_api::RwLockReadGuard::rwlock(self);
        // `schedule_out` changes how the hold is counted, not who holds the
        // lock; the guard still releases it exactly once.
        // SAFETY: no lock state is changed behind the guard's back.
        unsafe { lock.raw() }.schedule_out()
    }
}
