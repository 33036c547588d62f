//! What hyper asks of a runtime, from yieldloop: I/O, a timer, an executor.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use yieldloop::net::TcpStream;

/// A yieldloop `TcpStream` as hyper's I/O: hyper's `rt::Read`/`rt::Write`
/// over tokio's `AsyncRead`/`AsyncWrite`, which the stream implements on
/// yieldloop's reactor (its feature `tokio`; no tokio runtime runs).
pub type Io = TokioIo<TcpStream>;

/// Wraps `stream` for hyper; see [`Io`].
pub fn io(stream: TcpStream) -> Io {
    TokioIo::new(stream)
}

/// hyper's `rt::Executor` on yieldloop: each future hyper hands over (an
/// HTTP/2 stream, a connection's background work) becomes a task of the
/// calling thread's scheduler, with a stack of [`HYPER_TASK_STACK_SIZE`],
/// and is detached.
///
/// The futures need not be `Send`: they run on the thread that spawned
/// them. Like `spawn_future`, it panics outside a yieldloop run.
#[derive(Clone, Copy, Debug, Default)]
pub struct YieldloopExecutor;

impl<F> hyper::rt::Executor<F> for YieldloopExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        // Detached: hyper learns of the end through its own channels.
        drop(spawn_hyper_task(move || fut));
    }
}

/// hyper's `rt::Timer` on yieldloop's timers: each sleep is a
/// [`yieldloop::Sleep`], a timer on the scheduler of the thread that polls
/// it, whose waker that scheduler wakes at the deadline. Resetting one
/// moves its deadline in place.
///
/// hyper's HTTP/1.1 server uses it for its header read timeout (30 s by
/// default once a timer is set) and keep-alive timers.
#[derive(Clone, Copy, Debug, Default)]
pub struct YieldloopTimer;

/// The sleep [`YieldloopTimer`] hands hyper: a [`yieldloop::Sleep`] as a
/// `hyper::rt::Sleep`.
#[derive(Debug)]
pub struct YieldloopSleep(yieldloop::Sleep);

impl Future for YieldloopSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for YieldloopSleep {}

impl hyper::rt::Timer for YieldloopTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(YieldloopSleep(yieldloop::sleep_future(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(YieldloopSleep(yieldloop::sleep_until_future(deadline)))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        // Ours: move its deadline, keeping the allocation. Another timer's
        // sleep: replace it.
        match sleep.as_mut().downcast_mut_pin::<YieldloopSleep>() {
            Some(mine) => mine.get_mut().0.reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// The stack of the tasks that drive hyper's futures: HTTP/2
/// connections and streams, and connections over TLS.
///
/// An HTTP/2 connection's future (h2's state machine, hyper's dispatcher,
/// perhaps rustls's session under it) is a large value, and a debug build
/// keeps several copies of it on the stack while polling: it overflows
/// yieldloop's default 64 KiB there. 256 KiB covers a debug build; a
/// release build uses a fraction of it, and a stack's untouched pages cost
/// no memory.
pub const HYPER_TASK_STACK_SIZE: usize = 256 * 1024;

/// Drives the future `make` returns to its end in a task of its own with
/// a stack of [`HYPER_TASK_STACK_SIZE`] ([`yieldloop::block_on`] in a task
/// from [`yieldloop::Builder`]): [`yieldloop::spawn_future`] with a larger
/// stack. The future is made in the new task, so that the spawning task's
/// stack never holds it.
///
/// # Panics
///
/// Outside a yieldloop run, or if the stack cannot be had.
pub(crate) fn spawn_hyper_task<M, F>(make: M) -> yieldloop::JoinHandle<F::Output>
where
    M: FnOnce() -> F + 'static,
    F: Future + 'static,
    F::Output: 'static,
{
    spawn_hyper_task_after(|| (), move |()| make())
}

/// [`spawn_hyper_task`], with `prepare` run first in the new task and its
/// result handed to `make`. `prepare` may pause (a TLS server waits there
/// for the client's hello): it runs in a shallow frame, and the frame
/// that holds the future, which may span several pages (each touched on
/// entry by the stack probe), is entered only after it.
pub(crate) fn spawn_hyper_task_after<P, T, M, F>(
    prepare: P,
    make: M,
) -> yieldloop::JoinHandle<F::Output>
where
    P: FnOnce() -> T + 'static,
    M: FnOnce(T) -> F + 'static,
    F: Future + 'static,
    F::Output: 'static,
{
    yieldloop::Builder::new()
        .stack_size(HYPER_TASK_STACK_SIZE)
        .spawn(move || {
            let prepared = prepare();
            drive(make, prepared)
        })
        .expect("a task for hyper's work")
}

/// Makes the future and drives it to its end: out of line, so that its
/// frame (the future) is entered only when this is called.
#[inline(never)]
fn drive<T, M, F>(make: M, prepared: T) -> F::Output
where
    M: FnOnce(T) -> F,
    F: Future,
{
    yieldloop::block_on(make(prepared))
}
