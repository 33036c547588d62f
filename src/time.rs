//! Time: sleeping and yielding, built on
//! [`Op::Wait`] and [`Op::Yield`] (see [`raw`](crate::raw)).

use std::time::{Duration, Instant};

use crate::protocol::{Op, Resume};
use crate::suspend::suspend;
pub(crate) use crate::timer::deadline_after;

/// Pauses the calling task for at least `duration`; other tasks run
/// meanwhile.
///
/// # Precision
///
/// The task is never woken before the deadline; it may wake later, by the
/// timer's granularity (microseconds with Linux's `timerfd` and macOS's and
/// FreeBSD's `kevent`, up to a millisecond with the `portable` feature on
/// Linux) plus however long the tasks ahead of it in the run queue take.
///
/// # Panics
///
/// Panics when called outside a task.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// yieldloop::run(|| {
///     let start = Instant::now();
///     yieldloop::sleep(Duration::from_millis(20));
///     assert!(start.elapsed() >= Duration::from_millis(20));
/// });
/// ```
pub fn sleep(duration: Duration) {
    sleep_until(deadline_after(duration));
}

/// Pauses the calling task until `deadline`; a deadline already past only
/// yields. The same precision as [`sleep`].
///
/// # Panics
///
/// Panics when called outside a task.
pub fn sleep_until(deadline: Instant) {
    // The answer is Ready, or Cancelled while unwinding: either way the
    // sleep is over.
    let _ = suspend(Op::Wait(deadline));
}

/// Lets every other ready task run once, then continues: the `yield` of the
/// round-robin scheduler.
///
/// # Panics
///
/// Panics when called outside a task.
///
/// # Examples
///
/// ```
/// use std::{cell::RefCell, rc::Rc};
/// yieldloop::run(|| {
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let l = log.clone();
///     let other = yieldloop::spawn(move || l.borrow_mut().push("other"));
///     log.borrow_mut().push("main");
///     yieldloop::yield_now();
///     log.borrow_mut().push("main again");
///     other.join().unwrap();
///     assert_eq!(*log.borrow(), ["main", "other", "main again"]);
/// });
/// ```
#[inline]
pub fn yield_now() {
    match suspend(Op::Yield) {
        // The usual answer, which needs no drop (spares a call per yield).
        Resume::Ready => {}
        other => drop(other),
    }
}
