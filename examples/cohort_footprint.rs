//! Bytes each cohort lock takes: inline (`size_of`) plus what it allocates
//! on first use, at 1, 2, 4 and 8 nodes. Prints the Markdown table of the
//! cohort crate docs.
//!
//! ```text
//! cargo run --release --example cohort_footprint
//! ```

use lock_api::{RawMutex, RawRwLock};

fn touch<L: RawRwLock>(l: &L) {
    // One read and one write allocate every per-node part.
    let r = l.lock_shared();
    // SAFETY: our own acquisitions.
    unsafe { l.unlock_shared(r) };
    let w = l.lock_exclusive();
    // SAFETY: as above.
    unsafe { l.unlock_exclusive(w) };
}

macro_rules! row {
    ($name:expr, $ty:ty) => {{
        let mut cells = vec![
            format!("`{}`", $name),
            std::mem::size_of::<$ty>().to_string(),
        ];
        for nodes in [1, 2, 4, 8] {
            let l = <$ty>::with_nodes(nodes);
            touch(&l);
            cells.push((std::mem::size_of::<$ty>() + l.heap_bytes()).to_string());
        }
        println!("| {} |", cells.join(" | "));
    }};
}

fn main() {
    println!("| lock | inline bytes | total, 1 node | 2 nodes | 4 nodes | 8 nodes |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut cells = vec![
        "`CPtlTkt` (cohort mutex)".to_string(),
        std::mem::size_of::<cohort::CPtlTkt>().to_string(),
    ];
    for nodes in [1, 2, 4, 8] {
        let m = cohort::CPtlTkt::with_config(nodes, cohort::DEFAULT_HANDOFF_BOUND);
        let g = m.lock();
        // SAFETY: our own acquisition.
        unsafe { m.unlock(g) };
        cells.push((std::mem::size_of::<cohort::CPtlTkt>() + m.heap_bytes()).to_string());
    }
    println!("| {} |", cells.join(" | "));
    row!("CRwNp", cohort::CRwNp);
    row!("CRwRp", cohort::CRwRp);
    row!("CRwRpOpt", cohort::CRwRpOpt);
    row!("CRwWp", cohort::CRwWp);
    row!("DrTicket", cohort::DrTicket);
    row!("WriterPref<CPtlTkt, PerNode>", cohort::WriterPref<cohort::CPtlTkt, cohort::PerNode>);
    row!("WriterPref<CPtlTkt, Central>", cohort::WriterPref<cohort::CPtlTkt, cohort::Central>);
    println!(
        "\nFor comparison: parking_lot::RawRwLock {} bytes, rwlock_core::PfQueue {} bytes, \
         bravo::RawRwLock {} bytes (plus BRAVO's one process-wide table).",
        std::mem::size_of::<parking_lot::RawRwLock>(),
        std::mem::size_of::<rwlock_core::PfQueue>(),
        std::mem::size_of::<bravo::RawRwLock>(),
    );
}
