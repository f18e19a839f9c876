//! Results: a table for the terminal, CSV, SVG plots and a Markdown report.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::workloads::{Percentiles, Workload};

/// The summary of the repetitions of one (lock, workload) pair.
#[derive(Debug, Clone)]
pub struct Row {
    /// Lock name.
    pub lock: &'static str,
    /// Lock family.
    pub family: &'static str,
    /// The workload.
    pub workload: Workload,
    /// Median operations per second over the repetitions.
    pub median: f64,
    /// Slowest repetition.
    pub min: f64,
    /// Fastest repetition.
    pub max: f64,
    /// Repetitions.
    pub reps: usize,
    /// Cores kept busy in the median repetition.
    pub busy_cores: f64,
    /// Writer waits of the median repetition (writer-latency runs only).
    pub writer_wait: Option<Percentiles>,
    /// Threads beyond the machine's cores.
    pub oversubscribed: bool,
}

/// Fixed-width table, one line per row, grouped as given.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<15} {:<18} {:<32} {:>7} {:>12} {:>12} {:>12} {:>6} {:>22}",
        "workload",
        "lock",
        "params",
        "threads",
        "median ops/s",
        "min",
        "max",
        "cores",
        "writer wait p50/p99 us"
    );
    let mut last = None;
    for r in rows {
        let key = (r.workload.kind(), r.workload.params());
        if last.as_ref().is_some_and(|l| *l != key) {
            out.push('\n');
        }
        let threads = format!(
            "{}{}",
            r.workload.threads(),
            if r.oversubscribed { "*" } else { "" }
        );
        let wait = r.writer_wait.map_or(String::new(), |p| {
            format!("{:.1}/{:.1}", p.p50 / 1e3, p.p99 / 1e3)
        });
        let _ = writeln!(
            out,
            "{:<15} {:<18} {:<32} {:>7} {:>12} {:>12} {:>12} {:>6.2} {:>22}",
            r.workload.kind(),
            r.lock,
            r.workload.params(),
            threads,
            si(r.median),
            si(r.min),
            si(r.max),
            r.busy_cores,
            wait
        );
        last = Some(key);
    }
    out.push_str("(* = more threads than cores: oversubscribed; cores = CPU time / wall time)\n");
    out
}

/// `12.3M`, `456.7k`.
pub fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}

/// CSV with a header line.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "workload,params,lock,family,threads,oversubscribed,reps,median_ops_per_sec,min_ops_per_sec,max_ops_per_sec,busy_cores,writer_wait_p50_ns,writer_wait_p90_ns,writer_wait_p99_ns,writer_wait_max_ns\n",
    );
    for r in rows {
        let p = r.writer_wait;
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "{},\"{}\",{},{},{},{},{},{:.0},{:.0},{:.0},{:.3},{},{},{},{}",
            r.workload.kind(),
            r.workload.params(),
            r.lock,
            r.family,
            r.workload.threads(),
            r.oversubscribed,
            r.reps,
            r.median,
            r.min,
            r.max,
            r.busy_cores,
            f(p.map(|p| p.p50)),
            f(p.map(|p| p.p90)),
            f(p.map(|p| p.p99)),
            f(p.map(|p| p.max)),
        );
    }
    out
}

/// The x coordinate of a row in its plot: threads, or pool size for
/// interference runs.
fn x_of(w: &Workload) -> u32 {
    match *w {
        Workload::Interference { locks, .. } => locks as u32,
        _ => w.threads() as u32,
    }
}

/// Rows grouped by plot: (file stem, title, rows).
fn plot_groups(rows: &[Row]) -> Vec<(String, String, Vec<&Row>)> {
    let mut groups: Vec<(String, String, Vec<&Row>)> = Vec::new();
    for r in rows {
        let (stem, title) = match r.workload {
            Workload::Interference { threads, .. } => (
                format!("interference_t{threads}"),
                format!("interference: {threads} readers over a pool of locks"),
            ),
            _ => {
                let params = r.workload.params();
                let stem = format!("{}_{}", r.workload.kind(), params)
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect::<String>();
                let title = if params.is_empty() {
                    r.workload.kind().to_owned()
                } else {
                    format!("{} ({params})", r.workload.kind())
                };
                (stem, title)
            }
        };
        match groups.iter_mut().find(|g| g.0 == stem) {
            Some(g) => g.2.push(r),
            None => groups.push((stem, title, vec![r])),
        }
    }
    groups
}

/// Writes one SVG per workload into `dir`: throughput against threads (or
/// pool size), log-scaled y axis as in the papers' plots; writer-latency
/// runs plot the writer's p99 wait instead. Returns the files written.
pub fn svg(
    rows: &[Row],
    dir: &Path,
) -> Result<Vec<std::path::PathBuf>, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (stem, title, group) in plot_groups(rows) {
        let path = dir.join(format!("{stem}.svg"));
        let latency = matches!(group[0].workload, Workload::WriterLatency { .. });
        let value = |r: &Row| -> f64 {
            if latency {
                r.writer_wait.map_or(f64::NAN, |p| p.p99 / 1e3)
            } else {
                r.median / 1e6
            }
        };
        let series = series(&group, &value);
        let points = || series.iter().flat_map(|(_, points)| points.iter());
        if points().next().is_none() {
            continue;
        }
        let range = |f: fn(&(f64, f64)) -> f64| {
            points()
                .map(f)
                .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
        };
        let (lo, hi) = range(|p| p.1);
        let (xmin, xmax) = range(|p| p.0);
        let root = SVGBackend::new(&path, (1060, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let interference = matches!(group[0].workload, Workload::Interference { .. });
        let labels = Labels {
            title: &title,
            x: if interference {
                "locks in the pool (log scale)"
            } else {
                "threads"
            },
            y: if latency {
                "writer wait, 99th percentile (us, log scale)"
            } else {
                "throughput (million ops/s, log scale)"
            },
            x_ticks: if interference {
                10
            } else {
                (xmax - xmin.min(1.0)) as usize + 1
            },
        };
        let y = (lo / 1.5..hi * 1.5).log_scale();
        if interference {
            // Pool sizes span 1 to 8192: log scale, as in the BRAVO paper.
            let x = (xmin..xmax.max(xmin * 2.0)).log_scale();
            draw(&root, x, y, &labels, &series)?;
        } else {
            // Thread counts: linear, one tick per thread count up to 16.
            let x = xmin.min(1.0)..xmax.max(2.0);
            draw(&root, x, y, &labels, &series)?;
        }
        root.present()?;
        drop(root);
        files.push(path);
    }
    Ok(files)
}

struct Labels<'a> {
    title: &'a str,
    x: &'a str,
    y: &'a str,
    /// Tick marks on the x axis.
    x_ticks: usize,
}

/// One line per lock: (lock, points sorted by x).
type Series = Vec<(&'static str, Vec<(f64, f64)>)>;

fn series(group: &[&Row], value: &dyn Fn(&Row) -> f64) -> Series {
    let mut out: Series = Vec::new();
    for r in group {
        let v = value(r);
        if !(v.is_finite() && v > 0.0) {
            continue;
        }
        let point = (f64::from(x_of(&r.workload)), v);
        match out.iter_mut().find(|(lock, _)| *lock == r.lock) {
            Some((_, points)) => points.push(point),
            None => out.push((r.lock, vec![point])),
        }
    }
    for (_, points) in &mut out {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn draw<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    x: X,
    y: Y,
    labels: &Labels<'_>,
    series: &Series,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    <X as plotters::coord::ranged1d::AsRangedCoord>::CoordDescType:
        plotters::coord::ranged1d::ValueFormatter<f64>,
    <Y as plotters::coord::ranged1d::AsRangedCoord>::CoordDescType:
        plotters::coord::ranged1d::ValueFormatter<f64>,
{
    // The chart on the left, the legend in its own column on the right, so
    // that it never hides a line.
    let (plot_area, legend_area) = root.split_horizontally(860);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(labels.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(labels.x)
        .y_desc(labels.y)
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .x_labels(labels.x_ticks)
        // Integers only: thread counts and pool sizes.
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-6 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| {
            format!("{v:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned()
        })
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for (i, (lock, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).mix(0.9);
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        let y = 60 + 24 * i as i32;
        legend_area.draw(&PathElement::new(
            vec![(8, y), (32, y)],
            color.stroke_width(3),
        ))?;
        legend_area.draw(&Circle::new((20, y), 4, color.filled()))?;
        legend_area.draw(&Text::new(
            lock.to_string(),
            (40, y - 8),
            ("sans-serif", 15).into_font(),
        ))?;
    }
    Ok(())
}

/// What the machine is: CPU model, cores, NUMA nodes, kernel.
pub fn machine_description() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let topo = rwlock_core::topology::Topology::global();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown kernel".to_owned());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(String::new(), |kb| {
            format!(", {:.0} GiB", kb / 1024.0 / 1024.0)
        });
    format!(
        "{model}, {cores} cores available, {} NUMA node(s) ({:?} topology){mem_gib}, Linux {kernel}",
        topo.node_count(),
        topo.source()
    )
}

/// A Markdown report: machine, command, then one table per workload.
pub fn markdown(rows: &[Row], machine: &str, command: &str, date: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Run of {date}\n");
    let _ = writeln!(out, "- Machine: {machine}");
    let _ = writeln!(out, "- Command: `{command}`");
    let _ = writeln!(
        out,
        "- Figures: median of the repetitions (min and max beside it), operations per second; \
         `*` marks more threads than cores (oversubscribed); cores = CPU time / wall time.\n"
    );
    for (_, title, group) in plot_groups(rows) {
        let _ = writeln!(out, "### {title}\n");
        let latency = matches!(group[0].workload, Workload::WriterLatency { .. });
        let interference = matches!(group[0].workload, Workload::Interference { .. });
        let x = if interference { "locks" } else { "threads" };
        if latency {
            let _ = writeln!(
                out,
                "| lock | {x} | writer wait p50 (us) | p90 | p99 | max | reader ops/s | cores |"
            );
            let _ = writeln!(
                out,
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            );
        } else {
            let _ = writeln!(out, "| lock | {x} | median ops/s | min | max | cores |");
            let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: |");
        }
        for r in group {
            let xv = if interference {
                x_of(&r.workload).to_string()
            } else {
                format!(
                    "{}{}",
                    r.workload.threads(),
                    if r.oversubscribed { "*" } else { "" }
                )
            };
            match (latency, r.writer_wait) {
                (true, Some(p)) => {
                    let _ = writeln!(
                        out,
                        "| {} | {xv} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.2} |",
                        r.lock,
                        p.p50 / 1e3,
                        p.p90 / 1e3,
                        p.p99 / 1e3,
                        p.max / 1e3,
                        si(r.median),
                        r.busy_cores
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "| {} | {xv} | {} | {} | {} | {:.2} |",
                        r.lock,
                        si(r.median),
                        si(r.min),
                        si(r.max),
                        r.busy_cores
                    );
                }
            }
        }
        out.push('\n');
    }
    out
}
