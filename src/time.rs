//! Time: sleeping and yielding, built on
//! [`Op::Wait`] and [`Op::Yield`] (see [`raw`](crate::raw)); and
//! [`Sleep`], the same timers as a future, for async code driven on a
//! yieldloop thread.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::protocol::{Op, Resume, SchedulerId, WaitToken};
pub(crate) use crate::scheduler::timers::deadline_after;
use crate::scheduler::try_with_scheduler;
use crate::task::suspend::suspend;

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
    crate::scheduler::timers::now()
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
    match crate::task::suspend::suspend_yield() {
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
        crate::scheduler::timers::now() >= self.deadline
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
        if crate::scheduler::timers::now() >= this.deadline {
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

/// What an [`Interval`] does about ticks it missed because its task came to
/// [`tick`](Interval::tick) late (it held the thread, or waited elsewhere):
/// the meaning tokio gives the same names.
///
/// Suppose a period of 10 ms, ticks due at 10, 20, 30 ms…, and a task that
/// calls `tick` at 35 ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTickBehavior {
    /// Catch up: the missed ticks (20, 30) come at once, one per call, then
    /// the schedule goes on as before (40, 50…). The default; for counters
    /// that must count every period.
    #[default]
    Burst,
    /// Start over: the late tick comes now and the next one a full period
    /// after it (45, 55…). For "at least this long between runs".
    Delay,
    /// Drop the missed ticks: the late tick comes now and the next one on
    /// the old schedule (40, 50…). For sampling, where a tick's work covers
    /// whatever was missed.
    Skip,
}

impl MissedTickBehavior {
    /// When the tick after one due at `due`, taken at `now`, is due.
    fn next(self, due: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => due + period,
            MissedTickBehavior::Delay => now + period,
            MissedTickBehavior::Skip => {
                let late = (now - due).as_nanos() % period.as_nanos();
                // `late < period`, which fits in u64 nanoseconds for any
                // period anyone ticks at.
                now + period - Duration::from_nanos(u64::try_from(late).unwrap_or(u64::MAX))
            }
        }
    }
}

/// A tick late by more than this counts as missed: a tick a hair late (the
/// timer's granularity, a busy turn) keeps the schedule under every
/// behaviour.
const MISSED_AFTER: Duration = Duration::from_millis(5);

/// Ticks every `period`, the first one at once: [`Interval::tick`] pauses
/// the task until the next tick is due.
///
/// Unlike `loop { work(); sleep(period) }`, the ticks keep to a schedule:
/// the time the work takes does not push them later. Each tick is one
/// timer on the scheduler's timer heap, armed when `tick` pauses.
///
/// # Panics
///
/// If `period` is zero.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// yieldloop::run(|| {
///     let start = Instant::now();
///     let mut every = yieldloop::interval(Duration::from_millis(10));
///     every.tick(); // the first tick: at once
///     every.tick();
///     every.tick();
///     assert!(start.elapsed() >= Duration::from_millis(20));
/// });
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(crate::scheduler::timers::now(), period)
}

/// Ticks every `period`, the first one at `start`.
///
/// # Panics
///
/// If `period` is zero.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// yieldloop::run(|| {
///     let start = Instant::now() + Duration::from_millis(10);
///     let mut every = yieldloop::interval_at(start, Duration::from_millis(10));
///     assert_eq!(every.tick(), start);
///     assert_eq!(every.tick(), start + Duration::from_millis(10));
/// });
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(!period.is_zero(), "yieldloop: an interval's period is zero");
    Interval {
        due: start,
        period,
        missed: MissedTickBehavior::default(),
    }
}

/// A schedule of ticks; see [`interval`].
#[derive(Debug)]
pub struct Interval {
    /// When the next tick is due.
    due: Instant,
    period: Duration,
    missed: MissedTickBehavior,
}

impl Interval {
    /// Pauses the calling task until the next tick is due, and returns the
    /// instant it was due at (not the, later, instant the task woke).
    ///
    /// # Cancellation
    ///
    /// Inside a [`timeout`](crate::timeout()) scope that expires, or
    /// cancelled, the task stops waiting and the tick stays due: the next
    /// call takes it.
    ///
    /// # Panics
    ///
    /// When called outside a task.
    pub fn tick(&mut self) -> Instant {
        let due = self.due;
        if crate::scheduler::timers::now() < due {
            sleep_until(due);
        }
        let now = crate::scheduler::timers::now();
        self.due = if now > due + MISSED_AFTER {
            self.missed.next(due, now, self.period)
        } else {
            due + self.period
        };
        due
    }

    /// Makes the next tick due a full period from now.
    pub fn reset(&mut self) {
        self.due = crate::scheduler::timers::now() + self.period;
    }

    /// Sets what happens to ticks missed from now on.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// What happens to missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// The time between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }
}
