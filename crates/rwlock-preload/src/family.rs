//! Which lock family the process runs on: chosen once, from `RWLOCK_IMPL`,
//! at the first call into the library (not in a constructor, so that a lock
//! used by another library's constructor before ours would have run gets
//! the same family as every later one).

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that names the family.
pub const ENV: &str = "RWLOCK_IMPL";

/// A lock family the library can put behind `pthread_rwlock_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Family {
    /// `bravo::RwLock`'s lock, BRAVO over parking_lot (the default), under
    /// `bravo::policy::UncountedPolicy`.
    Bravo = 1,
    /// BRAVO over PF-Q (the BRAVO paper's "BRAVO-BA").
    BravoPfq,
    /// Phase-fair queue lock (PF-Q), restricted.
    Pfq,
    /// Phase-fair ticket lock (PF-T), restricted.
    Pft,
    /// Per-CPU brlock, restricted.
    Brlock,
    /// Cohort C-RW-WP (writer preference).
    CohortWp,
    /// Cohort C-RW-NP (neutral preference).
    CohortNp,
    /// Cohort C-RW-RP (reader preference).
    CohortRp,
    /// Cohort, preference from the lock's attribute
    /// (`pthread_rwlockattr_setkind_np`).
    Cohort,
    /// The passive reader-writer lock (prwlock).
    Prwlock,
    /// `parking_lot::RawRwLock`.
    ParkingLot,
    /// glibc's own `pthread_rwlock_*` (the library forwards every call).
    Passthrough,
}

/// Every family: its `RWLOCK_IMPL` name and one line on what it is.
pub const FAMILIES: &[(Family, &str, &str)] = &[
    (
        Family::Bravo,
        "bravo",
        "BRAVO over parking_lot (bravo::RwLock)",
    ),
    (
        Family::BravoPfq,
        "bravo-pfq",
        "BRAVO over the phase-fair queue lock",
    ),
    (
        Family::Pfq,
        "pfq",
        "phase-fair queue lock (PF-Q), writers restricted to running CPUs",
    ),
    (
        Family::Pft,
        "pft",
        "phase-fair ticket lock (PF-T), writers restricted to running CPUs",
    ),
    (
        Family::Brlock,
        "brlock",
        "per-CPU brlock: a reader takes its CPU's sub-lock, a writer all",
    ),
    (
        Family::CohortWp,
        "cohort-wp",
        "NUMA cohort lock C-RW-WP (writer preference)",
    ),
    (
        Family::CohortNp,
        "cohort-np",
        "NUMA cohort lock C-RW-NP (neutral preference)",
    ),
    (
        Family::CohortRp,
        "cohort-rp",
        "NUMA cohort lock C-RW-RP (reader preference)",
    ),
    (
        Family::Cohort,
        "cohort",
        "cohort lock, preference per lock from pthread_rwlockattr_setkind_np (reader: RP, writer: WP)",
    ),
    (
        Family::Prwlock,
        "prwlock",
        "passive reader-writer lock: readers run no atomic RMW and no fence",
    ),
    (Family::ParkingLot, "parking_lot", "parking_lot::RawRwLock"),
    (
        Family::Passthrough,
        "passthrough",
        "glibc's own pthread_rwlock_t (every call forwarded)",
    ),
];

/// The family used when `RWLOCK_IMPL` is unset or `help`.
pub const DEFAULT: Family = Family::Bravo;

/// What `RWLOCK_IMPL=value` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A family by name.
    Family(Family),
    /// `help`: list the families, then run on the default.
    Help,
    /// Not a name: say so, then run on the passthrough.
    Unknown,
}

impl Family {
    /// The family named `name` (exact, lower case).
    pub fn from_name(name: &str) -> Option<Family> {
        FAMILIES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(f, _, _)| *f)
    }

    /// The family's `RWLOCK_IMPL` name.
    pub fn name(self) -> &'static str {
        FAMILIES
            .iter()
            .find(|(f, _, _)| *f == self)
            .map(|(_, n, _)| *n)
            .unwrap_or("?")
    }

    /// The name as a C string (for `rwlock_preload_family`).
    pub fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            Family::Bravo => c"bravo",
            Family::BravoPfq => c"bravo-pfq",
            Family::Pfq => c"pfq",
            Family::Pft => c"pft",
            Family::Brlock => c"brlock",
            Family::CohortWp => c"cohort-wp",
            Family::CohortNp => c"cohort-np",
            Family::CohortRp => c"cohort-rp",
            Family::Cohort => c"cohort",
            Family::Prwlock => c"prwlock",
            Family::ParkingLot => c"parking_lot",
            Family::Passthrough => c"passthrough",
        }
    }

    #[inline(always)]
    fn from_u8(v: u8) -> Option<Family> {
        Some(match v {
            1 => Family::Bravo,
            2 => Family::BravoPfq,
            3 => Family::Pfq,
            4 => Family::Pft,
            5 => Family::Brlock,
            6 => Family::CohortWp,
            7 => Family::CohortNp,
            8 => Family::CohortRp,
            9 => Family::Cohort,
            10 => Family::Prwlock,
            11 => Family::ParkingLot,
            12 => Family::Passthrough,
            _ => return None,
        })
    }
}

/// Parses a value of `RWLOCK_IMPL` (surrounding blanks ignored; `None`:
/// unset).
pub fn parse(value: Option<&str>) -> Choice {
    match value.map(str::trim) {
        None | Some("") => Choice::Family(DEFAULT),
        Some("help") => Choice::Help,
        Some(name) => Family::from_name(name).map_or(Choice::Unknown, Choice::Family),
    }
}

/// The text `RWLOCK_IMPL=help` prints.
pub fn help_text() -> String {
    let mut s = format!("rwlock-preload: {ENV} chooses the lock behind pthread_rwlock_t:\n");
    for (f, name, what) in FAMILIES {
        let mark = if *f == DEFAULT { " (default)" } else { "" };
        s.push_str(&format!("  {name:<12} {what}{mark}\n"));
    }
    s
}

/// The resolved family; 0 until the first call resolves it.
static FAMILY: AtomicU8 = AtomicU8::new(0);

/// The process's family, resolved from the environment at the first call.
#[inline]
pub fn current() -> Family {
    // Relaxed: the value is a pure function of the environment read by
    // whoever resolves it; nothing else is published with it.
    match Family::from_u8(FAMILY.load(Ordering::Relaxed)) {
        Some(f) => f,
        None => resolve(),
    }
}

#[cold]
#[inline(never)]
fn resolve() -> Family {
    let raw = env_value();
    // Not UTF-8: no family's name (the message below shows it lossily).
    let text = raw.map(|b| std::str::from_utf8(b).unwrap_or("\u{fffd}"));
    let choice = parse(text);
    let family = match choice {
        Choice::Family(f) => f,
        Choice::Help => DEFAULT,
        Choice::Unknown => Family::Passthrough,
    };
    // Whoever installs the value prints what there is to print, once.
    if FAMILY
        .compare_exchange(0, family as u8, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        let mut err = std::io::stderr();
        // Errors writing to stderr are ignored: the host program goes on.
        match choice {
            Choice::Help => {
                let _ = write!(err, "{}", help_text());
            }
            Choice::Unknown => {
                let _ = writeln!(
                    err,
                    "rwlock-preload: unknown {ENV}={:?} ({ENV}=help lists the choices); using glibc's pthread_rwlock_t (passthrough)",
                    String::from_utf8_lossy(raw.unwrap_or_default())
                );
            }
            Choice::Family(_) => {}
        }
    }
    Family::from_u8(FAMILY.load(Ordering::Relaxed)).unwrap_or(family)
}

/// The value of `RWLOCK_IMPL`, read without allocating: the first lock
/// call resolves the family, and a program whose `malloc` takes a
/// `pthread_rwlock_t` would call back into it from an allocation here,
/// forever (found in review, 2026-11-27, with `std::env::var_os`; every
/// family, passthrough included, overflowed the stack). The family is
/// stored before anything that allocates (the messages), so such a call
/// finds it.
fn env_value() -> Option<&'static [u8]> {
    const NAME: &std::ffi::CStr = c"RWLOCK_IMPL";
    const _: () = assert!(NAME.to_bytes().len() == ENV.len());
    // `getenv` returns null or the environment's NUL-terminated value,
    // which stays while nobody calls `setenv` (the program's business, as
    // with glibc's own `getenv` callers).
    // SAFETY: so the pointer, when not null, is a valid C string.
    unsafe {
        let p = libc::getenv(NAME.as_ptr());
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for (f, name, _) in FAMILIES {
            assert_eq!(Family::from_name(name), Some(*f));
            assert_eq!(f.name(), *name);
            assert_eq!(f.c_name().to_str(), Ok(*name));
            assert_eq!(Family::from_u8(*f as u8), Some(*f));
        }
        assert_eq!(Family::from_u8(0), None);
        assert_eq!(Family::from_u8(200), None);
    }

    #[test]
    fn parse_values() {
        assert_eq!(parse(None), Choice::Family(DEFAULT));
        assert_eq!(parse(Some("")), Choice::Family(DEFAULT));
        assert_eq!(parse(Some(" pfq\n")), Choice::Family(Family::Pfq));
        assert_eq!(parse(Some("help")), Choice::Help);
        assert_eq!(parse(Some("BRAVO")), Choice::Unknown);
        assert_eq!(parse(Some("bravo;rm -rf")), Choice::Unknown);
        assert_eq!(parse(Some("\u{fffd}")), Choice::Unknown);
    }

    #[test]
    fn help_lists_every_family() {
        let text = help_text();
        for (_, name, _) in FAMILIES {
            assert!(text.contains(name), "{name} missing from help");
        }
        assert!(text.contains("(default)"));
    }
}
