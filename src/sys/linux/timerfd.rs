//! A `timerfd` registered with the poll, for wake-ups finer than the
//! millisecond granularity of `epoll_wait`'s timeout.
//!
//! `epoll_wait` takes its timeout in whole milliseconds (mio rounds up), so a
//! sleeper due in 1.2 ms would wake after 2 ms. Instead, once the next
//! deadline is near (the second, precise step of the wait in `wait`), the
//! loop arms this timer for the exact time left and polls without a
//! timeout; the timer's expiry is an ordinary readiness event. Far
//! deadlines are first waited for on epoll's own timeout, which costs no
//! `timerfd_settime`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A non-blocking monotonic `timerfd`.
#[derive(Debug)]
pub(crate) struct TimerFd {
    fd: OwnedFd,
    /// Armed and not yet read since: an expiry is still to come (or has
    /// come and raised its event), so the reactor can skip re-arming it
    /// for a deadline no earlier than the one it is armed for.
    armed: bool,
}

impl TimerFd {
    pub(crate) fn new() -> io::Result<TimerFd> {
        // SAFETY: timerfd_create has no memory-safety preconditions.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd, armed: false })
    }

    /// Arms the timer to expire once, `after` from now (at least 1 ns: a
    /// zero value would disarm it).
    pub(crate) fn arm(&mut self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; a null old-value pointer is
        // allowed.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = true;
        Ok(())
    }

    /// Clears an expiry after its event, so the next one raises a new edge.
    pub(crate) fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer; the fd is
        // non-blocking, so an unexpired timer just returns EAGAIN.
        unsafe {
            libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len());
        }
        self.armed = false;
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.armed
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
