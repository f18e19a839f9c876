//! Target (d): every parser of outside input, on any bytes. None may panic;
//! what each accepts must make sense, and every error must print.
//!
//! Input: a byte choosing the parser, then the text (lossy UTF-8).
//! - `RWLOCK_TOPOLOGY` (`Topology::parse`): on success at least one CPU and
//!   one node, within `MAX_CPUS` and `MAX_NODES`, every node's CPUs
//!   ascending, below `MAX_CPUS` and mapped back to that node by `node_of`,
//!   no CPU in two nodes; and, when no node is memory-only, the nodes as
//!   the topology prints them (its `Display`) parse back to the same
//!   layout.
//! - sysfs cpulists (`parse_cpulist`, behind `Topology::from_sysfs` and
//!   the grammar's lists): on success every CPU below `MAX_CPUS`, and
//!   printing the list back (one `A-B` or `A` per run, in list order)
//!   parses to the same list.
//! - a sysfs tree (`Topology::from_sysfs` on a scratch directory the input
//!   describes: the first line is `cpu/possible`, or `-` for none, each
//!   further line `NAME:LIST` a directory `node/NAME` with `LIST` as its
//!   `cpulist`, or `NAME` alone a directory without one): a node directory
//!   named `node<N>` with N at or above `MAX_NODES` is an error; on
//!   success each `node<N>` (N named once) holds its list's CPUs, sorted,
//!   the CPU count covers `cpu/possible`, and without any `node<N>` the one
//!   node is `cpu/possible`'s CPUs.
//! - `BRAVO_TABLE_SLOTS` (`bravo::table::parse_env_value`): on success a
//!   power of two from 1 to `MAX_SLOTS`, the decimal number the trimmed
//!   text says; an error otherwise.
//! - `RWLOCK_IMPL` (`rwlock_preload::family::parse`): blank is the default
//!   family, `help` is help, a family's name (trimmed) is that family,
//!   anything else is unknown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rwlock_core::topology::{self, Topology};
use rwlock_preload::family::{self, Choice, FAMILIES};

/// Runs one input (panics on a broken promise).
pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 5 {
        0 => topology_spec(&text),
        1 => cpulist(&text),
        2 => table_slots(&text),
        3 => rwlock_impl(&text),
        _ => sysfs_tree(&text),
    }
}

fn topology_spec(text: &str) {
    let t = match Topology::parse(text) {
        Ok(t) => t,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "{text:?}: an empty error");
            return;
        }
    };
    check_topology(&t, text);
    if t.nodes().all(|cpus| !cpus.is_empty()) {
        let spec = printed_nodes(&t);
        let again = Topology::parse(&spec)
            .unwrap_or_else(|e| panic!("{text:?} printed as {spec:?} does not parse: {e}"));
        assert!(
            again.same_layout(&t),
            "{text:?} printed as {spec:?} parses to {again}, not {t}"
        );
    }
}

/// The invariants of any topology that parsed (`what` names the input).
fn check_topology(t: &Topology, what: &str) {
    assert!(t.cpu_count() >= 1, "{what:?}: a topology without CPUs");
    assert!(
        t.cpu_count() <= topology::MAX_CPUS,
        "{what:?}: {} CPUs",
        t.cpu_count()
    );
    assert!(
        (1..=topology::MAX_NODES).contains(&t.node_count()),
        "{what:?}: {} nodes",
        t.node_count()
    );
    let mut seen = std::collections::HashSet::new();
    for (node, cpus) in t.nodes().enumerate() {
        assert!(
            cpus.windows(2).all(|w| w[0] < w[1]),
            "{what:?}: node {node}'s CPUs not ascending"
        );
        for &cpu in cpus {
            assert!(
                cpu < t.cpu_count(),
                "{what:?}: CPU {cpu} beyond the CPU count"
            );
            assert!(seen.insert(cpu), "{what:?}: CPU {cpu} in two nodes");
            assert_eq!(t.node_of(cpu), node, "{what:?}: node_of({cpu})");
        }
    }
    assert!(!seen.is_empty(), "{what:?}: no node has a CPU");
}

/// The nodes as the topology's `Display` prints them (`[0-1,8; 4-5]`),
/// as an `RWLOCK_TOPOLOGY` spec (`0-1,8;4-5`).
fn printed_nodes(t: &Topology) -> String {
    let shown = t.to_string();
    let (Some(open), Some(close)) = (shown.find('['), shown.find(']')) else {
        panic!("{shown:?}: no node list in brackets");
    };
    shown[open + 1..close].replace("; ", ";")
}

fn cpulist(text: &str) {
    let cpus = match topology::parse_cpulist(text) {
        Ok(cpus) => cpus,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "{text:?}: an empty error");
            return;
        }
    };
    assert!(
        cpus.iter().all(|&c| c < topology::MAX_CPUS),
        "{text:?}: a CPU beyond MAX_CPUS"
    );
    let printed = print_cpulist(&cpus);
    let again = topology::parse_cpulist(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?} does not parse: {e}"));
    assert_eq!(
        again, cpus,
        "{text:?} printed as {printed:?} parses differently"
    );
}

/// `cpus` as a cpulist: each run of consecutive numbers as `A-B` (or `A`).
fn print_cpulist(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// `BRAVO_TABLE_SLOTS` against an oracle of its own (not `usize::from_str`,
/// which takes a leading `+`, the bug fixed in `10e0fc2`): whitespace
/// around, then ASCII digits only, a value that fits, a power of two of at
/// most `MAX_SLOTS`. Both ways: what the oracle accepts must be accepted
/// with that value, and what it refuses refused with a message.
fn table_slots(text: &str) {
    let digits = text.trim();
    let expected = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| {
            digits.bytes().try_fold(0usize, |n, b| {
                n.checked_mul(10)?.checked_add(usize::from(b - b'0'))
            })
        })
        .flatten()
        .filter(|n| n.is_power_of_two() && *n <= bravo::table::MAX_SLOTS);
    match (bravo::table::parse_env_value(text), expected) {
        (Ok(n), Some(e)) => assert_eq!(n, e, "{text:?}"),
        (Ok(n), None) => panic!("{text:?} was accepted as {n}"),
        (Err(why), Some(e)) => panic!("{text:?} ({e} slots) was refused: {why}"),
        (Err(why), None) => assert!(!why.is_empty(), "{text:?}: an empty error"),
    }
}

fn rwlock_impl(text: &str) {
    let got = family::parse(Some(text));
    let name = text.trim();
    let expected = match name {
        "" => Choice::Family(family::DEFAULT),
        "help" => Choice::Help,
        _ => FAMILIES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map_or(Choice::Unknown, |(f, _, _)| Choice::Family(*f)),
    };
    assert_eq!(got, expected, "RWLOCK_IMPL={text:?}");
    assert_eq!(family::parse(None), Choice::Family(family::DEFAULT));
}

/// The scratch directory of this process's sysfs trees: in `/dev/shm`
/// (tmpfs: about a third of the time per tree of a disk-backed `/tmp`)
/// where there is one, else in the temporary directory.
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("numa-rwlocks-fuzz-sysfs-{}", std::process::id()))
}

/// At most this many node directories per input (each costs file system
/// calls).
const MAX_NODE_DIRS: usize = 16;

fn sysfs_tree(text: &str) {
    let root = scratch();
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("cpu")).expect("create the scratch tree");
    let mut lines = text.split('\n');
    let possible_text = lines.next().unwrap_or("-");
    let possible = if possible_text == "-" {
        None
    } else {
        std::fs::write(root.join("cpu").join("possible"), possible_text)
            .expect("write cpu/possible");
        Some(topology::parse_cpulist(possible_text))
    };
    // What the node directory holds: each name's cpulist (`None`: no file).
    let mut dirs: BTreeMap<String, Option<String>> = BTreeMap::new();
    for line in lines.take(MAX_NODE_DIRS) {
        let (name, list) = match line.split_once(':') {
            Some((name, list)) => (name, Some(list)),
            None => (line, None),
        };
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains(['/', '\0'])
            || name.len() > 200
        {
            continue;
        }
        let dir = root.join("node").join(name);
        if std::fs::create_dir_all(&dir).is_err() {
            continue;
        }
        if let Some(list) = list {
            std::fs::write(dir.join("cpulist"), list).expect("write a cpulist");
        }
        let entry = dirs.entry(name.to_owned()).or_default();
        if list.is_some() {
            *entry = list.map(str::to_owned);
        }
    }
    let got = Topology::from_sysfs(&root);
    let _ = std::fs::remove_dir_all(&root);
    let what = format!("sysfs tree {text:?}");
    // The node directories `node<N>` (digits only), by N (`None`: too
    // large), with their cpulists.
    let mut nodes: BTreeMap<Option<usize>, Vec<Option<&String>>> = BTreeMap::new();
    for (name, list) in &dirs {
        if let Some(id) = name
            .strip_prefix("node")
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        {
            let id = id
                .parse::<usize>()
                .ok()
                .filter(|&n| n < topology::MAX_NODES);
            nodes.entry(id).or_default().push(list.as_ref());
        }
    }
    let t = match got {
        Ok(t) => t,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "{what}: an empty error");
            return;
        }
    };
    assert!(
        !nodes.contains_key(&None),
        "{what}: a node number at or above MAX_NODES was accepted: {t}"
    );
    check_topology(&t, &what);
    assert!(
        nodes.values().flatten().all(Option::is_some),
        "{what}: accepted a node directory without a cpulist: {t}"
    );
    let possible_cpus = match possible {
        Some(Ok(cpus)) => cpus,
        Some(Err(e)) => panic!("{what}: accepted although cpu/possible is malformed ({e})"),
        None => Vec::new(),
    };
    if let Some(&max) = possible_cpus.iter().max() {
        assert!(
            t.cpu_count() > max,
            "{what}: CPU count {} misses possible CPU {max}",
            t.cpu_count()
        );
    }
    if nodes.is_empty() {
        let mut expected = possible_cpus;
        expected.sort_unstable();
        assert_eq!(t.node_count(), 1, "{what}: no node directory, yet {t}");
        assert_eq!(t.cpus_of(0), expected, "{what}: the one node");
        return;
    }
    for (id, lists) in &nodes {
        let (Some(id), [Some(list)]) = (id, lists.as_slice()) else {
            // Named twice (`node1` and `node01`): either may have won.
            continue;
        };
        let mut expected = topology::parse_cpulist(list)
            .unwrap_or_else(|e| panic!("{what}: accepted although node{id} is malformed ({e})"));
        expected.sort_unstable();
        assert!(*id < t.node_count(), "{what}: node {id} missing from {t}");
        assert_eq!(t.cpus_of(*id), expected, "{what}: node {id}");
    }
}
