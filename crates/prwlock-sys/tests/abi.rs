//! One source of truth: compiles `include/prwlock_helper.h` with the system
//! C compiler and compares every size, offset, constant and request number
//! with this crate's declarations.

use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use prwlock_sys::*;

/// The C side: `name value` lines printed by a program built against the
/// header.
fn c_side() -> HashMap<String, u64> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi-check");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("abi.c");
    let exe = dir.join("abi");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let mut lines = String::new();
    let mut emit = |name: &str, expr: &str| {
        lines += &format!("    printf(\"{name} %llu\\n\", (unsigned long long)({expr}));\n");
    };
    for ty in ["record", "version", "register", "consensus", "stats"] {
        emit(
            &format!("size.{ty}"),
            &format!("sizeof(struct prwlock_{ty})"),
        );
        emit(
            &format!("align.{ty}"),
            &format!("_Alignof(struct prwlock_{ty})"),
        );
    }
    for (ty, fields) in [
        ("record", &["slots", "owner", "on_cpu", "reserved"][..]),
        ("version", &["abi", "records_per_thread"]),
        ("register", &["record", "domain", "size", "flags"]),
        (
            "consensus",
            &[
                "domain",
                "version",
                "size",
                "flags",
                "cpus_interrupted",
                "reserved",
            ],
        ),
        (
            "stats",
            &[
                "size",
                "threads",
                "records",
                "consensus",
                "cpus_interrupted",
            ],
        ),
    ] {
        for f in fields {
            emit(
                &format!("offset.{ty}.{f}"),
                &format!("offsetof(struct prwlock_{ty}, {f})"),
            );
        }
    }
    for c in [
        "PRWLOCK_ABI_VERSION",
        "PRWLOCK_SLOTS",
        "PRWLOCK_RECORD_ALIGN",
        "PRWLOCK_SLOT_FREE",
        "PRWLOCK_ON_CPU",
        "PRWLOCK_OFF_CPU",
        "PRWLOCK_CPU_MASK",
        "PRWLOCK_CONSENSUS_ALL",
        "PRWLOCK_IOC_MAGIC",
        "PRWLOCK_IOC_VERSION",
        "PRWLOCK_IOC_REGISTER",
        "PRWLOCK_IOC_UNREGISTER",
        "PRWLOCK_IOC_CONSENSUS",
        "PRWLOCK_IOC_STATS",
    ] {
        emit(c, c);
    }
    std::fs::write(
        &src,
        format!(
            "#include <stddef.h>\n#include <stdio.h>\n#include \"prwlock_helper.h\"\n\
             int main(void) {{\n{lines}    printf(\"device %s\\n\", PRWLOCK_DEVICE);\n    return 0;\n}}\n"
        ),
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC): {e}"));
    assert!(
        out.status.success(),
        "the header does not compile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut map = HashMap::new();
    for line in text.lines() {
        let (name, value) = line.split_once(' ').unwrap();
        if name == "device" {
            assert_eq!(value, DEVICE.to_str().unwrap());
            continue;
        }
        map.insert(name.to_string(), value.parse().unwrap());
    }
    map
}

#[test]
fn rust_declarations_match_the_c_header() {
    let c = c_side();
    let rust: Vec<(&str, u64)> = vec![
        ("size.record", size_of::<Record>() as u64),
        ("align.record", align_of::<Record>() as u64),
        ("size.version", size_of::<VersionArg>() as u64),
        ("align.version", align_of::<VersionArg>() as u64),
        ("size.register", size_of::<RegisterArg>() as u64),
        ("align.register", align_of::<RegisterArg>() as u64),
        ("size.consensus", size_of::<ConsensusArg>() as u64),
        ("align.consensus", align_of::<ConsensusArg>() as u64),
        ("size.stats", size_of::<Stats>() as u64),
        ("align.stats", align_of::<Stats>() as u64),
        ("offset.record.slots", offset_of!(Record, slots) as u64),
        ("offset.record.owner", offset_of!(Record, owner) as u64),
        ("offset.record.on_cpu", offset_of!(Record, on_cpu) as u64),
        (
            "offset.record.reserved",
            offset_of!(Record, reserved) as u64,
        ),
        ("offset.version.abi", offset_of!(VersionArg, abi) as u64),
        (
            "offset.version.records_per_thread",
            offset_of!(VersionArg, records_per_thread) as u64,
        ),
        (
            "offset.register.record",
            offset_of!(RegisterArg, record) as u64,
        ),
        (
            "offset.register.domain",
            offset_of!(RegisterArg, domain) as u64,
        ),
        ("offset.register.size", offset_of!(RegisterArg, size) as u64),
        (
            "offset.register.flags",
            offset_of!(RegisterArg, flags) as u64,
        ),
        (
            "offset.consensus.domain",
            offset_of!(ConsensusArg, domain) as u64,
        ),
        (
            "offset.consensus.version",
            offset_of!(ConsensusArg, version) as u64,
        ),
        (
            "offset.consensus.size",
            offset_of!(ConsensusArg, size) as u64,
        ),
        (
            "offset.consensus.flags",
            offset_of!(ConsensusArg, flags) as u64,
        ),
        (
            "offset.consensus.cpus_interrupted",
            offset_of!(ConsensusArg, cpus_interrupted) as u64,
        ),
        (
            "offset.consensus.reserved",
            offset_of!(ConsensusArg, reserved) as u64,
        ),
        ("offset.stats.size", offset_of!(Stats, size) as u64),
        ("offset.stats.threads", offset_of!(Stats, threads) as u64),
        ("offset.stats.records", offset_of!(Stats, records) as u64),
        (
            "offset.stats.consensus",
            offset_of!(Stats, consensus) as u64,
        ),
        (
            "offset.stats.cpus_interrupted",
            offset_of!(Stats, cpus_interrupted) as u64,
        ),
        ("PRWLOCK_ABI_VERSION", ABI_VERSION as u64),
        ("PRWLOCK_SLOTS", SLOTS as u64),
        ("PRWLOCK_RECORD_ALIGN", RECORD_ALIGN as u64),
        ("PRWLOCK_SLOT_FREE", SLOT_FREE),
        ("PRWLOCK_ON_CPU", ON_CPU as u64),
        ("PRWLOCK_OFF_CPU", OFF_CPU as u64),
        ("PRWLOCK_CPU_MASK", CPU_MASK as u64),
        ("PRWLOCK_CONSENSUS_ALL", CONSENSUS_ALL as u64),
        ("PRWLOCK_IOC_MAGIC", IOC_MAGIC as u64),
        ("PRWLOCK_IOC_VERSION", IOC_VERSION),
        ("PRWLOCK_IOC_REGISTER", IOC_REGISTER),
        ("PRWLOCK_IOC_UNREGISTER", IOC_UNREGISTER),
        ("PRWLOCK_IOC_CONSENSUS", IOC_CONSENSUS),
        ("PRWLOCK_IOC_STATS", IOC_STATS),
    ];
    let mut mismatches = Vec::new();
    for (name, value) in &rust {
        match c.get(*name) {
            Some(v) if v == value => {}
            other => mismatches.push(format!("{name}: C {other:?}, Rust {value}")),
        }
    }
    assert_eq!(c.len(), rust.len(), "a C value is not compared");
    assert!(
        mismatches.is_empty(),
        "ABI mismatches:\n{}",
        mismatches.join("\n")
    );
}
