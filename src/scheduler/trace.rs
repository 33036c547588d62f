//! The scheduler trace: one line per decision, for people learning how the
//! loop works and for timeline pictures.
//!
//! Turn it on with the environment variable `YIELDLOOP_TRACE=1` (lines go
//! to stderr) or `YIELDLOOP_TRACE=path` (lines go to that file), or from
//! code with [`trace_to_stderr`], [`trace_to_file`] and [`trace_off`].
//! Each line is `[seconds] event details`:
//!
//! ```text
//! [  0.000010] spawn  task 2 "B" by task 1
//! [  0.000031] resume task 2 "B" with Ready
//! [  0.000040] yield  task 2 "B" -> Wait(in 1.000000s)
//! [  0.000052] poll   coarse timeout 0.997988s (epoll 998 ms), deadline in 0.999988s
//! [  0.998120] polled slept 0.998068s, 0 event(s), timed out
//! [  0.998131] poll   precise no timeout, timerfd set 0.001909s, deadline in 0.001909s
//! [  1.000077] polled slept 0.001946s, 0 event(s), timerfd fired
//! [  1.000080] wake   task 2 "B" by timer
//! [  1.000083] resume task 2 "B" with Ready
//! [  1.000090] end    task 2 "B"
//! ```
//!
//! Events: `spawn`, `resume` (with the answer sent in), `yield` (with the
//! `Op` handed out), `end`, `cancel`, `wake` (with its cause: `timer`,
//! `socket`, `task-end`, `unpark`, `remote`, `now` for an immediate answer,
//! `closed`), `poll` (how the loop waits: the step, the timeout the poll
//! is given, the precise timer if any, the deadline) and `polled` (how long
//! it slept, how many events came, and what else ended the wait). On Linux
//! a far deadline is waited for in two steps, `coarse` then `precise`, as
//! above; the reactor's `wait` module says why. `cargo run --example
//! trace_timeline` turns such a file into an SVG timeline.
//!
//! When tracing is off, each decision costs one relaxed atomic load.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use crate::protocol::{Op, Resume};

static ON: AtomicBool = AtomicBool::new(false);
static SINK: Mutex<Option<Sink>> = Mutex::new(None);
static FROM_ENV: Once = Once::new();

struct Sink {
    out: Box<dyn Write + Send>,
    start: Instant,
}

/// Is tracing on? Reads `YIELDLOOP_TRACE` the first time.
#[inline]
pub(crate) fn on() -> bool {
    FROM_ENV.call_once(init_from_env);
    ON.load(Ordering::Relaxed)
}

fn init_from_env() {
    match std::env::var("YIELDLOOP_TRACE") {
        Ok(v) if v == "1" || v.eq_ignore_ascii_case("stderr") => install(Box::new(io::stderr())),
        Ok(v) if !v.is_empty() && v != "0" => {
            if let Err(e) = File::create(&v).map(|f| install(Box::new(BufWriter::new(f)))) {
                eprintln!("yieldloop: cannot write the trace to {v}: {e}");
            }
        }
        _ => {}
    }
}

fn install(out: Box<dyn Write + Send>) {
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = sink.as_mut() {
        let _ = old.out.flush();
    }
    *sink = Some(Sink {
        out,
        start: Instant::now(),
    });
    ON.store(true, Ordering::Relaxed);
}

/// Writes the scheduler trace to stderr from now on, for every scheduler in
/// the process.
pub fn trace_to_stderr() {
    FROM_ENV.call_once(|| {});
    install(Box::new(io::stderr()));
}

/// Writes the scheduler trace to a file from now on (replacing any earlier
/// destination). Call [`trace_off`] to flush and close it.
///
/// # Errors
///
/// If the file cannot be created.
///
/// # Examples
///
/// ```
/// let path = std::env::temp_dir().join(format!("yl-trace-{}.txt", std::process::id()));
/// yieldloop::diag::trace_to_file(&path).unwrap();
/// yieldloop::run(|| yieldloop::sleep(std::time::Duration::from_millis(1)));
/// yieldloop::diag::trace_off();
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.contains("yield  task 1 \"main\" -> Wait("));
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn trace_to_file(path: impl AsRef<Path>) -> io::Result<()> {
    FROM_ENV.call_once(|| {});
    let f = File::create(path)?;
    install(Box::new(BufWriter::new(f)));
    Ok(())
}

/// Stops tracing, flushing what was written.
pub fn trace_off() {
    FROM_ENV.call_once(|| {});
    ON.store(false, Ordering::Relaxed);
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(mut s) = sink.take() {
        let _ = s.out.flush();
    }
}

/// Writes one trace line.
pub(crate) fn emit(args: fmt::Arguments<'_>) {
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = sink.as_mut() {
        let t = s.start.elapsed().as_secs_f64();
        let _ = writeln!(s.out, "[{t:>11.6}] {args}");
    }
}

/// Flushes the trace (at the end of a run), so a file is complete.
pub(crate) fn flush() {
    if ON.load(Ordering::Relaxed) {
        let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = sink.as_mut() {
            let _ = s.out.flush();
        }
    }
}

/// A task as shown in the trace: `task 3 "name"`.
pub(crate) struct Who<'a>(pub(crate) u64, pub(crate) Option<&'a str>);

impl fmt::Display for Who<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(n) => write!(f, "task {} {n:?}", self.0),
            None => write!(f, "task {}", self.0),
        }
    }
}

/// An op as shown in the trace, deadlines relative to `now`.
pub(crate) struct ShowOp<'a>(pub(crate) &'a Op, pub(crate) Instant);

impl fmt::Display for ShowOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let now = self.1;
        let dl = |d: &Option<Instant>| match d {
            Some(d) => format!(
                ", deadline in {:.6}s",
                d.saturating_duration_since(now).as_secs_f64()
            ),
            None => String::new(),
        };
        match self.0 {
            Op::Yield => f.write_str("Yield"),
            Op::Defer => f.write_str("Defer"),
            Op::Wait(d) => write!(
                f,
                "Wait(in {:.6}s)",
                d.saturating_duration_since(now).as_secs_f64()
            ),
            Op::ReadReady(io, d) => write!(f, "ReadReady(io {}{})", io.key, dl(d)),
            Op::WriteReady(io, d) => write!(f, "WriteReady(io {}{})", io.key, dl(d)),
            Op::Accept(io, d) => write!(f, "Accept(io {}{})", io.key, dl(d)),
            Op::Join(t, d) => write!(f, "Join(task {}{})", t.serial, dl(d)),
            Op::Park(_, d) => write!(f, "Park({})", dl(d).trim_start_matches(", ")),
        }
    }
}

/// A resume value as shown in the trace.
pub(crate) struct ShowResume<'a>(pub(crate) &'a Resume);

impl fmt::Display for ShowResume<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

/// A duration in seconds, for poll lines.
fn secs(d: Duration) -> String {
    format!("{:.6}s", d.as_secs_f64())
}

/// The line before a poll: the step of the wait (`now`, `event`, `coarse`,
/// `precise` or `direct`, see the reactor's `wait`), the timeout handed
/// to the poll (`timeout_ms`: the same in the whole milliseconds
/// `epoll_wait` gets), the precise timer if it ends this wait (the time
/// left until it expires, and whether this poll armed it), and how far off
/// the deadline is:
///
/// ```text
/// poll   coarse timeout 0.047990s (epoll 48 ms), deadline in 0.049990s
/// poll   precise no timeout, timerfd set 0.001855s, deadline in 0.001855s
/// ```
pub(crate) fn poll_start(
    step: &str,
    timeout: Option<Duration>,
    timeout_ms: Option<u128>,
    timer: Option<(Duration, bool)>,
    deadline_in: Option<Duration>,
) {
    let mut line = format!("poll   {step} ");
    match timeout {
        Some(t) if t.is_zero() => line.push_str("timeout 0s"),
        Some(t) => line.push_str(&format!("timeout {}", secs(t))),
        None => line.push_str("no timeout"),
    }
    if let Some(ms) = timeout_ms {
        line.push_str(&format!(" (epoll {ms} ms)"));
    }
    if let Some((left, armed_now)) = timer {
        let how = if armed_now { "set" } else { "left" };
        line.push_str(&format!(", timerfd {how} {}", secs(left)));
    }
    if let Some(d) = deadline_in {
        line.push_str(&format!(", deadline in {}", secs(d)));
    }
    emit(format_args!("{line}"));
}

/// The line after a poll that started at `since` and brought `events`
/// (the precise timer's expiry not counted), with what ended it besides
/// the events: the precise timer, a signal, or the timeout running out
/// (`had_timeout` says whether there was a timeout to run out).
pub(crate) fn poll_end(
    since: Instant,
    events: usize,
    timer_fired: bool,
    interrupted: bool,
    had_timeout: bool,
) {
    let ended = if timer_fired {
        ", timerfd fired"
    } else if interrupted {
        ", interrupted"
    } else if events == 0 && had_timeout {
        ", timed out"
    } else {
        ""
    };
    emit(format_args!(
        "polled slept {}, {events} event(s){ended}",
        secs(since.elapsed())
    ));
}
