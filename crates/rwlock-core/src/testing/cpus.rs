//! Pinning a test's threads to CPUs (Linux).

use std::sync::OnceLock;

/// The CPUs the calling thread may run on, ascending (its
/// `sched_getaffinity` mask).
///
/// # Panics
/// If the kernel refuses the call.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero `cpu_set_t` is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live `cpu_set_t` of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(
        rc,
        0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below `CPU_SETSIZE`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Pins the calling thread to CPU `cpu` (a number as `sched_getcpu`
/// returns it).
///
/// # Panics
/// If `cpu` is not below `CPU_SETSIZE`, or the kernel refuses (a CPU
/// outside the process's cpuset, or offline), with the OS error.
pub fn pin_to(cpu: usize) {
    assert!(
        cpu < libc::CPU_SETSIZE as usize,
        "pin_to({cpu}): not below CPU_SETSIZE"
    );
    // SAFETY: an all-zero `cpu_set_t` is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below `CPU_SETSIZE` (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // pid 0: the calling thread.
    // SAFETY: `set` is a live `cpu_set_t` of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(
        rc,
        0,
        "sched_setaffinity({cpu}): {}",
        std::io::Error::last_os_error()
    );
}

/// Pins the calling thread to the `n`-th CPU (modulo their number) of
/// those the first caller of this function could run on, and returns it:
/// for tests that put two threads on two CPUs, or on one, wherever the
/// process's cpuset starts (a container given CPUs 2 and 3 has no CPU 0).
///
/// # Panics
/// As [`pin_to`].
pub fn pin_to_allowed(n: usize) -> usize {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    let cpus = CPUS.get_or_init(allowed_cpus);
    let cpu = cpus[n % cpus.len()];
    pin_to(cpu);
    cpu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_where_the_thread_may_run() {
        std::thread::spawn(|| {
            let allowed = allowed_cpus();
            assert!(!allowed.is_empty());
            let cpu = pin_to_allowed(allowed.len() + 1);
            assert_eq!(cpu, allowed[1 % allowed.len()]);
            assert_eq!(allowed_cpus(), [cpu]);
        })
        .join()
        .unwrap();
    }

    #[test]
    #[should_panic(expected = "not below CPU_SETSIZE")]
    fn a_cpu_past_the_set_size_is_refused() {
        pin_to(libc::CPU_SETSIZE as usize);
    }
}
