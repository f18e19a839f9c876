//! FCP-RCU's deferred callbacks that defer in turn, and callbacks that
//! panic (`prwlock::rcu`, `defer` module docs).
//!
//! A destructor that retires the tail of a chain with `defer_drop` (the
//! usual way to free a linked structure readers may still walk) used to
//! reclaim inside the callback that ran it: one batch nested in the last,
//! per link, until the stack overflowed. The tests that could overflow run
//! in a child process (an overflow aborts it) on a small stack.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use prwlock::rcu::{DRAIN_ROUNDS, RcuCell, RcuDomain};

const CHILD: &str = "PRWLOCK_RCU_DEFER_CHILD";

/// Runs test `name` of this binary alone in a child process; panics with
/// the end of its output unless it succeeded.
fn in_child(name: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {name}: {:?}\nstdout: {stdout}\nstderr (end): {}",
        out.status,
        stderr.lines().rev().take(8).collect::<Vec<_>>().join("\n")
    );
}

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// A link whose destructor hands its tail to RCU instead of dropping it.
struct Node {
    next: Option<Box<Node>>,
    domain: &'static RcuDomain,
    dropped: &'static AtomicUsize,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        if let Some(next) = self.next.take() {
            self.domain.defer_drop(next);
        }
    }
}

fn chain(len: usize, domain: &'static RcuDomain, dropped: &'static AtomicUsize) -> Box<Node> {
    let mut head = Box::new(Node {
        next: None,
        domain,
        dropped,
    });
    for _ in 1..len {
        head = Box::new(Node {
            next: Some(head),
            domain,
            dropped,
        });
    }
    head
}

/// Retires `heads` (chains of `length` links) from a thread with a 512 KiB
/// stack, then calls `barrier` until nothing is queued: every link must be
/// dropped, each call reclaiming up to `DRAIN_ROUNDS + 1` batches.
#[allow(clippy::vec_box, reason = "each head is retired as the Box it is")]
fn retire_on_a_small_stack(
    domain: &'static RcuDomain,
    heads: Vec<Box<Node>>,
    dropped: &'static AtomicUsize,
    length: usize,
) {
    let links = heads.len() * length;
    let calls = thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || {
            for head in heads {
                domain.defer_drop(head);
            }
            let mut calls = 0;
            while domain.stats().pending != 0 {
                domain.barrier();
                calls += 1;
            }
            calls
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(dropped.load(Ordering::Relaxed), links);
    assert!(
        calls <= length / DRAIN_ROUNDS + 2,
        "{calls} barriers for chains of {length}"
    );
}

#[test]
fn child_a_chain_with_batches_of_one() {
    if !is_child() {
        return;
    }
    static D: RcuDomain = RcuDomain::new();
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    D.set_batch_size(1);
    // About 430 bytes of stack a link when batches nested: 8.6 MB.
    retire_on_a_small_stack(&D, vec![chain(20_000, &D, &DROPPED)], &DROPPED, 20_000);
}

/// Batch size 1: every link's `defer_drop` fills the batch inside the
/// callback that dropped the link before it.
#[test]
fn a_chain_retired_link_by_link_frees_at_constant_depth_batch_of_one() {
    in_child("child_a_chain_with_batches_of_one");
}

#[test]
fn child_chains_with_the_default_batch() {
    if !is_child() {
        return;
    }
    static D: RcuDomain = RcuDomain::new();
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    let heads = (0..256).map(|_| chain(2_000, &D, &DROPPED)).collect();
    retire_on_a_small_stack(&D, heads, &DROPPED, 2_000);
}

/// The default batch: 256 chains, so each batch's last callback fills the
/// queue again (nested, one level per link: 2 000 levels).
#[test]
fn chains_retired_link_by_link_free_at_constant_depth_default_batch() {
    in_child("child_chains_with_the_default_batch");
}

/// A callback that defers itself again, with batches of one: the
/// outermost `synchronize` reclaims in a loop, which must end (after
/// `DRAIN_ROUNDS` grace periods) rather than run the callback forever.
#[test]
fn a_callback_that_defers_itself_does_not_hold_synchronize_forever() {
    static D: RcuDomain = RcuDomain::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    fn tick() {
        RUNS.fetch_add(1, Ordering::Relaxed);
        D.defer(tick);
    }
    D.set_batch_size(1);
    let (done, finished) = std::sync::mpsc::channel();
    thread::spawn(move || {
        // Fills the batch: a `synchronize` runs `tick`, which defers again.
        D.defer(tick);
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a defer that reclaims never returned");
    let runs = RUNS.load(Ordering::Relaxed);
    assert!((1..=DRAIN_ROUNDS + 1).contains(&runs), "{runs} runs");
    assert_eq!(D.stats().pending, 1, "the last tick stays queued");
}

/// A callback of one domain that fills another's queue leaves it to the
/// outermost `synchronize`, which reclaims it before returning.
#[test]
fn a_callback_filling_another_domains_queue_is_reclaimed_by_the_outer_synchronize() {
    static A: RcuDomain = RcuDomain::new();
    static B: RcuDomain = RcuDomain::new();
    static RAN_IN_B: AtomicUsize = AtomicUsize::new(0);
    B.set_batch_size(1);
    A.defer(|| {
        B.defer(|| {
            RAN_IN_B.fetch_add(1, Ordering::Relaxed);
        });
        // Only queued, inside A's callback.
        assert_eq!(B.stats().pending, 1);
    });
    A.synchronize();
    assert_eq!(RAN_IN_B.load(Ordering::Relaxed), 1);
    assert_eq!(B.stats().pending, 0);
}

/// A panicking callback does not keep the rest of its batch (here other
/// threads' callbacks) from running; its panic reaches the thread that
/// reclaimed, once.
#[test]
fn a_panicking_callback_lets_the_rest_of_its_batch_run() {
    static D: RcuDomain = RcuDomain::new();
    static RAN: AtomicUsize = AtomicUsize::new(0);
    D.set_batch_size(4);
    thread::spawn(|| D.defer(|| panic!("a deferred callback's bug")))
        .join()
        .unwrap();
    for _ in 0..2 {
        thread::spawn(|| {
            D.defer(|| {
                RAN.fetch_add(1, Ordering::Relaxed);
            })
        })
        .join()
        .unwrap();
    }
    let cell = RcuCell::from_pointee_in(0u32, &D);
    // The fourth deferral (the old value) fills the batch.
    let panicked =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cell.store(Arc::new(1)))).is_err();
    assert!(
        panicked,
        "the callback's panic reaches the reclaiming caller"
    );
    assert_eq!(RAN.load(Ordering::Relaxed), 2, "the rest of the batch ran");
    assert_eq!(D.stats().pending, 0);
    D.barrier();
    assert_eq!(*cell.load(), 1);
}

#[test]
fn child_a_value_retired_while_unwinding() {
    if !is_child() {
        return;
    }
    static D: RcuDomain = RcuDomain::new();
    struct StoreOnDrop<'a>(&'a RcuCell<u32>);
    impl Drop for StoreOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(Arc::new(2));
        }
    }
    D.set_batch_size(2);
    {
        // Inside a section a deferral only queues.
        let _g = D.read();
        D.defer(|| panic!("a deferred callback's bug"));
    }
    let cell = RcuCell::from_pointee_in(0u32, &D);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _s = StoreOnDrop(&cell);
        panic!("the caller's own panic");
    }));
    assert!(unwound.is_err());
    // The old value filled the batch while the thread unwound.
    assert_eq!(D.stats().pending, 2, "only queued while unwinding");
    let reclaimed = std::panic::catch_unwind(|| D.barrier());
    assert!(
        reclaimed.is_err(),
        "the callback's panic comes with the next reclaim"
    );
    assert_eq!(D.stats().pending, 0);
    assert_eq!(*cell.load(), 2);
}

/// A destructor that updates a cell while its thread unwinds fills the
/// batch, whose callback panics: the batch is only queued, since running it
/// there would resume that panic during the unwinding and abort the process
/// (found in review on 2026-11-28; runs in a child, where the abort shows).
#[test]
fn a_value_retired_while_unwinding_is_only_queued() {
    in_child("child_a_value_retired_while_unwinding");
}
