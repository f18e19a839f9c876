//! FCP-RCU (`prwlock::rcu`) against the read-mostly tools Rust and C users
//! have: `arc_swap::ArcSwap`, `crossbeam_epoch`, `seize`,
//! `parking_lot::RwLock<Arc<T>>`, and liburcu's membarrier flavour
//! (`urcu-memb`, through `src/urcu_shim.c` when liburcu-dev is installed).
//! All in one run, so that the ratios in `docs/rcu.md` compare like with
//! like (`cargo bench --bench rcu`; a filter selects a group:
//! `cargo bench --bench rcu -- rcu_read/`).
//!
//! Groups:
//! - `rcu_read`: one thread, a read section plus one dereference of the
//!   current value, per operation (each contender's loop measured as a
//!   whole, `iter_custom`); with two floors: `floor_sfls` (store, compiler
//!   fence, load, store: what any fence-free reader must do, the floor of
//!   `examples/fast_path.rs`) and `floor_sfls_deref` (the same with the
//!   pointer load and the dereference a reader of shared data adds);
//! - `rcu_read_threads/T`: the same operation on T threads at once (1, 2,
//!   16 on this 2-core machine), time per operation over all threads;
//! - `rcu_synchronize/R`: one grace period (`synchronize` /
//!   `synchronize_rcu`) while R reader threads run sections back to back
//!   (with R = 1 also `prwlock_rcu_idle_registered`: one more registered
//!   thread that sits blocked and so never reports);
//! - `rcu_update/B`: the FCP paper's update workload (Fig. 21/22): pointer
//!   updates whose old values are freed after a grace period, one grace
//!   period per batch of B, while 2 reader threads read; time per update;
//! - `rcu_map`: the read-mostly hash map of `numa_rwlocks::rcu_map` (1 %
//!   updates, 2 threads) over `RcuCell`, over `ArcSwap`, and
//!   `parking_lot::RwLock<HashMap>`; time per operation over both threads.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering, compiler_fence};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use criterion::{Criterion, criterion_group, criterion_main};
use numa_rwlocks::rcu_map::{ArcSwapCells, Rcu, ReadMostlyMap};
use numa_rwlocks::workloads::StartGate;
use prwlock::rcu::{RcuCell, RcuDomain};
use seize::Guard as _;

/// A read path under test: `setup` builds the shared value, `read` runs one
/// section with one dereference.
trait Reader: Send + Sync + 'static {
    const NAME: &'static str;
    fn new() -> Self;
    /// Runs `n` operations on the calling thread; returns a sum of what
    /// was read (kept from the optimizer).
    fn run(&self, n: u64) -> u64;
}

struct Floor {
    writer: AtomicU64,
    ptr: AtomicPtr<u64>,
}

thread_local! {
    /// The floor's status word: each thread's own, as a reader's record.
    static STATUS: AtomicU64 = const { AtomicU64::new(0) };
}

/// Store, compiler fence, load, store (`examples/fast_path.rs`'s floor);
/// with `DEREF`, plus the reader's pointer load and dereference.
struct FloorReader<const DEREF: bool>(Floor);

fn floor() -> Floor {
    Floor {
        writer: AtomicU64::new(0),
        ptr: AtomicPtr::new(Box::into_raw(Box::new(7u64))),
    }
}

impl<const DEREF: bool> Reader for FloorReader<DEREF> {
    const NAME: &'static str = if DEREF {
        "floor_sfls_deref"
    } else {
        "floor_sfls"
    };
    fn new() -> Self {
        FloorReader(floor())
    }
    fn run(&self, n: u64) -> u64 {
        let f = &self.0;
        STATUS.with(|status| {
            let mut sum = 0;
            for i in 0..n {
                // Relaxed and a compiler fence: the floor, not a protocol.
                status.store(black_box(i), Ordering::Relaxed);
                compiler_fence(Ordering::SeqCst);
                sum += f.writer.load(Ordering::Relaxed);
                if DEREF {
                    let p = f.ptr.load(Ordering::Acquire);
                    // SAFETY: the pointer is never freed while the bench runs.
                    sum += unsafe { *p };
                }
                status.store(black_box(0), Ordering::Relaxed);
            }
            sum
        })
    }
}

static READ_DOMAIN: RcuDomain = RcuDomain::new();

struct PrwlockRcu(RcuCell<u64>);
impl Reader for PrwlockRcu {
    const NAME: &'static str = "prwlock_rcu";
    fn new() -> Self {
        PrwlockRcu(RcuCell::from_pointee_in(7, &READ_DOMAIN))
    }
    fn run(&self, n: u64) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            sum += *self.0.load();
        }
        sum
    }
}

struct ArcSwapLoad(ArcSwap<u64>);
impl Reader for ArcSwapLoad {
    const NAME: &'static str = "arc_swap";
    fn new() -> Self {
        ArcSwapLoad(ArcSwap::from_pointee(7))
    }
    fn run(&self, n: u64) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            sum += **self.0.load();
        }
        sum
    }
}

struct CrossbeamEpoch(crossbeam_epoch::Atomic<u64>);
impl Reader for CrossbeamEpoch {
    const NAME: &'static str = "crossbeam_epoch";
    fn new() -> Self {
        CrossbeamEpoch(crossbeam_epoch::Atomic::new(7))
    }
    fn run(&self, n: u64) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            let guard = crossbeam_epoch::pin();
            let p = self.0.load(Ordering::Acquire, &guard);
            // SAFETY: never retired while the bench runs; pinned.
            sum += unsafe { *p.deref() };
        }
        sum
    }
}

struct Seize {
    collector: seize::Collector,
    ptr: AtomicPtr<u64>,
}
impl Reader for Seize {
    const NAME: &'static str = "seize";
    fn new() -> Self {
        Seize {
            collector: seize::Collector::new(),
            ptr: AtomicPtr::new(Box::into_raw(Box::new(7u64))),
        }
    }
    fn run(&self, n: u64) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            let guard = self.collector.enter();
            let p = guard.protect(&self.ptr, Ordering::Acquire);
            // SAFETY: never retired while the bench runs; protected.
            sum += unsafe { *p };
        }
        sum
    }
}

struct ParkingLotArc(parking_lot::RwLock<Arc<u64>>);
impl Reader for ParkingLotArc {
    const NAME: &'static str = "parking_lot_rwlock_arc";
    fn new() -> Self {
        ParkingLotArc(parking_lot::RwLock::new(Arc::new(7)))
    }
    fn run(&self, n: u64) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            sum += **self.0.read();
        }
        sum
    }
}

#[cfg(has_urcu)]
struct LiburcuMemb(AtomicPtr<u64>);
#[cfg(has_urcu)]
impl Reader for LiburcuMemb {
    const NAME: &'static str = "liburcu_memb";
    fn new() -> Self {
        LiburcuMemb(numa_rwlocks::urcu::new_slot(7))
    }
    fn run(&self, n: u64) -> u64 {
        numa_rwlocks::urcu::with(|r| r.read_loop(&self.0, n))
    }
}

/// Runs `work(t, start)` on threads `t` in `0..threads`; each calls
/// `start.wait()` where its timed part begins. The wall time from the
/// common start (the clock read before any thread is let go) to the last
/// thread's end.
fn together(threads: usize, work: impl Fn(usize, &StartGate) + Send + Sync + 'static) -> Duration {
    let start = Arc::new(StartGate::new(threads));
    let work = Arc::new(work);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (work, start) = (work.clone(), start.clone());
            thread::spawn(move || {
                work(t, &start);
                Instant::now()
            })
        })
        .collect();
    let begin = start.open();
    let end = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap();
    end - begin
}

/// Times `n` = `iters`, or at least `min`, operations with `run` and
/// scales the time to `iters` (criterion divides by `iters`).
fn scaled(iters: u64, min: u64, run: impl FnOnce(u64) -> Duration) -> Duration {
    let n = iters.max(min);
    run(n).mul_f64(iters as f64 / n as f64)
}

/// Runs `n` operations split over `threads` threads started together.
fn on_threads<R: Reader>(reader: &Arc<R>, threads: usize, n: u64) -> Duration {
    let per = n.div_ceil(threads as u64);
    let reader = reader.clone();
    together(threads, move |_, start| {
        reader.run(1_000); // registration, warm cache
        start.wait();
        black_box(reader.run(per));
    })
}

fn bench_reader<R: Reader>(c: &mut Criterion) {
    let reader = Arc::new(R::new());
    let mut g = c.benchmark_group("rcu_read");
    g.bench_function(R::NAME, |b| {
        b.iter_custom(|iters| {
            reader.run(100);
            let start = Instant::now();
            black_box(reader.run(iters));
            start.elapsed()
        })
    });
    g.finish();
    for threads in [1, 2, 16] {
        let mut g = c.benchmark_group(format!("rcu_read_threads/{threads}"));
        g.sample_size(20);
        g.bench_function(R::NAME, |b| {
            b.iter_custom(|iters| scaled(iters, 10_000, |n| on_threads(&reader, threads, n)))
        });
        g.finish();
    }
}

fn read_side(c: &mut Criterion) {
    bench_reader::<FloorReader<false>>(c);
    bench_reader::<FloorReader<true>>(c);
    bench_reader::<PrwlockRcu>(c);
    bench_reader::<ArcSwapLoad>(c);
    bench_reader::<CrossbeamEpoch>(c);
    bench_reader::<Seize>(c);
    bench_reader::<ParkingLotArc>(c);
    #[cfg(has_urcu)]
    bench_reader::<LiburcuMemb>(c);
    #[cfg(not(has_urcu))]
    eprintln!("rcu: liburcu-dev not installed, liburcu_memb skipped (scripts/install-system-deps)");
}

/// `readers` threads running read sections back to back until dropped.
struct BusyReaders {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl BusyReaders {
    fn start(readers: usize, section: impl Fn() + Send + Sync + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let section = Arc::new(section);
        let ready = Arc::new(Barrier::new(readers + 1));
        let threads = (0..readers)
            .map(|_| {
                let (stop, section, ready) = (stop.clone(), section.clone(), ready.clone());
                thread::spawn(move || {
                    section();
                    ready.wait();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            section();
                        }
                    }
                })
            })
            .collect();
        ready.wait();
        BusyReaders { stop, threads }
    }
}

impl Drop for BusyReaders {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

static SYNC_DOMAIN: RcuDomain = RcuDomain::new();

fn synchronize(c: &mut Criterion) {
    for readers in [1, 2, 16] {
        let mut g = c.benchmark_group(format!("rcu_synchronize/{readers}"));
        g.sample_size(30);
        g.measurement_time(Duration::from_secs(3));
        {
            let cell = Arc::new(RcuCell::from_pointee_in(7u64, &SYNC_DOMAIN));
            let busy = {
                let cell = cell.clone();
                BusyReaders::start(readers, move || {
                    black_box(*cell.load());
                })
            };
            g.bench_function("prwlock_rcu", |b| b.iter(|| SYNC_DOMAIN.synchronize()));
            if readers == 1 {
                // The same with one more registered thread that sits idle
                // (blocked): it never reports, so in Membarrier mode every
                // round pays a membarrier (the kernel helper sees it off
                // CPU and spares it).
                let (release, idle) = std::sync::mpsc::channel::<()>();
                let idle = thread::spawn(move || {
                    drop(SYNC_DOMAIN.read());
                    let _ = idle.recv();
                });
                while SYNC_DOMAIN.stats().records < 2 {
                    thread::yield_now();
                }
                g.bench_function("prwlock_rcu_idle_registered", |b| {
                    b.iter(|| SYNC_DOMAIN.synchronize())
                });
                drop(release);
                idle.join().unwrap();
            }
            drop(busy);
        }
        #[cfg(has_urcu)]
        {
            use numa_rwlocks::urcu::{self, free_slot, new_slot};
            let slot = Arc::new(new_slot(7));
            let busy = {
                let slot = slot.clone();
                BusyReaders::start(readers, move || {
                    urcu::with(|r| black_box(r.read_once(&slot)));
                })
            };
            g.bench_function("liburcu_memb", |b| {
                b.iter(|| urcu::with(|me| me.synchronize()))
            });
            drop(busy);
            free_slot(Arc::into_inner(slot).unwrap());
        }
        g.finish();
    }
}

static UPDATE_DOMAIN: RcuDomain = RcuDomain::new();

fn update(c: &mut Criterion) {
    for batch in [1usize, 16, 64, 256, 1024] {
        let mut g = c.benchmark_group(format!("rcu_update/{batch}"));
        g.sample_size(20);
        g.measurement_time(Duration::from_secs(3));
        {
            UPDATE_DOMAIN.set_batch_size(batch);
            let cell = Arc::new(RcuCell::from_pointee_in(7u64, &UPDATE_DOMAIN));
            let busy = {
                let cell = cell.clone();
                BusyReaders::start(2, move || {
                    black_box(*cell.load());
                })
            };
            g.bench_function("prwlock_rcu", |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for i in 0..iters {
                        cell.store(Arc::new(i));
                    }
                    start.elapsed()
                })
            });
            drop(busy);
            UPDATE_DOMAIN.barrier();
        }
        #[cfg(has_urcu)]
        {
            use numa_rwlocks::urcu::{self, free_slot, new_slot};
            let slot = Arc::new(new_slot(7));
            let busy = {
                let slot = slot.clone();
                BusyReaders::start(2, move || {
                    urcu::with(|r| black_box(r.read_once(&slot)));
                })
            };
            g.bench_function("liburcu_memb", |b| {
                b.iter_custom(|iters| {
                    let batches = iters.div_ceil(batch as u64);
                    let start = Instant::now();
                    for _ in 0..batches {
                        urcu::with(|me| me.update_batch(&slot, batch));
                    }
                    // Per update, as the others.
                    start
                        .elapsed()
                        .mul_f64(iters as f64 / (batches * batch as u64) as f64)
                })
            });
            drop(busy);
            free_slot(Arc::into_inner(slot).unwrap());
        }
        g.finish();
    }
}

/// Keys the map benchmark reads and updates.
const MAP_KEYS: u64 = 4096;

/// One multiply for a `u64` key (Fibonacci hashing): the same cheap hash
/// for every map, so that the comparison is about synchronization, not
/// SipHash.
#[derive(Default, Clone, Copy)]
struct MulHasher(u64);

impl std::hash::Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        // High bits are the good ones: fold them down for `hash & mask`.
        let h = (self.0 ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

type Hash = std::hash::BuildHasherDefault<MulHasher>;

trait MapUnderTest: Send + Sync + 'static {
    fn get(&self, k: u64) -> Option<u64>;
    fn insert(&self, k: u64, v: u64);
    fn remove(&self, k: u64);
}

impl<F: numa_rwlocks::rcu_map::Family> MapUnderTest for ReadMostlyMap<u64, u64, F, Hash> {
    fn get(&self, k: u64) -> Option<u64> {
        ReadMostlyMap::get(self, &k)
    }
    fn insert(&self, k: u64, v: u64) {
        ReadMostlyMap::insert(self, k, v);
    }
    fn remove(&self, k: u64) {
        ReadMostlyMap::remove(self, &k);
    }
}

impl MapUnderTest for parking_lot::RwLock<HashMap<u64, u64, Hash>> {
    fn get(&self, k: u64) -> Option<u64> {
        self.read().get(&k).copied()
    }
    fn insert(&self, k: u64, v: u64) {
        self.write().insert(k, v);
    }
    fn remove(&self, k: u64) {
        self.write().remove(&k);
    }
}

/// 2 threads, 1 % updates (half inserts, half removes) over random keys of
/// a half-full key space; time per operation over both threads.
fn map_ops<M: MapUnderTest>(map: &Arc<M>, n: u64) -> Duration {
    let threads = 2;
    let map = map.clone();
    together(threads, move |t, start| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
        start.wait();
        let mut found = 0u64;
        for _ in 0..n / threads as u64 {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = x % MAP_KEYS;
            match (x >> 32) % 200 {
                0 => map.insert(k, x),
                1 => map.remove(k),
                _ => found += map.get(k).is_some() as u64,
            }
        }
        black_box(found);
    })
}

fn bench_map<M: MapUnderTest>(c: &mut Criterion, name: &str, map: M) {
    let map = Arc::new(map);
    for k in (0..MAP_KEYS).step_by(2) {
        map.insert(k, k);
    }
    let mut g = c.benchmark_group("rcu_map");
    g.sample_size(20);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| scaled(iters, 20_000, |n| map_ops(&map, n)))
    });
    g.finish();
}

fn map(c: &mut Criterion) {
    bench_map(
        c,
        "prwlock_rcu",
        ReadMostlyMap::<u64, u64, Rcu, Hash>::with_hasher(Hash::default()),
    );
    bench_map(
        c,
        "arc_swap",
        ReadMostlyMap::<u64, u64, ArcSwapCells, Hash>::with_hasher(Hash::default()),
    );
    bench_map(
        c,
        "parking_lot_rwlock_hashmap",
        parking_lot::RwLock::new(HashMap::<u64, u64, Hash>::default()),
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = read_side, synchronize, update, map
}
criterion_main!(benches);
