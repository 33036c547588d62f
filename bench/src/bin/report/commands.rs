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
    let used: Vec<String> = KNOBS
        .iter()
        .filter_map(|(knob, key)| {
            let key = (*key)?;
            let v = meta.get(key)?;
            let v = if v.contains(' ') {
                format!("\"{v}\"")
            } else {
                v.clone()
            };
            Some(match key {
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
         Knobs (environment variables, described at the top of `bench/run.sh`): {}; \
         this run used {}.",
        KNOBS
            .iter()
            .map(|(knob, _)| format!("`{knob}`"))
            .collect::<Vec<_>>()
            .join(", "),
        used.join(", "),
    );
    let _ = writeln!(w, "\n{AB}");
}

/// How a change to the hot path is measured against its base.
const AB: &str = "A change to the scheduler, the tasks, `io`, `sync` or the reactor is \
     measured against the revision it starts from with `bench/ab.sh BASE`: it builds \
     revision BASE and the working tree and runs the hand-over benchmarks, the echo \
     server's and the HTTP server's CPU per request in pairs of runs whose order \
     alternates, printing each build's median and the ratio per row.";

/// Every knob of `bench/run.sh`, in the order of its header, with the key
/// under which `meta.txt` keeps its value (none: not kept there).
const KNOBS: &[(&str, Option<&str>)] = &[
    ("REPS", Some("reps")),
    ("REPS_100K", Some("reps_100k")),
    ("REPS_1M", Some("reps_1m")),
    ("REPS_1M_ASYNCIO", Some("reps_1m_asyncio")),
    ("ECHO_REPS", Some("echo_reps")),
    ("ECHO_SECS", Some("echo_secs")),
    ("ECHO_WARMUP", Some("echo_warmup")),
    ("CELL_TIMEOUT", Some("cell_timeout")),
    ("SLEEPERS_NS", Some("sleepers_ns")),
    ("WARMUP", Some("warmup")),
    ("PRETOUCH", Some("pretouch")),
    ("FIRSTTOUCH_MAX_MB", Some("firsttouch_max_mb")),
    ("FIRSTTOUCH_SETTLE", Some("firsttouch_settle")),
    ("HANDOVER_REPS", Some("handover_reps")),
    ("FANOUT_REPS", Some("fanout_reps")),
    ("FANOUT_VALUES", Some("fanout_values")),
    ("FANOUT_RECEIVERS", Some("fanout_receivers")),
    ("FANOUT_TASKS", Some("fanout_tasks")),
    ("FANOUT_TIMEOUT", Some("fanout_timeout")),
    ("HANDOVER_TIMEOUT", Some("handover_timeout")),
    ("LATENESS_REPS", Some("lateness_reps")),
    ("LATENESS_TASKS", Some("lateness_tasks")),
    ("LATENESS_MAX_MS", Some("lateness_max_ms")),
    ("LATENESS_TIMEOUT", Some("lateness_timeout")),
    ("HTTP_REPS", Some("http_reps")),
    ("HTTP_SECS", Some("http_secs")),
    ("HTTP_WARMUP", Some("http_warmup")),
    // Its value shows as the load generator, beside HTTP_WARMUP's.
    ("HTTP_LOADGEN", None),
    ("HTTP2_REPS", None),
    ("HTTP2_N", None),
    ("HTTP2_WARMUP_N", None),
    ("HTTP2_CONNS", None),
    ("HTTP2_STREAMS", None),
    ("HTTP2_TIMEOUT", None),
    ("SCALE_REPS", Some("scale_reps")),
    ("SCALE_SECS", Some("scale_secs")),
    ("DB_REPS", Some("db_reps")),
    ("DB_RT_REPS", Some("db_rt_reps")),
    ("DB_N", Some("db_n")),
    ("DB_WARMUP", Some("db_warmup")),
    ("DB_TASKS", Some("db_tasks")),
    ("DB_WAIT_MS", Some("db_wait_ms")),
    ("DB_TIMEOUT", Some("db_timeout")),
    ("DB_PAIRS", Some("db_pairs")),
    ("DB_BATCH", Some("db_batch")),
    ("DB_TOKIO_WORKERS", Some("db_tokio_workers")),
    ("SERVICE_REPS", Some("service_reps")),
    ("HOOK_REPS", Some("hook_reps")),
    ("HOOK_ITERS", Some("hook_iters")),
    ("HOOK_BATCHES", Some("hook_batches")),
    ("HOOK_N", Some("hook_n")),
    ("HOOK_ROUNDS", Some("hook_rounds")),
    ("HOOK_TIMEOUT", Some("hook_timeout")),
    ("DIAG_REPS", Some("diag_reps")),
    ("DIAG_NS", Some("diag_ns")),
    ("DIAG_BASE", Some("diag_base")),
    ("DIAG_AB_REPS", Some("diag_ab_reps")),
    ("DIAG_ECHO_REPS", Some("diag_echo_reps")),
    ("DIAG_TIMEOUT", Some("diag_timeout")),
    ("FAIR_REPS", Some("fair_reps")),
    ("FAIR_SECS", Some("fair_secs")),
    ("FAIR_TIMEOUT", Some("fair_timeout")),
    ("FAIR_BASE", Some("fair_base")),
    ("FAIR_AB_REPS", Some("fair_ab_reps")),
    ("RECOVERY_REPS", Some("recovery_reps")),
    ("RECOVERY_SECS", Some("recovery_secs")),
    ("RECOVERY_KILL_AT", Some("recovery_kill_at")),
    ("RECOVERY_DOWN", Some("recovery_down")),
    ("RECOVERY_TASKS", Some("recovery_tasks")),
    ("ATTACK_REPS", Some("attack_reps")),
    ("ATTACK_CONNS", Some("attack_conns")),
    ("ATTACK_PIPE_CONNS", Some("attack_pipe_conns")),
    ("ATTACK_PIPE_BYTES", Some("attack_pipe_bytes")),
    ("ATTACK_PIPE_RCVBUF", Some("attack_pipe_rcvbuf")),
    ("ATTACK_SETTLE", Some("attack_settle")),
    ("ATTACK_SECS", Some("attack_secs")),
    ("ATTACK_CLIENT_CONNS", Some("attack_client_conns")),
    ("STAGES", Some("stages")),
    ("RUNTIMES", Some("runtimes")),
    // Where the report goes: the page itself.
    ("OUT_MD", None),
    ("OUT_SVG", None),
];

#[cfg(test)]
mod tests {
    use super::KNOBS;

    fn script() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/run.sh"))
            .expect("bench/run.sh")
    }

    /// The knobs that the comment at the top of run.sh describes, in its
    /// order: each name in capitals followed by its default in brackets.
    fn header_knobs() -> Vec<String> {
        let script = script();
        let header: Vec<&str> = script
            .lines()
            .take_while(|l| l.starts_with('#') || l.is_empty())
            .flat_map(str::split_whitespace)
            .collect();
        header
            .windows(2)
            .filter(|w| {
                w[1].starts_with('[')
                    && w[0].len() > 1
                    && w[0].starts_with(|c: char| c.is_ascii_uppercase())
                    && w[0]
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            })
            .map(|w| w[0].to_string())
            .collect()
    }

    #[test]
    fn every_knob_of_run_sh_is_listed_in_its_order() {
        let listed: Vec<&str> = KNOBS.iter().map(|(k, _)| *k).collect();
        assert_eq!(header_knobs(), listed);
    }

    /// run.sh writes every knob to meta.txt, its name in lower case, but
    /// those of its list NOT_IN_META.
    #[test]
    fn every_kept_knob_is_written_to_meta() {
        let script = script();
        let not_kept: Vec<&str> = script
            .lines()
            .find_map(|l| l.strip_prefix("NOT_IN_META=\""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("run.sh lists NOT_IN_META")
            .split_whitespace()
            .collect();
        for &(knob, key) in KNOBS {
            match key {
                Some(key) => assert!(
                    key == knob.to_lowercase() && !not_kept.contains(&knob),
                    "{knob}: run.sh does not write {key}= to meta.txt"
                ),
                None => assert!(
                    not_kept.contains(&knob),
                    "{knob}: run.sh writes it to meta.txt"
                ),
            }
        }
    }
}
