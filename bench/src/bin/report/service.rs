//! The Redis-backed service section: the example service's Redis endpoint
//! on one thread, yieldloop's recipe against hyper and redis's tokio client.

use std::fmt::Write as _;

use crate::data::{cell, stat, Rec, Stat};

/// The servers, in table order.
pub const SERVICE_SERVERS: [&str; 4] = ["yieldloop", "tokio", "yieldloop-pool", "yieldloop-hook"];

pub struct ServiceCell {
    pub rps: Option<Stat>,
    pub p50: Option<Stat>,
    pub p99: Option<Stat>,
    /// Service CPU per request (µs).
    pub cpu_us: Option<Stat>,
    /// Redis's CPU per request (µs).
    pub redis_us: Option<Stat>,
    pub errors: u64,
    pub failures: Vec<String>,
}

pub fn service_cell(recs: &[Rec], server: &str, clk_tck: f64) -> ServiceCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("server") == server && r.s("skipped") != "1")
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    let per_request = |ticks: f64, r: &Rec| ticks / clk_tck * 1e6 / r.f("requests_total").max(1.0);
    ServiceCell {
        rps: col(&|r| r.f("rps")),
        p50: col(&|r| r.f("p50_us")),
        p99: col(&|r| r.f("p99_us")),
        cpu_us: col(&|r| per_request(r.f("utime") + r.f("stime"), r)),
        redis_us: col(&|r| per_request(r.f("redis_utime") + r.f("redis_stime"), r)),
        errors: ok.iter().map(|r| r.f("errors").max(0.0) as u64).sum(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

/// The median over the runs of `a`'s figure `f` divided by `b`'s in the
/// same run (`rep`): runs made side by side see the machine alike, so
/// their ratios scatter less than the two medians do.
pub fn paired_ratio(recs: &[Rec], a: &str, b: &str, f: &dyn Fn(&Rec) -> f64) -> Option<f64> {
    let of = |server: &str, rep: &str| {
        recs.iter()
            .find(|r| r.ok() && r.s("server") == server && r.s("rep") == rep)
            .map(f)
    };
    let ratios = recs
        .iter()
        .filter(|r| r.ok() && r.s("server") == a)
        .filter_map(|r| Some(f(r) / of(b, r.s("rep"))?))
        .collect();
    stat(ratios).map(|s| s.med)
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String, clk_tck: f64) {
    let _ = writeln!(w, "## A Redis-backed HTTP service\n");
    if let Some(skip) = recs.iter().find(|r| r.s("skipped") == "1") {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let load = if m("http_load") == "wrk" {
        format!(
            "`{}` (`wrk -t1 -c 64 -d {}s --latency`)",
            m("http_load_version"),
            m("http_secs")
        )
    } else {
        format!(
            "`http_load` (wrk was not installed) after {} s of untimed load",
            m("http_warmup")
        )
    };
    let _ = writeln!(
        w,
        "The example service's counter endpoint, `GET /hits/bench`: one Redis `GET` \
         per request and a small JSON answer, on one thread. yieldloop runs the \
         `service` example's handler (`yieldloop_recipes::service`) on one worker of \
         the recipes' HTTP server, its Redis calls going over the worker's one \
         `Multiplexed` connection (the Redis recipe's: the commands that tasks issue \
         in the same scheduler turn go out in one write, their replies come back in \
         one read, only the calling tasks waiting); `yieldloop-pool` is the same \
         service with the recipe's per-worker pool instead (up to 64 connections, \
         one round trip per command); `yieldloop-hook` is the same service again with \
         its Redis commands sent by the `redis` crate's own synchronous client, \
         unmodified (`bench/src/bin/service_hook.rs`, built with feature `hook`: \
         each call on its blocking `std::net::TcpStream` pauses only its request's \
         task; the worker keeps the connections it opened, one per request in \
         flight). tokio runs the same endpoint with hyper 1.x on \
         `current_thread` and the redis crate's own tokio client: one \
         `MultiplexedConnection` shared by every request, which pipelines the \
         commands of all connections over one socket. Redis {} runs for the whole \
         stage, pinned with the load (`{}`); the service is pinned with `{}`. The \
         load is {load}: 64 keep-alive connections in a closed loop. A fresh service \
         per run; {} runs per server, {} s each, the servers taken in turn in one \
         order and then in the opposite one. CPU per request is the process's \
         (utime + stime) from `/proc/PID/stat` over the run divided by the requests \
         answered, for the service and for Redis (1/{} s ticks: coarse).\n",
        m("redis_version"),
        m("pin_client"),
        m("pin_server"),
        m("service_reps"),
        m("http_secs"),
        m("clk_tck"),
    );
    if recs.is_empty() {
        let _ = writeln!(
            w,
            "No data: `bench/results/service.txt` is missing or empty (the stage did \
             not run).\n"
        );
        return;
    }
    let _ = writeln!(w, "Median (min–max) over the runs:\n");
    let _ = writeln!(
        w,
        "| server | requests/s | p50 (µs) | p99 (µs) | service CPU µs/request | Redis CPU µs/request | client errors |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
    let mut failures = Vec::new();
    for s in SERVICE_SERVERS {
        let c = service_cell(recs, s, clk_tck);
        failures.extend(c.failures.iter().map(|f| format!("{s}: {f}")));
        let _ = writeln!(
            w,
            "| {s} | {} | {} | {} | {} | {} | {} |",
            cell(c.rps),
            cell(c.p50),
            cell(c.p99),
            cell(c.cpu_us),
            cell(c.redis_us),
            c.errors,
        );
    }
    let _ = writeln!(w);
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed service runs:\n");
        for f in failures {
            let _ = writeln!(w, "- {}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}
