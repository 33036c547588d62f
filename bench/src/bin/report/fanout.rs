//! The Fan-out section: work spread over two workers (bench/src/bin/fanout.rs
//! and `gobench fanout`), and its target row.

use std::fmt::Write as _;

use crate::data::{cell, num, stat, Rec, Stat};

/// (runtime key, label) of the broadcast fan-out.
pub const BROADCAST_RUNTIMES: [(&str, &str); 3] = [
    (
        "yieldloop",
        "broadcast fan-out, yieldloop `sync::broadcast`",
    ),
    (
        "tokio",
        "broadcast fan-out, tokio multi-thread `sync::broadcast`",
    ),
    ("go", "broadcast fan-out, Go (a channel per receiver)"),
];

/// (runtime key, label) of the skewed fan-out.
pub const SKEWED_RUNTIMES: [(&str, &str); 4] = [
    ("yieldloop", "skewed fan-out, Runtime::spawn"),
    ("yieldloop-rr", "skewed fan-out, spawn_on round-robin"),
    ("tokio", "skewed fan-out, tokio multi-thread"),
    ("go", "skewed fan-out, Go"),
];

/// One cell: the statistics of field `key` over the successful runs, and
/// the first failure, if any.
pub struct FanoutCell {
    pub stat: Option<Stat>,
    pub failure: Option<String>,
    pub tried: bool,
}

pub fn fanout_cell(recs: &[Rec], rt: &str, bench: &str, key: &str) -> FanoutCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("bench") == bench)
        .collect();
    FanoutCell {
        stat: stat(mine.iter().filter(|r| r.ok()).map(|r| r.f(key)).collect()),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
    }
}

/// The target row: `Runtime::spawn` within 1.1 times tokio's work stealing
/// on the skewed fan-out.
pub fn target(recs: &[Rec]) -> crate::bound::Target {
    let wall = |rt| {
        fanout_cell(recs, rt, "skewed", "wall_ms")
            .stat
            .map(|s| s.med)
    };
    crate::bound::Target {
        what: "skewed fan-out, 2 workers: wall time (Runtime::spawn)",
        ours: wall("yieldloop"),
        theirs: wall("tokio"),
        yardstick: "tokio multi-thread (work stealing)",
        max_ratio: 1.1,
        unit: "ms",
        paired: None,
    }
}

fn table(
    w: &mut String,
    recs: &[Rec],
    bench: &str,
    rows: &[(&str, &str)],
    cols: &[(&str, &str)],
    notes: &mut Vec<String>,
) {
    let _ = write!(w, "| row |");
    for (_, title) in cols {
        let _ = write!(w, " {title} |");
    }
    let _ = writeln!(w, " runs |\n|---|{}---:|", "---:|".repeat(cols.len()));
    for (rt, label) in rows {
        let cells: Vec<FanoutCell> = cols
            .iter()
            .map(|(k, _)| fanout_cell(recs, rt, bench, k))
            .collect();
        if !cells[0].tried {
            let _ = writeln!(w, "| {label} |{} 0 |", " not run |".repeat(cols.len()));
            continue;
        }
        let _ = write!(w, "| {label} |");
        for c in &cells {
            let _ = write!(w, " {} |", cell(c.stat));
        }
        let mut runs = cells[0].stat.map_or(0, |s| s.n).to_string();
        if let Some(reason) = &cells[0].failure {
            notes.push(format!("{label}: {reason}"));
            runs = format!("{runs}, failed [{}]", notes.len());
        }
        let _ = writeln!(w, " {runs} |");
    }
    let _ = writeln!(w);
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Fan-out over two workers\n");
    let _ = writeln!(
        w,
        "Work spread over two worker threads (Go: `GOMAXPROCS=2`). Each cell is the \
         median over {} runs (min–max in brackets), one process per run.\n",
        m("fanout_reps")
    );
    let _ = writeln!(
        w,
        "**Broadcast fan-out**: a sender on the main thread sends {} values to {} \
         receivers, tasks spread evenly over the two workers, each of which receives \
         every value (the channel keeps them all, so none lags). yieldloop: \
         `sync::broadcast`; tokio: `sync::broadcast` on its multi-thread runtime; Go has \
         no broadcast channel and writes every value to a buffered channel per receiver \
         (1,024 slots). The time per delivery is the wall time over values times \
         receivers.\n",
        m("fanout_values"),
        m("fanout_receivers")
    );
    let mut notes = Vec::new();
    table(
        w,
        recs,
        "broadcast",
        &BROADCAST_RUNTIMES,
        &[
            ("wall_ms", "wall (ms)"),
            ("ns_per_delivery", "per delivery (ns)"),
        ],
        &mut notes,
    );
    let _ = writeln!(
        w,
        "**Skewed fan-out**: {} tasks, each burning CPU for a cost drawn from a Pareto \
         distribution (shape 1.5, so a few cost hundreds of times the median; the same \
         costs for every runtime), all spawned at once from the main thread and joined \
         there. `Runtime::spawn` lets the least-loaded worker take each task when it \
         starts; `spawn_on` round-robin deals them out in turn; tokio and Go steal work \
         between their workers. The serial column is the same work done on one thread \
         by the same process first: Go's compiler makes the cost loop slower, so compare \
         Go by its wall time over its serial time.\n",
        m("fanout_tasks")
    );
    table(
        w,
        recs,
        "skewed",
        &SKEWED_RUNTIMES,
        &[("wall_ms", "wall (ms)"), ("serial_ms", "serial (ms)")],
        &mut notes,
    );
    let t = target(recs);
    if let (Some(a), Some(b)) = (t.ours, t.theirs) {
        let _ = writeln!(
            w,
            "`Runtime::spawn` against tokio's work stealing: {} against {} ms, {:.2}× \
             (target ≤ {:.2}×).\n",
            num(a),
            num(b),
            a / b,
            t.max_ratio
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(w, "Failures (the last line the process printed):\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, n.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}
