//! Go-style straight-line concurrency on stackful coroutines.
//!
//! A yieldloop task is an ordinary closure running on its own stack. When it
//! has to wait, for a timer, a socket, or another task, it hands the
//! scheduler an [`Op`] saying what it waits for and pauses; the scheduler
//! resumes it with a [`Resume`] answer once that has happened. It is the
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
//! - [`op`](Op): the protocol, [`Op`] and [`Resume`].
//! - `context`: the thread-local current scheduler and task, and [`suspend`].
//! - `scheduler`: the task table, run queue and the loop.
//! - `task`: [`TaskId`], [`JoinHandle`], [`JoinError`], [`Builder`], [`spawn`].
//! - `timer`: the deadline heap.
//! - `reactor`: `mio::Poll` and readiness dispatch; `timerfd`: precise wake-ups.
//! - `stack`: the pool of guarded stacks; `overflow`: reports of overflows.
//! - `slow`: the warning about tasks that hold the thread too long.
//! - `park`: [`ParkToken`], the building block of waiting primitives.
//! - `time`: [`sleep`], [`sleep_until`], [`yield_now`].
//! - `timeout`: [`timeout`], [`timeout_at`]: deadlines around any code.
//! - `trace`: the scheduler trace ([`trace_to_stderr`], `YIELDLOOP_TRACE=1`).
//! - [`sync`]: channels ([`sync::mpsc`] across threads), select, mutex, semaphore, events.
//! - [`net`]: [`TcpListener`](net::TcpListener), [`TcpStream`](net::TcpStream),
//!   [`UdpSocket`](net::UdpSocket), [`UnixListener`](net::UnixListener),
//!   [`UnixStream`](net::UnixStream), [`UnixDatagram`](net::UnixDatagram),
//!   `SO_REUSEPORT` listeners
//!   ([`reuseport_listeners`](net::reuseport_listeners)).
//! - `blocking`: [`spawn_blocking`], the pool for calls that would block the
//!   thread (files, name resolution, heavy computation).
//! - `runtime`: [`Runtime`], thread-per-core: one scheduler per worker
//!   thread, work handed over with [`Runtime::spawn_on`]. Tasks never move
//!   between threads.
//! - `handoff`: a value crossing threads to a parked task
//!   ([`BlockingHandle`], [`WorkerHandle`], [`RemoteJoinError`]).
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

mod blocking;
mod context;
mod handoff;
pub mod net;
mod op;
mod overflow;
mod park;
mod reactor;
mod runtime;
mod scheduler;
mod slow;
mod stack;
pub mod sync;
mod task;
mod time;
mod timeout;
mod timer;
mod timerfd;
mod trace;

pub use blocking::{
    blocking_pool_stats, set_blocking_idle_timeout, set_blocking_max_threads, spawn_blocking,
    BlockingHandle, BlockingPoolStats, DEFAULT_BLOCKING_IDLE_TIMEOUT, DEFAULT_BLOCKING_MAX_THREADS,
};
pub use context::suspend;
pub use handoff::RemoteJoinError;
pub use op::{IoId, Op, Resume};
pub use park::{park, park_token, ParkToken, RemoteUnparker};
pub use runtime::{Runtime, RuntimeBuilder, WorkerHandle};
pub use slow::{set_slow_task_threshold, slow_task_threshold};
pub use stack::{bench_pool_cycle, guards_use_madvise, pool_stats, PoolStats};
pub use task::{
    current_id, spawn, Builder, JoinError, JoinHandle, TaskId, DEFAULT_STACK_SIZE, MIN_STACK_SIZE,
};
pub use time::{sleep, sleep_until, yield_now};
pub use timeout::{timeout, timeout_at, Elapsed};
pub use trace::{trace_off, trace_to_file, trace_to_stderr};

/// Runs `f` as the main task of a new scheduler on this thread, drives the
/// loop until `f` returns, and returns its value, like Python's
/// `asyncio.run`.
///
/// When `f` returns, every task still alive is cancelled: its stack is
/// unwound, so destructors run and its sockets close.
///
/// # Panics
///
/// - If `f` panics, the panic comes out of `run` (after the other tasks
///   have been cancelled).
/// - If `run` is called inside a task (use [`spawn`] there).
/// - If the main task waits for something that can never happen (no timer,
///   no socket and no ready task is left): a deadlock.
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
pub fn run<F, T>(f: F) -> T
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    scheduler::run_main(f)
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
    #[doc = include_str!("../docs/src/caveats.md")]
    struct Caveats;
    #[doc = include_str!("../docs/src/trace.md")]
    struct Trace;
    #[doc = include_str!("../docs/src/appendix-articles.md")]
    struct AppendixArticles;
}
