//! `LD_PRELOAD` library that puts the workspace's reader-writer locks behind
//! `pthread_rwlock_t`, so unmodified C and C++ programs run on them (the
//! papers' method: BRAVO Section 5.5, the cohort paper's Section 5, FCP's
//! database runs).
//!
//! ```sh
//! cargo build --release -p rwlock-preload
//! RWLOCK_IMPL=bravo LD_PRELOAD=target/release/librwlock_preload.so ./program
//! RWLOCK_IMPL=help  LD_PRELOAD=target/release/librwlock_preload.so true   # the choices
//! ```
//!
//! # What it interposes
//!
//! `pthread_rwlock_init`, `_destroy`, `_rdlock`, `_tryrdlock`,
//! `_timedrdlock`, `_clockrdlock`, `_wrlock`, `_trywrlock`, `_timedwrlock`,
//! `_clockwrlock` and `_unlock`: every call a program or a library makes on
//! a `pthread_rwlock_t` (libstdc++'s `std::shared_mutex` and
//! `std::shared_timed_mutex` included). Attribute objects stay glibc's: the
//! library reads `pthread_rwlockattr_getpshared` and
//! `pthread_rwlockattr_getkind_np` at `pthread_rwlock_init`.
//!
//! **Symbol versions.** glibc exports these functions twice,
//! `@@GLIBC_2.34` (programs linked since glibc 2.34) and `@GLIBC_2.2.5`
//! (older programs, formerly from libpthread). The library exports each
//! name once, unversioned: the dynamic linker binds a versioned reference
//! to an unversioned definition that comes first in the search order
//! (`check_match` in glibc's `dl-lookup.c` accepts a definition of version
//! index 1, "global", for any version that is not hidden), so programs
//! linked against either version bind to it. The tests check both: the C
//! stress program binds `@GLIBC_2.34`, and a second build of it references
//! `@GLIBC_2.2.5` through `.symver`. (rustc gives a `cdylib` its own
//! version script, which cannot be combined with named version nodes.)
//!
//! # The family
//!
//! `RWLOCK_IMPL` names it, read once at the first call (see
//! [`family::FAMILIES`] or `RWLOCK_IMPL=help`): `bravo` (the default,
//! `bravo::RwLock`'s BRAVO over parking_lot, under
//! `bravo::policy::UncountedPolicy`, since C code copies locks), `bravo-pfq`, `pfq`, `pft`,
//! `brlock`, `cohort-wp`, `cohort-np`, `cohort-rp`, `cohort` (reader or
//! writer preference per lock, from `pthread_rwlockattr_setkind_np` or
//! `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP`), `prwlock`,
//! `parking_lot`, `passthrough` (glibc). An unknown value prints one line
//! on stderr and the program runs on the passthrough; `help` lists the
//! choices on stderr and the program runs on the default.
//!
//! # How a lock is kept
//!
//! [`shim`] draws the layout. BRAVO over parking_lot (the default) and
//! parking_lot fit inside the `pthread_rwlock_t` and are valid all-zero, so
//! they live there: no allocation, nothing left behind by a lock freed
//! without `pthread_rwlock_destroy` (libstdc++'s `std::shared_mutex` never
//! calls it). The other families live out of line: the `pthread_rwlock_t`'s
//! first word points to the lock, installed race-free (one compare-and-swap)
//! at the first use of a statically initialised lock (all zero) or at
//! `pthread_rwlock_init`, freed at `pthread_rwlock_destroy`. `unlock` knows
//! a read hold from a write hold without a token: a thread's read holds
//! (with the per-acquisition guard BRAVO, brlock, cohort and prwlock need
//! to release the right slot, node or record after a migration) are in a
//! thread-local table (module `held`), the writer's identity in the lock.
//!
//! # Errors (POSIX's codes)
//!
//! - `EINVAL`: a null lock, a null or malformed `abstime` (nanoseconds
//!   outside `[0, 1e9)`), a clock other than `CLOCK_REALTIME` and
//!   `CLOCK_MONOTONIC`, a bad attribute.
//! - `EDEADLK`: `wrlock` (or a timed one) on a lock the thread already
//!   holds in either mode; `rdlock` on a lock it holds for writing.
//! - `EBUSY`: the `try` forms; `destroy` of a held lock (which stays
//!   usable).
//! - `ETIMEDOUT`: the timed forms.
//! - `EPERM`: `unlock` of a lock the thread does not hold.
//! - `EAGAIN`: 2³²−1 nested read holds of one lock by one thread.
//! - `ENOMEM`: the family's lock could not be allocated.
//!
//! Bad arguments never abort. Running out of memory in the library's own
//! per-thread tables does (a thread's 17th read hold moves its holds to the
//! heap, and a thread's first unlock claims a record in `releasing`), as a
//! Rust allocation failure does: only a lock's own allocation answers
//! `ENOMEM`.
//!
//! A thread may read-lock a lock it already reads (POSIX): the library
//! counts the nested hold instead of acquiring again, so a writer queued in
//! between (phase-fair and writer-preferring families) cannot deadlock it.
//!
//! # Limits (most have a test in `tests/preload.rs`)
//!
//! - **`PTHREAD_PROCESS_SHARED`** locks are glibc's: `init` with a
//!   process-shared attribute forwards to glibc, and every later call on
//!   that lock is forwarded too (glibc marks it in the lock's `__shared`
//!   field, which the library reads first).
//! - **`fork` while locked**: the child gets a copy of every lock. Holds of
//!   the forking thread stay held by the child's only thread, which can
//!   release them (its identity, a number kept in its thread-local table,
//!   is the same); holds of other threads stay held forever in the child (as
//!   with glibc: POSIX allows only async-signal-safe calls there). A thread
//!   that was *waiting* for the lock at the fork counts as a holder in the
//!   child of most families, so the lock stays unusable there even after the
//!   forking thread's unlock (glibc's answers `EBUSY`/`ETIMEDOUT` there
//!   too).
//! - **A thread that exits holding a lock** leaves it held (as glibc
//!   does). No later thread is taken for it: a thread's identity is a
//!   number never given to another thread, not an address glibc hands to
//!   the next thread it starts (found in review on 2026-11-27:
//!   `tests/thread_identity.rs`).
//! - **Locks used before this library's constructor** (by another
//!   library's constructor): the constructor only registers the `fork`
//!   handler (`releasing`); the family is read from the environment at the
//!   first call, whenever it comes (with `getenv`, which does not
//!   allocate).
//! - **Calls that re-enter the library on one thread**: a `malloc` that
//!   takes a `pthread_rwlock_t` (called back from the library's own
//!   allocations: a lock's first use, a table's growth, the topology's
//!   detection), and a signal handler that locks while the thread is inside
//!   a lock call (undefined by POSIX; glibc copes). Each level of calls gets
//!   a hold table of its own (four levels, then an abort with a message,
//!   never a corrupted table); a read hold taken at one level is released
//!   at that level (`EPERM` from another), and a nested read counts only
//!   holds of its own level: a signal handler that read-locks a lock its
//!   interrupted thread reads, while a writer waits, waits behind that
//!   writer, for good (found in review on 2026-11-29). Found in review on 2026-11-27
//!   (before: a stack overflow under every family, lost holds and a double
//!   free); `reentrant_calls_every_family` runs both under every family.
//!   One exception: the first call forwarded to glibc (the passthrough
//!   family, or a process-shared lock) looks glibc's functions up with
//!   `dlsym`, once, under a `OnceLock`; a call that re-enters the library
//!   during that lookup on the same thread (a signal handler, or glibc
//!   2.30 to 2.33's `dlsym` calling a `calloc` that takes a rwlock) waits
//!   for the lookup it interrupted, for good.
//! - **Thread cancellation** (`pthread_cancel`): as glibc's, the library's
//!   lock calls are not cancellation points, and a thread cancelled while
//!   it waits gets its answer first (`tests/c/cancel.c`, every family).
//!   Their sleeps are `clock_nanosleep` system calls, which glibc does not
//!   treat as cancellation points, and their one-time work that reads
//!   files (BRAVO's table, the topology, prwlock's barrier mode) runs with
//!   cancellation disabled. Before 2026-11-29 (found in review) a timed
//!   wait under every family, a write revoking BRAVO's bias and a process's
//!   first biased read could end the thread inside the call.
//! - **Copies of a lock** (`memcpy` of a `pthread_rwlock_t` in use or
//!   initialised; undefined by POSIX, which allows only the original to be
//!   used): under the families whose lock lives outside the
//!   `pthread_rwlock_t` (all but `bravo`, `parking_lot` and `passthrough`), the copies
//!   name one lock, and destroying two of them frees it twice. glibc's
//!   copies are independent locks, and so are `bravo`'s (which is why
//!   `bravo` and `bravo-pfq` use `bravo::policy::UncountedPolicy`: the
//!   default policy's process-wide count of biased locks would not see a
//!   copied bias).
//!   Found in review on 2026-11-29; open.
//! - **Reader preference**: glibc's default lock lets a reader in while a
//!   writer waits. Most families do not (phase-fair, writer-preferring or
//!   fair), and `PTHREAD_RWLOCK_PREFER_WRITER_NP`, which glibc ignores,
//!   picks writer preference here. A program whose thread holds a read
//!   lock and waits for another thread to read-lock it too, while a writer
//!   is queued, deadlocks on them where glibc would not (POSIX leaves the
//!   choice to the implementation). A thread's own nested read is counted,
//!   so it does not wait (above).
//! - **`init` on a lock in use** (without `destroy`; undefined by POSIX,
//!   which allows `EBUSY`): the lock word is reset, so a family whose lock
//!   lives outside the `pthread_rwlock_t` leaks the old lock object, and
//!   the old holders' unlocks answer `EPERM`.
//! - **An unlock from another thread** than the one that read-locked
//!   (undefined by POSIX; glibc accepts it, which coroutines moving between
//!   threads may rely on) answers `EPERM` and leaves the lock held.
//! - **glibc's `__pthread_rwlock_*` names** (binaries linked against old
//!   libpthreads) are interposed too (`glibc_aliases_every_family`).
//! - **A lock destroyed right after its unlock**: POSIX lets a program
//!   destroy and free an unlocked lock while the thread that released it
//!   may still be inside `pthread_rwlock_unlock` (another thread took and
//!   released the lock meanwhile). The families touch their lock after the
//!   change that frees it (a waiter count, a wake), so each unlock names its
//!   lock in a record of its thread for its duration (two stores) and
//!   `destroy` waits until no record names it (module `releasing`). Found
//!   in review on 2026-11-27: a cohort release wrote the freed node array;
//!   `destroy_after_unlock.rs` checks with an allocator that poisons freed
//!   blocks.
//! - **A lock destroyed while held**: `destroy` answers `EBUSY` and the lock
//!   stays as it was. A lock of an out-of-line family that is never
//!   destroyed (a static one, or memory freed without `destroy`, as
//!   `std::shared_mutex` does) keeps its out-of-line lock until the process
//!   ends: with those families, a C++ program that creates and frees many
//!   `std::shared_mutex` objects grows (the inline default does not).
//! - **Timed acquisitions poll**: the families do not queue a waiter with a
//!   deadline, so `timed*`/`clock*` retry with backoff (yields, then sleeps
//!   of 1 µs doubling to 1 ms), and do not take a place in the queue.
//! - A thread holding more than 16 read locks at once moves its holds to a
//!   heap table, freed when it is back to 16; a thread that exits holding
//!   read locks leaves them held (glibc does too).
//! - glibc on x86-64 Linux only (the `pthread_rwlock_t` layout, 56 bytes,
//!   `__shared` at byte 28, `__flags` at byte 48); elsewhere the crate
//!   exports nothing. (Until 2026-11-28 it exported on every 64-bit glibc
//!   target, but aarch64, riscv64 and loongarch64 use glibc's generic
//!   layout, `__flags` at byte 24 and `__shared` at 25: a process-shared
//!   lock read as private there and went to a per-process family. Found in
//!   review.)
//!
//! # Overhead and real programs
//!
//! The crate's `README.md` has one run of each: the shim's cost per read and
//! write pair against the same lock called from Rust (`benches/preload.rs`),
//! and two real programs under every family against glibc
//! (`scripts/preload-bench`).

#![deny(missing_docs)]

/// Items that exist only where the library exports (glibc on x86-64
/// Linux: the layout it reads, see "Limits" above).
macro_rules! where_it_exports {
    ($($item:item)*) => {
        $(
            #[cfg(all(
                target_os = "linux",
                target_env = "gnu",
                target_arch = "x86_64",
                target_pointer_width = "64"
            ))]
            $item
        )*
    };
}

pub mod family;
mod held;

pub use family::Family;

where_it_exports! {
    pub mod families;
    mod glibc;
    mod releasing;
    pub use releasing::records as release_records;
    pub mod shim;
    mod exports;
    pub use exports::*;
}

/// The shim's own tables are private: the thread's read holds (and the
/// guards its unlock releases) and the records of unlocks under way, which
/// safe code could otherwise rewrite under the shim (found in review).
///
/// ```compile_fail
/// rwlock_preload::held::with(|_, _| ());
/// ```
///
/// ```compile_fail
/// let _ = &rwlock_preload::releasing::UNRECORDED;
/// ```
#[cfg(doctest)]
pub struct PrivateTables;

/// The README's Rust examples, compiled and run as doc-tests (today it has
/// only shell ones).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
