//! The Thread-per-core scaling section.

use std::fmt::Write as _;

use crate::data::{cell, num, stat, Rec, Stat};

/// Client threads of the scaling stage.
pub const SCALE_CLIENTS: [u64; 2] = [1, 2];
/// Server workers of the scaling stage.
pub const SCALE_WORKERS: [u64; 2] = [1, 2];

pub struct ScalingCell {
    pub rps: Option<Stat>,
    pub us_per_rt: Option<Stat>,
    pub vcs: Option<Stat>,
    pub ivcs: Option<Stat>,
    pub runs: usize,
    pub failures: Vec<String>,
}

pub fn scaling_cell(recs: &[Rec], clients: u64, workers: u64) -> ScalingCell {
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

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
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
