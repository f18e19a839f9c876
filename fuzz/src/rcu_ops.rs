//! Target (g): FCP-RCU (`prwlock::rcu`), 1 to 3 threads running the read
//! sections, dereferences, cell updates, deferred callbacks, grace periods
//! and barriers the input deals them, on two [`RcuCell`]s and one pointer
//! slot managed by hand with [`RcuDomain::defer`], with the life of every
//! value tracked.
//!
//! Input: a byte choosing the thread count (bits 0-1: 1 to 3) and the
//! domain's batch size (bits 2-4: [`BATCHES`]), then one byte per
//! operation, dealt to the threads in turn (at most 256 each). An operation
//! byte: bits 0-3 the kind, bits 4-7 its parameter `p`:
//!
//! | kind | operation |
//! | --- | --- |
//! | 0 | enter a section (nested, up to depth 4) |
//! | 1 | leave the innermost section |
//! | 2 | cell `p & 1`: `get` in the open section, else a `load()` guard |
//! | 3 | the hand-made slot: dereference in the open section |
//! | 4 | check what the section saw; `p & 7` × 8 spins, a yield if `p & 8` |
//! | 5 | cell `p & 1`: `store` a new value |
//! | 6 | cell `p & 1`: `swap`, keeping the old value |
//! | 7 | cell `p & 1`: `compare_and_swap` against a kept value or the current one |
//! | 8 | cell `p & 1`: `rcu` (the closure's value is made once per operation) |
//! | 9 | cell `p & 1`: `replace`, keeping the `Retired` |
//! | 10 | the slot: swap in a new value, retire the old one with `defer` (`p & 1`: `defer_drop`) |
//! | 11 | `defer` a counted callback (`p & 1`: one that defers another, holding a value) |
//! | 12 | `synchronize` (outside a section only) |
//! | 13 | `barrier` (outside a section only), then every counted callback of this thread has run |
//! | 14 | drop a kept value (`p & 1`) or a kept `Retired` |
//! | 15 | a yield (`p & 8`), else `set_batch_size(BATCHES[p & 7])` |
//!
//! Checked: a value seen in a section is not dropped before the section's
//! outermost guard drops (each dereference reads the value's id and canary,
//! and the value's drop marks it in a registry, which the section re-reads
//! at each check and at its end: AddressSanitizer reports the freed memory
//! itself when the fuzzer runs); no value is dropped twice; after a
//! `barrier`, every callback the thread deferred before it has run; once
//! every thread is done and two barriers have run, every value made is
//! dropped (nothing retired is lost), and every counted callback ran once.
//! Synchronize and barrier are never called inside a section (documented
//! panics: libFuzzer aborts on a panic, so a panic is reserved for broken
//! promises). A run that has not ended within [`crate::WATCHDOG`] (a
//! grace period that never ends) aborts ([`crate::Armed`]).
//!
//! The domain is this target's own `static`, shared by its runs: the
//! values are per run, and each run starts by setting the batch size.

use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use prwlock::rcu::{RcuCell, RcuDomain, RcuReadGuard, Retired};

use crate::Bytes;

/// The domain every run uses.
static DOMAIN: RcuDomain = RcuDomain::new();

/// The batch sizes an input chooses from (`DEFAULT_BATCH` last).
pub const BATCHES: [usize; 8] = [1, 2, 3, 4, 8, 16, 64, prwlock::rcu::DEFAULT_BATCH];
const MAX_OPS_PER_THREAD: usize = 256;
const MAX_DEPTH: usize = 4;
const MAX_KEPT: usize = 4;

/// A value's state in the registry.
const LIVE: u8 = 1;
const DROPPED: u8 = 2;

/// Every value a run makes, by id, and what its checks found.
struct Registry {
    states: Vec<AtomicU8>,
    next: AtomicUsize,
    /// Broken promises seen where a panic cannot report them (in a
    /// callback, on whatever thread runs it).
    failures: Mutex<Vec<String>>,
}

impl Registry {
    fn fail(&self, what: String) {
        if let Ok(mut f) = self.failures.lock() {
            f.push(what);
        }
    }

    /// A new live value; `None` once the registry is full (then the
    /// operation that wanted it does nothing).
    fn make(self: &Arc<Self>) -> Option<Arc<Value>> {
        // Relaxed: a unique id.
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = self.states.get(id)?;
        // Relaxed: the value's own slot; its readers get the value through
        // a Release publication (a cell, the slot) that follows.
        state.store(LIVE, Ordering::Relaxed);
        Some(Arc::new(Value {
            id,
            canary: canary(id),
            registry: Arc::clone(self),
        }))
    }

    /// Whether value `id` is still live. Relaxed: if the value's drop
    /// happens after the section that asks (the promise), no ordering
    /// lets this load see it; if the drop came early, seeing it is a
    /// bonus (AddressSanitizer reports the freed memory in any case).
    fn live(&self, id: usize) -> bool {
        self.states[id].load(Ordering::Relaxed) == LIVE
    }
}

fn canary(id: usize) -> u64 {
    0x5eed_f00d_0000_0000 ^ id as u64
}

struct Value {
    id: usize,
    canary: u64,
    registry: Arc<Registry>,
}

impl Drop for Value {
    fn drop(&mut self) {
        // Relaxed: see `Registry::live`; the swap is exact whatever its
        // ordering, so a second drop is seen.
        let was = self.registry.states[self.id].swap(DROPPED, Ordering::Relaxed);
        if was != LIVE {
            self.registry
                .fail(format!("value {} dropped twice (state {was})", self.id));
        }
        self.canary = 0;
    }
}

/// Reads `v` as a reader would: its id, and the canary that must match it.
fn seen(v: &Value) -> Result<usize, String> {
    let id = v.id;
    if v.canary != canary(id) || !v.registry.live(id) {
        return Err(format!(
            "value {id} read in a section after its drop (canary {:#x})",
            v.canary
        ));
    }
    Ok(id)
}

/// The shared objects of one run.
struct Shared {
    registry: Arc<Registry>,
    cells: [RcuCell<Value>; 2],
    /// A pointer managed by hand: `Box::into_raw` of the current value,
    /// replaced with a swap and retired with `defer`.
    slot: AtomicPtr<Value>,
}

/// One thread's state.
struct Worker<'s> {
    shared: &'s Shared,
    guards: Vec<RcuReadGuard>,
    /// Ids seen since the outermost guard was taken.
    observed: Vec<usize>,
    kept: Vec<Arc<Value>>,
    retired: Vec<Retired<Value>>,
    /// Counted callbacks deferred, and how many of them ran.
    deferred: u64,
    ran: Arc<AtomicU64>,
}

/// Runs one input (panics or aborts on a broken promise).
pub fn run(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let config = bytes.byte();
    let threads = 1 + usize::from(config & 3) % 3;
    DOMAIN.set_batch_size(BATCHES[usize::from(config >> 2) & 7]);
    let plans = crate::deal(bytes.rest(), threads, MAX_OPS_PER_THREAD);
    let _armed = crate::Armed::new(
        "rcu_ops",
        "prwlock::rcu",
        "a grace period or a barrier never ended",
    );
    let registry = Arc::new(Registry {
        // Three first values, at most one per operation.
        states: (0..3 + threads * MAX_OPS_PER_THREAD)
            .map(|_| AtomicU8::new(0))
            .collect(),
        next: AtomicUsize::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let first = |r: &Arc<Registry>| r.make().expect("room for the first values");
    let shared = Shared {
        cells: [
            RcuCell::new_in(first(&registry), &DOMAIN),
            RcuCell::new_in(first(&registry), &DOMAIN),
        ],
        slot: AtomicPtr::new(Box::into_raw(Box::new(
            Arc::into_inner(first(&registry)).expect("a new Arc is unique"),
        ))),
        registry,
    };
    // A broken promise is reported by the worker that saw it (it leaves
    // its sections and stops) and panics here, after every worker is
    // joined (libfuzzer-sys aborts at a panic in any thread).
    let results: Vec<(Result<(), String>, u64, Arc<AtomicU64>)> = std::thread::scope(|s| {
        let workers: Vec<_> = plans
            .iter()
            .map(|plan| {
                let shared = &shared;
                s.spawn(move || {
                    let mut w = Worker {
                        shared,
                        guards: Vec::new(),
                        observed: Vec::new(),
                        kept: Vec::new(),
                        retired: Vec::new(),
                        deferred: 0,
                        ran: Arc::new(AtomicU64::new(0)),
                    };
                    let mut result = plan.iter().try_for_each(|&op| w.step(op));
                    while !w.guards.is_empty() {
                        if let Err(e) = w.leave() {
                            result = result.and(Err(e));
                        }
                    }
                    let Worker { deferred, ran, .. } = w;
                    (result, deferred, ran)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("workers report, never panic"))
            .collect()
    });
    if let Some(Err(first)) = results.iter().map(|r| &r.0).find(|r| r.is_err()) {
        panic!("rcu_ops: {first}");
    }
    let Shared {
        registry,
        cells,
        slot,
    } = shared;
    // No reader is left: the cells and the slot may drop their values now.
    drop(cells);
    // Every thread that could read the slot's value is joined, and it was
    // never retired (only replaced ones are).
    // SAFETY: so the pointer, from `Box::into_raw`, is ours to free.
    drop(unsafe { Box::from_raw(slot.into_inner()) });
    // The first runs what is queued (some callbacks defer one more), the
    // second what those deferred.
    DOMAIN.barrier();
    DOMAIN.barrier();
    if let Some(f) = registry.failures.lock().expect("no panic holds it").first() {
        panic!("rcu_ops: {f}");
    }
    for (t, (_, deferred, ran)) in results.iter().enumerate() {
        // Acquire: pairs with the callbacks' Release increments (the
        // barriers already ordered them before us).
        let ran = ran.load(Ordering::Acquire);
        assert_eq!(
            ran, *deferred,
            "rcu_ops: thread {t} deferred {deferred} counted callbacks, {ran} ran"
        );
    }
    // Relaxed: every drop happened before the barriers returned.
    let made = registry
        .next
        .load(Ordering::Relaxed)
        .min(registry.states.len());
    let left: Vec<usize> = (0..made).filter(|&id| registry.live(id)).collect();
    assert!(
        left.is_empty(),
        "rcu_ops: values {left:?} of {made} still live after every thread ended and two barriers"
    );
}

impl Worker<'_> {
    fn in_section(&self) -> bool {
        !self.guards.is_empty()
    }

    /// Everything seen in the section is still live.
    fn check(&self) -> Result<(), String> {
        match self
            .observed
            .iter()
            .find(|&&id| !self.shared.registry.live(id))
        {
            Some(id) => Err(format!(
                "value {id} dropped while a section that read it lasted (depth {})",
                self.guards.len()
            )),
            None => Ok(()),
        }
    }

    /// Drops the innermost guard, checking first (and forgetting what the
    /// section saw once the outermost goes).
    fn leave(&mut self) -> Result<(), String> {
        let checked = self.check();
        self.guards.pop();
        if self.guards.is_empty() {
            self.observed.clear();
        }
        checked
    }

    fn keep(&mut self, v: Arc<Value>) {
        if self.kept.len() == MAX_KEPT {
            self.kept.remove(0);
        }
        self.kept.push(v);
    }

    fn step(&mut self, op: u8) -> Result<(), String> {
        let p = op >> 4;
        let cell = &self.shared.cells[usize::from(p & 1)];
        let registry = &self.shared.registry;
        match op & 15 {
            0 => {
                if self.guards.len() < MAX_DEPTH {
                    self.guards.push(DOMAIN.read());
                }
            }
            1 => {
                if self.in_section() {
                    self.leave()?;
                }
            }
            2 => match self.guards.last() {
                Some(g) => {
                    let id = seen(cell.get(g))?;
                    self.observed.push(id);
                }
                None => {
                    let v = cell.load();
                    seen(&v)?;
                }
            },
            3 => {
                if self.in_section() {
                    // Acquire: pairs with the Release swap that published
                    // the value's contents.
                    let v = self.shared.slot.load(Ordering::Acquire);
                    // A value the slot held while this section lasts is
                    // retired with `defer`, after the section's end (the
                    // promise under test).
                    // SAFETY: so `v`, from `Box::into_raw`, is alive.
                    let id = seen(unsafe { &*v })?;
                    self.observed.push(id);
                }
            }
            4 => {
                for _ in 0..(p & 7) * 8 {
                    std::hint::spin_loop();
                }
                if p & 8 != 0 {
                    std::thread::yield_now();
                }
                self.check()?;
            }
            5 => {
                if let Some(v) = registry.make() {
                    cell.store(v);
                }
            }
            6 => {
                if let Some(v) = registry.make() {
                    let old = cell.swap(v);
                    self.keep(old);
                }
            }
            7 => {
                if let Some(v) = registry.make() {
                    let current = match self.kept.len() {
                        0 => cell.load_full(),
                        n => Arc::clone(&self.kept[usize::from(p >> 1) % n]),
                    };
                    let found = cell.compare_and_swap(&current, v);
                    self.keep(found);
                }
            }
            8 => {
                if let Some(v) = registry.make() {
                    let old = cell.rcu(|_| Arc::clone(&v));
                    self.keep(old);
                }
            }
            9 => {
                if let Some(v) = registry.make() {
                    if self.retired.len() == MAX_KEPT {
                        drop(self.retired.remove(0));
                    }
                    self.retired.push(cell.replace(v));
                }
            }
            10 => {
                if let Some(v) = registry.make() {
                    let new =
                        Box::into_raw(Box::new(Arc::into_inner(v).expect("a new Arc is unique")));
                    // AcqRel: Release publishes the new value's contents to
                    // readers (their Acquire load); Acquire makes the old
                    // one's ours to retire.
                    let old = self.shared.slot.swap(new, Ordering::AcqRel);
                    // SAFETY: from `Box::into_raw`; swapped out, so ours.
                    let old = unsafe { Box::from_raw(old) };
                    if p & 1 == 0 {
                        DOMAIN.defer(move || drop(old));
                    } else {
                        DOMAIN.defer_drop(old);
                    }
                }
            }
            11 => {
                self.deferred += 1;
                let ran = Arc::clone(&self.ran);
                let chained = if p & 1 != 0 { registry.make() } else { None };
                DOMAIN.defer(move || {
                    // Release: pairs with the Acquire load after a barrier.
                    ran.fetch_add(1, Ordering::Release);
                    if let Some(v) = chained {
                        DOMAIN.defer(move || drop(v));
                    }
                });
            }
            12 => {
                if !self.in_section() {
                    DOMAIN.synchronize();
                }
            }
            13 => {
                if !self.in_section() {
                    DOMAIN.barrier();
                    // Acquire: pairs with the callbacks' Release increments,
                    // which the barrier waited for.
                    let ran = self.ran.load(Ordering::Acquire);
                    if ran < self.deferred {
                        return Err(format!(
                            "a barrier returned with {} of this thread's {} callbacks run",
                            ran, self.deferred
                        ));
                    }
                }
            }
            14 => {
                if p & 1 != 0 {
                    if !self.kept.is_empty() {
                        self.kept.remove(usize::from(p >> 1) % self.kept.len());
                    }
                } else if !self.retired.is_empty() {
                    drop(
                        self.retired
                            .remove(usize::from(p >> 1) % self.retired.len()),
                    );
                }
            }
            _ => {
                if p & 8 != 0 {
                    std::thread::yield_now();
                } else {
                    DOMAIN.set_batch_size(BATCHES[usize::from(p & 7)]);
                }
            }
        }
        Ok(())
    }
}
