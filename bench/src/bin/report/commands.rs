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
    let _ = writeln!(
        w,
        "Raw results are written to `bench/results/` (not committed); this page and \
         `docs/img/sleepers.svg` are rendered from them by \
         `bench/target/release/report --results bench/results --md docs/benchmarks.md --svg docs/img/sleepers.svg`. \
         Knobs (environment variables): `REPS`, `REPS_100K`, `REPS_1M`, `ECHO_REPS`, \
         `ECHO_SECS`, `ECHO_WARMUP`, `CELL_TIMEOUT`, `SLEEPERS_NS`, `REPS_1M_ASYNCIO`, \
         `HANDOVER_REPS`, `HANDOVER_TIMEOUT`, `LATENESS_REPS`, `LATENESS_TASKS`, \
         `LATENESS_MAX_MS`, `LATENESS_TIMEOUT`, `HTTP_REPS`, `HTTP_SECS`, `HTTP_WARMUP`, \
         `HTTP_LOADGEN`, `SCALE_REPS`, `SCALE_SECS`; this run used \
         REPS={}, REPS_100K={}, REPS_1M={}, \
         REPS_1M_ASYNCIO={}, ECHO_REPS={}, ECHO_SECS={}, ECHO_WARMUP={}, HANDOVER_REPS={}, \
         HANDOVER_TIMEOUT={}, LATENESS_REPS={}, LATENESS_TASKS={}, LATENESS_MAX_MS={}, \
         LATENESS_TIMEOUT={}, HTTP_REPS={}, HTTP_SECS={}, HTTP_WARMUP={} (load generator: {}), \
         SCALE_REPS={}, SCALE_SECS={}.",
        m("reps"),
        m("reps_100k"),
        m("reps_1m"),
        m("reps_1m_asyncio"),
        m("echo_reps"),
        m("echo_secs"),
        m("echo_warmup"),
        m("handover_reps"),
        m("handover_timeout"),
        m("lateness_reps"),
        m("lateness_tasks"),
        m("lateness_max_ms"),
        m("lateness_timeout"),
        m("http_reps"),
        m("http_secs"),
        m("http_warmup"),
        m("http_load"),
        m("scale_reps"),
        m("scale_secs"),
    );
}
