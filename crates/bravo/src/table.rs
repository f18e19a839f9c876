//! The global visible-readers table (BRAVO Listing 1, line 7).
//!
//! One table per process, shared by every [`Bravo`](crate::Bravo) lock and
//! every thread. A slot is either 0 (free) or the tag of a lock one
//! fast-path reader holds (its address and biased period:
//! `raw`, "The slot tag").
//!
//! The slots are packed, 8 bytes each, in 128-byte aligned blocks of 16
//! (the adjacent-line prefetcher's pair), and a revoking writer scans
//! contiguous memory the prefetchers stream.
//!
//! # Slot choice
//!
//! The paper hashes (lock address, thread identity) over the whole table
//! (Mix32), so that concurrent readers of one lock write to different
//! cache lines. It notes (Section 7, future directions) that nothing requires that particular
//! function. Here each thread has a *home block*, handed out in the order
//! threads first read fast (block `k mod blocks` for the `k`-th thread), and
//! its slot for a lock is the lock's Fibonacci hash, salted with the home's
//! number, within that block:
//!
//! - readers of one lock still write to different lines (different homes),
//!   and live threads share no block at all up to one per block (256 with
//!   4096 slots), where a hash over the whole table makes two threads share
//!   a line with probability 1/256 for *every* pair of reads;
//! - a thread reading many locks writes only its own line, which stays in
//!   its cache: with the whole-table hash, reads over a pool of 4096 locks
//!   (the harness's interference workload) wrote a line the other thread
//!   had just written on most reads, and `Bravo<parking_lot>` ran at 0.44
//!   to 0.83 of parking_lot on 2 threads; with home blocks, 1.7 to 4.2
//!   (three runs each, `docs/bravo.md`);
//! - the price: one thread holding two locks at once whose hashes meet in
//!   its 16 slots (1 in 16 pairs) reads the second through the slow path,
//!   as any collision does; threads beyond one per block share blocks, and
//!   the salt spreads one lock over the shared block's slots.
//!
//! # Size
//!
//! [`DEFAULT_SLOTS`] (4096, the paper's size) unless the machine has more
//! than 64 CPUs, then 64 slots per CPU rounded up to a power of two (the
//! paper's suggestion to size from the CPU count): beyond one thread per
//! block, threads share blocks and collide more, and
//! a revocation scans the whole table: for 4096 slots, 2.3 to 5.4 µs with
//! Listing 1's loop and 1.65 to 2.5 µs with the block scan of the default
//! policy (two runs on the 2-core development VM) (`cargo bench --bench latency -- bravo_revocation`;
//! `docs/bravo.md`).
//!
//! The size is fixed at first use. Before that, [`configure`] or the
//! environment variable `BRAVO_TABLE_SLOTS` may choose another power of two
//! between 1 and [`MAX_SLOTS`]; a call after first use with another size
//! than the one in force, or an invalid size, is a [`TableError`] (the size
//! in force is accepted). A malformed environment value is reported on stderr
//! once, naming the variable, and the default is used; the report never
//! panics (a closed or full stderr loses it), since the table may be
//! created on a lock path.

use core::fmt;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Ordering};

/// The paper's table size, used on machines with up to 64 CPUs.
pub const DEFAULT_SLOTS: usize = 4096;

/// The largest table [`configure`] accepts (2^24 slots, 128 MiB).
pub const MAX_SLOTS: usize = 1 << 24;

/// The environment variable read at first use when [`configure`] was not called.
pub const ENV_VAR: &str = "BRAVO_TABLE_SLOTS";

/// A block of slots is `1 << BLOCK_BITS` slots: 16, 128 bytes.
pub(crate) const BLOCK_BITS: u32 = 4;
const BLOCK: usize = 1 << BLOCK_BITS;

/// Why a table size was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// A table needs at least one slot.
    Zero,
    /// Slots are indexed by masking a hash: the size must be a power of two.
    NotPowerOfTwo(usize),
    /// Larger than [`MAX_SLOTS`].
    TooLarge(usize),
    /// The table was already in use (or configured) with this many slots.
    AlreadyInitialized {
        /// The size in force.
        slots: usize,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Zero => write!(f, "the visible-readers table needs at least one slot"),
            TableError::NotPowerOfTwo(n) => {
                write!(f, "visible-readers table size {n} is not a power of two")
            }
            TableError::TooLarge(n) => write!(
                f,
                "visible-readers table size {n} exceeds the maximum of {MAX_SLOTS} slots"
            ),
            TableError::AlreadyInitialized { slots } => write!(
                f,
                "the visible-readers table is already in use with {slots} slots; \
                 configure it before the first Bravo lock is used"
            ),
        }
    }
}

impl std::error::Error for TableError {}

/// How a value of [`ENV_VAR`] is read: a decimal size (whitespace around
/// it ignored) that [`validate`] accepts; the error says why not. At first
/// use a refused value is reported once on stderr and the default is used.
pub fn parse_env_value(raw: &str) -> Result<usize, String> {
    let text = raw.trim();
    // ASCII digits only (`usize::from_str` also takes a leading `+`).
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a decimal number"));
    }
    text.parse::<usize>()
        .map_err(|e| e.to_string())
        .and_then(|n| validate(n).map_err(|e| e.to_string()))
}

/// Checks a requested size.
pub fn validate(slots: usize) -> Result<usize, TableError> {
    if slots == 0 {
        Err(TableError::Zero)
    } else if slots > MAX_SLOTS {
        Err(TableError::TooLarge(slots))
    } else if !slots.is_power_of_two() {
        Err(TableError::NotPowerOfTwo(slots))
    } else {
        Ok(slots)
    }
}

/// The default size for a machine with `cpus` CPUs: 64 slots a CPU,
/// rounded up to a power of two, between [`DEFAULT_SLOTS`] and
/// [`MAX_SLOTS`].
pub fn default_slots(cpus: usize) -> usize {
    // Capped before rounding: a power of two above the cap (or past
    // `usize`, which wrapped to 0 in release builds) is never asked for.
    DEFAULT_SLOTS.max(cpus.saturating_mul(64).min(MAX_SLOTS).next_power_of_two())
}

/// The visible-readers table.
pub(crate) struct Table {
    blocks: Box<[CachePadded<[AtomicUsize; BLOCK]>]>,
    mask: usize,
}

impl Table {
    fn new(slots: usize) -> Table {
        let blocks = slots.div_ceil(BLOCK);
        Table {
            blocks: (0..blocks)
                .map(|_| CachePadded::new(core::array::from_fn(|_| AtomicUsize::new(0))))
                .collect(),
            mask: slots - 1,
        }
    }

    /// Number of slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.mask + 1
    }

    /// The slot a hash selects.
    #[inline]
    pub(crate) fn slot(&self, hash: u64) -> &AtomicUsize {
        let i = hash as usize & self.mask;
        &self.blocks[i / BLOCK][i % BLOCK]
    }

    /// The slots in 128-byte blocks of 16, in address order (one shorter
    /// block for tables of fewer than 16 slots).
    #[inline]
    pub(crate) fn blocks(&self) -> impl Iterator<Item = &[AtomicUsize]> + '_ {
        let n = self.len().min(BLOCK);
        self.blocks.iter().map(move |b| &b[..n])
    }

    /// Every slot, in address order.
    #[inline]
    pub(crate) fn slots(&self) -> impl Iterator<Item = &AtomicUsize> + '_ {
        self.blocks().flatten()
    }

    /// Whether some slot holds `lock`, scanning 16-slot blocks at a time.
    ///
    /// Acquire: pairs with a fast-path reader's CAS publishing its slot, so
    /// that seeing it is seeing a reader (used only by `is_locked`, a
    /// snapshot).
    pub(crate) fn contains(&self, lock: usize) -> bool {
        self.slots().any(|s| s.load(Ordering::Acquire) == lock)
    }
}

#[cfg(not(loom))]
mod global {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    static TABLE: OnceLock<Table> = OnceLock::new();

    /// The process's table, created at first use.
    #[inline]
    pub(crate) fn table() -> &'static Table {
        match TABLE.get() {
            Some(t) => t,
            None => init(),
        }
    }

    #[cold]
    fn init() -> &'static Table {
        create_or_wait(|| from_env().unwrap_or_else(detected_default)).0
    }

    std::thread_local! {
        /// This thread is creating the table. `const`, without a
        /// destructor: readable from anywhere, teardown included.
        static CREATING: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }

    /// Taken, once, by the thread that creates the table: only that thread
    /// ever enters `TABLE`'s initialisation, so `ensure` never waits inside
    /// it for another thread (see `ensure`).
    static CLAIMED: AtomicBool = AtomicBool::new(false);

    /// Whether this call took the creation.
    fn claim() -> bool {
        // Relaxed: a claim; the table itself is published by the
        // `OnceLock`.
        CLAIMED
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// Creates the table with `slots()` slots; the caller took the claim.
    /// Whether it was created here (`false`: it existed).
    fn create_claimed(slots: impl FnOnce() -> usize) -> (&'static Table, bool) {
        let mut created = false;
        let t = TABLE.get_or_init(|| {
            created = true;
            CREATING.with(|c| c.set(true));
            let t = Table::new(slots());
            CREATING.with(|c| c.set(false));
            t
        });
        (t, created)
    }

    /// The table, created here with `slots()` slots if nobody has started
    /// creating it, or else waited for (by polling: never inside `TABLE`'s
    /// initialisation, where an `ensure` winner must not find us).
    ///
    /// # Panics
    ///
    /// Called during this thread's own creation of the table (from the
    /// allocator, say), which it would wait for forever.
    fn create_or_wait(slots: impl FnOnce() -> usize) -> (&'static Table, bool) {
        if let Some(t) = TABLE.get() {
            return (t, false);
        }
        if claim() {
            return create_claimed(slots);
        }
        assert!(
            !CREATING.with(|c| c.get()),
            "bravo: the visible-readers table was asked for while this thread creates it \
             (from the allocator?)"
        );
        loop {
            if let Some(t) = TABLE.get() {
                return (t, false);
            }
            std::thread::yield_now();
        }
    }

    /// Creates the table if it does not exist yet and nobody is creating
    /// it; whether it exists. The creation allocates and reads the
    /// environment, which may take a lock (a program's allocator that takes
    /// a `Bravo` lock, through the LD_PRELOAD shim), while the caller holds
    /// read permission on another (it is about to set that lock's bias).
    /// So `ensure` never waits for a creation under way: on this thread
    /// (the allocator's call re-entering; `OnceLock` would deadlock, found
    /// in review 2026-11-27), nor on another, whose allocator may wait for
    /// the caller's read permission (found in review 2026-11-28,
    /// `tests/table_creation.rs`); it answers `false` and the bias is set
    /// at a later reading. Every creator takes the claim first
    /// (`configure` and `slots` too, which wait for another creator by
    /// polling), so the thread that wins it here is alone in `TABLE`'s
    /// initialisation. Called before a bias is set, so that fast readers,
    /// which only run while one is, always find the table.
    pub(crate) fn ensure() -> bool {
        TABLE.get().is_some()
            || (!CREATING.with(|c| c.get()) && claim() && {
                // Not a cancellation point (reads files; a lock call must
                // not be one).
                rwlock_core::wait::without_cancellation(|| {
                    create_claimed(|| from_env().unwrap_or_else(detected_default))
                });
                true
            })
    }

    fn detected_default() -> usize {
        default_slots(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    fn from_env() -> Option<usize> {
        static WARNED: AtomicBool = AtomicBool::new(false);
        // Not valid Unicode: reported as malformed too (found silently
        // ignored in review, 2026-11-27).
        let raw = std::env::var_os(ENV_VAR)?;
        let parsed = match raw.to_str() {
            Some(text) => super::parse_env_value(text),
            None => Err(String::from("not valid UTF-8")),
        };
        match parsed {
            Ok(n) => Some(n),
            Err(why) => {
                // Relaxed: only de-duplicates one diagnostic line.
                if !WARNED.swap(true, Ordering::Relaxed) {
                    // Not `eprintln!`: it panics when stderr is closed or
                    // full, and the table is created on lock paths (a
                    // revocation in progress, at worst). A lost diagnostic
                    // is better than a lock wedged by a panic.
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "bravo: ignoring {ENV_VAR}={raw:?}: {why}; using the default size"
                    );
                }
                None
            }
        }
    }

    /// Sets the table size before first use (see the module docs).
    pub fn configure(slots: usize) -> Result<(), TableError> {
        let slots = validate(slots)?;
        let (t, created) = create_or_wait(|| slots);
        if created || t.len() == slots {
            Ok(())
        } else {
            Err(TableError::AlreadyInitialized { slots: t.len() })
        }
    }

    /// The table's size (creating it if it is not yet in use).
    pub fn slots() -> usize {
        table().len()
    }
}

#[cfg(loom)]
mod global {
    use super::*;

    std::thread_local! {
        /// The size this test thread's models run with (set before
        /// `loom::model`, which runs the model's threads on this thread).
        static MODEL_SLOTS: core::cell::Cell<usize> = const { core::cell::Cell::new(2) };
    }

    loom::lazy_static! {
        // A fresh table for each execution of a model.
        static ref TABLE: Table = Table::new(MODEL_SLOTS.with(|s| s.get()));
    }

    /// The model's table.
    pub(crate) fn table() -> &'static Table {
        &TABLE
    }

    /// The model's table always exists.
    pub(crate) fn ensure() -> bool {
        true
    }

    /// Sets the size of the tables of the models that follow.
    pub fn configure(slots: usize) -> Result<(), TableError> {
        let slots = validate(slots)?;
        MODEL_SLOTS.with(|s| s.set(slots));
        Ok(())
    }

    /// The table's size.
    pub fn slots() -> usize {
        table().len()
    }
}

pub use global::{configure, slots};
pub(crate) use global::{ensure, table};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_validated() {
        assert_eq!(validate(0), Err(TableError::Zero));
        assert_eq!(validate(3), Err(TableError::NotPowerOfTwo(3)));
        assert_eq!(
            validate(MAX_SLOTS * 2),
            Err(TableError::TooLarge(MAX_SLOTS * 2))
        );
        assert_eq!(validate(1), Ok(1));
        assert_eq!(validate(4096), Ok(4096));
        assert!(
            TableError::NotPowerOfTwo(3)
                .to_string()
                .contains("power of two")
        );
        assert_eq!(configure(0), Err(TableError::Zero));
    }

    #[test]
    fn default_grows_with_cpus() {
        assert_eq!(default_slots(1), 4096);
        assert_eq!(default_slots(64), 4096);
        assert_eq!(default_slots(65), 8192);
        assert_eq!(default_slots(256), 16384);
        // Absurd counts stay within the table's bound (`next_power_of_two`
        // of a saturated product overflowed: a panic in debug builds).
        assert_eq!(default_slots(1 << 20), MAX_SLOTS);
        assert_eq!(default_slots(usize::MAX), MAX_SLOTS);
    }

    #[test]
    fn env_values_are_plain_decimal() {
        assert_eq!(parse_env_value(" 8192\n"), Ok(8192));
        for bad in ["+8", "-8", "0x10", "", " ", "8 192"] {
            assert!(parse_env_value(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_env_value("3").unwrap_err().contains("power of two"));
    }

    #[test]
    fn tiny_tables_index_inside() {
        for n in [1usize, 2, 4, 16, 32] {
            let t = Table::new(n);
            assert_eq!(t.len(), n);
            assert_eq!(t.slots().count(), n);
            for h in 0..100u64 {
                let s = t.slot(h.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                assert!(t.slots().any(|x| core::ptr::eq(x, s)));
            }
        }
    }

    #[test]
    fn blocks_are_cache_aligned() {
        let t = Table::new(64);
        for b in t.blocks.iter() {
            assert_eq!(b.as_ptr() as usize % 128, 0);
        }
        // After first use a different size is refused with the size in force.
        let n = slots();
        let other = if n == 8 { 16 } else { 8 };
        assert_eq!(
            configure(other),
            Err(TableError::AlreadyInitialized { slots: n })
        );
        assert_eq!(configure(n), Ok(()));
    }
}
