//! `timeout`: give up on a piece of blocking-style code after a while.
//!
//! A stackful task cannot simply drop a half-run future the way an `async`
//! runtime does: the code is mid-call, with a stack. Instead, `timeout`
//! opens a *scope* with a deadline. Every pause inside the scope carries
//! that deadline to the scheduler too (the earlier of the scope's and the
//! op's own), and when the scope's deadline is what ends a pause, the task
//! unwinds from that point back to the `timeout` call: destructors run,
//! sockets close, and `timeout` returns [`Elapsed`]. Scopes nest; each
//! expiry carries the id of the scope it belongs to, so an inner timeout
//! firing never looks like an outer one, and the other way round.

use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::protocol::{Op, Resume};
use crate::scheduler::coroutine::{self, TimeoutScope};

/// The error of a [`timeout`] whose deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for io::Error {
    fn from(e: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, e)
    }
}

/// The unwinding payload of an expired scope.
struct Expired(u64);

thread_local! {
    static NEXT_SCOPE: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// Runs `f`, giving up after `duration`: returns `Err(Elapsed)` if `f` is
/// still paused (sleeping, reading, joining, …) when the time is up.
///
/// On expiry `f` is unwound from its pause, so its destructors run and its
/// sockets close. A timeout only fires at a pause: code that computes without
/// pausing cannot be interrupted (add [`yield_now`](crate::yield_now) calls,
/// which check the deadline). Timeouts nest.
///
/// # Panics
///
/// Panics when called outside a task. A panic inside `f` passes through.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop::{sleep, timeout};
///
/// yieldloop::run(|| {
///     let quick = timeout(Duration::from_millis(200), || {
///         sleep(Duration::from_millis(10));
///         "done"
///     });
///     assert_eq!(quick, Ok("done"));
///
///     let slow = timeout(Duration::from_millis(10), || sleep(Duration::from_secs(60)));
///     assert!(slow.is_err());
/// });
/// ```
pub fn timeout<T>(duration: Duration, f: impl FnOnce() -> T) -> Result<T, Elapsed> {
    let deadline = crate::scheduler::timers::deadline_after(duration);
    timeout_at(deadline, f)
}

/// Like [`timeout`], with an instant instead of a duration.
///
/// # Panics
///
/// Panics when called outside a task.
pub fn timeout_at<T>(deadline: Instant, f: impl FnOnce() -> T) -> Result<T, Elapsed> {
    assert!(
        coroutine::in_task(),
        "yieldloop: timeout was called outside a task; \
         call it from inside yieldloop::run(..) or a task it spawned"
    );
    let id = NEXT_SCOPE.with(|n| n.replace(n.get() + 1));
    let outer = coroutine::timeout_scope();
    // Only the earliest deadline matters: an outer scope that ends first
    // stays in charge, and its expiry passes through this one.
    let effective = match outer {
        Some(o) if o.deadline <= deadline => o,
        _ => TimeoutScope { deadline, id },
    };

    /// Puts the enclosing scope back however `f` ends.
    struct Reset(Option<TimeoutScope>);
    impl Drop for Reset {
        fn drop(&mut self) {
            coroutine::set_timeout_scope(self.0);
        }
    }

    coroutine::set_timeout_scope(Some(effective));
    let reset = Reset(outer);
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    drop(reset);
    match result {
        // An intercepted C call (feature `hook`) cannot unwind: the deadline
        // made it fail instead, and the scope ends here.
        Ok(_) if coroutine::take_expired_scope(id) => Err(Elapsed(())),
        Ok(v) => Ok(v),
        Err(p) if p.downcast_ref::<Expired>().is_some_and(|e| e.0 == id) => {
            coroutine::take_expired_scope(id);
            Err(Elapsed(()))
        }
        // A panic, an outer scope's expiry or a cancellation: let it go on.
        Err(p) => panic::resume_unwind(p),
    }
}

/// Ends the scope: unwinds to its `timeout` call.
fn expire(timeout: TimeoutScope) -> ! {
    panic::resume_unwind(Box::new(Expired(timeout.id)))
}

/// `suspend` inside a timeout: a rewrite of the op, then the pause. The
/// deadline of the op's wait becomes the earlier of its own and the
/// timeout's; if the timeout's is what ends the pause, the timeout expires.
///
/// Every wait but `Yield` and `Defer` carries a deadline, so none needs more than the
/// rewrite: this module never reaches into the scheduler.
pub(crate) fn scoped(op: Op, timeout: TimeoutScope, raw: impl Fn(Op) -> Resume) -> Resume {
    let s = timeout.deadline;
    // Does the timeout end before `own` (the op's own deadline, if any)?
    let timeout_first = |own: Option<Instant>| own.map_or(true, |d| s < d);
    let narrowed = match op {
        Op::Yield | Op::Defer => {
            // A deadline `<= now` is due.
            if crate::scheduler::timers::now() >= s {
                expire(timeout);
            }
            return raw(op);
        }
        // A sleep that reaches its (narrowed) deadline is answered `Ready`,
        // not `TimedOut`.
        Op::Wait(d) if s < d => {
            return match raw(Op::Wait(s)) {
                Resume::Ready => expire(timeout),
                other => other,
            };
        }
        Op::ReadReady(io, d) if timeout_first(d) => Op::ReadReady(io, Some(s)),
        Op::WriteReady(io, d) if timeout_first(d) => Op::WriteReady(io, Some(s)),
        Op::Accept(io, d) if timeout_first(d) => Op::Accept(io, Some(s)),
        Op::Join(task, d) if timeout_first(d) => Op::Join(task, Some(s)),
        Op::Park(t, d) if timeout_first(d) => Op::Park(t, Some(s)),
        // The op's own deadline comes first: its `TimedOut` is its own.
        other => return raw(other),
    };
    match raw(narrowed) {
        Resume::TimedOut => expire(timeout),
        other => other,
    }
}
