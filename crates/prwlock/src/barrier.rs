//! The asymmetric barrier pair that replaces the paper's IPIs in user space.
//!
//! The paper's readers run no memory barrier: on TSO hardware the only
//! reordering that matters is a reader's status store passing its later load
//! of the writer word, and the writer closes that window by interrupting
//! every core (an IPI acts as a full barrier on the interrupted core). In user
//! space the same effect comes from Linux `membarrier(2)`:
//!
//! - **light barrier** (reader, every acquisition): a compiler fence only;
//! - **heavy barrier** (writer, only when some reader has not reported the
//!   writer's version): `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which
//!   runs a full memory barrier on every CPU currently running a thread of
//!   this process. A thread that is not running passes through the
//!   scheduler, itself a full barrier, before it runs again.
//!
//! The guarantee of the pair (the kernel's `membarrier` documentation, and
//! folly's `asymmetricLightBarrier`/`asymmetricHeavyBarrier`): if a reader
//! runs `store A; light; load B` and the writer `store B; heavy; load A`,
//! then the reader sees the writer's `B` or the writer sees the reader's `A`
//! (or both), never neither.
//!
//! `membarrier` can be missing or refused (kernels before 4.14, seccomp
//! profiles, gVisor). The process then runs in [`BarrierMode::Fence`]: the
//! light barrier becomes a real `fence(SeqCst)` and the heavy barrier needs
//! nothing beyond the writer's own SeqCst fence. The mode is chosen once,
//! before the first lock operation of the process that needs it, and never
//! changes afterwards (a change while readers run would be unsound):
//! [`barrier_mode`] reports it, [`force_fence_mode`] or the environment
//! variable `PRWLOCK_FORCE_FENCE=1` select the fallback before first use.
//!
//! With prwlock's kernel helper loaded (the `prwlock_helper` module of
//! `prwlock-sys`, device `/dev/prwlock`) the process runs in
//! [`BarrierMode::KernelHelper`]: readers are the same, and a writer's heavy
//! barrier becomes the module's consensus request, which interrupts only
//! the CPUs running registered readers of the domain that have not
//! reported the writer's version (paper Fig. 4 `AskForReport`; see
//! `Domain`'s heavy barrier for when it still falls back to `membarrier`).
//! `PRWLOCK_NO_KERNEL_HELPER=1` keeps the process on plain `membarrier`
//! even when the device is there.
//!
//! Inside a loom model both barriers are `fence(SeqCst)` (loom cannot model
//! an IPI; a SeqCst fence on each side is the guarantee `membarrier` gives).

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering as StdOrdering};

/// How the process's prwlocks close the reader's store-load window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierMode {
    /// Readers run a compiler fence only; writers that need it run
    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`. The fast mode
    /// without the kernel helper.
    Membarrier,
    /// As `Membarrier` for readers, who also register their status
    /// records with the kernel helper (`/dev/prwlock`); writers count a
    /// reader the helper saw leave its CPU as reported, and when a barrier
    /// is still needed ask the helper (IPIs to the CPUs of unreported
    /// readers only).
    KernelHelper,
    /// `membarrier` was refused or [`force_fence_mode`] asked for this:
    /// every reader acquisition and release runs a `fence(SeqCst)` (an
    /// `mfence` on x86-64), writers run nothing extra.
    Fence,
}

/// [`force_fence_mode`] came too late: the process already runs with
/// `membarrier` or the kernel helper ([`barrier_mode`] says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeAlreadyChosen;

impl fmt::Display for ModeAlreadyChosen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The mode is decided once this error exists: this only reads it.
        write!(
            f,
            "prwlock's barrier mode was already chosen ({:?}); call force_fence_mode \
             before the first lock operation",
            barrier_mode()
        )
    }
}

impl std::error::Error for ModeAlreadyChosen {}

const UNDECIDED: u8 = 0;
const MEMBARRIER: u8 = 1;
const FENCE: u8 = 2;
const KERNEL_HELPER: u8 = 3;

/// The process-wide mode. Not a loom atomic: it is decided once, outside
/// the protocol that the models check.
static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The kernel helper's device, set before `MODE` says `KERNEL_HELPER`.
#[cfg(not(loom))]
static DEVICE: std::sync::OnceLock<prwlock_sys::Device> = std::sync::OnceLock::new();

/// The kernel helper's device, in [`BarrierMode::KernelHelper`].
#[cfg(not(loom))]
#[inline]
pub(crate) fn device() -> Option<&'static prwlock_sys::Device> {
    DEVICE.get()
}

// linux/membarrier.h (libc 0.2 does not export these).
const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // membarrier takes two integers and a CPU id (ignored without
    // MEMBARRIER_CMD_FLAG_CPU).
    // SAFETY: the syscall touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// The mode this process's prwlocks run in, choosing it now if no lock has
/// been used yet: `KernelHelper` when `membarrier` works (as below) and
/// `/dev/prwlock` opens and speaks this build's ABI, unless
/// `PRWLOCK_NO_KERNEL_HELPER` is set (to a value other than empty, `0`,
/// `false`, `no` or `off`, in any case);
/// else `Membarrier` when `MEMBARRIER_CMD_QUERY` lists `PRIVATE_EXPEDITED`
/// and registering for it succeeds, and `PRWLOCK_FORCE_FENCE` is not set;
/// else `Fence`.
#[inline]
pub fn barrier_mode() -> BarrierMode {
    // Acquire: pairs with the Release CAS in `decide`, so a thread that sees
    // MEMBARRIER also sees the registration as done (and KERNEL_HELPER, the
    // device set).
    match MODE.load(StdOrdering::Acquire) {
        MEMBARRIER => BarrierMode::Membarrier,
        KERNEL_HELPER => BarrierMode::KernelHelper,
        FENCE => BarrierMode::Fence,
        _ => decide(),
    }
}

/// The kernel helper's counters for this process (registered threads and
/// records, consensus requests and the CPUs they interrupted), in
/// [`BarrierMode::KernelHelper`]; `None` in the other modes.
pub fn kernel_helper_stats() -> Option<prwlock_sys::Stats> {
    #[cfg(not(loom))]
    {
        device().and_then(|d| d.stats().ok())
    }
    #[cfg(loom)]
    {
        None
    }
}

/// Whether readers' light barrier is a compiler fence only (every mode but
/// `Fence`).
#[inline]
pub(crate) fn is_asymmetric(mode: BarrierMode) -> bool {
    mode != BarrierMode::Fence
}

/// Whether environment variable `name` is set, to a value that does not
/// say no (see [`flag_value`]).
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| flag_value(v.as_encoded_bytes()))
}

/// A flag's value: false when empty or, ignoring case and surrounding
/// whitespace, `0`, `false`, `no` or `off`; true otherwise (a value meant as
/// "off" used to count as set unless it was exactly `0`).
fn flag_value(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    !(value.is_empty()
        || [&b"0"[..], b"false", b"no", b"off"]
            .iter()
            .any(|no| value.eq_ignore_ascii_case(no)))
}

/// Selects [`BarrierMode::Fence`] for the rest of the process. Succeeds if
/// no lock operation has chosen the mode yet (or it already is `Fence`).
pub fn force_fence_mode() -> Result<(), ModeAlreadyChosen> {
    // AcqRel: the same publication as `decide`.
    match MODE.compare_exchange(UNDECIDED, FENCE, StdOrdering::AcqRel, StdOrdering::Acquire) {
        Ok(_) | Err(FENCE) => Ok(()),
        Err(_) => Err(ModeAlreadyChosen),
    }
}

/// [`decide_now`] outside any cancellation point: it opens the helper's
/// device and reads the environment inside a lock call, which must not be
/// one (`rwlock_core::wait::without_cancellation`).
#[cold]
fn decide() -> BarrierMode {
    rwlock_core::wait::without_cancellation(decide_now)
}

#[cold]
fn decide_now() -> BarrierMode {
    let forced = env_flag("PRWLOCK_FORCE_FENCE");
    let chosen = if cfg!(loom) {
        // Models treat both barriers as SeqCst fences; the reader paths
        // are the membarrier-mode ones.
        MEMBARRIER
    } else if !forced && probe_and_register() {
        if open_kernel_helper() {
            KERNEL_HELPER
        } else {
            MEMBARRIER
        }
    } else {
        FENCE
    };
    // AcqRel: publishes the registration to threads that read MEMBARRIER;
    // on a lost race the winner's choice stands (registration is harmless).
    let mode =
        match MODE.compare_exchange(UNDECIDED, chosen, StdOrdering::AcqRel, StdOrdering::Acquire) {
            Ok(_) => chosen,
            Err(other) => other,
        };
    match mode {
        MEMBARRIER => BarrierMode::Membarrier,
        KERNEL_HELPER => BarrierMode::KernelHelper,
        _ => BarrierMode::Fence,
    }
}

/// Opens the kernel helper's device (once per process) unless the
/// environment says not to. A missing device is the common case and says
/// nothing; a device that fails otherwise (an older module, permissions)
/// is reported once on stderr, and the process runs with `membarrier`.
#[cfg(not(loom))]
fn open_kernel_helper() -> bool {
    if env_flag("PRWLOCK_NO_KERNEL_HELPER") {
        return false;
    }
    if DEVICE.get().is_some() {
        return true;
    }
    match prwlock_sys::Device::open() {
        Ok(dev) => {
            // A racing `decide` may have set it first: either device works.
            let _ = DEVICE.set(dev);
            true
        }
        Err(prwlock_sys::Error::DeviceAbsent) => false,
        Err(e) => {
            // Not `eprintln!`, which panics when stderr is a closed pipe:
            // this runs inside a lock operation.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "prwlock: not using the kernel helper: {e}"
            );
            false
        }
    }
}

#[cfg(loom)]
fn open_kernel_helper() -> bool {
    false
}

fn probe_and_register() -> bool {
    let supported = membarrier(MEMBARRIER_CMD_QUERY);
    supported >= 0
        && supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED as libc::c_long != 0
        && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
}

/// The reader's side: a compiler fence in `Membarrier` mode (the caller's
/// fast path only runs in that mode), a real fence inside a loom model.
#[inline(always)]
pub(crate) fn light() {
    // SeqCst compiler fence: pairs with the writer's `heavy()`; emits no
    // instruction (see the module docs and tests/fast_path_asm.rs).
    crate::sync::compiler_fence(crate::sync::Ordering::SeqCst);
}

/// The reader's side on a slow path, where the mode is not known to be
/// `Membarrier`: a real fence in `Fence` mode.
#[inline]
pub(crate) fn light_in(mode: BarrierMode) {
    if is_asymmetric(mode) {
        light();
    } else {
        // SeqCst fence: pairs with the writer's SeqCst fence before it
        // reads reader status (store-load ordering on both sides).
        crate::sync::fence(crate::sync::Ordering::SeqCst);
    }
}

/// `membarrier(PRIVATE_EXPEDITED)`, retried on a transient failure.
///
/// Registration succeeded when the mode was chosen, so the kernel documents
/// no failure; a kernel may still fail to allocate its CPU mask (`ENOMEM`).
/// The caller holds a lock's writer bit and cannot go on without the
/// barrier (readers would run unfenced) nor unwind (the lock would stay
/// shut), so after retrying for about a second the process aborts with a
/// message: a loud failure instead of a silent data race or a hang.
fn expedited_membarrier() {
    for attempt in 0..1000 {
        if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 {
            return;
        }
        if attempt > 10 {
            // Not a cancellation point (a lock call must not be one).
            rwlock_core::wait::sleep_uncancelled(std::time::Duration::from_millis(1));
        } else {
            std::thread::yield_now();
        }
    }
    // Not `eprintln!`: a panic there (stderr a closed pipe) would unwind
    // with the writer bit set instead of aborting.
    use std::io::Write as _;
    let error = std::io::Error::last_os_error();
    let _ = writeln!(
        std::io::stderr(),
        "prwlock: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) keeps failing after a successful \
         registration ({error}); aborting rather than letting readers run unfenced"
    );
    std::process::abort();
}

/// The writer's side: one `membarrier` in `Membarrier` and `KernelHelper`
/// modes (the latter's targeted barrier is `Domain::heavy_barrier`, which
/// falls back to this), a SeqCst fence otherwise (and in loom models).
#[cold]
pub(crate) fn heavy() {
    if !cfg!(loom) && is_asymmetric(barrier_mode()) {
        expedited_membarrier();
    }
    // SeqCst: in Fence mode this pairs with the readers' SeqCst fences; in
    // Membarrier mode it orders the writer's own accesses around the call.
    crate::sync::fence(crate::sync::Ordering::SeqCst);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::flag_value;

    /// `PRWLOCK_FORCE_FENCE=false` used to force the fence mode.
    #[test]
    fn flag_values_that_say_no_are_false() {
        for no in ["", " ", "0", "false", "FALSE", " no ", "Off", "off\n"] {
            assert!(!flag_value(no.as_bytes()), "{no:?} reads as set");
        }
        for yes in ["1", "yes", "true", "on", "2", "x"] {
            assert!(flag_value(yes.as_bytes()), "{yes:?} reads as unset");
        }
    }
}
