//! Time: sleeping and yielding, built on
//! [`Op::Wait`] and [`Op::Yield`] (see [`raw`](crate::raw)); and
//! [`Sleep`], the same timers as a future, for async code driven on a
//! yieldloop thread.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::protocol::{Op, Resume, SchedulerId, WaitToken};
use crate::scheduler::try_with_scheduler;
use crate::suspend::suspend;
pub(crate) use crate::timer::deadline_after;

/// The time as this thread's scheduler sees it: the real monotonic time,
/// or under a paused clock ([`run_paused`](crate::run_paused),
/// [`RuntimeBuilder::start_paused`](crate::RuntimeBuilder::start_paused))
/// the instant that clock shows. Every deadline the runtime sets counts
/// from it. Outside a scheduler, and on a scheduler on real time, it is
/// [`Instant::now`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// yieldloop::run_paused(|| {
///     let t0 = yieldloop::now();
///     yieldloop::sleep(Duration::from_secs(90));
///     assert_eq!(yieldloop::now() - t0, Duration::from_secs(90));
/// });
/// ```
pub fn now() -> Instant {
    crate::timer::now()
}

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

/// A future that completes at a deadline, on the timers of the scheduler
/// that polls it: what [`sleep`] is to a task, for async code that a task
/// drives with [`block_on`](crate::block_on) or
/// [`spawn_future`](crate::spawn_future) (and the timer to hand async
/// crates that take one, such as hyper's `rt::Timer`).
///
/// Polled before its deadline, it arms a timer on the current thread's
/// scheduler holding the waker of that poll; the scheduler wakes the waker
/// when the deadline is due, as it wakes the wakers of sockets. No thread
/// and no task of its own: a pending `Sleep` costs one entry in the timer
/// heap, and dropping it (or [resetting](Sleep::reset) it) disarms the
/// timer. The precision is [`sleep`]'s: never before the deadline.
///
/// It is `Send` and `Sync` (it holds only the deadline and the name of its
/// timer), so it fits where a runtime-agnostic crate asks for a `Send`
/// timer; it must still be polled on a yieldloop thread. Polled from
/// another scheduler's thread than the last time, it arms a timer there
/// (the first one fires in vain).
///
/// # Panics
///
/// Polling it before its deadline on a thread that runs no scheduler
/// (outside [`run`](crate::run) and the [`Runtime`](crate::Runtime)'s
/// workers) panics: no timer there would wake it.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// yieldloop::run(|| {
///     let start = Instant::now();
///     // The future pauses only this task; others keep running meanwhile.
///     let other = yieldloop::spawn(|| yieldloop::sleep(Duration::from_millis(5)));
///     yieldloop::block_on(async {
///         yieldloop::sleep_future(Duration::from_millis(20)).await;
///     });
///     assert!(start.elapsed() >= Duration::from_millis(20));
///     other.join().unwrap();
/// });
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    deadline: Instant,
    /// The timer armed by the last poll, and on which scheduler.
    armed: Option<(SchedulerId, WaitToken)>,
}

/// A [`Sleep`] future that completes `duration` from now.
pub fn sleep_future(duration: Duration) -> Sleep {
    sleep_until_future(deadline_after(duration))
}

/// A [`Sleep`] future that completes at `deadline` (at once if it is past).
pub fn sleep_until_future(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        armed: None,
    }
}

impl Sleep {
    /// When the future completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// True once the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        crate::timer::now() >= self.deadline
    }

    /// Moves the deadline to `deadline`, earlier or later; the timer of the
    /// old one is disarmed, and the next poll arms one for the new.
    pub fn reset(&mut self, deadline: Instant) {
        self.disarm();
        self.deadline = deadline;
    }

    /// Disarms the armed timer, if it is on this thread's scheduler; one
    /// on another scheduler fires in vain later.
    fn disarm(&mut self) {
        if let Some((sched, w)) = self.armed.take() {
            let _ = try_with_scheduler(|s| {
                if s.id == sched {
                    s.disarm_waker_timer(w);
                }
            });
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if crate::timer::now() >= this.deadline {
            this.disarm();
            return Poll::Ready(());
        }
        let armed = try_with_scheduler(|s| match this.armed {
            // Armed here and not fired: just keep the waker current.
            Some((sched, w)) if sched == s.id && s.update_waker_timer(w, cx.waker()) => {}
            _ => this.armed = Some((s.id, s.arm_waker_timer(this.deadline, cx.waker().clone()))),
        });
        if armed.is_none() {
            panic!(
                "yieldloop: a Sleep future was polled on a thread with no yieldloop scheduler; \
                 poll it inside yieldloop::run (or a Runtime worker), e.g. with yieldloop::block_on"
            );
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}
