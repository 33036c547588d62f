//! The slow-task watch: a warning when one task holds the thread too long
//! without pausing, like asyncio's debug mode or gevent's monitor.
//!
//! A task that computes for 300 ms without a pause stops every other task on
//! its thread for 300 ms. The scheduler reads a coarse clock once per resume
//! (the reading that ends one resume starts the next) and warns on stderr,
//! naming the task, when a resume took longer than the threshold.
//!
//! The clock is wall time, not CPU time: reading a thread's CPU clock is a
//! system call, too dear for every resume. So on a machine short of cores,
//! a thread the kernel switched out in the middle of a resume can trip the
//! warning though the task itself did little; the message then says the
//! thread was held, which is still true for the other tasks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use crate::task::TaskId;

/// The threshold in nanoseconds; `OFF` disables the watch.
static THRESHOLD_NS: AtomicU64 = AtomicU64::new(DEFAULT_NS);
const DEFAULT_NS: u64 = 100_000_000;
const OFF: u64 = u64::MAX;
static FROM_ENV: Once = Once::new();

/// Sets how long a task may run without pausing before the scheduler warns
/// about it (default 100 ms); `None` turns the warning off. Applies to every
/// scheduler in the process from their next turn on.
///
/// The environment variable `YIELDLOOP_SLOW_TASK_MS` sets the starting value
/// (`0` turns it off).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// // Quieter: only complain about tasks that hog the thread for a second.
/// yieldloop::set_slow_task_threshold(Some(Duration::from_secs(1)));
/// # yieldloop::set_slow_task_threshold(Some(Duration::from_millis(100)));
/// ```
pub fn set_slow_task_threshold(threshold: Option<Duration>) {
    FROM_ENV.call_once(|| {});
    let ns = threshold.map_or(OFF, |d| u64::try_from(d.as_nanos()).unwrap_or(OFF - 1));
    THRESHOLD_NS.store(ns, Ordering::Relaxed);
}

/// The current threshold, `None` when the watch is off.
pub fn slow_task_threshold() -> Option<Duration> {
    threshold()
}

pub(crate) fn threshold() -> Option<Duration> {
    FROM_ENV.call_once(|| {
        if let Some(ms) = std::env::var("YIELDLOOP_SLOW_TASK_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            let ns = if ms == 0 {
                OFF
            } else {
                ms.saturating_mul(1_000_000)
            };
            THRESHOLD_NS.store(ns, Ordering::Relaxed);
        }
    });
    match THRESHOLD_NS.load(Ordering::Relaxed) {
        OFF => None,
        ns => Some(Duration::from_nanos(ns)),
    }
}

/// A cheap clock for the watch, in nanoseconds: `CLOCK_MONOTONIC_COARSE`
/// is read from the vDSO without touching the TSC, in a few nanoseconds
/// instead of the ~20 of the precise clock, and its resolution (1–4 ms) is
/// plenty for a threshold of tens of milliseconds.
pub(crate) fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

pub(crate) fn warn(id: TaskId, name: Option<&str>, held: Duration, limit: Duration) {
    let who = match name {
        Some(n) => format!("task {id} ({n})"),
        None => format!("task {id}"),
    };
    eprintln!(
        "yieldloop: {who} ran for {:.1} ms without pausing (threshold {} ms); \
         every other task on this thread waited. Call yieldloop::yield_now() in \
         long loops, or move blocking work off the thread.",
        held.as_secs_f64() * 1e3,
        limit.as_millis()
    );
}
