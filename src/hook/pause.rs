//! Pausing the calling task from inside an intercepted call, without ever
//! unwinding: a timeout scope's expiry, a cancellation or a teardown make
//! the call fail with an error number instead (see the module docs of
//! `hook`), and the task unwinds at its next own pause.
//!
//! This is the second entry point of the one waiting mechanism whose first
//! is `io::PausingIo` (its module docs say why there are two): the same
//! reactor registration and the same ops, from a frame that C frames sit
//! above.

use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use libc::c_int;

use super::fds;
use crate::protocol::{Op, Resume};
use crate::scheduler::coroutine::{self, TaskContext};

/// The error number of an intercepted call made by a task that is being
/// cancelled (or torn down with its scheduler): `ECANCELED`.
pub(super) const CANCELLED: c_int = libc::ECANCELED;

/// The error number of an intercepted call ended by the deadline of an
/// enclosing [`timeout`](crate::timeout()) scope: `ETIMEDOUT`.
pub(super) const SCOPE_EXPIRED: c_int = libc::ETIMEDOUT;

/// Reads `errno`.
#[inline]
pub(super) fn errno() -> c_int {
    // SAFETY: `__errno_location` returns this thread's `errno`, always
    // valid to read.
    unsafe { *libc::__errno_location() }
}

/// Sets `errno`.
#[inline]
pub(super) fn set_errno(e: c_int) {
    // SAFETY: as for `errno`: this thread's, always valid to write.
    unsafe { *libc::__errno_location() = e }
}

/// Sets `errno` to `e` and returns -1, the failure of most calls.
#[inline]
pub(super) fn fail<T: From<i8>>(e: c_int) -> T {
    set_errno(e);
    T::from(-1)
}

/// Runs the hook's own Rust code for one call, so that a panic in it
/// never unwinds into the C caller: the call fails with `EIO` instead
/// (`on_panic` is the failure value).
#[inline]
pub(super) fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            set_errno(libc::EIO);
            on_panic
        }
    }
}

/// True when the calling code runs in a task that may pause: the hook
/// takes over the call. Outside (a plain thread, the blocking pool, the
/// scheduler's own code, a task being torn down) the call is the plain
/// one, and so is one of yieldloop's own calls on its non-blocking
/// sockets and pipes. One thread-local read on the way out.
/// A task unwinding from a panic is not one: a coroutine must never
/// switch away mid-unwind, so a destructor's call then blocks the thread
/// as it would without the hook.
/// A task cancelled inside an intercepted call fails its calls at once,
/// without pausing, so that case stays with the hook even then.
#[inline(always)]
pub(super) fn in_task() -> bool {
    coroutine::hook_applies()
        && !super::fork::forked()
        && (!std::thread::panicking() || cancelled())
}

/// Spends a unit of the task's budget for an intercepted call that may
/// pause (see `coop`); when it is spent, the other tasks run first, by
/// a pause from inside the call. Returns false if the task was cancelled
/// meanwhile: the call must then fail with [`CANCELLED`].
#[inline]
pub(super) fn proceed() -> bool {
    proceed_unless(|| false)
}

/// [`proceed`] for a call on `fd`, which never pauses when `fd` is
/// non-blocking (its unit is still spent): such a call may come from a
/// signal handler that interrupted the task (a write to a self-pipe),
/// where a pause would run the scheduler and the other tasks inside the
/// handler, with the interrupted code's locks (the allocator's) held.
/// The `fcntl` is made only when the budget is spent.
#[inline]
pub(super) fn proceed_on(fd: c_int) -> bool {
    proceed_unless(|| fds::nonblocking(fd))
}

/// [`proceed`], with no pause when the budget is spent and `no_pause()`
/// says so.
#[inline]
fn proceed_unless(no_pause: impl FnOnce() -> bool) -> bool {
    coroutine::with_running(|cx| match cx {
        Some(cx) if cx.spend_budget() => {
            if no_pause() {
                return true;
            }
            let _ = cx.pause_foreign(Op::Defer);
            !cx.foreign_cancelled()
        }
        _ => true,
    })
}

/// True when the running task's earliest timeout scope has passed: the
/// calls inside it fail at once.
pub(super) fn scope_expired() -> bool {
    coroutine::with_running(|cx| {
        cx.and_then(TaskContext::timeout_scope)
            .is_some_and(|s| crate::scheduler::timers::now() >= s.deadline)
    })
}

/// Sleeps the running task until `at`, from inside an intercepted call,
/// whatever else happens meanwhile: neither a cancellation (which only
/// wakes the task early, to pause again) nor a timeout scope cuts it
/// short. For a task whose calls would otherwise all fail at once.
pub(super) fn sleep_regardless(at: Instant) {
    coroutine::with_running(|cx| {
        let Some(cx) = cx else {
            return;
        };
        while crate::scheduler::timers::now() < at {
            let _ = cx.pause_foreign(Op::Wait(at));
        }
    });
}

/// Pauses the running task until `fd` may be readable or `deadline`
/// passes, from inside an intercepted call, whatever else happens
/// meanwhile: neither a cancellation (which only wakes the task early, to
/// pause again) nor a timeout scope cuts it short. The wait of an event
/// loop (`epoll_wait`) in a task whose calls would otherwise fail at once:
/// see `epoll`. [`Woke::Failed`] only when the descriptor left the
/// reactor (it was closed meanwhile).
pub(super) fn wait_fd_regardless(fd: c_int, deadline: Option<Instant>) -> Woke {
    let Ok(io) = fds::registration(fd) else {
        // Not watchable: look again shortly, as `retry_soon` does.
        let soon = crate::scheduler::timers::now() + Duration::from_millis(1);
        sleep_regardless(deadline.map_or(soon, |d| d.min(soon)));
        // A deadline `<= now` is due.
        return match deadline {
            Some(d) if crate::scheduler::timers::now() >= d => Woke::TimedOut,
            _ => Woke::Ready,
        };
    };
    coroutine::with_running(|cx| {
        let Some(cx) = cx else {
            return Woke::Failed(libc::EPERM);
        };
        loop {
            // The raw pause: no timeout scope narrows its deadline.
            match cx.pause_foreign(Op::ReadReady(io, deadline)) {
                Resume::Ready => return Woke::Ready,
                Resume::TimedOut => return Woke::TimedOut,
                Resume::Err(e) => return Woke::Failed(e.raw_os_error().unwrap_or(libc::EBADF)),
                Resume::Accepted(..) => return Woke::Failed(libc::EIO),
                // Woken by the cancellation (or a teardown): wait on.
                Resume::Cancelled => {}
            }
        }
    })
}

/// How a pause from inside an intercepted call ended.
#[derive(Debug)]
pub(super) enum Woke {
    /// What it waited for may have happened: try again.
    Ready,
    /// The call's own deadline (`SO_RCVTIMEO`, a poll timeout) passed.
    TimedOut,
    /// The call must fail with this error number: [`CANCELLED`],
    /// [`SCOPE_EXPIRED`], or the reactor's error.
    Failed(c_int),
}

/// Checked before any work: a task cancelled inside an intercepted call
/// fails every later one at once.
#[inline]
pub(super) fn cancelled() -> bool {
    coroutine::with_running(|cx| cx.is_some_and(TaskContext::foreign_cancelled))
}

/// Pauses the running task with the op `make` builds from the deadline to
/// wait until: the earlier of `own` and the enclosing timeout scope's.
/// `sleep`: the op is `Op::Wait`, whose `Ready` at a scope's deadline is
/// that scope's expiry.
pub(super) fn pause(
    own: Option<Instant>,
    sleep: bool,
    make: impl FnOnce(Option<Instant>) -> Op,
) -> Woke {
    coroutine::with_running(|cx| {
        let Some(cx) = cx else {
            return Woke::Failed(libc::EPERM);
        };
        if cx.foreign_cancelled() {
            return Woke::Failed(CANCELLED);
        }
        let scope = cx
            .timeout_scope()
            .filter(|s| own.map_or(true, |o| s.deadline < o));
        let deadline = scope.map(|s| s.deadline).or(own);
        let expired = |cx: &TaskContext| match scope {
            Some(s) => {
                cx.record_expired_scope(s.id);
                Woke::Failed(SCOPE_EXPIRED)
            }
            None => Woke::TimedOut,
        };
        // A deadline `<= now` is due: no pause for it. But a scope that has
        // expired already ends every call inside it at once, and a library
        // that retries on the error would spin, holding the thread: each
        // such call lets the other tasks run first.
        if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
            if scope.is_some() {
                let _ = cx.pause_foreign(Op::Yield);
                if cx.foreign_cancelled() {
                    return Woke::Failed(CANCELLED);
                }
            }
            return expired(cx);
        }
        let answer = cx.pause_foreign(make(deadline));
        if cx.foreign_cancelled() {
            return Woke::Failed(CANCELLED);
        }
        match answer {
            Resume::Ready if sleep && scope.is_some() => expired(cx),
            Resume::Ready => Woke::Ready,
            Resume::TimedOut => expired(cx),
            Resume::Cancelled => Woke::Failed(CANCELLED),
            // The reactor's own errors say the descriptor left it: it was
            // closed while the task waited.
            Resume::Err(e) => Woke::Failed(e.raw_os_error().unwrap_or(libc::EBADF)),
            Resume::Accepted(..) => Woke::Failed(libc::EIO),
        }
    })
}

/// Pauses until `fd` may be readable (`write` false) or writable, or
/// `deadline` passes.
pub(super) fn wait_fd(fd: c_int, write: bool, deadline: Option<Instant>) -> Woke {
    match fds::registration(fd) {
        Ok(io) => pause(deadline, false, |d| {
            if write {
                Op::WriteReady(io, d)
            } else {
                Op::ReadReady(io, d)
            }
        }),
        // The reactor cannot watch it (already in this poller under
        // another registration, say): look again shortly.
        Err(_) => retry_soon(deadline),
    }
}

/// The fallback wait for a descriptor the reactor cannot watch: a short
/// sleep, then the caller tries again.
pub(super) fn retry_soon(deadline: Option<Instant>) -> Woke {
    retry_after(Duration::from_millis(1), deadline)
}

/// A pause of `delay` (cut at `deadline`) before the caller tries again:
/// the wait for a condition no readiness event announces (a Unix
/// listener's backlog making room). `Ready` after the delay, `TimedOut`
/// once `deadline` has passed.
pub(super) fn retry_after(delay: Duration, deadline: Option<Instant>) -> Woke {
    let soon = crate::scheduler::timers::now() + delay;
    let at = deadline.map_or(soon, |d| d.min(soon));
    // The short sleep is the pause's own deadline, so that only a scope
    // ending before it counts as the scope's expiry.
    match pause(Some(at), true, |d| Op::Wait(d.unwrap_or(at))) {
        // A deadline `<= now` is due.
        Woke::Ready | Woke::TimedOut
            if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) =>
        {
            Woke::TimedOut
        }
        Woke::Ready | Woke::TimedOut => Woke::Ready,
        failed => failed,
    }
}

/// The deadline of a wait on `fd` from its `SO_RCVTIMEO` (`write`:
/// `SO_SNDTIMEO`), counted from now; `None` for none (or not a socket).
pub(super) fn socket_deadline(fd: c_int, write: bool) -> Option<Instant> {
    let t = fds::socket_timeout(fd, write, |w| read_socket_timeout(fd, w))?;
    crate::scheduler::timers::now().checked_add(t)
}

/// The socket's `SO_RCVTIMEO` (`write`: `SO_SNDTIMEO`), asked of the
/// kernel; `None` for none (or not a socket).
fn read_socket_timeout(fd: c_int, write: bool) -> Option<Duration> {
    let opt = if write {
        libc::SO_SNDTIMEO
    } else {
        libc::SO_RCVTIMEO
    };
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: `tv` and `len` describe a writable `timeval`, which is what
    // the option holds.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut tv as *mut libc::timeval).cast(),
            &mut len,
        )
    };
    if r != 0 || (tv.tv_sec == 0 && tv.tv_usec == 0) {
        return None;
    }
    Some(Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000))
}
