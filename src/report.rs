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
        "workload,params,lock,family,threads,oversubscribed,reps,median_ops_per_sec,min_ops_per_sec,max_ops_per_sec,busy_cores,writer_wait_p50_ns,writer_wait_p90_ns,writer_wait_p99_ns,writer_wait_max_ns,writer_writes\n",
    );
    for r in rows {
        let p = r.writer_wait;
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "{},\"{}\",{},{},{},{},{},{:.0},{:.0},{:.0},{:.3},{},{},{},{},{}",
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
            p.map_or(String::new(), |p| p.count.to_string()),
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
/// runs plot the writer's p99 wait instead. Small multiples: one panel per
/// family of the workspace (its locks in colour), the peers in grey in
/// every panel, the same axes everywhere, and the oversubscribed thread
/// counts shaded. Returns the files written.
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
        let all = series(&group, &value);
        let points = || all.iter().flat_map(|(_, _, points)| points.iter());
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
        let interference = matches!(group[0].workload, Workload::Interference { .. });
        // The first oversubscribed thread count, shaded from half-way below it.
        let shade_from = group
            .iter()
            .filter(|r| r.oversubscribed && !interference)
            .map(|r| f64::from(x_of(&r.workload)))
            .fold(f64::NAN, f64::min);
        let families = panel_families(&all);
        let cols = families.len().clamp(1, 3);
        let panel_rows = families.len().div_ceil(cols).max(1);
        let (pw, ph) = (560u32, 380u32);
        let root = SVGBackend::new(&path, (pw * cols as u32, ph * panel_rows as u32 + 40))
            .into_drawing_area();
        root.fill(&WHITE)?;
        let (head, body) = root.split_vertically(40);
        head.draw(&Text::new(
            title.clone(),
            (16, 10),
            ("sans-serif", 22).into_font(),
        ))?;
        let panels = body.split_evenly((panel_rows, cols));
        let labels = Labels {
            x: if interference {
                "locks in the pool (log scale)"
            } else {
                "threads"
            },
            y: if latency {
                "writer wait p99 (us, log)"
            } else {
                "M ops/s (log)"
            },
            x_ticks: if interference {
                10
            } else {
                (xmax - xmin.min(1.0)) as usize + 1
            },
            shade_from: (!shade_from.is_nan()).then_some(shade_from),
        };
        for (panel, family) in panels.iter().zip(&families) {
            let y = (lo / 1.5..hi * 1.5).log_scale();
            if interference {
                // Pool sizes span 1 to 8192: log scale, as in the BRAVO paper.
                let x = (xmin..xmax.max(xmin * 2.0)).log_scale();
                draw(panel, x, y, family, &labels, &all)?;
            } else {
                let x = xmin.min(1.0)..xmax.max(2.0);
                draw(panel, x, y, family, &labels, &all)?;
            }
        }
        root.present()?;
        drop((panels, head, body, root));
        files.push(path);
    }
    Ok(files)
}

/// The families that get a panel, in order of appearance; the peers get
/// one only when nothing else was run.
fn panel_families(all: &Series) -> Vec<&'static str> {
    let mut families: Vec<&'static str> = Vec::new();
    for &(_, family, _) in all {
        if family != "peer" && !families.contains(&family) {
            families.push(family);
        }
    }
    if families.is_empty() {
        families.push("peer");
    }
    families
}

struct Labels<'a> {
    x: &'a str,
    y: &'a str,
    /// Tick marks on the x axis.
    x_ticks: usize,
    /// The first oversubscribed thread count, if any.
    shade_from: Option<f64>,
}

/// One line per lock: (lock, family, points sorted by x).
type Series = Vec<(&'static str, &'static str, Vec<(f64, f64)>)>;

fn series(group: &[&Row], value: &dyn Fn(&Row) -> f64) -> Series {
    let mut out: Series = Vec::new();
    for r in group {
        let v = value(r);
        if !(v.is_finite() && v > 0.0) {
            continue;
        }
        let point = (f64::from(x_of(&r.workload)), v);
        match out.iter_mut().find(|(lock, _, _)| *lock == r.lock) {
            Some((_, _, points)) => points.push(point),
            None => out.push((r.lock, r.family, vec![point])),
        }
    }
    for (_, _, points) in &mut out {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// One panel: `family`'s locks in colour over the peers in grey.
fn draw<X, Y>(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    x: X,
    y: Y,
    family: &str,
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
    let mut chart = ChartBuilder::on(area)
        .caption(family, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(labels.x)
        .y_desc(labels.y)
        .axis_desc_style(("sans-serif", 13))
        .label_style(("sans-serif", 12))
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
    if let Some(from) = labels.shade_from {
        let (xr, yr) = (chart.x_range(), chart.y_range());
        let band = [(from - 0.5, yr.start), (xr.end, yr.end)];
        chart.draw_series(std::iter::once(Rectangle::new(
            band,
            RGBColor(255, 200, 120).mix(0.18).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            "oversubscribed",
            (from - 0.4, yr.end),
            ("sans-serif", 12)
                .into_font()
                .color(&RGBColor(180, 110, 30)),
        )))?;
    }
    let grey = RGBColor(160, 160, 160);
    for (lock, _, points) in series.iter().filter(|s| s.1 == "peer" && family != "peer") {
        chart
            .draw_series(LineSeries::new(
                points.clone(),
                grey.mix(0.8).stroke_width(2),
            ))?
            .label(format!("{lock} (peer)"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], grey.stroke_width(2))
            });
    }
    let own = series.iter().filter(|s| s.1 == family);
    for (i, (lock, _, points)) in own.enumerate() {
        let color = Palette99::pick(i).mix(0.95);
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?
            .label(lock.to_string())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.75))
        .border_style(grey.mix(0.5))
        .label_font(("sans-serif", 11))
        .draw()?;
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
         `*` marks more threads than cores (oversubscribed); cores = CPU time / wall time. \
         Writer latency: the repetition with the median p99, its writer's waits in microseconds \
         and the writes it completed (a handful of writes makes its percentiles one wait each).\n"
    );
    for (_, title, group) in plot_groups(rows) {
        let _ = writeln!(out, "### {title}\n");
        let latency = matches!(group[0].workload, Workload::WriterLatency { .. });
        let interference = matches!(group[0].workload, Workload::Interference { .. });
        let x = if interference { "locks" } else { "threads" };
        if latency {
            let _ = writeln!(
                out,
                "| lock | {x} | writer wait p50 (us) | p90 | p99 | max | writes | ops/s (all threads) | cores |"
            );
            let _ = writeln!(
                out,
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
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
                        "| {} | {xv} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {:.2} |",
                        r.lock,
                        p.p50 / 1e3,
                        p.p90 / 1e3,
                        p.p99 / 1e3,
                        p.max / 1e3,
                        p.count,
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
