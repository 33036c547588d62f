//! [`on_tokio`]: futures that need tokio's own reactor, timers or spawn,
//! run on one shared tokio runtime while only the calling task pauses.
//!
//! [`block_on`](crate::block_on) drives a future on the task's own thread,
//! which works for any future that only needs a waker. Crates built on
//! tokio (its `net`, `time`, `spawn`: reqwest, sqlx, tonic, redis's async
//! client, tokio-postgres's `connect`) need a tokio runtime around them. So
//! the future hops: it is spawned on a process-wide multi-thread tokio
//! runtime, wrapped so that, once done, it hands its output over the way
//! blocking work does ([`spawn_blocking`](crate::spawn_blocking)'s
//! hand-off): the tokio worker stores it and unparks the caller's pause
//! itself, through the scheduler's cross-thread queue.
//!
//! ```text
//!   calling task (its scheduler's thread)     tokio worker thread
//!   ─────────────────────────────────────     ───────────────────
//!   Handle::spawn(wrapped future) ──────────▶ polls the future, with tokio's
//!   park, its unparker left in the             reactor and timers at hand
//!   hand-off                                  done: output (or panic) into
//!                                             the hand-off, then
//!   woken through the scheduler's ◀────────── RemoteUnparker::unpark
//!   cross-thread queue; takes the output
//! ```
//!
//! If the pause ends early (the task is cancelled, or a
//! [`timeout`](crate::timeout()) around the call expires), the task unwinds
//! out of it, and a guard on its stack aborts the tokio task. A task that
//! is already unwinding cannot pause: there the thread waits for the
//! hand-off, and on a plain thread for tokio's join handle.
//!
//! The runtime is built on first use and lives until the process exits: it
//! sits in a `static`, which Rust never drops. Its threads are idle between
//! calls and end with the process; work still running on it at exit is
//! not finished and its destructors do not run, as for any thread alive
//! when `main` returns.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};
use std::thread;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::{AbortHandle, JoinError};

use super::from_thread::{Handoff, RemoteJoinError};
use crate::scheduler::coroutine;

/// The shared runtime, once built.
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Runs `future` on the shared tokio runtime and returns its output.
/// (Cargo feature `tokio`.)
///
/// Inside a task, only the task pauses until the future is done: the other
/// tasks of its thread run meanwhile. Outside any task, the calling thread
/// blocks. The runtime is built on the first call (see [`tokio_runtime`] to
/// size it beforehand).
///
/// This is the route for crates that run only on tokio: they find tokio's
/// reactor, timers and `tokio::spawn` there. A future that needs only a
/// waker is cheaper with [`block_on`](crate::block_on), which stays on the
/// task's thread. A tokio-side object (a client, a connection pool) may be
/// created in one call and used in later ones: it lives on the same
/// runtime, so it stays valid across calls, from any task or thread.
///
/// Each call spawns one tokio task and hops back through the task's
/// scheduler: a few microseconds of latency and two thread wake-ups when
/// both sides are idle (see the crate's `on_tokio` benchmark), as for
/// tokio's own hop from one runtime to another.
///
/// # Cancellation
///
/// If the calling task is cancelled, or a [`timeout`](crate::timeout())
/// scope around the call expires, while the future runs, the tokio task is
/// aborted: tokio drops the future on one of its workers at its next
/// `.await` (at once if it is idle), so its destructors run there, shortly
/// after the task has moved on. A future that never awaits cannot be
/// stopped this way.
///
/// # The runtime's lifetime
///
/// The shared runtime is never shut down: it lives in a `static` until the
/// process exits, so handles and clients made in one call stay usable in
/// any later one, and no call ever finds it gone. Its worker threads sleep
/// while there is nothing to do. Work still running on it when `main`
/// returns is cut off with the process, without its destructors, like any
/// thread still alive then: a program that must flush something there
/// (close a connection cleanly, say) awaits that in one last `on_tokio`
/// call before it returns.
///
/// # Panics
///
/// A panic in the future is caught on the tokio worker and raised again in
/// the caller with the original payload ([`std::panic::resume_unwind`]),
/// so its message reads as if the future had run in place (the panic hook
/// prints it once, naming the tokio worker thread it happened on). A panic
/// in one call does not harm the runtime or other calls.
///
/// It also panics if the runtime cannot be built on the first call (no
/// thread could be started), and, with tokio's own message, if called
/// outside any task on a thread that drives a tokio runtime (from `async`
/// code already on tokio, `.await` the future instead: blocking a tokio
/// worker could stall the very runtime that has to finish the future).
///
/// Called while the calling task is already unwinding (from a destructor
/// during a panic), a task cannot pause: the whole thread then blocks until
/// the future is done, as [`block_on`](crate::block_on) does.
///
/// # Examples
///
/// A tokio timer from a task, while another task keeps ticking:
///
/// ```
/// use std::time::Duration;
///
/// let ticks = yieldloop::run(|| {
///     let ticker = yieldloop::spawn(|| {
///         let mut n = 0;
///         for _ in 0..5 {
///             yieldloop::sleep(Duration::from_millis(2));
///             n += 1;
///         }
///         n
///     });
///     let v = yieldloop::on_tokio(async {
///         tokio::time::sleep(Duration::from_millis(20)).await;
///         "slept on tokio"
///     });
///     assert_eq!(v, "slept on tokio");
///     ticker.join().unwrap()
/// });
/// assert_eq!(ticks, 5);
/// ```
///
/// From a plain thread, outside any task, it blocks that thread:
///
/// ```
/// let n = yieldloop::on_tokio(async { tokio::spawn(async { 6 * 7 }).await.unwrap() });
/// assert_eq!(n, 42);
/// ```
pub fn on_tokio<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = runtime();
    if !coroutine::in_task() {
        return on_thread(rt, future);
    }
    let (handoff, completer) = Handoff::new();
    let join = rt.spawn(async move {
        let out = CatchUnwind { future }.await;
        completer.complete(out.map_err(RemoteJoinError::panicked));
    });
    // Declared before the wait, so dropped when the task unwinds out of it
    // (cancelled, or a `timeout` around the call expired).
    let abort = AbortOnUnwind(Some(join.abort_handle()));
    drop(join);
    let out = if thread::panicking() {
        // Called from a destructor while the task unwinds: it cannot pause,
        // so the thread waits.
        handoff.wait_blocking()
    } else {
        handoff.wait()
    };
    abort.disarm();
    output(out, RemoteJoinError::try_into_panic)
}

/// [`on_tokio`] outside any task: the thread waits for tokio's join
/// handle.
fn on_thread<F>(rt: &Runtime, future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let join = rt.spawn(future);
    let abort = AbortOnUnwind(Some(join.abort_handle()));
    // Tokio's own wait refuses to block one of its workers (where the
    // caller should `.await` instead), and allows its blocking threads.
    let outcome = rt.block_on(join);
    abort.disarm();
    output(outcome, JoinError::try_into_panic)
}

/// What a call returns: the future's output, or its panic raised again in
/// the caller with the original payload.
fn output<T, E: fmt::Display>(
    outcome: Result<T, E>,
    panic_of: fn(E) -> Result<Box<dyn Any + Send + 'static>, E>,
) -> T {
    match outcome {
        Ok(v) => v,
        Err(e) => match panic_of(e) {
            Ok(payload) => panic::resume_unwind(payload),
            // Only an abort cancels a tokio task of a runtime that never
            // shuts down, and only our guard holds its abort handle.
            Err(e) => panic!("yieldloop: the tokio runtime dropped the future: {e}"),
        },
    }
}

pin_project_lite::pin_project! {
    /// A future's output, or the panic that ended a poll of it: a panic is
    /// caught where it happens, on the tokio worker, so that it reaches
    /// the caller through the hand-off.
    struct CatchUnwind<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = thread::Result<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// Aborts the tokio task unless disarmed: the caller stopped waiting
/// without its output.
struct AbortOnUnwind(Option<AbortHandle>);

impl AbortOnUnwind {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

/// Builds the shared tokio runtime now, with `configure` applied to its
/// builder; [`on_tokio`] and [`tokio_handle`] then use it. (Cargo feature
/// `tokio`.)
///
/// The builder starts as `Builder::new_multi_thread()` with every driver
/// the crate graph has enabled (`enable_all`), threads named
/// `yieldloop-tokio` and **one worker thread** (not tokio's default of one
/// per CPU); `configure` may change anything, typically `worker_threads`.
/// Without a call, the runtime is built with those defaults on first use.
///
/// Yieldloop's own tasks do not run there: tokio's worker only carries the
/// futures handed over by [`on_tokio`] and the tasks they spawn, which
/// mostly wait on I/O. One worker makes a call cheapest: the future and
/// the client's own connection task share it, so a call wakes two threads
/// (the worker, then the caller's scheduler), where several workers wake
/// more (tokio wakes idle ones to steal work). Raise it when the futures
/// themselves do heavy work, which one thread would serialise.
///
/// # Errors
///
/// [`io::ErrorKind::AlreadyExists`] if the runtime has already been built
/// (by an earlier call to this function, [`on_tokio`] or
/// [`tokio_handle`]): its configuration is fixed for the life of the
/// process. Any error from `Builder::build`, such as a failure to start
/// its threads; the runtime then stays unbuilt, and a later call may try
/// again.
///
/// # Examples
///
/// ```
/// yieldloop::tokio_runtime(|b| {
///     b.worker_threads(2);
/// })
/// .expect("first to configure it");
/// // Fixed from now on.
/// let again = yieldloop::tokio_runtime(|b| {
///     b.worker_threads(8);
/// });
/// assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
/// let workers = yieldloop::tokio_handle().metrics().num_workers();
/// assert_eq!(workers, 2);
/// ```
pub fn tokio_runtime<C>(configure: C) -> io::Result<()>
where
    C: FnOnce(&mut Builder),
{
    let _building = lock_building();
    if RUNTIME.get().is_some() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "yieldloop: the shared tokio runtime is already running; \
             configure it before its first use",
        ));
    }
    let mut b = builder();
    configure(&mut b);
    let rt = b.build()?;
    // Nobody else sets it while the lock is held.
    let _ = RUNTIME.set(rt);
    Ok(())
}

/// A handle to the shared tokio runtime, which is built now if it does not
/// exist yet (with the defaults of [`tokio_runtime`]). (Cargo feature
/// `tokio`.)
///
/// For code that needs a [`Handle`] itself: to `spawn` background work
/// that outlives an [`on_tokio`] call, or to `enter` the runtime's context
/// on a thread of your own. Do not call `Handle::block_on` from a task: it
/// blocks the task's whole thread; [`on_tokio`] pauses only the task.
///
/// # Panics
///
/// If the runtime cannot be built (no thread could be started).
pub fn tokio_handle() -> Handle {
    runtime().handle().clone()
}

/// The shared runtime, built with the defaults if nobody built it yet.
fn runtime() -> &'static Runtime {
    if let Some(rt) = RUNTIME.get() {
        return rt;
    }
    let _building = lock_building();
    RUNTIME.get_or_init(|| {
        builder()
            .build()
            .unwrap_or_else(|e| panic!("yieldloop: cannot start the shared tokio runtime: {e}"))
    })
}

/// Serialises the building of the runtime, so that [`tokio_runtime`] can
/// tell whether it was first and can report a failed build (which
/// `OnceLock::get_or_init` has no room for).
fn lock_building() -> MutexGuard<'static, ()> {
    static BUILDING: Mutex<()> = Mutex::new(());
    // Poisoned only by a panicking `configure` closure, before anything
    // was stored: the lock guards no data.
    BUILDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared runtime's worker threads unless configured otherwise: one.
///
/// The futures handed over mostly wait on I/O, and each call costs two
/// thread wake-ups (the worker, then the caller's scheduler). With more
/// workers a call costs more: the future and the client's own connection
/// task (a Redis multiplexer, a PostgreSQL connection) may run on
/// different workers, and tokio wakes idle workers to steal work. Measured
/// around a Redis `GET` or a PostgreSQL `SELECT 1`: 10 to 17 µs of CPU per
/// call with one worker, 19 to 26 µs with one per CPU on two CPUs, from
/// one run to another (the `db` stage of the benchmarks).
const DEFAULT_WORKERS: usize = 1;

/// The shared runtime's builder before the user's settings.
fn builder() -> Builder {
    let mut b = Builder::new_multi_thread();
    b.enable_all()
        .thread_name("yieldloop-tokio")
        .worker_threads(DEFAULT_WORKERS);
    b
}
