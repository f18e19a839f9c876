//! glibc's own `pthread_rwlock_*`, found with `dlsym(RTLD_NEXT, …)`: the
//! passthrough family, and every process-shared lock whatever the family.
//!
//! Calling `libc::pthread_rwlock_rdlock` from inside this library would call
//! this library (its exported symbols interpose on every caller, itself
//! included), hence the lookup. The `timed` forms are the `clock` forms on
//! `CLOCK_REALTIME` (as in glibc). The functions are looked up once, at the
//! first call that needs them.

use libc::{c_int, c_void, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};
use std::sync::OnceLock;

type Rw = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;
type RwClock = unsafe extern "C" fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int;
type RwInit = unsafe extern "C" fn(*mut pthread_rwlock_t, *const pthread_rwlockattr_t) -> c_int;

/// glibc's functions.
#[derive(Debug)]
pub struct Real {
    pub init: RwInit,
    pub destroy: Rw,
    pub rdlock: Rw,
    pub tryrdlock: Rw,
    pub clockrdlock: RwClock,
    pub wrlock: Rw,
    pub trywrlock: Rw,
    pub clockwrlock: RwClock,
    pub unlock: Rw,
}

static REAL: OnceLock<Real> = OnceLock::new();

/// glibc's functions (looked up at the first call).
///
/// # Panics
///
/// If the C library has no `pthread_rwlock_*` at all (not glibc): the
/// library cannot forward, and says so (a panic in an `extern "C"` function
/// aborts the process with that message).
#[inline]
pub fn real() -> &'static Real {
    REAL.get_or_init(lookup)
}

#[cold]
fn lookup() -> Real {
    fn sym(name: &std::ffi::CStr) -> *mut c_void {
        // RTLD_NEXT searches the objects loaded after this one (the C library).
        // SAFETY: dlsym with a NUL-terminated name.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        assert!(
            !p.is_null(),
            "rwlock-preload: the C library has no {name:?}: cannot forward to it"
        );
        p
    }
    // each pointer is the C library's function of that name, whose
    // C signature is the one the transmute gives it (POSIX / glibc).
    // SAFETY: as the lines above say.
    unsafe {
        Real {
            init: std::mem::transmute::<*mut c_void, RwInit>(sym(c"pthread_rwlock_init")),
            destroy: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_destroy")),
            rdlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_rdlock")),
            tryrdlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_tryrdlock")),
            clockrdlock: std::mem::transmute::<*mut c_void, RwClock>(sym(
                c"pthread_rwlock_clockrdlock",
            )),
            wrlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_wrlock")),
            trywrlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_trywrlock")),
            clockwrlock: std::mem::transmute::<*mut c_void, RwClock>(sym(
                c"pthread_rwlock_clockwrlock",
            )),
            unlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_unlock")),
        }
    }
}
