//! glibc's own `pthread_rwlock_*`, found with `dlsym(RTLD_NEXT, …)`: the
//! passthrough family, and every process-shared lock whatever the family.
//!
//! Calling `libc::pthread_rwlock_rdlock` from inside this library would call
//! this library (its exported symbols interpose on every caller, itself
//! included), hence the lookup. The functions are looked up once, at the
//! first call that needs them. The `clock` forms are optional (glibc 2.30
//! added them): on an older glibc the library forwards the `timed` forms
//! to glibc's `timed` forms (found in review, 2026-11-28: a lookup that
//! required the `clock` forms aborted the first forwarded call there).

use libc::{c_int, c_void, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};
use std::sync::OnceLock;

type Rw = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;
/// glibc's `pthread_rwlock_clock*lock`.
pub type RwClock = unsafe extern "C" fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int;
/// glibc's `pthread_rwlock_timed*lock`.
pub type RwTimed = unsafe extern "C" fn(*mut pthread_rwlock_t, *const timespec) -> c_int;
type RwInit = unsafe extern "C" fn(*mut pthread_rwlock_t, *const pthread_rwlockattr_t) -> c_int;

/// glibc's functions.
#[derive(Debug)]
pub struct Real {
    pub init: RwInit,
    pub destroy: Rw,
    pub rdlock: Rw,
    pub tryrdlock: Rw,
    pub timedrdlock: RwTimed,
    /// `None` before glibc 2.30.
    pub clockrdlock: Option<RwClock>,
    pub wrlock: Rw,
    pub trywrlock: Rw,
    pub timedwrlock: RwTimed,
    /// `None` before glibc 2.30.
    pub clockwrlock: Option<RwClock>,
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
    fn optional(name: &std::ffi::CStr) -> *mut c_void {
        // RTLD_NEXT searches the objects loaded after this one (the C library).
        // SAFETY: dlsym with a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
    }
    fn sym(name: &std::ffi::CStr) -> *mut c_void {
        let p = optional(name);
        assert!(
            !p.is_null(),
            "rwlock-preload: the C library has no {name:?}: cannot forward to it"
        );
        p
    }
    // each pointer is the C library's function of that name, whose
    // C signature is the one the transmute gives it (POSIX / glibc); an
    // optional one may be null, which `Option<fn>` represents as `None`
    // (the null-pointer optimisation guaranteed for function pointers).
    // SAFETY: as the lines above say.
    unsafe {
        Real {
            init: std::mem::transmute::<*mut c_void, RwInit>(sym(c"pthread_rwlock_init")),
            destroy: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_destroy")),
            rdlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_rdlock")),
            tryrdlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_tryrdlock")),
            timedrdlock: std::mem::transmute::<*mut c_void, RwTimed>(sym(
                c"pthread_rwlock_timedrdlock",
            )),
            clockrdlock: std::mem::transmute::<*mut c_void, Option<RwClock>>(optional(
                c"pthread_rwlock_clockrdlock",
            )),
            wrlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_wrlock")),
            trywrlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_trywrlock")),
            timedwrlock: std::mem::transmute::<*mut c_void, RwTimed>(sym(
                c"pthread_rwlock_timedwrlock",
            )),
            clockwrlock: std::mem::transmute::<*mut c_void, Option<RwClock>>(optional(
                c"pthread_rwlock_clockwrlock",
            )),
            unlock: std::mem::transmute::<*mut c_void, Rw>(sym(c"pthread_rwlock_unlock")),
        }
    }
}
