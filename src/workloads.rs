//! The papers' workloads, generic over [`BenchLock`].
//!
//! - [`Workload::RwBench`]: RWBench (Calciu et al., PPoPP'13, Section 4.1):
//!   threads loop; a Bernoulli trial picks a write with probability `P`; a
//!   read fetches `rcs` random pairs of a shared array of 64 integers, a write
//!   adds `x` to one slot and subtracts it from another `wcs` times; then
//!   `ncs` steps on a private array. At the end the shared array must sum to 0
//!   (the **zero-sum check**: a write that overlapped another write loses an
//!   update and the run fails). The check sees only writes against writes:
//!   a reader inside a write leaves no trace, and with one thread, no
//!   writes or `wcs = 0` it cannot fail (the stress harness of
//!   `rwlock_core::testing::stress` checks readers against writers).
//! - [`Workload::Alternator`]: BRAVO Section 5.2: a ring of threads passing a
//!   token; each takes and releases read permission once per turn.
//! - [`Workload::TestRwlock`]: BRAVO Section 5.3 (`test_rwlock T 1 10 -c 10
//!   -e 10 -d 1000`): one writer with 10 units inside and 1000 outside, `T`
//!   readers with 10 units inside.
//! - [`Workload::Interference`]: BRAVO Section 5.1: read-only, each operation
//!   on a random lock of a pool of `locks` locks.
//! - [`Workload::WriterLatency`]: readers stream while one writer measures
//!   how long it waits for write permission; percentiles.
//!
//! Every run reports operations per second and the average number of cores
//! the process kept busy (CPU time / wall time): a lock whose waiters spin
//! instead of yielding or parking shows up there, and threads beyond the
//! machine's cores are flagged as oversubscribed.

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::bench_lock::BenchLock;

/// Slots of the shared (and of each private) array, as in RWBench.
pub const ARRAY_LEN: usize = 64;

/// One experiment.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// RWBench.
    RwBench {
        /// Worker threads.
        threads: usize,
        /// Probability of a write, in parts per million (20% = 200_000).
        write_ppm: u32,
        /// Random pairs read by a reader.
        rcs: u32,
        /// Pairs updated by a writer.
        wcs: u32,
        /// Steps of the non-critical section.
        ncs: u32,
    },
    /// A ring of `threads` threads passing a token, one read per turn.
    Alternator {
        /// Threads in the ring.
        threads: usize,
    },
    /// One writer (10 units in, 1000 out) and `readers` readers (10 units in).
    TestRwlock {
        /// Reader threads besides the writer.
        readers: usize,
    },
    /// Read-only operations on random locks of a pool.
    Interference {
        /// Worker threads.
        threads: usize,
        /// Locks in the pool.
        locks: usize,
    },
    /// One writer timing its acquisitions while `readers` readers stream.
    WriterLatency {
        /// Reader threads.
        readers: usize,
    },
}

impl Workload {
    /// Threads the workload runs.
    pub fn threads(&self) -> usize {
        match *self {
            Workload::RwBench { threads, .. }
            | Workload::Alternator { threads }
            | Workload::Interference { threads, .. } => threads,
            Workload::TestRwlock { readers } | Workload::WriterLatency { readers } => readers + 1,
        }
    }

    /// Short name of the workload kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::RwBench { .. } => "rwbench",
            Workload::Alternator { .. } => "alternator",
            Workload::TestRwlock { .. } => "test_rwlock",
            Workload::Interference { .. } => "interference",
            Workload::WriterLatency { .. } => "writer_latency",
        }
    }

    /// The parameters besides the thread count, for tables and file names.
    pub fn params(&self) -> String {
        match *self {
            Workload::RwBench {
                write_ppm,
                rcs,
                wcs,
                ncs,
                ..
            } => format!(
                "write={} rcs={rcs} wcs={wcs} ncs={ncs}",
                format_ppm(write_ppm)
            ),
            Workload::Alternator { .. } => String::new(),
            Workload::TestRwlock { .. } => "writer 10/1000, readers 10".to_owned(),
            Workload::Interference { locks, .. } => format!("locks={locks}"),
            Workload::WriterLatency { .. } => "readers rcs=4".to_owned(),
        }
    }
}

/// `200_000` as `20%`, `100` as `0.01%`.
pub fn format_ppm(ppm: u32) -> String {
    let pct = f64::from(ppm) / 10_000.0;
    let digits = format!("{pct:.4}");
    let digits = digits.trim_end_matches('0').trim_end_matches('.');
    format!("{digits}%")
}

/// How a run is done.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Measurement interval.
    pub duration: Duration,
    /// Pin worker `i` to CPU `i % cpus` (`sched_setaffinity`).
    pub pin: bool,
}

/// Writer wait percentiles, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Longest.
    pub max: f64,
    /// Samples.
    pub count: usize,
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Operations (top-level loop iterations, turns, acquisitions) per second.
    pub ops_per_sec: f64,
    /// CPU time of the process divided by wall time: cores kept busy.
    pub busy_cores: f64,
    /// Writer wait percentiles ([`Workload::WriterLatency`] only).
    pub writer_wait: Option<Percentiles>,
}

/// A run that must fail the whole benchmark.
#[derive(Debug, Clone, PartialEq)]
pub enum HarnessError {
    /// The shared array did not sum to zero: two writes overlapped.
    ZeroSum {
        /// The sum found.
        sum: i64,
    },
}

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HarnessError::ZeroSum { sum } => write!(
                f,
                "zero-sum check failed: the shared array sums to {sum}, two writes overlapped"
            ),
        }
    }
}

impl std::error::Error for HarnessError {}

/// Runs `workload` once on a fresh lock of type `L`.
pub fn run<L: BenchLock>(workload: &Workload, cfg: &RunConfig) -> Result<Sample, HarnessError> {
    match *workload {
        Workload::RwBench {
            threads,
            write_ppm,
            rcs,
            wcs,
            ncs,
        } => rwbench::<L>(threads, write_ppm, rcs, wcs, ncs, cfg),
        Workload::Alternator { threads } => Ok(alternator::<L>(threads, cfg)),
        Workload::TestRwlock { readers } => Ok(test_rwlock::<L>(readers, cfg)),
        Workload::Interference { threads, locks } => Ok(interference::<L>(threads, locks, cfg)),
        Workload::WriterLatency { readers } => Ok(writer_latency::<L>(readers, cfg)),
    }
}

/// What [`pairs`] times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairMode {
    /// Read lock/unlock pairs (a biased lock stays biased: fast reads).
    Read,
    /// Write lock/unlock pairs.
    Write,
    /// A write pair then a read pair, per iteration: the reads of a lock
    /// whose bias the writes keep off (BRAVO's slow path), as at 50% writes.
    Mixed,
    /// One pair per iteration, a write with probability 1/10 (the harness's
    /// generator), else a read: RWBench at 10% writes without its sections.
    Random10,
}

impl PairMode {
    /// Every mode, with its command-line name.
    pub const ALL: [(&'static str, PairMode); 4] = [
        ("read", PairMode::Read),
        ("write", PairMode::Write),
        ("mixed", PairMode::Mixed),
        ("random10", PairMode::Random10),
    ];
}

/// Uncontended latency: times `iters` lock/unlock pairs (or, with
/// [`PairMode::Mixed`], write-then-read couples) on one thread with a fresh
/// lock (criterion's `iter_custom` calls this).
pub fn pairs<L: BenchLock>(iters: u64, mode: PairMode) -> Duration {
    let lock = L::create();
    let start = Instant::now();
    match mode {
        PairMode::Write => write_pairs(&lock, iters),
        PairMode::Read => read_pairs(&lock, iters),
        PairMode::Mixed => mixed_pairs(&lock, iters),
        PairMode::Random10 => random10_pairs(&lock, iters),
    }
    start.elapsed()
}

// One function per mode, each out of line, so that each loop is small
// enough for LLVM to inline the lock's acquisition into it whatever the
// other modes hold (one function with every loop stopped inlining some
// locks' reads, which moved their instruction counts by about 14).

#[inline(never)]
fn write_pairs<L: BenchLock>(lock: &L, iters: u64) {
    for _ in 0..iters {
        lock.write(|| black_box(()));
    }
}

#[inline(never)]
fn read_pairs<L: BenchLock>(lock: &L, iters: u64) {
    for _ in 0..iters {
        lock.read(|| black_box(()));
    }
}

#[inline(never)]
fn mixed_pairs<L: BenchLock>(lock: &L, iters: u64) {
    for _ in 0..iters {
        lock.write(|| black_box(()));
        lock.read(|| black_box(()));
    }
}

#[inline(never)]
fn random10_pairs<L: BenchLock>(lock: &L, iters: u64) {
    let mut rng = Rng::new(0);
    for _ in 0..iters {
        if rng.next_u64().is_multiple_of(10) {
            lock.write(|| black_box(()));
        } else {
            lock.read(|| black_box(()));
        }
    }
}

/// xorshift64*: a cheap thread-local generator, as the papers use.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for worker `seed` (distinct seeds, distinct streams).
    pub fn new(seed: usize) -> Self {
        Rng(0x9e37_79b9_7f4a_7c15 ^ ((seed as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9)))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 32) as usize * n) >> 32
    }
}

/// `units` steps of busy work that the compiler cannot remove.
#[inline]
fn work(units: u32) {
    let mut n = units;
    while black_box(n) > 0 {
        n -= 1;
    }
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes one `rusage` through a pointer to a live local.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Pins the calling thread to the `cpu % n`-th of the `n` CPUs it may run
/// on (its affinity mask, inherited from the process: inside a cpuset such
/// as `taskset -c 2,3`, worker 0 goes to CPU 2). Until 2026-11-28 it pinned
/// to CPU `cpu % available_parallelism` and ignored the kernel's refusal,
/// so inside such a cpuset nothing was pinned, silently (found in review).
/// Prints one warning if the mask cannot be read or the pin is refused.
fn pin_to(cpu: usize) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let warn = |what: &str| {
        // Relaxed: only de-duplicates the message.
        if !WARNED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "rwbench: --pin: {what}: {}",
                std::io::Error::last_os_error()
            );
        }
    };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // cpu_set_t is plain data, written and read through pointers to live
    // locals; CPU_ISSET and CPU_SET take indices below CPU_SETSIZE.
    // SAFETY: so every call below stays inside those locals.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return warn("cannot read the affinity mask");
        }
        let ids: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .collect();
        if ids.is_empty() {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(ids[cpu % ids.len()], &mut set);
        if libc::sched_setaffinity(0, size, &set) != 0 {
            warn("the kernel refused the pin");
        }
    }
}

/// How long a worker naps between looks at the start signal.
const START_NAP: Duration = Duration::from_micros(50);

/// A start line for `n` timed workers, whose clock starts only once every
/// worker is at the line and none has begun.
///
/// Each worker [`wait`](Self::wait)s: it counts itself in, then naps
/// (50 µs at a time) until the signal. The timing thread calls
/// [`open`](Self::open), which waits until all `n` are in, reads the
/// clock, and only then gives the signal; every worker is then one timer
/// wake from running. Two simpler starts are wrong on a busy machine:
/// - reading the clock after returning from a `std::sync::Barrier` shared
///   with the workers lets workers run before the clock starts (at 16
///   threads on 2 cores the clock started up to 11 ms late), which makes
///   every figure look faster;
/// - a `Barrier` lets its waiters out through one mutex, one at a time:
///   with 64 threads on 2 cores the last ones got out hundreds of
///   milliseconds after the clock had started, so that `writer_latency`'s
///   writer sometimes ran no write at all.
#[derive(Debug)]
pub struct StartGate {
    workers: usize,
    ready: AtomicUsize,
    started: AtomicBool,
}

impl StartGate {
    /// A gate for `workers` workers.
    pub fn new(workers: usize) -> Self {
        StartGate {
            workers,
            ready: AtomicUsize::new(0),
            started: AtomicBool::new(false),
        }
    }

    /// A worker's side: returns once the clock has started.
    pub fn wait(&self) {
        // Relaxed: a count; `open` only waits for it.
        self.ready.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with `open`'s Release, so what the timing thread
        // did before reading the clock is visible to the worker.
        while !self.started.load(Ordering::Acquire) {
            std::thread::sleep(START_NAP);
        }
    }

    /// The timing thread's side: waits until every worker is in, then
    /// returns the start time, read before any worker is let go.
    ///
    /// # Panics
    /// If more workers than the gate was made for have come in.
    pub fn open(&self) -> Instant {
        self.wait_all_in();
        let t0 = Instant::now();
        self.go();
        t0
    }

    /// The first half of [`open`](Self::open), for a timing thread that
    /// reads more than the clock before the start (see `timed`).
    ///
    /// # Panics
    /// As `open`.
    pub fn wait_all_in(&self) {
        loop {
            // Relaxed: as in `wait`.
            let ready = self.ready.load(Ordering::Relaxed);
            assert!(
                ready <= self.workers,
                "StartGate: {ready} workers for {}",
                self.workers
            );
            if ready == self.workers {
                return;
            }
            std::thread::sleep(START_NAP);
        }
    }

    /// The second half of [`open`](Self::open): lets the workers go.
    pub fn go(&self) {
        // Release: pairs with `wait`'s Acquire.
        self.started.store(true, Ordering::Release);
    }
}

/// Runs `threads` workers until the measurement interval ends; each returns
/// its operation count. Returns (total operations, elapsed, busy cores),
/// the clock started by a [`StartGate`].
fn timed(
    threads: usize,
    cfg: &RunConfig,
    worker: impl Fn(usize, &AtomicBool) -> u64 + Sync,
) -> (u64, Duration, f64) {
    let stop = AtomicBool::new(false);
    let gate = StartGate::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, gate, worker) = (&stop, &gate, &worker);
                s.spawn(move || {
                    if cfg.pin {
                        pin_to(t);
                    }
                    gate.wait();
                    worker(t, stop)
                })
            })
            .collect();
        gate.wait_all_in();
        let (t0, c0) = (Instant::now(), cpu_time());
        gate.go();
        std::thread::sleep(cfg.duration);
        // Relaxed: a flag polled by the workers; joining orders the results.
        stop.store(true, Ordering::Relaxed);
        let ops: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        let elapsed = t0.elapsed();
        let busy = (cpu_time() - c0).as_secs_f64() / elapsed.as_secs_f64();
        (ops, elapsed, busy)
    })
}

fn sample(ops: u64, elapsed: Duration, busy_cores: f64) -> Sample {
    Sample {
        ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
        busy_cores,
        writer_wait: None,
    }
}

fn rwbench<L: BenchLock>(
    threads: usize,
    write_ppm: u32,
    rcs: u32,
    wcs: u32,
    ncs: u32,
    cfg: &RunConfig,
) -> Result<Sample, HarnessError> {
    let lock = CachePadded::new(L::create());
    let shared: CachePadded<[AtomicI64; ARRAY_LEN]> =
        CachePadded::new(std::array::from_fn(|_| AtomicI64::new(0)));
    let (ops, elapsed, busy) = timed(threads, cfg, |t, stop| {
        let mut rng = Rng::new(t);
        let mut private = [0u64; ARRAY_LEN];
        let mut count = 0u64;
        // Relaxed: the stop flag is only a trigger.
        while !stop.load(Ordering::Relaxed) {
            if (rng.next_u64() % 1_000_000) < u64::from(write_ppm) {
                lock.write(|| {
                    for _ in 0..wcs {
                        let (i, j) = (rng.below(ARRAY_LEN), rng.below(ARRAY_LEN));
                        let x = (rng.next_u64() % 100) as i64 + 1;
                        // Relaxed load/store pairs (not fetch_add): the lock
                        // must order them; an overlapping writer loses an
                        // update and the zero-sum check catches it.
                        let a = shared[i].load(Ordering::Relaxed);
                        shared[i].store(a.wrapping_add(x), Ordering::Relaxed);
                        let b = shared[j].load(Ordering::Relaxed);
                        shared[j].store(b.wrapping_sub(x), Ordering::Relaxed);
                    }
                });
            } else {
                lock.read(|| {
                    let mut sum = 0i64;
                    for _ in 0..rcs {
                        let (i, j) = (rng.below(ARRAY_LEN), rng.below(ARRAY_LEN));
                        // Relaxed: the data under test, ordered by the lock.
                        sum = sum
                            .wrapping_add(shared[i].load(Ordering::Relaxed))
                            .wrapping_add(shared[j].load(Ordering::Relaxed));
                    }
                    black_box(sum);
                });
            }
            for _ in 0..ncs {
                let i = rng.below(ARRAY_LEN);
                private[i] = private[i].wrapping_add(1);
            }
            count += 1;
        }
        black_box(&private);
        count
    });
    // Relaxed: the workers were joined.
    let sum = shared
        .iter()
        .map(|s| s.load(Ordering::Relaxed))
        .fold(0i64, i64::wrapping_add);
    if sum != 0 {
        return Err(HarnessError::ZeroSum { sum });
    }
    Ok(sample(ops, elapsed, busy))
}

/// Waits until `flag` is set or `stop` is raised; spins briefly, then yields
/// (the ring has more threads than cores in the oversubscribed runs).
#[inline]
fn wait_for_token(flag: &AtomicBool, stop: &AtomicBool) -> bool {
    let mut spins = 0u32;
    loop {
        // Acquire: pairs with the Release hand-off of the left neighbour.
        if flag.load(Ordering::Acquire) {
            return true;
        }
        // Relaxed: only a trigger.
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn alternator<L: BenchLock>(threads: usize, cfg: &RunConfig) -> Sample {
    let lock = CachePadded::new(L::create());
    let flags: Vec<CachePadded<AtomicBool>> = (0..threads)
        .map(|i| CachePadded::new(AtomicBool::new(i == 0)))
        .collect();
    let (ops, elapsed, busy) = timed(threads, cfg, |t, stop| {
        let mut turns = 0u64;
        let right = (t + 1) % threads;
        // Relaxed: the stop flag is only a trigger (checked every turn too: a
        // ring of one always holds the token).
        while !stop.load(Ordering::Relaxed) && wait_for_token(&flags[t], stop) {
            // Relaxed: we own the token; the Release below publishes.
            flags[t].store(false, Ordering::Relaxed);
            lock.read(|| black_box(()));
            // Release: pairs with the right neighbour's Acquire.
            flags[right].store(true, Ordering::Release);
            turns += 1;
        }
        turns
    });
    sample(ops, elapsed, busy)
}

fn test_rwlock<L: BenchLock>(readers: usize, cfg: &RunConfig) -> Sample {
    let lock = CachePadded::new(L::create());
    let (ops, elapsed, busy) = timed(readers + 1, cfg, |t, stop| {
        let mut count = 0u64;
        // Relaxed: the stop flag is only a trigger.
        while !stop.load(Ordering::Relaxed) {
            if t == 0 {
                lock.write(|| work(10));
                work(1000);
            } else {
                lock.read(|| work(10));
            }
            count += 1;
        }
        count
    });
    sample(ops, elapsed, busy)
}

fn interference<L: BenchLock>(threads: usize, locks: usize, cfg: &RunConfig) -> Sample {
    let pool: Vec<CachePadded<L>> = (0..locks.max(1))
        .map(|_| CachePadded::new(L::create()))
        .collect();
    let (ops, elapsed, busy) = timed(threads, cfg, |t, stop| {
        let mut rng = Rng::new(t);
        let mut count = 0u64;
        // Relaxed: the stop flag is only a trigger.
        while !stop.load(Ordering::Relaxed) {
            pool[rng.below(pool.len())].read(|| black_box(()));
            count += 1;
        }
        count
    });
    sample(ops, elapsed, busy)
}

fn writer_latency<L: BenchLock>(readers: usize, cfg: &RunConfig) -> Sample {
    let lock = CachePadded::new(L::create());
    let shared: CachePadded<[AtomicI64; ARRAY_LEN]> =
        CachePadded::new(std::array::from_fn(|_| AtomicI64::new(0)));
    let waits = Mutex::new(Vec::new());
    let (ops, elapsed, busy) = timed(readers + 1, cfg, |t, stop| {
        let mut rng = Rng::new(t);
        let mut count = 0u64;
        if t == 0 {
            let mut mine = Vec::with_capacity(1 << 16);
            // Relaxed: the stop flag is only a trigger.
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                let waited = lock.write(|| {
                    let waited = t0.elapsed();
                    // Relaxed: ordered by the lock.
                    shared[0].fetch_add(1, Ordering::Relaxed);
                    waited
                });
                mine.push(waited.as_nanos() as u64);
                work(1000);
                count += 1;
            }
            *waits.lock().unwrap() = mine;
        } else {
            // Relaxed: the stop flag is only a trigger.
            while !stop.load(Ordering::Relaxed) {
                lock.read(|| {
                    for _ in 0..4 {
                        // Relaxed: ordered by the lock.
                        black_box(shared[rng.below(ARRAY_LEN)].load(Ordering::Relaxed));
                    }
                });
                count += 1;
            }
        }
        count
    });
    let mut waits = waits.into_inner().unwrap();
    waits.sort_unstable();
    let pick = |q: f64| {
        if waits.is_empty() {
            f64::NAN
        } else {
            waits[((waits.len() - 1) as f64 * q).round() as usize] as f64
        }
    };
    let writer_wait = Percentiles {
        p50: pick(0.5),
        p90: pick(0.9),
        p99: pick(0.99),
        max: pick(1.0),
        count: waits.len(),
    };
    Sample {
        ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
        busy_cores: busy,
        writer_wait: Some(writer_wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_lock::{NoLock, Raw};

    fn quick() -> RunConfig {
        RunConfig {
            duration: Duration::from_millis(100),
            pin: false,
        }
    }

    #[test]
    fn zero_sum_catches_a_lock_that_lets_writes_overlap() {
        let w = Workload::RwBench {
            threads: 4,
            write_ppm: 1_000_000,
            rcs: 4,
            wcs: 64,
            ncs: 0,
        };
        // Without a lock, concurrent writers lose updates within a few runs.
        let caught = (0..20).any(|_| {
            matches!(
                run::<NoLock>(&w, &quick()),
                Err(HarnessError::ZeroSum { .. })
            )
        });
        assert!(caught, "the zero-sum check never caught overlapping writes");
        // A real lock passes.
        run::<Raw<rwlock_core::PfQueue>>(&w, &quick()).unwrap();
    }

    #[test]
    fn every_workload_runs_and_counts() {
        let cfg = quick();
        for w in [
            Workload::RwBench {
                threads: 3,
                write_ppm: 200_000,
                rcs: 4,
                wcs: 4,
                ncs: 32,
            },
            Workload::Alternator { threads: 3 },
            Workload::Alternator { threads: 1 },
            Workload::TestRwlock { readers: 2 },
            Workload::Interference {
                threads: 2,
                locks: 64,
            },
            Workload::WriterLatency { readers: 2 },
        ] {
            let s = run::<Raw<rwlock_core::PfTicket>>(&w, &cfg).unwrap();
            assert!(s.ops_per_sec > 0.0, "{w:?} did nothing");
            assert!(s.busy_cores >= 0.0);
            if let Workload::WriterLatency { .. } = w {
                let p = s.writer_wait.unwrap();
                assert!(p.count > 0 && p.p50 <= p.p99 && p.p99 <= p.max);
            }
        }
    }

    #[test]
    fn ppm_formatting() {
        assert_eq!(format_ppm(200_000), "20%");
        assert_eq!(format_ppm(1_000), "0.1%");
        assert_eq!(format_ppm(100), "0.01%");
    }
}
