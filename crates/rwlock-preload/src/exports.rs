//! The exported `pthread_rwlock_*` functions: check the arguments, forward
//! the passthrough family and process-shared locks to glibc, dispatch the
//! rest to the family's [`shim`](crate::shim).

use crate::families::on_family;
use crate::family::{self, Family};
use crate::glibc::real;
use crate::shim::{self, Wait};
use libc::{EINVAL, c_int, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};

const _: () = assert!(size_of::<pthread_rwlock_t>() == 56 && align_of::<pthread_rwlock_t>() == 8);

unsafe extern "C" {
    // glibc's; not interposed by this library.
    fn pthread_rwlockattr_getkind_np(attr: *const pthread_rwlockattr_t, pref: *mut c_int) -> c_int;
}

/// The family to dispatch `rw` to, or `None` for glibc's own lock.
///
/// # Safety
///
/// `rw` is non-null and points to a `pthread_rwlock_t`.
#[inline(always)]
unsafe fn ours(rw: *mut pthread_rwlock_t) -> Option<Family> {
    let f = family::current();
    // SAFETY: forwarded.
    if f == Family::Passthrough || unsafe { shim::is_process_shared(rw) } {
        None
    } else {
        Some(f)
    }
}

/// Reads a caller's `abstime` (`None`: null).
///
/// # Safety
///
/// `at` is null or points to a readable `timespec`.
unsafe fn deadline(at: *const timespec) -> Option<timespec> {
    // SAFETY: non-null: the caller's readable timespec.
    (!at.is_null()).then(|| unsafe { at.read() })
}

/// The family the process runs on, as `RWLOCK_IMPL` names it (resolving it
/// if no lock call has yet): a static NUL-terminated string. C programs can
/// find it with `dlsym(RTLD_DEFAULT, "rwlock_preload_family")` to learn
/// whether the library is loaded and which lock they run on.
#[unsafe(no_mangle)]
pub extern "C" fn rwlock_preload_family() -> *const libc::c_char {
    family::current().c_name().as_ptr()
}

/// `pthread_rwlock_init`: a private lock of the attribute's kind on the
/// process's family; a process-shared one on glibc.
///
/// # Safety
///
/// POSIX's: `rw` points to a `pthread_rwlock_t` nobody uses; `attr` is
/// null or an initialised attribute object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_init(
    rw: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { init(rw, attr) }
}

/// glibc's alias of [`pthread_rwlock_init`] (see `on_lock`).
///
/// # Safety
///
/// As [`pthread_rwlock_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __pthread_rwlock_init(
    rw: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { init(rw, attr) }
}

/// The body of `pthread_rwlock_init` and its alias.
///
/// # Safety
///
/// As [`pthread_rwlock_init`].
#[inline(always)]
unsafe fn init(rw: *mut pthread_rwlock_t, attr: *const pthread_rwlockattr_t) -> c_int {
    if rw.is_null() {
        return EINVAL;
    }
    let (mut pshared, mut kind) = (libc::PTHREAD_PROCESS_PRIVATE, 0);
    if !attr.is_null() {
        // SAFETY: the caller's attribute object; glibc's getters.
        let bad = unsafe {
            libc::pthread_rwlockattr_getpshared(attr, &mut pshared) != 0
                || pthread_rwlockattr_getkind_np(attr, &mut kind) != 0
        };
        if bad {
            return EINVAL;
        }
    }
    let f = family::current();
    if f == Family::Passthrough || pshared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: forwarded to glibc with the caller's arguments.
        return unsafe { (real().init)(rw, attr) };
    }
    // SAFETY: non-null, the caller's lock.
    unsafe { on_family!(f, init(rw, kind)) }
}

/// An exported function on a lock: null is `EINVAL`; glibc's own locks (the
/// passthrough family, process-shared locks) go to glibc's `$real`, the
/// others to the family's `shim::$op(rw, args…)`. With `alias`, the same
/// function under glibc's own name for it too (`__pthread_rwlock_*`,
/// exported at `GLIBC_2.2.5`, which binaries linked against old libpthreads
/// may call; found in review, 2026-11-27: not interposed, they reached
/// glibc's code on this library's locks, and two writers got in). The
/// alias is a copy, not a call of the public name, which would bind
/// through the library's own exported symbol.
macro_rules! on_lock {
    ($(#[$doc:meta])* fn $name:ident, alias $alias:ident => $real:ident, $op:ident($($arg:expr),*)) => {
        on_lock!($(#[$doc])* fn $name => $real, $op($($arg),*));
        on_lock!(
            /// glibc's alias of the function of the same name without the
            /// leading underscores.
            fn $alias => $real, $op($($arg),*)
        );
    };
    ($(#[$doc:meta])* fn $name:ident => $real:ident, $op:ident($($arg:expr),*)) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// POSIX's: `rw` points to an initialised lock.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(rw: *mut pthread_rwlock_t) -> c_int {
            if rw.is_null() {
                return EINVAL;
            }
            // POSIX's contract, with `rw` checked non-null above.
            // SAFETY: non-null, the caller's initialised lock.
            unsafe {
                match ours(rw) {
                    None => (real().$real)(rw),
                    Some(f) => on_family!(f, $op(rw $(, $arg)*)),
                }
            }
        }
    };
}

/// The `clock` and `timed` forms: as [`on_lock`], with a clock and an
/// absolute timeout (null: `EINVAL`, also for glibc's own locks, which
/// would otherwise wait with no timeout). `$body` is the shared body, which
/// the exported `clock` form and its `timed` twin (on `CLOCK_REALTIME`)
/// both call: the `timed` form calling the exported `clock` one would bind
/// through the library's own exported symbol (see `on_lock`).
macro_rules! on_lock_until {
    ($(#[$doc:meta])* fn $name:ident, timed $timed:ident, body $body:ident => $real:ident, $real_timed:ident, $op:ident) => {
        /// The body of the `clock` form and its `timed` twin.
        ///
        /// # Safety
        ///
        /// As the `clock` form.
        #[inline(always)]
        unsafe fn $body(rw: *mut pthread_rwlock_t, clock: clockid_t, at: *const timespec) -> c_int {
            if rw.is_null() || at.is_null() {
                return EINVAL;
            }
            // POSIX's contract: `at` a readable timespec (checked non-null).
            // SAFETY: non-null, the caller's initialised lock and timespec.
            unsafe {
                match ours(rw) {
                    None => {
                        let real = real();
                        forward_until(rw, clock, at, real.$real, real.$real_timed)
                    }
                    Some(f) => match deadline(at) {
                        None => EINVAL,
                        Some(at) => on_family!(f, $op(rw, Wait::Until(clock, at))),
                    },
                }
            }
        }

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// POSIX's: `rw` points to an initialised lock; `at` is null or a
        /// readable `timespec`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(rw: *mut pthread_rwlock_t, clock: clockid_t, at: *const timespec) -> c_int {
            // SAFETY: forwarded.
            unsafe { $body(rw, clock, at) }
        }

        /// The `timed` twin of the `clock` form of the same operation
        /// (`CLOCK_REALTIME`).
        ///
        /// # Safety
        ///
        /// As the `clock` form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $timed(rw: *mut pthread_rwlock_t, at: *const timespec) -> c_int {
            // SAFETY: forwarded.
            unsafe { $body(rw, libc::CLOCK_REALTIME, at) }
        }
    };
}

/// A `clock` or `timed` call on one of glibc's own locks: glibc's `timed`
/// form on `CLOCK_REALTIME` (every glibc has it), its `clock` form
/// otherwise. glibc before 2.30 has no `clock` forms (`None`): a program
/// that calls them was linked against a later glibc and does not load
/// there, so only an unsupported clock can reach that case, and it gets
/// `EINVAL` as glibc's own check would give.
///
/// # Safety
///
/// `rw` and `at` as the `clock` form's, both non-null.
#[inline(always)]
unsafe fn forward_until(
    rw: *mut pthread_rwlock_t,
    clock: clockid_t,
    at: *const timespec,
    clock_form: Option<crate::glibc::RwClock>,
    timed_form: crate::glibc::RwTimed,
) -> c_int {
    // SAFETY: forwarded to glibc with the caller's arguments.
    unsafe {
        if clock == libc::CLOCK_REALTIME {
            timed_form(rw, at)
        } else {
            clock_form.map_or(EINVAL, |f| f(rw, clock, at))
        }
    }
}

on_lock! {
    /// `pthread_rwlock_destroy`.
    fn pthread_rwlock_destroy, alias __pthread_rwlock_destroy => destroy, destroy()
}
on_lock! {
    /// `pthread_rwlock_rdlock`.
    fn pthread_rwlock_rdlock, alias __pthread_rwlock_rdlock => rdlock, read(Wait::Block)
}
on_lock! {
    /// `pthread_rwlock_tryrdlock`.
    fn pthread_rwlock_tryrdlock, alias __pthread_rwlock_tryrdlock => tryrdlock, read(Wait::Try)
}
on_lock_until! {
    /// `pthread_rwlock_clockrdlock`.
    fn pthread_rwlock_clockrdlock, timed pthread_rwlock_timedrdlock, body read_until
        => clockrdlock, timedrdlock, read
}
on_lock! {
    /// `pthread_rwlock_wrlock`.
    fn pthread_rwlock_wrlock, alias __pthread_rwlock_wrlock => wrlock, write(Wait::Block)
}
on_lock! {
    /// `pthread_rwlock_trywrlock`.
    fn pthread_rwlock_trywrlock, alias __pthread_rwlock_trywrlock => trywrlock, write(Wait::Try)
}
on_lock_until! {
    /// `pthread_rwlock_clockwrlock`.
    fn pthread_rwlock_clockwrlock, timed pthread_rwlock_timedwrlock, body write_until
        => clockwrlock, timedwrlock, write
}
on_lock! {
    /// `pthread_rwlock_unlock`.
    fn pthread_rwlock_unlock, alias __pthread_rwlock_unlock => unlock, unlock()
}
