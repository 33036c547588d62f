//! Pausing I/O: the one mechanism by which a task waits for a descriptor.
//!
//! [`PausingIo`] owns a non-blocking source and its registration with the
//! current scheduler's reactor, and runs calls on it so that a call that
//! would block pauses only the calling task until the source is readable
//! or writable, then tries again. Sockets ([`net`](crate::net)), a child's
//! pipes and its pidfd ([`process`](crate::process)) and the signal
//! listener ([`signal`](crate::signal)) all wait through it, and nothing
//! else registers with the reactor.
//!
//! ```text
//!   read()/write()/accept() ──▶ PausingIo::read_with(f) ──▶ f(source)
//!                                     ▲                         │ WouldBlock
//!                                     │ Resume::Ready           ▼
//!                                  scheduler ◀── suspend(Op::ReadReady(id, deadline))
//! ```
//!
//! It stands just above the scheduler and [`suspend`](crate::raw::suspend)
//! (which narrows each pause to the enclosing timeout), and below every
//! blocking-style type built on it. It is the shape of tokio's `AsyncFd`,
//! async-io's `Async<T>` and may's `CoIo`, in blocking style.
//!
//! Here too live the two things every such type shares: the error of an
//! I/O object made outside [`run`](crate::run) ([`outside_run`]) and the
//! marker that keeps it on its scheduler's thread
//! ([`PinnedToSchedulerThread`]).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

mod pausing_io;
mod pinned;

pub(crate) use pausing_io::{deadline_in, PausingIo};
pub(crate) use pinned::PinnedToSchedulerThread;

/// The error of an I/O object made where it cannot work: outside
/// `yieldloop::run` (or a `Runtime` worker), with no scheduler to register
/// it with, or, for a call that must pause, outside a task.
pub(crate) fn outside_run() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "yieldloop: sockets, pipes and signal listeners can only be created and waited on \
         inside yieldloop::run (or a Runtime worker)",
    )
}

/// Switches the descriptor `fd` to non-blocking mode (`on`) or back to
/// blocking mode, leaving its other status flags as they are.
///
/// The mode belongs to the open file description, so it changes for every
/// duplicate of `fd` too.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller has borrowed for the call,
    // with integer arguments only; it touches no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    let wanted = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if wanted == flags {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, wanted) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
