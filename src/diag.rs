//! Tuning and diagnostics: what every task is doing ([`dump`]), each
//! scheduler's counters ([`metrics`], [`prometheus`]), statistics of the
//! stack and blocking pools, the slow-task warning, the scheduler trace,
//! and the blocking pool's limits. Everyday code needs none of these.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//!
//! // Warn about any task that holds its thread for over 50 ms at a time.
//! yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(50)));
//! yieldloop::run(|| {
//!     yieldloop::spawn(|| ()).join().unwrap();
//! });
//! let stats = yieldloop::diag::pool_stats();
//! assert!(stats.carved >= 1);
//! ```
//!
//! A task dump, as a server prints it on `SIGQUIT`:
//!
//! ```
//! use std::time::Duration;
//!
//! yieldloop::run(|| {
//!     let sleeper = yieldloop::Builder::new()
//!         .name("sleeper")
//!         .spawn(|| yieldloop::sleep(Duration::from_secs(3600)))
//!         .unwrap();
//!     yieldloop::yield_now(); // let it start and pause
//!     let dump = yieldloop::diag::dump();
//!     let task = dump.tasks().find(|t| t.name.as_deref() == Some("sleeper")).unwrap();
//!     assert_eq!(
//!         task.state,
//!         yieldloop::diag::TaskState::Waiting(yieldloop::diag::WaitingOn::Timer)
//!     );
//!     eprintln!("{dump}");
//!     sleeper.cancel();
//! });
//! ```

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::interop::blocking::{
    blocking_pool_stats, set_blocking_idle_timeout, set_blocking_max_threads, BlockingPoolStats,
    DEFAULT_BLOCKING_IDLE_TIMEOUT, DEFAULT_BLOCKING_MAX_THREADS,
};
pub use crate::scheduler::coroutine::DEFAULT_BUDGET;
pub use crate::scheduler::port::{
    Backtrace, Dump, Frame, SchedulerDump, SchedulerMetrics, TaskDump, TaskState, WaitingOn,
};
pub use crate::scheduler::slow_task::{set_slow_task_threshold, slow_task_threshold};
pub use crate::scheduler::trace::{trace_off, trace_to_file, trace_to_stderr};
#[cfg(feature = "bench-hooks")]
pub use crate::stack::bench_pool_cycle;
pub use crate::stack::{guards_use_madvise, pool_stats, PoolStats};

use crate::interop::from_thread::Handoff;
use crate::scheduler::port::{ports, Port};

/// How long [`dump`] waits for each scheduler to answer.
pub const DUMP_TIMEOUT: Duration = Duration::from_secs(2);

/// Lists every live task of every scheduler in the process: its id and
/// name, its state (running, ready, or waiting on what: a timer, a socket
/// readable or writable, a connection, a join, a channel, a lock, a
/// future, another thread), how long it has been in that state, the time
/// left to its deadline, and the backtrace of the place where it is
/// paused. Print it with `{}`; the fields are there for programs.
///
/// Callable from anywhere: a task, a plain thread, a signal listener.
/// Each scheduler answers between two turns of its loop: it resumes each
/// paused task just long enough for the task to walk its own stack (no
/// other code of the task runs, and its wait goes on untouched), so a
/// backtrace costs nothing until it is asked for. A task calling `dump`
/// appears waiting on another thread, inside `dump`, with its backtrace.
///
/// A scheduler whose thread is held by a task that does not pause cannot
/// answer; after [`DUMP_TIMEOUT`] it is listed as not answering, with the
/// id of the task that holds it. Use [`dump_within`] to wait longer or
/// shorter.
///
/// Names, files and lines are resolved when the dump is shown, each
/// return address once; a binary without debug information shows
/// function names only, and a stripped one addresses only.
///
/// # Examples
///
/// See the [module docs](self).
pub fn dump() -> Dump {
    dump_within(DUMP_TIMEOUT)
}

/// [`dump`], waiting at most `limit` for the schedulers to answer.
pub fn dump_within(limit: Duration) -> Dump {
    let start = Instant::now();
    let ports = ports();
    let asked: Vec<(Arc<Port>, Arc<Handoff<SchedulerDump>>)> = ports
        .into_iter()
        .map(|port| {
            let (slot, completer) = Handoff::new();
            port.request(Box::new(move |d| completer.complete(Ok(d))));
            (port, slot)
        })
        .collect();
    let deadline = start + limit;
    let in_task = crate::task::spawn::current_id().is_some();
    let schedulers = asked
        .into_iter()
        .map(|(port, slot)| {
            let answer = if in_task {
                let left = deadline.saturating_duration_since(Instant::now());
                crate::task::timeout::timeout(left, || slot.wait()).ok()
            } else {
                slot.wait_blocking_until(Some(deadline))
            };
            match answer {
                Some(Ok(d)) => d,
                // Not in time, or the scheduler ended meanwhile.
                _ => SchedulerDump {
                    scheduler: port.id,
                    thread: port.thread.clone(),
                    tasks: Vec::new(),
                    unanswered: Some(port.running_task()),
                },
            }
        })
        .collect();
    Dump {
        schedulers,
        took: start.elapsed(),
    }
}

/// The counters of every scheduler alive in the process, oldest first.
/// Reading them costs the schedulers nothing: each brings them up to date
/// at each poll of its loop (every few hundred resumes at the most, while
/// it is busy), with plain stores, so a reading is as of that moment.
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     for _ in 0..10 {
///         yieldloop::spawn(yieldloop::yield_now).join().unwrap();
///     }
///     yieldloop::sleep(std::time::Duration::from_millis(1)); // a poll
///     let id = yieldloop::diag::metrics_here().unwrap().scheduler;
///     let here = yieldloop::diag::metrics()
///         .into_iter()
///         .find(|m| m.scheduler == id)
///         .unwrap();
///     assert!(here.tasks_spawned == 11 && here.tasks_ended == 10);
///     assert!(here.resumes >= 20);
/// });
/// ```
pub fn metrics() -> Vec<SchedulerMetrics> {
    ports().iter().map(|p| p.snapshot()).collect()
}

/// The counters of the scheduler of the calling thread; `None` outside
/// [`run`](crate::run) (and a runtime's workers). Called from one of its
/// tasks, the task counts are exact; the rest are as of its last poll.
///
/// # Examples
///
/// ```
/// assert!(yieldloop::diag::metrics_here().is_none());
/// yieldloop::run(|| {
///     let m = yieldloop::diag::metrics_here().unwrap();
///     assert_eq!(m.tasks_alive, 1); // the main task
/// });
/// ```
pub fn metrics_here() -> Option<SchedulerMetrics> {
    crate::scheduler::try_with_scheduler(|s| s.metrics())
}

/// Every scheduler's counters and the blocking pool's,
/// in the Prometheus text format (version 0.0.4), one series per
/// scheduler labelled `scheduler` (its id) and `thread` (its thread's
/// name): for a `/metrics` page.
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let text = yieldloop::diag::prometheus();
///     assert!(text.contains("# TYPE yieldloop_resumes_total counter"));
///     assert!(text.contains("yieldloop_hold_seconds_bucket{"));
/// });
/// ```
pub fn prometheus() -> String {
    let all = metrics();
    let mut out = String::new();
    // Each scheduler's labels, made once.
    let labels: Vec<String> = all
        .iter()
        .map(|m| {
            let thread = m
                .thread
                .as_deref()
                .unwrap_or("")
                .replace(['\\', '"', '\n'], "_");
            format!("scheduler=\"{}\",thread=\"{thread}\"", m.scheduler)
        })
        .collect();
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP yieldloop_{name} {help}");
        let _ = writeln!(out, "# TYPE yieldloop_{name} {kind}");
    };
    type Field = fn(&SchedulerMetrics) -> f64;
    let series: [(&str, &str, &str, Field); 14] = [
        ("tasks_alive", "gauge", "Tasks alive.", |m| {
            m.tasks_alive as f64
        }),
        ("tasks_spawned_total", "counter", "Tasks spawned.", |m| {
            m.tasks_spawned as f64
        }),
        ("tasks_ended_total", "counter", "Tasks ended.", |m| {
            m.tasks_ended as f64
        }),
        ("resumes_total", "counter", "Resumes of tasks.", |m| {
            m.resumes as f64
        }),
        (
            "run_queue_depth",
            "gauge",
            "Tasks ready at the last poll.",
            |m| m.run_queue_depth as f64,
        ),
        ("polls_total", "counter", "Polls for events.", |m| {
            m.polls as f64
        }),
        (
            "polls_empty_total",
            "counter",
            "Polls that found nothing.",
            |m| m.polls_empty as f64,
        ),
        (
            "busy_seconds_total",
            "counter",
            "Time not parked in the kernel.",
            |m| m.busy.as_secs_f64(),
        ),
        (
            "parked_seconds_total",
            "counter",
            "Time parked in the kernel.",
            |m| m.parked.as_secs_f64(),
        ),
        ("timers_pending", "gauge", "Timers armed.", |m| {
            m.timers_pending as f64
        }),
        (
            "io_sources",
            "gauge",
            "Registered sockets and descriptors.",
            |m| m.io_sources as f64,
        ),
        (
            "held_seconds_total",
            "counter",
            "Time tasks held the thread (estimated).",
            |m| m.held.as_secs_f64(),
        ),
        (
            "holds_timed_total",
            "counter",
            "Resumes timed for the hold histogram.",
            |m| m.holds_timed as f64,
        ),
        (
            "slow_holds_total",
            "counter",
            "Resumes held past the slow-task threshold.",
            |m| m.slow_holds as f64,
        ),
    ];
    for (name, kind, help, get) in series {
        head(&mut out, name, kind, help);
        for (m, l) in all.iter().zip(&labels) {
            let _ = writeln!(out, "yieldloop_{name}{{{l}}} {}", get(m));
        }
    }
    head(
        &mut out,
        "hold_seconds",
        "histogram",
        "How long resumes held the thread (estimated from a sample).",
    );
    for (m, l) in all.iter().zip(&labels) {
        let mut cumulative = 0;
        for (bound, count) in &m.hold_histogram {
            cumulative += count;
            let le = bound.map_or("+Inf".to_string(), |b| format!("{}", b.as_secs_f64()));
            let _ = writeln!(
                out,
                "yieldloop_hold_seconds_bucket{{{l},le=\"{le}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "yieldloop_hold_seconds_sum{{{l}}} {}",
            m.held.as_secs_f64()
        );
        let _ = writeln!(out, "yieldloop_hold_seconds_count{{{l}}} {cumulative}");
    }
    let pool = blocking_pool_stats();
    let process: [(&str, &str, &str, f64); 4] = [
        (
            "blocking_threads",
            "gauge",
            "Blocking pool threads.",
            pool.threads as f64,
        ),
        (
            "blocking_busy",
            "gauge",
            "Blocking pool threads running a job.",
            { pool.threads.saturating_sub(pool.idle) as f64 },
        ),
        (
            "blocking_queued",
            "gauge",
            "Jobs waiting for a blocking pool thread.",
            pool.queued as f64,
        ),
        (
            "blocking_submitted_total",
            "counter",
            "Jobs handed to the blocking pool.",
            { pool.submitted as f64 },
        ),
    ];
    for (name, kind, help, v) in process {
        head(&mut out, name, kind, help);
        let _ = writeln!(out, "yieldloop_{name} {v}");
    }
    out
}
