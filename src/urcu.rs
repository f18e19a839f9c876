//! liburcu's membarrier flavour (`urcu-memb`) for `benches/rcu.rs`, through
//! the C shim `src/urcu_shim.c` (built only when liburcu-dev is installed:
//! `cfg(has_urcu)`). The read loops run in C with liburcu's inline
//! `rcu_read_lock`/`rcu_read_unlock` (`_LGPL_SOURCE`), as its users get
//! them.

use std::sync::atomic::AtomicPtr;

unsafe extern "C" {
    fn urcu_shim_register();
    fn urcu_shim_unregister();
    fn urcu_shim_synchronize();
    fn urcu_shim_read_loop(slot: *const *mut u64, iters: u64) -> u64;
    fn urcu_shim_read_once(slot: *const *mut u64) -> u64;
    fn urcu_shim_update_batch(slot: *mut *mut u64, batch: u64, scratch: *mut *mut u64);
}

/// The calling thread's registration with liburcu
/// (`urcu_memb_register_thread`, once per thread, undone at thread exit):
/// liburcu's calls need one, and a second registration aborts.
#[derive(Debug)]
pub struct Registration(std::marker::PhantomData<*const ()>);

thread_local! {
    static REGISTERED: Registration = Registration::new();
}

/// Runs `f` with the calling thread's registration (made on first use).
pub fn with<R>(f: impl FnOnce(&Registration) -> R) -> R {
    REGISTERED.with(f)
}

impl Registration {
    fn new() -> Self {
        // Undone once, on drop, on the same thread (the type is not Send).
        // SAFETY: registers the calling thread, not registered before.
        unsafe { urcu_shim_register() };
        Registration(std::marker::PhantomData)
    }

    /// `iters` read sections loading `slot`'s value; the sum of the values.
    pub fn read_loop(&self, slot: &AtomicPtr<u64>, iters: u64) -> u64 {
        // Updaters free a value only after a grace period.
        // SAFETY: a registered thread; `slot` points to a live u64.
        unsafe { urcu_shim_read_loop(slot.as_ptr().cast_const(), iters) }
    }

    /// One read section loading `slot`'s value.
    pub fn read_once(&self, slot: &AtomicPtr<u64>) -> u64 {
        // SAFETY: as in `read_loop`.
        unsafe { urcu_shim_read_once(slot.as_ptr().cast_const()) }
    }

    /// `urcu_memb_synchronize_rcu`.
    pub fn synchronize(&self) {
        // SAFETY: a registered thread outside any read section.
        unsafe { urcu_shim_synchronize() }
    }

    /// `batch` pointer updates of `slot` with fresh `malloc`ed values, one
    /// grace period, then the old values freed.
    pub fn update_batch(&self, slot: &AtomicPtr<u64>, batch: usize) {
        let mut scratch = vec![std::ptr::null_mut::<u64>(); batch];
        // `slot` holds a `malloc`ed value (see `new_slot`).
        // SAFETY: a registered thread outside a section; `batch` entries.
        unsafe { urcu_shim_update_batch(slot.as_ptr(), batch as u64, scratch.as_mut_ptr()) }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the thread registered in `new`.
        unsafe { urcu_shim_unregister() };
    }
}

/// A slot holding a `malloc`ed `value` (what `update_batch` frees).
pub fn new_slot(value: u64) -> AtomicPtr<u64> {
    // SAFETY: malloc of one u64, checked for null, then initialized.
    let p = unsafe { libc::malloc(std::mem::size_of::<u64>()) }.cast::<u64>();
    assert!(!p.is_null(), "malloc failed");
    // SAFETY: freshly allocated, aligned by malloc.
    unsafe { p.write(value) };
    AtomicPtr::new(p)
}

/// Frees a slot's last value (no reader may be left).
pub fn free_slot(slot: AtomicPtr<u64>) {
    // SAFETY: the value came from malloc (new_slot or update_batch).
    unsafe { libc::free(slot.into_inner().cast()) };
}
