//! Concurrency Kit's `ck_rwcohort` (neutral) and `ck_brlock` as harness peers,
//! through the C shim in `src/ck_shim.c` (built only when libck-dev is
//! installed: `cfg(has_ck)`).
//!
//! Neither CK lock yields or parks: their waiters spin. CK's rwcohort keeps
//! one central reader counter (not per-node indicators); its cohorts are one
//! ticket lock per NUMA node of [`Topology::global`] under a global ticket
//! lock. ck_brlock needs a registered reader record per thread and lock,
//! which this wrapper keeps in a thread-local list and frees with the lock.

use std::cell::RefCell;
use std::ffi::c_uint;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rwlock_core::topology::{Topology, current_node};

use crate::bench_lock::BenchLock;

#[repr(C)]
struct RwCohortRaw {
    _opaque: [u8; 0],
}

#[repr(C)]
struct BrlockRaw {
    _opaque: [u8; 0],
}

#[repr(C)]
struct BrlockReader {
    _opaque: [u8; 0],
}

unsafe extern "C" {
    fn ck_shim_rwcohort_new(nodes: c_uint) -> *mut RwCohortRaw;
    fn ck_shim_rwcohort_free(p: *mut RwCohortRaw);
    fn ck_shim_rwcohort_read_lock(p: *mut RwCohortRaw, node: c_uint);
    fn ck_shim_rwcohort_read_unlock(p: *mut RwCohortRaw, node: c_uint);
    fn ck_shim_rwcohort_write_lock(p: *mut RwCohortRaw, node: c_uint);
    fn ck_shim_rwcohort_write_unlock(p: *mut RwCohortRaw, node: c_uint);
    fn ck_shim_brlock_new() -> *mut BrlockRaw;
    fn ck_shim_brlock_free(br: *mut BrlockRaw);
    fn ck_shim_brlock_register(br: *mut BrlockRaw) -> *mut BrlockReader;
    fn ck_shim_brlock_unregister(br: *mut BrlockRaw, reader: *mut BrlockReader);
    fn ck_shim_brlock_read_lock(br: *mut BrlockRaw, reader: *mut BrlockReader);
    fn ck_shim_brlock_read_unlock(reader: *mut BrlockReader);
    fn ck_shim_brlock_write_lock(br: *mut BrlockRaw);
    fn ck_shim_brlock_write_unlock(br: *mut BrlockRaw);
}

/// `ck_rwcohort` (neutral preference) over per-node ticket cohorts.
#[derive(Debug)]
pub struct CkRwCohort {
    raw: *mut RwCohortRaw,
}

// SAFETY: the C lock is designed for concurrent use from any thread; the
// pointer is owned by this value and freed once, on drop.
unsafe impl Send for CkRwCohort {}
// SAFETY: as above.
unsafe impl Sync for CkRwCohort {}

impl BenchLock for CkRwCohort {
    fn create() -> Self {
        let nodes = Topology::global().node_count().max(1) as c_uint;
        // SAFETY: plain constructor; NULL only on allocation failure.
        let raw = unsafe { ck_shim_rwcohort_new(nodes) };
        assert!(!raw.is_null(), "ck_shim_rwcohort_new: out of memory");
        CkRwCohort { raw }
    }

    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        // The node is computed once and used for both calls: the cohort that
        // was locked is the one unlocked, even if the thread migrates.
        let node = current_node() as c_uint;
        // SAFETY: `raw` is live; lock and unlock are paired on one node.
        unsafe { ck_shim_rwcohort_read_lock(self.raw, node) };
        let out = f();
        // SAFETY: as above.
        unsafe { ck_shim_rwcohort_read_unlock(self.raw, node) };
        out
    }

    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        let node = current_node() as c_uint;
        // SAFETY: `raw` is live; lock and unlock are paired on one node.
        unsafe { ck_shim_rwcohort_write_lock(self.raw, node) };
        let out = f();
        // SAFETY: as above.
        unsafe { ck_shim_rwcohort_write_unlock(self.raw, node) };
        out
    }
}

impl Drop for CkRwCohort {
    fn drop(&mut self) {
        // SAFETY: created by `ck_shim_rwcohort_new`, freed exactly once.
        unsafe { ck_shim_rwcohort_free(self.raw) };
    }
}

thread_local! {
    /// This thread's ck_brlock reader records: (lock id, record).
    static READERS: RefCell<Vec<(u64, usize)>> = const { RefCell::new(Vec::new()) };
}

/// `ck_brlock` (per-reader records, a writer scans them all).
#[derive(Debug)]
pub struct CkBrlock {
    raw: *mut BrlockRaw,
    /// Unique per lock (addresses can be reused), keys the thread-locals.
    id: u64,
    /// Every registered record, unregistered and freed on drop.
    records: Mutex<Vec<usize>>,
}

// SAFETY: the C lock is designed for concurrent use; reader records are
// used only by the thread that registered them, and freed on drop.
unsafe impl Send for CkBrlock {}
// SAFETY: as above.
unsafe impl Sync for CkBrlock {}

impl CkBrlock {
    fn reader(&self) -> *mut BrlockReader {
        READERS.with(|readers| {
            let mut readers = readers.borrow_mut();
            if let Some(&(_, r)) = readers.iter().find(|(id, _)| *id == self.id) {
                return r as *mut BrlockReader;
            }
            // SAFETY: `raw` is live; registration takes the write lock inside.
            let r = unsafe { ck_shim_brlock_register(self.raw) };
            assert!(!r.is_null(), "ck_shim_brlock_register: out of memory");
            self.records.lock().unwrap().push(r as usize);
            readers.push((self.id, r as usize));
            r
        })
    }
}

impl BenchLock for CkBrlock {
    fn create() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        // SAFETY: plain constructor; NULL only on allocation failure.
        let raw = unsafe { ck_shim_brlock_new() };
        assert!(!raw.is_null(), "ck_shim_brlock_new: out of memory");
        CkBrlock {
            raw,
            // Relaxed: a unique number, nothing else.
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            records: Mutex::new(Vec::new()),
        }
    }

    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        let reader = self.reader();
        // SAFETY: `reader` is this thread's record registered with `raw`.
        unsafe { ck_shim_brlock_read_lock(self.raw, reader) };
        let out = f();
        // SAFETY: as above.
        unsafe { ck_shim_brlock_read_unlock(reader) };
        out
    }

    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        // SAFETY: `raw` is live.
        unsafe { ck_shim_brlock_write_lock(self.raw) };
        let out = f();
        // SAFETY: as above.
        unsafe { ck_shim_brlock_write_unlock(self.raw) };
        out
    }
}

impl Drop for CkBrlock {
    fn drop(&mut self) {
        for r in self.records.get_mut().unwrap().drain(..) {
            // `&mut self`: no thread holds or takes the lock any more.
            // SAFETY: every record was registered with `raw`, used no longer.
            unsafe { ck_shim_brlock_unregister(self.raw, r as *mut BrlockReader) };
        }
        // SAFETY: created by `ck_shim_brlock_new`, freed exactly once.
        unsafe { ck_shim_brlock_free(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{RunConfig, Workload, run};
    use std::time::Duration;

    #[test]
    fn ck_locks_pass_the_zero_sum_check() {
        let w = Workload::RwBench {
            threads: 3,
            write_ppm: 300_000,
            rcs: 4,
            wcs: 16,
            ncs: 8,
        };
        let cfg = RunConfig {
            duration: Duration::from_millis(100),
            pin: false,
        };
        run::<CkRwCohort>(&w, &cfg).unwrap();
        run::<CkBrlock>(&w, &cfg).unwrap();
    }
}
