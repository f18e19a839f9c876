//! The comparison harness: every lock family of the workspace against the
//! peers, on the papers' workloads.
//!
//! ```text
//! cargo bench --bench rwbench                       # defaults: about 200 s on 2 cores
//! cargo bench --bench rwbench -- --help
//! cargo bench --bench rwbench -- --threads 1,2,4,8,16 --write 2,20 --locks pf_q,parking_lot
//! cargo bench --bench rwbench -- --markdown         # also writes docs/results.md
//! ```
//!
//! Prints a table, writes `results.csv` and one SVG plot per workload under
//! `target/rwbench/` (or `--out`). Exits non-zero if any run fails the
//! zero-sum check.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use numa_rwlocks::cli::{is_stray_value, list};
use numa_rwlocks::registry::{self, LockEntry};
use numa_rwlocks::report::{self, Row};
use numa_rwlocks::workloads::{RunConfig, Workload};

const HELP: &str = "\
rwbench: compare reader-writer locks on the papers' workloads

options (lists are comma-separated):
  --workloads LIST   rwbench,alternator,test_rwlock,interference,writer_latency (default: all)
  --threads LIST     thread counts (default 1,2,4 and 8x the CPUs: 1,2,4,16 on 2 CPUs, where 4 and 16
                     oversubscribe)
  --write LIST       RWBench write percentages, decimals allowed (default 2,20; papers: 2,5,10,20,50,90,0.1,0.01)
  --rcs N --wcs N --ncs N   RWBench critical and non-critical section lengths (default 4 4 32)
  --pool LIST        interference pool sizes (default 1,64,4096; papers: 1 to 8192)
  --duration-ms N    measurement interval of one run (default 150)
  --reps N           repetitions per point, median reported (default 3, at least 3 recommended);
                     interleaved across the locks, so that ratios within a run resist drift
  --locks LIST       locks or families (rwlock-core, bravo, cohort, prwlock, peer; bravo-ablation,
                     cohort-ablation, unrestricted by name); default all
  --pin              pin worker i to CPU i % cpus
  --topology SPEC    NUMA topology override (RWLOCK_TOPOLOGY grammar), before any lock is used
  --out DIR          where results.csv and the SVG plots go (default target/rwbench)
  --markdown [PATH]  also write the Markdown report (default docs/results.md; the section for
                     this machine is replaced, other machines' sections are kept)
  --list-locks       print the names of the default set of locks, one per line, and exit
  --full             the paper-like sweep: threads 1..16, writes 2,5,10,20,50,90,0.1,0.01,
                     pools 1..8192, 5 reps of 1 s (long: use on a big machine)
";

#[derive(Debug)]
struct Args {
    workloads: Vec<String>,
    threads: Vec<usize>,
    write_pct: Vec<f64>,
    rcs: u32,
    wcs: u32,
    ncs: u32,
    pool: Vec<usize>,
    duration: Duration,
    reps: usize,
    locks: Vec<String>,
    pin: bool,
    topology: Option<String>,
    out: PathBuf,
    markdown: Option<PathBuf>,
}

/// 1, 2, 4 and an oversubscribed point at 8× the CPUs the process may run
/// on (where programs meet thread pools larger than the machine).
fn default_threads() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    vec![1, 2, 4, 8 * cpus]
}

fn parse(raw: &[String]) -> Result<Args, String> {
    let mut a = Args {
        workloads: [
            "rwbench",
            "alternator",
            "test_rwlock",
            "interference",
            "writer_latency",
        ]
        .map(String::from)
        .to_vec(),
        threads: default_threads(),
        write_pct: vec![2.0, 20.0],
        rcs: 4,
        wcs: 4,
        ncs: 32,
        pool: vec![1, 64, 4096],
        duration: Duration::from_millis(150),
        reps: 3,
        locks: Vec::new(),
        pin: false,
        topology: None,
        out: PathBuf::from("target/rwbench"),
        markdown: None,
    };
    let mut it = raw.iter().peekable();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "-h" | "--help" => return Err(String::new()),
            "--workloads" => a.workloads = list("--workloads", &value()?)?,
            "--threads" => a.threads = list("--threads", &value()?)?,
            "--write" => a.write_pct = list("--write", &value()?)?,
            "--rcs" => a.rcs = value()?.parse().map_err(|_| "--rcs: not a number")?,
            "--wcs" => a.wcs = value()?.parse().map_err(|_| "--wcs: not a number")?,
            "--ncs" => a.ncs = value()?.parse().map_err(|_| "--ncs: not a number")?,
            "--pool" => a.pool = list("--pool", &value()?)?,
            "--duration-ms" => {
                a.duration = Duration::from_millis(
                    value()?
                        .parse()
                        .map_err(|_| "--duration-ms: not a number")?,
                )
            }
            "--reps" => a.reps = value()?.parse().map_err(|_| "--reps: not a number")?,
            "--locks" => a.locks = list("--locks", &value()?)?,
            "--pin" => a.pin = true,
            "--topology" => a.topology = Some(value()?),
            "--out" => a.out = PathBuf::from(value()?),
            "--markdown" => {
                let path = match it.peek() {
                    Some(p) if !p.starts_with("--") => it.next().unwrap().clone(),
                    _ => "docs/results.md".to_owned(),
                };
                a.markdown = Some(PathBuf::from(path));
            }
            "--full" => {
                a.threads = (1..=16).collect();
                a.write_pct = vec![2.0, 5.0, 10.0, 20.0, 50.0, 90.0, 0.1, 0.01];
                a.pool = vec![
                    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                ];
                a.reps = 5;
                a.duration = Duration::from_secs(1);
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            other if is_stray_value(other) => {
                return Err(format!(
                    "stray value `{other}` (lists are comma-separated, without spaces)"
                ));
            }
            // Another bare word is cargo's benchmark name filter; nothing to
            // filter here.
            _ => {}
        }
    }
    if a.threads.is_empty() || a.threads.contains(&0) {
        return Err("--threads: give thread counts of at least 1".into());
    }
    if a.reps == 0 {
        return Err("--reps: at least 1".into());
    }
    if a.duration.is_zero() {
        return Err("--duration-ms: at least 1".into());
    }
    if a.pool.contains(&0) {
        // A pool of 0 locks ran 1 and plotted an empty log-scale axis,
        // which never returned.
        return Err("--pool: give lock counts of at least 1".into());
    }
    if a.write_pct.iter().any(|p| !(0.0..=100.0).contains(p)) {
        return Err("--write: percentages between 0 and 100".into());
    }
    // Writes are drawn in parts per million.
    if let Some(p) = a.write_pct.iter().find(|&&p| p > 0.0 && p * 10_000.0 < 0.5) {
        return Err(format!("--write: {p} % is below the 0.0001 % resolution"));
    }
    for w in &a.workloads {
        if ![
            "rwbench",
            "alternator",
            "test_rwlock",
            "interference",
            "writer_latency",
        ]
        .contains(&w.as_str())
        {
            return Err(format!("--workloads: unknown workload `{w}`"));
        }
    }
    Ok(a)
}

fn workloads(a: &Args) -> Vec<Workload> {
    let mut out = Vec::new();
    let wants = |w: &str| a.workloads.iter().any(|x| x == w);
    if wants("rwbench") {
        for &pct in &a.write_pct {
            for &threads in &a.threads {
                out.push(Workload::RwBench {
                    threads,
                    write_ppm: (pct * 10_000.0).round() as u32,
                    rcs: a.rcs,
                    wcs: a.wcs,
                    ncs: a.ncs,
                });
            }
        }
    }
    if wants("alternator") {
        for &threads in &a.threads {
            out.push(Workload::Alternator { threads });
        }
    }
    if wants("test_rwlock") {
        for &threads in &a.threads {
            let w = Workload::TestRwlock {
                readers: threads.saturating_sub(1).max(1),
            };
            // Not `dedup`: `--threads 1,4,2` gives readers 1, 3, 1, and
            // the second 1 is not next to the first (found in review).
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    if wants("interference") {
        let threads = *a.threads.iter().max().unwrap();
        let threads = threads.min(std::thread::available_parallelism().map_or(1, |n| n.get()));
        for &locks in &a.pool {
            out.push(Workload::Interference { threads, locks });
        }
    }
    if wants("writer_latency") {
        for &threads in &a.threads {
            let w = Workload::WriterLatency {
                readers: threads.saturating_sub(1).max(1),
            };
            // As for test_rwlock.
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

fn median_row(
    lock: &LockEntry,
    w: &Workload,
    samples: Vec<numa_rwlocks::workloads::Sample>,
    cores: usize,
) -> Row {
    let mut sorted = samples;
    // Writer latency: the median repetition by p99 wait; else by throughput.
    let key = |s: &numa_rwlocks::workloads::Sample| match s.writer_wait {
        Some(p) => p.p99,
        None => s.ops_per_sec,
    };
    sorted.sort_by(|a, b| key(a).total_cmp(&key(b)));
    // The repetition whose percentiles and busy cores are reported: the
    // median one, the lower of the two middle ones for an even count.
    let mid = &sorted[(sorted.len() - 1) / 2];
    let mut ops: Vec<f64> = sorted.iter().map(|s| s.ops_per_sec).collect();
    ops.sort_by(f64::total_cmp);
    // The median throughput: for an even count, the mean of the two middle
    // ones (it was the upper one, so `--reps 2` reported the maximum; found
    // in review).
    let n = ops.len();
    let median = if n % 2 == 1 {
        ops[n / 2]
    } else {
        (ops[n / 2 - 1] + ops[n / 2]) / 2.0
    };
    Row {
        lock: lock.name,
        family: lock.family,
        workload: w.clone(),
        median,
        min: ops.iter().copied().fold(f64::MAX, f64::min),
        max: ops.iter().copied().fold(f64::MIN, f64::max),
        reps: sorted.len(),
        busy_cores: mid.busy_cores,
        writer_wait: mid.writer_wait,
        oversubscribed: w.threads() > cores,
    }
}

/// UTC date and time, `YYYY-MM-DD HH:MM UTC`.
fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Replaces this machine's section of the Markdown report (or appends it).
/// Copies the run's plots to `plots/<machine>/` beside the Markdown report
/// (replacing that machine's earlier plots) and returns the section's
/// "Plots" part, linking them.
fn copy_plots(
    markdown: &std::path::Path,
    machine: &str,
    plots: &[PathBuf],
) -> std::io::Result<String> {
    // The machine's name up to its core count: "amd-epyc-2-cores-available".
    let slug: String = machine
        .split(',')
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let rel = PathBuf::from("plots").join(&slug);
    let dir = markdown
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(&rel);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let mut out = String::from(
        "\n### Plots\n\nOne panel per family (its locks in colour), the peers in grey in every panel; \
         shaded: more threads than cores.\n\n",
    );
    for file in plots {
        let Some(name) = file.file_name() else {
            continue;
        };
        std::fs::copy(file, dir.join(name))?;
        let stem = file
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        out.push_str(&format!(
            "![{stem}]({}/{})\n\n",
            rel.display(),
            name.to_string_lossy()
        ));
    }
    Ok(out)
}

fn write_markdown(path: &PathBuf, machine: &str, section: &str) -> std::io::Result<()> {
    const HEADER: &str = "# Comparison results\n\nWritten by `cargo bench --bench rwbench -- --markdown`; one section per machine, \
each replaced by the next run on that machine. Ratios between locks of one run are what \
these figures support; absolute numbers depend on the machine.\n\n";
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let mut sections: Vec<String> = Vec::new();
    for part in old.split("\n## Run of ").skip(1) {
        let part = format!("## Run of {part}");
        if !part.contains(&format!("- Machine: {machine}\n")) {
            sections.push(part.trim_end().to_owned() + "\n");
        }
    }
    sections.push(section.trim_end().to_owned() + "\n");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, format!("{HEADER}{}", sections.join("\n")))
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.iter().any(|a| a == "--list-locks") {
        for lock in numa_rwlocks::registry::LOCKS {
            println!("{}", lock.name);
        }
        return ExitCode::SUCCESS;
    }
    let args = match parse(&raw) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("rwbench: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    if let Some(spec) = &args.topology {
        let installed = rwlock_core::topology::Topology::parse(spec)
            .and_then(rwlock_core::topology::Topology::init_global);
        if let Err(e) = installed {
            eprintln!("rwbench: --topology {spec}: {e}");
            return ExitCode::from(2);
        }
    }
    let locks = match registry::select(&args.locks) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rwbench: {e}");
            return ExitCode::from(2);
        }
    };
    if !registry::HAS_CK {
        eprintln!(
            "rwbench: Concurrency Kit peers (ck_brlock, ck_rwcohort) skipped: libck-dev was not found when building \
             (scripts/install-system-deps installs it; then rebuild)"
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine = report::machine_description();
    let command = format!(
        "cargo bench --bench rwbench --{}",
        raw.iter()
            .filter(|a| *a != "--bench")
            .map(|a| format!(" {a}"))
            .collect::<String>()
    );
    let cfg = RunConfig {
        duration: args.duration,
        pin: args.pin,
    };
    eprintln!("rwbench: {machine}");
    let plan = workloads(&args);
    eprintln!(
        "rwbench: {} points x {} locks x {} reps of {:?}",
        plan.len(),
        locks.len(),
        args.reps,
        args.duration
    );
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for w in &plan {
        // Repetitions interleaved across the locks (rep 1 of every lock,
        // then rep 2, ...), so that a slow second of a noisy machine hits
        // every lock of the point alike and the ratios within the run hold
        // up better than the absolute figures.
        let mut samples: Vec<Vec<_>> = locks
            .iter()
            .map(|_| Vec::with_capacity(args.reps))
            .collect();
        let mut ok = vec![true; locks.len()];
        for _ in 0..args.reps {
            for (i, lock) in locks.iter().enumerate() {
                if !ok[i] {
                    continue;
                }
                match (lock.run)(w, &cfg) {
                    Ok(s) => samples[i].push(s),
                    Err(e) => {
                        eprintln!(
                            "rwbench: FAILED {} on {} {} threads={}: {e}",
                            lock.name,
                            w.kind(),
                            w.params(),
                            w.threads()
                        );
                        failed.push(format!("{} {} {}", lock.name, w.kind(), w.threads()));
                        ok[i] = false;
                    }
                }
            }
        }
        for ((lock, samples), ok) in locks.iter().zip(samples).zip(ok) {
            if ok {
                rows.push(median_row(lock, w, samples, cores));
            }
        }
    }
    print!("{}", report::table(&rows));
    #[cfg(feature = "bravo-stats")]
    println!(
        "bravo stats, all Bravo locks of this run: {}",
        bravo::stats::snapshot()
    );
    if let Err(e) = std::fs::create_dir_all(&args.out)
        .and_then(|()| std::fs::write(args.out.join("results.csv"), report::csv(&rows)))
    {
        eprintln!("rwbench: cannot write {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let plots = match report::svg(&rows, &args.out) {
        Ok(files) => {
            println!(
                "wrote {} and {} plots under {}",
                args.out.join("results.csv").display(),
                files.len(),
                args.out.display()
            );
            files
        }
        Err(e) => {
            eprintln!("rwbench: plotting failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.markdown {
        let mut section = report::markdown(&rows, &machine, &command, &now_utc());
        match copy_plots(path, &machine, &plots) {
            Ok(links) => section.push_str(&links),
            Err(e) => {
                eprintln!(
                    "rwbench: cannot copy the plots next to {}: {e}",
                    path.display()
                );
                return ExitCode::FAILURE;
            }
        }
        if let Err(e) = write_markdown(path, &machine, &section) {
            eprintln!("rwbench: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "rwbench: {} run(s) failed the zero-sum check: {}",
            failed.len(),
            failed.join("; ")
        );
        ExitCode::FAILURE
    }
}
