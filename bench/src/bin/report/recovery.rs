//! The section on Redis clients recovering from a server restart
//! (`recovery.txt`, from bench/src/bin/redis_recovery.rs and run.sh's
//! `recovery` stage).

use std::fmt::Write as _;

use crate::data::{cell, stat, Rec};

/// The section's heading: `--section recovery` replaces the section it
/// starts in an existing page.
pub const HEADING: &str = "## Recovery after a Redis restart";

/// (route key, row title).
pub const RECOVERY_ROUTES: [(&str, &str); 4] = [
    ("pooled", "pooled native (`Pool`, 8 connections)"),
    ("multiplexed", "multiplexed native (`Multiplexed`)"),
    ("on_tokio", "on_tokio, redis's `ConnectionManager`"),
    (
        "hook_pooled",
        "redis's sync client under `hook`, `yieldloop_pool::Pool` (8 connections)",
    ),
];

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "{HEADING}\n");
    if !m("stages").split_whitespace().any(|s| s == "recovery") {
        let _ = writeln!(w, "Not run in this run (stage `recovery`).\n");
        return;
    }
    if let Some(skip) = recs.iter().find(|r| r.s("skipped") == "1") {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let _ = writeln!(
        w,
        "Redis clients of one yieldloop thread under load while their server \
         goes away and comes back: {} tasks send `INCR` after `INCR` for {} s \
         (`redis_recovery --route R`); {} s in, the redis-server ({}) is killed \
         with SIGKILL, and {} s later a new one starts on the same port. A task \
         that gets an error pauses 10 ms before its next call. **pooled**: \
         `yieldloop_redis::Pool`, which drops a broken connection and connects \
         at the next checkout; **multiplexed**: `yieldloop_redis::Multiplexed`, \
         one connection that a task of its own replaces in the background \
         (`Reconnect`'s defaults: at once, then 100 ms doubling to 2 s, \
         jittered); **on_tokio**: redis's `aio::ConnectionManager` through \
         `on_tokio`, configured as chapter 12 shows (one retry per reconnect, \
         50–500 ms delays, 1 s connect timeout), which reconnects when a call \
         finds the connection gone; **hook_pooled**: the `redis` crate's own \
         sync client in a build with feature `hook`, its connections in a \
         `yieldloop_pool::Pool` (at most 8, 1 s connect and 2 s read \
         timeouts), which drops a connection the client marks closed. Every call came back with its reply or an \
         error. *First success* is the time from the start of the new server \
         (`redis-server` launched; it accepts a few milliseconds later) to the \
         first call that succeeded; *outage \
         seen* from the first failed call to the first success after the last \
         failed one. {} runs per route, \
         the routes in turn; median (min–max).\n",
        m("recovery_tasks"),
        m("recovery_secs"),
        m("recovery_kill_at"),
        m("redis_version"),
        m("recovery_down"),
        m("recovery_reps"),
    );
    let _ = writeln!(
        w,
        "| route | failed calls | first success after the restart (ms) | outage seen (ms) | slowest failed call (ms) | calls that succeeded |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for (key, title) in RECOVERY_ROUTES {
        let mine: Vec<&Rec> = recs.iter().filter(|r| r.s("route") == key).collect();
        let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
        let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
        let ms_after = |r: &Rec, a: &str, b: &str| (r.f(a) - r.f(b)) * 1e3;
        let _ = writeln!(
            w,
            "| {title} | {} | {} | {} | {} | {} |",
            cell(col(&|r| r.f("failed"))),
            cell(col(&|r| ms_after(r, "recovered_unix", "restarted_unix"))),
            cell(col(&|r| ms_after(r, "recovered_unix", "first_fail_unix"))),
            cell(col(&|r| r.f("slowest_fail_ms"))),
            cell(col(&|r| r.f("succeeded"))),
        );
        failures.extend(mine.iter().filter(|r| !r.ok()).map(|r| {
            format!(
                "{key} run {}: {}",
                r.s("rep"),
                r.reason.as_deref().unwrap_or("failed")
            )
        }));
    }
    let _ = writeln!(
        w,
        "\nMeasured {} (load average {} at the start of the run, {} at its end).",
        m("date"),
        m("load_start"),
        m("load_end"),
    );
    let _ = writeln!(w);
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed runs: {}.\n", failures.join("; "));
    }
}

/// `page` with its recovery section replaced by `section` (which starts
/// with [`HEADING`]), or, where it has none, `section` put after the
/// fairness section (or before `## Commands`, or at the end).
pub fn splice(page: &str, section: &str) -> String {
    crate::splice::section(page, HEADING, "## Fairness", section)
}
