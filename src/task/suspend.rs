//! [`suspend`]: the one way a task pauses, and the base of every
//! blocking-style call above it.
//!
//! It sits above the scheduler's `coroutine`, which switches stacks, and
//! `timeout`, which narrows each pause to the deadline of
//! the enclosing timeout scope.

use std::io;

use super::timeout;
use crate::protocol::{Op, Resume};
use crate::scheduler::coroutine;

/// Pauses the running task, hands `op` to the scheduler, and returns what the
/// scheduler sends back when it resumes the task.
///
/// This is the `yield` of the generator articles, and every blocking-style
/// call in this crate is built on it. It works from any depth of the task's
/// call stack: the whole stack is kept while the task is paused.
///
/// If the task is unwinding from a panic or being cancelled, `suspend` does
/// not pause (a coroutine must never switch away mid-unwind) and returns
/// [`Resume::Cancelled`] at once.
///
/// # Panics
///
/// Panics when called outside a task, that is, not from inside
/// [`run`](crate::run) or a task it spawned.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use yieldloop::raw::{suspend, Op, Resume};
///
/// yieldloop::run(|| {
///     let deadline = Instant::now() + Duration::from_millis(10);
///     // "Wake me at `deadline`": the scheduler parks us in its timer heap.
///     let answer = suspend(Op::Wait(deadline));
///     assert!(matches!(answer, Resume::Ready));
///     assert!(Instant::now() >= deadline);
/// });
/// ```
#[inline]
pub fn suspend(op: Op) -> Resume {
    suspend_or(op, outside_task)
}

/// [`suspend`] for the pausing I/O calls, as an `io::Result`: outside a
/// task it answers with an `Unsupported` error rather than a panic, so a
/// socket or descriptor used where no task can pause (after `run` has
/// returned, on a plain thread) fails like any other I/O call.
#[inline]
pub(crate) fn suspend_io(op: Op) -> io::Result<()> {
    suspend_or(op, |_| {
        Resume::Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "yieldloop: a socket, pipe or descriptor can only wait inside a task of the \
             yieldloop::run (or Runtime worker) that created it",
        ))
    })
    .into_io()
}

/// [`suspend`] where being outside a task is no fault: there it answers
/// [`Resume::Ready`] without pausing (a budget's yield, which only a task
/// has to make).
#[inline]
pub(crate) fn suspend_if_task(op: Op) -> Resume {
    suspend_or(op, |_| Resume::Ready)
}

/// [`suspend`]`(Op::Yield)`: [`yield_now`](crate::yield_now)'s pause,
/// under a name of its own that [`diag::dump`](crate::diag::dump) leaves
/// out of a task's stack.
#[inline]
pub(crate) fn suspend_yield() -> Resume {
    suspend_or(Op::Yield, outside_task)
}

/// Pauses as [`suspend`] does; outside a task, answers `outside(op)`.
#[inline(always)]
fn suspend_or(op: Op, outside: impl FnOnce(Op) -> Resume) -> Resume {
    if coroutine::forced_unwind() {
        // A task being torn down, possibly one that never started and whose
        // captured values are dropped on the scheduler's stack: no pause.
        return Resume::Cancelled;
    }
    coroutine::with_running(
        #[inline(always)]
        move |cx| {
            let Some(cx) = cx else {
                return outside(op);
            };
            if std::thread::panicking() {
                return Resume::Cancelled;
            }
            #[cfg(feature = "hook")]
            if cx.cancelled_own_pause() {
                // Cancelled inside an intercepted call (feature `hook`), it
                // ran on to a pause of its own: its last. The scheduler tears
                // it down here, unwinding its stack from this pause.
                crate::scheduler::with_scheduler("suspend", |s| s.cancel(cx.id));
            }
            match cx.timeout_scope() {
                None => cx.pause(op),
                Some(t) => timeout::scoped(op, t, |op| cx.pause(op)),
            }
        },
    )
}

/// What [`suspend`] does outside a task: a panic naming the operation.
#[cold]
fn outside_task(op: Op) -> Resume {
    panic!(
        "yieldloop: a task-only operation ({op:?}) was called outside a task; \
         call it from inside yieldloop::run(..) or a task it spawned"
    )
}
