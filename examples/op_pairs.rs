//! Runs uncontended lock/unlock pairs of one of the harness's locks on one
//! thread: the per-operation cost without the machine's noise, when run
//! under `valgrind --tool=callgrind` (`scripts/op-instructions` runs it
//! twice and prints the instructions per pair).
//!
//! ```text
//! cargo run --release --example op_pairs -- pf_t read 1000000
//! ```
//!
//! `op_pairs LOCK read|write|mixed ITERS`: after a warm-up of 1000 pairs,
//! runs `ITERS` pairs (`mixed`: a write pair then a read pair, the reads
//! of a lock whose bias the writes keep off) and prints the time per pair. `LOCK` is a name as for
//! `rwbench --locks`.

use std::process::ExitCode;

use numa_rwlocks::registry;
use numa_rwlocks::workloads::PairMode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [lock, mode, iters] = args.as_slice() else {
        eprintln!("usage: op_pairs LOCK read|write|mixed ITERS");
        return ExitCode::from(2);
    };
    let Some(&(_, pair_mode)) = PairMode::ALL.iter().find(|(name, _)| name == mode) else {
        eprintln!("op_pairs: mode must be read, write or mixed, not {mode:?}");
        return ExitCode::from(2);
    };
    let Ok(iters) = iters.parse::<u64>() else {
        eprintln!("op_pairs: ITERS must be a number, not {iters:?}");
        return ExitCode::from(2);
    };
    let entry = match registry::select(std::slice::from_ref(lock)) {
        Ok(e) if e.len() == 1 => e[0],
        Ok(_) => {
            eprintln!("op_pairs: {lock:?} names a family; name one lock");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("op_pairs: {e}");
            return ExitCode::from(2);
        }
    };
    (entry.pairs)(1000, pair_mode);
    let took = (entry.pairs)(iters, pair_mode);
    println!(
        "{} {mode}: {:.2} ns per pair",
        entry.name,
        took.as_nanos() as f64 / iters.max(1) as f64
    );
    ExitCode::SUCCESS
}
