//! The section on HTTP servers under attack (`attack.txt`, from
//! bench/src/bin/http_attack.rs and run.sh's `attack` stage), and its
//! Targets rows.

use std::fmt::Write as _;

use crate::bound::{row, Bound};
use crate::data::{cell, num, stat, thousands, Rec, Stat};

/// The attacks, in table order: (key, what an attacking connection does,
/// yieldloop's server, hyper's server, as `attack.txt` names them). Each
/// server's unattacked runs are its records of kind `none`.
const ATTACKS: [(&str, &str, &str, &str); 4] = [
    (
        "body",
        "`POST /upload`, `Content-Length: 1048576`, one body byte, held",
        "yieldloop",
        "hyper",
    ),
    ("idle", "connects and sends nothing", "yieldloop", "hyper"),
    (
        "pipeline",
        "pipelines `GET /page` (4 KiB answers), never reads an answer",
        "yieldloop",
        "hyper",
    ),
    (
        "tls-hello",
        "the first 100 bytes of a TLS ClientHello, held (a half-open handshake; TLS servers: hyper on yieldloop through `serve_tls`, hyper on tokio through tokio-rustls)",
        "yieldloop_tls",
        "hyper_tls",
    ),
];

/// How the notes name a server.
fn label(server: &str) -> &str {
    match server {
        "hyper" => "hyper on tokio",
        "yieldloop_tls" => "hyper on yieldloop over TLS",
        "hyper_tls" => "hyper on tokio over TLS",
        other => other,
    }
}

/// Why the TLS runs were skipped, if they were.
fn tls_skipped(recs: &[Rec]) -> Option<String> {
    recs.iter()
        .find(|r| r.s("skipped") == "1" && r.s("kind") == "tls-hello")
        .map(|r| {
            format!(
                "not measured ({})",
                r.reason.as_deref().unwrap_or("no reason given")
            )
        })
}

/// The allowed share of the unattacked rate, as a ratio of times per
/// request: at least 0.9 of the rate.
const MIN_SHARE: f64 = 0.9;

fn runs<'a>(recs: &'a [Rec], server: &str, kind: &str) -> Vec<&'a Rec> {
    recs.iter()
        .filter(|r| r.ok() && r.s("server") == server && r.s("kind") == kind)
        .collect()
}

/// Resident memory the attack added, per attacking connection (bytes).
fn per_conn(recs: &[Rec], server: &str, kind: &str) -> Option<Stat> {
    stat(
        runs(recs, server, kind)
            .iter()
            .map(|r| (r.f("rss1_kb") - r.f("rss0_kb")) * 1024.0 / r.f("connected"))
            .collect(),
    )
}

/// The normal client's requests per second.
fn rps(recs: &[Rec], server: &str, kind: &str) -> Option<Stat> {
    stat(
        runs(recs, server, kind)
            .iter()
            .map(|r| r.f("rps"))
            .collect(),
    )
}

/// The normal client's rate during `kind` over its rate on the same server
/// once the attackers had gone, run by run: the median of those pairs.
fn paired_share(recs: &[Rec], server: &str, kind: &str) -> Option<Stat> {
    stat(
        runs(recs, server, kind)
            .iter()
            .map(|r| r.f("rps") / r.f("after_rps"))
            .collect(),
    )
}

/// The normal client's median rate during `kind` over its median
/// unattacked rate (fresh servers, no attacker).
fn share(recs: &[Rec], server: &str, kind: &str) -> Option<f64> {
    let during = rps(recs, server, kind)?.med;
    let alone = rps(recs, server, "none")?.med;
    (alone > 0.0).then(|| during / alone)
}

/// The Targets rows: per attack, memory per attacking connection at most
/// hyper's, and the normal client served at least 0.9 of its unattacked
/// rate (as a time per request, at most 1 / 0.9 of the unattacked one).
pub fn target_rows(w: &mut String, recs: &[Rec]) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    let us_per_req = |server, kind| {
        med(rps(recs, server, kind))
            .filter(|&r| r > 0.0)
            .map(|r| 1e6 / r)
    };
    let skipped = tls_skipped(recs);
    for (kind, _, ours, theirs) in ATTACKS {
        let title = attack_title(kind);
        let paired = paired_share(recs, ours, kind).map(|s| 1.0 / s.med);
        let after_us = stat(
            runs(recs, ours, kind)
                .iter()
                .map(|r| 1e6 / r.f("after_rps"))
                .collect(),
        )
        .map(|s| s.med);
        let rate_bound = match (paired, after_us) {
            (Some(ratio), Some(theirs)) => Bound::Paired {
                name: "the same server once the attackers had gone",
                theirs,
                ratio,
                max: 1.0 / MIN_SHARE,
            },
            _ => Bound::Ratio(
                "the same server once the attackers had gone",
                None,
                1.0 / MIN_SHARE,
            ),
        };
        let rows = [
            (
                format!("{TARGET_PREFIX} {title}: resident memory per attacking connection"),
                med(per_conn(recs, ours, kind)),
                "bytes",
                Bound::Ratio(
                    if kind == "tls-hello" { "hyper on tokio (tokio-rustls)" } else { "hyper on tokio" },
                    med(per_conn(recs, theirs, kind)),
                    1.0,
                ),
            ),
            (
                format!(
                    "{TARGET_PREFIX} {title}: a normal client's time per request (1 / requests per second; at least 0.9 of its unattacked rate)"
                ),
                us_per_req(ours, kind),
                "µs",
                rate_bound,
            ),
        ];
        for (what, figure, unit, bound) in rows {
            match (&skipped, kind, figure) {
                (Some(why), "tls-hello", None) => {
                    let (yard, allowed) = match bound {
                        Bound::Ratio(name, _, max) => (name, max),
                        _ => ("", 1.0),
                    };
                    let _ = writeln!(w, "| {what} | | {yard} | | | ≤ {allowed:.2} | {why} |");
                }
                _ => row(w, &what, figure, unit, bound),
            }
        }
    }
}

/// How the Targets rows name an attack.
fn attack_title(kind: &str) -> &'static str {
    match kind {
        "body" => "large declared body",
        "idle" => "idle connections",
        "pipeline" => "pipelining without reading",
        _ => "a half-open TLS handshake (hyper on yieldloop, yieldloop-rustls)",
    }
}

/// The section's heading.
pub const HEADING: &str = "## HTTP servers under attack";
/// How this stage's Targets rows begin.
pub const TARGET_PREFIX: &str = "HTTP server under attack,";

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "{HEADING}\n");
    if !m("stages").split_whitespace().any(|s| s == "attack") {
        let _ = writeln!(w, "Not run in this run (stage `attack`).\n");
        return;
    }
    if let Some(skip) = recs
        .iter()
        .find(|r| r.s("skipped") == "1" && r.s("kind").is_empty())
    {
        let _ = writeln!(
            w,
            "Not run: {}.\n",
            skip.reason.as_deref().unwrap_or("no reason given")
        );
        return;
    }
    let load = match m("http_load").as_str() {
        "wrk" => format!("wrk ({})", m("http_load_version")),
        other => format!("`{other}`"),
    };
    let nofile = recs
        .iter()
        .find(|r| r.ok())
        .map_or("?".to_string(), |r| r.s("nofile").to_string());
    let _ = writeln!(
        w,
        "Attackers hold connections open against one server thread while a \
         normal client is served beside them (`bench/src/bin/http_attack.rs`, one \
         thread of blocking std sockets that connects, writes its attack and waits). \
         **yieldloop**: `yieldloop_http::ServeConfig::default()` (a 1 KiB read buffer that grows up to the 8 KiB head limit, \
         30 s for a whole head, 60 s for a whole body, 64 KiB of unwritten answers, \
         a connection cap from the descriptor limit, {nofile} here). **hyper on \
         tokio** (`http_hyper --documented-limits`, `current_thread`): hyper 1.x's \
         `http1::Builder` with a `TokioTimer`, without which hyper does not enforce \
         `header_read_timeout`, at its documented default of 30 s, and \
         `max_buf_size` at its documented default (8192 + 4096 × 100 bytes, \
         \"~400kb\"); hyper has no body deadline and no connection cap of its own. \
         Both serve the same routes, among them `GET /page` (4 KiB) and `POST \
         /upload`, which takes the whole body (yieldloop's server reads it before \
         the handler, up to `max_body`, 1 MiB; hyper's handler collects it through \
         `Limited` to 1 MiB). The half-open TLS handshake goes to TLS servers, \
         since yieldloop-http's own server has no TLS: hyper on yieldloop through \
         `with_hyper::serve_tls` (`http_hyper_yieldloop --tls`, yieldloop-rustls's \
         acceptor with its default handshake deadline of 10 s) against hyper on \
         tokio through tokio-rustls (`http_hyper --documented-limits --tls`, no \
         handshake deadline: hyper's header timer starts once the handshake is \
         done), both with the same rustls configuration (ring, TLS 1.2 and 1.3, a \
         self-signed P-256 certificate), the normal client over TLS too. Each run \
         starts a fresh server and sends it one `GET /`; \
         then its resident memory (VmRSS, /proc/PID/status) is read, the attackers \
         connect and write ({} connections for a large body and for idle, {} for \
         pipelining, each with {} bytes of requests and its receive buffer set to \
         {} bytes, so that the answers it does not read wait in the server rather \
         than in the attacker's kernel buffers), {} s later VmRSS is read again, and \
         the normal client, {load} with {} keep-alive connections of `GET /`, runs for \
         {} s while they hold. *Unattacked* is the same client against a fresh \
         server with no attacker. Memory per attacking connection is the growth of \
         VmRSS over the attacking connections (socket buffers are the kernel's and \
         not in it). Every attack is held for less time than any deadline it \
         meets (30 s, 60 s, 10 s): this is what a held connection costs, not how \
         soon it is dropped. *× unattacked*: the median rate during the attack over \
         the median unattacked one; *× after (pairs)*: each run's rate during the \
         attack over the same client's rate on the same server 1 s after the \
         attackers had gone, seconds apart, so that both see the machine in one \
         state (the machine is shared, and its load moves the rates from run to \
         run far more than within a pair); the Targets rows judge the rate on \
         those pairs. {} runs per cell, servers and attacks in turn; median \
         (min–max).\n",
        m("attack_conns"),
        m("attack_pipe_conns"),
        m("attack_pipe_bytes"),
        m("attack_pipe_rcvbuf"),
        m("attack_settle"),
        m("attack_client_conns"),
        m("attack_secs"),
        m("attack_reps"),
    );

    let skipped = tls_skipped(recs);
    let none_cell = |server: &str| skipped.clone().filter(|_| server.ends_with("_tls"));
    let _ = writeln!(w, "### Resident memory per attacking connection (bytes)\n");
    let _ = writeln!(
        w,
        "| attack | connections | yieldloop | hyper on tokio | yieldloop / hyper |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|");
    for (kind, what, ours, theirs) in ATTACKS {
        let conns = runs(recs, ours, kind)
            .first()
            .or(runs(recs, theirs, kind).first())
            .map_or("—".to_string(), |r| thousands(r.f("attackers") as u64));
        let (o, t) = (per_conn(recs, ours, kind), per_conn(recs, theirs, kind));
        let ratio = match (o, t) {
            (Some(o), Some(t)) if t.med > 0.0 => format!("{:.2}", o.med / t.med),
            _ => "—".into(),
        };
        let fig = |server: &str, st: Option<Stat>| {
            none_cell(server)
                .filter(|_| st.is_none())
                .unwrap_or_else(|| cell(st))
        };
        let _ = writeln!(
            w,
            "| {what} | {conns} | {} | {} | {ratio} |",
            fig(ours, o),
            fig(theirs, t)
        );
    }
    let _ = writeln!(w);

    let _ = writeln!(
        w,
        "### A normal client's requests per second during each attack\n"
    );
    let _ = writeln!(
        w,
        "| attack | yieldloop | × unattacked | × after (pairs) | hyper on tokio | × unattacked | × after (pairs) |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
    let share_cell =
        |server, kind| share(recs, server, kind).map_or("—".into(), |s| format!("{s:.2}"));
    let pair_cell = |server, kind| {
        paired_share(recs, server, kind).map_or("—".into(), |s| {
            if s.n > 1 {
                format!("{:.2} ({:.2}–{:.2})", s.med, s.min, s.max)
            } else {
                format!("{:.2}", s.med)
            }
        })
    };
    let fig = |server: &str, kind| {
        let st = rps(recs, server, kind);
        none_cell(server)
            .filter(|_| st.is_none())
            .unwrap_or_else(|| cell(st))
    };
    let mut plain_done = false;
    for (kind, what, ours, theirs) in ATTACKS {
        if ours.ends_with("_tls") || !plain_done {
            let over = if ours.ends_with("_tls") {
                " (over TLS)"
            } else {
                ""
            };
            let _ = writeln!(
                w,
                "| unattacked{over} | {} | 1 | | {} | 1 | |",
                fig(ours, "none"),
                fig(theirs, "none"),
            );
            plain_done = true;
        }
        let _ = writeln!(
            w,
            "| {what} | {} | {} | {} | {} | {} | {} |",
            fig(ours, kind),
            share_cell(ours, kind),
            pair_cell(ours, kind),
            fig(theirs, kind),
            share_cell(theirs, kind),
            pair_cell(theirs, kind),
        );
    }
    let _ = writeln!(w);

    // What the attackers saw: connections the server closed while they
    // held, and errors of the normal client.
    let mut notes = Vec::new();
    for (kind, _, ours, theirs) in ATTACKS {
        for server in [ours, theirs] {
            let rs = runs(recs, server, kind);
            let closed: f64 = rs.iter().map(|r| r.f("closed_by_server").max(0.0)).sum();
            let failed: f64 = rs.iter().map(|r| r.f("failed").max(0.0)).sum();
            let errors: f64 = rs.iter().map(|r| r.f("errors").max(0.0)).sum();
            if closed > 0.0 || failed > 0.0 || errors > 0.0 {
                notes.push(format!(
                    "{}, {}: {} attacking connections closed by the server while held, {} that failed to connect, {} errors of the normal client (over {} runs)",
                    label(server),
                    attack_title(kind),
                    num(closed),
                    num(failed),
                    num(errors),
                    rs.len()
                ));
            }
        }
    }
    if notes.is_empty() {
        let _ = writeln!(
            w,
            "Every attacking connection connected and was still open when the normal \
             client finished, and the normal client got no error.\n"
        );
    } else {
        let _ = writeln!(w, "{}.\n", notes.join("; "));
    }
    let failures: Vec<String> = recs
        .iter()
        .filter(|r| !r.ok() && r.s("skipped") != "1")
        .map(|r| {
            format!(
                "{} {} run {}: {}",
                r.s("server"),
                r.s("kind"),
                r.s("rep"),
                r.reason.as_deref().unwrap_or("failed")
            )
        })
        .collect();
    let _ = writeln!(
        w,
        "Measured {} on yieldloop {} (load average {} at the start of the run, {} at its end).\n",
        m("date"),
        m("yieldloop"),
        m("load_start"),
        m("load_end"),
    );
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed runs: {}.\n", failures.join("; "));
    }
}
