//! The section on feature `hook`: what an intercepted call costs outside
//! any task, and many tasks each holding a std connection under the hook
//! against yieldloop's own `TcpStream`; plus its rows of the Targets table
//! (those two and the Redis-backed service on the `redis` crate's sync
//! client, whose figures are in the service section).

use std::fmt::Write as _;

use crate::bound::{row, Bound};
use crate::data::{cell, num, stat, thousands, Rec, Stat};
use crate::service::service_cell;

/// The calls hook_cost times, with their descriptions.
const CALLS: [(&str, &str); 2] = [
    (
        "recv_peek",
        "`recv(fd, buf, 1, MSG_PEEK)`, a Unix socket with data",
    ),
    (
        "read_eagain",
        "`read` of an empty non-blocking Unix socket (`EAGAIN`)",
    ),
];

/// The connection kinds of hook_conns.
const MODES: [(&str, &str); 2] = [
    ("native", "yieldloop's own `net::TcpStream`"),
    ("hook", "`std::net::TcpStream` under the hook"),
];

/// The most an intercepted call outside a task may add (ns).
pub const ADDED_LIMIT_NS: f64 = 5.0;
/// How far the service on the sync client may be from the native recipe.
pub const SERVICE_RATIO: f64 = 1.15;
/// How far a std connection under the hook may be from yieldloop's own, in
/// memory per task and CPU per round trip.
pub const CONNS_RATIO: f64 = 1.25;

fn ok_recs<'a>(recs: &'a [Rec], kind: &'a str) -> impl Iterator<Item = &'a Rec> {
    recs.iter().filter(move |r| r.ok() && r.s("kind") == kind)
}

/// Field `k` of the runs of one call in one build.
fn cost(recs: &[Rec], build: &str, call: &str, k: &str) -> Option<Stat> {
    stat(
        ok_recs(recs, "cost")
            .filter(|r| r.s("build") == build && r.s("call") == call)
            .map(|r| r.f(k))
            .collect(),
    )
}

/// What the hook adds to `call` outside a task: in the hook build, the
/// fastest batch by name minus the fastest batch of the C library's own
/// function, median over the runs.
fn added(recs: &[Rec], call: &str) -> Option<f64> {
    cost(recs, "hook", call, "added_min_ns").map(|s| s.med)
}

/// Field `k` of the conns runs of `mode`.
fn conns(recs: &[Rec], mode: &str, k: &str) -> Option<Stat> {
    stat(
        ok_recs(recs, "conns")
            .filter(|r| r.s("mode") == mode)
            .map(|r| r.f(k))
            .collect(),
    )
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Blocking clients under feature `hook`\n");
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
        "With feature `hook`, yieldloop defines the C library's socket and sleep \
         calls: from inside a task they pause only that task, anywhere else they \
         are the plain system call. The programs below are built twice, without \
         and with the feature (`bench/target/release`, `bench/target/hook/release`). \
         The Redis-backed service on the `redis` crate's own synchronous client is \
         the `yieldloop-hook` row of the service section above.\n"
    );
    if recs.is_empty() {
        let _ = writeln!(
            w,
            "No data: `bench/results/hook.txt` is missing or empty (the stage did \
             not run).\n"
        );
        return;
    }

    let _ = writeln!(w, "### A call outside any task\n");
    let _ = writeln!(
        w,
        "`bench/src/bin/hook_cost.rs` on a plain thread, pinned with `{}`, built \
         without and with the feature, {} runs of each in turn. Each call is timed \
         by name (`libc::recv`, `libc::read`: the hook's definitions in the hook \
         build, the C library's in the other) and direct (the C library's own \
         function, from `dlsym(RTLD_NEXT, ..)`), in {} alternating batches of {} \
         calls each after an untimed one. A run's figures: the fastest batch, in ns \
         per call (a code path costs the same in every batch; interference only \
         adds). The added cost is, within one process, the fastest batch by name \
         minus the fastest direct one: the hook's cost in the hook build, and in \
         the plain build a control that should be zero (how far it is from zero \
         is the method's noise); the median of the per-pair differences is given \
         too. Median (min–max) over the runs.\n",
        m("pin_server"),
        m("hook_reps"),
        m("hook_batches"),
        thousands(m("hook_iters").parse().unwrap_or(0)),
    );
    let _ = writeln!(
        w,
        "| call | by name, without the feature (ns) | by name, with it (ns) | added, with it (ns) | added, paired median (ns) | control: added without it (ns) |\n|---|---:|---:|---:|---:|---:|"
    );
    for (call, what) in CALLS {
        let _ = writeln!(
            w,
            "| {what} | {} | {} | {} | {} | {} |",
            cell(cost(recs, "plain", call, "ns_min")),
            cell(cost(recs, "hook", call, "ns_min")),
            cell(cost(recs, "hook", call, "added_min_ns")),
            cell(cost(recs, "hook", call, "added_ns")),
            cell(cost(recs, "plain", call, "added_min_ns")),
        );
    }
    let _ = writeln!(w);

    let _ = writeln!(w, "### Many tasks, each holding a connection\n");
    let _ = writeln!(
        w,
        "`bench/src/bin/hook_conns.rs`: {} tasks on one scheduler, each with a \
         connection to an echo server (yieldloop, a child process of its own); the \
         tasks connect in batches of 256 and make one round trip each, then all \
         make {} round trips of 64 bytes (write, read the echo). Memory per task is \
         the client's resident memory (`VmRSS`) after the connections minus before \
         them, over the tasks (the stack pages a task touches, and the runtime's or \
         the hook's state for the socket; the kernel's socket buffers are not in \
         it). CPU per round trip is the client process's user + system time for the \
         round trips over their number. Median (min–max) over {} runs.\n",
        thousands(m("hook_n").parse().unwrap_or(0)),
        m("hook_rounds"),
        m("hook_reps"),
    );
    let _ = writeln!(
        w,
        "| connection | memory per task (bytes) | client CPU per round trip (ns) | user (ns) | system (ns) | wall (s) |\n|---|---:|---:|---:|---:|---:|"
    );
    for (mode, what) in MODES {
        let _ = writeln!(
            w,
            "| {what} | {} | {} | {} | {} | {} |",
            cell(conns(recs, mode, "bytes_per_task")),
            cell(conns(recs, mode, "cpu_ns_per_rt")),
            cell(conns(recs, mode, "user_ns_per_rt")),
            cell(conns(recs, mode, "sys_ns_per_rt")),
            cell(conns(recs, mode, "wall_s")),
        );
    }
    let _ = writeln!(w);

    let failures: Vec<String> = recs
        .iter()
        .filter(|r| !r.ok() && r.s("skipped") != "1")
        .map(|r| {
            format!(
                "{} {}{} run {}: {}",
                r.s("kind"),
                r.s("build"),
                r.s("mode"),
                r.s("rep"),
                r.reason.as_deref().unwrap_or("failed")
            )
        })
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(w, "Failed runs:\n");
        for f in failures {
            let _ = writeln!(w, "- {}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}

/// The rows this section adds to the Targets table.
pub fn target_rows(w: &mut String, recs: &[Rec], service: &[Rec], clk_tck: f64) {
    let med = |s: Option<Stat>| s.map(|s| s.med);
    let svc = |server| service_cell(service, server, clk_tck);
    let svc_us = |server| med(svc(server).rps).filter(|&r| r > 0.0).map(|r| 1e6 / r);
    let title = "Redis-backed HTTP service on the `redis` crate's sync client under `hook`";
    row(
        w,
        &format!("{title}: time per request (1 / requests per second)"),
        svc_us("yieldloop-hook"),
        "µs",
        Bound::Ratio(
            "the native recipe, one connection per request in flight (yieldloop-pool)",
            svc_us("yieldloop-pool"),
            SERVICE_RATIO,
        ),
    );
    row(
        w,
        &format!("{title}: p99 latency"),
        med(svc("yieldloop-hook").p99),
        "µs",
        Bound::Ratio(
            "the native recipe, one connection per request in flight (yieldloop-pool)",
            med(svc("yieldloop-pool").p99),
            SERVICE_RATIO,
        ),
    );
    row(
        w,
        &format!("{title}: time per request"),
        svc_us("yieldloop-hook"),
        "µs",
        Bound::Ratio(
            "the native recipe, multiplexed (yieldloop)",
            svc_us("yieldloop"),
            SERVICE_RATIO,
        ),
    );
    for (call, what) in CALLS {
        // The same difference in the plain build, which should be zero:
        // how far it is from zero says how far to trust the figure.
        let control = cost(recs, "plain", call, "added_min_ns").map_or(String::new(), |c| {
            format!(" (the control without the feature: {} ns)", num(c.med))
        });
        row(
            w,
            &format!("`hook`: added cost outside any task, {what}{control}"),
            added(recs, call),
            "ns",
            Bound::fixed(ADDED_LIMIT_NS),
        );
    }
    let n = thousands(
        ok_recs(recs, "conns")
            .map(|r| r.f("n"))
            .find(|n| n.is_finite())
            .unwrap_or(0.0) as u64,
    );
    for (k, what, unit) in [
        ("bytes_per_task", "memory per task", "bytes"),
        ("cpu_ns_per_rt", "client CPU per round trip", "ns"),
    ] {
        row(
            w,
            &format!("{n} tasks each with a std connection under `hook`: {what}"),
            med(conns(recs, "hook", k)),
            unit,
            Bound::Ratio(
                "yieldloop's own TcpStream",
                med(conns(recs, "native", k)),
                CONNS_RATIO,
            ),
        );
    }
}
