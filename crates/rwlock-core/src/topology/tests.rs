use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Parses with a fixed machine CPU count.
fn parse_on(spec: &str, machine_cpus: usize) -> Result<Topology, TopologyError> {
    spec::parse(spec, || machine_cpus)
}

fn nodes_of(t: &Topology) -> Vec<Vec<usize>> {
    t.nodes().map(<[usize]>::to_vec).collect()
}

/// Asserts that `spec` fails, with a message containing every one of `parts`.
#[track_caller]
fn parse_err(spec: &str, parts: &[&str]) -> TopologyError {
    let err = match parse_on(spec, 4) {
        Ok(t) => panic!("{spec:?} parsed as {t}"),
        Err(err) => err,
    };
    let message = err.to_string();
    for part in parts {
        assert!(
            message.contains(part),
            "{spec:?}: message {message:?} lacks {part:?}"
        );
    }
    err
}

// ---------------------------------------------------------------- grammar

#[test]
fn parse_cpulists() {
    let t = parse_on("0-3;4-7", 2).unwrap();
    assert_eq!(t.node_count(), 2);
    assert_eq!(t.cpu_count(), 8);
    assert_eq!(nodes_of(&t), [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(t.node_of(3), 0);
    assert_eq!(t.node_of(4), 1);
    assert_eq!(t.source(), TopologySource::Custom);

    let t = parse_on("0-3,8,10-11", 2).unwrap();
    assert_eq!(nodes_of(&t), [vec![0, 1, 2, 3, 8, 10, 11]]);
    assert_eq!(t.cpu_count(), 12);
    // CPUs 4-7 and 9 are listed nowhere: the lowest node with CPUs.
    assert_eq!(t.node_of(9), 0);

    // Whitespace anywhere around tokens; any order inside a node.
    let t = parse_on(" \t5 , 0 - 1 ;\n 3-4 , 2 \n", 2).unwrap();
    assert_eq!(nodes_of(&t), [vec![0, 1, 5], vec![2, 3, 4]]);

    // The largest CPU number.
    let t = parse_on("65535", 2).unwrap();
    assert_eq!(t.cpu_count(), MAX_CPUS);
    assert_eq!(t.node_of(65535), 0);
}

#[test]
fn parse_keys() {
    let t = parse_on("nodes=4,cpus=6", 2).unwrap();
    assert_eq!(nodes_of(&t), [vec![0, 4], vec![1, 5], vec![2], vec![3]]);
    assert_eq!(t, Topology::synthetic(4, 6));
    assert_eq!(parse_on(" cpus = 6 , nodes = 4 ", 2).unwrap(), t);

    // `nodes=N` deals the machine's CPUs; more nodes than CPUs leaves
    // memory-only nodes.
    let t = parse_on("nodes=3", 2).unwrap();
    assert_eq!(nodes_of(&t), [vec![0], vec![1], vec![]]);
    assert_eq!(t.cpu_count(), 2);
    assert_eq!(parse_on("nodes=2", 8).unwrap(), Topology::synthetic(2, 8));

    // The limits themselves are allowed.
    assert_eq!(
        parse_on("nodes=1,cpus=65536", 2).unwrap().cpu_count(),
        MAX_CPUS
    );
    assert_eq!(
        parse_on("nodes=65536,cpus=1", 2).unwrap().node_count(),
        MAX_NODES
    );
}

#[test]
fn parse_each_cpu() {
    let t = parse_on("each-cpu", 3).unwrap();
    assert_eq!(nodes_of(&t), [vec![0], vec![1], vec![2]]);
    assert_eq!(parse_on("  each-cpu\n", 3).unwrap(), t);
    assert_eq!(t, Topology::each_cpu(3));
}

#[test]
fn parse_uses_the_machine() {
    let machine = Topology::detect();
    assert_eq!(
        Topology::parse("each-cpu").unwrap().node_count(),
        machine.cpu_count()
    );
    let t = Topology::parse("nodes=2").unwrap();
    assert_eq!(t.cpu_count(), machine.cpu_count());
    assert_eq!(t.node_count(), 2);
    // Fully synthetic specs never look at the machine.
    let t = spec::parse("nodes=2,cpus=4", || panic!("asked the machine")).unwrap();
    assert_eq!(t.cpu_count(), 4);
    spec::parse("0-3", || panic!("asked the machine")).unwrap();
}

#[test]
fn parse_errors_empty() {
    assert!(matches!(
        parse_err("", &["empty topology spec"]),
        TopologyError::Empty { .. }
    ));
    parse_err(" \n\t", &["empty topology spec"]);
    for spec in ["0-1;;2-3", "0-1;", ";0-1", "0-1; ;2"] {
        let err = parse_err(spec, &["has no CPUs"]);
        assert!(matches!(err, TopologyError::Syntax { .. }), "{spec}");
    }
    parse_err("0-3,,4", &["`0-3,,4`", "a `,` too many"]);
    parse_err("0-3,", &["`0-3,`", "a `,` too many"]);
    parse_err("nodes=2,", &["`nodes=2,`", "a `,` too many"]);
}

#[test]
fn parse_errors_overlap() {
    let err = parse_err("0-3;2-5", &["CPU 2", "node 0", "node 1"]);
    assert!(matches!(
        err,
        TopologyError::Overlap {
            cpu: 2,
            first: 0,
            second: 1
        }
    ));
    assert_eq!(
        err.to_string(),
        "CPU 2 is listed in node 0 and again in node 1"
    );
    let err = parse_err("0-3,2", &["CPU 2 is listed twice in node 0"]);
    assert!(matches!(
        err,
        TopologyError::Overlap {
            cpu: 2,
            first: 0,
            second: 0
        }
    ));
    parse_err("1;0;1", &["CPU 1 is listed in node 0 and again in node 2"]);
}

/// A short spec of repeated ranges asked for gigabytes before the overlap
/// was found (16 383 copies of `0-65535`, 128 KiB, expanded to 2^30 CPU
/// numbers): now refused as soon as the count passes `MAX_CPUS`.
#[test]
fn parse_refuses_more_cpus_than_exist_before_expanding_them() {
    // In one list, and over 1 000 nodes.
    for spec in [
        vec!["0-65535"; 16_383].join(","),
        vec!["0-65535"; 1_000].join(";"),
    ] {
        let err = Topology::parse(&spec).unwrap_err();
        assert!(
            matches!(
                err,
                TopologyError::TooLarge {
                    limit: MAX_CPUS,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("some twice"), "{err}");
    }
    // Exactly `MAX_CPUS` is still fine.
    assert_eq!(Topology::parse("0-65535").unwrap().cpu_count(), MAX_CPUS);
    assert!(matches!(
        Topology::parse("0-32767;32768-65535;0"),
        Err(TopologyError::TooLarge { .. })
    ));
}

#[test]
fn parse_errors_garbage() {
    let err = parse_err("0-3;x", &["`x`", "CPU number"]);
    assert!(matches!(err, TopologyError::Syntax { ref token, .. } if token == "x"));
    parse_err("3-0", &["`3-0`", "reversed range"]);
    parse_err("1-2-3", &["`1-2-3`"]);
    parse_err("-1", &["`-1`"]);
    parse_err("1-", &["`1-`"]);
    parse_err("+1", &["`+1`"]);
    parse_err("0x3", &["`0x3`"]);
    parse_err("1.5", &["`1.5`"]);
    parse_err("0-3:2/4", &["`0-3:2/4`"]);
    parse_err("!!", &["`!!`"]);
    parse_err("0 1", &["`0 1`"]);
    for spec in [
        "garbage",
        "each_cpu",
        "EACH-CPU",
        "nodes",
        "each-cpu,nodes=2",
    ] {
        parse_err(spec, &["expected `each-cpu`", "`nodes=N`"]);
    }
}

#[test]
fn parse_errors_keys() {
    parse_err("nodes=0", &["`nodes=0`", "at least 1"]);
    parse_err("nodes=2,cpus=0", &["`cpus=0`", "at least 1"]);
    parse_err("nodes=", &["`nodes=`", "expected a number"]);
    parse_err("nodes=abc", &["`nodes=abc`", "expected a number"]);
    parse_err("nodes=-1", &["`nodes=-1`"]);
    parse_err("nodes=2,nodes=3", &["`nodes=3`", "twice"]);
    parse_err("nodes=2,foo=3", &["`foo`", "unknown key"]);
    parse_err("cpus=4", &["`cpus=4`", "missing `nodes=N`"]);
}

#[test]
fn parse_errors_too_large() {
    let err = parse_err("65536", &["`65536`", "65535"]);
    assert!(matches!(err, TopologyError::TooLarge { limit: 65535, .. }));
    parse_err("0-99999999999999999999999", &["`99999999999999999999999`"]);
    parse_err("nodes=65537", &["`65537`", "65536"]);
    parse_err("nodes=1,cpus=65537", &["`65537`", "65536"]);
    parse_err(
        "nodes=100000000000000000000000000",
        &["`100000000000000000000000000`"],
    );
}

// ------------------------------------------------------------ constructors

#[test]
fn synthetic_layouts() {
    let t = Topology::synthetic(3, 7);
    assert_eq!(nodes_of(&t), [vec![0, 3, 6], vec![1, 4], vec![2, 5]]);
    assert_eq!((t.node_count(), t.cpu_count()), (3, 7));
    for cpu in 0..7 {
        assert_eq!(t.node_of(cpu), cpu % 3);
    }

    let t = Topology::synthetic(4, 2);
    assert_eq!(nodes_of(&t), [vec![0], vec![1], vec![], vec![]]);

    let t = Topology::each_cpu(3);
    assert_eq!(nodes_of(&t), [vec![0], vec![1], vec![2]]);
    assert_eq!(t.node_of(2), 2);

    let t = Topology::single_node(5);
    assert_eq!(nodes_of(&t), [vec![0, 1, 2, 3, 4]]);
    assert_eq!(t.source(), TopologySource::Custom);
}

#[test]
#[should_panic(expected = "synthetic topology needs at least one CPU and one node")]
fn synthetic_without_cpus_panics() {
    Topology::synthetic(2, 0);
}

#[test]
#[should_panic(expected = "synthetic topology needs at least one CPU and one node")]
fn synthetic_without_nodes_panics() {
    Topology::synthetic(0, 2);
}

#[test]
#[should_panic(expected = "synthetic topology needs at least one CPU and one node")]
fn each_cpu_of_nothing_panics() {
    Topology::each_cpu(0);
}

#[test]
#[should_panic(expected = "synthetic topology too large")]
fn synthetic_too_large_panics() {
    Topology::single_node(MAX_CPUS + 1);
}

#[test]
fn from_nodes_layouts_and_errors() {
    // Memory-only first node: unlisted CPUs go to the first node with CPUs.
    let t = Topology::from_nodes(&[vec![], vec![1, 0], vec![3]]).unwrap();
    assert_eq!(nodes_of(&t), [vec![], vec![0, 1], vec![3]]);
    assert_eq!(t.cpu_count(), 4);
    assert_eq!(t.node_of(2), 1);
    assert_eq!(t.node_of(3), 2);

    assert!(matches!(
        Topology::from_nodes(&[]),
        Err(TopologyError::Empty { .. })
    ));
    assert!(matches!(
        Topology::from_nodes(&[vec![], vec![]]),
        Err(TopologyError::Empty { .. })
    ));
    assert!(matches!(
        Topology::from_nodes(&[vec![0], vec![MAX_CPUS]]),
        Err(TopologyError::TooLarge { .. })
    ));
    assert!(matches!(
        Topology::from_nodes(&[vec![0, 1], vec![1]]),
        Err(TopologyError::Overlap {
            cpu: 1,
            first: 0,
            second: 1
        })
    ));
    assert!(matches!(
        Topology::from_nodes(&vec![vec![0]; MAX_NODES + 1]),
        Err(TopologyError::TooLarge { .. })
    ));
}

#[test]
fn node_of_out_of_range_wraps() {
    let t = Topology::synthetic(2, 4);
    assert_eq!(t.node_of(4), t.node_of(0));
    assert_eq!(t.node_of(5), 1);
    assert_eq!(t.node_of(4 * 1000 + 3), 1);
    assert_eq!(t.node_of(usize::MAX), t.node_of(usize::MAX % 4));
    let t = Topology::single_node(1);
    assert_eq!(t.node_of(12345), 0);
}

#[test]
#[should_panic(expected = "node 2 out of range: the topology has 2 nodes")]
fn cpus_of_out_of_range_panics() {
    Topology::synthetic(2, 4).cpus_of(2);
}

#[test]
fn display_and_equality() {
    let t = Topology::from_nodes(&[vec![0, 1, 2, 8], vec![], vec![4, 6]]).unwrap();
    assert_eq!(
        t.to_string(),
        "3 nodes [0-2,8; -; 4,6] over 9 CPUs (Custom)"
    );
    assert_eq!(
        Topology::single_node(1).to_string(),
        "1 node [0] over 1 CPU (Custom)"
    );
    let env = Topology::from_env_value("nodes=2,cpus=4".into()).unwrap();
    let custom = Topology::synthetic(2, 4);
    assert_ne!(env, custom);
    assert!(env.same_layout(&custom));
    assert!(!custom.same_layout(&Topology::synthetic(2, 5)));
}

#[test]
fn errors_display_and_are_errors() {
    let io = TopologyError::Io {
        path: "/x/cpulist".into(),
        error: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
    };
    assert_eq!(io.to_string(), "cannot read /x/cpulist: gone");
    let file = TopologyError::File {
        path: "/x/cpulist".into(),
        error: Box::new(TopologyError::Empty { what: "nothing" }),
    };
    assert_eq!(file.to_string(), "/x/cpulist: nothing");
    let hwloc = TopologyError::Hwloc {
        reason: "broken".into(),
    };
    assert_eq!(hwloc.to_string(), "hwloc: broken");
    let boxed: Box<dyn std::error::Error + Send + Sync> =
        Box::new(TopologyError::AlreadyInitialized);
    assert_eq!(
        boxed.to_string(),
        "the global topology is already initialised"
    );
    assert!(boxed.source().is_none());
}

// ------------------------------------------------------------- environment

#[test]
fn env_values() {
    let t = Topology::from_env_value("0-1;2-3".into()).unwrap();
    assert_eq!(t.source(), TopologySource::Env);
    assert_eq!(t.node_count(), 2);

    let err = Topology::from_env_value(" 0-1;x ".into()).unwrap_err();
    assert!(matches!(
        err,
        TopologyError::Env { var: ENV_VAR, ref value, .. } if value == " 0-1;x "
    ));
    assert_eq!(
        err.to_string(),
        "invalid RWLOCK_TOPOLOGY=\" 0-1;x \": invalid token `x`: \
         expected a CPU number or a range `A-B`"
    );
    let err = Topology::from_env_value("".into()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid RWLOCK_TOPOLOGY=\"\": empty topology spec"
    );
}

#[cfg(unix)]
#[test]
fn env_value_not_unicode() {
    use std::os::unix::ffi::OsStringExt;
    let err = Topology::from_env_value(OsString::from_vec(vec![b'0', 0xff])).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("RWLOCK_TOPOLOGY"), "{message}");
    assert!(message.contains("not valid UTF-8"), "{message}");
}

/// Set in the environment of the child processes of [`run_child`]: a test
/// that finds it plays the child's part instead of the parent's.
const CHILD_MARKER: &str = "RWLOCK_CORE_TOPOLOGY_TEST_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD_MARKER).is_some()
}

/// Runs test `name` of this module again in a child process (where it plays
/// the child's part) with `RWLOCK_TOPOLOGY` set to `value` (or unset), and
/// returns its stdout and stderr.
fn run_child(name: &str, value: Option<&str>) -> (String, String) {
    let module = module_path!();
    let test = format!(
        "{}::{name}",
        module.split_once("::").map_or(module, |m| m.1)
    );
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", &test, "--nocapture", "--test-threads=1"]);
    command.env(CHILD_MARKER, "1");
    match value {
        Some(value) => command.env(ENV_VAR, value),
        None => command.env_remove(ENV_VAR),
    };
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "child {test} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "child {test} did not run:\n{stdout}"
    );
    (stdout, stderr)
}

/// The child's part of `global_reads_the_environment`.
fn child_prints_global() {
    let first = Topology::global();
    let second = Topology::global();
    assert!(std::ptr::eq(first, second));
    assert!(current_node() < first.node_count());
    println!("global topology: {first}");
}

/// The child's part of `init_global_installs_once`.
fn child_init_global() {
    let wanted = Topology::synthetic(3, 5);
    let installed = Topology::init_global(wanted.clone()).unwrap();
    assert_eq!(installed, &wanted);
    assert!(std::ptr::eq(installed, Topology::global()));
    assert!(matches!(
        Topology::init_global(Topology::single_node(1)),
        Err(TopologyError::AlreadyInitialized)
    ));
    assert_eq!(Topology::global(), &wanted);
    assert!(current_node() < 3);
}

#[test]
fn global_reads_the_environment() {
    if in_child() {
        return child_prints_global();
    }
    let (stdout, stderr) = run_child("global_reads_the_environment", Some(" nodes=3 , cpus=5 "));
    assert!(
        stdout.contains("global topology: 3 nodes [0,3; 1,4; 2] over 5 CPUs (Env)"),
        "{stdout}"
    );
    assert!(!stderr.contains(ENV_VAR), "{stderr}");

    // A malformed value: one line on stderr, then detection.
    let (stdout, stderr) = run_child("global_reads_the_environment", Some("0-1;x"));
    assert_eq!(stderr.matches(ENV_VAR).count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "rwlock-core: invalid RWLOCK_TOPOLOGY=\"0-1;x\": invalid token `x`: \
             expected a CPU number or a range `A-B`; detecting the topology instead"
        ),
        "{stderr}"
    );
    let detected = Topology::detect();
    assert!(
        stdout.contains(&format!("global topology: {detected}")),
        "{stdout}"
    );

    let (stdout, stderr) = run_child("global_reads_the_environment", None);
    assert!(
        stdout.contains(&format!("global topology: {detected}")),
        "{stdout}"
    );
    assert!(!stderr.contains(ENV_VAR), "{stderr}");
}

#[test]
fn init_global_installs_once() {
    if in_child() {
        return child_init_global();
    }
    run_child(
        "init_global_installs_once",
        Some("garbage that init_global overrides"),
    );
    // In this process, whatever set it first, it is set now.
    let global = Topology::global();
    assert!(matches!(
        Topology::init_global(Topology::single_node(1)),
        Err(TopologyError::AlreadyInitialized)
    ));
    assert!(std::ptr::eq(global, Topology::global()));
}

// ----------------------------------------------------------------- sysfs

/// A directory under the system's temporary directory, removed on drop.
struct TempTree(PathBuf);

impl TempTree {
    fn new() -> TempTree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "rwlock-core-topology-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempTree(path)
    }

    fn file(&self, relative: &str, contents: &str) -> &Self {
        let path = self.0.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
        self
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn sysfs_two_nodes_gap_and_memory_only_node() {
    let tree = TempTree::new();
    tree.file("node/node0/cpulist", "0-1\n")
        .file("node/node1/cpulist", "4-5\n")
        .file("node/node2/cpulist", "\n")
        .file("node/online", "0-2\n")
        .file("node/has_cpu", "0-1\n")
        .file("node/nodefoo/cpulist", "garbage\n")
        .file("cpu/possible", "0-7\n")
        .file("cpu/online", "0-1,4-5\n");
    let t = Topology::from_sysfs(tree.path()).unwrap();
    assert_eq!(t.source(), TopologySource::Sysfs);
    assert_eq!(t.node_count(), 3);
    assert_eq!(t.cpu_count(), 8);
    assert_eq!(nodes_of(&t), [vec![0, 1], vec![4, 5], vec![]]);
    let map: Vec<usize> = (0..8).map(|cpu| t.node_of(cpu)).collect();
    assert_eq!(map, [0, 0, 0, 0, 1, 1, 0, 0]);
    assert_eq!(t.node_of(12), 1);
    assert_eq!(t.to_string(), "3 nodes [0-1; 4-5; -] over 8 CPUs (Sysfs)");
}

#[test]
fn sysfs_node_numbering_gap() {
    let tree = TempTree::new();
    tree.file("node/node0/cpulist", "0,2\n")
        .file("node/node3/cpulist", "1,3\n");
    let t = Topology::from_sysfs(tree.path()).unwrap();
    assert_eq!(nodes_of(&t), [vec![0, 2], vec![], vec![], vec![1, 3]]);
    // Without cpu/possible the CPU count comes from the lists.
    assert_eq!(t.cpu_count(), 4);
    assert_eq!(t.node_of(3), 3);
}

#[test]
fn sysfs_without_numa() {
    let tree = TempTree::new();
    tree.file("cpu/possible", "0-3\n");
    let t = Topology::from_sysfs(tree.path()).unwrap();
    assert_eq!(nodes_of(&t), [vec![0, 1, 2, 3]]);
    assert_eq!(t.source(), TopologySource::Sysfs);

    // An empty node directory counts as no NUMA as well.
    fs::create_dir_all(tree.path().join("node")).unwrap();
    assert_eq!(Topology::from_sysfs(tree.path()).unwrap(), t);
}

#[test]
fn sysfs_errors() {
    let tree = TempTree::new();
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(matches!(err, TopologyError::Io { .. }), "{err}");
    assert!(err.to_string().contains("possible"), "{err}");

    tree.file("node/node0/cpulist", "0-1,x\n");
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(matches!(err, TopologyError::File { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("node0/cpulist"), "{message}");
    assert!(message.contains("`x`"), "{message}");

    tree.file("node/node0/cpulist", "0-1\n")
        .file("node/node1/cpulist", "1-2\n");
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("CPU 1 is listed in node 0 and again in node 1"),
        "{err}"
    );

    fs::create_dir_all(tree.path().join("node/node2")).unwrap();
    tree.file("node/node1/cpulist", "2\n");
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(matches!(err, TopologyError::Io { .. }), "{err}");
    assert!(err.to_string().contains("node2/cpulist"), "{err}");

    fs::remove_dir_all(tree.path().join("node/node2")).unwrap();
    tree.file("cpu/possible", "0-\n");
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(err.to_string().contains("cpu/possible"), "{err}");

    tree.file("cpu/possible", "0-3\n")
        .file("node/node70000/cpulist", "\n");
    let err = Topology::from_sysfs(tree.path()).unwrap_err();
    assert!(err.to_string().contains("`node70000`"), "{err}");
}

// ------------------------------------------------------------ this machine

/// The machine's topology from sysfs, where there is one.
fn machine_sysfs() -> Option<Topology> {
    Topology::from_sysfs(Path::new("/sys/devices/system")).ok()
}

#[cfg(target_os = "linux")]
use crate::testing::{allowed_cpus, pin_to};

#[test]
fn detection_matches_sysfs() {
    let detected = Topology::detect();
    assert!(detected.node_count() >= 1 && detected.cpu_count() >= 1);
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    let listed: usize = detected.nodes().map(<[usize]>::len).sum();
    assert!(listed >= parallelism.min(detected.cpu_count()));
    match machine_sysfs() {
        Some(sysfs) => {
            #[cfg(not(feature = "hwloc"))]
            {
                assert_eq!(detected, sysfs);
            }
            assert_eq!(detected.node_count(), sysfs.node_count());
            for (cpus, sysfs_cpus) in detected.nodes().zip(sysfs.nodes()) {
                assert!(cpus.iter().all(|cpu| sysfs_cpus.contains(cpu)));
            }
        }
        None => assert!(matches!(
            detected.source(),
            TopologySource::Fallback | TopologySource::Hwloc
        )),
    }
    #[cfg(target_os = "linux")]
    for cpu in allowed_cpus() {
        assert!(cpu < detected.cpu_count(), "CPU {cpu} beyond {detected}");
    }
}

#[cfg(feature = "hwloc")]
#[test]
fn hwloc_matches_sysfs() {
    let hwloc = Topology::from_hwloc().unwrap();
    assert_eq!(hwloc.source(), TopologySource::Hwloc);
    assert_eq!(Topology::detect(), hwloc);
    let Some(sysfs) = machine_sysfs() else {
        return;
    };
    assert_eq!(hwloc.node_count(), sysfs.node_count(), "{hwloc} vs {sysfs}");
    // hwloc lists only the CPUs this process may use; sysfs lists all online.
    for (node, cpus) in hwloc.nodes().enumerate() {
        for &cpu in cpus {
            assert_eq!(sysfs.node_of(cpu), node, "CPU {cpu}: {hwloc} vs {sysfs}");
        }
    }
    #[cfg(target_os = "linux")]
    if allowed_cpus().len() == sysfs.nodes().map(<[usize]>::len).sum::<usize>() {
        assert!(hwloc.same_layout(&sysfs), "{hwloc} vs {sysfs}");
    }
}

#[test]
fn current_cpu_is_a_real_cpu() {
    let limit = machine_sysfs().map_or(MAX_CPUS, |t| t.cpu_count());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    assert!(current_cpu() < limit);
                    assert!(current_cpu_uncached() < limit);
                    assert!(probe::cached() < limit);
                    assert!(current_node() < Topology::global().node_count());
                    for cpu in [
                        probe::rseq(),
                        probe::sched_getcpu(),
                        probe::rdpid(),
                        probe::rdtscp(),
                    ] {
                        assert!(cpu.is_none_or(|cpu| cpu < limit));
                    }
                }
                assert!(refresh_current_cpu() < limit);
                assert!(probe::getcpu_syscall().is_none_or(|cpu| cpu < limit));
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[cfg(target_os = "linux")]
#[test]
fn every_method_agrees_when_pinned() {
    let cpus = allowed_cpus();
    assert!(!cpus.is_empty());
    assert_eq!(probe::has_rdpid(), probe::rdpid().is_some());
    assert_eq!(probe::has_rdtscp(), probe::rdtscp().is_some());
    assert_eq!(probe::has_rseq(), probe::rseq().is_some());
    std::thread::spawn(move || {
        for &cpu in cpus.iter().chain(cpus.iter().rev()) {
            pin_to(cpu);
            assert_eq!(probe::sched_getcpu(), Some(cpu));
            assert_eq!(probe::getcpu_syscall(), Some(cpu));
            for (name, read) in [
                ("rseq", probe::rseq()),
                ("rdpid", probe::rdpid()),
                ("rdtscp", probe::rdtscp()),
            ] {
                assert!(
                    read.is_none_or(|read| read == cpu),
                    "{name}: {read:?} on {cpu}"
                );
            }
            assert_eq!(current_cpu_uncached(), cpu);
            if probe::has_rseq() {
                assert_eq!(current_cpu(), cpu);
            }
            // The cache catches up within CPU_REFRESH_INTERVAL calls.
            let mut last = usize::MAX;
            for _ in 0..CPU_REFRESH_INTERVAL {
                last = probe::cached();
            }
            assert_eq!(last, cpu);
            assert_eq!(current_node(), Topology::global().node_of(cpu));
        }
        // refresh_current_cpu takes effect at once.
        let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
        pin_to(first);
        assert_eq!(refresh_current_cpu(), first);
        pin_to(last);
        assert_eq!(refresh_current_cpu(), last);
        assert_eq!(probe::cached(), last);
    })
    .join()
    .unwrap();
}

#[test]
fn global_is_fixed() {
    let global = Topology::global();
    assert!(std::ptr::eq(global, Topology::global()));
    assert!(global.node_count() >= 1);
    assert!(matches!(
        Topology::init_global(Topology::single_node(2)),
        Err(TopologyError::AlreadyInitialized)
    ));
}
