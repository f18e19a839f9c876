//! The `lock_api` traits of [`Bravo`]: each acquisition is `L`'s, wrapped
//! in the fast path (reads) or the revocation (writes, upgrades) of the
//! parent module; the protocol and its orderings are documented there.

use super::*;

// SAFETY: readers are admitted either through `L`'s read permission or
// through a published slot re-checked against `RBIAS`; writers hold `L`'s
// write permission and, before entering, revoke the bias and wait until no
// slot names the lock (the store-load argument of the module docs), so a
// writer is never inside with anyone else. Acquire/Release come from `L`
// and from the orderings documented at each access. Guard state is the
// slot or `L`'s own state, consumed by the matching unlock.
unsafe impl<L: RawRwLock, P: Policy> RawRwLock for Bravo<L, P> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    #[cfg(loom)]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = panic!("loom atomics have no const constructor: use Bravo::new() in models");

    type SharedGuard = BravoSharedGuard<L::SharedGuard>;
    type ExclusiveGuard = L::ExclusiveGuard;

    // `inline(always)`: LLVM otherwise keeps this (fast path, `L`'s own
    // inline fast path and the bias check together) out of line, and the
    // call with its saved registers costs about as much as the fast path
    // (`scripts/op-instructions`, `docs/bravo.md`).
    //
    // A read of a lock this thread last saw unbiased, with its countdown
    // not run out, takes `L`'s read with nothing else to do after it: its
    // own call of `L`'s inline `lock_shared`, so that no flag carried
    // across `L`'s acquisition says whether to look at the word after it
    // (four instructions per read; `docs/bravo.md`, "The slow read's
    // instructions").
    #[inline(always)]
    fn lock_shared(&self) -> Self::SharedGuard {
        'slow: {
            if P::UNBIASED_HINT {
                match hints::unbiased_read(self.addr()) {
                    Some(true) => {
                        stats::count(Event::SlowRead);
                        return BravoSharedGuard {
                            repr: Repr::Slow(self.inner.lock_shared()),
                        };
                    }
                    Some(false) => break 'slow,
                    None => {}
                }
            }
            if let Some(slot) = self.try_lock_biased() {
                return BravoSharedGuard {
                    repr: Repr::Fast(slot),
                };
            }
        }
        let g = self.inner.lock_shared();
        self.slow_read(g, AfterSlowRead::Check)
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        self.read_via(|l| l.try_lock_shared())
    }

    #[inline]
    unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
        match guard.repr {
            Repr::Fast(slot) => {
                // No check that the slot names this lock: a load of the
                // slot cost a third of the whole read pair (see the crate
                // docs).
                // Release: pairs with the revoking writer's Acquire scan.
                slot.store(0, Ordering::Release);
            }
            // SAFETY: the caller's read acquisition of `L`.
            Repr::Slow(g) => unsafe { self.inner.unlock_shared(g) },
        }
    }

    // `inline(always)`: as `lock_shared`; out of line, the call and its
    // saved registers cost more than the wrapper's own work.
    #[inline(always)]
    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        loop {
            self.revoke_early();
            let g = self.inner.lock_exclusive();
            if let Some(g) = self.settle_write(g) {
                return g;
            }
        }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        let g = self.inner.try_lock_exclusive()?;
        // As `settle_write`: no biased period anywhere, so the word is
        // clean (`raw/biased.rs`).
        if Self::no_bias_counted() {
            return Some(g);
        }
        if !self.revoke_if_dirty(Patience::Scan) {
            // SAFETY: the write acquisition just made.
            unsafe { self.inner.unlock_exclusive(g) };
            return None;
        }
        Some(g)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        // SAFETY: the caller's write acquisition of `L`.
        unsafe { self.inner.unlock_exclusive(guard) }
    }

    /// Answers from `L` and, when the bias is (or was just) on, a scan of
    /// the table for fast-path readers; never revokes.
    fn is_locked(&self) -> bool {
        // Acquire: pairs with the bias set, so a scan follows it.
        self.inner.is_locked()
            || biased_word(self.state.load(Ordering::Acquire))
                .is_some_and(|biased| table::table().contains(self.tag(biased)))
    }

    /// `L`'s answer, except while a writer holding `L` still waits for
    /// fast-path readers (a revocation's scan: the word shows `REVOKING`
    /// and the table holds the period's tag): those readers are inside,
    /// so the lock is not held exclusively yet. (`L` alone says `true`
    /// there, and a read section asserting `!is_locked_exclusive()` failed
    /// only under BRAVO; found in review.)
    fn is_locked_exclusive(&self) -> bool {
        // Acquire: as in `is_locked`.
        self.inner.is_locked_exclusive()
            && !biased_word(self.state.load(Ordering::Acquire))
                .is_some_and(|biased| table::table().contains(self.tag(biased)))
    }
}

// SAFETY: fair unlocking is `L`'s for slow readers and writers; a fast
// reader's unlock hands nothing over (a waiting writer polls its slot).
unsafe impl<L: RawRwLockFair, P: Policy> RawRwLockFair for Bravo<L, P> {
    unsafe fn unlock_shared_fair(&self, guard: Self::SharedGuard) {
        match guard.repr {
            // SAFETY: the caller's fast read acquisition.
            Repr::Fast(_) => unsafe { self.unlock_shared(guard) },
            // SAFETY: the caller's read acquisition of `L`.
            Repr::Slow(g) => unsafe { self.inner.unlock_shared_fair(g) },
        }
    }

    unsafe fn unlock_exclusive_fair(&self, guard: Self::ExclusiveGuard) {
        // SAFETY: the caller's write acquisition of `L`.
        unsafe { self.inner.unlock_exclusive_fair(guard) }
    }
    // `bump_*`: the provided versions (fair unlock, then lock again) go
    // through `lock_shared` / `lock_exclusive`, so a bump that lets readers
    // re-enable bias is followed by a revocation.
}

// SAFETY: `L` downgrades atomically; the result is a slow-path read, and
// bias is only enabled afterwards, holding that read permission.
unsafe impl<L: RawRwLockDowngrade, P: Policy> RawRwLockDowngrade for Bravo<L, P> {
    unsafe fn downgrade(&self, guard: Self::ExclusiveGuard) -> Self::SharedGuard {
        // SAFETY: the caller's write acquisition of `L`.
        let g = unsafe { self.inner.downgrade(guard) };
        self.slow_read(g, AfterSlowRead::Check)
    }
}

// SAFETY: timed acquisitions are `L`'s; a timed write revokes like
// `try_lock_exclusive` once `L` is held, waiting for fast readers (and for
// another writer's revocation) until the deadline, and fails (bias
// restored, `L` released) only after it.
// The deadline is a `std::time::Instant`, hence the bound on `L`'s types
// (parking_lot's).
unsafe impl<L, P> RawRwLockTimed for Bravo<L, P>
where
    L: RawRwLockTimed<Duration = std::time::Duration, Instant = std::time::Instant>,
    P: Policy,
{
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, timeout: Self::Duration) -> Option<Self::SharedGuard> {
        self.read_via(|l| l.try_lock_shared_for(timeout))
    }

    fn try_lock_shared_until(&self, timeout: Self::Instant) -> Option<Self::SharedGuard> {
        self.read_via(|l| l.try_lock_shared_until(timeout))
    }

    fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> Option<Self::ExclusiveGuard> {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_exclusive_until(deadline),
            None => Some(self.lock_exclusive()),
        }
    }

    /// As `lock_exclusive`, with the deadline: with
    /// [`Policy::REVOKE_BEFORE_LOCK`] the waits for fast readers happen
    /// without `L` (a thread's nested read, which needs `L`, gets it),
    /// and once `L` is held one scan settles; with [`Listing1`](crate::Listing1) the writer
    /// waits holding `L`, as the paper's does.
    fn try_lock_exclusive_until(&self, timeout: Self::Instant) -> Option<Self::ExclusiveGuard> {
        if !P::REVOKE_BEFORE_LOCK {
            let g = self.inner.try_lock_exclusive_until(timeout)?;
            if !self.revoke_if_dirty(Patience::Until(timeout)) {
                // SAFETY: the write acquisition just made.
                unsafe { self.inner.unlock_exclusive(g) };
                return None;
            }
            return Some(g);
        }
        if !self.revoke_early_until(timeout) {
            return None;
        }
        loop {
            let g = self.inner.try_lock_exclusive_until(timeout)?;
            if self.revoke_if_dirty(Patience::Scan) {
                self.note_unbiased();
                return Some(g);
            }
            // Another writer's revocation runs, or a reader re-enabled the
            // bias and one of its fast readers is in: give `L` back and
            // wait for them without it, until the deadline (as
            // `settle_write`).
            // SAFETY: the write acquisition just made.
            unsafe { self.inner.unlock_exclusive(g) };
            // Past the deadline `L`'s try and one scan may keep succeeding
            // while a reader re-enables the bias each time: stop there.
            if std::time::Instant::now() >= timeout || !self.revoke(Patience::Until(timeout)) {
                return None;
            }
        }
    }
}

// SAFETY: upgradable reads are `L`'s (they exclude writers and other
// upgradable readers, not fast readers); an upgrade revokes the bias like
// a write acquisition before returning exclusive access.
unsafe impl<L: RawRwLockUpgrade, P: Policy> RawRwLockUpgrade for Bravo<L, P> {
    type UpgradableGuard = L::UpgradableGuard;

    fn lock_upgradable(&self) -> Self::UpgradableGuard {
        self.inner.lock_upgradable()
    }

    fn try_lock_upgradable(&self) -> Option<Self::UpgradableGuard> {
        self.inner.try_lock_upgradable()
    }

    unsafe fn unlock_upgradable(&self, guard: Self::UpgradableGuard) {
        // SAFETY: the caller's upgradable acquisition of `L`.
        unsafe { self.inner.unlock_upgradable(guard) }
    }

    /// Waits for fast-path readers as `L`'s upgrade waits for readers. With
    /// [`Policy::REVOKE_BEFORE_LOCK`] it revokes while still upgradable
    /// (readers keep entering through `L`) and keeps the bias off until
    /// `L`'s upgrade returns (`Bravo::hold_bias_off`), so it never waits
    /// for a fast reader holding exclusive access. That early revocation
    /// reads the lock word, not `revoke_early`'s hint (this thread last saw
    /// the lock unbiased): a stale hint made the upgrade wait for a fast
    /// reader holding `L` exclusively, and the reader's nested read, over a
    /// recursive `L`, then waited for it (found in review). With
    /// [`Listing1`](crate::Listing1) it upgrades `L`, then revokes holding
    /// it, as the paper's writer does.
    unsafe fn upgrade(&self, guard: Self::UpgradableGuard) -> Self::ExclusiveGuard {
        if P::REVOKE_BEFORE_LOCK {
            let held = self.hold_bias_off(Patience::Wait);
            debug_assert!(held.is_some(), "a patient revocation always succeeds");
            // SAFETY: the caller's upgradable acquisition of `L`.
            let g = unsafe { self.inner.upgrade(guard) };
            drop(held);
            self.note_unbiased();
            return g;
        }
        // SAFETY: the caller's upgradable acquisition of `L`.
        let g = unsafe { self.inner.upgrade(guard) };
        self.revoke_held();
        g
    }

    /// Never waits for a fast-path reader: the bias is revoked while still
    /// upgradable, with one scan, and the upgrade fails (bias restored) if
    /// a fast reader is inside; otherwise the bias stays off until `L`'s
    /// own `try_upgrade` answers (`Bravo::hold_bias_off`), so a slow
    /// reader that `L` let in cannot bias the lock for new fast readers in
    /// between.
    unsafe fn try_upgrade(
        &self,
        guard: Self::UpgradableGuard,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // Still upgradable: writers are excluded, so a failed scan may restore
        // the bias (see `Patience`).
        let Some(held) = self.hold_bias_off(Patience::Scan) else {
            return Err(guard);
        };
        // SAFETY: the caller's upgradable acquisition of `L`.
        let upgraded = unsafe { self.inner.try_upgrade(guard) };
        drop(held);
        if upgraded.is_ok() {
            self.note_unbiased();
        }
        upgraded
    }
}

// SAFETY: forwarded to `L`; fast readers hold no upgradable state.
unsafe impl<L: RawRwLockUpgradeFair, P: Policy> RawRwLockUpgradeFair for Bravo<L, P> {
    unsafe fn unlock_upgradable_fair(&self, guard: Self::UpgradableGuard) {
        // SAFETY: the caller's upgradable acquisition of `L`.
        unsafe { self.inner.unlock_upgradable_fair(guard) }
    }
}

// SAFETY: forwarded to `L`; the shared result is a slow-path read.
unsafe impl<L: RawRwLockUpgradeDowngrade, P: Policy> RawRwLockUpgradeDowngrade for Bravo<L, P> {
    unsafe fn downgrade_upgradable(&self, guard: Self::UpgradableGuard) -> Self::SharedGuard {
        // SAFETY: the caller's upgradable acquisition of `L`.
        let g = unsafe { self.inner.downgrade_upgradable(guard) };
        self.slow_read(g, AfterSlowRead::Check)
    }

    unsafe fn downgrade_to_upgradable(&self, guard: Self::ExclusiveGuard) -> Self::UpgradableGuard {
        // SAFETY: the caller's write acquisition of `L`.
        unsafe { self.inner.downgrade_to_upgradable(guard) }
    }
}

// SAFETY: as `RawRwLockUpgrade` and `RawRwLockTimed`.
unsafe impl<L, P> RawRwLockUpgradeTimed for Bravo<L, P>
where
    L: RawRwLockUpgradeTimed
        + RawRwLockTimed<Duration = std::time::Duration, Instant = std::time::Instant>,
    P: Policy,
{
    fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> Option<Self::UpgradableGuard> {
        self.inner.try_lock_upgradable_for(timeout)
    }

    fn try_lock_upgradable_until(&self, timeout: Self::Instant) -> Option<Self::UpgradableGuard> {
        self.inner.try_lock_upgradable_until(timeout)
    }

    /// As [`try_upgrade`](RawRwLockUpgrade::try_upgrade), waiting for
    /// fast-path readers and for another writer's revocation (while still
    /// upgradable) and for `L` until the deadline; never fails before it.
    unsafe fn try_upgrade_for(
        &self,
        guard: Self::UpgradableGuard,
        timeout: Self::Duration,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        match std::time::Instant::now().checked_add(timeout) {
            // SAFETY: forwarded from the caller.
            Some(deadline) => unsafe { self.try_upgrade_until(guard, deadline) },
            // SAFETY: forwarded from the caller.
            None => Ok(unsafe { self.upgrade(guard) }),
        }
    }

    /// As [`try_upgrade_for`](Self::try_upgrade_for).
    unsafe fn try_upgrade_until(
        &self,
        guard: Self::UpgradableGuard,
        timeout: Self::Instant,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // Still upgradable: as in `try_upgrade`.
        let Some(held) = self.hold_bias_off(Patience::Until(timeout)) else {
            return Err(guard);
        };
        // SAFETY: the caller's upgradable acquisition of `L`.
        let upgraded = unsafe { self.inner.try_upgrade_until(guard, timeout) };
        drop(held);
        if upgraded.is_ok() {
            self.note_unbiased();
        }
        upgraded
    }
}
