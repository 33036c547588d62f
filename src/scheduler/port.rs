//! What a running program can be asked about its schedulers from any
//! thread: their counters ([`Metrics`]), and a listing of their tasks
//! with where each is paused (a [`SchedulerDump`]).
//!
//! Each scheduler owns a [`Port`], shared with a process-wide list:
//!
//! ```text
//!   scheduler thread                      any thread (diag::metrics, diag::dump)
//!   ────────────────                      ──────────────────────────────────────
//!   counters: plain loads and stores ───▶ loads (relaxed): a snapshot
//!   after each poll: a request queued? ◀── queue a request; interrupt the poll
//!     list the tasks, capture their
//!     backtraces, answer each request ──▶ the answer arrives (or a time limit)
//! ```
//!
//! Only the scheduler's thread writes its counters, so each update is a
//! load and a store, never a locked instruction: the hot paths pay what a
//! plain integer would. Readers on other threads may see a snapshot a few
//! updates old, never a torn value.
//!
//! The dump's types live here too, with their text form: the backtraces
//! are captured as bare return addresses (cheap), and resolved to function
//! names, files and lines only when shown, each address once per dump.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, Weak};

use crate::sys::threads::atomic::{AtomicBool, Ordering};
use crate::sys::threads::Mutex;
use std::time::{Duration, Instant};

/// A request for a dump: called on the scheduler's thread with its dump.
pub(crate) type Request = Box<dyn FnOnce(SchedulerDump) + Send>;

/// One scheduler's side of the inspection: its counters and the dump
/// requests waiting for it.
pub(crate) struct Port {
    /// The scheduler's id.
    pub(crate) id: u64,
    /// The name of its thread, if it has one.
    pub(crate) thread: Option<String>,
    pub(crate) metrics: Metrics,
    /// Set when a request is queued, so the loop looks with one load.
    requested: AtomicBool,
    requests: Mutex<Vec<Request>>,
    /// Makes the scheduler's poll return; set once, by the scheduler.
    interrupt: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// The serial of the task the scheduler is running now (0 between
    /// resumes), for the report on a scheduler that does not answer.
    running: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl fmt::Debug for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Port")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Every scheduler's port, as long as the scheduler lives. (A list of the
/// live schedulers, not part of the request protocol: std's lock.)
static PORTS: std::sync::Mutex<Vec<Weak<Port>>> = std::sync::Mutex::new(Vec::new());

impl Port {
    /// The port of a new scheduler `id` on this thread, not listed.
    /// `running` tells which task it runs at the moment.
    pub(crate) fn new(id: u64, running: Box<dyn Fn() -> u64 + Send + Sync>) -> Port {
        Port {
            id,
            thread: std::thread::current().name().map(str::to_owned),
            metrics: Metrics::new(),
            requested: AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
            interrupt: OnceLock::new(),
            running,
        }
    }

    /// [`new`](Self::new), listed for [`ports`].
    pub(crate) fn register(id: u64, running: Box<dyn Fn() -> u64 + Send + Sync>) -> Arc<Port> {
        let port = Arc::new(Port::new(id, running));
        let mut ports = PORTS.lock().unwrap_or_else(|e| e.into_inner());
        ports.retain(|p| p.strong_count() > 0);
        ports.push(Arc::downgrade(&port));
        port
    }

    /// Sets what makes the scheduler's poll return.
    pub(crate) fn set_interrupt(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.interrupt.set(f);
    }

    /// Queues `request` for the scheduler and makes its poll return. A
    /// request left when the scheduler ends is dropped unanswered.
    pub(crate) fn request(&self, request: Request) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        self.requested.store(true, Ordering::Release);
        if let Some(interrupt) = self.interrupt.get() {
            interrupt();
        }
    }

    /// True when requests wait (one load; the scheduler's loop asks after
    /// each poll).
    #[inline]
    pub(crate) fn has_requests(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    /// Takes the requests queued so far.
    pub(crate) fn take_requests(&self) -> Vec<Request> {
        self.requested.store(false, Ordering::Relaxed);
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The serial of the task running on the scheduler now, 0 if none.
    pub(crate) fn running_task(&self) -> u64 {
        (self.running)()
    }
}

/// The ports of the schedulers alive now, oldest first.
pub(crate) fn ports() -> Vec<Arc<Port>> {
    let ports = PORTS.lock().unwrap_or_else(|e| e.into_inner());
    ports.iter().filter_map(Weak::upgrade).collect()
}

// ---------------------------------------------------------------------------
// Counters.

/// Upper bounds of the hold histogram's buckets, in nanoseconds; a last
/// bucket takes the rest.
pub(crate) const HOLD_BOUNDS_NS: [u64; 12] = [
    1_000,
    5_000,
    25_000,
    100_000,
    250_000,
    1_000_000,
    2_500_000,
    10_000_000,
    25_000_000,
    100_000_000,
    250_000_000,
    1_000_000_000,
];

/// For the hold histogram, a poll of the loop that finds at least this
/// many resumes (on average: the number is drawn at random each time, so
/// that a pattern of tasks that repeats cannot hide from the sample) since
/// the last timed one makes the next turn time one of its resumes, chosen
/// at random, which counts for all of them.
pub(crate) const HOLD_SAMPLE_MEAN: u32 = 64;

/// A counter written by one thread and read by any: the writer's update
/// is a load and a store.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning scheduler's thread calls this.
    #[inline(always)]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// Sets the value (a gauge). Only the owning thread calls this.
    #[inline(always)]
    pub(crate) fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// The value, from any thread.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One scheduler's counters.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// When the scheduler started.
    pub(crate) started: Instant,
    pub(crate) spawned: Counter,
    pub(crate) ended: Counter,
    pub(crate) resumes: Counter,
    /// Tasks ready at the last poll.
    pub(crate) run_queue: Counter,
    pub(crate) polls: Counter,
    /// Polls that brought no event and fired no timer.
    pub(crate) empty_polls: Counter,
    /// Nanoseconds spent waiting in the kernel for an event or a deadline.
    pub(crate) parked_ns: Counter,
    /// Timers armed at the last poll, of tasks and of futures.
    pub(crate) timers: Counter,
    /// Sources registered with the reactor at the last poll.
    pub(crate) io_sources: Counter,
    /// Resumes timed for the hold histogram.
    pub(crate) holds_timed: Counter,
    /// Their estimated total: each timed resume counts for the resumes of
    /// the gap it closed.
    pub(crate) held_ns: Counter,
    pub(crate) hold_buckets: [Counter; HOLD_BOUNDS_NS.len() + 1],
    /// Resumes the slow-task watch reported, each held past its threshold.
    pub(crate) slow_holds: Counter,
}

impl Metrics {
    fn new() -> Metrics {
        Metrics {
            started: Instant::now(),
            spawned: Counter::default(),
            ended: Counter::default(),
            resumes: Counter::default(),
            run_queue: Counter::default(),
            polls: Counter::default(),
            empty_polls: Counter::default(),
            parked_ns: Counter::default(),
            timers: Counter::default(),
            io_sources: Counter::default(),
            holds_timed: Counter::default(),
            held_ns: Counter::default(),
            hold_buckets: Default::default(),
            slow_holds: Counter::default(),
        }
    }

    /// Records one timed resume that held the thread for `held`, standing
    /// for `weight` resumes.
    #[cold]
    pub(crate) fn record_hold(&self, held: Duration, weight: u64) {
        let ns = u64::try_from(held.as_nanos()).unwrap_or(u64::MAX);
        let bucket = HOLD_BOUNDS_NS
            .iter()
            .position(|&b| ns <= b)
            .unwrap_or(HOLD_BOUNDS_NS.len());
        self.holds_timed.add(1);
        self.held_ns.add(ns.saturating_mul(weight));
        self.hold_buckets[bucket].add(weight);
    }
}

/// One scheduler's counters at one moment; see
/// [`diag::metrics`](crate::diag::metrics).
///
/// Each field is read on its own, without stopping the scheduler, so two
/// fields may be a few updates apart.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedulerMetrics {
    /// The scheduler's id (unique in the process).
    pub scheduler: u64,
    /// The name of its thread, if it has one.
    pub thread: Option<String>,
    /// How long it has been running.
    pub uptime: Duration,
    /// Tasks alive.
    pub tasks_alive: u64,
    /// Tasks spawned on it.
    pub tasks_spawned: u64,
    /// Tasks that ended (returned, panicked or were cancelled).
    pub tasks_ended: u64,
    /// Resumes of tasks: each runs a task until it pauses or ends.
    pub resumes: u64,
    /// Tasks that were ready (in its run queue) at its last poll.
    pub run_queue_depth: u64,
    /// Polls of the kernel for events.
    pub polls: u64,
    /// Of those, polls that found no event and fired no timer.
    pub polls_empty: u64,
    /// Time it spent running tasks and its own loop: `uptime - parked`.
    pub busy: Duration,
    /// Time it spent waiting in the kernel for an event or a deadline.
    pub parked: Duration,
    /// Timers armed, of tasks and of futures, at its last poll.
    pub timers_pending: u64,
    /// Sockets and descriptors registered with its reactor at its last poll.
    pub io_sources: u64,
    /// The time tasks held its thread without pausing, in all: estimated
    /// from the resumes timed for [`hold_histogram`](Self::hold_histogram).
    pub held: Duration,
    /// How many resumes, by how long each held the thread: `(upper bound,
    /// count)`, the last bucket unbounded (`None`). Estimated from a
    /// sample: after a poll of the loop finds that 64 resumes or more (on
    /// average) have passed since the last timed one, one resume of the
    /// next turn, at random, is timed, and counts for all of them. A busy
    /// loop polls every few hundred resumes; a service, at nearly every
    /// turn.
    pub hold_histogram: Vec<(Option<Duration>, u64)>,
    /// Resumes actually timed for the histogram.
    pub holds_timed: u64,
    /// Resumes the slow-task watch reported, each held past its threshold
    /// (see [`set_slow_task_threshold`](crate::diag::set_slow_task_threshold)):
    /// counted exactly.
    pub slow_holds: u64,
}

impl Port {
    /// The scheduler's counters now.
    pub(crate) fn snapshot(&self) -> SchedulerMetrics {
        let m = &self.metrics;
        let uptime = m.started.elapsed();
        let parked = Duration::from_nanos(m.parked_ns.get()).min(uptime);
        // Ended first: a task spawned between the two reads then only
        // makes `alive` one more, never less than it was.
        let ended = m.ended.get();
        let spawned = m.spawned.get().max(ended);
        let alive = spawned - ended;
        let hold_histogram: Vec<(Option<Duration>, u64)> = HOLD_BOUNDS_NS
            .iter()
            .map(|&b| Some(Duration::from_nanos(b)))
            .chain(std::iter::once(None))
            .zip(m.hold_buckets.iter().map(Counter::get))
            .collect();
        SchedulerMetrics {
            scheduler: self.id,
            thread: self.thread.clone(),
            uptime,
            tasks_alive: alive,
            tasks_spawned: spawned,
            tasks_ended: ended,
            resumes: m.resumes.get(),
            run_queue_depth: m.run_queue.get(),
            polls: m.polls.get(),
            polls_empty: m.empty_polls.get(),
            busy: uptime - parked,
            parked,
            timers_pending: m.timers.get(),
            io_sources: m.io_sources.get(),
            held: Duration::from_nanos(m.held_ns.get()),
            hold_histogram,
            holds_timed: m.holds_timed.get(),
            slow_holds: m.slow_holds.get(),
        }
    }
}

/// The next number of the generator whose state is `seed` (xorshift64:
/// plenty for spreading samples).
pub(crate) fn xorshift(seed: &mut u64) -> u64 {
    let mut x = *seed;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *seed = x;
    x
}

/// How many resumes to let pass before the next timed one, from the
/// random number `x`: in `1..2 * HOLD_SAMPLE_MEAN`, mean
/// [`HOLD_SAMPLE_MEAN`].
pub(crate) fn gap_from(x: u64) -> u32 {
    1 + (x % u64::from(2 * HOLD_SAMPLE_MEAN - 1)) as u32
}

// ---------------------------------------------------------------------------
// The dump.

/// What a task was doing when its scheduler was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Running on its thread now: the task that asked for the dump, or,
    /// in a scheduler that did not answer, the task holding its thread.
    Running,
    /// In the run queue, to run on the next turn.
    Ready {
        /// False for a task that was spawned and has not run yet (it has
        /// no backtrace).
        started: bool,
    },
    /// Paused until something happens.
    Waiting(WaitingOn),
}

/// What a waiting task waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitingOn {
    /// A timer: a sleep, an interval's tick.
    Timer,
    /// A socket or descriptor to become readable.
    Readable {
        /// The descriptor, where the source has one of its own (a signal
        /// listener's pipe, for one, is registered without).
        fd: Option<i32>,
    },
    /// A socket or descriptor to become writable (or a connect to finish).
    Writable {
        /// The descriptor, as for `Readable`.
        fd: Option<i32>,
    },
    /// A connection on a listening socket.
    Accept {
        /// The listener's descriptor, as for `Readable`.
        fd: Option<i32>,
    },
    /// Another task to end.
    Join {
        /// The id of the task joined.
        task: u64,
    },
    /// A channel: a receive from an empty one, or a send to a full one.
    Channel,
    /// A lock, semaphore, notification, barrier, wait group or condition
    /// variable.
    Sync,
    /// A future it drives with [`block_on`](crate::block_on).
    Future,
    /// Work on another thread: the blocking pool, another runtime's
    /// worker, tokio.
    OtherThread,
    /// Anything else that parks a task ([`park`](crate::raw::park)).
    Park,
}

/// What a task parks on, given by the code that parks it, for the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub(crate) enum ParkedOn {
    #[default]
    Park,
    Channel,
    Sync,
    Future,
    OtherThread,
}

thread_local! {
    /// What the next park on this thread parks on: set by the parking
    /// code just before it pauses, taken by the scheduler as it files the
    /// pause.
    static PARKED_ON: std::cell::Cell<ParkedOn> = const { std::cell::Cell::new(ParkedOn::Park) };
}

/// Says what the park about to be made on this thread is for.
#[inline]
pub(crate) fn set_parked_on(on: ParkedOn) {
    PARKED_ON.with(|p| p.set(on));
}

/// What the park being filed is for (and back to the default).
#[inline]
pub(crate) fn take_parked_on() -> ParkedOn {
    PARKED_ON.with(|p| p.replace(ParkedOn::Park))
}

impl From<ParkedOn> for WaitingOn {
    fn from(p: ParkedOn) -> WaitingOn {
        match p {
            ParkedOn::Park => WaitingOn::Park,
            ParkedOn::Channel => WaitingOn::Channel,
            ParkedOn::Sync => WaitingOn::Sync,
            ParkedOn::Future => WaitingOn::Future,
            ParkedOn::OtherThread => WaitingOn::OtherThread,
        }
    }
}

/// One live task in a dump.
#[derive(Debug, Clone)]
pub struct TaskDump {
    /// The task's id ([`current_id`](crate::current_id)'s number).
    pub id: u64,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// What it was doing.
    pub state: TaskState,
    /// How long it had been in that state (measured by the scheduler's
    /// clock, which it reads at each poll: to within a turn of the loop).
    pub since: Duration,
    /// For a wait with a deadline (a sleep, a timeout), how long was left
    /// until it.
    pub deadline_in: Option<Duration>,
    /// Where it was paused; `None` for a task that has not started, or
    /// the one running.
    pub backtrace: Option<Backtrace>,
    /// True for a task that was cancelled inside an intercepted C call
    /// (feature `hook`) and runs on until its next own pause, where it is
    /// torn down: its intercepted calls fail meanwhile (its sleeps still
    /// sleep), and its backtrace names where it is.
    pub cancelled: bool,
}

/// The tasks of one scheduler.
#[derive(Debug, Clone)]
pub struct SchedulerDump {
    /// The scheduler's id (unique in the process).
    pub scheduler: u64,
    /// The name of its thread, if it has one.
    pub thread: Option<String>,
    /// Its live tasks, by id.
    pub tasks: Vec<TaskDump>,
    /// `Some` when the scheduler did not answer in time: its thread was
    /// held by the task this names (0 if none was running), which is why
    /// `tasks` is empty.
    pub unanswered: Option<u64>,
}

/// Where a paused task is: the return addresses on its own stack, from
/// the pause outwards. Resolved to names, files and lines when shown.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Backtrace {
    ips: Arc<[usize]>,
}

/// One frame of a [`Backtrace`], resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name, demangled, without its hash; `None` when the
    /// binary has no symbol for it.
    pub function: Option<String>,
    /// The source file, where the binary has debug information.
    pub file: Option<String>,
    /// The line in it.
    pub line: Option<u32>,
}

impl Backtrace {
    pub(crate) fn new(ips: Vec<usize>) -> Backtrace {
        Backtrace { ips: ips.into() }
    }

    /// Its frames, innermost first (an inlined call gives a frame of its
    /// own), all of them; its text form leaves out the scheduler's own
    /// frames around the pause and below the task's first function.
    pub fn frames(&self) -> Vec<Frame> {
        self.resolved(&mut HashMap::new())
    }

    /// Its frames, each return address resolved once per `cache`: a dump
    /// shares one among all its backtraces.
    fn resolved(&self, cache: &mut HashMap<usize, Vec<Frame>>) -> Vec<Frame> {
        let mut out = Vec::new();
        for &ip in self.ips.iter() {
            out.extend_from_slice(cache.entry(ip).or_insert_with(|| resolve(ip)));
        }
        out
    }

    /// The number of return addresses captured.
    pub fn len(&self) -> usize {
        self.ips.len()
    }

    /// True when nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.ips.is_empty()
    }
}

impl fmt::Debug for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backtrace")
            .field("frames", &self.ips.len())
            .finish()
    }
}

impl fmt::Display for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_frames(f, &self.frames())
    }
}

/// Resolves one return address to its frames (inlined calls first); one
/// frame without a name where the binary has no symbol for it.
fn resolve(ip: usize) -> Vec<Frame> {
    let mut out = Vec::new();
    backtrace::resolve(ip as *mut std::ffi::c_void, |sym| {
        out.push(Frame {
            function: sym.name().map(|n| format!("{n:#}")),
            file: sym.filename().map(|p| p.display().to_string()),
            line: sym.lineno(),
        });
    });
    if out.is_empty() {
        out.push(Frame {
            function: None,
            file: None,
            line: None,
        });
    }
    out
}

/// The frames worth showing: from the pause (`suspend`, or the call that
/// made it) down to the task's own first function, without the scheduler's
/// plumbing on either side: the switch itself above, the task's start
/// (catching its panic, the coroutine's entry) below.
fn shown(frames: &[Frame]) -> &[Frame] {
    fn name(f: &Frame) -> &str {
        f.function.as_deref().unwrap_or("")
    }
    // The switch: the last of these near the top; what calls it is shown.
    let switch = |f: &Frame| {
        let n = name(f);
        n.starts_with("yieldloop::task::suspend::suspend_or")
            || n.starts_with("yieldloop::task::suspend::suspend_yield")
            || n.starts_with("yieldloop::scheduler::coroutine::")
            // The same frames inlined, named without their path (as with
            // limited debug info).
            || ["suspend_or<", "suspend_yield", "with_running<"]
                .iter()
                .any(|p| n.starts_with(p))
    };
    let start = frames
        .iter()
        .take(12)
        .rposition(switch)
        .map_or(0, |i| i + 1);
    let rest = &frames[start..];
    // The task's start: its body's wrapper, and the panic catching around it.
    let mut end = rest
        .iter()
        .position(|f| {
            let n = name(f);
            n.starts_with("yieldloop::task::spawn::task_body")
                || n.starts_with("yieldloop::runtime::worker::run_job")
        })
        .unwrap_or(rest.len());
    while end > 0 {
        let n = name(&rest[end - 1]);
        let catching = n.starts_with("std::panicking::")
            || n.starts_with("std::panic::")
            || n.starts_with("<core::panic::unwind_safe::")
            || n == "__rust_try";
        if !catching {
            break;
        }
        end -= 1;
    }
    &rest[..end]
}

fn write_frames(f: &mut fmt::Formatter<'_>, frames: &[Frame]) -> fmt::Result {
    for frame in shown(frames) {
        let function = frame.function.as_deref().unwrap_or("<unknown>");
        match (&frame.file, frame.line) {
            (Some(file), Some(line)) => {
                writeln!(f, "        {function}\n            at {file}:{line}")?
            }
            (Some(file), None) => writeln!(f, "        {function}\n            at {file}")?,
            _ => writeln!(f, "        {function}")?,
        }
    }
    Ok(())
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskState::Running => f.write_str("running"),
            TaskState::Ready { started: true } => f.write_str("ready"),
            TaskState::Ready { started: false } => f.write_str("ready, not started"),
            TaskState::Waiting(on) => write!(f, "waiting on {on}"),
        }
    }
}

impl fmt::Display for WaitingOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitingOn::Timer => f.write_str("a timer"),
            WaitingOn::Readable { fd: Some(fd) } => write!(f, "fd {fd} readable"),
            WaitingOn::Readable { fd: None } => f.write_str("a source readable"),
            WaitingOn::Writable { fd: Some(fd) } => write!(f, "fd {fd} writable"),
            WaitingOn::Writable { fd: None } => f.write_str("a source writable"),
            WaitingOn::Accept { fd: Some(fd) } => write!(f, "a connection on fd {fd}"),
            WaitingOn::Accept { fd: None } => f.write_str("a connection"),
            WaitingOn::Join { task } => write!(f, "task {task} to end"),
            WaitingOn::Channel => f.write_str("a channel"),
            WaitingOn::Sync => f.write_str("a lock or signal"),
            WaitingOn::Future => f.write_str("a future"),
            WaitingOn::OtherThread => f.write_str("another thread"),
            WaitingOn::Park => f.write_str("a park"),
        }
    }
}

/// A dump of every scheduler in the process; see
/// [`diag::dump`](crate::diag::dump). Its text form lists each task with
/// its state and backtrace; a backtrace the same as an earlier task's is
/// given by that task's id.
#[derive(Debug, Clone)]
pub struct Dump {
    /// Each scheduler's tasks.
    pub schedulers: Vec<SchedulerDump>,
    /// How long taking the dump took (the text form's resolving of names
    /// not included).
    pub took: Duration,
}

impl Dump {
    /// Every task of every scheduler.
    pub fn tasks(&self) -> impl Iterator<Item = &TaskDump> {
        self.schedulers.iter().flat_map(|s| s.tasks.iter())
    }

    /// The first task with id `id`, if one was in the dump. Ids count per
    /// scheduler: with several, look in [`schedulers`](Self::schedulers)
    /// for the one meant.
    pub fn task(&self, id: u64) -> Option<&TaskDump> {
        self.tasks().find(|t| t.id == id)
    }
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: usize = self.schedulers.iter().map(|s| s.tasks.len()).sum();
        writeln!(
            f,
            "yieldloop task dump: {} scheduler(s), {total} task(s), taken in {:.1} ms",
            self.schedulers.len(),
            self.took.as_secs_f64() * 1e3
        )?;
        // Each address resolved once; each distinct backtrace written once
        // per scheduler.
        let mut names: HashMap<usize, Vec<Frame>> = HashMap::new();
        for s in &self.schedulers {
            let mut shown: HashMap<&Backtrace, u64> = HashMap::new();
            write!(f, "\nscheduler {}", s.scheduler)?;
            if let Some(t) = &s.thread {
                write!(f, " (thread \"{t}\")")?;
            }
            match s.unanswered {
                Some(0) => {
                    writeln!(f, ": did not answer in time")?;
                    continue;
                }
                Some(task) => {
                    writeln!(
                        f,
                        ": did not answer in time; task {task} holds its thread without pausing"
                    )?;
                    continue;
                }
                None => writeln!(f, ": {} task(s)", s.tasks.len())?,
            }
            for t in &s.tasks {
                write!(f, "\ntask {}", t.id)?;
                if let Some(n) = &t.name {
                    write!(f, " \"{n}\"")?;
                }
                write!(f, ": {}, for {}", t.state, Ms(t.since))?;
                if let Some(d) = t.deadline_in {
                    write!(f, ", deadline in {}", Ms(d))?;
                }
                if t.cancelled {
                    f.write_str(
                        " (cancelled inside an intercepted call; runs on to its next own pause)",
                    )?;
                }
                writeln!(f)?;
                let Some(bt) = &t.backtrace else { continue };
                if let Some(first) = shown.get(bt) {
                    writeln!(f, "        (same backtrace as task {first})")?;
                    continue;
                }
                shown.insert(bt, t.id);
                write_frames(f, &bt.resolved(&mut names))?;
            }
        }
        Ok(())
    }
}

/// A duration in milliseconds, or seconds when long.
struct Ms(Duration);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.as_secs_f64();
        if s >= 10.0 {
            write!(f, "{s:.1} s")
        } else {
            write!(f, "{:.1} ms", s * 1e3)
        }
    }
}
