//! Go-style straight-line concurrency on stackful coroutines.
//!
//! A yieldloop task is an ordinary closure running on its own stack. When it
//! has to wait, for a timer, a socket, or another task, it hands the
//! scheduler an [`Op`](raw::Op) saying what it waits for and pauses; the
//! scheduler resumes it with a [`Resume`](raw::Resume) answer once that has happened. It is the
//! generator model of Python's first event loops (`yield` an instruction,
//! get the result `send`-ed back) with no `async` colouring: a pause can
//! happen anywhere in a call chain, so `BufReader::read_line` on a socket
//! just works inside a task.
//!
//! One scheduler runs per thread. It keeps tasks in a slab, ready tasks in a
//! FIFO run queue, deadlines in a min-heap and sockets in a `mio` poll, and
//! sleeps in the kernel until the next deadline or event.
//!
//! # Layout
//!
//! The modules stand in layers, and within a layer in ranks, lowest first:
//! each module uses only modules of a lower rank. A test,
//! `tests/layering.rs`, holds the code to this list and this list to the
//! ranks it enforces. Each entry of `src/` is one module of the list (a
//! folder, or a file where one file is the whole module), so the tree
//! reads as the list does.
//!
//! 1. The platform.
//!    - `sys`: everything that differs between Linux and the other
//!      systems, chosen once: the precise timer, pidfds, guard pages, the
//!      cheapest clock, CPU pinning, `SO_REUSEPORT`; with the `portable`
//!      feature, Linux takes the other systems' paths. Chosen once as
//!      well, the types threads share (`threads`): std's, or the `loom`
//!      model checker's under `--cfg loom`.
//! 2. Plain data.
//!    - `protocol`: the ids ([`TaskId`], wait tokens,
//!      [`IoId`](raw::IoId), scheduler ids, [`ParkToken`](raw::ParkToken))
//!      and the protocol, [`Op`](raw::Op) and [`Resume`](raw::Resume); why
//!      a task, or work on another thread, produced no value
//!      (`join_failure`).
//! 3. Mechanisms.
//!    - `reactor`, `stack`: `mio::Poll`, the registered sources, the
//!      accepts it performs, wake-ups from other threads, the precise timer
//!      where `sys` has one; the pool of guarded stacks and the report of an
//!      overflow.
//! 4. Tasks and their scheduler.
//!    - `scheduler`: a task's coroutine and context at the top of its
//!      stack, and the thread-local of the running task (`coroutine`); the
//!      deadline heap and the runtime's clock (`timers`); the task table,
//!      filing each `Op`, and the loop; and what shows them at work: each
//!      scheduler's counters and the requests for a task dump, shared with
//!      every thread, and the dump's types (`port`); with feature
//!      `tracing`, the spans and events a `tracing` subscriber is told
//!      (`tracing_events`); the scheduler trace; the warning about tasks
//!      that hold the thread too long (`slow_task`).
//!    - `task`: what a task does on it: [`raw::suspend`], the one way a
//!      task pauses, each pause narrowed to the enclosing [`timeout()`] or
//!      [`timeout_at`] scope and charged to the cooperative budget (an
//!      operation that may pause but goes ahead at once spends a unit of
//!      it; once it is spent the task lets the others run first,
//!      [`raw::consume_budget`]); [`raw::park`]; [`spawn()`],
//!      [`JoinHandle`], [`Builder`], [`run`]; [`scope()`], tasks that
//!      borrow; [`join_all`], [`join_any`]; [`task_local!`] and
//!      [`LocalKey`](task_local::LocalKey), one value per task; and
//!      [`raw`], these pauses as a protocol for building your own
//!      primitives.
//! 5. The blocking-style surface.
//!    - `time`, [`io`]: [`sleep`], [`yield_now`], [`interval`];
//!      [`PausingIo`](io::PausingIo), the one way a task (or a future it
//!      polls) waits for a descriptor: a socket, a pipe, a pidfd, the
//!      signal listener's self-pipe, or any descriptor of your own.
//!    - [`sync`], `interop`: channels, locks and `select`; the bridges
//!      between tasks and the worlds around them: [`block_on`], a `Future`
//!      awaited from a task, its waker unparking the task, and
//!      [`spawn_future`], a task that drives one; with feature `tokio`,
//!      `on_tokio()`, a future run on one shared tokio runtime while only
//!      the calling task waits for it; [`spawn_blocking`], the blocking
//!      pool, and one value handed over from another thread
//!      (`from_thread`); [`signal`], Unix signals a task waits for.
//!    - `runtime`, [`net`], [`process`], `hook`: [`Runtime`],
//!      thread-per-core: one scheduler per worker thread, tasks never move
//!      between threads; sockets, whose host names are looked up on the
//!      blocking pool; child processes, their pipes on `io` and their exits
//!      waited for by pausing the task; with feature `hook` (Linux), the C
//!      library's blocking socket and sleep calls, which pause only the
//!      calling task when made from one.
//! 6. The public faces.
//!    - [`diag`]: tuning and diagnostics: the task dump, the counters, the
//!      stack and blocking pools, the slow-task warning, the trace.
//!    - this root (`lib`): the everyday calls, and the public modules kept
//!      in a folder of another name: [`raw`] and
//!      [`task_local`](mod@task_local) from `task`, [`signal`] from
//!      `interop`, and, with `--cfg loom` only, `model` (the entry points of
//!      the model checks of the cross-thread protocols) from `runtime`.
//!
//! A folder is one rank, so what a piece uses, and what uses it, decides
//! its folder. The deadline heap is the scheduler's, in `scheduler`, and
//! not beside [`sleep`] in `time`: `sleep` pauses through the scheduler.
//! The timeout scopes sit in `task`, beside the pause they narrow, since
//! every pause goes through them, `sleep`'s too; so does the cooperative
//! budget, which pauses once it is spent. The counters, dump requests,
//! trace and slow-task watch are written by the scheduler's loop and live
//! with it, while [`diag`], which asks every scheduler and waits for the
//! answers, is a face at the top. The public modules whose folder has
//! another name keep one path each, the root's: `raw` and `task_local` are
//! made of `task`'s pauses and context; `signal` would be a second path in
//! the public `process`; `model` reaches into the runtime's workers.
//!
//! # Platforms
//!
//! Linux, macOS and FreeBSD. Linux has fast paths (a `timerfd` for precise
//! timers, `MADV_GUARD_INSTALL` guard pages, a coarse clock); the other
//! systems take portable ones (the poll's own timeout, `mprotect`), which
//! the Cargo feature `portable` selects on Linux too. CPU pinning
//! ([`RuntimeBuilder::pin`]) is refused on macOS, and `SO_REUSEPORT` does
//! not spread connections there (see [`net::reuseport_listeners`]).
//! Windows is not supported.
//!
//! # Cargo features
//!
//! - `portable`: the code paths of macOS and FreeBSD, on Linux too (see
//!   above).
//! - `futures-io`: `futures_io::AsyncRead`/`AsyncWrite` for
//!   [`net::TcpStream`], [`net::UnixStream`] and [`io::PausingIo`], woken
//!   by yieldloop's own reactor, for async crates run with [`block_on`].
//! - `tokio`: `tokio::io::AsyncRead`/`AsyncWrite` for the same types (the
//!   traits alone start no tokio runtime), and `on_tokio()`, which runs a
//!   future that needs tokio's own reactor, timers or spawn on one shared
//!   tokio runtime, built on first use, while only the calling task waits.
//! - `tracing`: a `tracing` span per task (spawn to end, entered while the
//!   task runs, with its id and name), its pauses and resumes as `TRACE`
//!   events carrying the op, and the slow-task warning, the stuck-task
//!   report and a task's panic as `WARN` and `ERROR` events naming the
//!   task. With no subscriber each costs a check of a cached interest.
//! - `hook` (Linux only): yieldloop defines the C library's blocking
//!   socket and sleep calls (`read`, `recv`, `write`, `send`, `connect`,
//!   `accept`, `poll`, `select`, `nanosleep`, `getaddrinfo`, …), so that a
//!   synchronous library that opens its own sockets, Rust or C, pauses
//!   only the calling task; from anywhere else they are the plain calls.
//!   C libraries loaded as shared objects reach them when the executable
//!   is linked with `-rdynamic`. See the `hook` module.
//!
//! # Other libraries
//!
//! Whether a library lets the other tasks of its thread run while it waits
//! depends on who makes the waiting system call:
//!
//! - a library that reads and writes a stream you hand it (rustls,
//!   tungstenite, the `redis` crate's `ConnectionLike`): hand it a
//!   [`net::TcpStream`]; only the task pauses;
//! - a runtime-agnostic async crate (hyper, tokio-postgres through
//!   `connect_raw`): the features above, [`block_on`], and
//!   [`spawn_future`] for the background futures it hands back; a
//!   descriptor of your own goes through [`io::PausingIo`];
//! - a crate that needs tokio's own reactor (reqwest, sqlx, tonic):
//!   `on_tokio()`, a thread hop each way;
//! - a synchronous client that opens its own `std::net` sockets (the
//!   `redis` crate's `Client::open`, ureq, libpq) blocks the whole
//!   thread on every call, and a [`timeout()`] around it returns late: run
//!   it with [`spawn_blocking`], or hand it a yieldloop stream where it
//!   takes one; or, on Linux, turn on the feature `hook`, and its socket
//!   and sleep calls (a C library's too) pause only the calling task.
//!
//! Chapter 12 of the book in `docs/` takes each in turn, with what it
//! costs.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! let start = Instant::now();
//! let total = yieldloop::run(|| {
//!     let tasks: Vec<_> = (1..=3u64)
//!         .map(|i| {
//!             yieldloop::spawn(move || {
//!                 yieldloop::sleep(Duration::from_millis(50 * i));
//!                 i
//!             })
//!         })
//!         .collect();
//!     tasks.into_iter().map(|t| t.join().unwrap()).sum::<u64>()
//! });
//! assert_eq!(total, 6);
//! // The three sleeps overlapped: about 150 ms in all, not 300.
//! assert!(start.elapsed() < Duration::from_millis(290));
//! ```

#[cfg(panic = "abort")]
compile_error!(
    "yieldloop needs panic = \"unwind\": cancellation, timeouts, the clean-up when `run` \
     returns and the isolation of a task's panic all unwind task stacks; remove \
     panic = \"abort\" from the Cargo profile"
);

// Layer 1: the platform.
mod sys;
// Layer 2: plain data.
mod protocol;
// Layer 3: mechanisms.
mod reactor;
mod stack;
// Layer 4: tasks and their scheduler.
mod scheduler;
mod task;
// Layer 5: the blocking-style surface.
#[cfg(feature = "hook")]
pub mod hook;
mod interop;
pub mod io;
pub mod net;
pub mod process;
mod runtime;
pub mod sync;
mod time;
// Layer 6: the public faces.
pub mod diag;

// Public modules kept in a folder of another name.
pub use interop::signal;
#[cfg(loom)]
#[doc(hidden)]
pub use runtime::model_checks as model;
pub use task::{raw, task_local};

pub use interop::blocking::{spawn_blocking, BlockingHandle};
pub use interop::from_thread::RemoteJoinError;
pub use interop::future::{block_on, spawn_future};
#[cfg(feature = "tokio")]
pub use interop::on_tokio::{on_tokio, tokio_handle, tokio_runtime};
pub use protocol::TaskId;
pub use runtime::{Runtime, RuntimeBuilder, SpawnHandle, WorkerHandle};
pub use stack::{DEFAULT_STACK_SIZE, MIN_STACK_SIZE};
pub use task::join_many::{join_all, join_any, Joinable};
pub use task::scope::{scope, Scope, ScopedJoinHandle};
pub use task::spawn::{current_id, spawn, Builder, JoinError, JoinHandle};
pub use task::timeout::{timeout, timeout_at, Elapsed};
pub use time::{
    interval, interval_at, now, sleep, sleep_future, sleep_until, sleep_until_future, yield_now,
    Interval, MissedTickBehavior, Sleep,
};

/// Runs `f` as the main task of a new scheduler on this thread, drives the
/// loop until `f` returns, and returns its value, like Python's
/// `asyncio.run`.
///
/// When `f` returns, every task still alive is cancelled: its stack is
/// unwound, so destructors run and its sockets close.
///
/// `f` may borrow from the caller, as the closure of
/// [`std::thread::scope`] may: `run` does not return, nor unwind past its
/// own frame, before the main task is over. (The tasks it spawns cannot
/// borrow from it; [`scope()`] gives tasks that borrow.)
///
/// # Panics
///
/// - If `f` panics, the panic comes out of `run` (after the other tasks
///   have been cancelled).
/// - If `run` is called inside a task (use [`spawn()`] there).
/// - If the main task waits for something that can never happen (no timer,
///   no socket and no ready task is left): a deadlock.
///
/// # Panic messages
///
/// The message of a panic inside a task names the task rather than the
/// thread, with its [name](Builder::name) if it has one, else its id:
///
/// ```text
/// task 'conn-7' (id 12) panicked at src/main.rs:10:5:
/// attempt to divide by zero
/// ```
///
/// (`task 'main' (id 1)` for the main task of `run`; on a thread other than
/// the main one, the thread is named too.) `RUST_BACKTRACE` is honoured as
/// usual. This is a panic hook, installed once per process when the first
/// scheduler starts, that passes every other panic to the hook that was in
/// place before. A hook the program had installed by then keeps receiving
/// every panic, task panics included, as before; a hook the program
/// installs later replaces this one, as [`std::panic::set_hook`] always
/// does.
///
/// # Examples
///
/// ```
/// let answer = yieldloop::run(|| {
///     let child = yieldloop::spawn(|| 40);
///     child.join().unwrap() + 2
/// });
/// assert_eq!(answer, 42);
/// ```
///
/// The main task borrows the caller's arguments, and may return a borrow
/// of them:
///
/// ```
/// let args: Vec<String> = vec!["alpha".into(), "beta".into()];
/// let longest: &str = yieldloop::run(|| {
///     yieldloop::sleep(std::time::Duration::from_millis(1));
///     args.iter().max_by_key(|a| a.len()).unwrap().as_str()
/// });
/// assert_eq!(longest, "alpha");
/// ```
pub fn run<'a, F, T>(f: F) -> T
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    task::spawn::run(f)
}

/// Like [`run`], on a paused clock: time stands still while tasks run and
/// jumps ahead to the next deadline whenever only time can wake a task.
/// For tests of code that waits on time: a test that sleeps an hour, or
/// exercises a 30-second timeout, an interval or a retry back-off, takes
/// milliseconds, and its events come in the same order on every run.
///
/// # How the clock moves
///
/// - It starts at the real time of the call and stands still while tasks
///   run: [`now`] reads the same instant until the loop waits.
/// - When no task is ready, it jumps to the next deadline (a [`sleep`], a
///   [`timeout()`], a socket's read timeout, a `*_timeout` wait, a
///   [`Sleep`] future), provided nothing else could wake a task first: no
///   task or future waits on a socket or other descriptor, and no other
///   thread holds a way to wake one (work on the blocking pool, a wait on
///   another thread, a future woken from elsewhere such as an
///   `on_tokio` call). Due deadlines then fire in deadline order, ties
///   in the order they were set.
/// - Otherwise it waits for real, and moves on as far as it really waited:
///   time does not jump while I/O is pending, so sockets, child processes
///   and the blocking pool work as usual, only without the jumps.
///
/// Only the runtime reads this clock: its deadlines, and [`now`]. Code
/// that reads [`std::time::Instant::now`] sees real time; read [`now`] to
/// measure what the tasks see. A task that waits for time by spinning
/// ([`yield_now`] until an instant passes) keeps the clock still forever:
/// a ready task is never skipped over. [`RuntimeBuilder::start_paused`]
/// does the same for a thread-per-core runtime.
///
/// # Panics
///
/// As [`run`].
///
/// # Examples
///
/// An hour of back-off between retries, in no time:
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let started = Instant::now();
/// let (tries, waited) = yieldloop::run_paused(|| {
///     let t0 = yieldloop::now();
///     let mut delay = Duration::from_secs(1);
///     let mut tries = 1;
///     // A service that answers at the twelfth try.
///     while tries < 12 {
///         yieldloop::sleep(delay);
///         delay *= 2;
///         tries += 1;
///     }
///     (tries, yieldloop::now() - t0)
/// });
/// assert_eq!(tries, 12);
/// assert_eq!(waited, Duration::from_secs(2047));
/// assert!(started.elapsed() < Duration::from_secs(30));
/// ```
pub fn run_paused<'a, F, T>(f: F) -> T
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    task::spawn::run_clocked(true, f)
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The chapters of the walkthrough book in `docs/src`, so that every inline
/// Rust example in them is compiled and run by `cargo test --doc`. (Listings
/// pulled in with mdBook's `{{#include}}` are marked `ignore` here; they come
/// from `examples/walkthrough_*.rs`, which `tests/walkthrough.rs` runs.)
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../docs/src/introduction.md")]
    struct Introduction;
    #[doc = include_str!("../docs/src/rust-for-asyncio-readers.md")]
    struct RustForAsyncioReaders;
    #[doc = include_str!("../docs/src/ch01-pause.md")]
    struct Ch01Pause;
    #[doc = include_str!("../docs/src/ch02-round-robin.md")]
    struct Ch02RoundRobin;
    #[doc = include_str!("../docs/src/ch03-timers.md")]
    struct Ch03Timers;
    #[doc = include_str!("../docs/src/ch04-tasks.md")]
    struct Ch04Tasks;
    #[doc = include_str!("../docs/src/ch05-readiness.md")]
    struct Ch05Readiness;
    #[doc = include_str!("../docs/src/ch06-echo.md")]
    struct Ch06Echo;
    #[doc = include_str!("../docs/src/ch07-scale.md")]
    struct Ch07Scale;
    #[doc = include_str!("../docs/src/ch08-real-runtimes.md")]
    struct Ch08RealRuntimes;
    #[doc = include_str!("../docs/src/ch09-capstone.md")]
    struct Ch09Capstone;
    #[doc = include_str!("../docs/src/ch10-structured.md")]
    struct Ch10Structured;
    #[doc = include_str!("../docs/src/caveats.md")]
    struct Caveats;
    #[doc = include_str!("../docs/src/trace.md")]
    struct Trace;
    #[doc = include_str!("../docs/src/wakers.md")]
    struct Wakers;
    #[doc = include_str!("../docs/src/inspecting.md")]
    struct Inspecting;
    #[doc = include_str!("../docs/src/appendix-articles.md")]
    struct AppendixArticles;
    #[doc = include_str!("../docs/src/ch11-services.md")]
    struct Ch11Services;
    #[doc = include_str!("../docs/src/ch12-other-libraries.md")]
    struct Ch12OtherLibraries;
    #[doc = include_str!("../docs/src/ch13-fairness.md")]
    struct Ch13Fairness;
    #[doc = include_str!("../docs/src/ch14-crawler.md")]
    struct Ch14Crawler;
}
