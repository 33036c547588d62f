//! Turns the raw results of bench/run.sh into docs/benchmarks.md and the
//! sleepers plot (SVG, drawn with plotters).
//!
//! ```text
//! report --results bench/results --md docs/benchmarks.md --svg docs/img/sleepers.svg
//! ```
//!
//! Inputs, all in the results directory, one record per line:
//!
//! - `sleepers.txt`: `sleepers runtime=.. n=.. wall_s=.. spawn_s=.. hwm_kb=.. maps=.. rep=.. ok=1`,
//!   or `... ok=0 status=.. reason=free text to the end of the line`.
//! - `echo.txt`: `echo server=.. rep=.. utime=.. stime=.. oncpu_ns=.. conns=.. size=.. secs=.. rt_total=.. rt=.. rps=.. p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=.. ok=1`.
//! - `handover.txt`: `handover rep=.. ok=1 runtime=.. bench=.. ops=.. secs=.. ns_per_op=..`,
//!   `handover rep=.. ok=1 runtime=.. bench=.. na=1 reason=..` for a benchmark a
//!   runtime cannot do, or `handover runtime=.. bench=.. rep=.. ok=0 status=.. reason=..`.
//! - `http.txt`: `http server=.. rep=.. load=wrk|http_load utime=.. stime=.. conns=.. secs=.. requests_total=.. requests=.. rps=.. p50_us=.. p99_us=.. errors=.. ok=1`
//!   (http_load adds `p999_us` and `max_us`), `http server=.. conns=.. rep=.. load=.. ok=0 reason=..`,
//!   or `http ok=0 skipped=1 reason=..` when the stage did not run.
//! - `scaling.txt`: `scaling workers=.. clients=.. rep=.. ok=1 rps=.. server_us_per_rt=.. round_trips=.. vcs_per_rt=.. ivcs_per_rt=..`,
//!   or `scaling workers=.. clients=.. rep=.. ok=0 reason=..`.
//! - `lateness.txt`: `lateness variant=normal|rt rep=.. ok=1 runtime=.. tasks=.. max_ms=.. p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=.. early=.. max_early_us=..`,
//!   or `lateness runtime=.. variant=.. rep=.. ok=0 status=.. reason=..`.
//! - `meta.txt`: `key=value` lines about the machine and the run.
//! - `commands.txt`: the command lines, copied into the document.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

const NS: [u64; 5] = [1, 1_000, 10_000, 100_000, 1_000_000];
const RUNTIMES: [&str; 7] = [
    "yieldloop",
    "floor",
    "tokio",
    "may",
    "go",
    "threads",
    "asyncio",
];
const SERVERS: [&str; 5] = ["yieldloop", "tokio", "may", "go", "mio"];
const CONNS: [u64; 3] = [1, 64, 512];
const HANDOVER_RUNTIMES: [&str; 4] = ["yieldloop", "tokio", "may", "go"];
/// (bench key, row title, what one op is).
const HANDOVER_BENCHES: [(&str, &str, &str); 7] = [
    (
        "pingpong",
        "channel ping-pong (unbounded)",
        "one one-way hand-over",
    ),
    (
        "bounded",
        "bounded channel, capacity 64, 1 → 1",
        "one message",
    ),
    ("mutex", "mutex hand-over", "one hand-over of the lock"),
    ("yield", "yield between two tasks", "one `yield_now`"),
    (
        "spawn",
        "spawn + join a trivial task",
        "one spawn and its join",
    ),
    (
        "scope",
        "scope of 1,000 borrowing tasks",
        "one task of the scope",
    ),
    (
        "blockon",
        "`block_on` a future woken by another task",
        "one hand-over through a waker",
    ),
];

const LATENESS_RUNTIMES: [&str; 3] = ["yieldloop", "tokio", "may"];
/// (variant key, label).
const LATENESS_VARIANTS: [(&str, &str); 2] = [
    ("normal", "normal"),
    ("rt", "realtime priority (`chrt -f 50`)"),
];
/// (field, column title).
const LATENESS_COLUMNS: [(&str, &str); 5] = [
    ("p50_us", "p50"),
    ("p90_us", "p90"),
    ("p99_us", "p99"),
    ("p999_us", "p99.9"),
    ("max_us", "max"),
];

/// One result line: its fields, and the free-text reason of a failure.
#[derive(Debug, Default)]
struct Rec {
    fields: BTreeMap<String, String>,
    reason: Option<String>,
}

impl Rec {
    fn parse(line: &str) -> Rec {
        let (head, reason) = match line.find(" reason=") {
            Some(i) => (&line[..i], Some(line[i + 8..].trim().to_string())),
            None => (line, None),
        };
        let fields = head
            .split_whitespace()
            .filter_map(|t| t.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Rec { fields, reason }
    }

    fn s(&self, k: &str) -> &str {
        self.fields.get(k).map_or("", String::as_str)
    }

    fn f(&self, k: &str) -> f64 {
        self.s(k).parse().unwrap_or(f64::NAN)
    }

    fn ok(&self) -> bool {
        self.s("ok") == "1"
    }
}

fn read_recs(path: &Path) -> Vec<Rec> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Rec::parse)
        .collect()
}

fn read_meta(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Median, minimum and maximum.
#[derive(Clone, Copy, Debug)]
struct Stat {
    med: f64,
    min: f64,
    max: f64,
    n: usize,
}

fn stat(mut v: Vec<f64>) -> Option<Stat> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Stat {
        med,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// A number with about three significant digits.
fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A tick label without trailing zeros: 0.1, 1, 10.
fn trim_num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Integer with thousands separators.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cell(s: Option<Stat>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ({}–{})", num(s.med), num(s.min), num(s.max)),
        Some(s) => format!("{} (1 run)", num(s.med)),
        None => "—".into(),
    }
}

struct Args {
    results: PathBuf,
    md: PathBuf,
    svg: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        results: "bench/results".into(),
        md: "docs/benchmarks.md".into(),
        svg: "docs/img/sleepers.svg".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        match k.as_str() {
            "--results" => a.results = v.into(),
            "--md" => a.md = v.into(),
            "--svg" => a.svg = v.into(),
            _ => {
                eprintln!("usage: report --results DIR --md FILE --svg FILE");
                std::process::exit(2);
            }
        }
    }
    a
}

fn main() {
    let a = args();
    let recs = Results {
        sleepers: read_recs(&a.results.join("sleepers.txt")),
        echo: read_recs(&a.results.join("echo.txt")),
        http: read_recs(&a.results.join("http.txt")),
        scaling: read_recs(&a.results.join("scaling.txt")),
        handover: read_recs(&a.results.join("handover.txt")),
        lateness: read_recs(&a.results.join("lateness.txt")),
        syscalls: read_recs(&a.results.join("syscalls.txt")),
    };
    let meta = read_meta(&a.results.join("meta.txt"));
    let commands = std::fs::read_to_string(a.results.join("commands.txt")).unwrap_or_default();

    let svg_rel = relative_to(&a.svg, a.md.parent().unwrap_or(Path::new(".")));
    if let Err(e) = plot(&recs.sleepers, &a.svg) {
        eprintln!("report: plot failed: {e}");
    }
    let md = markdown(&recs, &meta, &commands, &svg_rel);
    if let Err(e) = std::fs::write(&a.md, md) {
        eprintln!("report: writing {}: {e}", a.md.display());
        std::process::exit(1);
    }
    eprintln!("report: wrote {} and {}", a.md.display(), a.svg.display());
}

/// The records of each result file.
struct Results {
    sleepers: Vec<Rec>,
    echo: Vec<Rec>,
    http: Vec<Rec>,
    scaling: Vec<Rec>,
    handover: Vec<Rec>,
    lateness: Vec<Rec>,
    syscalls: Vec<Rec>,
}

/// `target` relative to `dir` when it lies below it (for the image link).
fn relative_to(target: &Path, dir: &Path) -> String {
    let t = std::fs::canonicalize(target.parent().unwrap_or(Path::new(".")))
        .map(|p| p.join(target.file_name().unwrap_or_default()))
        .unwrap_or_else(|_| target.to_path_buf());
    let d = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    t.strip_prefix(&d)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| t.display().to_string())
}

// ------------------------------------------------------------- sleepers

struct SleeperCell {
    wall: Option<Stat>,
    over_ms: Option<Stat>,
    spawn_ms: Option<Stat>,
    hwm_mib: Option<Stat>,
    maps: Option<Stat>,
    failure: Option<String>,
    tried: bool,
}

fn sleeper_cell(recs: &[Rec], rt: &str, n: u64) -> SleeperCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("n") == n.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    SleeperCell {
        wall: col(&|r| r.f("wall_s")),
        over_ms: col(&|r| (r.f("wall_s") - 1.0) * 1e3),
        spawn_ms: col(&|r| r.f("spawn_s") * 1e3),
        hwm_mib: col(&|r| r.f("hwm_kb") / 1024.0),
        maps: col(&|r| r.f("maps")),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
    }
}

fn runtimes_present(recs: &[Rec]) -> Vec<&'static str> {
    RUNTIMES
        .iter()
        .copied()
        .filter(|rt| recs.iter().any(|r| r.s("runtime") == *rt))
        .collect()
}

fn color(rt: &str) -> RGBColor {
    match rt {
        "yieldloop" => RGBColor(214, 39, 40),
        "tokio" => RGBColor(31, 119, 180),
        "may" => RGBColor(44, 160, 44),
        "threads" => RGBColor(148, 103, 189),
        "asyncio" => RGBColor(255, 127, 14),
        "go" => RGBColor(23, 190, 207),
        "floor" => RGBColor(40, 40, 40),
        _ => RGBColor(90, 90, 90),
    }
}

fn n_label(n: f64) -> String {
    match n.round() as u64 {
        0 => String::new(),
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

fn plot(recs: &[Rec], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let rts = runtimes_present(recs);
    // (runtime, [(n, wall median, min, max, overhead ms median, min, max)])
    type Row = (f64, Stat, Stat);
    let series: Vec<(&str, Vec<Row>)> = rts
        .iter()
        .map(|&rt| {
            let pts = NS
                .iter()
                .filter_map(|&n| {
                    let c = sleeper_cell(recs, rt, n);
                    Some((n as f64, c.wall?, c.over_ms?))
                })
                .collect();
            (rt, pts)
        })
        .collect();
    let wall_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|r| r.1.max))
        .fold(1.0f64, f64::max);
    let (o_lo, o_hi) = series
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|r| [r.2.min, r.2.max]))
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (o_lo, o_hi) = if o_lo <= o_hi {
        (
            10f64.powf(o_lo.log10().floor()),
            10f64.powf(o_hi.log10().ceil()),
        )
    } else {
        (0.01, 1000.0)
    };

    let root = SVGBackend::new(path, (1200, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    let (body, _notes_area) = body.split_vertically(470);
    title.titled(
        "Sleepers: N tasks each sleep 1 s, then all are joined (median, bars: min–max)",
        ("sans-serif", 20),
    )?;
    let (left, right) = body.split_horizontally(600);
    let x_range = || (0.5f64..2.0e6f64).log_scale();

    // Left: total wall time, linear.
    let mut c = ChartBuilder::on(&left)
        .caption("Wall time (s)", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x_range(), 0.0f64..(wall_max * 1.08).ceil())?;
    c.configure_mesh()
        .x_desc("N (tasks), log scale")
        .y_desc("seconds")
        .x_label_formatter(&|x| n_label(*x))
        .draw()?;
    for (rt, pts) in &series {
        let col = color(rt);
        c.draw_series(LineSeries::new(
            pts.iter().map(|r| (r.0, r.1.med)),
            col.stroke_width(2),
        ))?
        .label(*rt)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(
            pts.iter()
                .map(|r| Circle::new((r.0, r.1.med), 3, col.filled())),
        )?;
        c.draw_series(
            pts.iter()
                .map(|r| PathElement::new(vec![(r.0, r.1.min), (r.0, r.1.max)], col)),
        )?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;

    // Right: overhead above the 1 s sleep, log scale.
    let mut c = ChartBuilder::on(&right)
        .caption("Overhead above 1 s (ms), log scale", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x_range(), (o_lo..o_hi).log_scale())?;
    c.configure_mesh()
        .x_desc("N (tasks), log scale")
        .y_desc("milliseconds")
        .x_label_formatter(&|x| n_label(*x))
        .y_label_formatter(&|y| trim_num(*y))
        .draw()?;
    let clamp = |v: f64| v.max(o_lo);
    for (rt, pts) in &series {
        let col = color(rt);
        c.draw_series(LineSeries::new(
            pts.iter().map(|r| (r.0, clamp(r.2.med))),
            col.stroke_width(2),
        ))?
        .label(*rt)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(
            pts.iter()
                .map(|r| Circle::new((r.0, clamp(r.2.med)), 3, col.filled())),
        )?;
        c.draw_series(
            pts.iter()
                .map(|r| PathElement::new(vec![(r.0, clamp(r.2.min)), (r.0, clamp(r.2.max))], col)),
        )?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    // Cells that failed or were not run, under the charts.
    let mut notes = Vec::new();
    for &rt in &rts {
        let failed: Vec<String> = NS
            .iter()
            .filter(|&&n| {
                let c = sleeper_cell(recs, rt, n);
                c.wall.is_none() && c.failure.is_some()
            })
            .map(|&n| n_label(n as f64))
            .collect();
        if !failed.is_empty() {
            notes.push(format!("{rt} failed at N = {}", failed.join(", ")));
        }
        let skipped: Vec<String> = NS
            .iter()
            .filter(|&&n| !sleeper_cell(recs, rt, n).tried)
            .map(|&n| n_label(n as f64))
            .collect();
        if !skipped.is_empty() {
            notes.push(format!("{rt} not run at N = {}", skipped.join(", ")));
        }
    }
    if !notes.is_empty() {
        root.draw(&Text::new(
            format!("Missing points: {}.", notes.join("; ")),
            (20, 500),
            ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
        ))?;
    }
    root.present()?;
    Ok(())
}

// ------------------------------------------------------------- echo

struct EchoCell {
    cpu_ns: Option<Stat>,
    user_ns: Option<Stat>,
    user_pct: Option<Stat>,
    rps: Option<Stat>,
    p50: Option<Stat>,
    p99: Option<Stat>,
    p999: Option<Stat>,
    errors: u64,
    failures: Vec<String>,
}

fn echo_cell(recs: &[Rec], server: &str, conns: u64, clk_tck: f64) -> EchoCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("server") == server && r.s("conns") == conns.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    // Nanoseconds per round trip of a CPU time given in clock ticks.
    let per_rt = |r: &Rec, ticks: f64| ticks / clk_tck * 1e9 / r.f("rt_total").max(1.0);
    EchoCell {
        // The scheduler's own nanosecond count where the run recorded it;
        // ticks (1/100 s) are too coarse for a partly idle server.
        cpu_ns: col(&|r| {
            let ns = r.f("oncpu_ns");
            if ns.is_finite() && ns > 0.0 {
                ns / r.f("rt_total").max(1.0)
            } else {
                per_rt(r, r.f("utime") + r.f("stime"))
            }
        }),
        user_ns: col(&|r| per_rt(r, r.f("utime"))),
        user_pct: col(&|r| {
            let t = r.f("utime") + r.f("stime");
            if t > 0.0 {
                100.0 * r.f("utime") / t
            } else {
                f64::NAN
            }
        }),
        rps: col(&|r| r.f("rps")),
        p50: col(&|r| r.f("p50_us")),
        p99: col(&|r| r.f("p99_us")),
        p999: col(&|r| r.f("p999_us")),
        errors: ok.iter().map(|r| r.f("errors").max(0.0) as u64).sum(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

/// Starts a per-server table row of the echo connection counts:
/// `| server | 1 conn | 64 conns | 512 conns |`, left open for more.
fn conns_header(w: &mut String) {
    let _ = write!(w, "| server |");
    for c in CONNS {
        let _ = write!(w, " {c} conn{} |", if c == 1 { "" } else { "s" });
    }
}

// ------------------------------------------------------------- http

/// The HTTP servers, in table order.
const HTTP_SERVERS: [&str; 2] = ["yieldloop", "hyper"];
/// Keep-alive connections per HTTP run.
const HTTP_CONNS: [u64; 2] = [64, 256];

struct HttpCell {
    rps: Option<Stat>,
    cpu_us: Option<Stat>,
    user_pct: Option<Stat>,
    p50: Option<Stat>,
    p99: Option<Stat>,
    errors: u64,
    failures: Vec<String>,
}

fn http_cell(recs: &[Rec], server: &str, conns: u64, clk_tck: f64) -> HttpCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("server") == server && r.s("conns") == conns.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    HttpCell {
        rps: col(&|r| r.f("rps")),
        // Microseconds of server CPU per request, over every request of the
        // run (warm-up included).
        cpu_us: col(&|r| {
            (r.f("utime") + r.f("stime")) / clk_tck * 1e6 / r.f("requests_total").max(1.0)
        }),
        user_pct: col(&|r| {
            let t = r.f("utime") + r.f("stime");
            if t > 0.0 {
                100.0 * r.f("utime") / t
            } else {
                f64::NAN
            }
        }),
        p50: col(&|r| r.f("p50_us")),
        p99: col(&|r| r.f("p99_us")),
        errors: ok.iter().map(|r| r.f("errors").max(0.0) as u64).sum(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

fn http_section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String, clk_tck: f64) {
    let _ = writeln!(w, "## HTTP servers\n");
    if let Some(skip) = recs.iter().find(|r| r.s("skipped") == "1") {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let load = m("http_load");
    let (gen, warmup) = if load == "wrk" {
        (
            format!(
                "`{}` with one thread (`wrk -t1 -c C -d {}s --latency`), which times every request \
                 of the run",
                m("http_load_version"),
                m("http_secs"),
            ),
            String::new(),
        )
    } else {
        (
            "`http_load` (`bench/src/bin/http_load.rs`: one thread on raw mio, `wrk` was not \
             installed)"
                .to_string(),
            format!(" after {} s of untimed load", m("http_warmup")),
        )
    };
    let _ = writeln!(
        w,
        "An HTTP/1.1 server on one thread: yieldloop runs the `http_server` recipe's \
         handler-based server (`recipes/src/http/`: `httparse`, one task per connection, \
         keep-alive, pipelining, a `Date` header formatted once a second) on one \
         scheduler; hyper 1.x serves the same routes on tokio `current_thread` (one \
         task per connection, `http1` with keep-alive). Both answer `GET /` with the \
         same 22-byte body and set `TCP_NODELAY`. The load is {gen}: C keep-alive \
         connections in a closed loop, each sending `GET /` and waiting for the whole \
         answer before the next. Server pinned with `{}`, load with `{}`. A fresh \
         server per run; {} runs per cell, {} s measured{warmup}.\n",
        m("pin_server"),
        m("pin_client"),
        m("http_reps"),
        m("http_secs"),
    );
    let _ = writeln!(
        w,
        "**Server CPU per request** is (utime + stime) of the server process, read \
         from `/proc/PID/stat` before the load starts and 0.2 s after it ends, divided \
         by every request answered in the run (the tick is 1/{} s).\n",
        m("clk_tck"),
    );
    if recs.is_empty() {
        let _ = writeln!(
            w,
            "No data: `bench/results/http.txt` is missing or empty (the stage did not \
             run).\n"
        );
        return;
    }
    let header = |w: &mut String| {
        let _ = write!(w, "| server |");
        for c in HTTP_CONNS {
            let _ = write!(w, " {c} conns |");
        }
        let _ = writeln!(w, "\n|---|{}", "---:|".repeat(HTTP_CONNS.len()));
    };
    let mut failures = Vec::new();
    /// Which figure of a cell a table shows.
    type Figure = fn(&HttpCell) -> Option<Stat>;
    let tables: [(&str, Figure); 2] = [
        ("Requests per second: median (min–max)", |c| c.rps),
        ("Server CPU per request (µs): median (min–max)", |c| {
            c.cpu_us
        }),
    ];
    for (title, what) in tables {
        let _ = writeln!(w, "### {title}\n");
        header(w);
        for s in HTTP_SERVERS {
            let _ = write!(w, "| {s} |");
            for c in HTTP_CONNS {
                let _ = write!(w, " {} |", cell(what(&http_cell(recs, s, c, clk_tck))));
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w, "### All HTTP measurements: median (min–max)\n");
    let _ = writeln!(
        w,
        "| server | conns | requests/s | CPU µs/request | user share of CPU (%) | p50 (µs) | p99 (µs) | client errors |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for s in HTTP_SERVERS {
        for c in HTTP_CONNS {
            let e = http_cell(recs, s, c, clk_tck);
            failures.extend(e.failures.iter().map(|f| format!("{s}, {c} conns: {f}")));
            let _ = writeln!(
                w,
                "| {s} | {c} | {} | {} | {} | {} | {} | {} |",
                cell(e.rps),
                cell(e.cpu_us),
                cell(e.user_pct),
                cell(e.p50),
                cell(e.p99),
                e.errors,
            );
        }
    }
    let _ = writeln!(w);
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed HTTP runs:\n");
        for f in failures {
            let _ = writeln!(w, "- {}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}

// ------------------------------------------------------------- thread-per-core scaling

/// Client threads of the scaling stage.
const SCALE_CLIENTS: [u64; 2] = [1, 2];
/// Server workers of the scaling stage.
const SCALE_WORKERS: [u64; 2] = [1, 2];

struct ScalingCell {
    rps: Option<Stat>,
    us_per_rt: Option<Stat>,
    vcs: Option<Stat>,
    ivcs: Option<Stat>,
    runs: usize,
    failures: Vec<String>,
}

fn scaling_cell(recs: &[Rec], clients: u64, workers: u64) -> ScalingCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("clients") == clients.to_string() && r.s("workers") == workers.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |k: &str| stat(ok.iter().map(|r| r.f(k)).collect());
    ScalingCell {
        rps: col("rps"),
        us_per_rt: col("server_us_per_rt"),
        vcs: col("vcs_per_rt"),
        ivcs: col("ivcs_per_rt"),
        runs: ok.len(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

fn scaling_section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Thread-per-core scaling\n");
    let _ = writeln!(
        w,
        "yieldloop's own echo server example (`examples/echo_server.rs`) with \
         `--workers 1` and `--workers 2`: one scheduler per thread, each accepting on \
         its own listener of the same port (`SO_REUSEPORT`), one task per connection. \
         The client is the `examples/echo_load.rs` example with 1 or 2 threads (a \
         yieldloop runtime with that many workers), keeping 64 connections in a closed \
         loop: each sends a 64-byte message and waits for the whole echo before sending \
         the next. Nothing is pinned. A fresh server is started for every run and \
         stopped with SIGINT afterwards; {} runs per cell, the cells interleaved.\n",
        m("scale_reps"),
    );
    let _ = writeln!(
        w,
        "Round trips are counted for {} s, after 0.3 s in which the connections are \
         opened. **Server CPU per round trip** is (utime + stime) of the server, read \
         by `echo_load` from `/proc/PID/stat` at the start and end of that window, \
         divided by the round trips counted in it (the tick is 1/100 s). **Context \
         switches per round trip** are `voluntary_ctxt_switches` and \
         `nonvoluntary_ctxt_switches` summed over `/proc/PID/task/*/status` of the \
         server right after the client exits (so since the server started, connection \
         set-up included), divided by the same round trips.\n",
        m("scale_secs"),
    );
    let _ = writeln!(
        w,
        "On a machine with 2 cores (this one has {}), the client cannot have a core of \
         its own while two workers run, so the client competes with the server for the \
         cores.\n",
        m("cores"),
    );
    if recs.is_empty() {
        let _ = writeln!(
            w,
            "No data: `bench/results/scaling.txt` is missing or empty (the stage did not \
             run).\n"
        );
        return;
    }
    let _ = writeln!(w, "### Median (min–max) over runs\n");
    let _ = writeln!(
        w,
        "| client threads | workers | round trips/s | server CPU per round trip (µs) | \
         voluntary context switches per round trip | involuntary context switches per \
         round trip | runs |\n|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut notes: Vec<String> = Vec::new();
    for clients in SCALE_CLIENTS {
        for workers in SCALE_WORKERS {
            let c = scaling_cell(recs, clients, workers);
            let mut runs = c.runs.to_string();
            if !c.failures.is_empty() {
                let mut idx = Vec::new();
                for f in &c.failures {
                    let text = format!("{clients} client thread(s), {workers} worker(s): {f}");
                    let i = match notes.iter().position(|n| *n == text) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(text);
                            notes.len()
                        }
                    };
                    if !idx.contains(&i) {
                        idx.push(i);
                    }
                }
                let idx: Vec<String> = idx.iter().map(ToString::to_string).collect();
                runs = format!("{runs}, {} failed [{}]", c.failures.len(), idx.join(", "));
            }
            let _ = writeln!(
                w,
                "| {clients} | {workers} | {} | {} | {} | {} | {runs} |",
                cell(c.rps),
                cell(c.us_per_rt),
                cell(c.vcs),
                cell(c.ivcs),
            );
        }
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "Workers 2 vs 1, from the medians:\n");
    for clients in SCALE_CLIENTS {
        let one = scaling_cell(recs, clients, 1);
        let two = scaling_cell(recs, clients, 2);
        let ratio = |a: Option<Stat>, b: Option<Stat>, unit: &str| match (a, b) {
            (Some(a), Some(b)) if b.med > 0.0 => format!(
                "{}{unit} vs {}{unit} (×{:.2})",
                num(a.med),
                num(b.med),
                a.med / b.med
            ),
            _ => "— (no successful runs to compare)".to_string(),
        };
        let _ = writeln!(
            w,
            "- {clients} client thread{}: server CPU per round trip {}; round trips/s {}.",
            if clients == 1 { "" } else { "s" },
            ratio(two.us_per_rt, one.us_per_rt, " µs"),
            ratio(two.rps, one.rps, ""),
        );
    }
    let _ = writeln!(w);
    if !notes.is_empty() {
        let _ = writeln!(w, "Failures:\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, n.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}

// ------------------------------------------------------------- hand-over

struct HandoverCell {
    ns: Option<Stat>,
    ops: Option<u64>,
    /// Why the runtime cannot do this benchmark.
    na: Option<String>,
    failure: Option<String>,
    tried: bool,
}

fn handover_cell(recs: &[Rec], rt: &str, bench: &str) -> HandoverCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("bench") == bench)
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok() && r.s("na") != "1").collect();
    HandoverCell {
        ns: stat(ok.iter().map(|r| r.f("ns_per_op")).collect()),
        ops: ok.iter().find_map(|r| r.s("ops").parse().ok()),
        na: mine
            .iter()
            .find(|r| r.ok() && r.s("na") == "1")
            .map(|r| r.reason.clone().unwrap_or_else(|| "not applicable".into())),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
    }
}

fn handover_section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Hand-over micro-benchmarks\n");
    let _ = writeln!(
        w,
        "How long each runtime takes to pass control (with a value or a lock) from \
         one task to another, all on one thread: yieldloop's scheduler, tokio \
         `current_thread`, may with `set_workers(1)` and everything spawned from inside \
         one coroutine, Go with `GOMAXPROCS=1` (see above). Every measurement is a separate process (`handover --runtime RT \
         --bench B`) that runs a warm-up round of a tenth of the ops and then the \
         measured round; {} runs per cell, interleaved. The benchmarks:\n",
        m("handover_reps"),
    );
    let _ = writeln!(
        w,
        "- **channel ping-pong**: task A sends `i` on one unbounded channel, task B \
         receives it and sends it back on a second one, A waits for the reply; per \
         one-way hand-over (a round trip is two). yieldloop `sync::local::channel`, tokio \
         `sync::mpsc::unbounded_channel`, may `sync::mpsc::channel`, Go two unbuffered \
         channels (so a send also waits for the receiver).\n\
         - **bounded channel**: a producer task sends 1,000,000 integers through a \
         channel of capacity 64 to a consumer task; per message. yieldloop \
         `sync::local::sync_channel(64)`, tokio `sync::mpsc::channel(64)`, Go \
         `make(chan uint64, 64)`.\n\
         - **mutex hand-over**: two tasks each loop: take the lock, yield while \
         holding it (so the other task queues on it), release it, which hands it to the \
         queued task; per hand-over (the yield is included). yieldloop `sync::Mutex`, \
         tokio `sync::Mutex`, may `sync::Mutex`, Go `sync.Mutex` with \
         `runtime.Gosched` (which lets the running goroutine take a just-released lock \
         ahead of the queued one, so not every op there is a hand-over).\n\
         - **yield**: two tasks each call `yield_now` in a loop (yieldloop \
         `yield_now`, tokio `task::yield_now`, may `coroutine::yield_now`, Go \
         `runtime.Gosched`); per yield.\n\
         - **spawn + join**: one task spawns a task that returns its argument and joins \
         it, one after the other; per spawn and join. Go: a `go` statement whose \
         goroutine sends its argument on a channel of its own (capacity 1), and the \
         receive.\n\
         - **scope**: a task runs 1,000 tasks that each add their argument to a counter \
         and waits for them all, over and over; per task. yieldloop `scope` (the tasks \
         borrow the counter), tokio a `JoinSet`, may `coroutine::scope`, Go 1,000 \
         `go` statements and a `sync.WaitGroup`.\n"
    );
    let _ = writeln!(w, "### Nanoseconds per op: median (min–max)\n");
    let _ = write!(w, "| benchmark | one op is | ops per run |");
    for rt in HANDOVER_RUNTIMES {
        let _ = write!(w, " {rt} |");
    }
    let _ = writeln!(
        w,
        "\n|---|---|---:|{}",
        "---:|".repeat(HANDOVER_RUNTIMES.len())
    );
    let mut notes: Vec<String> = Vec::new();
    let mut note = |text: String| match notes.iter().position(|n| *n == text) {
        Some(i) => i + 1,
        None => {
            notes.push(text);
            notes.len()
        }
    };
    for (bench, title, op) in HANDOVER_BENCHES {
        let cells: Vec<HandoverCell> = HANDOVER_RUNTIMES
            .iter()
            .map(|rt| handover_cell(recs, rt, bench))
            .collect();
        let ops = cells
            .iter()
            .find_map(|c| c.ops)
            .map_or_else(|| "—".to_string(), thousands);
        let _ = write!(w, "| {title} | {op} | {ops} |");
        for (rt, c) in HANDOVER_RUNTIMES.iter().zip(&cells) {
            let text = if let Some(s) = c.ns {
                cell(Some(s))
            } else if let Some(reason) = &c.na {
                format!("n/a [{}]", note(format!("{rt}, {title}: {reason}")))
            } else if let Some(reason) = &c.failure {
                format!("failed [{}]", note(format!("{rt}, {title}: {reason}")))
            } else if c.tried {
                "—".into()
            } else if *rt == "go" && m("go").starts_with("missing") {
                let why = m("go");
                let why = why.trim_start_matches("missing").trim();
                format!(
                    "not measured [{}]",
                    note(format!("go: {NOT_MEASURED_GO} {why}"))
                )
            } else {
                "not run".into()
            };
            let _ = write!(w, " {text} |");
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
    if !notes.is_empty() {
        let _ = writeln!(w, "Notes and failures:\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, n.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}

// ------------------------------------------------------------- timer lateness

struct LatenessCell {
    /// One statistic per entry of `LATENESS_COLUMNS`.
    cols: Vec<Option<Stat>>,
    /// Early wake-ups summed over the successful runs, and the largest one (µs).
    early: u64,
    max_early_us: f64,
    runs: usize,
    failure: Option<String>,
    tried: bool,
}

fn lateness_cell(recs: &[Rec], rt: &str, variant: &str) -> LatenessCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("variant") == variant)
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    LatenessCell {
        cols: LATENESS_COLUMNS
            .iter()
            .map(|(k, _)| stat(ok.iter().map(|r| r.f(k)).collect()))
            .collect(),
        early: ok.iter().map(|r| r.f("early").max(0.0) as u64).sum(),
        max_early_us: ok
            .iter()
            .map(|r| r.f("max_early_us"))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max),
        runs: ok.len(),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
    }
}

fn lateness_section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(
        w,
        "## Timer lateness
"
    );
    let _ = writeln!(
        w,
        "How late a sleeping task runs again after its deadline. {} tasks are \
         spawned at once; each picks its own delay, uniform in 0–{} ms (a xorshift64 \
         generator with a fixed seed, so every run and runtime draws the same delays), \
         computes `deadline = Instant::now() + delay` inside the task, sleeps until the \
         deadline and records `Instant::now() − deadline` as soon as it runs: yieldloop \
         `sleep_until`, tokio `time::sleep_until` (`current_thread` with `enable_time`), \
         may `coroutine::sleep` of the remaining time (`set_workers(1)`, everything \
         spawned from inside one coroutine; may keeps its timers on a timer thread of \
         its own, which hands expired coroutines back to the worker). Percentiles are \
         nearest-rank over the tasks of one run; each cell is the median over {} runs \
         (min–max in brackets), runtimes and variants interleaved, one process per run.\n",
        m("lateness_tasks"),
        m("lateness_max_ms"),
        m("lateness_reps"),
    );
    let rt_state = m("lateness_rt");
    let _ = writeln!(
        w,
        "The machine is shared, and at normal priority CPU contention from other \
         processes can dominate the tail. The **realtime priority** variant runs the same \
         process under `chrt -f 50` (`SCHED_FIFO`, inherited by all its threads), so that \
         ordinary processes no longer preempt it and what remains is mostly the runtime's \
         own timer mechanism. {}\n",
        if rt_state == "yes" {
            "chrt worked on this machine, so both variants ran.".to_string()
        } else {
            let why = rt_state
                .strip_prefix("no (")
                .and_then(|r| r.strip_suffix(')'))
                .unwrap_or(&rt_state);
            format!("That variant was skipped on this run: {why}.")
        },
    );
    let _ = writeln!(
        w,
        "A correct runtime never wakes a task before its deadline: such early \
         wake-ups are counted separately (their lateness counts as 0 in the percentiles).\n"
    );
    let _ = writeln!(w, "### Lateness (µs): median (min–max) over runs\n");
    let _ = write!(w, "| runtime | priority |");
    for (_, title) in LATENESS_COLUMNS {
        let _ = write!(w, " {title} |");
    }
    let _ = writeln!(
        w,
        " early wake-ups | runs |\n|---|---|{}---:|---:|",
        "---:|".repeat(LATENESS_COLUMNS.len())
    );
    let mut notes: Vec<String> = Vec::new();
    for (variant, label) in LATENESS_VARIANTS {
        for rt in LATENESS_RUNTIMES {
            let c = lateness_cell(recs, rt, variant);
            if !c.tried {
                if variant == "rt" && rt_state != "yes" {
                    continue;
                }
                let _ = writeln!(
                    w,
                    "| {rt} | {label} |{} — | 0 |",
                    " not run |".repeat(LATENESS_COLUMNS.len())
                );
                continue;
            }
            let _ = write!(w, "| {rt} | {label} |");
            for s in &c.cols {
                let _ = write!(w, " {} |", cell(*s));
            }
            let early = if c.runs == 0 {
                "—".to_string()
            } else if c.early == 0 {
                "0".to_string()
            } else {
                format!("**{}** (up to {} µs early)", c.early, num(c.max_early_us))
            };
            let mut runs = c.runs.to_string();
            if let Some(reason) = &c.failure {
                let text = format!("{rt}, {label}: {reason}");
                let idx = match notes.iter().position(|n| *n == text) {
                    Some(i) => i + 1,
                    None => {
                        notes.push(text);
                        notes.len()
                    }
                };
                runs = format!("{runs}, failed [{idx}]");
            }
            let _ = writeln!(w, " {early} | {runs} |");
        }
    }
    let _ = writeln!(w);
    if !notes.is_empty() {
        let _ = writeln!(w, "Failures (the last line the process printed):\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, n.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "Commands (one process per run, from the repository root):\n"
    );
    let args = format!(
        "--tasks {} --max-ms {}",
        m("lateness_tasks"),
        m("lateness_max_ms")
    );
    let _ = writeln!(w, "```sh");
    for rt in LATENESS_RUNTIMES {
        let _ = writeln!(
            w,
            "timeout {} bench/target/release/lateness --runtime {rt} {args}",
            m("lateness_timeout")
        );
    }
    if rt_state == "yes" {
        for rt in LATENESS_RUNTIMES {
            let _ = writeln!(
                w,
                "timeout {} chrt -f 50 bench/target/release/lateness --runtime {rt} {args}",
                m("lateness_timeout")
            );
        }
    }
    let _ = writeln!(w, "```\n");
}

// ------------------------------------------------------------- Go and the stackful floor

/// What a cell says for Go when the go tool was missing (or its build failed).
const NOT_MEASURED_GO: &str = "not measured: go missing";

/// Why Go was not measured, if it was not: the `go=` line of meta.txt is
/// `missing (reason)`, or absent for results from before Go was added.
fn go_missing(meta: &BTreeMap<String, String>) -> Option<String> {
    match meta.get("go") {
        Some(v) => v.strip_prefix("missing").map(|why| {
            why.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string()
        }),
        None => Some("the results have no Go line".into()),
    }
}

/// The echo servers to show: Go only when it was measured.
fn echo_servers(go_missing: bool) -> Vec<&'static str> {
    SERVERS
        .iter()
        .copied()
        .filter(|s| !(go_missing && *s == "go"))
        .collect()
}

/// System calls per round trip at 1 connection, one run per server counted
/// by the kernel's tracepoints; left out when the run could not count them.
fn syscalls_table(w: &mut String, recs: &[Rec], servers: &[&str]) {
    if recs.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### System calls per round trip at 1 connection\n\n\
         One run per server, 2 s at 1 connection, every system call of every server \
         thread counted by the kernel's tracepoints (`perf stat -e \
         raw_syscalls:sys_enter,syscalls:sys_enter_NAME -p PID`), divided by the \
         round trips. Each round trip is a sleep in the kernel and a wake-up; *other* \
         is every call not named.\n"
    );
    let named = [
        "epoll_wait",
        "epoll_pwait",
        "recvfrom",
        "read",
        "sendto",
        "write",
        "futex",
    ];
    let _ = write!(w, "| server |");
    for n in named {
        let _ = write!(w, " {n} |");
    }
    let _ = writeln!(
        w,
        " other | total |\n|---|{}---:|---:|",
        "---:|".repeat(named.len())
    );
    for &s in servers {
        let Some(r) = recs.iter().find(|r| r.s("server") == s && r.ok()) else {
            continue;
        };
        let rt = r.f("rt_total").max(1.0);
        let total = r.f("total") / rt;
        let mut other = total;
        let _ = write!(w, "| {s} |");
        for n in named {
            let per = r.f(n) / rt;
            let per = if per.is_finite() { per } else { 0.0 };
            other -= per;
            let _ = write!(w, " {per:.2} |");
        }
        let _ = writeln!(w, " {:.2} | {total:.2} |", other.max(0.0));
    }
    let _ = writeln!(w);
}

/// One target: what is compared, yieldloop's figure, the yardstick's, and
/// how far yieldloop may be from it (a ratio yieldloop / yardstick).
struct Target {
    what: &'static str,
    ours: Option<f64>,
    theirs: Option<f64>,
    yardstick: &'static str,
    max_ratio: f64,
    unit: &'static str,
}

/// The speed targets yieldloop holds itself to, met or not in this run.
fn targets_section(w: &mut String, recs: &Results, clk_tck: f64) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    let echo = |server, conns| echo_cell(&recs.echo, server, conns, clk_tck);
    let ho = |rt, bench| med(handover_cell(&recs.handover, rt, bench).ns);
    let sl = |rt, n| sleeper_cell(&recs.sleepers, rt, n);
    let per_task = |rt| {
        let big = med(sl(rt, 1_000_000).hwm_mib)?;
        let one = med(sl(rt, 1).hwm_mib)?;
        Some((big - one) * 1024.0 * 1024.0 / 1e6)
    };
    let targets = [
        Target {
            what: "server CPU per round trip, 1 connection",
            ours: med(echo("yieldloop", 1).cpu_ns),
            theirs: med(echo("mio", 1).cpu_ns),
            yardstick: "mio loop",
            max_ratio: 1.1,
            unit: "ns",
        },
        Target {
            what: "p99 latency, 1 connection",
            ours: med(echo("yieldloop", 1).p99),
            theirs: med(echo("tokio", 1).p99),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "µs",
        },
        Target {
            what: "channel ping-pong, one hand-over",
            ours: ho("yieldloop", "pingpong"),
            theirs: ho("tokio", "pingpong"),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
        },
        Target {
            what: "echo user CPU per round trip, 64 connections",
            ours: med(echo("yieldloop", 64).user_ns),
            theirs: med(echo("tokio", 64).user_ns),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
        },
        Target {
            what: "echo user CPU per round trip, 512 connections",
            ours: med(echo("yieldloop", 512).user_ns),
            theirs: med(echo("tokio", 512).user_ns),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
        },
        Target {
            what: "1,000,000 sleepers, overhead above the 1 s sleep",
            ours: med(sl("yieldloop", 1_000_000).over_ms),
            theirs: med(sl("go", 1_000_000).over_ms),
            yardstick: "Go",
            max_ratio: 1.0,
            unit: "ms",
        },
        Target {
            what: "1,000,000 sleepers, resident memory per task",
            ours: per_task("yieldloop"),
            theirs: per_task("floor"),
            yardstick: "the stackful floor",
            max_ratio: 1.05,
            unit: "bytes",
        },
    ];
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "The speed targets yieldloop holds itself to, checked against this run's \
         medians (the tables below have the ranges). A target is met when \
         yieldloop's figure is at most the yardstick's times the allowed ratio.\n"
    );
    let _ = writeln!(
        w,
        "| target | yieldloop | yardstick | its figure | ratio | allowed | met |\n|---|---:|---|---:|---:|---:|---|"
    );
    for t in &targets {
        let (ours, theirs) = match (t.ours, t.theirs) {
            (Some(a), Some(b)) if b > 0.0 => (a, b),
            _ => {
                let _ = writeln!(
                    w,
                    "| {} | | {} | | | ≤ {:.2} | not measured |",
                    t.what, t.yardstick, t.max_ratio
                );
                continue;
            }
        };
        let ratio = ours / theirs;
        let met = if ratio <= t.max_ratio { "yes" } else { "no" };
        let _ = writeln!(
            w,
            "| {} | {} {} | {} | {} {} | {ratio:.2} | ≤ {:.2} | {met} |",
            t.what,
            num(ours),
            t.unit,
            t.yardstick,
            num(theirs),
            t.unit,
            t.max_ratio
        );
    }
    let _ = writeln!(w);
}

/// How Go was run, and what the stackful floor is.
fn go_and_floor_section(w: &mut String, meta: &BTreeMap<String, String>) {
    let _ = writeln!(w, "## Go and the stackful floor\n");
    match go_missing(meta) {
        None => {
            let _ = writeln!(
                w,
                "**Go** ({}) is the stackful peer: goroutines are small growable stacks \
                 scheduled by Go's runtime. `bench/go/` holds one program, standard library \
                 only, built with `go build` and run with `GOMAXPROCS=1` (one P, for parity \
                 with the one scheduler thread of the others; the Go runtime still keeps \
                 threads of its own for timers, the garbage collector and blocking system \
                 calls, and their CPU time is counted). It does the same workloads with the \
                 same output: the sleepers (`time.Sleep`, joined with a `sync.WaitGroup`, the \
                 numbers in a slice), the echo server (a goroutine per connection, driven by \
                 the same `loadgen`) and the hand-over benchmarks (channels, `sync.Mutex`, \
                 `runtime.Gosched`, `go` statements).\n",
                meta.get("go").map_or("?", String::as_str),
            );
        }
        Some(why) => {
            let _ = writeln!(
                w,
                "**Go**, the stackful peer, was not measured in this run: {why}. \
                 `bench/run.sh` builds `bench/go/` with `go build` when the go tool is \
                 installed (`apt-get install golang-go`) and runs it with `GOMAXPROCS=1`; \
                 its cells say \"{NOT_MEASURED_GO}\".\n"
            );
        }
    }
    let _ = writeln!(
        w,
        "**floor** (`bench/src/bin/sleepers_floor.rs`, sleepers only) is the least any \
         design that gives each task a stack of its own pays on this machine: no runtime, \
         just `corosensei` coroutines in a slab, a binary heap of deadlines and a loop \
         that sleeps with `thread::sleep` until the earliest one. Each coroutine has a \
         guarded stack of yieldloop's default size (64 KiB) from a pool carved like \
         yieldloop's (16 MiB `MAP_NORESERVE` chunks, a guard page below each stack, \
         stacks reused), sleeps by yielding its deadline to the loop, then returns its \
         number. What it costs is mostly the stack: the first touch of its top page (the \
         coroutine's first frame) is a page fault, at least 4 KiB resident per task. The \
         distance from yieldloop to the floor is what yieldloop's runtime adds.\n"
    );
}

/// (VmHWM(N) − VmHWM(1)) / N at every N, from the medians.
fn per_task_at_each_n(w: &mut String, recs: &[Rec], rts: &[&str], go_missing: bool) {
    let _ = writeln!(w, "### Resident memory per task at each N (bytes)\n");
    let _ = writeln!(
        w,
        "(VmHWM at N − VmHWM at N = 1) / N, from the medians; the fixed cost of each \
         runtime weighs on the small N.\n"
    );
    let _ = write!(w, "| runtime |");
    for n in &NS[1..] {
        let _ = write!(w, " N = {} |", thousands(*n));
    }
    let _ = writeln!(w, "\n|---|{}", "---:|".repeat(NS.len() - 1));
    for &rt in rts {
        let base = sleeper_cell(recs, rt, 1).hwm_mib;
        let _ = write!(w, "| {rt} |");
        for &n in &NS[1..] {
            let c = sleeper_cell(recs, rt, n);
            let text = match (base, c.hwm_mib) {
                (Some(b), Some(t)) => num((t.med - b.med) * 1024.0 * 1024.0 / n as f64),
                _ if rt == "go" && go_missing => NOT_MEASURED_GO.into(),
                _ if c.failure.is_some() => "failed".into(),
                _ if c.tried => "—".into(),
                _ => "not run".into(),
            };
            let _ = write!(w, " {text} |");
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
}

/// Cells where some tasks finished before the last one was started (the
/// `early=` field, which only Go reports: its scheduler preempts the
/// spawning goroutine), so the peak memory there is not that of N tasks at
/// once.
fn early_finish_notes(w: &mut String, recs: &[Rec], rts: &[&str]) {
    let mut notes = Vec::new();
    for &rt in rts {
        for n in NS {
            let early = stat(
                recs.iter()
                    .filter(|r| r.ok() && r.s("runtime") == rt && r.s("n") == n.to_string())
                    .filter(|r| r.fields.contains_key("early"))
                    .map(|r| r.f("early"))
                    .collect(),
            );
            if let Some(e) = early.filter(|e| e.max > 0.0) {
                notes.push(format!(
                    "{rt} at N = {}: {} of the tasks (median; {}–{}) had already finished",
                    thousands(n),
                    thousands(e.med as u64),
                    thousands(e.min as u64),
                    thousands(e.max as u64),
                ));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "**Not all N at once.** Go preempts the spawning goroutine (about every 10 ms) \
         and runs the new goroutines in between, so where spawning takes longer than \
         the one-second sleep, the first goroutines finish, and their stacks are \
         reused, before the last ones are started: {}. There the peak memory is that of \
         fewer than N goroutines at once, and the bytes per task above are too low by \
         about that share. The other runtimes start no task before the spawning loop \
         ends.\n",
        notes.join("; "),
    );
}

// ------------------------------------------------------------- markdown

fn markdown(
    recs: &Results,
    meta: &BTreeMap<String, String>,
    commands: &str,
    svg_rel: &str,
) -> String {
    let (sleepers, echo, scaling, handover, lateness) = (
        &recs.sleepers[..],
        &recs.echo[..],
        &recs.scaling[..],
        &recs.handover[..],
        &recs.lateness[..],
    );
    let m = |k: &str| meta.get(k).map_or("?", String::as_str);
    let clk_tck: f64 = m("clk_tck").parse().unwrap_or(100.0);
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "Generated by `bench/run.sh` on {} (total run time {} s, of which {} s building). \
         Do not edit by hand: run the script again.\n",
        m("date"),
        m("total_s"),
        m("build_s"),
    );
    let _ = writeln!(w, "## Machine\n");
    let _ = writeln!(w, "| | |\n|---|---|");
    for (k, label) in [
        ("kernel", "Kernel"),
        ("cpu", "CPU model"),
        ("cores", "Cores"),
        ("mem", "Memory"),
        ("rustc", "rustc"),
        ("python", "Python"),
        ("go", "Go"),
        ("yieldloop", "yieldloop commit"),
        ("versions", "Compared crates"),
        ("max_map_count", "vm.max_map_count"),
        ("thp", "Transparent huge pages"),
        ("load_start", "Load average at start (1/5/15 min)"),
        ("load_end", "Load average at end"),
    ] {
        if let Some(v) = meta.get(k) {
            let _ = writeln!(w, "| {label} | {} |", v.replace('|', "\\|"));
        }
    }
    let _ = writeln!(
        w,
        "\nThe machine is shared: other processes (builds) may run at the same time, \
         which shows up as spread between runs (the min–max ranges) and in the load \
         averages above. Wall times and latencies suffer from that; CPU time per \
         round trip much less.\n"
    );

    // ---- Go and the stackful floor
    let go_missing = go_missing(meta);
    targets_section(w, recs, clk_tck);
    go_and_floor_section(w, meta);

    // ---- sleepers
    let mut rts = runtimes_present(sleepers);
    if go_missing.is_some() && !rts.contains(&"go") {
        rts = RUNTIMES
            .iter()
            .copied()
            .filter(|rt| *rt == "go" || rts.contains(rt))
            .collect();
    }
    let _ = writeln!(w, "## Sleepers\n");
    let _ = writeln!(
        w,
        "The workload of the generators article: N tasks each sleep one second and \
         then return a pseudo-random number; all are joined. Each runtime runs on one \
         thread (tokio `current_thread`, may with `set_workers(1)` and everything spawned \
         from inside one coroutine, yieldloop's single scheduler); `threads` is one OS \
         thread per task (only up to N = 10,000); `asyncio` is CPython's event loop with \
         `asyncio.create_task` + `gather`; `floor` and `go` are described above. \
         Every measurement is a separate process. Runs \
         per cell: {} for N ≤ 10,000, {} for 100,000, {} for 1,000,000 ({} for asyncio, \
         the slowest there); a cell that fails once is not repeated.\n",
        m("reps"),
        m("reps_100k"),
        m("reps_1m"),
        m("reps_1m_asyncio"),
    );
    let _ = writeln!(w, "![time vs N]({svg_rel})\n");

    let mut footnotes: Vec<String> = Vec::new();
    let table = |w: &mut String,
                 title: &str,
                 what: &dyn Fn(&SleeperCell) -> Option<Stat>,
                 footnotes: &mut Vec<String>| {
        let _ = writeln!(w, "### {title}\n");
        let _ = write!(w, "| runtime |");
        for n in NS {
            let _ = write!(w, " N = {} |", thousands(n));
        }
        let _ = writeln!(w, "\n|---|{}", "---:|".repeat(NS.len()));
        for &rt in &rts {
            let _ = write!(w, "| {rt} |");
            for n in NS {
                let c = sleeper_cell(sleepers, rt, n);
                let text = if let Some(s) = what(&c) {
                    cell(Some(s))
                } else if let Some(reason) = &c.failure {
                    let note = format!("{rt}, N = {}: {reason}", thousands(n));
                    let idx = match footnotes.iter().position(|f| *f == note) {
                        Some(i) => i + 1,
                        None => {
                            footnotes.push(note);
                            footnotes.len()
                        }
                    };
                    format!("failed [{idx}]")
                } else if c.tried {
                    "—".into()
                } else if rt == "go" && go_missing.is_some() {
                    NOT_MEASURED_GO.into()
                } else {
                    "not run".into()
                };
                let _ = write!(w, " {text} |");
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    };
    table(
        w,
        "Overhead above the 1 s sleep (ms): median (min–max)",
        &|c| c.over_ms,
        &mut footnotes,
    );
    table(
        w,
        "Wall time, first spawn to last join (s): median (min–max)",
        &|c| c.wall,
        &mut footnotes,
    );
    table(
        w,
        "Time spent spawning the N tasks (ms): median (min–max)",
        &|c| c.spawn_ms,
        &mut footnotes,
    );
    table(
        w,
        "Peak resident memory, VmHWM (MiB): median (min–max)",
        &|c| c.hwm_mib,
        &mut footnotes,
    );
    table(
        w,
        "Memory mappings at the peak (lines of /proc/self/maps): median (min–max)",
        &|c| c.maps,
        &mut footnotes,
    );

    // Bytes per task from the largest N that worked.
    let _ = writeln!(w, "### Resident memory per task\n");
    let _ = writeln!(
        w,
        "(VmHWM at the largest N that completed − VmHWM at N = 1) / N, from the medians.\n"
    );
    let _ = writeln!(
        w,
        "| runtime | largest N | bytes per task |\n|---|---:|---:|"
    );
    for &rt in &rts {
        let base = sleeper_cell(sleepers, rt, 1).hwm_mib;
        let top = NS
            .iter()
            .rev()
            .filter(|&&n| n > 1)
            .find_map(|&n| sleeper_cell(sleepers, rt, n).hwm_mib.map(|s| (n, s)));
        if let (Some(b), Some((n, t))) = (base, top) {
            let per = (t.med - b.med) * 1024.0 * 1024.0 / n as f64;
            let _ = writeln!(w, "| {rt} | {} | {} |", thousands(n), num(per));
        } else if rt == "go" && go_missing.is_some() {
            let _ = writeln!(w, "| go | {NOT_MEASURED_GO} | |");
        }
    }
    let _ = writeln!(w);
    per_task_at_each_n(w, sleepers, &rts, go_missing.is_some());
    early_finish_notes(w, sleepers, &rts);
    if !footnotes.is_empty() {
        let _ = writeln!(w, "Failures (the last line the process printed):\n");
        for (i, f) in footnotes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
        if footnotes
            .iter()
            .any(|f| f.contains("Cannot allocate memory"))
        {
            let _ = writeln!(
                w,
                "An `ENOMEM` from `mmap`/`mprotect` with most of the RAM free usually means the \
                 process reached `vm.max_map_count` ({}) mappings: compare the mapping counts \
                 above (a separately mapped stack with an `mprotect`-ed guard page costs two).\n",
                m("max_map_count"),
            );
        }
    }

    // ---- echo
    let _ = writeln!(w, "## Echo servers\n");
    let _ = writeln!(
        w,
        "Each server runs on one thread (yieldloop's scheduler; tokio `current_thread`; \
         may with one worker; a hand-written edge-triggered mio loop as the floor), one \
         task per connection, a 4 KiB read buffer, `TCP_NODELAY`. The client \
         (`loadgen`, one thread on raw mio) keeps C connections in a closed loop: each \
         sends a 64-byte message and waits for the whole echo before sending the next. \
         Go runs a goroutine per connection with `GOMAXPROCS=1` (see above). Server \
         pinned with `{}`, client with `{}`. A fresh server is started for every \
         run; {} runs per cell, {} s measured after {} s of warm-up.\n",
        m("pin_server"),
        m("pin_client"),
        m("echo_reps"),
        m("echo_secs"),
        m("echo_warmup"),
    );
    let _ = writeln!(
        w,
        "**Server CPU per round trip** is the time every thread of the server process \
         ran, summed from `/proc/PID/task/*/schedstat` (nanoseconds, user and kernel \
         together) before the client starts and 0.2 s after it exits, divided by \
         every round trip the client completed (warm-up included, so connection \
         set-up and tear-down are amortised in). The 1-connection numbers, where the \
         server is partly idle, also carry its sleep/wake-up cost per message. The \
         user share and user CPU below come from utime and stime in \
         `/proc/PID/stat`, whose tick is 1/{} s.\n",
        m("clk_tck"),
    );
    let _ = writeln!(w, "### Server CPU per round trip (ns): median (min–max)\n");
    conns_header(w);
    let _ = writeln!(w, " p99 at 1 conn (µs) |\n|---|---:|---:|---:|---:|");
    let servers = echo_servers(go_missing.is_some());
    let mut echo_failures = Vec::new();
    for &s in &servers {
        let _ = write!(w, "| {s} |");
        for c in CONNS {
            let e = echo_cell(echo, s, c, clk_tck);
            echo_failures.extend(e.failures.iter().map(|f| format!("{s}, {c} conns: {f}")));
            let _ = write!(w, " {} |", cell(e.cpu_ns));
        }
        let _ = writeln!(w, " {} |", cell(echo_cell(echo, s, 1, clk_tck).p99));
    }
    let _ = writeln!(w);
    if let Some(why) = &go_missing {
        let _ = writeln!(w, "go: {NOT_MEASURED_GO} ({why}).\n");
    }
    let _ = writeln!(
        w,
        "**Why the 1-connection column is several times the others.** With one \
         connection in a closed loop, the server has nothing to do between an echo and \
         the next message: after every echo it blocks in `epoll_wait`, and the next \
         message has to wake it, a sleep and a wake-up (two context switches) per round \
         trip. With 64 or 512 connections, messages arrive while the server is still \
         busy, one `epoll_wait` returns many of them, and the server seldom sleeps, so \
         that cost is shared among many round trips. Sleeping and waking is kernel \
         time, the same mechanism for every server; it is costly, more so on a virtual \
         machine, and it varies a lot from run to run. So the 1-connection figures say \
         more about the machine than about the servers: read them with their min–max \
         ranges, which are usually wide and overlap, and read little into the order of \
         the servers, which can change from one run of `bench/run.sh` to the next. The \
         last table gives the user share of CPU, and the user CPU table below leaves \
         the kernel's share out.\n"
    );
    let _ = writeln!(
        w,
        "### Server user CPU per round trip (ns): median (min–max)\n\n\
         utime alone: the time the server spends in its own code (the runtime and \
         the echo loop), without the kernel's share of the system calls, which is \
         the same work for every server. In brackets, the median over the mio loop's.\n"
    );
    conns_header(w);
    let _ = writeln!(w, "\n|---|---:|---:|---:|");
    for &s in &servers {
        let _ = write!(w, "| {s} |");
        for c in CONNS {
            let mine = echo_cell(echo, s, c, clk_tck).user_ns;
            let floor = echo_cell(echo, "mio", c, clk_tck).user_ns;
            let ratio = match (&mine, &floor) {
                (Some(a), Some(b)) if b.med > 0.0 => format!(" [×{:.2}]", a.med / b.med),
                _ => String::new(),
            };
            let _ = write!(w, " {}{ratio} |", cell(mine));
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
    syscalls_table(w, &recs.syscalls, &servers);
    let _ = writeln!(w, "### All echo measurements: median (min–max)\n");
    let _ = writeln!(
        w,
        "| server | conns | round trips/s | CPU ns/round trip | user share of CPU (%) | p50 (µs) | p99 (µs) | p99.9 (µs) | client errors |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &s in &servers {
        for c in CONNS {
            let e = echo_cell(echo, s, c, clk_tck);
            let _ = writeln!(
                w,
                "| {s} | {c} | {} | {} | {} | {} | {} | {} | {} |",
                cell(e.rps),
                cell(e.cpu_ns),
                cell(e.user_pct),
                cell(e.p50),
                cell(e.p99),
                cell(e.p999),
                e.errors,
            );
        }
    }
    let _ = writeln!(w);
    if !echo_failures.is_empty() {
        let _ = writeln!(w, "Failed echo runs:\n");
        let mut counted: Vec<(String, usize)> = Vec::new();
        for f in echo_failures {
            match counted.iter_mut().find(|(g, _)| *g == f) {
                Some((_, k)) => *k += 1,
                None => counted.push((f, 1)),
            }
        }
        for (f, k) in counted {
            let times = if k > 1 {
                format!(" ({k} runs)")
            } else {
                String::new()
            };
            let _ = writeln!(w, "- {}{times}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }

    // ---- http
    http_section(w, &recs.http, &|k| m(k).to_string(), clk_tck);

    // ---- thread-per-core scaling
    scaling_section(w, scaling, &|k| m(k).to_string());

    // ---- hand-over
    handover_section(w, handover, &|k| m(k).to_string());

    // ---- timer lateness
    lateness_section(w, lateness, &|k| m(k).to_string());

    // ---- commands
    let _ = writeln!(w, "## Commands\n");
    let _ = writeln!(
        w,
        "Everything above comes from one `bench/run.sh` (run from the repository \
         root or anywhere else). It builds `bench/` (its own cargo crate, target dir \
         `bench/target`) and yieldloop's `echo_server` and `echo_load` examples in \
         release mode and runs:\n"
    );
    let _ = writeln!(w, "```sh\n{}```\n", commands);
    let _ = writeln!(
        w,
        "Raw results are written to `bench/results/` (not committed); this page and \
         `docs/img/sleepers.svg` are rendered from them by \
         `bench/target/release/report --results bench/results --md docs/benchmarks.md --svg docs/img/sleepers.svg`. \
         Knobs (environment variables): `REPS`, `REPS_100K`, `REPS_1M`, `ECHO_REPS`, \
         `ECHO_SECS`, `ECHO_WARMUP`, `CELL_TIMEOUT`, `SLEEPERS_NS`, `REPS_1M_ASYNCIO`, \
         `HANDOVER_REPS`, `HANDOVER_TIMEOUT`, `LATENESS_REPS`, `LATENESS_TASKS`, \
         `LATENESS_MAX_MS`, `LATENESS_TIMEOUT`, `HTTP_REPS`, `HTTP_SECS`, `HTTP_WARMUP`, \
         `HTTP_LOADGEN`, `SCALE_REPS`, `SCALE_SECS`; this run used \
         REPS={}, REPS_100K={}, REPS_1M={}, \
         REPS_1M_ASYNCIO={}, ECHO_REPS={}, ECHO_SECS={}, ECHO_WARMUP={}, HANDOVER_REPS={}, \
         HANDOVER_TIMEOUT={}, LATENESS_REPS={}, LATENESS_TASKS={}, LATENESS_MAX_MS={}, \
         LATENESS_TIMEOUT={}, HTTP_REPS={}, HTTP_SECS={}, HTTP_WARMUP={} (load generator: {}), \
         SCALE_REPS={}, SCALE_SECS={}.",
        m("reps"),
        m("reps_100k"),
        m("reps_1m"),
        m("reps_1m_asyncio"),
        m("echo_reps"),
        m("echo_secs"),
        m("echo_warmup"),
        m("handover_reps"),
        m("handover_timeout"),
        m("lateness_reps"),
        m("lateness_tasks"),
        m("lateness_max_ms"),
        m("lateness_timeout"),
        m("http_reps"),
        m("http_secs"),
        m("http_warmup"),
        m("http_load"),
        m("scale_reps"),
        m("scale_secs"),
    );
    o
}
