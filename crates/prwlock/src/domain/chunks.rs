//! A domain's records, in chunks with a bitmap of the live ones.
//!
//! Writers walk a domain's records on every write (the reports of phase 1,
//! the holds of phase 2, the targets of the kernel helper's consensus), and
//! FCP-RCU's synchronizers on every round. A domain keeps every record it
//! ever had (records are reused, never freed), so a walk that visits them
//! all costs what the most threads the domain ever had at once cost: after
//! 1024 threads that each read once and exited, one thread's prwlock at 20%
//! writes took 3.1 µs an operation instead of 7.5 ns, two pointer-chasing
//! walks of 1024 records per write (`docs/prwlock.md`, "Writers after a
//! burst of threads").
//!
//! So records live in chunks of [`CHUNK`], each with a bitmap `live`: bit
//! `i` is set from the claim of record `i` until its release, and for good
//! when its owner exits with a leaked hold (a retired record, whose holds
//! must stay visible). A walk ([`Records`]) loads one bitmap per chunk and
//! visits the live records only; a record is reached by its index, not
//! through the previous one.
//!
//! # Why a walk misses no record it must see
//!
//! A record whose bit is clear is free (released with every slot free, so
//! it holds nothing and has nothing to report) or being claimed. The
//! claimer sets the bit (SeqCst read-modify-write) before the SeqCst fence
//! of `Domain::claim`, which precedes its first look at a writer word; a
//! writer sets its writer word, runs a SeqCst fence, then loads the bitmap.
//! Of the two fences, the later one in the single SeqCst order sees the
//! other side's store: the writer sees the bit, or the new owner sees the
//! writer and takes no passive hold past it (the argument `claim` made for
//! the list head before). A release clears the bit before it marks the
//! record free, so a claimer that finds the record free (Acquire CAS on
//! `in_use`, reading that Release store) sets the bit after the clear in
//! the bitmap's modification order: a live record never has its bit clear.

use core::marker::PhantomData;
use core::ptr;

use super::Record;
use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// Records per chunk (one bitmap word). Two inside a loom model: of its
/// three threads' records the first comes with the first chunk's
/// publication, the second through `try_claim` and the bit, the third with
/// a second chunk.
pub(crate) const CHUNK: usize = if cfg!(loom) { 2 } else { 64 };

const _: () = assert!(CHUNK <= 64);

/// The bits of a chunk's bitmaps that name records.
const ALL: u64 = if CHUNK == 64 {
    u64::MAX
} else {
    (1 << CHUNK) - 1
};

/// `CHUNK` records and their bitmaps; allocated whole, never freed.
pub(crate) struct Chunk {
    records: [Record; CHUNK],
    /// Bit `i`: `records[i]` is claimed and not released, or retired.
    live: AtomicU64,
    /// Bit `i`: `records[i]` was claimed at least once. A statistic: a
    /// plain atomic even in loom builds, so that models do not explore it.
    used: core::sync::atomic::AtomicU64,
    /// The chunk pushed before this one; set before publication.
    next: *const Chunk,
}

// SAFETY: records are `Sync` (see `Record`), the bitmaps are atomics, and
// `next` is written once before the chunk is published (Release CAS on the
// domain's head) and only read afterwards.
unsafe impl Sync for Chunk {}
// SAFETY: as above.
unsafe impl Send for Chunk {}

impl Chunk {
    /// A new chunk of free records that point back at it, whose record 0
    /// is already claimed by the caller (its bit set), to be pushed before
    /// `next`; the caller owns it until it publishes it.
    fn new_with_first_claimed(next: *const Chunk) -> *mut Chunk {
        let raw = Box::into_raw(Box::new(Chunk {
            records: core::array::from_fn(|_| Record::new()),
            live: AtomicU64::new(1),
            used: core::sync::atomic::AtomicU64::new(1),
            next,
        }));
        // `raw` comes from the box just leaked and nobody else has it yet;
        // the back pointers are written through it, so they stay valid for
        // as long as the chunk (forever: chunks are never freed).
        // SAFETY: so these writes through `raw` are the only accesses.
        unsafe {
            for i in 0..CHUNK {
                (*raw).records[i].chunk = raw;
            }
            (*raw).records[0].claim_fresh();
        }
        raw
    }

    /// The index of `record` in this chunk.
    fn index_of(&self, record: &Record) -> usize {
        (record as *const Record as usize - self.records.as_ptr() as usize)
            / core::mem::size_of::<Record>()
    }

    /// Clears the live bit of `record`, before its release marks it free
    /// (module docs).
    pub(super) fn clear_live(&self, record: &Record) {
        // Release: keeps the record's last stores before the clear (a
        // walker that misses the bit has nothing to read there anyway).
        self.live
            .fetch_and(!(1 << self.index_of(record)), Ordering::Release);
    }
}

/// A domain's chunks, newest first.
pub(crate) struct ChunkList {
    head: AtomicPtr<Chunk>,
}

impl core::fmt::Debug for ChunkList {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChunkList").finish_non_exhaustive()
    }
}

impl ChunkList {
    rwlock_core::loom_const_fn! {
        pub(crate) fn new() -> Self {
            ChunkList {
                head: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// The chunks, newest first.
    fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        // Acquire: pairs with the Release CAS in `claim` that publishes a
        // chunk (its records, back pointers and `next`).
        self.chunks_from(self.head.load(Ordering::Acquire))
    }

    /// The chunks from `head` (null or a chunk of this list, read with
    /// Acquire) on, newest first.
    fn chunks_from(&self, head: *const Chunk) -> impl Iterator<Item = &Chunk> {
        let mut next = head;
        core::iter::from_fn(move || {
            // Published chunks are never freed, and `next` links were
            // written before publication.
            // SAFETY: so `next` is null or a live chunk.
            let chunk = unsafe { next.as_ref()? };
            next = chunk.next;
            Some(chunk)
        })
    }

    /// The live records (module docs).
    pub(crate) fn live(&self) -> Records<'_> {
        Records {
            chunk: ptr::null(),
            live: 0,
            // Acquire: as in `chunks`.
            next: self.head.load(Ordering::Acquire),
            _list: PhantomData,
        }
    }

    /// A free record, now claimed by the caller and live; a new chunk if
    /// none is free. The caller runs the SeqCst fence of the module docs
    /// next.
    ///
    /// First fit, the oldest chunk first and the lowest free record in it:
    /// a claim takes no record past the number of records live now (except
    /// one that races a release: that record is off the walks before it is
    /// free, and the claim moves on to the next), so the records ever
    /// claimed are about the most threads registered at once
    /// (`DomainStats::records`), and live records stay packed in the
    /// oldest chunks.
    ///
    /// A new chunk is pushed only onto the head whose chunks were all found
    /// full: when several threads find them full at once (the first reads
    /// of a domain, a burst of new threads), one chunk wins and the others
    /// look for a record in it instead of pushing one each. (Found on
    /// 2026-11-28: pushing regardless gave a chunk per racing claimer, so 4
    /// threads' first reads made up to 4 chunks, and the records ever
    /// claimed grew past the most threads registered at once.)
    pub(crate) fn claim(&self) -> &Record {
        let mut fresh: *mut Chunk = ptr::null_mut();
        loop {
            // Acquire: pairs with the SeqCst (Release) CAS below that
            // publishes a chunk (its records, back pointers and `next`).
            let head = self.head.load(Ordering::Acquire);
            if let Some(r) = self.claim_free(head) {
                if !fresh.is_null() {
                    // `fresh` came from `Box::into_raw` and was never
                    // published.
                    // SAFETY: so nobody else has it; it is freed once.
                    drop(unsafe { Box::from_raw(fresh) });
                }
                return r;
            }
            if fresh.is_null() {
                fresh = Chunk::new_with_first_claimed(head);
            } else {
                // SAFETY: `fresh` is ours until the CAS below succeeds.
                unsafe { (*fresh).next = head };
            }
            // Release: publishes the chunk (Acquire above, in `chunks` and
            // in `live`); SeqCst on success, as the bit set in
            // `claim_free`. On failure a chunk was pushed since `head`
            // was read: look for a free record in it first.
            if self
                .head
                .compare_exchange(head, fresh, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: published chunks are never freed.
                return unsafe { &(*fresh).records[0] };
            }
        }
    }

    /// A free record of the chunks from `head` on, oldest first, now
    /// claimed by the caller and live.
    fn claim_free(&self, head: *const Chunk) -> Option<&Record> {
        // Cold (a thread's first read in the domain): a few chunks, oldest
        // last in the list.
        let chunks: Vec<&Chunk> = self.chunks_from(head).collect();
        for chunk in chunks.into_iter().rev() {
            // Relaxed: a hint; the CAS on `in_use` decides.
            let mut free = !chunk.live.load(Ordering::Relaxed) & ALL;
            while free != 0 {
                let i = free.trailing_zeros() as usize;
                free &= free - 1;
                let r = &chunk.records[i];
                if r.try_claim() {
                    // SeqCst RMW: the claimer's side of the module docs'
                    // argument (before `Domain::claim`'s fence).
                    chunk.live.fetch_or(1 << i, Ordering::SeqCst);
                    // Relaxed: a statistic.
                    chunk
                        .used
                        .fetch_or(1 << i, core::sync::atomic::Ordering::Relaxed);
                    return Some(r);
                }
            }
        }
        None
    }

    /// Records ever claimed, and of them those live and retired: for
    /// `Domain::stats`, with `is_live` and `is_retired` the record's flags.
    pub(crate) fn counts(
        &self,
        is_live: impl Fn(&Record) -> bool,
        is_retired: impl Fn(&Record) -> bool,
    ) -> (usize, usize, usize) {
        let (mut used, mut live, mut retired) = (0, 0, 0);
        for chunk in self.chunks() {
            // Relaxed: statistics.
            let bits = chunk.used.load(core::sync::atomic::Ordering::Relaxed);
            used += bits.count_ones() as usize;
            for (i, r) in chunk.records.iter().enumerate() {
                if bits & (1 << i) == 0 {
                    continue;
                }
                if is_retired(r) {
                    retired += 1;
                } else if is_live(r) {
                    live += 1;
                }
            }
        }
        (used, live, retired)
    }
}

/// The live records of a domain ([`ChunkList::live`]).
pub(crate) struct Records<'a> {
    /// The chunk whose bits `live` holds (null before the first).
    chunk: *const Chunk,
    /// Bits of `chunk` not visited yet.
    live: u64,
    /// The chunk after it.
    next: *const Chunk,
    _list: PhantomData<&'a ChunkList>,
}

impl<'a> Iterator for Records<'a> {
    type Item = &'a Record;

    #[inline]
    fn next(&mut self) -> Option<&'a Record> {
        loop {
            if self.live != 0 {
                let i = self.live.trailing_zeros() as usize;
                self.live &= self.live - 1;
                // The bits come from `chunk`, a published chunk, never freed.
                // SAFETY: so `chunk` is a live chunk.
                return Some(unsafe { &(*self.chunk).records[i] });
            }
            // SAFETY: as in `ChunkList::chunks`.
            let chunk = unsafe { self.next.as_ref()? };
            self.chunk = chunk;
            // Acquire: pairs with the claimer's SeqCst bit set, so the
            // record's claim is visible with it.
            self.live = chunk.live.load(Ordering::Acquire) & ALL;
            self.next = chunk.next;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use lock_api::RawRwLock;

    use crate::{Domain, PrwLock};

    /// One read of `lock` on this thread (registers it in the lock's
    /// domain).
    fn read_once(lock: &PrwLock) {
        let t = lock.lock_shared();
        // SAFETY: our own shared acquisition.
        unsafe { lock.unlock_shared(t) };
    }

    /// `n` threads each read `lock` once and, all registered at once, run
    /// `check`; none leaves before every one has run it.
    fn registered_at_once(lock: &PrwLock, n: usize, check: impl Fn() + Sync) {
        let all = std::sync::Barrier::new(n);
        std::thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    read_once(lock);
                    all.wait();
                    check();
                    all.wait();
                });
            }
        });
    }

    /// Threads whose first reads race find the chunks full together: one
    /// chunk is pushed, and the records ever claimed stay the most threads
    /// registered at once, batch after batch.
    #[test]
    fn racing_first_claims_share_one_chunk() {
        static D: Domain = Domain::new();
        static LOCK: PrwLock = PrwLock::in_domain(&D);
        const N: usize = 8;
        for _ in 0..4 {
            let start = std::sync::Barrier::new(N);
            let all = std::sync::Barrier::new(N);
            std::thread::scope(|s| {
                for _ in 0..N {
                    s.spawn(|| {
                        start.wait();
                        read_once(&LOCK);
                        all.wait();
                    });
                }
            });
            // As in the test below: scoped threads' thread-locals.
            while D.stats().in_use != 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(D.records.chunks().count(), 1, "{:?}", D.stats());
        assert_eq!(D.stats().records, N);
    }

    #[test]
    fn a_walk_visits_the_live_records_only() {
        static D: Domain = Domain::new();
        static LOCK: PrwLock = PrwLock::in_domain(&D);
        // 150 threads registered at once (three chunks), all gone since.
        registered_at_once(&LOCK, 150, || {});
        // A scoped thread's thread-locals may outlive the scope briefly.
        while D.stats().in_use != 0 {
            std::thread::yield_now();
        }
        read_once(&LOCK);
        let stats = D.stats();
        assert_eq!((stats.records, stats.in_use), (150, 1), "{stats:?}");
        assert_eq!(D.records().count(), 1, "the walk visits this thread only");

        // A thread that exits holding a read (a leaked guard) retires its
        // record, which stays in the walk: its hold must stay visible.
        std::thread::spawn(|| {
            // The raw token is the guard: not unlocking it leaks the hold.
            let _leaked = LOCK.lock_shared();
        })
        .join()
        .unwrap();
        let stats = D.stats();
        assert_eq!((stats.in_use, stats.retired), (1, 1), "{stats:?}");
        assert_eq!(D.records().count(), 2, "the retired record stays");
        assert!(D.records().any(|r| r.holds(LOCK.id())));

        // The next threads reuse the free records, first fit: 140 at once
        // (with this thread and the retired record, 142 live) claim no
        // record that the 150 did not.
        registered_at_once(&LOCK, 140, || {
            assert_eq!(D.records().count(), 142, "{:?}", D.stats());
        });
        assert_eq!(D.stats().records, 150);
    }
}
