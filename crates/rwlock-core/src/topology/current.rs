//! The CPU and node the calling thread runs on.

use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::{Topology, probe};

/// How many calls one answer of the per-thread cache serves, where
/// [`current_cpu`] has to cache: a thread that migrates then reports its old
/// CPU for at most this many calls minus one.
pub const CPU_REFRESH_INTERVAL: u32 = 64;

std::thread_local! {
    /// The thread's last answer and how many more calls may reuse it.
    static CACHE: Cell<(usize, u32)> = const { Cell::new((0, 0)) };
}

/// The operating system's number of the CPU the calling thread runs on, or
/// ran on recently (see the [module docs](super#the-current-cpu) for which
/// method is used, its staleness and its cost).
///
/// The result is *not* reduced below [`Topology::cpu_count`]: callers index
/// their per-CPU arrays with `current_cpu() % len`.
#[inline]
pub fn current_cpu() -> usize {
    match probe::rseq() {
        Some(cpu) => cpu,
        None => cached_cpu(),
    }
}

/// [`current_cpu_uncached`] behind the per-thread cache.
#[inline]
pub(super) fn cached_cpu() -> usize {
    CACHE.with(|cache| {
        let (cpu, left) = cache.get();
        if left > 0 {
            cache.set((cpu, left - 1));
            cpu
        } else {
            refill(cache)
        }
    })
}

#[cold]
#[inline(never)]
fn refill(cache: &Cell<(usize, u32)>) -> usize {
    let cpu = current_cpu_uncached();
    cache.set((cpu, CPU_REFRESH_INTERVAL - 1));
    cpu
}

/// Asks for the current CPU now, and restarts the per-thread cache of
/// [`current_cpu`] with the answer (after the thread changed its CPU
/// affinity, for instance). Where `current_cpu` reads rseq it is exact anyway.
pub fn refresh_current_cpu() -> usize {
    CACHE.with(refill)
}

/// The operating system's number of the CPU the calling thread runs on, never
/// from a cache: the first that works of [`probe::rseq`], [`probe::rdpid`]
/// and [`probe::sched_getcpu`] (the vDSO on Linux). The thread may have
/// migrated by the time it returns.
///
/// Where the operating system cannot tell, each thread gets a number dealt
/// round-robin below `Topology::global().cpu_count()` on its first call, and
/// keeps it.
#[inline]
pub fn current_cpu_uncached() -> usize {
    if let Some(cpu) = probe::rseq() {
        return cpu;
    }
    if let Some(cpu) = probe::rdpid() {
        return cpu;
    }
    match probe::sched_getcpu() {
        Some(cpu) => cpu,
        None => dealt_cpu(),
    }
}

#[cold]
fn dealt_cpu() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static DEALT: Cell<Option<usize>> = const { Cell::new(None) };
    }
    DEALT.with(|dealt| {
        if let Some(cpu) = dealt.get() {
            return cpu;
        }
        // Relaxed: only a deal counter; no other memory depends on it.
        let cpu = NEXT.fetch_add(1, Ordering::Relaxed) % Topology::global().cpu_count();
        dealt.set(Some(cpu));
        cpu
    })
}

/// The node of [`current_cpu`] in [`Topology::global`]; always below
/// `Topology::global().node_count()`. As fresh as `current_cpu`.
#[inline]
pub fn current_node() -> usize {
    Topology::global().node_of(current_cpu())
}
