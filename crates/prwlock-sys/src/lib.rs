//! The ioctl ABI of prwlock's kernel helper, and thin safe wrappers.
//!
//! The helper is a Linux module, `prwlock_helper` (C source in this crate's
//! `kmod/`, GPL-2.0; ABI header `include/prwlock_helper.h`, which this
//! crate mirrors and `tests/abi.rs` checks size by size and offset by
//! offset). It gives prwlock (Liu, Zhang & Chen, ATC'14 Section 3.5; FCP
//! Sections 4.2 and 5.2) what user space cannot know:
//!
//! - **where each registered reader runs**: a thread registers its status
//!   record ([`Record`]); the module pins the record's page and, from
//!   preempt notifiers, writes [`Record::on_cpu`] at every context switch of
//!   that thread ([`ON_CPU`]` | cpu` while it runs, [`OFF_CPU`] while it does
//!   not). A writer counts a reader that is off CPU as reported: it
//!   cannot be between its status store and its check of the writer bit;
//! - **targeted writer consensus** ([`Device::consensus`], Fig. 4
//!   `AskForReport`): a full barrier (IPI) only on the CPUs that run a
//!   registered thread of the domain whose record has not reported the
//!   writer's version, where `membarrier(PRIVATE_EXPEDITED)` interrupts every
//!   CPU running a thread of the process.
//!
//! This crate builds nothing: load the module first
//! (`make -C /lib/modules/$(uname -r)/build M=$PWD/kmod modules && insmod
//! kmod/prwlock_helper.ko`). Without it, [`Device::open`] answers
//! [`Error::DeviceAbsent`] and prwlock runs with `membarrier`.
//!
//! ```no_run
//! use prwlock_sys::{Device, Record};
//!
//! let dev = Device::open().expect("prwlock_helper is loaded");
//! // A record that lives as long as the process (prwlock never frees its
//! // records).
//! let record: &'static Record = Box::leak(Box::new(Record::new()));
//! // SAFETY: the record outlives the registration, used only as a record.
//! unsafe { dev.register(record, 1) }.unwrap();
//! assert!(matches!(record.placement(), prwlock_sys::Placement::OnCpu(_)));
//! let interrupted = dev.consensus(1, 42, false).unwrap();
//! assert_eq!(interrupted, 0); // the only registered thread is the caller
//! dev.unregister(record, 1).unwrap();
//! ```

#![deny(missing_docs)]

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The ABI version this crate speaks (`PRWLOCK_ABI_VERSION`).
pub const ABI_VERSION: u32 = 1;
/// The device node the module creates.
pub const DEVICE: &CStr = c"/dev/prwlock";
/// Slots of a record (`PRWLOCK_SLOTS`).
pub const SLOTS: usize = 4;
/// Alignment (and size) of a record (`PRWLOCK_RECORD_ALIGN`).
pub const RECORD_ALIGN: usize = 128;
/// A slot word with this bit is free; its other bits are the version its
/// owner reported (`PRWLOCK_SLOT_FREE`). Any other value is a hold.
pub const SLOT_FREE: u64 = 1 << 62;
/// [`Record::on_cpu`] while the owner runs, or-ed with the CPU number.
pub const ON_CPU: u32 = 1 << 31;
/// [`Record::on_cpu`] while the owner is off CPU.
pub const OFF_CPU: u32 = 1 << 30;
/// The CPU bits of [`Record::on_cpu`].
pub const CPU_MASK: u32 = 0x3fff_ffff;
/// [`Device::consensus`] flag: every CPU running a registered thread of the
/// domain, reported or not (`PRWLOCK_CONSENSUS_ALL`).
pub const CONSENSUS_ALL: u32 = 1;

/// A thread's status record in one domain (`struct prwlock_record`): the
/// owner writes `slots`, the module reads them and writes `on_cpu`.
#[repr(C, align(128))]
#[derive(Debug)]
pub struct Record {
    /// Status words (see [`SLOT_FREE`]).
    pub slots: [AtomicU64; SLOTS],
    /// The owner's own fields; the module never touches them.
    pub owner: [u64; 4],
    /// 0 until registered; then [`ON_CPU`]` | cpu` or [`OFF_CPU`].
    pub on_cpu: AtomicU32,
    /// Reserved; zero.
    pub reserved: [u32; 15],
}

impl Record {
    /// A record with every slot free (version 0), not registered.
    pub const fn new() -> Self {
        Record {
            slots: [const { AtomicU64::new(SLOT_FREE) }; SLOTS],
            owner: [0; 4],
            on_cpu: AtomicU32::new(0),
            reserved: [0; 15],
        }
    }

    /// Where the owner runs, as the module last wrote it.
    pub fn placement(&self) -> Placement {
        // Acquire: pairs with nothing in particular (the module's plain
        // store); a snapshot that the owner's next switch may change.
        decode_on_cpu(self.on_cpu.load(Ordering::Acquire))
    }
}

impl Default for Record {
    fn default() -> Self {
        Self::new()
    }
}

/// What a record's `on_cpu` word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Not registered with the module (or no longer).
    Untracked,
    /// The owner runs on this CPU.
    OnCpu(u32),
    /// The owner is off CPU (preempted, blocked, or exited).
    OffCpu,
}

/// Decodes an `on_cpu` word.
pub const fn decode_on_cpu(word: u32) -> Placement {
    if word & ON_CPU != 0 {
        Placement::OnCpu(word & CPU_MASK)
    } else if word & OFF_CPU != 0 {
        Placement::OffCpu
    } else {
        Placement::Untracked
    }
}

/// `struct prwlock_version`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VersionArg {
    /// The module's ABI version.
    pub abi: u32,
    /// Records one thread may register (one per domain).
    pub records_per_thread: u32,
}

/// `struct prwlock_register`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisterArg {
    /// User address of the record.
    pub record: u64,
    /// The domain (an opaque cookie).
    pub domain: u64,
    /// `size_of::<RegisterArg>()`.
    pub size: u32,
    /// 0.
    pub flags: u32,
}

/// `struct prwlock_consensus`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsensusArg {
    /// The domain.
    pub domain: u64,
    /// The writer's version.
    pub version: u64,
    /// `size_of::<ConsensusArg>()`.
    pub size: u32,
    /// 0 or [`CONSENSUS_ALL`].
    pub flags: u32,
    /// Out: CPUs interrupted.
    pub cpus_interrupted: u32,
    /// 0.
    pub reserved: u32,
}

/// `struct prwlock_stats`: the counters of this process's open device.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// In: `size_of::<Stats>()`.
    pub size: u32,
    /// Registered threads now.
    pub threads: u32,
    /// Registered records now.
    pub records: u64,
    /// Consensus requests served.
    pub consensus: u64,
    /// CPUs they interrupted, in all.
    pub cpus_interrupted: u64,
}

/// The ioctl type byte (`PRWLOCK_IOC_MAGIC`).
pub const IOC_MAGIC: u8 = 0xB7;

/// Linux's generic `_IOC` encoding (x86, arm, riscv: 2 direction bits at 30,
/// 14 size bits at 16). The architectures with their own layout (powerpc,
/// mips, sparc, alpha) get no device: [`Device::open_path`] refuses there
/// rather than send requests the module would misread.
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((IOC_MAGIC as u64) << 8) | nr
}
const GENERIC_IOC: bool = !cfg!(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6",
    target_arch = "sparc",
    target_arch = "sparc64",
));
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

/// `PRWLOCK_IOC_VERSION`.
pub const IOC_VERSION: u64 = ioc(IOC_READ, 0, size_of::<VersionArg>());
/// `PRWLOCK_IOC_REGISTER`.
pub const IOC_REGISTER: u64 = ioc(IOC_WRITE, 1, size_of::<RegisterArg>());
/// `PRWLOCK_IOC_UNREGISTER`.
pub const IOC_UNREGISTER: u64 = ioc(IOC_WRITE, 2, size_of::<RegisterArg>());
/// `PRWLOCK_IOC_CONSENSUS`.
pub const IOC_CONSENSUS: u64 = ioc(IOC_READ | IOC_WRITE, 3, size_of::<ConsensusArg>());
/// `PRWLOCK_IOC_STATS`.
pub const IOC_STATS: u64 = ioc(IOC_READ | IOC_WRITE, 4, size_of::<Stats>());

const _: () = assert!(size_of::<Record>() == RECORD_ALIGN);
const _: () = assert!(align_of::<Record>() == RECORD_ALIGN);

/// What went wrong, in the module's terms.
#[derive(Debug)]
pub enum Error {
    /// `/dev/prwlock` does not exist: the module is not loaded.
    DeviceAbsent,
    /// The device exists but may not be opened (permissions, seccomp).
    Denied(io::Error),
    /// The module speaks an older ABI than this crate.
    ModuleTooOld {
        /// The module's version.
        found: u32,
        /// This crate's.
        needed: u32,
    },
    /// The module speaks a newer ABI than this crate: its record layout or
    /// requests may differ from the ones this crate knows, so it is not
    /// used.
    ModuleTooNew {
        /// The module's version.
        found: u32,
        /// This crate's.
        needed: u32,
    },
    /// The module refused an argument (`EINVAL`: misaligned record, a
    /// record outside anonymous memory, wrong size or flags).
    BadArgument,
    /// The record lies outside the caller's writable memory (`EFAULT`).
    BadAddress,
    /// This thread already registered this record (through any descriptor)
    /// or a record of this domain (through this one) (`EEXIST`).
    AlreadyRegistered,
    /// Another thread registered this record (`EBUSY`).
    RecordInUse,
    /// The calling thread registered no such record (`ENOENT`).
    NotRegistered,
    /// The thread holds the most records the module allows, through all
    /// its descriptors together (`ENOSPC`).
    TooManyRecords,
    /// The device was opened by another process (`EPERM`).
    WrongProcess,
    /// Any other failure.
    Os(io::Error),
}

impl Error {
    fn from_errno(err: io::Error) -> Self {
        match err.raw_os_error() {
            Some(libc::EINVAL) => Error::BadArgument,
            Some(libc::EFAULT) => Error::BadAddress,
            Some(libc::EEXIST) => Error::AlreadyRegistered,
            Some(libc::EBUSY) => Error::RecordInUse,
            Some(libc::ENOENT) => Error::NotRegistered,
            Some(libc::ENOSPC) => Error::TooManyRecords,
            Some(libc::EPERM) => Error::WrongProcess,
            _ => Error::Os(err),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::DeviceAbsent => write!(
                f,
                "{} does not exist: the prwlock_helper module is not loaded",
                DEVICE.to_string_lossy()
            ),
            Error::Denied(e) => write!(f, "cannot open {}: {e}", DEVICE.to_string_lossy()),
            Error::ModuleTooOld { found, needed } => write!(
                f,
                "the prwlock_helper module speaks ABI {found}, this program needs {needed}: \
                 load a newer module"
            ),
            Error::ModuleTooNew { found, needed } => write!(
                f,
                "the prwlock_helper module speaks ABI {found}, newer than this program's \
                 {needed}: load the module built from this program's prwlock-sys"
            ),
            Error::BadArgument => f.write_str("the module refused an argument (EINVAL)"),
            Error::BadAddress => f.write_str("the record is not writable memory of this process"),
            Error::AlreadyRegistered => {
                f.write_str("this thread already registered this record or one of this domain")
            }
            Error::RecordInUse => f.write_str("another thread registered this record"),
            Error::NotRegistered => f.write_str("this thread registered no such record"),
            Error::TooManyRecords => f.write_str("this thread registered the most records allowed"),
            Error::WrongProcess => f.write_str("the device was opened by another process"),
            Error::Os(e) => write!(f, "prwlock_helper: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Denied(e) | Error::Os(e) => Some(e),
            _ => None,
        }
    }
}

/// The process's open `/dev/prwlock`.
#[derive(Debug)]
pub struct Device {
    fd: OwnedFd,
    records_per_thread: u32,
}

impl Device {
    /// Opens [`DEVICE`] and checks the module's ABI version.
    ///
    /// Without the module (the usual case) this is
    /// [`Error::DeviceAbsent`], and prwlock runs with `membarrier`:
    ///
    /// ```
    /// use prwlock_sys::{Device, Error};
    ///
    /// match Device::open() {
    ///     Ok(dev) => println!("helper loaded: {} records per thread", dev.records_per_thread()),
    ///     Err(Error::DeviceAbsent) => println!("helper not loaded"),
    ///     Err(e) => println!("helper unusable: {e}"),
    /// }
    ///
    /// // A node that does not exist is always reported as absent.
    /// let err = Device::open_path(c"/nonexistent/prwlock").unwrap_err();
    /// assert!(matches!(err, Error::DeviceAbsent));
    /// assert!(err.to_string().contains("not loaded"));
    /// ```
    pub fn open() -> Result<Self, Error> {
        Self::open_path(DEVICE)
    }

    /// Opens the device at `path` (a test may use another node).
    pub fn open_path(path: &CStr) -> Result<Self, Error> {
        if !GENERIC_IOC {
            return Err(Error::Os(io::Error::new(
                io::ErrorKind::Unsupported,
                "prwlock-sys encodes ioctl requests for the generic _IOC layout only",
            )));
        }
        // SAFETY: a valid C string; the flags ask for nothing unusual.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            let err = io::Error::last_os_error();
            return Err(match err.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENXIO) | Some(libc::ENODEV) => Error::DeviceAbsent,
                _ => Error::Denied(err),
            });
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut version = VersionArg::default();
        // SAFETY: the request names a `VersionArg`, which the module fills.
        unsafe { ioctl(&fd, IOC_VERSION, &mut version) }.map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOTTY) {
                // Not our module behind the node, or one without VERSION.
                Error::ModuleTooOld {
                    found: 0,
                    needed: ABI_VERSION,
                }
            } else {
                Error::Os(e)
            }
        })?;
        if version.abi < ABI_VERSION {
            return Err(Error::ModuleTooOld {
                found: version.abi,
                needed: ABI_VERSION,
            });
        }
        // One version only: a newer module may lay out the record (which
        // it writes into this process's memory) differently.
        if version.abi > ABI_VERSION {
            return Err(Error::ModuleTooNew {
                found: version.abi,
                needed: ABI_VERSION,
            });
        }
        Ok(Device {
            fd,
            records_per_thread: version.records_per_thread,
        })
    }

    /// Records one thread may register.
    pub fn records_per_thread(&self) -> u32 {
        self.records_per_thread
    }

    /// Registers `record` as the calling thread's record of `domain`: the
    /// module pins its page and writes its `on_cpu` word at every context
    /// switch of this thread until [`unregister`](Self::unregister) or the
    /// thread exits.
    ///
    /// `record` is an address rather than a reference so that a caller's
    /// own record type with the same layout where the module looks
    /// (`slots` at offset 0, `on_cpu` at its offset, 128 bytes, aligned)
    /// can be registered, as prwlock does.
    ///
    /// The record must lie in anonymous memory (heap, stack, a private
    /// mapping: [`Error::BadArgument`] for a file's page or shared
    /// memory), and a thread holds at most
    /// [`records_per_thread`](Self::records_per_thread) records through all
    /// its descriptors together ([`Error::TooManyRecords`]).
    ///
    /// # Safety
    /// `record` must point to such memory, and it must stay allocated and
    /// be used only as a status record until the registration ends
    /// ([`unregister`](Self::unregister), the thread's exit, or the close
    /// of this device's last descriptor, after which it reads 0 again):
    /// until then the module writes its `on_cpu` word from scheduler
    /// context (through the pinned page, so a freed and reused record
    /// would see those writes land in someone else's data), and reads its
    /// slots.
    pub unsafe fn register(&self, record: *const Record, domain: u64) -> Result<(), Error> {
        let mut arg = RegisterArg {
            record: record as u64,
            domain,
            size: size_of::<RegisterArg>() as u32,
            flags: 0,
        };
        // SAFETY: the request names a `RegisterArg`; the caller keeps the record.
        unsafe { ioctl(&self.fd, IOC_REGISTER, &mut arg) }.map_err(Error::from_errno)
    }

    /// Ends the calling thread's registration of `record` in `domain`.
    /// The module only compares the address with its registrations.
    pub fn unregister(&self, record: *const Record, domain: u64) -> Result<(), Error> {
        let mut arg = RegisterArg {
            record: record as u64,
            domain,
            size: size_of::<RegisterArg>() as u32,
            flags: 0,
        };
        // SAFETY: the argument is a `RegisterArg`, read only.
        unsafe { ioctl(&self.fd, IOC_UNREGISTER, &mut arg) }.map_err(Error::from_errno)
    }

    /// Writer consensus in `domain` for `version`: a full barrier on every
    /// CPU that runs a registered thread of the domain (other than the
    /// caller) whose record has not reported `version`, or, with `all`,
    /// every such CPU whatever its reports. Returns the CPUs interrupted.
    pub fn consensus(&self, domain: u64, version: u64, all: bool) -> Result<u32, Error> {
        let mut arg = ConsensusArg {
            domain,
            version,
            size: size_of::<ConsensusArg>() as u32,
            flags: if all { CONSENSUS_ALL } else { 0 },
            cpus_interrupted: 0,
            reserved: 0,
        };
        // SAFETY: the request names a `ConsensusArg`; the module writes it back.
        unsafe { ioctl(&self.fd, IOC_CONSENSUS, &mut arg) }.map_err(Error::from_errno)?;
        Ok(arg.cpus_interrupted)
    }

    /// The counters of this process's open device.
    pub fn stats(&self) -> Result<Stats, Error> {
        let mut stats = Stats {
            size: size_of::<Stats>() as u32,
            ..Stats::default()
        };
        // SAFETY: the argument is a `Stats`, which the module fills.
        unsafe { ioctl(&self.fd, IOC_STATS, &mut stats) }.map_err(Error::from_errno)?;
        Ok(stats)
    }

    /// Issues any request with any argument: for tests that check how the
    /// module handles bad input. Returns the `errno` of a failure.
    ///
    /// # Safety
    /// `arg` is handed to the kernel as is: if the module (or whatever
    /// driver is behind the descriptor) writes through it, it must point
    /// to memory that may be written, of the size the request encodes.
    pub unsafe fn raw_ioctl(&self, request: u64, arg: usize) -> Result<(), i32> {
        // SAFETY: the caller vouches for `arg`.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as _, arg) };
        if rc < 0 {
            Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
        } else {
            Ok(())
        }
    }
}

/// `ioctl(fd, request, arg)`, retried on `EINTR`.
///
/// # Safety
/// `T` must be the argument type that `request` encodes.
unsafe fn ioctl<T>(fd: &OwnedFd, request: u64, arg: &mut T) -> io::Result<()> {
    loop {
        // SAFETY: `arg` is a valid, writable `T`, the request's own type.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as *mut T) };
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_decodes_every_state() {
        assert_eq!(decode_on_cpu(0), Placement::Untracked);
        assert_eq!(decode_on_cpu(OFF_CPU), Placement::OffCpu);
        assert_eq!(decode_on_cpu(ON_CPU | 3), Placement::OnCpu(3));
        assert_eq!(Record::new().placement(), Placement::Untracked);
    }

    #[test]
    fn request_numbers_encode_direction_size_and_magic() {
        assert_eq!(IOC_VERSION >> 30, IOC_READ);
        assert_eq!(IOC_REGISTER >> 30, IOC_WRITE);
        assert_eq!((IOC_CONSENSUS >> 16) & 0x3fff, 32);
        assert_eq!((IOC_STATS >> 8) & 0xff, 0xB7);
    }

    #[test]
    fn an_absent_device_says_so() {
        let err = Device::open_path(c"/nonexistent/prwlock").unwrap_err();
        assert!(matches!(err, Error::DeviceAbsent), "{err:?}");
        assert!(err.to_string().contains("not loaded"));
    }
}

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
