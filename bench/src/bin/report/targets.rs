//! The Targets section: each speed target, met or not in this run.

use std::fmt::Write as _;

use crate::data::{num, Stat};
use crate::echo::echo_cell;
use crate::handover::handover_cell;
use crate::service::{paired_ratio, service_cell};
use crate::sleepers::sleeper_cell;
use crate::Results;

/// One target: what is compared, yieldloop's figure, the yardstick's, and
/// how far yieldloop may be from it (a ratio yieldloop / yardstick).
pub struct Target {
    pub what: &'static str,
    pub ours: Option<f64>,
    pub theirs: Option<f64>,
    pub yardstick: &'static str,
    pub max_ratio: f64,
    pub unit: &'static str,
    /// The ratio from runs made in pairs (the median of the pairs'
    /// ratios), where the target is judged on that rather than on the
    /// ratio of the two medians.
    pub paired: Option<f64>,
}

/// The speed targets yieldloop holds itself to, met or not in this run.
pub fn section(w: &mut String, recs: &Results, clk_tck: f64) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    let echo = |server, conns| echo_cell(&recs.echo, server, conns, clk_tck);
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

/// One row of the Targets table (same columns: target, yieldloop's figure,
/// yardstick, its figure, ratio, allowed, met).
pub fn row(w: &mut String, what: &str, ours: Option<f64>, unit: &str, bound: Bound) {
    let Some(ours) = ours else {
        let (yard, allowed) = match bound {
            Bound::Ratio(name, _, r) | Bound::Paired { name, max: r, .. } => {
                (name.to_string(), format!("≤ {r:.2}"))
            }
            Bound::Limit { limit: l, .. } => ("fixed limit".into(), format!("≤ {} {unit}", num(l))),
        };
        let _ = writeln!(w, "| {what} | | {yard} | | | {allowed} | not measured |");
        return;
    };
    match bound {
        Bound::Paired {
            name,
            theirs,
            ratio,
            max,
        } => {
            let met = if ratio <= max { "yes" } else { "no" };
            let _ = writeln!(
                w,
                "| {what} | {} {unit} | {name} | {} {unit} | {ratio:.3} (median of pairs) | ≤ {max:.2} | {met} |",
                num(ours),
                num(theirs)
            );
        }
        Bound::Ratio(name, Some(theirs), max) if theirs > 0.0 => {
            let ratio = ours / theirs;
            let met = if ratio <= max { "yes" } else { "no" };
            // An infinite figure (a ping never answered) has no number.
            let fig = |x: f64| {
                if x.is_infinite() {
                    "no answer".to_string()
                } else {
                    format!("{} {unit}", num(x))
                }
            };
            let ratio = if ratio.is_finite() {
                format!("{ratio:.2}")
            } else if ratio.is_nan() {
                "—".into()
            } else {
                "∞".into()
            };
            let _ = writeln!(
                w,
                "| {what} | {} | {name} | {} | {ratio} | ≤ {max:.2} | {met} |",
                fig(ours),
                fig(theirs)
            );
        }
        Bound::Ratio(name, _, max) => {
            let _ = writeln!(w, "| {what} | | {name} | | | ≤ {max:.2} | not measured |");
        }
        Bound::Limit {
            limit,
            name,
            theirs,
        } => {
            let met = if ours <= limit { "yes" } else { "no" };
            // Each cell with its own padding, so that an empty one is
            // `| |` as in the other rows.
            let (t, r) = match theirs {
                Some(t) if t > 0.0 => {
                    (format!(" {} {unit} ", num(t)), format!(" {:.2} ", ours / t))
                }
                Some(t) => (format!(" {} {unit} ", num(t)), " ".into()),
                None => (" ".into(), " ".into()),
            };
            let _ = writeln!(
                w,
                "| {what} | {} {unit} | {name} |{t}|{r}| ≤ {} {unit} | {met} |",
                num(ours),
                num(limit)
            );
        }
    }
}

/// What a target's figure is held to.
pub enum Bound {
    /// At most the yardstick's figure (named, if measured) times a ratio.
    Ratio(&'static str, Option<f64>, f64),
    /// At most a fixed amount, with a yardstick named beside it and its
    /// figure (when measured) for scale, not held to; see
    /// [`fixed`](Bound::fixed) for a limit with nothing beside it.
    Limit {
        limit: f64,
        name: &'static str,
        theirs: Option<f64>,
    },
    /// Measured in pairs against a yardstick: its figure, and the median
    /// of the pairs' ratios, which is held to `max`.
    Paired {
        name: &'static str,
        theirs: f64,
        ratio: f64,
        max: f64,
    },
}

impl Bound {
    /// At most `limit`, with no yardstick beside it.
    pub fn fixed(limit: f64) -> Bound {
        Bound::Limit {
            limit,
            name: "fixed limit",
            theirs: None,
        }
    }
}
