//! The Timer lateness section.

use std::fmt::Write as _;

use crate::data::{cell, num, stat, Rec, Stat};

pub const LATENESS_RUNTIMES: [&str; 3] = ["yieldloop", "tokio", "may"];
/// (variant key, label).
pub const LATENESS_VARIANTS: [(&str, &str); 2] = [
    ("normal", "normal"),
    ("rt", "realtime priority (`chrt -f 50`)"),
];
/// (field, column title).
pub const LATENESS_COLUMNS: [(&str, &str); 5] = [
    ("p50_us", "p50"),
    ("p90_us", "p90"),
    ("p99_us", "p99"),
    ("p999_us", "p99.9"),
    ("max_us", "max"),
];

pub struct LatenessCell {
    /// One statistic per entry of `LATENESS_COLUMNS`.
    pub cols: Vec<Option<Stat>>,
    /// Early wake-ups summed over the successful runs, and the largest one (µs).
    pub early: u64,
    pub max_early_us: f64,
    pub runs: usize,
    pub failure: Option<String>,
    pub tried: bool,
}

pub fn lateness_cell(recs: &[Rec], rt: &str, variant: &str) -> LatenessCell {
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

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
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
