//! The Fairness section: ping round trips and flood throughput with a
//! task that never runs dry on the scheduler's thread (`fairness.txt`, from
//! bench/src/bin/fairness.rs, `gobench fairness` and
//! bench/src/bin/fairness_client.rs), and what the per-task budget costs
//! where nothing floods, against the revision before it (`FAIR_BASE`, in
//! alternating pairs).

use std::fmt::Write as _;

use crate::bound::{row, Bound};
use crate::data::{build_stat, cell, num, pair_ratio, stat, stat_keeping, Rec, Stat};
use crate::peers::NOT_MEASURED_GO;

/// The runtimes, with their row titles.
const RUNTIMES: [(&str, &str); 6] = [
    ("yieldloop", "yieldloop"),
    ("tokio", "tokio `current_thread`"),
    ("tokio-mt", "tokio `multi_thread`, 2 workers"),
    ("may", "may, 1 worker"),
    ("go", "Go, `GOMAXPROCS=1`"),
    ("go-mt", "Go, `GOMAXPROCS=2`"),
];

/// The flood kinds, with their headings and what one item is.
const FLOODS: [(&str, &str, &str); 4] = [
    ("none", "no flood (the baseline)", ""),
    ("lines", "lines from a socket", "a 64-byte line"),
    ("chunks", "1 KiB reads from a socket", "a KiB"),
    ("chan", "a local channel", "a value"),
];

/// The budget's cost: the hand-over benchmarks compared, with their labels.
const BENCHES: [(&str, &str); 4] = [
    ("yield", "yield between two tasks"),
    ("spawn", "spawn + join a trivial task"),
    ("pingpong", "channel ping-pong, one hand-over"),
    ("mutex", "mutex hand-over"),
];

/// The runs of `runtime` with `flood` that worked.
fn runs<'a>(recs: &'a [Rec], runtime: &str, flood: &str) -> Vec<&'a Rec> {
    recs.iter()
        .filter(|r| r.s("kind") == "run" && r.s("runtime") == runtime && r.s("flood") == flood)
        .filter(|r| r.ok() && r.s("na") != "1")
        .collect()
}

/// Median, minimum and maximum of a latency over runs, where a run whose
/// pings went unanswered has an infinite figure (which [`stat`] would drop).
fn lat_stat(v: Vec<f64>) -> Option<Stat> {
    // An infinite middle value makes an infinite median, as it should.
    stat_keeping(v, |x| !x.is_nan())
}

/// A latency figure: ∞ where a ping went unanswered.
fn lat(x: f64) -> String {
    if x.is_infinite() {
        "∞".into()
    } else {
        num(x)
    }
}

fn lat_cell(s: Option<Stat>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ({}–{})", lat(s.med), lat(s.min), lat(s.max)),
        Some(s) => format!("{} (1 run)", lat(s.med)),
        None => "—".into(),
    }
}

/// The median over runs of a latency field (µs) of `runtime` with `flood`.
fn latency(recs: &[Rec], runtime: &str, flood: &str, key: &str) -> Option<Stat> {
    lat_stat(
        runs(recs, runtime, flood)
            .iter()
            .map(|r| r.f(key))
            .collect(),
    )
}

/// Flood items per second of `runtime` with `flood`.
fn throughput(recs: &[Rec], runtime: &str, flood: &str) -> Option<Stat> {
    stat(
        runs(recs, runtime, flood)
            .iter()
            .map(|r| r.f("items_per_s"))
            .collect(),
    )
}

/// The Targets rows: per flood, yieldloop's p99 and worst ping round trip
/// at most tokio `current_thread`'s, and its flood at least 0.9 of tokio's
/// throughput (written as time per item, at most 1/0.9 of tokio's).
pub fn target_rows(w: &mut String, recs: &[Rec]) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    for (flood, title, _) in &FLOODS[1..] {
        for (key, what) in [("p99_us", "p99"), ("max_us", "worst")] {
            let what = format!("fairness, flood of {title}: {what} ping round trip");
            row(
                w,
                &what,
                med(latency(recs, "yieldloop", flood, key)),
                "µs",
                Bound::Ratio(
                    "tokio current_thread",
                    med(latency(recs, "tokio", flood, key)),
                    1.0,
                ),
            );
        }
        let per_item = |rt| {
            med(throughput(recs, rt, flood))
                .filter(|&r| r > 0.0)
                .map(|r| 1e9 / r)
        };
        let what = format!(
            "fairness, flood of {title}: time per flood item (1 / items per second; at least 0.9 of the yardstick's throughput)"
        );
        row(
            w,
            &what,
            per_item("yieldloop"),
            "ns",
            Bound::Ratio("tokio current_thread", per_item("tokio"), 1.0 / 0.9),
        );
    }
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String, go_missing: Option<&str>) {
    let _ = writeln!(w, "## Fairness\n");
    if recs.is_empty() {
        let _ = writeln!(w, "Not measured in this run (stage `fairness`).\n");
        return;
    }
    let pings = recs
        .iter()
        .find(|r| r.s("kind") == "run" && r.ok() && !r.s("pings").is_empty())
        .map_or("?".to_string(), |r| r.s("pings").to_string());
    let interval = recs
        .iter()
        .find(|r| r.s("kind") == "run" && r.ok() && !r.s("interval_ms").is_empty())
        .map_or("5".to_string(), |r| r.s("interval_ms").to_string());
    let _ = writeln!(
        w,
        "One scheduler thread hosts a task that floods, consuming a never-ending input \
         as fast as it can, beside an echo task; a client on plain OS threads \
         (`bench/src/bin/fairness_client.rs`, blocking std sockets, the same for every \
         runtime) sends a 16-byte ping every {interval} ms for {} s ({pings} pings) on a \
         fixed schedule, whatever the answers do, and takes each one's round trip. The \
         flood does the same work per item everywhere, FNV-1a over the item's bytes: \
         **lines** read with a buffered line reader (8 KiB) from a socket the client \
         fills as fast as the server takes it (64-byte lines; std `BufReader::read_line`, \
         tokio `AsyncBufReadExt::read_line`, Go `bufio.Reader.ReadString`); **chunks**, \
         raw reads of up to 1 KiB from such a socket (an item is a KiB); **chan**, values \
         from a producer task on the same thread through a bounded channel of capacity \
         1024 (yieldloop `sync::local::sync_channel`, tokio `sync::mpsc::channel`, a \
         buffered Go chan). The servers are `bench/src/bin/fairness.rs` and `gobench \
         fairness`; one process per run, {} runs per cell, the runtimes' order reversed \
         from one run to the next. Servers of one thread are pinned to one core and the \
         client to the other; those of two workers are not pinned.\n\n\
         A ping not answered within a second after the last one was sent is unanswered, \
         and counts as infinitely late (**∞**) in the percentiles and the worst round \
         trip, which are over all {pings} pings of a run. **Flood throughput** is the \
         flood's items between two readings of its count, taken from a plain thread of \
         the server (Go: a goroutine) before and after the pings, by the server's clock: \
         it is measured even while the flood starves every other task. Cells: median \
         over runs (min–max).\n",
        m("fair_secs"),
        m("fair_reps"),
    );
    for (flood, title, item) in FLOODS {
        let _ = writeln!(w, "### Flood: {title}\n");
        if flood == "none" {
            let _ = writeln!(
                w,
                "| runtime | pings answered (of {pings}) | median, µs | p99, µs | worst, µs |\n|---|---:|---:|---:|---:|"
            );
        } else {
            let _ = writeln!(
                w,
                "| runtime | pings answered (of {pings}) | median, µs | p99, µs | worst, µs | flood, million items/s ({item}) |\n|---|---:|---:|---:|---:|---:|"
            );
        }
        for (rt, label) in RUNTIMES {
            let all: Vec<&Rec> = recs
                .iter()
                .filter(|r| r.s("kind") == "run" && r.s("runtime") == rt && r.s("flood") == flood)
                .collect();
            let pad = if flood == "none" { 3 } else { 4 };
            let empty = " |".repeat(pad);
            let why = if rt.starts_with("go") {
                go_missing.map(|why| format!("{NOT_MEASURED_GO} ({why})"))
            } else {
                None
            };
            if let Some(na) = all.iter().find(|r| r.ok() && r.s("na") == "1") {
                let _ = writeln!(
                    w,
                    "| {label} | n/a: {} |{empty}",
                    na.reason.clone().unwrap_or_default()
                );
                continue;
            }
            let ok = runs(recs, rt, flood);
            if ok.is_empty() {
                let text = match (all.iter().find(|r| !r.ok()), why) {
                    (Some(r), _) => format!("failed: {}", r.reason.clone().unwrap_or_default()),
                    (None, Some(why)) => why,
                    (None, None) => "not measured".into(),
                };
                let _ = writeln!(w, "| {label} | {text} |{empty}");
                continue;
            }
            let answered = stat(ok.iter().map(|r| r.f("answered")).collect());
            let answered = match answered {
                Some(s) if s.n > 1 => format!("{} ({}–{})", s.med, s.min, s.max),
                Some(s) => format!("{} (1 run)", s.med),
                None => "—".into(),
            };
            let _ = write!(
                w,
                "| {label} | {answered} | {} | {} | {} |",
                lat_cell(latency(recs, rt, flood, "p50_us")),
                lat_cell(latency(recs, rt, flood, "p99_us")),
                lat_cell(latency(recs, rt, flood, "max_us")),
            );
            if flood != "none" {
                let t = throughput(recs, rt, flood).map(|s| Stat {
                    med: s.med / 1e6,
                    min: s.min / 1e6,
                    max: s.max / 1e6,
                    n: s.n,
                });
                let _ = write!(w, " {} |", cell(t));
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    }
    let failed: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("kind") == "run" && !r.ok())
        .collect();
    for r in &failed {
        let _ = writeln!(
            w,
            "- failed: {} with flood {}, run {}: {}",
            r.s("runtime"),
            r.s("flood"),
            r.s("rep"),
            r.reason.clone().unwrap_or_default()
        );
    }
    if !failed.is_empty() {
        let _ = writeln!(w);
    }
    cost(w, recs, m);
}

/// Server CPU per echo round trip, in ns.
fn echo_cpu(r: &Rec) -> f64 {
    r.f("oncpu_ns") / r.f("rt_total")
}

/// Server CPU per HTTP request, in ns.
fn http_cpu(r: &Rec) -> f64 {
    r.f("oncpu_ns") / r.f("requests_total")
}

/// The table of what the budget costs where nothing floods.
fn cost(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "### The budget's cost\n");
    let _ = writeln!(
        w,
        "Every operation that may pause spends a unit of the task's budget when it \
         completes without pausing; the revision before the budget ({}) and today's, \
         built alike, ran the hand-over benchmarks, the echo server (server CPU per \
         round trip, `/proc/PID/task/*/schedstat`) and the HTTP server of the http stage \
         (server CPU per request, keep-alive, load from {}) in pairs, one after the \
         other, the order swapped from one pair to the next ({} pairs per row). The \
         ratio is the median of the pairs' ratios (min–max).\n",
        m("fair_base"),
        m("http_load"),
        m("fair_ab_reps"),
    );
    let skipped = |kind: &str| {
        recs.iter()
            .find(|r| r.s("kind") == kind && r.s("skipped") == "1")
            .map(|r| r.reason.clone().unwrap_or_default())
    };
    if let Some(why) = skipped("cost") {
        let _ = writeln!(w, "Not measured: {why}\n");
        return;
    }
    let _ = writeln!(
        w,
        "| benchmark | before, ns | today, ns | today / before |\n|---|---:|---:|---:|"
    );
    let line =
        |w: &mut String, label: &str, select: &dyn Fn(&Rec) -> bool, key: &dyn Fn(&Rec) -> f64| {
            let ratio = match pair_ratio(recs, select, key) {
                Some(s) if s.n > 1 => format!("{:.3} ({:.3}–{:.3})", s.med, s.min, s.max),
                Some(s) => format!("{:.3} (1 pair)", s.med),
                None => "—".into(),
            };
            let _ = writeln!(
                w,
                "| {label} | {} | {} | {ratio} |",
                cell(build_stat(recs, select, "base", key)),
                cell(build_stat(recs, select, "now", key)),
            );
        };
    for (b, label) in BENCHES {
        line(
            w,
            label,
            &|r| r.s("kind") == "cost" && r.s("bench") == b,
            &|r| r.f("ns_per_op"),
        );
    }
    for conns in ["64", "512"] {
        line(
            w,
            &format!("echo server CPU per round trip, {conns} connections"),
            &|r| r.s("kind") == "echo" && r.s("conns") == conns,
            &echo_cpu,
        );
    }
    match skipped("http") {
        Some(why) => {
            let _ = writeln!(
                w,
                "| HTTP server CPU per request | not measured: {why} | | |"
            );
        }
        None => {
            let conns: Vec<String> = {
                let mut c: Vec<String> = recs
                    .iter()
                    .filter(|r| r.s("kind") == "http" && r.ok())
                    .map(|r| r.s("conns").to_string())
                    .collect();
                c.sort_by_key(|c| c.parse::<u64>().unwrap_or(0));
                c.dedup();
                c
            };
            if conns.is_empty() {
                let _ = writeln!(w, "| HTTP server CPU per request | — | — | — |");
            }
            for c in conns {
                line(
                    w,
                    &format!("HTTP server CPU per request, {c} keep-alive connections"),
                    &|r| r.s("kind") == "http" && r.s("conns") == c,
                    &http_cpu,
                );
            }
        }
    }
    let _ = writeln!(w);
    let failed: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("kind") != "run" && !r.ok() && r.s("skipped") != "1")
        .collect();
    for r in &failed {
        let _ = writeln!(
            w,
            "- failed: {} {} {}{}: {}",
            r.s("kind"),
            r.s("build"),
            r.s("bench"),
            r.s("conns"),
            r.reason.clone().unwrap_or_default()
        );
    }
    if !failed.is_empty() {
        let _ = writeln!(w);
    }
}
