//! The cooperative budget: the point where a task that never has to wait
//! is made to take its turn like the others.
//!
//! A task gives its thread back only when it pauses. A task whose input
//! never runs dry (a socket a client floods, a channel that is never
//! empty, a lock nobody else wants) would never pause, and every other
//! task of its thread would wait for it. So each operation that *may*
//! pause spends one unit of the task's budget when it goes ahead without
//! pausing; once the budget is spent, the next such operation first
//! pauses with [`Op::Defer`], which puts the task at the back of the run
//! queue behind everything the next poll for I/O wakes, and then goes on.
//! A pause of any kind refills the budget (see `TaskContext::pause`).
//!
//! ```text
//!   read ─ proceed(): 127 left ─▶ data, no pause
//!   read ─ proceed(): 126 left ─▶ data, no pause
//!    …
//!   read ─ proceed(): 0 left ──▶ suspend(Op::Defer) ── poll, other tasks run
//!                                 ◀── resumed: 128 left
//!                                 data, no pause
//! ```
//!
//! The operations call [`proceed`] (blocking style) or [`poll_proceed`]
//! and [`spent_one`] (poll style, which answers `Pending` and wakes the
//! task's waker at once instead of pausing, as tokio's resources do).
//! Code outside a task is never counted.
//!
//! Only calls that could have paused pause here, so a task is never
//! stopped at a place it could not already have stopped at: nothing is
//! interrupted mid-`malloc` or with a `RefCell` borrowed, which is why
//! yieldloop does this and not the preemption at any instruction that
//! Go's runtime does.

use std::task::{Context, Poll};

use super::suspend::suspend_if_task;
use crate::protocol::{Op, Resume};
use crate::scheduler::coroutine;

/// Spends one unit of the running task's budget for an operation that
/// may pause but can go ahead now; when the budget is spent, pauses first
/// ([`Op::Defer`]), so that the tasks the next poll for I/O wakes run
/// before it goes on. Outside a task it does nothing.
#[inline]
pub(crate) fn proceed() {
    if coroutine::spend_running_budget() {
        defer();
    }
}

/// The budget ran out: the task lets the others run, once.
#[cold]
#[inline(never)]
fn defer() {
    // A task being cancelled or unwinding is not paused (the answer is
    // then `Cancelled`, without a pause): the operation goes on and meets
    // the cancellation at its own pause, if any.
    let _: Resume = suspend_if_task(Op::Defer);
}

/// The poll-style [`proceed`], checked before a future's operation:
/// `Ready` when the task may go on, and, when its budget is spent,
/// `Pending` with `cx`'s waker woken at once, so that whoever polls the
/// future (a [`block_on`](crate::block_on)) lets the other tasks run
/// before polling again. It spends nothing: an operation that then
/// completes calls [`spent_one`].
#[inline]
pub(crate) fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
    if coroutine::running_budget_exhausted() {
        cx.waker().wake_by_ref();
        return Poll::Pending;
    }
    Poll::Ready(())
}

/// Spends one unit for a poll-style operation that completed without
/// pausing (after [`poll_proceed`] said `Ready`); never pauses.
#[inline]
pub(crate) fn spent_one() {
    let _ = coroutine::spend_running_budget();
}

/// Spends one unit of the calling task's cooperative budget, and when the
/// budget is spent, first lets the other ready tasks, and those that
/// I/O events wake, run once: what every operation of yieldloop that may
/// pause does when it goes ahead at once. Call it in a primitive of your
/// own built on [`suspend`](crate::raw::suspend) or
/// [`park`](crate::raw::park), where it completes without waiting, so
/// that a caller looping on it cannot hold the thread. Outside a task it
/// does nothing.
///
/// See [`DEFAULT_BUDGET`](crate::diag::DEFAULT_BUDGET) for what the
/// budget is.
///
/// # Examples
///
/// A loop of operations that never wait still lets a timer's task run:
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use std::time::Duration;
///
/// yieldloop::run(|| {
///     let ticked = Rc::new(Cell::new(false));
///     let t = ticked.clone();
///     yieldloop::spawn(move || t.set(true));
///     let mut spins = 0u64;
///     while !ticked.get() {
///         // A primitive of our own that never had to wait.
///         yieldloop::raw::consume_budget();
///         spins += 1;
///     }
///     assert!(spins <= u64::from(yieldloop::diag::DEFAULT_BUDGET) + 1);
/// });
/// ```
pub fn consume_budget() {
    proceed();
}

/// The poll-style [`consume_budget`], for a future of your own: `Ready`
/// after spending one unit of the polling task's budget; when it is
/// spent, `Pending`, with `cx`'s waker woken at once, so that
/// [`block_on`](crate::block_on) lets the other tasks run and polls
/// again. Always `Ready` outside a task.
///
/// # Examples
///
/// ```
/// use std::future::poll_fn;
/// use std::task::Poll;
///
/// yieldloop::run(|| {
///     let n = yieldloop::block_on(poll_fn(|cx| {
///         std::task::ready!(yieldloop::raw::poll_consume_budget(cx));
///         Poll::Ready(7)
///     }));
///     assert_eq!(n, 7);
/// });
/// ```
pub fn poll_consume_budget(cx: &mut Context<'_>) -> Poll<()> {
    std::task::ready!(poll_proceed(cx));
    spent_one();
    Poll::Ready(())
}

/// Runs `f` with the calling task's budget lifted: operations inside it
/// that can go ahead at once never pause the task to let others run
/// (operations that must wait still pause). For a short region that must
/// not be interrupted between two operations, as with tokio's
/// `unconstrained`; a long one holds the thread from every other task
/// of it, as a task did before budgets. Outside a task it just runs `f`.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// yieldloop::run(|| {
///     let (tx, rx) = yieldloop::sync::local::channel();
///     let other_ran = Rc::new(Cell::new(false));
///     let o = other_ran.clone();
///     yieldloop::spawn(move || o.set(true));
///     yieldloop::raw::unconstrained(|| {
///         for i in 0..1000 {
///             tx.send(i).unwrap();
///             assert_eq!(rx.recv().unwrap(), i);
///         }
///         // 2,000 operations, and the other task has not run.
///         assert!(!other_ran.get());
///     });
/// });
/// ```
pub fn unconstrained<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the budget back however `f` ends.
    struct Leave(u32);
    impl Drop for Leave {
        fn drop(&mut self) {
            coroutine::with_running(|cx| {
                if let Some(cx) = cx {
                    cx.leave_unconstrained(self.0);
                }
            });
        }
    }
    let _leave = coroutine::with_running(|cx| cx.map(|cx| Leave(cx.enter_unconstrained())));
    f()
}
