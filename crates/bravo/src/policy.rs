//! When to bias a lock towards readers, and the optional refinements of the
//! paper's Section 7.
//!
//! A [`Policy`] is a type parameter of [`Bravo`](crate::Bravo), so every
//! choice is a constant the compiler folds away. [`Listing1`] is the paper's
//! algorithm exactly; [`DefaultPolicy`] adds the refinements that paid for
//! themselves in the comparison harness (`docs/results.md`, section
//! "BRAVO refinements", gives the before/after figures of each).

/// The bias policy and refinements of a [`Bravo`](crate::Bravo) lock.
pub trait Policy: Send + Sync + 'static {
    /// The slow-down guard `N` of Listing 1 (line 8): after a revocation
    /// that took `t`, readers may not re-enable bias for `N × t`, bounding
    /// the writers' slow-down from revocation near `1 / (N + 1)`.
    const SLOWDOWN_GUARD: u64 = 9;

    /// Section 7, "readers make progress during revocation": a writer that
    /// finds bias set revokes it *before* taking the underlying lock, so
    /// readers arriving during the scan take the slow path and enter
    /// instead of queueing behind the writer. Writers still serialise on
    /// the revocation (a flag in the lock word), so at most one scan runs.
    const REVOKE_BEFORE_LOCK: bool = false;

    /// Section 7, "secondary hash": a reader whose slot is taken probes a
    /// second slot before falling back to the slow path.
    const SECOND_PROBE: bool = false;

    /// Section 7, "accelerate the revocation scan": the writer first looks
    /// for the lock a whole 128-byte block at a time (16 slots compared
    /// with one branch), and waits slot by slot only in blocks that hold it.
    const BLOCK_SCAN: bool = false;

    /// Not from the paper: each thread remembers the one lock it last saw
    /// unbiased, and its next acquisition of that lock goes straight to `L`
    /// without first loading the lock word (which shares `L`'s cache line:
    /// loading it and then writing `L` costs two coherence transactions
    /// where `L` alone costs one). The slow read re-loads the word after
    /// acquiring `L` (the line is then local) and forgets the hint as soon
    /// as bias is back. Never needed for correctness.
    const UNBIASED_HINT: bool = false;

    /// Section 7, "adaptive bias policy": the inhibit window is `N × 2^e × t`,
    /// where `e` rises by one (up to +6) when the bias just revoked lived
    /// shorter than its own inhibit window (bias that pays less than it
    /// costs) and falls by one (down to -3) when it lived longer.
    const ADAPTIVE: bool = false;

    /// Not from the paper: a process-wide count of the biased periods of
    /// the locks that use it, so that a writer holding `L` that finds the
    /// count at 0 skips loading the lock word, whose cache line another
    /// thread's failed acquisition of `L` may just have taken away
    /// (`raw/biased.rs` states the protocol and why a 0 proves the word
    /// clean). Sound only while no lock's bytes are copied and the copy
    /// used beside the original: see [`UncountedPolicy`].
    const CLEAN_BY_COUNT: bool = false;
}

/// BRAVO exactly as Listing 1 of the paper: `N = 9`, one probe, a plain
/// scan under the writer's lock, fixed inhibit window.
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing1;

impl Policy for Listing1 {}

/// What `Bravo<L>` uses unless told otherwise: Listing 1 plus the
/// refinements that measured as improvements on the 2-core development
/// machine (`docs/results.md`, "BRAVO refinements"):
/// [`REVOKE_BEFORE_LOCK`](Policy::REVOKE_BEFORE_LOCK) (reader throughput
/// beside writers), [`BLOCK_SCAN`](Policy::BLOCK_SCAN) (a revocation of
/// the 4096-slot table 2.3 → 1.65 µs and 5.4 → 2.5 µs in two runs),
/// [`UNBIASED_HINT`](Policy::UNBIASED_HINT) and [`ADAPTIVE`](Policy::ADAPTIVE)
/// (fewer futile revocations under heavy writing). Not
/// [`SECOND_PROBE`](Policy::SECOND_PROBE): it measured no better, even
/// with a tiny table, where false sharing of the slots' one cache line
/// dominates.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPolicy;

impl Policy for DefaultPolicy {
    const UNBIASED_HINT: bool = true;
    const REVOKE_BEFORE_LOCK: bool = true;
    const BLOCK_SCAN: bool = true;
    const ADAPTIVE: bool = true;
    const CLEAN_BY_COUNT: bool = true;
}

/// [`DefaultPolicy`] without [`CLEAN_BY_COUNT`](Policy::CLEAN_BY_COUNT),
/// for locks whose bytes code outside Rust may copy: the LD_PRELOAD
/// library's families, since C programs `memcpy` initialised
/// `pthread_rwlock_t`s (undefined by POSIX, and glibc's copies still
/// work). A copy of a biased lock is a bias the process-wide count never
/// saw, and a writer of either copy could then skip the revocation that
/// its fast readers need. Such a lock's writers load its word after
/// acquiring `L`, as Listing 1 does.
#[derive(Debug, Clone, Copy, Default)]
pub struct UncountedPolicy;

impl Policy for UncountedPolicy {
    const UNBIASED_HINT: bool = true;
    const REVOKE_BEFORE_LOCK: bool = true;
    const BLOCK_SCAN: bool = true;
    const ADAPTIVE: bool = true;
}

/// Listing 1 plus only [`Policy::REVOKE_BEFORE_LOCK`] (for measurement).
#[derive(Debug, Clone, Copy, Default)]
pub struct RevokeBeforeLock;

impl Policy for RevokeBeforeLock {
    const REVOKE_BEFORE_LOCK: bool = true;
}

/// Listing 1 plus only [`Policy::SECOND_PROBE`] (for measurement).
#[derive(Debug, Clone, Copy, Default)]
pub struct SecondProbe;

impl Policy for SecondProbe {
    const SECOND_PROBE: bool = true;
}

/// Listing 1 plus only [`Policy::BLOCK_SCAN`] (for measurement).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockScan;

impl Policy for BlockScan {
    const BLOCK_SCAN: bool = true;
}

/// Listing 1 plus only [`Policy::UNBIASED_HINT`] (for measurement).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnbiasedHint;

impl Policy for UnbiasedHint {
    const UNBIASED_HINT: bool = true;
}

/// Listing 1 plus only [`Policy::ADAPTIVE`] (for measurement).
#[derive(Debug, Clone, Copy, Default)]
pub struct Adaptive;

impl Policy for Adaptive {
    const ADAPTIVE: bool = true;
}
