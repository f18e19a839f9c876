//! Every method this crate knows for asking which CPU the calling thread runs
//! on, so that they can be measured side by side (`cargo bench --bench
//! topology`). Locks call [`current_cpu`](super::current_cpu) instead, which
//! picks the cheapest; the [module docs](super) list what each costs.
//!
//! Each function returns `None` where its method does not exist (another
//! operating system or architecture, a CPU without the instruction, a C
//! library without rseq) or fails. The instruction-based methods read the
//! `TSC_AUX` register, in which Linux stores `node << 12 | cpu`, and return
//! its low 12 bits; they and [`rseq`] are offered on Linux on x86-64 only.

/// `sched_getcpu(3)`: glibc 2.35+ reads the thread's rseq area where the
/// kernel keeps it up to date, else calls the vDSO's `getcpu` (no system call
/// either way).
#[cfg(target_os = "linux")]
#[inline]
pub fn sched_getcpu() -> Option<usize> {
    // SAFETY: `sched_getcpu` has no preconditions; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// `sched_getcpu(3)`: glibc 2.35+ reads the thread's rseq area where the
/// kernel keeps it up to date, else calls the vDSO's `getcpu` (no system call
/// either way).
#[cfg(not(target_os = "linux"))]
#[inline]
pub fn sched_getcpu() -> Option<usize> {
    None
}

/// The `getcpu(2)` system call itself (what the vDSO saves).
#[cfg(target_os = "linux")]
#[inline]
pub fn getcpu_syscall() -> Option<usize> {
    let mut cpu: libc::c_uint = 0;
    // `getcpu` writes one `c_uint` through its first argument; the other two
    // may be null.
    // SAFETY: the first argument points to a live local `c_uint`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            core::ptr::null_mut::<libc::c_uint>(),
            core::ptr::null_mut::<libc::c_void>(),
        )
    };
    (rc == 0).then_some(cpu as usize)
}

/// The `getcpu(2)` system call itself (what the vDSO saves).
#[cfg(not(target_os = "linux"))]
#[inline]
pub fn getcpu_syscall() -> Option<usize> {
    None
}

/// Whether [`rdpid`] works: this is Linux on x86-64, the CPU has `RDPID`
/// (CPUID leaf 7, ECX bit 22), the machine has fewer than 4096 CPUs
/// (`TSC_AUX` holds 12 bits of the CPU number), and the `TSC_AUX` it reads
/// agreed with the kernel once. Detected once, then cached.
#[inline]
pub fn has_rdpid() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    return x86::has_rdpid();
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    return false;
}

/// Whether [`rdtscp`] works: this is Linux on x86-64, the CPU has `RDTSCP`
/// (CPUID leaf 0x8000_0001, EDX bit 27), the machine has fewer than 4096
/// CPUs (as [`has_rdpid`]), and the `TSC_AUX` it reads agreed with the
/// kernel once. Detected once, then cached.
#[inline]
pub fn has_rdtscp() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    return x86::has_rdtscp();
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    return false;
}

/// `RDPID`: reads `TSC_AUX` alone, without the time stamp; `None` where
/// [`has_rdpid`] is false.
#[inline]
pub fn rdpid() -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if x86::has_rdpid() {
        // SAFETY: the CPU supports RDPID, just checked.
        return Some(unsafe { x86::rdpid_unchecked() } & 0xfff);
    }
    None
}

/// `RDTSCP`: reads the time stamp counter and `TSC_AUX`; `None` where
/// [`has_rdtscp`] is false.
#[inline]
pub fn rdtscp() -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if x86::has_rdtscp() {
        // SAFETY: the CPU supports RDTSCP, just checked.
        return Some(unsafe { x86::rdtscp_aux_unchecked() } & 0xfff);
    }
    None
}

/// Whether [`rseq`] works in this process: glibc 2.35 or later registered a
/// restartable-sequences area for each thread (Linux 4.18 or later; not under
/// valgrind, nor with `GLIBC_TUNABLES=glibc.pthread.rseq=0`), and its `cpu_id`
/// agreed with the kernel's `getcpu` once. Detected once, then cached.
#[inline]
pub fn has_rseq() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    return rseq_area::offset().is_some();
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
    return false;
}

/// The `cpu_id` field of the thread's rseq area, which the kernel rewrites
/// whenever the thread returns to user space on another CPU: one load from
/// thread-local memory, exactly what glibc's `sched_getcpu` reads first.
/// `None` where [`has_rseq`] is false, or if the kernel has not filled the
/// field for this thread.
#[inline]
pub fn rseq() -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    if let Some(offset) = rseq_area::offset() {
        // SAFETY: `offset` is glibc's `__rseq_offset`, checked by `offset()`.
        return unsafe { rseq_area::cpu_id(offset) };
    }
    None
}

/// A per-thread cache of [`current_cpu_uncached`](super::current_cpu_uncached),
/// asked again every [`CPU_REFRESH_INTERVAL`](super::CPU_REFRESH_INTERVAL)
/// calls: what [`current_cpu`](super::current_cpu) uses where [`rseq()`] does
/// not work.
#[inline]
pub fn cached() -> usize {
    super::current::cached_cpu()
}

/// Whether `read` gives the kernel's answer, tried while the thread
/// demonstrably stays on one CPU (the same answer before and after). The
/// reference is the `getcpu` system call (glibc's `sched_getcpu` may read the
/// very field being checked), or `sched_getcpu` where the call is refused.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn agrees_with_the_kernel(read: impl Fn() -> Option<usize>) -> bool {
    let reference = || getcpu_syscall().or_else(sched_getcpu);
    for _ in 0..16 {
        let before = reference();
        let cpu = read();
        let after = reference();
        if before.is_some() && before == after {
            return cpu == before;
        }
    }
    false
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod rseq_area {
    use core::sync::atomic::{AtomicIsize, Ordering};

    /// `OFFSET` before the first probe.
    const UNKNOWN: isize = isize::MIN;
    /// `OFFSET` when rseq cannot be used.
    const ABSENT: isize = isize::MIN + 1;

    /// glibc's `__rseq_offset`: where the thread's `struct rseq` lies,
    /// relative to the thread pointer (the `fs` base on x86-64).
    static OFFSET: AtomicIsize = AtomicIsize::new(UNKNOWN);

    /// glibc's `__rseq_offset`, if rseq works in this process.
    #[inline]
    pub(super) fn offset() -> Option<isize> {
        match OFFSET.load(Ordering::Relaxed) {
            UNKNOWN => probe(),
            ABSENT => None,
            offset => Some(offset),
        }
    }

    /// Looks the offset up and checks it once; racing first calls compute
    /// and store the same answer, so `Relaxed` suffices.
    #[cold]
    fn probe() -> Option<isize> {
        let offset = lookup().filter(|&offset| agrees_with_the_kernel(offset));
        OFFSET.store(offset.unwrap_or(ABSENT), Ordering::Relaxed);
        offset
    }

    fn lookup() -> Option<isize> {
        // glibc 2.35+ exports both from ld.so; older C libraries do not, and
        // `dlsym` then returns null.
        // SAFETY: `dlsym` with `RTLD_DEFAULT` and NUL-terminated names.
        let (offset, size) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
            )
        };
        if offset.is_null() || size.is_null() {
            return None;
        }
        // glibc defines `const unsigned int __rseq_size` and
        // `const ptrdiff_t __rseq_offset`, set before `main`, never changed.
        // SAFETY: `dlsym` found both; they are aligned and initialised.
        let (offset, size) = unsafe { (*offset.cast::<isize>(), *size.cast::<u32>()) };
        // `__rseq_size` is 0 when registration failed or was disabled; the
        // area must at least cover `cpu_id_start` and `cpu_id`.
        (size >= 8).then_some(offset)
    }

    fn agrees_with_the_kernel(offset: isize) -> bool {
        super::agrees_with_the_kernel(|| {
            // SAFETY: `offset` is glibc's `__rseq_offset`, with a registered area.
            unsafe { cpu_id(offset) }
        })
    }

    /// The `cpu_id` field (`struct rseq` offset 4) of the calling thread's
    /// rseq area, if the kernel has set it (it holds -1 before registration
    /// and -2 after a failed one).
    ///
    /// # Safety
    ///
    /// `offset` must be glibc's `__rseq_offset`, with `__rseq_size >= 8`.
    #[inline]
    pub(super) unsafe fn cpu_id(offset: isize) -> Option<usize> {
        let cpu: i32;
        // glibc places every thread's `struct rseq` (at least `__rseq_size`
        // bytes) at thread pointer + `__rseq_offset` for the thread's whole
        // life, and the thread pointer is the `fs` base. The asm only reads
        // memory, and is not `pure`: every call reloads, as the kernel may
        // have rewritten the field since the last one.
        // SAFETY: so the 4-byte load at `fs:[offset + 4]` reads our `cpu_id`.
        unsafe {
            core::arch::asm!(
                "mov {cpu:e}, dword ptr fs:[{offset} + 4]",
                offset = in(reg) offset,
                cpu = lateout(reg) cpu,
                options(nostack, preserves_flags, readonly),
            );
        }
        usize::try_from(cpu).ok()
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86 {
    use core::arch::x86_64::{__cpuid, __cpuid_count, __get_cpuid_max, __rdtscp};
    use core::sync::atomic::{AtomicU8, Ordering};

    const UNKNOWN: u8 = 0;
    const ABSENT: u8 = 1;
    const PRESENT: u8 = 2;

    static RDPID: AtomicU8 = AtomicU8::new(UNKNOWN);
    static RDTSCP: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// `flag`, probed with `probe` on first use. Racing first uses probe
    /// twice and store the same answer, so `Relaxed` suffices.
    #[inline]
    fn cached(flag: &AtomicU8, probe: fn() -> bool) -> bool {
        match flag.load(Ordering::Relaxed) {
            PRESENT => true,
            ABSENT => false,
            _ => probe_and_store(flag, probe),
        }
    }

    #[cold]
    fn probe_and_store(flag: &AtomicU8, probe: fn() -> bool) -> bool {
        let present = probe();
        flag.store(if present { PRESENT } else { ABSENT }, Ordering::Relaxed);
        present
    }

    #[inline]
    pub(super) fn has_rdpid() -> bool {
        cached(&RDPID, probe_rdpid)
    }

    #[inline]
    pub(super) fn has_rdtscp() -> bool {
        cached(&RDTSCP, probe_rdtscp)
    }

    /// Whether every CPU number of the machine fits the 12 bits of
    /// `TSC_AUX` that Linux gives the CPU (`node << 12 | cpu`): with a CPU
    /// numbered 4096 or more, CPU 4096 + k would read as CPU k (the vDSO's
    /// `getcpu` truncates the same way), so `TSC_AUX` is not used there.
    /// The highest number comes from the end of
    /// `/sys/devices/system/cpu/possible` (`0-3,8-11`): until 2026-11-28
    /// this compared glibc's count of configured CPUs, which misses sparse
    /// numbers (`0-3,4096` counts 5; found in review). Read with `open` and
    /// `read` into a stack buffer, not `std::fs`: no allocation, since the
    /// LD_PRELOAD shim may get here from inside the allocator. A list that
    /// cannot be read, or does not fit the buffer, counts as not fitting.
    fn cpu_numbers_fit_tsc_aux() -> bool {
        let mut buf = [0u8; 512];
        // A NUL-terminated path; `read` writes at most `buf.len()` bytes
        // into the live buffer.
        // SAFETY: so; and the descriptor is ours to close.
        let len = unsafe {
            let fd = libc::open(
                c"/sys/devices/system/cpu/possible".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return false;
            }
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            n
        };
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        len < buf.len() && super::highest_cpu(&buf[..len]).is_some_and(|max| max < 0x1000)
    }

    fn probe_rdpid() -> bool {
        if __get_cpuid_max(0).0 < 7
            || __cpuid_count(7, 0).ecx & (1 << 22) == 0
            || !cpu_numbers_fit_tsc_aux()
        {
            return false;
        }
        // SAFETY: the CPU supports RDPID, just checked.
        super::agrees_with_the_kernel(|| Some(unsafe { rdpid_unchecked() } & 0xfff))
    }

    fn probe_rdtscp() -> bool {
        if __get_cpuid_max(0x8000_0000).0 < 0x8000_0001
            || __cpuid(0x8000_0001).edx & (1 << 27) == 0
            || !cpu_numbers_fit_tsc_aux()
        {
            return false;
        }
        // SAFETY: the CPU supports RDTSCP, just checked.
        super::agrees_with_the_kernel(|| Some(unsafe { rdtscp_aux_unchecked() } & 0xfff))
    }

    /// # Safety
    ///
    /// The CPU must support RDPID.
    #[inline]
    pub(super) unsafe fn rdpid_unchecked() -> usize {
        let aux: u64;
        // RDPID only writes its output register: no memory, stack or flags.
        // SAFETY: the caller guarantees the CPU supports RDPID.
        unsafe {
            core::arch::asm!(
                "rdpid {aux}",
                aux = out(reg) aux,
                options(nomem, nostack, preserves_flags),
            );
        }
        aux as usize
    }

    /// # Safety
    ///
    /// The CPU must support RDTSCP.
    #[inline]
    pub(super) unsafe fn rdtscp_aux_unchecked() -> usize {
        let mut aux = 0u32;
        // SAFETY: the caller guarantees RDTSCP exists; `aux` is a live local.
        unsafe { __rdtscp(&mut aux) };
        aux as usize
    }
}

/// The highest CPU number of a Linux CPU list (`0-3,8-11\n` gives 11):
/// the number after its last `,` or `-`; `None` if it is not one.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
fn highest_cpu(list: &[u8]) -> Option<u64> {
    let list = core::str::from_utf8(list).ok()?.trim();
    list.rsplit([',', '-']).next()?.parse().ok()
}

#[cfg(test)]
mod highest_cpu_tests {
    use super::highest_cpu;

    #[test]
    fn the_last_number_of_a_cpu_list_is_its_highest() {
        assert_eq!(highest_cpu(b"0\n"), Some(0));
        assert_eq!(highest_cpu(b"0-3\n"), Some(3));
        assert_eq!(highest_cpu(b"0-3,4096\n"), Some(4096));
        assert_eq!(highest_cpu(b"0-3,8-11"), Some(11));
        assert_eq!(highest_cpu(b""), None);
        assert_eq!(highest_cpu(b"0-"), None);
        assert_eq!(highest_cpu(b"\xff"), None);
    }
}
