//! The HTTP servers section.

use std::fmt::Write as _;

use crate::data::{cell, stat, Rec, Stat};

/// The HTTP servers, in table order, as `bench/results/http.txt` names
/// them.
pub const HTTP_SERVERS: [&str; 3] = ["yieldloop", "hyper", "hyper_yieldloop"];

/// How the tables name a server.
fn label(server: &str) -> &str {
    match server {
        "hyper" => "hyper on tokio",
        "hyper_yieldloop" => "hyper on yieldloop",
        other => other,
    }
}
/// Keep-alive connections per HTTP run.
pub const HTTP_CONNS: [u64; 2] = [64, 256];

pub struct HttpCell {
    pub rps: Option<Stat>,
    pub cpu_us: Option<Stat>,
    pub user_pct: Option<Stat>,
    pub p50: Option<Stat>,
    pub p99: Option<Stat>,
    pub errors: u64,
    pub failures: Vec<String>,
}

pub fn http_cell(recs: &[Rec], server: &str, conns: u64, clk_tck: f64) -> HttpCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("server") == server && r.s("conns") == conns.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    HttpCell {
        rps: col(&|r| r.f("rps")),
        // Microseconds of server CPU per request, over every request of the
        // run (warm-up included).
        cpu_us: col(&|r| {
            (r.f("utime") + r.f("stime")) / clk_tck * 1e6 / r.f("requests_total").max(1.0)
        }),
        user_pct: col(&|r| {
            let t = r.f("utime") + r.f("stime");
            if t > 0.0 {
                100.0 * r.f("utime") / t
            } else {
                f64::NAN
            }
        }),
        p50: col(&|r| r.f("p50_us")),
        p99: col(&|r| r.f("p99_us")),
        errors: ok.iter().map(|r| r.f("errors").max(0.0) as u64).sum(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String, clk_tck: f64) {
    let _ = writeln!(w, "## HTTP servers\n");
    if let Some(skip) = recs.iter().find(|r| r.s("skipped") == "1") {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let load = m("http_load");
    let (gen, warmup) = if load == "wrk" {
        (
            format!(
                "`{}` with one thread (`wrk -t1 -c C -d {}s --latency`), which times every request \
                 of the run",
                m("http_load_version"),
                m("http_secs"),
            ),
            String::new(),
        )
    } else {
        (
            "`http_load` (`bench/src/bin/http_load.rs`: one thread on raw mio, `wrk` was not \
             installed)"
                .to_string(),
            format!(" after {} s of untimed load", m("http_warmup")),
        )
    };
    let _ = writeln!(
        w,
        "An HTTP/1.1 server on one thread: yieldloop runs the `http_server` recipe's \
         handler-based server (`recipes/src/http/`: `httparse`, one task per connection, \
         keep-alive, pipelining, a `Date` header formatted once a second) on one \
         scheduler; hyper 1.x serves the same routes on tokio `current_thread` (one \
         task per connection, `http1` with keep-alive, no timer); and hyper 1.x on \
         yieldloop with no tokio runtime (the hyper recipe, `recipes/src/hyper/`: one \
         yieldloop task per connection driving hyper's connection future, yieldloop's \
         sockets as hyper's I/O and its timers as hyper's timer, which turns on \
         hyper's header read timeout: one timer armed and disarmed per request). All \
         answer `GET /` with the same 22-byte body and set `TCP_NODELAY`. The load is {gen}: C keep-alive \
         connections in a closed loop, each sending `GET /` and waiting for the whole \
         answer before the next. Server pinned with `{}`, load with `{}`. A fresh \
         server per run; {} runs per cell, {} s measured{warmup}.\n",
        m("pin_server"),
        m("pin_client"),
        m("http_reps"),
        m("http_secs"),
    );
    let _ = writeln!(
        w,
        "**Server CPU per request** is (utime + stime) of the server process, read \
         from `/proc/PID/stat` before the load starts and 0.2 s after it ends, divided \
         by every request answered in the run (the tick is 1/{} s).\n",
        m("clk_tck"),
    );
    if recs.is_empty() {
        let _ = writeln!(
            w,
            "No data: `bench/results/http.txt` is missing or empty (the stage did not \
             run).\n"
        );
        return;
    }
    let header = |w: &mut String| {
        let _ = write!(w, "| server |");
        for c in HTTP_CONNS {
            let _ = write!(w, " {c} conns |");
        }
        let _ = writeln!(w, "\n|---|{}", "---:|".repeat(HTTP_CONNS.len()));
    };
    let mut failures = Vec::new();
    /// Which figure of a cell a table shows.
    type Figure = fn(&HttpCell) -> Option<Stat>;
    let tables: [(&str, Figure); 2] = [
        ("Requests per second: median (min–max)", |c| c.rps),
        ("Server CPU per request (µs): median (min–max)", |c| {
            c.cpu_us
        }),
    ];
    for (title, what) in tables {
        let _ = writeln!(w, "### {title}\n");
        header(w);
        for s in HTTP_SERVERS {
            let _ = write!(w, "| {} |", label(s));
            for c in HTTP_CONNS {
                let _ = write!(w, " {} |", cell(what(&http_cell(recs, s, c, clk_tck))));
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w, "### All HTTP measurements: median (min–max)\n");
    let _ = writeln!(
        w,
        "| server | conns | requests/s | CPU µs/request | user share of CPU (%) | p50 (µs) | p99 (µs) | client errors |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for s in HTTP_SERVERS {
        for c in HTTP_CONNS {
            let e = http_cell(recs, s, c, clk_tck);
            let s = label(s);
            failures.extend(e.failures.iter().map(|f| format!("{s}, {c} conns: {f}")));
            let _ = writeln!(
                w,
                "| {s} | {c} | {} | {} | {} | {} | {} | {} |",
                cell(e.rps),
                cell(e.cpu_us),
                cell(e.user_pct),
                cell(e.p50),
                cell(e.p99),
                e.errors,
            );
        }
    }
    let _ = writeln!(w);
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed HTTP runs:\n");
        for f in failures {
            let _ = writeln!(w, "- {}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}
