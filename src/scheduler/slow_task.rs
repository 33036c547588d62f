//! The slow-task watch: a warning when one task holds the thread too long
//! without pausing, like asyncio's debug mode or gevent's monitor.
//!
//! A task that computes for 300 ms without a pause stops every other task on
//! its thread for 300 ms. Timing every resume would put a clock read on the
//! hot path of every hand-over, so the work is split, as Go's `sysmon` does:
//!
//! * each scheduler publishes, in a [`Watch`] it shares with a monitor
//!   thread, the number of the resume it is running (two plain stores per
//!   resume: the number before, zero after);
//! * one process-wide monitor thread looks at every watch a few times per
//!   threshold; a resume it sees running for longer than the threshold is
//!   flagged;
//! * the scheduler checks for a flag after each resume (one load) and, when
//!   there is one, prints the warning naming the task;
//! * a resume still running after ten thresholds is reported by the monitor
//!   itself, by task number, while it runs: a task stuck in an endless loop
//!   would otherwise never be named at all.
//!
//! The monitor samples every quarter of the threshold, so any resume longer
//! than 1.25 times the threshold is reported, and none shorter than the
//! threshold. When no task has been running at its last few looks it parks
//! until a scheduler resumes a task again (or five seconds pass, which
//! covers a resume that began just as it decided to park), so an idle
//! process sees one wake-up every five seconds instead of four per
//! threshold; with no scheduler left at all (after `run` returned) it
//! sleeps until one starts.
//!
//! The clock is wall time, not CPU time: on a machine short of cores, a
//! thread the kernel switched out in the middle of a resume can trip the
//! warning though the task itself did little; the message then says the
//! thread was held, which is still true for the other tasks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, Weak};
use std::thread::Thread;
use std::time::Duration;

use crate::protocol::TaskLabel;

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
/// A monitor thread looks at the schedulers every quarter of the threshold,
/// so a resume is certainly reported once it runs past 1.25 times the
/// threshold, and never when it is shorter than the threshold; the time in
/// the message is a lower bound. A resume still running after ten
/// thresholds is also reported while it runs, by task number, so a task
/// stuck in an endless loop is named too.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// // Quieter: only complain about tasks that hog the thread for a second.
/// yieldloop::diag::set_slow_task_threshold(Some(Duration::from_secs(1)));
/// # yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(100)));
/// ```
pub fn set_slow_task_threshold(threshold: Option<Duration>) {
    FROM_ENV.call_once(|| {});
    let ns = threshold.map_or(OFF, |d| u64::try_from(d.as_nanos()).unwrap_or(OFF - 1));
    THRESHOLD_NS.store(ns, Ordering::Relaxed);
    // Let a parked monitor pick up the new setting.
    if let Some(Some(m)) = MONITOR.get() {
        m.unpark();
    }
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

// The clock of the watch, the cheapest monotonic one each system offers
// (see `sys`): its resolution (1–4 ms where it is coarse) is plenty for a
// threshold of tens of milliseconds.
use crate::sys::WATCH_CLOCK;

/// A cheap clock for the watch, in nanoseconds (see `WATCH_CLOCK`).
pub(crate) fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(WATCH_CLOCK, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Prints the warning for a resume of task `serial` that held the thread
/// for at least `held`.
/// `cancelled`: the task was cancelled inside an intercepted call (feature
/// `hook`) and runs on until its next own pause; the warning says so.
pub(crate) fn warn(
    serial: u64,
    name: Option<&str>,
    held: Duration,
    limit: Duration,
    cancelled: bool,
) {
    if super::tracing_events::slow_task(serial, name, held.as_secs_f64() * 1e3, limit.as_millis()) {
        return;
    }
    let who = TaskLabel { serial, name };
    eprintln!(
        "yieldloop: {who} ran for at least {:.1} ms without pausing (threshold {} ms); \
         every other task on this thread waited. The cooperative budget only stops a \
         task at a call that could pause (a read, a receive, a lock): a loop of pure \
         computation needs yieldloop::yield_now() every so often, work that blocks or \
         computes for long belongs on yieldloop::spawn_blocking, and a task that must \
         not share its thread on a worker of its own (Runtime::spawn_on).{}",
        held.as_secs_f64() * 1e3,
        limit.as_millis(),
        if cancelled {
            " It was cancelled inside an intercepted call and runs on until its next own \
             pause; diag::dump() shows where it is."
        } else {
            ""
        }
    );
}

/// One scheduler's side of the watch, shared with the monitor thread.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The number of the resume in progress; 0 between resumes.
    running: AtomicU64,
    /// The serial of the task that resume runs.
    task: AtomicU64,
    /// A resume the monitor found over the threshold (its number), or 0.
    flagged: AtomicU64,
    /// The serial of the flagged resume's task.
    flagged_task: AtomicU64,
    /// When the monitor first saw the flagged resume (coarse ns).
    flagged_since: AtomicU64,
    /// The monitor's own notes: the resume it saw last, and since when.
    last_seen: AtomicU64,
    first_seen_ns: AtomicU64,
    /// The number of the last resume begun.
    seq: AtomicU64,
    /// The resume the monitor reported as stuck while it ran, if any.
    stuck_reported: AtomicU64,
}

/// What the monitor flagged: which task, since when it was seen running.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flag {
    /// The flagged resume's number.
    pub(crate) resume: u64,
    /// Its task's serial.
    pub(crate) task: u64,
    /// How long it had run at least, measured now.
    pub(crate) held: Duration,
}

/// The monitor parks when this is set; a resume wakes it.
static PARKED: AtomicBool = AtomicBool::new(false);
/// The monitor thread, once started (`None` if the system refused it).
static MONITOR: OnceLock<Option<Thread>> = OnceLock::new();
/// Every scheduler's watch.
static WATCHES: Mutex<Vec<Weak<Watch>>> = Mutex::new(Vec::new());

impl Watch {
    /// A watch for a new scheduler, looked at by the monitor (started now
    /// if this is the first). If the thread cannot be started the watch
    /// stays silent: it is a diagnostic, not worth failing a run for.
    pub(crate) fn register() -> Arc<Watch> {
        let watch = Arc::new(Watch::default());
        let mut all = WATCHES.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&watch));
        drop(all);
        // Started once (concurrent first registrations wait for it), and
        // woken in case it parked with nothing to watch.
        let monitor = MONITOR.get_or_init(|| {
            std::thread::Builder::new()
                .name("yieldloop-watch".into())
                .spawn(monitor)
                .ok()
                .map(|h| h.thread().clone())
        });
        if let Some(m) = monitor {
            m.unpark();
        }
        watch
    }

    /// Marks the start of a resume of task `serial`; returns its number.
    #[inline]
    pub(crate) fn begin(&self, serial: u64) -> u64 {
        let seq = self.seq.load(Ordering::Relaxed) + 1;
        self.seq.store(seq, Ordering::Relaxed);
        self.task.store(serial, Ordering::Relaxed);
        self.running.store(seq, Ordering::Relaxed);
        if PARKED.load(Ordering::Relaxed) {
            wake_monitor();
        }
        seq
    }

    /// The serial of the task whose resume runs now; 0 between resumes.
    pub(crate) fn running_task(&self) -> u64 {
        if self.running.load(Ordering::Relaxed) == 0 {
            0
        } else {
            self.task.load(Ordering::Relaxed)
        }
    }

    /// Marks the end of a resume; true when the monitor has flagged one.
    #[inline]
    pub(crate) fn end(&self) -> bool {
        self.running.store(0, Ordering::Relaxed);
        self.flagged.load(Ordering::Relaxed) != 0
    }

    /// Takes the flag the monitor left.
    pub(crate) fn take_flag(&self) -> Option<Flag> {
        let resume = self.flagged.swap(0, Ordering::Acquire);
        if resume == 0 {
            return None;
        }
        let since = self.flagged_since.load(Ordering::Relaxed);
        Some(Flag {
            resume,
            task: self.flagged_task.load(Ordering::Relaxed),
            held: Duration::from_nanos(coarse_now_ns().saturating_sub(since)),
        })
    }

    /// The monitor's look at this watch at `now`; true if a resume runs.
    fn look(&self, now: u64, limit: u64) -> bool {
        let running = self.running.load(Ordering::Relaxed);
        if running == 0 {
            self.last_seen.store(0, Ordering::Relaxed);
            return false;
        }
        if running != self.last_seen.swap(running, Ordering::Relaxed) {
            self.first_seen_ns.store(now, Ordering::Relaxed);
            return true;
        }
        let since = self.first_seen_ns.load(Ordering::Relaxed);
        if now.saturating_sub(since) >= limit && self.flagged.load(Ordering::Relaxed) != running {
            // The task serial is read after the resume number: check the
            // resume is still the same one, so the two belong together.
            let task = self.task.load(Ordering::Relaxed);
            if self.running.load(Ordering::Relaxed) == running {
                self.flagged_task.store(task, Ordering::Relaxed);
                self.flagged_since.store(since, Ordering::Relaxed);
                self.flagged.store(running, Ordering::Release);
            }
        }
        let held = now.saturating_sub(since);
        if held >= limit.saturating_mul(STUCK_FACTOR)
            && self.stuck_reported.load(Ordering::Relaxed) != running
        {
            let task = self.task.load(Ordering::Relaxed);
            if self.running.load(Ordering::Relaxed) == running {
                self.stuck_reported.store(running, Ordering::Relaxed);
                warn_stuck(task, Duration::from_nanos(held));
            }
        }
        true
    }
}

#[cold]
fn wake_monitor() {
    if PARKED.swap(false, Ordering::Relaxed) {
        if let Some(Some(m)) = MONITOR.get() {
            m.unpark();
        }
    }
}

/// A resume still running after this many thresholds is reported by the
/// monitor itself, while it runs: a task caught in an endless loop never
/// pauses, so the scheduler's report after the resume would never come.
const STUCK_FACTOR: u64 = 10;

/// The monitor's report of a resume that is still running. The task's name
/// lives with its scheduler, out of this thread's reach, so the message
/// gives its number; the scheduler's own warning, with the name, follows if
/// the task ever pauses.
#[cold]
fn warn_stuck(serial: u64, held: Duration) {
    if super::tracing_events::stuck_task(serial, held.as_secs_f64()) {
        return;
    }
    eprintln!(
        "yieldloop: {} has been running for {:.1} s without pausing and still \
         is; every other task on its thread is stalled. The cooperative budget cannot \
         stop a loop that makes no call that could pause: call yieldloop::yield_now() \
         in it, move the work to yieldloop::spawn_blocking, or give it a worker of \
         its own (Runtime::spawn_on).",
        TaskLabel { serial, name: None },
        held.as_secs_f64()
    );
}

/// Looks this many times without seeing a task run before parking.
const IDLE_LOOKS: u32 = 8;

/// The monitor thread's loop.
fn monitor() {
    let mut idle_looks = 0;
    loop {
        let Some(limit) = threshold() else {
            std::thread::park();
            continue;
        };
        let limit = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        let every = (limit / 4).clamp(1_000_000, 250_000_000);
        std::thread::sleep(Duration::from_nanos(every));
        let now = coarse_now_ns();
        let mut busy = false;
        let mut all = WATCHES.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|w| match w.upgrade() {
            Some(w) => {
                busy |= w.look(now, limit);
                true
            }
            None => false,
        });
        let none_left = all.is_empty();
        drop(all);
        if none_left {
            // No scheduler at all: sleep until one registers.
            std::thread::park();
            idle_looks = 0;
            continue;
        }
        idle_looks = if busy { 0 } else { idle_looks + 1 };
        if idle_looks >= IDLE_LOOKS {
            // Nothing has run for a while: sleep until a resume wakes us
            // (or for a few seconds, covering a resume that began just as
            // we decided to park).
            PARKED.store(true, Ordering::Relaxed);
            std::thread::park_timeout(Duration::from_secs(5));
            PARKED.store(false, Ordering::Relaxed);
            idle_looks = 0;
        }
    }
}
