//! Anti-starvation (PPoPP'13 Figures 4 and 5): a continuous stream of the
//! preferred side cannot hold the other side off forever once it runs out
//! of patience (a count of checks, or `cohort::PATIENCE_TIME`) and raises
//! its barrier; with infinite patience (`u32::MAX`: no barrier) the same
//! stream does hold it off, which shows the streams are real.
//!
//! The streams are relays of two threads: a thread leaves only once its
//! partner is inside (readers) or queued (writers), so the preferred side
//! never lets go on its own. A relay runner that waits for its partner
//! longer than `GIVE_UP` leaves anyway: that is how a raised barrier
//! (which stops the partner) ends the relay.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cohort::{CPtlTkt, IngressEgress, ReaderPref, ReaderPrefOpt, ReaderToken, WriterPref};
use support::OnNode;

const GIVE_UP: Duration = Duration::from_millis(200);

// The relays time their partners: one scenario at a time, so that the
// tests of this binary do not steal each other's CPU.
use rwlock_core::testing::serial;
const STARVED_FOR: Duration = Duration::from_millis(800);

/// Two readers relay on `lock` while a writer tries to get in; returns how
/// long the writer waited, or `None` if it was still waiting after
/// `STARVED_FOR` (then the relay is stopped and the writer let in).
fn reader_relay_vs_writer<L: OnNode>(lock: &L) -> Option<Duration> {
    let stop = AtomicBool::new(false);
    let entries = AtomicU64::new(0);
    let writer_in = AtomicBool::new(false);
    std::thread::scope(|s| {
        for node in 0..2 {
            let (stop, entries, lock) = (&stop, &entries, lock);
            s.spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let g: ReaderToken = lock.shared_on(node);
                    let me = entries.fetch_add(1, Ordering::SeqCst) + 1;
                    let since = Instant::now();
                    // Leave only after the partner entered behind us.
                    while entries.load(Ordering::SeqCst) == me
                        && since.elapsed() < GIVE_UP
                        && !stop.load(Ordering::SeqCst)
                    {
                        std::thread::yield_now();
                    }
                    // SAFETY: our own read acquisition.
                    unsafe { lock.unlock_shared(g) };
                }
            });
        }
        // Let the relay start.
        while entries.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        let w = s.spawn(|| {
            let start = Instant::now();
            let g = lock.exclusive_on(0);
            let waited = start.elapsed();
            writer_in.store(true, Ordering::SeqCst);
            // SAFETY: our own write acquisition.
            unsafe { lock.unlock_exclusive(g) };
            waited
        });
        let start = Instant::now();
        while !writer_in.load(Ordering::SeqCst) && start.elapsed() < STARVED_FOR {
            std::thread::sleep(Duration::from_millis(1));
        }
        let starved = !writer_in.load(Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
        let waited = w.join().unwrap();
        (!starved).then_some(waited)
    })
}

/// Two writers relay on `lock` while a reader tries to get in; as above.
fn writer_relay_vs_reader<L: OnNode>(lock: &L) -> Option<Duration> {
    writer_relay_vs_reader_on(lock, false)
}

/// [`writer_relay_vs_reader`]; with `busy_beside_reader`, the writers run
/// on one CPU and the reader on another beside a thread that spins there,
/// so that its waits give its CPU away.
fn writer_relay_vs_reader_on<L: OnNode>(lock: &L, busy_beside_reader: bool) -> Option<Duration> {
    let stop = AtomicBool::new(false);
    let busy_stop = AtomicBool::new(false);
    // A writer announces a round, then queues; `entered` counts the rounds
    // it got in. The partner of a writer inside is queued exactly when it
    // announced more rounds than it entered.
    let announced = [AtomicU64::new(0), AtomicU64::new(0)];
    let entered = [AtomicU64::new(0), AtomicU64::new(0)];
    let rounds = AtomicU64::new(0);
    let reader_in = AtomicBool::new(false);
    std::thread::scope(|s| {
        if busy_beside_reader {
            s.spawn(|| {
                support::pin_to(0);
                while !busy_stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        for me in 0..2usize {
            let (stop, announced, entered, rounds, lock) =
                (&stop, &announced, &entered, &rounds, lock);
            s.spawn(move || {
                if busy_beside_reader {
                    support::pin_to(1);
                }
                while !stop.load(Ordering::SeqCst) {
                    announced[me].fetch_add(1, Ordering::SeqCst);
                    let g = lock.exclusive_on(me);
                    entered[me].fetch_add(1, Ordering::SeqCst);
                    rounds.fetch_add(1, Ordering::SeqCst);
                    let p = 1 - me;
                    let since = Instant::now();
                    // Leave only once the partner is queued (announced, and
                    // a few ms to take its ticket).
                    while announced[p].load(Ordering::SeqCst) == entered[p].load(Ordering::SeqCst)
                        && since.elapsed() < GIVE_UP
                        && !stop.load(Ordering::SeqCst)
                    {
                        std::thread::yield_now();
                    }
                    std::thread::sleep(Duration::from_millis(3));
                    // SAFETY: our own write acquisition.
                    unsafe { lock.unlock_exclusive(g) };
                }
            });
        }
        while rounds.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        let r = s.spawn(|| {
            if busy_beside_reader {
                support::pin_to(0);
                // Until a yield shows the CPU shared (the evidence a
                // reader's wait reads), as it soon will beside the spinner.
                let since = Instant::now();
                while !rwlock_core::wait::yield_measured() && since.elapsed() < GIVE_UP {}
            }
            let start = Instant::now();
            let g = lock.shared_on(0);
            let waited = start.elapsed();
            reader_in.store(true, Ordering::SeqCst);
            // SAFETY: our own read acquisition.
            unsafe { lock.unlock_shared(g) };
            waited
        });
        let start = Instant::now();
        while !reader_in.load(Ordering::SeqCst) && start.elapsed() < STARVED_FOR {
            std::thread::sleep(Duration::from_millis(1));
        }
        let starved = !reader_in.load(Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
        let waited = r.join().unwrap();
        busy_stop.store(true, Ordering::Relaxed);
        (!starved).then_some(waited)
    })
}

fn parts(patience: u32) -> (CPtlTkt, IngressEgress, u32) {
    (CPtlTkt::with_config(2, 64), IngressEgress::new(2), patience)
}

#[test]
fn reader_stream_cannot_starve_a_c_rw_rp_writer() {
    let _serial = serial();
    let (m, i, p) = parts(cohort::DEFAULT_PATIENCE);
    let waited = reader_relay_vs_writer(&ReaderPref::from_parts(m, i, p))
        .expect("C-RW-RP writer starved by a reader stream despite RBarrier");
    eprintln!("C-RW-RP writer got in after {waited:?}");
    // The control need hold once in three: a relay partner descheduled past
    // its give-up time lets the writer in without any barrier.
    assert!(
        (0..3).any(|_| {
            let (m, i, _) = parts(0);
            reader_relay_vs_writer(&ReaderPref::from_parts(m, i, u32::MAX)).is_none()
        }),
        "control: without a barrier the relay should hold the writer off"
    );
}

#[test]
fn reader_stream_cannot_starve_a_c_rw_rp_opt_writer() {
    let _serial = serial();
    let (m, i, p) = parts(cohort::DEFAULT_PATIENCE);
    let waited = reader_relay_vs_writer(&ReaderPrefOpt::from_parts(m, i, p))
        .expect("C-RW-RP-opt writer starved by a reader stream despite RBarrier");
    eprintln!("C-RW-RP-opt writer got in after {waited:?}");
    // The control need hold once in three (as above).
    assert!(
        (0..3).any(|_| {
            let (m, i, _) = parts(0);
            reader_relay_vs_writer(&ReaderPrefOpt::from_parts(m, i, u32::MAX)).is_none()
        }),
        "control: without a barrier the relay should hold the writer off"
    );
}

/// Patience bounded in time (`cohort::PATIENCE_TIME`): with a count no
/// stream outlasts (4 billion checks), the barrier still goes up, and the
/// writer (or, under WP, the reader) gets in.
#[test]
fn patience_runs_out_in_time_before_the_count() {
    let _serial = serial();
    let (m, i, _) = parts(0);
    let waited = reader_relay_vs_writer(&ReaderPref::from_parts(m, i, u32::MAX - 1))
        .expect("C-RW-RP writer starved: the time bound did not raise RBarrier");
    eprintln!("C-RW-RP writer, patience u32::MAX - 1, got in after {waited:?}");
    let (m, i, _) = parts(0);
    let waited = writer_relay_vs_reader(&WriterPref::from_parts(m, i, u32::MAX - 1))
        .expect("C-RW-WP reader starved: the time bound did not raise WBarrier");
    eprintln!("C-RW-WP reader, patience u32::MAX - 1, got in after {waited:?}");
}

#[test]
fn writer_stream_cannot_starve_a_c_rw_wp_reader() {
    let _serial = serial();
    let (m, i, p) = parts(cohort::DEFAULT_PATIENCE);
    let waited = writer_relay_vs_reader(&WriterPref::from_parts(m, i, p))
        .expect("C-RW-WP reader starved by a writer stream despite WBarrier");
    eprintln!("C-RW-WP reader got in after {waited:?}");
    // The control need hold once in three (as above).
    assert!(
        (0..3).any(|_| {
            let (m, i, _) = parts(0);
            writer_relay_vs_reader(&WriterPref::from_parts(m, i, u32::MAX)).is_none()
        }),
        "control: without a barrier the relay should hold the reader off"
    );
}

/// A C-RW-RP reader whose CPU is shared departs while it waits for the
/// writer mutex (`reader_pref.rs`, "Oversubscription"); writers that do
/// not see it then enter. Against a relay of writers, whose mutex is never
/// free, it still gets in: it waits only for the hold it saw to end before
/// it arrives again, and after `MAX_RETREATS` departures it waits arrived,
/// so the writers back off for it. (A reader that waited for the mutex to
/// fall free, with no bound on its departures, starved here.)
#[test]
fn writer_stream_cannot_starve_a_c_rw_rp_reader_on_a_shared_cpu() {
    let _serial = serial();
    let (m, i, p) = parts(cohort::DEFAULT_PATIENCE);
    let waited = writer_relay_vs_reader_on(&ReaderPref::from_parts(m, i, p), true)
        .expect("C-RW-RP reader on a shared CPU starved by a writer stream");
    eprintln!("C-RW-RP reader on a shared CPU got in after {waited:?}");
}
