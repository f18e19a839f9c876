//! Target (d): every parser of outside input, on any bytes. None may panic;
//! what each accepts must make sense.
//!
//! Input: a byte choosing the parser, then the text (lossy UTF-8).
//! - `RWLOCK_TOPOLOGY` (`Topology::parse`): on success at least one CPU,
//!   every node's CPUs ascending, below `MAX_CPUS` and mapped back to that
//!   node by `node_of`, no CPU in two nodes.
//! - sysfs cpulists (`parse_cpulist`, behind `Topology::from_sysfs` and
//!   the grammar's `cpus=` lists): on success every CPU below `MAX_CPUS`,
//!   and printing the list back (one `A-B` or `A` per run, in list order)
//!   parses to the same list.
//! - `BRAVO_TABLE_SLOTS` (`bravo::table::parse_env_value`): on success a
//!   power of two from 1 to `MAX_SLOTS`, the decimal number the trimmed
//!   text says; an error otherwise.
//! - `RWLOCK_IMPL` (`rwlock_preload::family::parse`): blank is the default
//!   family, `help` is help, a family's name (trimmed) is that family,
//!   anything else is unknown.

use rwlock_core::topology::{self, Topology};
use rwlock_preload::family::{self, Choice, FAMILIES};

/// Runs one input (panics on a broken promise).
pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 4 {
        0 => topology_spec(&text),
        1 => cpulist(&text),
        2 => table_slots(&text),
        _ => rwlock_impl(&text),
    }
}

fn topology_spec(text: &str) {
    let Ok(t) = Topology::parse(text) else {
        return;
    };
    assert!(t.cpu_count() >= 1, "{text:?}: a topology without CPUs");
    let mut seen = std::collections::HashSet::new();
    for (node, cpus) in t.nodes().enumerate() {
        assert!(
            cpus.windows(2).all(|w| w[0] < w[1]),
            "{text:?}: node {node}'s CPUs not ascending"
        );
        for &cpu in cpus {
            assert!(
                cpu < topology::MAX_CPUS,
                "{text:?}: CPU {cpu} beyond MAX_CPUS"
            );
            assert!(seen.insert(cpu), "{text:?}: CPU {cpu} in two nodes");
            assert_eq!(t.node_of(cpu), node, "{text:?}: node_of({cpu})");
        }
    }
}

fn cpulist(text: &str) {
    let Ok(cpus) = topology::parse_cpulist(text) else {
        return;
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

fn table_slots(text: &str) {
    match bravo::table::parse_env_value(text) {
        Ok(n) => {
            assert!(
                n.is_power_of_two() && n <= bravo::table::MAX_SLOTS,
                "{text:?} gave {n}"
            );
            assert_eq!(
                text.trim().parse::<usize>().ok(),
                Some(n),
                "{text:?} gave {n}"
            );
        }
        Err(why) => assert!(!why.is_empty(), "{text:?}: an empty error"),
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
