//! The reader side that the two Brandenburg-Anderson locks share: PF-Q
//! "tallies active readers on a central pair of counters in the same
//! fashion as PF-T" (BRAVO paper, Section 5).
//!
//! ```text
//!  rin:  [ arrivals x RINC (56 bits) | lock-specific bits | PRES | PHID ]
//!  rout: [ departures x RINC         | 00000000                         ]
//! ```
//!
//! A reader arrives with `fetch_add(rin, RINC)`, which also tells it whether
//! a writer is present (`PRES`) and in which phase (`PHID`); it departs with
//! `fetch_add(rout, RINC)`. A writer announces itself by setting the writer
//! bits with one RMW on `rin`, whose result (`rticket`) counts exactly the
//! readers that arrived before; it waits until `rout` reaches it. How a
//! blocked reader waits, and how the phase is chosen, is each lock's own.
//!
//! The counters are 64 bits wide: with 32 bits, safe code could wrap them by
//! `mem::forget`-ting 2^24 read guards (lock_api requires that forgetting a
//! guard be safe) and then a writer would be admitted beside a live reader
//! (regression test: `tests/forgotten_guards.rs`); 2^56 forgotten guards
//! take decades. They wrap harmlessly otherwise: only equality is tested.

use crate::sync::{AtomicU64, Ordering};

/// One reader, in `rin` and `rout`.
pub(crate) const RINC: u64 = 0x100;
/// The writer bits a reader looks at.
pub(crate) const WBITS: u64 = 0x3;
/// A writer is present.
pub(crate) const PRES: u64 = 0x2;
/// The present writer's phase.
pub(crate) const PHID: u64 = 0x1;
/// Everything below the reader count.
pub(crate) const LOW: u64 = RINC - 1;

/// Whether PF-T and PF-Q publish their writer's drain target for
/// [`ReaderCounts::is_locked_exclusive`]. Not inside a loom model: a first
/// version's extra store and load in every write of every model made
/// rwlock-core's models take 582 s instead of 400, and no protocol step
/// reads it. There `is_locked_exclusive` answers from the writer bits
/// alone: true from a writer's announcement on, so still true whenever a
/// writer holds the lock, which is what LDU's models rely on.
pub(crate) const PUBLISH_DRAIN: bool = !cfg!(loom);

/// A published drain target meaning "none": no writer, or one that has not
/// published yet. Real targets are multiples of [`RINC`] (low byte zero).
pub(crate) const NO_DRAIN: u32 = 1;

/// The drain target a writer publishes for `rticket`.
#[inline]
pub(crate) fn drain_mark(rticket: u64) -> u32 {
    rticket as u32
}

/// How many times one read acquisition may withdraw from a phase
/// ([`ReaderCounts::withdraw`]) before it waits counted, like the papers'
/// readers. This bounds the withdrawals, not the writer phases that pass
/// during one: a withdrawn reader is counted by no writer until it runs
/// again and arrives anew, so while it is off the CPU any number of writer
/// phases may go first (a counted waiter holds up the next writer
/// instead, which is what made phase-fair locks collapse when threads
/// outnumber cores; `docs/restriction.md`).
#[cfg(not(loom))]
pub(crate) const MAX_WITHDRAWALS: u32 = 4;
/// Inside a model one withdrawal per acquisition covers the path and keeps
/// the state space small.
#[cfg(loom)]
pub(crate) const MAX_WITHDRAWALS: u32 = 1;

/// Readers in (`rin`, with the writer bits) and out (`rout`).
#[derive(Debug)]
pub(crate) struct ReaderCounts {
    pub(crate) rin: AtomicU64,
    pub(crate) rout: AtomicU64,
}

impl ReaderCounts {
    crate::loom_const_fn! {
        pub(crate) fn new() -> Self {
            ReaderCounts {
                rin: AtomicU64::new(0),
                rout: AtomicU64::new(0),
            }
        }
    }

    /// Counts the reader in; returns the writer bits it found (0: it is in).
    #[inline]
    pub(crate) fn arrive(&self) -> u64 {
        // Acquire: pairs with the writer's Release clear of the bits (and the
        // RMWs after it in rin's release sequence).
        self.rin.fetch_add(RINC, Ordering::Acquire) & WBITS
    }

    /// Counts the reader in only if no writer is present.
    #[inline]
    pub(crate) fn try_arrive(&self) -> bool {
        // Relaxed: the CAS re-reads and orders.
        let mut r = self.rin.load(Ordering::Relaxed);
        loop {
            if r & WBITS != 0 {
                return false;
            }
            // Acquire on success: pairs with the last writer's Release clear.
            match self.rin.compare_exchange_weak(
                r,
                r.wrapping_add(RINC),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => r = now,
            }
        }
    }

    /// Takes back the arrival of a reader that found writer bits `w` and
    /// has not been admitted: a waiting reader about to leave the CPU does
    /// this so that the next writer does not count it (and wait for it to
    /// run again). Returns false, changing nothing, if the bits are no
    /// longer `w`: the reader was admitted (its writer left, or the next
    /// writer announced and counts it) and holds the lock.
    ///
    /// Why only while the bits are `w`: the reader arrived after the writer
    /// of `w` announced (that is how it saw `w`), so that writer's
    /// `rticket` does not count it, and no later writer has announced (the
    /// next one has the other phase bit, counts the reader and cannot
    /// finish before it departs, so the bits cannot come back to `w` in
    /// between). Nobody is waiting for this reader, and taking it out of
    /// `rin` is exact for every later `rticket`. Taking it out once the
    /// bits changed would be wrong: a writer counted it. Adding to `rout`
    /// instead would be wrong too: the present writer's `rticket` does
    /// not count it, and a departure it does not expect could match the
    /// count while an earlier reader is still inside.
    #[inline]
    pub(crate) fn withdraw(&self, w: u64) -> bool {
        // Relaxed: the reader has read nothing under the lock, and nobody
        // waits for `rin` to go down (writers wait for `rout`); the CAS is
        // ordered with every announcement by rin's modification order.
        let mut r = self.rin.load(Ordering::Relaxed);
        loop {
            if r & WBITS != w {
                return false;
            }
            match self.rin.compare_exchange_weak(
                r,
                r.wrapping_sub(RINC),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => r = now,
            }
        }
    }

    /// [`withdraw`](Self::withdraw), if `left` (the acquisition's
    /// remaining [`MAX_WITHDRAWALS`]) allows; counts the withdrawal.
    #[inline]
    pub(crate) fn withdraw_within(&self, w: u64, left: &mut u32) -> bool {
        if *left > 0 && self.withdraw(w) {
            *left -= 1;
            true
        } else {
            false
        }
    }

    /// Counts the reader out. The caller then wakes parked writers.
    #[inline]
    pub(crate) fn depart(&self) {
        // SeqCst RMW: Release pairs with the writer's Acquire load of `rout`
        // (our reads happen before its writes); SeqCst for the wake protocol
        // of `Waiters` that the caller runs next.
        self.rout.fetch_add(RINC, Ordering::SeqCst);
    }

    /// Whether every reader counted in `rticket` has departed. Acquire:
    /// pairs with the departing readers' SeqCst increments.
    #[inline]
    pub(crate) fn drained(&self, rticket: u64) -> bool {
        self.rout.load(Ordering::Acquire) == rticket
    }

    /// Any reader or writer present: a snapshot of two pure reads.
    ///
    /// Departures are read before arrivals (as in `try_write_lock`): every
    /// departure counted in `rout` has its arrival ordered before our later
    /// load of `rin` (Acquire: pairs with the departures' SeqCst RMWs), so
    /// a reader that holds the lock always makes the counts differ and gets
    /// `true`. In the other order, readers that arrive and depart between
    /// the two loads can bring `rout` up to the `rin` that counted the
    /// caller, and a holder was told the lock is free (found by the stress
    /// harness's check inside read sections).
    #[inline]
    pub(crate) fn is_locked(&self) -> bool {
        // Acquire: see above.
        let out = self.rout.load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire load above.
        let r = self.rin.load(Ordering::Relaxed);
        r & WBITS != 0 || r & !LOW != out
    }

    /// A writer inside: its bits are set in `rin`, and `rout` has reached
    /// the drain target it published (`drain_at()`: the low 32 bits of its
    /// `rticket`, or [`NO_DRAIN`]). A writer that is still draining is not
    /// inside: the readers it waits for are (parking_lot answers the same
    /// way). Until 2026-11-28 the bits alone answered, and a reader was told
    /// the lock was held exclusively while a writer waited for it (found in
    /// review; the stress harness now checks it inside read sections).
    ///
    /// The writer publishes its target with a plain store right after its
    /// announcement (the line is its own then), and sets [`NO_DRAIN`]
    /// before it hands the lock on. `rin` is read first, with Acquire: if
    /// its bits belong to a writer later than one whose target we might
    /// still read, that writer's announcement Released after the earlier
    /// writer's `NO_DRAIN` (through the writers' hand-off), so we read
    /// `NO_DRAIN` or the new target. 32 bits of the target suffice: a false
    /// `true` needs 2^24 readers between `rout` and the target, and only
    /// this snapshot reads it.
    ///
    /// Inside a loom model the locks publish no target ([`PUBLISH_DRAIN`])
    /// and the bits alone answer.
    #[inline]
    pub(crate) fn is_locked_exclusive(&self, drain_at: impl FnOnce() -> u32) -> bool {
        // Acquire: see above.
        if self.rin.load(Ordering::Acquire) & WBITS == 0 {
            return false;
        }
        if !PUBLISH_DRAIN {
            return true;
        }
        let at = drain_at();
        // Relaxed: a snapshot, after the Acquire above.
        at != NO_DRAIN && self.rout.load(Ordering::Relaxed) as u32 == at
    }
}

/// A reader holds `lock` (the guard `read` takes); a writer comes, and once
/// `announced` says it waits for that reader, the reader must not be told
/// the lock is held exclusively; the writer, once in, must be (the tests of
/// PF-T, PF-Q and brlock; review finding of 2026-11-28).
#[cfg(all(test, not(loom)))]
pub(crate) fn check_waiting_writer_is_not_exclusive<L: lock_api::RawRwLock + Sync>(
    lock: &L,
    read: impl FnOnce(&L) -> L::SharedGuard,
    announced: impl Fn(&L) -> bool,
) {
    let g = read(lock);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let g = lock.lock_exclusive();
            let inside = lock.is_locked_exclusive();
            // SAFETY: our exclusive acquisition.
            unsafe { lock.unlock_exclusive(g) };
            inside
        });
        while !announced(lock) {
            std::thread::yield_now();
        }
        let told_exclusive = lock.is_locked_exclusive();
        // Released before any assertion: a failure must not leave the
        // writer waiting for us (the scope would wait for it for good).
        // SAFETY: our shared acquisition.
        unsafe { lock.unlock_shared(g) };
        let inside = writer.join().unwrap();
        assert!(!told_exclusive, "a waiting writer counted as inside");
        assert!(inside, "the writer inside was not exclusive");
    });
    assert!(!lock.is_locked_exclusive());
}
