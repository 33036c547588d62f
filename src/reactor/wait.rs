//! How the poll waits for the next deadline: which timeout it is given, and
//! on Linux when the precise timer (`timerfd`) takes over.
//!
//! # The two-step wait (Linux)
//!
//! `epoll_wait` takes its timeout in whole milliseconds, and mio rounds it
//! up so as never to end early: a wait for a deadline 1.2 ms away would end
//! after 2 ms. A `timerfd` ends within microseconds of its expiry, but
//! arming one is a system call of its own (`timerfd_settime`), paid again
//! whenever the earliest deadline changes. A server whose every read
//! carries an idle timeout tens of seconds off changes its earliest
//! deadline on almost every turn, and would pay that call on almost every
//! turn for a precision no idle timeout needs.
//!
//! So a deadline is waited for in two steps:
//!
//! ```text
//!   deadline more than PRECISE_WITHIN (5 ms) away:
//!     coarse   epoll's own timeout, EPOLL_TIMEOUT_MARGIN (2 ms) short of
//!              the deadline, rounded up to whole milliseconds by mio: free,
//!              it is an argument of the epoll_wait the loop makes anyway,
//!              and it ends 1 to 2 ms before the deadline (later if the
//!              machine is busy; never after it, on an idle machine)
//!   deadline within PRECISE_WITHIN:
//!     precise  the timerfd armed for the exact time left (not re-armed if
//!              it already is, for that deadline or an earlier one), and no
//!              timeout: the timer's expiry is an ordinary readiness event
//! ```
//!
//! A far deadline that comes due therefore wakes the loop twice: once at
//! the end of the coarse step, for nothing but arming the timer, and once
//! when the timer fires. That extra wake-up (an `epoll_wait` return, a turn
//! of the loop with nothing to run, a `timerfd_settime`) is the price of
//! microsecond wake-ups without a timer system call per turn. A deadline
//! that is pushed back before it comes (an idle timeout renewed by a read)
//! costs neither. Near deadlines (a few milliseconds apart, as in a busy
//! loop of short sleeps) go straight to the precise step: one wake-up each.
//!
//! # Elsewhere
//!
//! On macOS and FreeBSD, and on Linux with the `portable` feature, there is
//! no precise timer (the platform module, `sys`, has none to give): the
//! poll's own timeout covers the whole wait, in one step (see
//! [`direct_timeout`]). `kevent` takes nanoseconds, so this is as precise
//! as the timerfd; `epoll_wait` (Linux, `portable`) rounds up to the next
//! millisecond, so a wake-up may come up to a millisecond late. The same
//! holds on Linux when the kernel refused a timerfd.
//!
//! Whichever way, a wait may end later than its deadline, never earlier.

use std::io;
use std::time::{Duration, Instant};

use super::Reactor;

/// Deadlines further off than this are first waited for with epoll's own
/// (millisecond) timeout rather than the precise timer.
const PRECISE_WITHIN: Duration = Duration::from_millis(5);
/// How much earlier than a far deadline epoll's timeout is set to end (mio
/// rounds it up to whole milliseconds, so this keeps the wake-up before
/// the deadline, 1 to 2 ms before it).
const EPOLL_TIMEOUT_MARGIN: Duration = Duration::from_millis(2);

/// How one poll waits: the timeout it is given, and whether the precise
/// timer ends it. The scheduler's trace prints it on its `poll` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Tasks are ready or a deadline is due: collect what is ready, no
    /// sleep (timeout zero).
    Now,
    /// No deadline at all: until an event (no timeout).
    Event,
    /// The first of two steps towards a far deadline: epoll's millisecond
    /// timeout, ending a little before it.
    Coarse(Duration),
    /// The second step: no timeout; the timerfd, armed to expire after
    /// `expires_in`, ends the wait. `armed_now` tells whether this poll
    /// armed it (a system call) or found it armed in time already.
    Precise {
        /// Time left until the timer expires.
        expires_in: Duration,
        /// Did this poll arm the timer?
        armed_now: bool,
    },
    /// The poll's own timeout for the time left (the portable path, or
    /// Linux without a timerfd).
    Direct(Duration),
}

impl Wait {
    /// The timeout handed to `mio::Poll::poll` (`None`: no timeout).
    pub(crate) fn timeout(self) -> Option<Duration> {
        match self {
            Wait::Now => Some(Duration::ZERO),
            Wait::Event => None,
            Wait::Coarse(t) => Some(t),
            Wait::Precise { .. } => None,
            Wait::Direct(t) => Some(t),
        }
    }

    /// The step's name in the trace: `now`, `event`, `coarse`, `precise`
    /// or `direct`.
    pub(crate) fn step(self) -> &'static str {
        match self {
            Wait::Now => "now",
            Wait::Event => "event",
            Wait::Coarse(_) => "coarse",
            Wait::Precise { .. } => "precise",
            Wait::Direct(_) => "direct",
        }
    }

    /// The precise timer behind this wait, if any: the time left until it
    /// expires and whether this poll armed it.
    pub(crate) fn timer(self) -> Option<(Duration, bool)> {
        match self {
            Wait::Precise {
                expires_in,
                armed_now,
            } => Some((expires_in, armed_now)),
            _ => None,
        }
    }

    /// The timeout in the unit the kernel gets it in, where that is
    /// coarser than the `Duration`: `epoll_wait` takes whole milliseconds,
    /// and mio rounds up. `None` where the kernel takes the timeout as it
    /// is (`kevent`), or there is no timeout.
    pub(crate) fn kernel_millis(self) -> Option<u128> {
        if crate::sys::POLL_TIMEOUT_IN_MILLIS {
            self.timeout()
                .filter(|t| !t.is_zero())
                .map(|t| t.saturating_add(Duration::from_nanos(999_999)).as_millis())
        } else {
            None
        }
    }
}

impl Reactor {
    /// Decides how the next poll waits for `deadline` (`None`: until an
    /// event), arming the precise timer if that is the step. See the module
    /// docs for the steps.
    ///
    /// # Errors
    ///
    /// If the timer cannot be armed.
    pub(crate) fn plan_wait(
        &mut self,
        deadline: Option<Instant>,
        now: Instant,
    ) -> io::Result<Wait> {
        let Some(d) = deadline else {
            return Ok(Wait::Event);
        };
        // A deadline `<= now` is due: no sleep.
        if d <= now {
            return Ok(Wait::Now);
        }
        // Only with the precise timer (never without: see `sys`) are far
        // deadlines waited for in two steps.
        if let Some(timer) = &mut self.timer {
            let left = d - now;
            // Far off: the coarse step, free, then back here with the
            // deadline near.
            if left > PRECISE_WITHIN {
                return Ok(Wait::Coarse(left - EPOLL_TIMEOUT_MARGIN));
            }
            // Armed for this deadline or an earlier one: it will end the
            // wait in time without another system call.
            if let Some(armed) = self.timer_deadline.filter(|&a| timer.is_armed() && a <= d) {
                return Ok(Wait::Precise {
                    expires_in: armed.saturating_duration_since(now),
                    armed_now: false,
                });
            }
            timer.arm(left)?;
            self.timer_deadline = Some(d);
            return Ok(Wait::Precise {
                expires_in: left,
                armed_now: true,
            });
        }
        Ok(Wait::Direct(direct_timeout(d, now)))
    }
}

/// How long a poll may block to wake at `deadline`, where there is no
/// precise timer: the time left rounded up to a whole microsecond, or zero
/// when the deadline is due (`<= now`).
///
/// # Precision
///
/// Rounded up, never down, so the poll does not end before the deadline
/// and the loop does not turn round for a deadline a few nanoseconds away:
/// kernels convert a timeout to their own units (FreeBSD to 1/2^32 of a
/// second), and a value converted down could end just short of it.
/// `kevent` (macOS, FreeBSD) then waits that long or a little longer;
/// `epoll_wait` (Linux with the `portable` feature) rounds up again, to the
/// next millisecond. A wake-up may come later than the deadline, never
/// earlier.
fn direct_timeout(deadline: Instant, now: Instant) -> Duration {
    let left = deadline.saturating_duration_since(now);
    let to_whole_micro = (1_000 - left.subsec_nanos() % 1_000) % 1_000;
    left.saturating_add(Duration::from_nanos(u64::from(to_whole_micro)))
}
