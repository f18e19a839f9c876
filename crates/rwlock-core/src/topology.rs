//! NUMA nodes, the CPU-to-node map, and which CPU and node the caller runs on.
//!
//! The NUMA-aware locks of the workspace keep per-node state (cohort locks: one
//! local lock and one reader indicator per node) or per-CPU state (brlock: one
//! sub-lock per CPU). They size those arrays from [`Topology::global()`] and
//! pick an entry with [`current_node`] or [`current_cpu`].
//!
//! # Where the topology comes from
//!
//! [`Topology::global()`] is computed once per process, on first use, and never
//! changes afterwards. The first source that works wins:
//!
//! 1. the environment variable [`ENV_VAR`] (`RWLOCK_TOPOLOGY`), if set and valid
//!    (grammar below). A malformed value never panics: `global()` prints one
//!    line to stderr naming the variable, its value and what is wrong, and goes
//!    on with detection. Call [`Topology::from_env`] (or [`Topology::parse`]
//!    and [`Topology::init_global`]) first to turn a bad value into a hard
//!    error instead;
//! 2. with the crate feature `hwloc`, the system's hwloc library
//!    (`Topology::from_hwloc`);
//! 3. Linux sysfs: `/sys/devices/system/node/node*/cpulist` and
//!    `/sys/devices/system/cpu/possible` ([`Topology::from_sysfs`]);
//! 4. one node holding [`std::thread::available_parallelism`] CPUs.
//!
//! [`Topology::init_global`] installs a topology of the caller's choice
//! instead, provided nothing has used the global one yet.
//!
//! # Numbering
//!
//! CPU and node numbers are the operating system's. Per-CPU arrays have
//! [`Topology::cpu_count`] entries (the highest CPU number plus one, counting
//! every *possible* CPU, so CPUs brought online later are covered; in the
//! fallback without sysfs or hwloc, the CPUs the process may run on, so a
//! CPU number may exceed it and is reduced modulo it), per-node
//! arrays [`Topology::node_count`] entries (the highest node number plus one).
//! A node may have no CPUs: a memory-only node (CXL or HBM memory), a gap in
//! the node numbering, or a synthetic node beyond the CPU count; it simply
//! never comes out of [`Topology::node_of`]. A CPU number that no node lists
//! (a gap in the numbering, a possible but offline CPU) belongs to the
//! lowest-numbered node that has CPUs, so `node_of` is total. A CPU number
//! beyond the map — a real CPU of a large machine under a small synthetic
//! topology — is first reduced modulo `cpu_count()`.
//!
//! # The override grammar (`RWLOCK_TOPOLOGY`, [`Topology::parse`])
//!
//! | spec | meaning |
//! | --- | --- |
//! | `0-3;4-7` | nodes separated by `;`, each a Linux cpulist such as `0-3,8,10-11` |
//! | `each-cpu` | every CPU of the machine (`0..cpu_count()`) is a node of its own |
//! | `nodes=N` | the machine's CPUs `0..cpu_count()` dealt round-robin into `N` nodes |
//! | `nodes=N,cpus=M` | `M` synthetic CPUs dealt round-robin into `N` nodes |
//!
//! "The machine" is what [`Topology::detect`] finds. `N` may exceed the CPU
//! count: the extra nodes are memory-only. Whitespace around tokens is
//! ignored. Errors, each naming the offending token: an empty spec, an empty
//! node (`0-1;;2-3`), a CPU listed twice, a reversed range (`3-0`), `nodes=0`
//! or `cpus=0`, a number above [`MAX_NODES`] / [`MAX_CPUS`] (a CPU number must
//! be below `MAX_CPUS`), an unknown key, anything else.
//!
//! ```
//! use rwlock_core::topology::{Topology, TopologySource};
//!
//! let t = Topology::parse("0-3,8 ; 4-7")?;
//! assert_eq!(t.node_count(), 2);
//! assert_eq!(t.cpu_count(), 9);
//! assert_eq!(t.cpus_of(0), &[0, 1, 2, 3, 8]);
//! assert_eq!(t.node_of(5), 1);
//! assert_eq!(t.source(), TopologySource::Custom);
//!
//! // 6 synthetic CPUs in 4 nodes: 0,4 | 1,5 | 2 | 3
//! let t = Topology::parse("nodes=4, cpus=6")?;
//! assert_eq!(t.cpus_of(0), &[0, 4]);
//! assert_eq!(t.cpus_of(3), &[3]);
//!
//! // The machine's CPUs, each its own node / dealt into 2 nodes.
//! let machine = Topology::detect();
//! assert_eq!(Topology::parse("each-cpu")?.node_count(), machine.cpu_count());
//! assert_eq!(Topology::parse("nodes=2")?.cpu_count(), machine.cpu_count());
//!
//! let err = Topology::parse("0-3;2-5").unwrap_err();
//! assert_eq!(err.to_string(), "CPU 2 is listed in node 0 and again in node 1");
//! let err = Topology::parse("0-3;x").unwrap_err();
//! assert!(err.to_string().contains("`x`"));
//! # Ok::<(), rwlock_core::topology::TopologyError>(())
//! ```
//!
//! ```text
//! RWLOCK_TOPOLOGY='0-7;8-15' cargo test           # two nodes of 8 CPUs
//! RWLOCK_TOPOLOGY=each-cpu cargo bench            # a node per CPU (worst case for cohorts)
//! RWLOCK_TOPOLOGY=nodes=4 cargo test              # 4 nodes on a 2-core machine
//! ```
//!
//! # The current CPU
//!
//! [`current_cpu`] returns the operating system's number of the CPU the
//! thread runs on, *not* a number below `cpu_count()`: callers reduce it
//! modulo their array length (or call [`Topology::node_of`], which does).
//! Whatever the method, the thread may have migrated by the time the number
//! is used, and the default method may even answer with a slightly stale
//! number (below). The locks of this workspace accept both: the index a
//! reader chose travels in its guard (`lock_api`'s `SharedGuard`) from lock to
//! unlock and is never recomputed, so a stale or migrated CPU costs locality
//! and cache traffic, never correctness.
//!
//! `current_cpu` uses the first of these that works:
//!
//! 1. **rseq** ([`probe::rseq`]): glibc 2.35 and later register a
//!    restartable-sequences area for every thread, whose `cpu_id` the kernel
//!    rewrites whenever the thread resumes on another CPU. Reading it is one
//!    load from thread-local memory and as exact as `sched_getcpu` (which
//!    reads the same field). Offered on Linux x86-64 with glibc; absent under
//!    valgrind (which refuses rseq) and with
//!    `GLIBC_TUNABLES=glibc.pthread.rseq=0`.
//! 2. **a per-thread cache** ([`probe::cached`]) of [`current_cpu_uncached`],
//!    asked again every [`CPU_REFRESH_INTERVAL`] (64) calls: after a migration
//!    a thread goes on reporting its old CPU for at most 63 more calls.
//!    [`refresh_current_cpu`] refreshes it at once (after changing the
//!    thread's affinity, say).
//!
//! [`current_cpu_uncached`] never caches: rseq, else `RDPID` (checked once
//! against the kernel's answer), else `sched_getcpu`, else — on targets where
//! the operating system cannot tell — a number dealt round-robin to each
//! thread on its first call, which spreads threads over per-CPU slots as well
//! as a real CPU number would.
//!
//! Measured on this 2-core VM, `cargo bench --bench topology` (criterion,
//! group `current_cpu`), median ns per call, the median of three runs; the
//! second column with rseq turned off (`GLIBC_TUNABLES=glibc.pthread.rseq=0`).
//! Run to run, entries under 5 ns move by about ±0.5 ns on this shared VM, so
//! smaller differences mean nothing.
//!
//! | method | ns/call | without rseq | notes |
//! | --- | ---: | ---: | --- |
//! | [`current_cpu`] (default) | 0.8 | 1.9 | rseq; without it the cache |
//! | [`probe::rseq`] | 0.8 | — | the same load as `current_cpu` |
//! | [`current_cpu_uncached`] | 0.8 | 3.6 | rseq; without it `RDPID` |
//! | [`probe::cached`] | 2.0 | 2.1 | thread-local, refreshed every 64 calls |
//! | [`probe::sched_getcpu`] | 2.6 | 6.1 | glibc: rseq field, else vDSO `getcpu` |
//! | [`probe::rdpid`] | 3.0 | 3.1 | `RDPID`, `TSC_AUX & 0xfff` |
//! | [`probe::rdtscp`] | 31 | 27 | `RDTSCP`, `TSC_AUX & 0xfff`; traps to the hypervisor here |
//! | [`probe::getcpu_syscall`] | 128 | 130 | a real `getcpu` system call |
//! | [`current_node`] | 1.2 | 2.2 | `current_cpu` plus the global map |
//!
//! So the default is rseq where it exists: the cheapest method, and exact.
//! Without it, the cache (about 2 ns, bounded staleness) beats every exact
//! method: `RDPID` (about 3 ns here; it does not trap, unlike `RDTSCP`) and
//! the vDSO (about 6 ns). A caller that needs an exact answer without rseq
//! uses [`current_cpu_uncached`].

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod current;
#[cfg(feature = "hwloc")]
mod hwloc;
pub mod probe;
mod spec;
mod sysfs;

/// The Linux cpulist parser (`0-3,8`) behind [`Topology::from_sysfs`] and
/// the override grammar; public for the workspace's fuzz targets.
#[doc(hidden)]
pub use spec::parse_cpulist;

#[cfg(all(test, not(loom)))]
pub(crate) mod tests;

pub use current::{
    CPU_REFRESH_INTERVAL, current_cpu, current_cpu_uncached, current_node, refresh_current_cpu,
};

/// The environment variable that overrides the detected topology (see the
/// [module docs](self) for its grammar).
pub const ENV_VAR: &str = "RWLOCK_TOPOLOGY";

/// The largest number of CPUs a topology may have; every CPU number is below it.
pub const MAX_CPUS: usize = 65536;

/// The largest number of nodes a topology may have.
pub const MAX_NODES: usize = 65536;

/// Where a [`Topology`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TopologySource {
    /// The [`ENV_VAR`] override.
    Env,
    /// The hwloc library (crate feature `hwloc`).
    Hwloc,
    /// Linux sysfs.
    Sysfs,
    /// Nothing could be detected: one node of
    /// [`std::thread::available_parallelism`] CPUs.
    Fallback,
    /// Built by the program: [`Topology::parse`], [`Topology::synthetic`],
    /// [`Topology::each_cpu`], [`Topology::single_node`] or
    /// [`Topology::from_nodes`].
    Custom,
}

/// The NUMA layout: how many nodes, and which node each CPU belongs to.
///
/// See the [module docs](self) for the numbering rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Node of each CPU number below `cpu_count()` (borrowed only in
    /// [`ONE_CPU`], which a `static` holds).
    node_of: Cow<'static, [u32]>,
    /// CPUs of each node, ascending.
    cpus: Cow<'static, [Cow<'static, [usize]>]>,
    source: TopologySource,
}

/// What [`Topology::global`] answers to a call that comes back from inside
/// its own first call on the same thread: one node, one CPU, built without
/// allocating.
static ONE_CPU: Topology = Topology {
    node_of: Cow::Borrowed(&[0]),
    cpus: Cow::Borrowed(&[Cow::Borrowed(&[0])]),
    source: TopologySource::Fallback,
};

std::thread_local! {
    /// This thread is inside `Topology::global`'s first call. `const`,
    /// without a destructor: readable from anywhere.
    static DETECTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static GLOBAL: OnceLock<Topology> = OnceLock::new();

impl Topology {
    /// The process-wide topology, computed on first use (see the
    /// [module docs](self) for the order of sources) and fixed afterwards.
    ///
    /// Never panics: a malformed [`ENV_VAR`] is reported once on stderr and
    /// ignored.
    ///
    /// The first call reads the environment and sysfs (or loads hwloc, which
    /// takes milliseconds); a program that minds that cost inside its first
    /// critical section calls `global()` at start-up. Detection allocates:
    /// when the first call comes from inside a global allocator that uses
    /// these locks (or a C program's `malloc` that takes a
    /// `pthread_rwlock_t` under the LD_PRELOAD shim), the allocator's own
    /// calls back into `global()` on that thread, while it detects, get a
    /// topology of one node and one CPU (so a lock built then is sized for
    /// one; its later nodes and CPUs reduce modulo that) rather than wait
    /// for the detection they interrupted, forever (found in review,
    /// 2026-11-27).
    #[inline]
    pub fn global() -> &'static Topology {
        match GLOBAL.get() {
            Some(t) => t,
            None => Self::global_first(),
        }
    }

    #[cold]
    fn global_first() -> &'static Topology {
        if DETECTING.with(std::cell::Cell::get) {
            return &ONE_CPU;
        }
        DETECTING.with(|d| d.set(true));
        // Not a cancellation point: detection reads files (sysfs, hwloc)
        // inside a lock call, which must not be one.
        let t =
            crate::wait::without_cancellation(|| GLOBAL.get_or_init(Self::init_from_environment));
        DETECTING.with(|d| d.set(false));
        t
    }

    #[cold]
    fn init_from_environment() -> Topology {
        match Self::from_env() {
            Some(Ok(t)) => t,
            Some(Err(e)) => {
                // `eprintln!` panics when stderr is closed; a lock must not.
                use std::io::Write;
                let _ = writeln!(
                    io::stderr(),
                    "rwlock-core: {e}; detecting the topology instead"
                );
                Self::detect()
            }
            None => Self::detect(),
        }
    }

    /// Installs `topology` as the process-wide topology.
    ///
    /// # Errors
    ///
    /// [`TopologyError::AlreadyInitialized`] if [`Topology::global`] was
    /// already used (directly, or through a lock or [`current_node`]) or
    /// `init_global` already succeeded; the global topology is then unchanged.
    pub fn init_global(topology: Topology) -> Result<&'static Topology, TopologyError> {
        let mut offered = Some(topology);
        let installed = GLOBAL.get_or_init(|| offered.take().expect("initialised once"));
        if offered.is_none() {
            Ok(installed)
        } else {
            Err(TopologyError::AlreadyInitialized)
        }
    }

    /// The topology that [`ENV_VAR`] asks for, if it is set; its source is
    /// [`TopologySource::Env`].
    ///
    /// Returns `None` when the variable is not set, and an error naming the
    /// variable and its value when the value is not valid Unicode or not valid
    /// [grammar](self#the-override-grammar-rwlock_topology-topologyparse)
    /// (an empty value is an error too). Use it to fail hard where
    /// [`Topology::global`] would only warn:
    ///
    /// ```no_run
    /// use rwlock_core::topology::Topology;
    /// if let Some(t) = Topology::from_env() {
    ///     Topology::init_global(t.expect("bad RWLOCK_TOPOLOGY")).unwrap();
    /// }
    /// ```
    pub fn from_env() -> Option<Result<Topology, TopologyError>> {
        Some(Self::from_env_value(std::env::var_os(ENV_VAR)?))
    }

    /// [`Topology::from_env`] for a given value of [`ENV_VAR`].
    fn from_env_value(raw: std::ffi::OsString) -> Result<Topology, TopologyError> {
        let env_error = |error| TopologyError::Env {
            var: ENV_VAR,
            value: raw.to_string_lossy().into_owned(),
            error: Box::new(error),
        };
        match raw.to_str() {
            Some(value) => Self::parse(value)
                .map(|t| t.with_source(TopologySource::Env))
                .map_err(env_error),
            None => Err(env_error(TopologyError::Syntax {
                token: raw.to_string_lossy().into_owned(),
                reason: "not valid UTF-8",
            })),
        }
    }

    /// Detects the machine's topology, ignoring [`ENV_VAR`]: hwloc (with the
    /// feature `hwloc`), else sysfs, else one node of
    /// [`std::thread::available_parallelism`] CPUs. Never fails.
    pub fn detect() -> Topology {
        #[cfg(feature = "hwloc")]
        if let Ok(t) = Self::from_hwloc() {
            return t;
        }
        if let Ok(t) = Self::from_sysfs(Path::new("/sys/devices/system")) {
            return t;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_CPUS));
        Self::single_node(cpus).with_source(TopologySource::Fallback)
    }

    /// Reads the topology from a Linux sysfs tree; `root` stands for
    /// `/sys/devices/system`.
    ///
    /// Nodes are the `node/node<N>/cpulist` files (a node with an empty list
    /// is memory-only); `cpu/possible`, if present, extends `cpu_count()` to
    /// every possible CPU. Without a `node` directory (a kernel without NUMA)
    /// all CPUs of `cpu/possible` form node 0.
    ///
    /// # Errors
    ///
    /// A file that cannot be read ([`TopologyError::Io`]), a malformed file
    /// ([`TopologyError::File`]), or a tree that lists no CPU at all.
    pub fn from_sysfs(root: &Path) -> Result<Topology, TopologyError> {
        sysfs::read(root)
    }

    /// Asks the system's hwloc library (crate feature `hwloc`).
    ///
    /// Each PU's node is the lowest-numbered node of its `nodeset` (hwloc
    /// 2.x also counts memory-only nodes attached above the PU as local; the
    /// kernel numbers the node of the CPUs first). The node count comes from
    /// the root object's complete nodeset, so memory-only nodes are counted.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Hwloc`] when hwloc cannot load the topology or
    /// reports something inconsistent.
    #[cfg(feature = "hwloc")]
    pub fn from_hwloc() -> Result<Topology, TopologyError> {
        hwloc::read()
    }

    /// Parses the override [grammar](self#the-override-grammar-rwlock_topology-topologyparse).
    /// The result's source is [`TopologySource::Custom`]. `each-cpu` and
    /// `nodes=N` (without `cpus=`) run [`Topology::detect`] to learn the
    /// machine's CPU count.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Syntax`], [`TopologyError::TooLarge`],
    /// [`TopologyError::Overlap`] or [`TopologyError::Empty`], naming the
    /// offending token.
    pub fn parse(spec: &str) -> Result<Topology, TopologyError> {
        spec::parse(spec, || Self::detect().cpu_count())
    }

    /// `cpus` CPUs dealt round-robin into `nodes` nodes: CPU `c` is in node
    /// `c % nodes`. With more nodes than CPUs the extra nodes are memory-only.
    ///
    /// # Panics
    ///
    /// "synthetic topology needs at least one CPU and one node" when `cpus`
    /// or `nodes` is 0; "synthetic topology too large" when `cpus` exceeds
    /// [`MAX_CPUS`] or `nodes` exceeds [`MAX_NODES`].
    pub fn synthetic(nodes: usize, cpus: usize) -> Topology {
        assert!(
            nodes > 0 && cpus > 0,
            "synthetic topology needs at least one CPU and one node (got {nodes} nodes, {cpus} CPUs)"
        );
        assert!(
            nodes <= MAX_NODES && cpus <= MAX_CPUS,
            "synthetic topology too large ({nodes} nodes, {cpus} CPUs; limits {MAX_NODES} and {MAX_CPUS})"
        );
        let mut lists = vec![Vec::with_capacity(cpus.div_ceil(nodes)); nodes];
        for cpu in 0..cpus {
            lists[cpu % nodes].push(cpu);
        }
        Self::build(lists, 0, TopologySource::Custom).expect("a valid synthetic topology")
    }

    /// `cpus` CPUs, each a node of its own (`node_of(c) == c`).
    ///
    /// # Panics
    ///
    /// As [`Topology::synthetic`]`(cpus, cpus)`.
    pub fn each_cpu(cpus: usize) -> Topology {
        Self::synthetic(cpus, cpus)
    }

    /// `cpus` CPUs, all in node 0.
    ///
    /// # Panics
    ///
    /// As [`Topology::synthetic`]`(1, cpus)`.
    pub fn single_node(cpus: usize) -> Topology {
        Self::synthetic(1, cpus)
    }

    /// Node `i` holds the CPUs `nodes[i]` (in any order). An empty list is a
    /// memory-only node.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Empty`] when there are no nodes or no CPUs,
    /// [`TopologyError::TooLarge`] for more than [`MAX_NODES`] nodes or a
    /// CPU number not below [`MAX_CPUS`], [`TopologyError::Overlap`] for a
    /// CPU listed twice.
    pub fn from_nodes(nodes: &[Vec<usize>]) -> Result<Topology, TopologyError> {
        Self::build(nodes.to_vec(), 0, TopologySource::Custom)
    }

    /// Builds a topology from per-node CPU lists; `min_cpu_count` extends the
    /// CPU map beyond the highest listed CPU (sysfs' possible CPUs).
    fn build(
        mut nodes: Vec<Vec<usize>>,
        min_cpu_count: usize,
        source: TopologySource,
    ) -> Result<Topology, TopologyError> {
        const UNASSIGNED: u32 = u32::MAX;
        if nodes.is_empty() {
            return Err(TopologyError::Empty { what: "no nodes" });
        }
        if nodes.len() > MAX_NODES {
            return Err(TopologyError::TooLarge {
                token: format!("{} nodes", nodes.len()),
                limit: MAX_NODES,
            });
        }
        let mut cpu_count = min_cpu_count;
        for &cpu in nodes.iter().flatten() {
            if cpu >= MAX_CPUS {
                return Err(TopologyError::TooLarge {
                    token: format!("CPU {cpu}"),
                    limit: MAX_CPUS - 1,
                });
            }
            cpu_count = cpu_count.max(cpu + 1);
        }
        let Some(first_node_with_cpus) = nodes.iter().position(|cpus| !cpus.is_empty()) else {
            return Err(TopologyError::Empty {
                what: "no CPUs in any node",
            });
        };
        if cpu_count > MAX_CPUS {
            return Err(TopologyError::TooLarge {
                token: format!("{cpu_count} CPUs"),
                limit: MAX_CPUS,
            });
        }
        let mut node_of = vec![UNASSIGNED; cpu_count];
        for (node, cpus) in nodes.iter_mut().enumerate() {
            cpus.sort_unstable();
            for &cpu in cpus.iter() {
                let slot = &mut node_of[cpu];
                if *slot != UNASSIGNED {
                    return Err(TopologyError::Overlap {
                        cpu,
                        first: *slot as usize,
                        second: node,
                    });
                }
                // `node < MAX_NODES <= u32::MAX`, checked above.
                *slot = node as u32;
            }
        }
        for slot in &mut node_of {
            if *slot == UNASSIGNED {
                *slot = first_node_with_cpus as u32;
            }
        }
        Ok(Topology {
            node_of: Cow::Owned(node_of),
            cpus: nodes.into_iter().map(Cow::Owned).collect(),
            source,
        })
    }

    fn with_source(mut self, source: TopologySource) -> Topology {
        self.source = source;
        self
    }

    /// The size of a per-CPU array: the highest CPU number plus one (every
    /// possible CPU, for a detected topology). At least 1.
    #[inline]
    pub fn cpu_count(&self) -> usize {
        self.node_of.len()
    }

    /// The size of a per-node array: the number of nodes, memory-only ones
    /// included. At least 1.
    #[inline]
    pub fn node_count(&self) -> usize {
        self.cpus.len()
    }

    /// The node of CPU number `cpu`, always below `node_count()`.
    ///
    /// A `cpu` at or beyond `cpu_count()` (a real CPU of a machine larger
    /// than a synthetic topology) is first reduced to `cpu % cpu_count()`.
    /// A CPU that no node lists belongs to the lowest-numbered node that has
    /// CPUs.
    #[inline]
    pub fn node_of(&self, cpu: usize) -> usize {
        let map = &self.node_of;
        let index = if cpu < map.len() {
            cpu
        } else {
            cpu % map.len()
        };
        map[index] as usize
    }

    /// The CPUs of `node`, ascending; empty for a memory-only node.
    ///
    /// # Panics
    ///
    /// If `node >= node_count()`.
    #[inline]
    pub fn cpus_of(&self, node: usize) -> &[usize] {
        match self.cpus.get(node) {
            Some(cpus) => cpus,
            None => panic!(
                "node {node} out of range: the topology has {} nodes",
                self.cpus.len()
            ),
        }
    }

    /// The CPU lists of all nodes, in node order (see [`Topology::cpus_of`]).
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = &[usize]> + '_ {
        self.cpus.iter().map(|cpus| &**cpus)
    }

    /// Where this topology came from.
    #[inline]
    pub fn source(&self) -> TopologySource {
        self.source
    }

    /// Whether `self` and `other` describe the same layout (same CPU map and
    /// nodes), whatever their sources. `==` compares the sources too.
    pub fn same_layout(&self, other: &Topology) -> bool {
        self.node_of == other.node_of && self.cpus == other.cpus
    }
}

/// One line: the nodes with their cpulists, the CPU count and the source,
/// e.g. `2 nodes [0-1,8; 4-5] over 9 CPUs (Sysfs)`.
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} node", self.node_count())?;
        if self.node_count() != 1 {
            f.write_str("s")?;
        }
        f.write_str(" [")?;
        for (node, cpus) in self.nodes().enumerate() {
            if node > 0 {
                f.write_str("; ")?;
            }
            spec::write_cpulist(f, cpus)?;
        }
        let plural = if self.cpu_count() == 1 { "" } else { "s" };
        write!(
            f,
            "] over {} CPU{plural} ({:?})",
            self.cpu_count(),
            self.source
        )
    }
}

/// Why a topology could not be parsed, read or installed.
///
/// Each message is complete on its own (it includes the message of any
/// nested error), so [`std::error::Error::source`] is always `None`.
#[derive(Debug)]
#[non_exhaustive]
pub enum TopologyError {
    /// A token of a spec or cpulist is malformed.
    Syntax {
        /// The offending token.
        token: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A number is above its limit.
    TooLarge {
        /// The offending token.
        token: String,
        /// The largest value allowed.
        limit: usize,
    },
    /// A CPU is listed twice.
    Overlap {
        /// The CPU.
        cpu: usize,
        /// The node that listed it first.
        first: usize,
        /// The node that listed it again (may equal `first`).
        second: usize,
    },
    /// Nothing to build a topology from.
    Empty {
        /// What is missing.
        what: &'static str,
    },
    /// The value of an environment variable is invalid.
    Env {
        /// The variable ([`ENV_VAR`]).
        var: &'static str,
        /// Its value (lossily converted when not Unicode).
        value: String,
        /// What is wrong with it.
        error: Box<TopologyError>,
    },
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: io::Error,
    },
    /// A file's contents are invalid.
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: Box<TopologyError>,
    },
    /// hwloc failed or reported an inconsistent topology.
    Hwloc {
        /// What went wrong.
        reason: String,
    },
    /// [`Topology::init_global`] was called after the global topology was set.
    AlreadyInitialized,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Syntax { token, reason } => {
                write!(f, "invalid token `{token}`: {reason}")
            }
            TopologyError::TooLarge { token, limit } => {
                write!(f, "`{token}` is too large (the limit is {limit})")
            }
            TopologyError::Overlap { cpu, first, second } if first == second => {
                write!(f, "CPU {cpu} is listed twice in node {first}")
            }
            TopologyError::Overlap { cpu, first, second } => {
                write!(
                    f,
                    "CPU {cpu} is listed in node {first} and again in node {second}"
                )
            }
            TopologyError::Empty { what } => f.write_str(what),
            TopologyError::Env { var, value, error } => {
                write!(f, "invalid {var}={value:?}: {error}")
            }
            TopologyError::Io { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
            TopologyError::File { path, error } => write!(f, "{}: {error}", path.display()),
            TopologyError::Hwloc { reason } => write!(f, "hwloc: {reason}"),
            TopologyError::AlreadyInitialized => {
                f.write_str("the global topology is already initialised")
            }
        }
    }
}

impl std::error::Error for TopologyError {}
