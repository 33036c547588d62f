//! The Commands section: what ran, and how to run it again.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The command lines of the run, the knobs and their values.
pub fn section(w: &mut String, meta: &BTreeMap<String, String>, commands: &str) {
    let m = |k: &str| meta.get(k).map_or("?", String::as_str);
    let _ = writeln!(w, "## Commands\n");
    let _ = writeln!(
        w,
        "Everything above comes from one `bench/run.sh` (run from the repository \
         root or anywhere else). It builds `bench/` (its own cargo crate, target dir \
         `bench/target`) and yieldloop's `echo_server` and `echo_load` examples in \
         release mode and runs:\n"
    );
    let _ = writeln!(w, "```sh\n{}```\n", commands);
    // The knobs whose values meta.txt keeps, in the order of run.sh's header.
    let knobs = [
        ("REPS", "reps"),
        ("REPS_100K", "reps_100k"),
        ("REPS_1M", "reps_1m"),
        ("REPS_1M_ASYNCIO", "reps_1m_asyncio"),
        ("WARMUP", "warmup"),
        ("PRETOUCH", "pretouch"),
        ("FIRSTTOUCH_MAX_MB", "firsttouch_max_mb"),
        ("FIRSTTOUCH_SETTLE", "firsttouch_settle"),
        ("ECHO_REPS", "echo_reps"),
        ("ECHO_SECS", "echo_secs"),
        ("ECHO_WARMUP", "echo_warmup"),
        ("HANDOVER_REPS", "handover_reps"),
        ("HANDOVER_TIMEOUT", "handover_timeout"),
        ("LATENESS_REPS", "lateness_reps"),
        ("LATENESS_TASKS", "lateness_tasks"),
        ("LATENESS_MAX_MS", "lateness_max_ms"),
        ("LATENESS_TIMEOUT", "lateness_timeout"),
        ("HTTP_REPS", "http_reps"),
        ("HTTP_SECS", "http_secs"),
        ("HTTP_WARMUP", "http_warmup"),
        ("SERVICE_REPS", "service_reps"),
        ("SCALE_REPS", "scale_reps"),
        ("SCALE_SECS", "scale_secs"),
        ("DB_REPS", "db_reps"),
        ("DB_N", "db_n"),
        ("DB_WARMUP", "db_warmup"),
        ("DB_TASKS", "db_tasks"),
        ("DB_WAIT_MS", "db_wait_ms"),
        ("DB_TIMEOUT", "db_timeout"),
        ("DB_TOKIO_WORKERS", "db_tokio_workers"),
        ("HOOK_REPS", "hook_reps"),
        ("HOOK_ITERS", "hook_iters"),
        ("HOOK_BATCHES", "hook_batches"),
        ("HOOK_N", "hook_n"),
        ("HOOK_ROUNDS", "hook_rounds"),
        ("HOOK_TIMEOUT", "hook_timeout"),
        ("STAGES", "stages"),
        ("RUNTIMES", "runtimes"),
    ];
    let used: Vec<String> = knobs
        .iter()
        .filter_map(|(knob, key)| {
            let v = meta.get(*key)?;
            let v = if v.contains(' ') {
                format!("\"{v}\"")
            } else {
                v.clone()
            };
            Some(match *key {
                "http_warmup" => format!("{knob}={v} (load generator: {})", m("http_load")),
                _ => format!("{knob}={v}"),
            })
        })
        .collect();
    let _ = writeln!(
        w,
        "Raw results are written to `bench/results/` (not committed); this page and \
         `docs/src/img/sleepers.svg` are rendered from them by \
         `bench/target/release/report --results bench/results --md docs/benchmarks.md --svg docs/src/img/sleepers.svg`. \
         Knobs (environment variables, described at the top of `bench/run.sh`): `REPS`, \
         `REPS_100K`, `REPS_1M`, `REPS_1M_ASYNCIO`, `WARMUP`, `PRETOUCH`, `FIRSTTOUCH_MAX_MB`, \
         `FIRSTTOUCH_SETTLE`, `ECHO_REPS`, `ECHO_SECS`, `ECHO_WARMUP`, `CELL_TIMEOUT`, \
         `SLEEPERS_NS`, `HANDOVER_REPS`, `HANDOVER_TIMEOUT`, `LATENESS_REPS`, \
         `LATENESS_TASKS`, `LATENESS_MAX_MS`, `LATENESS_TIMEOUT`, `HTTP_REPS`, `HTTP_SECS`, \
         `HTTP_WARMUP`, `HTTP_LOADGEN`, `SERVICE_REPS`, `SCALE_REPS`, `SCALE_SECS`, `DB_REPS`, \
         `DB_N`, `DB_WARMUP`, `DB_TASKS`, `DB_WAIT_MS`, `DB_TIMEOUT`, `DB_TOKIO_WORKERS`, \
         `HOOK_REPS`, `HOOK_ITERS`, `HOOK_BATCHES`, `HOOK_N`, `HOOK_ROUNDS`, `HOOK_TIMEOUT`, \
         `STAGES`, `RUNTIMES`, \
         `OUT_MD`, `OUT_SVG`; this run used {}.",
        used.join(", "),
    );
}
