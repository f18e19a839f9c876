//! Replays every committed input of every target through the same code the
//! fuzzer runs: the seed corpus (`corpus/<target>/`) and the inputs that
//! once crashed (`regressions/<target>/`, kept forever by `scripts/fuzz`).

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("directory entry").path())
            .collect();
        paths.sort();
        for path in paths {
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            let data = std::fs::read(&path).expect("read an input");
            eprintln!("{target}: {}", path.display());
            run(&data);
            count += 1;
        }
    }
    assert!(count > 0, "no committed input for {target}");
}

#[test]
fn lock_ops() {
    replay("lock_ops", numa_rwlocks_fuzz::lock_ops::run);
}

#[test]
fn threads() {
    replay("threads", numa_rwlocks_fuzz::threads::run);
}

#[test]
fn ldu_ops() {
    replay("ldu_ops", numa_rwlocks_fuzz::ldu_ops::run);
}

#[test]
fn parsers() {
    replay("parsers", numa_rwlocks_fuzz::parsers::run);
}
