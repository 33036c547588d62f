//! The Echo servers section, with its system-call table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::data::{cell, stat, Rec, Stat};
use crate::peers::NOT_MEASURED_GO;

pub const SERVERS: [&str; 5] = ["yieldloop", "tokio", "may", "go", "mio"];
pub const CONNS: [u64; 3] = [1, 64, 512];

pub struct EchoCell {
    pub cpu_ns: Option<Stat>,
    pub user_ns: Option<Stat>,
    pub user_pct: Option<Stat>,
    pub rps: Option<Stat>,
    pub p50: Option<Stat>,
    pub p99: Option<Stat>,
    pub p999: Option<Stat>,
    pub errors: u64,
    pub failures: Vec<String>,
}

pub fn echo_cell(recs: &[Rec], server: &str, conns: u64, clk_tck: f64) -> EchoCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("server") == server && r.s("conns") == conns.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    // Nanoseconds per round trip of a CPU time given in clock ticks.
    let per_rt = |r: &Rec, ticks: f64| ticks / clk_tck * 1e9 / r.f("rt_total").max(1.0);
    EchoCell {
        // The scheduler's own nanosecond count where the run recorded it;
        // ticks (1/100 s) are too coarse for a partly idle server.
        cpu_ns: col(&|r| {
            let ns = r.f("oncpu_ns");
            if ns.is_finite() && ns > 0.0 {
                ns / r.f("rt_total").max(1.0)
            } else {
                per_rt(r, r.f("utime") + r.f("stime"))
            }
        }),
        user_ns: col(&|r| per_rt(r, r.f("utime"))),
        user_pct: col(&|r| {
            let t = r.f("utime") + r.f("stime");
            if t > 0.0 {
                100.0 * r.f("utime") / t
            } else {
                f64::NAN
            }
        }),
        rps: col(&|r| r.f("rps")),
        p50: col(&|r| r.f("p50_us")),
        p99: col(&|r| r.f("p99_us")),
        p999: col(&|r| r.f("p999_us")),
        errors: ok.iter().map(|r| r.f("errors").max(0.0) as u64).sum(),
        failures: mine
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()))
            .collect(),
    }
}

/// Starts a per-server table row of the echo connection counts:
/// `| server | 1 conn | 64 conns | 512 conns |`, left open for more.
pub fn conns_header(w: &mut String) {
    let _ = write!(w, "| server |");
    for c in CONNS {
        let _ = write!(w, " {c} conn{} |", if c == 1 { "" } else { "s" });
    }
}

/// The echo servers to show: Go only when it was measured.
pub fn echo_servers(go_missing: bool) -> Vec<&'static str> {
    SERVERS
        .iter()
        .copied()
        .filter(|s| !(go_missing && *s == "go"))
        .collect()
}

/// System calls per round trip at 1 connection, one run per server counted
/// by the kernel's tracepoints; left out when the run could not count them.
pub fn syscalls_table(w: &mut String, recs: &[Rec], servers: &[&str]) {
    if recs.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### System calls per round trip at 1 connection\n\n\
         One run per server, 2 s at 1 connection, every system call of every server \
         thread counted by the kernel's tracepoints (`perf stat -e \
         raw_syscalls:sys_enter,syscalls:sys_enter_NAME -p PID`), divided by the \
         round trips. Each round trip is a sleep in the kernel and a wake-up; *other* \
         is every call not named.\n"
    );
    let named = [
        "epoll_wait",
        "epoll_pwait",
        "recvfrom",
        "read",
        "sendto",
        "write",
        "futex",
    ];
    let _ = write!(w, "| server |");
    for n in named {
        let _ = write!(w, " {n} |");
    }
    let _ = writeln!(
        w,
        " other | total |\n|---|{}---:|---:|",
        "---:|".repeat(named.len())
    );
    for &s in servers {
        let Some(r) = recs.iter().find(|r| r.s("server") == s && r.ok()) else {
            continue;
        };
        let rt = r.f("rt_total").max(1.0);
        let total = r.f("total") / rt;
        let mut other = total;
        let _ = write!(w, "| {s} |");
        for n in named {
            let per = r.f(n) / rt;
            let per = if per.is_finite() { per } else { 0.0 };
            other -= per;
            let _ = write!(w, " {per:.2} |");
        }
        let _ = writeln!(w, " {:.2} | {total:.2} |", other.max(0.0));
    }
    let _ = writeln!(w);
}

/// The Echo servers section.
pub fn section(
    w: &mut String,
    echo: &[Rec],
    syscalls: &[Rec],
    meta: &BTreeMap<String, String>,
    go_missing: Option<&str>,
    clk_tck: f64,
) {
    let m = |k: &str| meta.get(k).map_or("?", String::as_str);
    let _ = writeln!(w, "## Echo servers\n");
    let _ = writeln!(
        w,
        "Each server runs on one thread (yieldloop's scheduler; tokio `current_thread`; \
         may with one worker; a hand-written edge-triggered mio loop as the floor), one \
         task per connection, a 4 KiB read buffer, `TCP_NODELAY`. The client \
         (`loadgen`, one thread on raw mio) keeps C connections in a closed loop: each \
         sends a 64-byte message and waits for the whole echo before sending the next. \
         Go runs a goroutine per connection with `GOMAXPROCS=1` (see above). Server \
         pinned with `{}`, client with `{}`. A fresh server is started for every \
         run; {} runs per cell, {} s measured after {} s of warm-up.\n",
        m("pin_server"),
        m("pin_client"),
        m("echo_reps"),
        m("echo_secs"),
        m("echo_warmup"),
    );
    let _ = writeln!(
        w,
        "**Server CPU per round trip** is the time every thread of the server process \
         ran, summed from `/proc/PID/task/*/schedstat` (nanoseconds, user and kernel \
         together) before the client starts and 0.2 s after it exits, divided by \
         every round trip the client completed (warm-up included, so connection \
         set-up and tear-down are amortised in). The 1-connection numbers, where the \
         server is partly idle, also carry its sleep/wake-up cost per message. The \
         user share and user CPU below come from utime and stime in \
         `/proc/PID/stat`, whose tick is 1/{} s.\n",
        m("clk_tck"),
    );
    let _ = writeln!(w, "### Server CPU per round trip (ns): median (min–max)\n");
    conns_header(w);
    let _ = writeln!(w, " p99 at 1 conn (µs) |\n|---|---:|---:|---:|---:|");
    let servers = echo_servers(go_missing.is_some());
    let mut echo_failures = Vec::new();
    for &s in &servers {
        let _ = write!(w, "| {s} |");
        for c in CONNS {
            let e = echo_cell(echo, s, c, clk_tck);
            echo_failures.extend(e.failures.iter().map(|f| format!("{s}, {c} conns: {f}")));
            let _ = write!(w, " {} |", cell(e.cpu_ns));
        }
        let _ = writeln!(w, " {} |", cell(echo_cell(echo, s, 1, clk_tck).p99));
    }
    let _ = writeln!(w);
    if let Some(why) = &go_missing {
        let _ = writeln!(w, "go: {NOT_MEASURED_GO} ({why}).\n");
    }
    let _ = writeln!(
        w,
        "**Why the 1-connection column is several times the others.** With one \
         connection in a closed loop, the server has nothing to do between an echo and \
         the next message: after every echo it blocks in `epoll_wait`, and the next \
         message has to wake it, a sleep and a wake-up (two context switches) per round \
         trip. With 64 or 512 connections, messages arrive while the server is still \
         busy, one `epoll_wait` returns many of them, and the server seldom sleeps, so \
         that cost is shared among many round trips. Sleeping and waking is kernel \
         time, the same mechanism for every server; it is costly, more so on a virtual \
         machine, and it varies a lot from run to run. So the 1-connection figures say \
         more about the machine than about the servers: read them with their min–max \
         ranges, which are usually wide and overlap, and read little into the order of \
         the servers, which can change from one run of `bench/run.sh` to the next. The \
         last table gives the user share of CPU, and the user CPU table below leaves \
         the kernel's share out.\n"
    );
    let _ = writeln!(
        w,
        "### Server user CPU per round trip (ns): median (min–max)\n\n\
         utime alone: the time the server spends in its own code (the runtime and \
         the echo loop), without the kernel's share of the system calls, which is \
         the same work for every server. In brackets, the median over the mio loop's.\n"
    );
    conns_header(w);
    let _ = writeln!(w, "\n|---|---:|---:|---:|");
    for &s in &servers {
        let _ = write!(w, "| {s} |");
        for c in CONNS {
            let mine = echo_cell(echo, s, c, clk_tck).user_ns;
            let floor = echo_cell(echo, "mio", c, clk_tck).user_ns;
            let ratio = match (&mine, &floor) {
                (Some(a), Some(b)) if b.med > 0.0 => format!(" [×{:.2}]", a.med / b.med),
                _ => String::new(),
            };
            let _ = write!(w, " {}{ratio} |", cell(mine));
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
    syscalls_table(w, syscalls, &servers);
    let _ = writeln!(w, "### All echo measurements: median (min–max)\n");
    let _ = writeln!(
        w,
        "| server | conns | round trips/s | CPU ns/round trip | user share of CPU (%) | p50 (µs) | p99 (µs) | p99.9 (µs) | client errors |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &s in &servers {
        for c in CONNS {
            let e = echo_cell(echo, s, c, clk_tck);
            let _ = writeln!(
                w,
                "| {s} | {c} | {} | {} | {} | {} | {} | {} | {} |",
                cell(e.rps),
                cell(e.cpu_ns),
                cell(e.user_pct),
                cell(e.p50),
                cell(e.p99),
                cell(e.p999),
                e.errors,
            );
        }
    }
    let _ = writeln!(w);
    if !echo_failures.is_empty() {
        let _ = writeln!(w, "Failed echo runs:\n");
        let mut counted: Vec<(String, usize)> = Vec::new();
        for f in echo_failures {
            match counted.iter_mut().find(|(g, _)| *g == f) {
                Some((_, k)) => *k += 1,
                None => counted.push((f, 1)),
            }
        }
        for (f, k) in counted {
            let times = if k > 1 {
                format!(" ({k} runs)")
            } else {
                String::new()
            };
            let _ = writeln!(w, "- {}{times}", f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}
