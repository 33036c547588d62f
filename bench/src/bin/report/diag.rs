//! The Looking-inside section: the task dump's time over many paused tasks
//! (bench/src/bin/dump_time.rs), and what the dump and the counters cost
//! the hand-over and echo benchmarks, against the revision before them
//! (`DIAG_BASE`, run in alternating pairs).

use std::fmt::Write as _;

use crate::data::{self, cell, num, stat, Rec, Stat};

/// The hand-over benchmarks compared, with their labels.
const BENCHES: [(&str, &str); 4] = [
    ("yield", "yield between two tasks"),
    ("spawn", "spawn + join a trivial task"),
    ("pingpong", "channel ping-pong, one hand-over"),
    ("mutex", "mutex hand-over"),
];

/// The median of the pair-by-pair ratios now / base of field `key` in the
/// records of `kind` (and, for the hand-over, `bench`): each pair ran back
/// to back, so a drift of the machine falls on both.
fn pair_ratio(
    recs: &[Rec],
    kind: &str,
    bench: Option<&str>,
    key: &dyn Fn(&Rec) -> f64,
) -> Option<Stat> {
    let select = |r: &Rec| r.s("kind") == kind && bench.is_none_or(|b| r.s("bench") == b);
    data::pair_ratio(recs, &select, key)
}

fn figure(
    recs: &[Rec],
    kind: &str,
    build: &str,
    bench: Option<&str>,
    key: &dyn Fn(&Rec) -> f64,
) -> Option<Stat> {
    let select = |r: &Rec| r.s("kind") == kind && bench.is_none_or(|b| r.s("bench") == b);
    data::build_stat(recs, &select, build, key)
}

/// Server CPU per echo round trip, in ns.
fn echo_cpu(r: &Rec) -> f64 {
    r.f("oncpu_ns") / r.f("rt_total")
}

/// The worst of the now / base ratios, for the target row: the hand-over
/// benchmarks and the echo server.
pub fn worst_ratio(recs: &[Rec]) -> Option<f64> {
    let mut all: Vec<f64> = BENCHES
        .iter()
        .filter_map(|(b, _)| {
            pair_ratio(recs, "cost", Some(b), &|r| r.f("ns_per_op")).map(|s| s.med)
        })
        .collect();
    all.extend(pair_ratio(recs, "echo", None, &echo_cpu).map(|s| s.med));
    all.into_iter().reduce(f64::max)
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Looking inside: the task dump and the counters\n");
    if recs.is_empty() {
        let _ = writeln!(w, "Not measured in this run (stage `diag`).\n");
        return;
    }
    let _ = writeln!(
        w,
        "`diag::dump()` over N tasks paused {} frames deep in a function of their own (a third on a timer, a third on a channel, a third joining a task of their own, which sleeps: so N + N/3 tasks in all), taken from the main task (`bench/src/bin/dump_time.rs`). **capture** is the dump itself: the scheduler lists its tasks and resumes each just long enough to walk its own stack, return addresses only; the scheduler's thread does nothing else meanwhile. **text** is writing it out (`to_string()`): each return address resolved to a name once per dump, each task's line, and its backtrace or the id of an earlier task with the same one. {} runs per row.\n",
        recs.iter().find(|r| r.s("kind") == "dump" && r.ok()).map_or("8".to_string(), |r| r.s("depth").to_string()),
        m("diag_reps"),
    );
    let _ = writeln!(w, "| paused tasks (N) | tasks in the dump | capture, ms | capture per task, µs | text, ms | text, MB |");
    let _ = writeln!(w, "|---:|---:|---:|---:|---:|---:|");
    let mut ns: Vec<u64> = recs
        .iter()
        .filter(|r| r.s("kind") == "dump")
        .filter_map(|r| r.s("n").parse().ok())
        .collect();
    ns.sort_unstable();
    ns.dedup();
    for n in &ns {
        let mine: Vec<&Rec> = recs
            .iter()
            .filter(|r| r.s("kind") == "dump" && r.s("n") == n.to_string())
            .collect();
        let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
        if ok.is_empty() {
            let why = mine
                .first()
                .and_then(|r| r.reason.clone())
                .unwrap_or_else(|| "failed".into());
            let _ = writeln!(w, "| {n} | failed: {why} | | | | |");
            continue;
        }
        let f = |k: &str| stat(ok.iter().map(|r| r.f(k)).collect());
        let _ = writeln!(
            w,
            "| {n} | {} | {} | {} | {} | {} |",
            ok[0].s("tasks"),
            cell(f("capture_ms")),
            cell(f("capture_us_per_task")),
            cell(f("text_ms")),
            f("text_bytes").map_or("—".into(), |s| num(s.med / 1e6)),
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "**What they cost the hot paths.** The dump needs each task's state and since when (stored as the task changes state), what each park waits on (a label the parking code sets), and a check at each pause for a capture request; the counters are published once per poll of the loop, and the hold histogram times one resume, at random, after a poll that finds one due. The revision before them ({}) and today's, built alike, ran the hand-over benchmarks and the echo server (64 connections, server CPU per round trip, `/proc/PID/task/*/schedstat`) in pairs, one after the other, the order swapped from one pair to the next ({} pairs per hand-over benchmark, {} for echo). The ratio is the median of the pairs' ratios.\n",
        m("diag_base"),
        m("diag_ab_reps"),
        m("diag_echo_reps"),
    );
    if let Some(r) = recs
        .iter()
        .find(|r| r.s("kind") == "cost" && r.s("skipped") == "1")
    {
        let _ = writeln!(
            w,
            "Not measured: {}\n",
            r.reason.clone().unwrap_or_default()
        );
        return;
    }
    let _ = writeln!(w, "| benchmark | before, ns | today, ns | today / before |");
    let _ = writeln!(w, "|---|---:|---:|---:|");
    for (b, label) in BENCHES {
        let ns = |r: &Rec| r.f("ns_per_op");
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} |",
            cell(figure(recs, "cost", "base", Some(b), &ns)),
            cell(figure(recs, "cost", "now", Some(b), &ns)),
            pair_ratio(recs, "cost", Some(b), &ns)
                .map_or("—".into(), |s| format!("{:.3}", s.med)),
        );
    }
    let _ = writeln!(
        w,
        "| echo server CPU per round trip, 64 connections | {} | {} | {} |",
        cell(figure(recs, "echo", "base", None, &echo_cpu)),
        cell(figure(recs, "echo", "now", None, &echo_cpu)),
        pair_ratio(recs, "echo", None, &echo_cpu).map_or("—".into(), |s| format!("{:.3}", s.med)),
    );
    let _ = writeln!(w);
    let failed: Vec<&Rec> = recs
        .iter()
        .filter(|r| !r.ok() && r.s("skipped") != "1")
        .collect();
    for r in failed {
        let _ = writeln!(
            w,
            "- failed: {} {} {}: {}",
            r.s("kind"),
            r.s("build"),
            r.s("bench"),
            r.reason.clone().unwrap_or_default()
        );
    }
    let _ = writeln!(w);
}
