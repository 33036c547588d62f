//! Turns the raw results of bench/run.sh into docs/benchmarks.md and the
//! sleepers plot (SVG, drawn with plotters).
//!
//! ```text
//! report --results bench/results --md docs/benchmarks.md --svg docs/src/img/sleepers.svg
//! report --results bench/results --md docs/benchmarks.md --section recovery
//! report --results bench/results --md docs/benchmarks.md --section http2
//! ```
//!
//! With `--section recovery` (or `http2`, which also puts its row into the
//! Targets table there) it writes that one section into the page
//! that is there (replacing its old version, or before `## Commands`),
//! leaving the rest and the plot as they are: for a run of that stage
//! alone, which would otherwise mark every other section not run.
//!
//! Inputs, all in the results directory, one record per line:
//!
//! - `sleepers.txt`: `sleepers runtime=.. n=.. wall_s=.. spawn_s=.. hwm_kb=.. maps=.. checksum=..
//!   utime_s=.. stime_s=.. minflt=.. majflt=.. maxrss_kb=.. rep=.. order=.. ok=1`
//!   (the CPU time and fault fields from `rusage`, absent in older results),
//!   or `... ok=0 status=.. reason=free text to the end of the line`.
//! - `sleepers-warmup.txt`: the same, for the discarded warm-up runs (`rep=0`).
//! - `firsttouch.txt`: `firsttouch touched_mb=.. cold_mb=.. settle_s=.. cold_s_per_gib=..
//!   cold_sys_us_per_fault=.. cold_faults=.. warm_s_per_gib=.. warm_sys_us_per_fault=..
//!   warm_faults=.. when=start|sleepers`, one line per measurement.
//! - `echo.txt`: `echo server=.. rep=.. utime=.. stime=.. oncpu_ns=.. conns=.. size=.. secs=.. rt_total=.. rt=.. rps=.. p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=.. ok=1`.
//! - `handover.txt`: `handover rep=.. ok=1 runtime=.. bench=.. ops=.. secs=.. ns_per_op=..`,
//!   `handover rep=.. ok=1 runtime=.. bench=.. na=1 reason=..` for a benchmark a
//!   runtime cannot do, or `handover runtime=.. bench=.. rep=.. ok=0 status=.. reason=..`.
//! - `xmutex.txt`: the same fields as `handover.txt` (`contended` adds `waited=..`).
//! - `http.txt`: `http server=.. rep=.. load=wrk|http_load utime=.. stime=.. oncpu_ns=.. conns=.. secs=.. requests_total=.. requests=.. rps=.. p50_us=.. p99_us=.. errors=.. ok=1`
//!   (http_load adds `p999_us` and `max_us`; `oncpu_ns` is absent in older results), `http server=.. conns=.. rep=.. load=.. ok=0 reason=..`,
//!   or `http ok=0 skipped=1 reason=..` when the stage did not run.
//! - `service.txt`: `service server=yieldloop|tokio rep=.. load=wrk|http_load utime=.. stime=.. redis_utime=.. redis_stime=..`
//!   and the same load fields as `http.txt`, `... ok=1`; `service server=.. conns=.. rep=.. load=.. ok=0 reason=..`,
//!   or `service ok=0 skipped=1 reason=..` when the stage did not run.
//! - `scaling.txt`: `scaling workers=.. clients=.. rep=.. ok=1 rps=.. server_us_per_rt=.. round_trips=.. vcs_per_rt=.. ivcs_per_rt=..`,
//!   or `scaling workers=.. clients=.. rep=.. ok=0 reason=..`.
//! - `lateness.txt`: `lateness variant=normal|rt rep=.. ok=1 runtime=.. tasks=.. max_ms=.. p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=.. early=.. max_early_us=..`,
//!   or `lateness runtime=.. variant=.. rep=.. ok=0 status=.. reason=..`.
//! - `db.txt`: `db kind=roundtrip variant=normal rep=.. ok=1 db=redis|postgres route=native|on_tokio|blocking|tokio n=.. wall_us=.. cpu_us=.. user_us=.. sys_us=.. p50_us=.. p99_us=.. max_us=..`,
//!   `db kind=ticker variant=normal|rt rep=.. ok=1 db=.. route=.. tasks=.. ticks=.. max_gap_ms=.. max_gap_end_ms=.. p99_gap_ms=.. p50_gap_ms=.. wait_min_ms=.. wait_max_ms=..`,
//!   `db kind=.. db=.. route=.. variant=.. rep=.. ok=0 status=.. reason=..`, or `db db=.. ok=0 skipped=1 reason=..`
//!   when that server is missing.
//! - `hook.txt`: `hook kind=cost rep=.. ok=1 build=plain|hook call=recv_peek|read_eagain iters=.. batches=.. ns_med=.. ns_min=..`,
//!   `hook kind=conns rep=.. ok=1 mode=native|hook n=.. rounds=.. size=.. rss_base_kb=.. rss_kb=.. bytes_per_task=..
//!   round_trips=.. wall_s=.. cpu_ns_per_rt=.. user_ns_per_rt=.. sys_ns_per_rt=..`,
//!   `hook kind=.. build=..|mode=.. rep=.. ok=0 reason=..`, or `hook ok=0 skipped=1 reason=..`
//!   when the build with feature `hook` failed.
//! - `fanout.txt`: `fanout rep=.. ok=1 runtime=yieldloop|yieldloop-rr|tokio|go bench=broadcast|skewed n=.. receivers=.. wall_ms=..`
//!   with `ns_per_delivery=..` (broadcast) or `serial_ms=..` (skewed), or
//!   `fanout rep=.. ok=0 runtime=.. bench=.. status=.. reason=..`.
//! - `diag.txt`: `diag kind=dump rep=.. ok=1 n=.. depth=.. tasks=.. capture_ms=.. capture_us_per_task=.. text_ms=.. text_bytes=.. frames=..`,
//!   `diag kind=cost build=now|base rep=.. ok=1 runtime=.. bench=.. ops=.. secs=.. ns_per_op=..`,
//!   `diag kind=echo build=now|base rep=.. utime=.. stime=.. oncpu_ns=..` and the loadgen fields `... ok=1`
//!   (the same as an `echo.txt` record),
//!   `diag kind=.. ... ok=0 reason=..`, or `diag kind=cost ok=0 skipped=1 reason=..` without the base build.
//! - `fairness.txt`: `fairness kind=run runtime=yieldloop|tokio|tokio-mt|may|go|go-mt rep=.. ok=1 flood=none|lines|chunks|chan
//!   secs=.. interval_ms=.. pings=.. answered=.. p50_us=.. p99_us=.. max_us=.. max_answered_us=.. hello=.. items=.. window_s=.. items_per_s=..`
//!   (the fields of `fairness_client`; `inf` for a latency with unanswered pings, `nan` for a count not read),
//!   `fairness kind=run runtime=.. flood=.. rep=.. ok=1 na=1 reason=..` for a flood a runtime cannot do,
//!   `fairness kind=run runtime=.. flood=.. rep=.. ok=0 reason=..`; and the budget's cost against `FAIR_BASE`,
//!   records of kinds `cost` and `echo` as in `diag.txt` and `fairness kind=http build=now|base rep=..` with the
//!   fields of an `http.txt` record and `oncpu_ns=..`, or `fairness kind=cost|http ok=0 skipped=1 reason=..`.
//! - `recovery.txt`: `recovery rep=.. ok=1 route=pooled|multiplexed|on_tokio tasks=.. calls=.. succeeded=.. failed=..
//!   first_fail_unix=.. recovered_unix=.. slowest_fail_ms=.. slowest_ok_ms=.. killed_unix=.. restarted_unix=..`
//!   (the fields of `redis_recovery`, then the times run.sh killed and restarted the server),
//!   `recovery route=.. rep=.. ok=0 reason=..`, or `recovery ok=0 skipped=1 reason=..`.
//! - `attack.txt`: `attack server=yieldloop|hyper|yieldloop_tls|hyper_tls kind=none|body|idle|pipeline|tls-hello
//!   rep=.. attackers=.. connected=.. failed=.. bytes_per_conn=.. closed_by_server=.. answered_bytes=.. rss0_kb=..
//!   rss1_kb=.. nofile=..`, the same load fields as `http.txt`, then `after_rps=.. after_p99_us=..` (the client
//!   again once the attackers had gone), `... ok=1` (`kind=none`: `attackers=0 connected=0` and no `after_`
//!   fields), `attack server=.. kind=.. rep=.. ok=0 reason=..`, `attack kind=tls-hello ok=0 skipped=1 reason=..`
//!   when the TLS runs could not be made, or `attack ok=0 skipped=1 reason=..` when the stage did not run.
//! - `http2.txt`: `http2 kind=setup h2load=.. conns=.. streams=.. n=.. warmup_n=.. reps=.. pin_server=..
//!   pin_client=.. clk_tck=.. date=.. load_start=..` (spaces as `_` or `/`), then per run
//!   `http2 server=hyper|hyper_yieldloop rep=.. conns=.. streams=.. utime=.. stime=.. oncpu_ns=.. secs=.. rps=..
//!   requests=.. done=.. succeeded=.. failed=.. errored=.. timeout=.. status_2xx=.. req_min_us=.. req_max_us=..
//!   req_mean_us=.. req_sd_us=.. ok=1` or `http2 server=.. rep=.. ok=0 reason=..`, and `http2 kind=end load_end=..`;
//!   or `http2 ok=0 skipped=1 reason=..` without h2load.
//! - `meta.txt`: `key=value` lines about the machine and the run.
//! - `commands.txt`: the command lines, copied into the document.
//!
//! One module per section of the document (`machine`, `targets`, `peers`
//! for Go and the stackful floor, `sleepers`, `echo`, `http`, `http2`, `attack`, `service`, `scaling`,
//! `handover`, `lateness`, `db`, `hook`, `fanout`, `diag`, `fairness`, `recovery`, `commands`), `svg` for the plot and `data` for
//! the records and number formats they share; `markdown` puts the sections
//! in order.

mod attack;
mod bound;
mod commands;
mod data;
mod db;
mod diag;
mod echo;
mod fairness;
mod fanout;
mod handover;
mod hook;
mod http;
mod http2;
mod lateness;
mod machine;
mod peers;
mod recovery;
mod scaling;
mod service;
mod sleepers;
mod splice;
mod svg;
mod targets;
mod xmutex;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use data::{read_meta, read_recs, FirstTouch, Rec};

struct Args {
    results: PathBuf,
    md: PathBuf,
    svg: PathBuf,
    /// `--section recovery`: only that section, into the page there.
    section: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        results: "bench/results".into(),
        md: "docs/benchmarks.md".into(),
        svg: "docs/src/img/sleepers.svg".into(),
        section: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        match k.as_str() {
            "--results" => a.results = v.into(),
            "--md" => a.md = v.into(),
            "--svg" => a.svg = v.into(),
            "--section" if ["recovery", "http2", "attack"].contains(&v.as_str()) => {
                a.section = Some(v)
            }
            _ => {
                eprintln!(
                    "usage: report --results DIR --md FILE (--svg FILE | --section recovery|http2|attack)"
                );
                std::process::exit(2);
            }
        }
    }
    a
}

fn main() {
    let a = args();
    let mut recs = Results {
        sleepers: read_recs(&a.results.join("sleepers.txt")),
        sleepers_warmup: read_recs(&a.results.join("sleepers-warmup.txt")),
        first_touch: FirstTouch::from_recs(&read_recs(&a.results.join("firsttouch.txt"))),
        echo: read_recs(&a.results.join("echo.txt")),
        http: read_recs(&a.results.join("http.txt")),
        http2: read_recs(&a.results.join("http2.txt")),
        service: read_recs(&a.results.join("service.txt")),
        scaling: read_recs(&a.results.join("scaling.txt")),
        handover: read_recs(&a.results.join("handover.txt")),
        xmutex: read_recs(&a.results.join("xmutex.txt")),
        lateness: read_recs(&a.results.join("lateness.txt")),
        syscalls: read_recs(&a.results.join("syscalls.txt")),
        db: read_recs(&a.results.join("db.txt")),
        hook: read_recs(&a.results.join("hook.txt")),
        fanout: read_recs(&a.results.join("fanout.txt")),
        diag: read_recs(&a.results.join("diag.txt")),
        fairness: read_recs(&a.results.join("fairness.txt")),
        recovery: read_recs(&a.results.join("recovery.txt")),
        attack: read_recs(&a.results.join("attack.txt")),
    };
    sleepers::mark_cold(
        &mut recs.sleepers,
        &recs.sleepers_warmup,
        recs.first_touch.as_ref(),
    );
    let meta = read_meta(&a.results.join("meta.txt"));
    let commands = std::fs::read_to_string(a.results.join("commands.txt")).unwrap_or_default();

    if a.section.as_deref() == Some("http2") {
        let (mut section, mut target) = (String::new(), String::new());
        http2::section(&mut section, &recs.http2);
        http2::target_row(&mut target, &recs.http2);
        let page = std::fs::read_to_string(&a.md).unwrap_or_default();
        if let Err(e) = std::fs::write(&a.md, http2::splice(&page, &section, &target)) {
            eprintln!("report: writing {}: {e}", a.md.display());
            std::process::exit(1);
        }
        eprintln!("report: wrote the http2 section into {}", a.md.display());
        return;
    }
    if a.section.as_deref() == Some("attack") {
        let m = |k: &str| meta.get(k).cloned().unwrap_or_else(|| "?".into());
        let (mut section, mut rows) = (String::new(), String::new());
        attack::section(&mut section, &recs.attack, &m);
        attack::target_rows(&mut rows, &recs.attack);
        let page = std::fs::read_to_string(&a.md).unwrap_or_default();
        let page = splice::section(&page, attack::HEADING, "## HTTP/2 servers", &section);
        let page = splice::target_rows(&page, attack::TARGET_PREFIX, &rows);
        if let Err(e) = std::fs::write(&a.md, page) {
            eprintln!("report: writing {}: {e}", a.md.display());
            std::process::exit(1);
        }
        eprintln!("report: wrote the attack section into {}", a.md.display());
        return;
    }
    if a.section.is_some() {
        let m = |k: &str| meta.get(k).cloned().unwrap_or_else(|| "?".into());
        let mut section = String::new();
        recovery::section(&mut section, &recs.recovery, &m);
        let page = std::fs::read_to_string(&a.md).unwrap_or_default();
        if let Err(e) = std::fs::write(&a.md, recovery::splice(&page, &section)) {
            eprintln!("report: writing {}: {e}", a.md.display());
            std::process::exit(1);
        }
        eprintln!("report: wrote the recovery section into {}", a.md.display());
        return;
    }

    let svg_rel = relative_to(&a.svg, a.md.parent().unwrap_or(Path::new(".")));
    if let Err(e) = svg::plot(&recs.sleepers, &a.svg) {
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
    pub sleepers: Vec<Rec>,
    /// The discarded warm-up runs of the large sleepers cells.
    pub sleepers_warmup: Vec<Rec>,
    /// The machine's first-touch cost, if measured.
    pub first_touch: Option<FirstTouch>,
    pub echo: Vec<Rec>,
    pub http: Vec<Rec>,
    pub http2: Vec<Rec>,
    pub service: Vec<Rec>,
    pub scaling: Vec<Rec>,
    pub handover: Vec<Rec>,
    pub xmutex: Vec<Rec>,
    pub lateness: Vec<Rec>,
    pub syscalls: Vec<Rec>,
    pub db: Vec<Rec>,
    pub hook: Vec<Rec>,
    pub fanout: Vec<Rec>,
    pub diag: Vec<Rec>,
    pub fairness: Vec<Rec>,
    pub recovery: Vec<Rec>,
    pub attack: Vec<Rec>,
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

/// The whole document, section by section.
fn markdown(
    recs: &Results,
    meta: &BTreeMap<String, String>,
    commands: &str,
    svg_rel: &str,
) -> String {
    let m = |k: &str| meta.get(k).map_or("?", String::as_str);
    let clk_tck: f64 = m("clk_tck").parse().unwrap_or(100.0);
    let mut o = String::new();
    let w = &mut o;
    // docs/src/benchmarks.md includes the page in two halves around the
    // plot, which it shows with the book's own image path.
    let _ = writeln!(w, "<!-- ANCHOR: before-plot -->");
    machine::section(w, meta, recs.first_touch.as_ref());
    let go_missing = peers::go_missing(meta);
    targets::section(w, recs, clk_tck);
    peers::section(w, meta);
    sleepers::section(
        w,
        &recs.sleepers,
        meta,
        recs.first_touch.as_ref(),
        go_missing.as_deref(),
        svg_rel,
    );
    echo::section(
        w,
        &recs.echo,
        &recs.syscalls,
        meta,
        go_missing.as_deref(),
        clk_tck,
    );
    http::section(w, &recs.http, &|k| m(k).to_string(), clk_tck);
    http2::section(w, &recs.http2);
    attack::section(w, &recs.attack, &|k| m(k).to_string());
    service::section(w, &recs.service, &|k| m(k).to_string(), clk_tck);
    scaling::section(w, &recs.scaling, &|k| m(k).to_string());
    handover::section(w, &recs.handover, &|k| m(k).to_string());
    xmutex::section(w, &recs.xmutex, &|k| m(k).to_string());
    lateness::section(w, &recs.lateness, &|k| m(k).to_string());
    db::section(w, &recs.db, &|k| m(k).to_string());
    hook::section(w, &recs.hook, &|k| m(k).to_string());
    fanout::section(w, &recs.fanout, &|k| m(k).to_string());
    diag::section(w, &recs.diag, &|k| m(k).to_string());
    fairness::section(
        w,
        &recs.fairness,
        &|k| m(k).to_string(),
        go_missing.as_deref(),
    );
    recovery::section(w, &recs.recovery, &|k| m(k).to_string());
    commands::section(w, meta, commands);
    let _ = writeln!(w, "<!-- ANCHOR_END: after-plot -->");
    o
}
