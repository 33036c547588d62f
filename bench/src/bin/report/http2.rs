//! The section on HTTP/2 servers under `h2load` (`http2.txt`, from
//! run.sh's `http2` stage), and its Targets row.
//!
//! The stage writes its settings into its own first record (`kind=setup`),
//! so that this section needs nothing from `meta.txt`: `report --section
//! http2` after a run of that stage alone writes it into the page that is
//! there.

use std::fmt::Write as _;

use crate::bound::{row, Bound};
use crate::data::{cell, stat, thousands, Rec, Stat};
use crate::service::paired_ratio;

/// The section's heading: `--section http2` replaces the section it starts
/// in an existing page.
pub const HEADING: &str = "## HTTP/2 servers";

/// The servers, in table order: (key in `http2.txt`, row title).
const SERVERS: [(&str, &str); 2] = [
    (
        "hyper_yieldloop",
        "hyper on yieldloop (`yieldloop_http::with_hyper::serve_auto`)",
    ),
    ("hyper", "hyper on tokio `current_thread`"),
];

/// The Targets row's first cell; `--section http2` finds its old row by it.
const TARGET_WHAT: &str = "HTTP/2, 64 streams in flight (h2load): server CPU per request";

/// Microseconds of server CPU (every thread's on-CPU time, from schedstat)
/// per request that succeeded in the measured run.
fn cpu_us(r: &Rec) -> f64 {
    r.f("oncpu_ns") / 1e3 / r.f("succeeded").max(1.0)
}

/// The records of one server's runs.
fn runs<'a>(recs: &'a [Rec], server: &str) -> Vec<&'a Rec> {
    recs.iter().filter(|r| r.s("server") == server).collect()
}

/// Figure `f` over the server's successful runs.
fn col(recs: &[Rec], server: &str, f: &dyn Fn(&Rec) -> f64) -> Option<Stat> {
    stat(
        runs(recs, server)
            .into_iter()
            .filter(|r| r.ok())
            .map(f)
            .collect(),
    )
}

pub fn section(w: &mut String, recs: &[Rec]) {
    let _ = writeln!(w, "{HEADING}\n");
    if let Some(skip) = recs.iter().find(|r| r.s("skipped") == "1") {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let Some(setup) = recs.iter().find(|r| r.s("kind") == "setup") else {
        let _ = writeln!(w, "Not run in this run (stage `http2`).\n");
        return;
    };
    let s = |k: &str| setup.s(k).to_string();
    let (conns, streams): (u64, u64) = (
        setup.s("conns").parse().unwrap_or(0),
        setup.s("streams").parse().unwrap_or(0),
    );
    let n = |k: &str| thousands(setup.s(k).parse().unwrap_or(0));
    let pin = |k: &str| setup.s(k).replace('_', " ");
    let _ = writeln!(
        w,
        "HTTP/2 over cleartext TCP with prior knowledge (h2c) on one thread: \
         hyper 1.x with hyper-util's `auto` server on tokio `current_thread` \
         (`bench/src/bin/http2_hyper.rs`, a tokio task per connection and per \
         stream), and the same server on yieldloop with no tokio runtime \
         (`bench/src/bin/http2_hyper_yieldloop.rs`: \
         `yieldloop_http::with_hyper::serve_auto`, a yieldloop task per \
         connection and per stream). Both answer `GET /` with the same 22-byte \
         body. **The load** is `h2load -c {conns} -m {streams} -n {} \
         http://127.0.0.1:PORT/` ({}, one client thread): {conns} connections, \
         each with {streams} streams open at once, so {} requests in flight; \
         each stream is one `GET /`, and a connection opens the next as soon \
         as one ends, until {} requests have been sent. Before it, on the same \
         server, a discarded warm-up run of {} requests (`-n {}`, connections \
         of its own). Server pinned with `{}`, h2load with `{}`. A fresh server \
         per run; {} runs per server, the two in turn and the order flipped \
         every run; median (min–max).\n",
        s("n"),
        s("h2load"),
        conns * streams,
        n("n"),
        n("warmup_n"),
        s("warmup_n"),
        pin("pin_server"),
        pin("pin_client"),
        s("reps"),
    );
    let _ = writeln!(
        w,
        "**Requests per second** is h2load's figure for the measured run. \
         **Server CPU per request** is the on-CPU time of every thread of the \
         server (`/proc/PID/task/*/schedstat`), read just before the measured \
         run and 0.2 s after it, divided by the requests that succeeded in it; \
         the user share is utime / (utime + stime) from `/proc/PID/stat` over \
         the same span. *Request time* is h2load's mean time from a stream's \
         request to its response, with 64 in flight.\n"
    );
    let _ = writeln!(
        w,
        "| server | requests/s | server CPU per request (µs) | user share of CPU (%) | mean request time (µs) | failed requests |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|");
    let mut failures = Vec::new();
    for (key, title) in SERVERS {
        // h2load's failed, errored and timed-out requests, over every run.
        let failed: u64 = runs(recs, key)
            .iter()
            .filter(|r| r.ok())
            .map(|r| (r.f("failed") + r.f("errored") + r.f("timeout")).max(0.0) as u64)
            .sum();
        let _ = writeln!(
            w,
            "| {title} | {} | {} | {} | {} | {} |",
            cell(col(recs, key, &|r| r.f("rps"))),
            cell(col(recs, key, &cpu_us)),
            cell(col(recs, key, &|r| {
                let t = r.f("utime") + r.f("stime");
                if t > 0.0 {
                    100.0 * r.f("utime") / t
                } else {
                    f64::NAN
                }
            })),
            cell(col(recs, key, &|r| r.f("req_mean_us"))),
            thousands(failed),
        );
        failures.extend(runs(recs, key).iter().filter(|r| !r.ok()).map(|r| {
            format!(
                "{key} run {}: {}",
                r.s("rep"),
                r.reason.as_deref().unwrap_or("failed")
            )
        }));
    }
    let med = |key| col(recs, key, &cpu_us).map(|s| s.med);
    if let (Some(ours), Some(theirs)) = (med("hyper_yieldloop"), med("hyper")) {
        let paired = paired_ratio(recs, "hyper_yieldloop", "hyper", &cpu_us);
        let _ = writeln!(
            w,
            "\nServer CPU per request, yieldloop / tokio: {:.2} (the two medians){}.",
            ours / theirs,
            paired.map_or(String::new(), |p| format!(
                ", {p:.3} (the median of the runs' pairs)"
            )),
        );
    }
    let end = recs.iter().find(|r| r.s("kind") == "end");
    let _ = writeln!(
        w,
        "\nMeasured {} (load average {} at the start of the stage, {} at its end).\n",
        s("date").replace('T', " ").replace('Z', " UTC"),
        s("load_start").replace('/', " "),
        end.map_or("?".into(), |e| e.s("load_end").replace('/', " ")),
    );
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed runs: {}.\n", failures.join("; "));
    }
}

/// The Targets row: yieldloop's server CPU per request against tokio's,
/// judged on the median of the runs' pairs.
pub fn target_row(w: &mut String, recs: &[Rec]) {
    let med = |key| col(recs, key, &cpu_us).map(|s| s.med);
    let yard = "hyper on tokio";
    let bound = match (
        med("hyper"),
        paired_ratio(recs, "hyper_yieldloop", "hyper", &cpu_us),
    ) {
        (Some(theirs), Some(ratio)) if theirs > 0.0 => Bound::Paired {
            name: yard,
            theirs,
            ratio,
            max: 1.0,
        },
        (theirs, _) => Bound::Ratio(yard, theirs, 1.0),
    };
    row(w, TARGET_WHAT, med("hyper_yieldloop"), "µs", bound);
}

/// `page` with its HTTP/2 section replaced by `section` (which starts with
/// [`HEADING`]) or, where it has none, put after the HTTP servers section;
/// and with its Targets row replaced by `target` (one table row), or added
/// at the end of that table.
pub fn splice(page: &str, section: &str, target: &str) -> String {
    let page = crate::splice::section(page, HEADING, "## HTTP servers", section);
    crate::splice::target_rows(&page, &format!("{TARGET_WHAT} |"), target)
}
