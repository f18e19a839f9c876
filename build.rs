//! Builds the Concurrency Kit shim (src/ck_shim.c) when libck-dev's headers
//! are installed, and sets `cfg(has_ck)` so the harness registers the CK
//! locks; otherwise the harness says it skipped them. Likewise liburcu's
//! (src/urcu_shim.c, liburcu-dev, `cfg(has_urcu)`) for benches/rcu.rs.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_ck)");
    println!("cargo::rustc-check-cfg=cfg(has_urcu)");
    println!("cargo::rerun-if-changed=src/urcu_shim.c");
    let urcu = Path::new("/usr/include/x86_64-linux-gnu/urcu/urcu-memb.h");
    let urcu_generic = Path::new("/usr/include/urcu/urcu-memb.h");
    println!("cargo::rerun-if-changed={}", urcu.display());
    println!("cargo::rerun-if-changed={}", urcu_generic.display());
    if urcu.exists() || urcu_generic.exists() {
        cc::Build::new()
            .file("src/urcu_shim.c")
            .opt_level(2)
            .warnings(true)
            .compile("urcu_shim");
        println!("cargo::rustc-link-lib=urcu-memb");
        println!("cargo::rustc-cfg=has_urcu");
    }
    println!("cargo::rerun-if-changed=src/ck_shim.c");
    let include = Path::new("/usr/include");
    let headers = [
        "ck_brlock.h",
        "ck_cohort.h",
        "ck_rwcohort.h",
        "ck_spinlock.h",
    ];
    for h in headers {
        println!("cargo::rerun-if-changed={}", include.join(h).display());
    }
    if headers.iter().all(|h| include.join(h).exists()) {
        cc::Build::new()
            .file("src/ck_shim.c")
            .opt_level(2)
            .warnings(true)
            .compile("ck_shim");
        println!("cargo::rustc-cfg=has_ck");
    }
}
