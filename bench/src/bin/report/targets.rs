//! The Targets section: each speed target, met or not in this run.

use std::fmt::Write as _;

use crate::bound::{row, Bound, Target};
use crate::data::Stat;
use crate::echo::echo_cell;
use crate::handover::handover_cell;
use crate::http::http_cell;
use crate::service::{paired_ratio, service_cell};
use crate::sleepers::sleeper_cell;
use crate::Results;

/// The speed targets yieldloop holds itself to, met or not in this run.
pub fn section(w: &mut String, recs: &Results, clk_tck: f64) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    let echo = |server, conns| echo_cell(&recs.echo, server, conns, clk_tck);
    let http = |server| http_cell(&recs.http, server, 64, clk_tck);
    let ho = |rt, bench| med(handover_cell(&recs.handover, rt, bench).ns);
    let sl = |rt, n| sleeper_cell(&recs.sleepers, rt, n);
    let svc = |server| service_cell(&recs.service, server, clk_tck);
    // Time per request (1 / requests per second): lower is better, like
    // every other figure here.
    let svc_us = |server| med(svc(server).rps).filter(|&r| r > 0.0).map(|r| 1e6 / r);
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
            paired: None,
        },
        Target {
            what: "p99 latency, 1 connection",
            ours: med(echo("yieldloop", 1).p99),
            theirs: med(echo("tokio", 1).p99),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "µs",
            paired: None,
        },
        Target {
            what: "yield between two tasks, feature `tracing` on, no subscriber",
            ours: ho("yieldloop-tracing", "yield"),
            theirs: ho("yieldloop", "yield"),
            yardstick: "yieldloop without the feature",
            max_ratio: 1.03,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "spawn + join, feature `tracing` on, no subscriber",
            ours: ho("yieldloop-tracing", "spawn"),
            theirs: ho("yieldloop", "spawn"),
            yardstick: "yieldloop without the feature",
            max_ratio: 1.03,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "channel ping-pong, one hand-over",
            ours: ho("yieldloop", "pingpong"),
            theirs: ho("tokio", "pingpong"),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "yield between two tasks, one hand-over",
            ours: ho("yieldloop", "yield"),
            theirs: ho("may", "yield"),
            yardstick: "may, one worker",
            max_ratio: 1.0,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "mutex hand-over between two tasks",
            ours: ho("yieldloop", "mutex"),
            theirs: ho("tokio", "mutex"),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "echo user CPU per round trip, 64 connections",
            ours: med(echo("yieldloop", 64).user_ns),
            theirs: med(echo("tokio", 64).user_ns),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "echo user CPU per round trip, 512 connections",
            ours: med(echo("yieldloop", 512).user_ns),
            theirs: med(echo("tokio", 512).user_ns),
            yardstick: "tokio",
            max_ratio: 1.0,
            unit: "ns",
            paired: None,
        },
        Target {
            what: "HTTP/1.1 keep-alive, 64 connections: server CPU per request",
            ours: med(http("yieldloop").cpu_us),
            theirs: med(http("hyper").cpu_us),
            yardstick: "hyper on tokio",
            max_ratio: 1.0,
            unit: "µs",
            paired: None,
        },
        Target {
            what: "1,000,000 sleepers, overhead above the 1 s sleep",
            ours: med(sl("yieldloop", 1_000_000).over_ms),
            theirs: med(sl("go", 1_000_000).over_ms),
            yardstick: "Go",
            max_ratio: 1.0,
            unit: "ms",
            paired: None,
        },
        Target {
            what: "1,000,000 sleepers, resident memory per task",
            ours: per_task("yieldloop"),
            theirs: per_task("floor"),
            yardstick: "the stackful floor",
            max_ratio: 1.05,
            unit: "bytes",
            paired: None,
        },
        Target {
            what: "Redis-backed HTTP service, 64 connections: time per request (1 / requests per second)",
            ours: svc_us("yieldloop"),
            theirs: svc_us("tokio"),
            yardstick: "tokio (hyper + redis's tokio client)",
            max_ratio: 1.0,
            unit: "µs",
            paired: paired_ratio(&recs.service, "yieldloop", "tokio", &|r| 1.0 / r.f("rps")),
        },
        Target {
            what: "Redis-backed HTTP service, 64 connections: p99 latency",
            ours: med(svc("yieldloop").p99),
            theirs: med(svc("tokio").p99),
            yardstick: "tokio (hyper + redis's tokio client)",
            max_ratio: 1.0,
            unit: "µs",
            paired: paired_ratio(&recs.service, "yieldloop", "tokio", &|r| r.f("p99_us")),
        },
        crate::fanout::target(&recs.fanout),
        Target {
            what: "the task dump and the counters: hand-over benchmarks and echo, worst of today / before",
            ours: crate::diag::worst_ratio(&recs.diag),
            theirs: Some(1.0),
            yardstick: "the revision before them (DIAG_BASE)",
            max_ratio: 1.03,
            unit: "×",
            paired: None,
        },
    ];
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "The speed targets yieldloop holds itself to, checked against this run's \
         medians (the tables below have the ranges). A target is met when \
         yieldloop's figure is at most the yardstick's times the allowed ratio. \
         Where the ratio says \"median of pairs\", the two were measured side by \
         side, run by run (or batch by batch), and the ratio is the median of \
         those pairs' ratios: each pair sees the machine in one state, so the \
         ratios scatter less than the two medians do.\n"
    );
    let _ = writeln!(
        w,
        "| target | yieldloop | yardstick | its figure | ratio | allowed | met |\n|---|---:|---|---:|---:|---:|---|"
    );
    for t in &targets {
        let bound = match (t.paired, t.theirs) {
            (Some(ratio), Some(theirs)) if theirs > 0.0 => Bound::Paired {
                name: t.yardstick,
                theirs,
                ratio,
                max: t.max_ratio,
            },
            _ => Bound::Ratio(t.yardstick, t.theirs, t.max_ratio),
        };
        row(w, t.what, t.ours, t.unit, bound);
    }
    crate::db::target_rows(w, &recs.db);
    crate::hook::target_rows(w, &recs.hook, &recs.service, clk_tck);
    crate::fairness::target_rows(w, &recs.fairness);
    crate::http2::target_row(w, &recs.http2);
    crate::attack::target_rows(w, &recs.attack);
    let _ = writeln!(w);
}
