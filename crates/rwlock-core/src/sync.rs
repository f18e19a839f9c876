//! The one place lock code takes its synchronization primitives from.
//!
//! In a normal build this re-exports `core`/`std`; under `RUSTFLAGS="--cfg loom"`
//! it re-exports [loom](https://docs.rs/loom)'s instrumented versions so that the
//! same lock code runs inside a loom model. Every file of every lock imports
//! atomics, fences, spin hints, `UnsafeCell` and thread-locals from here and from
//! nowhere else (the pattern of tokio's `loom` module).
//!
//! Differences a protocol must respect (loom 0.7):
//! - loom models `SeqCst` loads and stores as `AcqRel`; a protocol that needs
//!   store-load ordering (Dekker-style: "publish, then check the other side")
//!   must use an explicit [`fence`]`(SeqCst)`, which loom does model.
//! - loom atomics have no `const fn new`; constructors that must stay `const` in
//!   normal builds are written with [`loom_const_fn!`](crate::loom_const_fn), and
//!   `RawRwLock::INIT` is unusable inside a model (use `new()` there).
//! - loom has no `compiler_fence`; [`compiler_fence`] maps to a real fence of the
//!   same ordering in a model, which is stronger and therefore sound.
//! - a spin loop must hand control back to the model: [`spin_loop`] and
//!   [`yield_now`] do.

#[cfg(not(loom))]
pub use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
    Ordering, compiler_fence, fence,
};

#[cfg(loom)]
pub use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
    Ordering, fence,
};

/// A compiler-only fence. Inside a loom model it is a real fence of the same
/// ordering (loom has no compiler fence; a stronger fence is sound).
#[cfg(loom)]
#[inline]
pub fn compiler_fence(order: Ordering) {
    loom::sync::atomic::fence(order)
}

/// A hint that the caller is busy-waiting.
#[cfg(not(loom))]
#[inline(always)]
pub fn spin_loop() {
    core::hint::spin_loop()
}

/// A hint that the caller is busy-waiting; yields to the loom scheduler.
#[cfg(loom)]
#[inline]
pub fn spin_loop() {
    loom::hint::spin_loop()
}

/// Gives up the rest of the time slice (a model step under loom).
#[cfg(not(loom))]
#[inline]
pub fn yield_now() {
    std::thread::yield_now()
}

/// Gives up the rest of the time slice (a model step under loom).
#[cfg(loom)]
#[inline]
pub fn yield_now() {
    loom::thread::yield_now()
}

#[cfg(not(loom))]
pub use std::thread_local;

#[cfg(loom)]
pub use loom::thread_local;

/// Threads: `std::thread` normally, `loom::thread` inside a model.
pub mod thread {
    #[cfg(not(loom))]
    pub use std::thread::{JoinHandle, spawn};

    #[cfg(loom)]
    pub use loom::thread::{JoinHandle, spawn};
}

/// `Arc`: `std::sync::Arc` normally, `loom::sync::Arc` inside a model.
#[cfg(not(loom))]
pub use std::sync::Arc;

#[cfg(loom)]
pub use loom::sync::Arc;

/// An `UnsafeCell` with loom's closure-based API, so that a model can check
/// every access for data races (a write that is not ordered after every other
/// access is reported by loom as a causality violation).
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `data`.
    #[inline]
    pub const fn new(data: T) -> Self {
        Self(core::cell::UnsafeCell::new(data))
    }

    /// Unwraps the value.
    #[inline]
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> UnsafeCell<T> {
    /// Runs `f` with a shared raw pointer to the contents.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable raw pointer to the contents.
    #[inline]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    /// Mutable access through a unique borrow.
    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }
}

#[cfg(loom)]
pub use loom::cell::UnsafeCell;

/// Defines a constructor that is `const fn` in normal builds and a plain `fn`
/// under loom (whose atomics cannot be built in a `const` context).
///
/// ```
/// use rwlock_core::loom_const_fn;
/// use rwlock_core::sync::AtomicU32;
/// pub struct Flag(AtomicU32);
/// impl Flag {
///     loom_const_fn! {
///         /// A cleared flag.
///         pub fn new() -> Self { Flag(AtomicU32::new(0)) }
///     }
/// }
/// static F: Flag = Flag::new();
/// # let _ = &F;
/// ```
#[macro_export]
macro_rules! loom_const_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$m])*
        #[inline]
        $vis const fn $name($($arg: $ty),*) -> $ret $body

        #[cfg(loom)]
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
