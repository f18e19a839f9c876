//! When a writer may skip the heavy barrier, and when it may not, counted
//! per domain (`DomainStats::heavy_barriers`): readers that report the new
//! version spare it, registered readers that do not report cost one per
//! write, exited and retired records cost nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};

use prwlock::{Domain, PrwLock};

/// The tests of this binary run one at a time: the busy-reader test counts
/// on its reader getting a core.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn rwlock(domain: &'static Domain) -> Arc<lock_api::RwLock<PrwLock, u64>> {
    Arc::new(lock_api::RwLock::from_raw(PrwLock::in_domain(domain), 0))
}

#[test]
fn a_writer_alone_in_its_domain_skips_the_barrier() {
    let _serial = serial();
    static D: Domain = Domain::new();
    let lock = rwlock(&D);
    assert_eq!(*lock.read(), 0); // the writer's own record: skipped
    for _ in 0..100 {
        *lock.write() += 1;
    }
    let stats = D.stats();
    assert_eq!((stats.version, stats.heavy_barriers), (100, 0), "{stats:?}");
}

#[test]
fn an_idle_registered_reader_costs_one_barrier_per_write() {
    let _serial = serial();
    static D: Domain = Domain::new();
    let lock = rwlock(&D);
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let registered = Arc::new(Barrier::new(2));
    let (l, r) = (lock.clone(), registered.clone());
    let idle = std::thread::spawn(move || {
        let _ = *l.read();
        r.wait();
        let _ = stop_rx.recv();
    });
    registered.wait();
    // Let it block (off CPU).
    std::thread::sleep(std::time::Duration::from_millis(50));
    for _ in 0..50 {
        *lock.write() += 1;
    }
    let stats = D.stats();
    // With the kernel helper, a reader the helper saw leave its CPU counts
    // as reported: an idle reader costs nothing.
    let expected = if prwlock::barrier_mode() == prwlock::BarrierMode::KernelHelper {
        0
    } else {
        50
    };
    assert_eq!(
        (stats.version, stats.heavy_barriers),
        (50, expected),
        "{stats:?}"
    );
    drop(stop_tx);
    idle.join().unwrap();
    // Gone: its record is free, and free records need no barrier.
    *lock.write() += 1;
    assert_eq!(D.stats().heavy_barriers, expected);
}

#[test]
fn retired_records_need_no_barrier() {
    let _serial = serial();
    static D: Domain = Domain::new();
    let leaked = rwlock(&D);
    let l = leaked.clone();
    std::thread::spawn(move || std::mem::forget(l.read()))
        .join()
        .unwrap();
    assert_eq!(D.stats().retired, 1);
    let other = rwlock(&D);
    for _ in 0..20 {
        *other.write() += 1;
    }
    assert_eq!(D.stats().heavy_barriers, 0);
    assert!(leaked.try_write().is_none());
}

#[test]
fn busy_readers_report_and_spare_writers_the_barrier() {
    let _serial = serial();
    static D: Domain = Domain::new();
    const WRITES: u64 = 500;
    let lock = rwlock(&D);
    let stop = Arc::new(AtomicBool::new(false));
    let (l, s) = (lock.clone(), stop.clone());
    let reader = std::thread::spawn(move || {
        let mut reads = 0u64;
        // Relaxed: a stop flag.
        while !s.load(Ordering::Relaxed) {
            std::hint::black_box(*l.read());
            reads += 1;
        }
        reads
    });
    while D.stats().in_use == 0 {
        std::thread::yield_now();
    }
    // Rounds of writes until one round has skipped a barrier (the first
    // almost always does; a reader descheduled through a whole round on a
    // loaded machine costs another).
    let mut rounds = 0;
    while D.stats().heavy_barriers == rounds * WRITES && rounds < 20 {
        for _ in 0..WRITES {
            *lock.write() += 1;
        }
        rounds += 1;
    }
    // Relaxed: a stop flag.
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    let stats = D.stats();
    eprintln!("{rounds} x {WRITES} writes beside a busy reader ({reads} reads): {stats:?}");
    assert_eq!(stats.version, rounds * WRITES);
    assert!(stats.heavy_barriers < rounds * WRITES, "{stats:?}");
}
