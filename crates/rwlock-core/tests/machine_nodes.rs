//! The topology of a machine that really has several NUMA nodes, read
//! without any override: run inside the 2-node VM by `scripts/vm-test`,
//! which says what the nodes are in `RWLOCK_VM_NODES` (the
//! `RWLOCK_TOPOLOGY` grammar, e.g. `0-1;2-3`). Outside the VM these tests
//! are ignored; run by hand without that variable, they fail and say why.

use std::path::Path;

use rwlock_core::topology::{self, Topology, TopologySource};

/// What `scripts/vm-test` gave the VM: the nodes its qemu command line made.
fn expected() -> Topology {
    let spec = std::env::var("RWLOCK_VM_NODES")
        .expect("RWLOCK_VM_NODES is not set: these tests run inside scripts/vm-test's VM");
    assert!(
        std::env::var_os(topology::ENV_VAR).is_none(),
        "RWLOCK_TOPOLOGY is set: these tests check what is detected without it"
    );
    Topology::parse(&spec).expect("RWLOCK_VM_NODES is malformed")
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // A zeroed cpu_set_t is a valid empty set, CPU_SET writes inside it,
    // and sched_setaffinity(0, ..) affects the calling thread only.
    // SAFETY: as just said.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            rc,
            0,
            "sched_setaffinity({cpu}): {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
#[ignore = "runs inside the 2-node VM (scripts/vm-test sets RWLOCK_VM_NODES)"]
fn sysfs_and_detection_find_the_machines_nodes() {
    let want = expected();
    assert!(
        want.node_count() >= 2,
        "the VM should have several nodes: {want}"
    );
    let sysfs = Topology::from_sysfs(Path::new("/sys/devices/system")).expect("sysfs");
    assert!(
        sysfs.same_layout(&want),
        "sysfs: {sysfs}, qemu was given {want}"
    );
    assert_eq!(sysfs.source(), TopologySource::Sysfs);
    let detected = Topology::detect();
    assert!(
        detected.same_layout(&want),
        "detect: {detected}, qemu was given {want}"
    );
    let global = Topology::global();
    assert!(
        global.same_layout(&want),
        "global: {global}, qemu was given {want}"
    );
    eprintln!("machine_nodes: {global}");
}

#[test]
#[ignore = "runs inside the 2-node VM (scripts/vm-test sets RWLOCK_VM_NODES)"]
fn a_thread_pinned_to_a_cpu_is_on_that_cpus_node() {
    let want = expected();
    let global = Topology::global();
    for (node, cpus) in want.nodes().enumerate() {
        for &cpu in cpus {
            std::thread::scope(|s| {
                s.spawn(|| {
                    pin_to(cpu);
                    assert_eq!(topology::refresh_current_cpu(), cpu);
                    assert_eq!(topology::current_cpu_uncached(), cpu);
                    assert_eq!(topology::current_node(), node, "CPU {cpu}");
                    assert_eq!(global.node_of(cpu), node);
                });
            });
        }
    }
}
