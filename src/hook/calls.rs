//! The bodies of the intercepted calls, as made from inside a task: the
//! "try without blocking, on `EAGAIN` pause until ready, try again" loop,
//! and the pieces of each call's semantics (full writes on stream sockets,
//! `connect`'s `SO_ERROR`, the timeouts) that a blocking call would have
//! given the caller.

use std::time::{Duration, Instant};

use libc::{c_int, ssize_t};

use super::fds::{self, Kind};
use super::pause::{self, errno, fail, wait_fd, Woke, CANCELLED};
use super::real;

/// The deadline of one call, from the socket's timeout option, read the
/// first time the call would block (a call that never waits never asks).
pub(super) struct CallDeadline {
    fd: c_int,
    write: bool,
    read: Option<Option<Instant>>,
}

impl CallDeadline {
    pub(super) fn new(fd: c_int, write: bool) -> CallDeadline {
        CallDeadline {
            fd,
            write,
            read: None,
        }
    }

    fn get(&mut self) -> Option<Instant> {
        *self
            .read
            .get_or_insert_with(|| pause::socket_deadline(self.fd, self.write))
    }
}

/// One call on a socket the caller may have left blocking: `op` is made
/// with `MSG_DONTWAIT` added to `flags`; while it would block and the
/// caller's descriptor is in blocking mode, the task waits for readiness
/// (`write`: writability) and tries again. A caller's own `MSG_DONTWAIT`,
/// or a descriptor it made non-blocking, gets the plain answer.
pub(super) fn socket_call(
    fd: c_int,
    write: bool,
    flags: c_int,
    deadline: &mut CallDeadline,
    mut op: impl FnMut(c_int) -> ssize_t,
) -> ssize_t {
    if flags & libc::MSG_DONTWAIT != 0 {
        return op(flags);
    }
    if pause::cancelled() || !pause::proceed() {
        return fail(CANCELLED);
    }
    loop {
        let r = op(flags | libc::MSG_DONTWAIT);
        if r >= 0 || errno() != libc::EAGAIN {
            return r;
        }
        if fds::nonblocking(fd) {
            return fail(libc::EAGAIN);
        }
        match wait_fd(fd, write, deadline.get()) {
            Woke::Ready => {}
            // The socket's own timeout: `EAGAIN`, as the kernel answers.
            Woke::TimedOut => return fail(libc::EAGAIN),
            Woke::Failed(e) => return fail(e),
        }
    }
}

/// A send on a socket with blocking semantics: on a stream socket the call
/// returns once all `len` bytes are handed to the kernel, as a blocking
/// send does, or with the count sent so far when a timeout, a signal (an
/// error, here) or a cancellation cuts it short. `op(done, flags)` sends
/// from offset `done`.
pub(super) fn send_all(
    fd: c_int,
    len: usize,
    flags: c_int,
    mut op: impl FnMut(usize, c_int) -> ssize_t,
) -> ssize_t {
    let mut deadline = CallDeadline::new(fd, true);
    let mut done = 0usize;
    loop {
        let r = socket_call(fd, true, flags, &mut deadline, |f| op(done, f));
        if r < 0 {
            if done > 0 {
                // The error is the next call's; this one reports progress.
                return done as ssize_t;
            }
            return r;
        }
        done += r as usize;
        // A datagram goes whole or not at all; a stream send that moved
        // nothing (a zero-length one) is done too.
        if done >= len || r == 0 || flags & libc::MSG_DONTWAIT != 0 || fds::nonblocking(fd) {
            return done as ssize_t;
        }
    }
}

/// A receive with `MSG_WAITALL` on a socket the caller left blocking:
/// as a blocking one, it returns once `len` bytes have come, or fewer at
/// the end of the stream or when an error, a timeout or a cancellation
/// cuts it short after some. `op(done, flags)` receives at offset `done`.
pub(super) fn recv_all(
    fd: c_int,
    len: usize,
    flags: c_int,
    mut op: impl FnMut(usize, c_int) -> ssize_t,
) -> ssize_t {
    let mut deadline = CallDeadline::new(fd, false);
    let mut done = 0usize;
    loop {
        let r = socket_call(fd, false, flags, &mut deadline, |f| op(done, f));
        if r < 0 {
            return if done > 0 { done as ssize_t } else { r };
        }
        done += r as usize;
        if done >= len || r == 0 || fds::nonblocking(fd) {
            return done as ssize_t;
        }
    }
}

/// A call on a pipe or FIFO the caller left blocking: the task waits until
/// the pipe is ready, then makes the plain call (which, should another
/// reader or writer get there first, may still block the thread).
pub(super) fn pipe_call(fd: c_int, write: bool, op: impl FnOnce() -> ssize_t) -> ssize_t {
    if pause::cancelled() || !pause::proceed() {
        return fail(CANCELLED);
    }
    let mut asked_mode = false;
    loop {
        let mut p = libc::pollfd {
            fd,
            events: if write { libc::POLLOUT } else { libc::POLLIN },
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        let r = unsafe { real::poll(&mut p, 1, 0) };
        if r != 0 {
            // Ready, or an error the plain call reports.
            return op();
        }
        // Not ready: a library's non-blocking pipe gets its `EAGAIN` (the
        // mode is asked only now, so a ready pipe costs one poll more).
        if !asked_mode {
            asked_mode = true;
            if fds::nonblocking(fd) {
                return op();
            }
        }
        match wait_fd(fd, write, None) {
            Woke::Ready | Woke::TimedOut => {}
            Woke::Failed(e) => return fail(e),
        }
    }
}

/// A read-side call (`read`, `readv`) on `fd`: a socket's as `recv` with
/// `MSG_DONTWAIT` (`as_recv`), a pipe's after waiting, anything else's
/// plain (`plain`).
pub(super) fn read_like(
    fd: c_int,
    as_recv: impl FnMut(c_int) -> ssize_t,
    plain: impl FnOnce() -> ssize_t,
) -> ssize_t {
    match fds::kind(fd) {
        Kind::Socket => {
            let r = socket_call(fd, false, 0, &mut CallDeadline::new(fd, false), as_recv);
            if r < 0 && errno() == libc::ENOTSOCK {
                // Not a socket any more: the number was reused behind the
                // hook's back.
                fds::forget_kind(fd);
                return plain();
            }
            r
        }
        Kind::Pipe => pipe_call(fd, false, plain),
        Kind::Other | Kind::Unknown => plain(),
    }
}

/// `connect` on a socket the caller left blocking: the connection is
/// started in non-blocking mode (the descriptor's mode is switched for the
/// one system call and put back at once), the task waits until the socket
/// is writable, and the caller gets the kernel's outcome from `SO_ERROR`.
/// `SO_SNDTIMEO` bounds the wait; when it passes the answer is
/// `EINPROGRESS`, as the kernel's.
///
/// # Safety
///
/// As for `connect(2)`.
pub(super) unsafe fn connect(
    fd: c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> c_int {
    if fds::kind(fd) != Kind::Socket {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::connect(fd, addr, len) };
    }
    if pause::cancelled() || !pause::proceed() {
        return fail(CANCELLED);
    }
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 || flags & libc::O_NONBLOCK != 0 {
        // SAFETY: the caller's arguments.
        return unsafe { real::connect(fd, addr, len) };
    }
    // SAFETY: F_SETFL with an integer argument.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
        // SAFETY: the caller's arguments.
        return unsafe { real::connect(fd, addr, len) };
    }
    // SAFETY: the caller's arguments.
    let r = unsafe { real::connect(fd, addr, len) };
    let e = errno();
    // SAFETY: F_SETFL with an integer argument: the caller's mode back.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    if r == 0 {
        return 0;
    }
    if e != libc::EINPROGRESS {
        return fail(e);
    }
    let deadline = pause::socket_deadline(fd, true);
    loop {
        match wait_fd(fd, true, deadline) {
            Woke::Ready => {}
            Woke::TimedOut => return fail(libc::EINPROGRESS),
            Woke::Failed(e) => return fail(e),
        }
        let mut err: c_int = 0;
        let mut elen = std::mem::size_of::<c_int>() as libc::socklen_t;
        // SAFETY: `err` and `elen` describe a writable `int`, what
        // SO_ERROR holds.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut c_int).cast(),
                &mut elen,
            )
        };
        if r != 0 {
            return -1;
        }
        if err != 0 {
            return fail(err);
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        if unsafe { real::poll(&mut p, 1, 0) } > 0 {
            return 0;
        }
        // Not connected yet (a readiness hint too early): wait again.
    }
}

/// `accept`/`accept4` on a listener the caller left blocking: the task
/// waits until a connection is pending, then the plain call takes it (a
/// connection taken meanwhile by another process or thread sharing the
/// listener makes that call block the thread until the next). The
/// listener's `SO_RCVTIMEO` bounds the wait (`EAGAIN`).
pub(super) fn accept(fd: c_int, op: impl FnOnce() -> c_int) -> c_int {
    if pause::cancelled() || !pause::proceed() {
        return fail(CANCELLED);
    }
    let mut deadline = None;
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        if unsafe { real::poll(&mut p, 1, 0) } != 0 {
            return op();
        }
        // Nothing pending: a library's non-blocking listener gets its
        // `EAGAIN` (the mode and the timeout are asked only now).
        let d = match deadline {
            Some(d) => d,
            None => {
                if fds::nonblocking(fd) {
                    return op();
                }
                *deadline.insert(pause::socket_deadline(fd, false))
            }
        };
        match wait_fd(fd, false, d) {
            Woke::Ready => {}
            Woke::TimedOut => return fail(libc::EAGAIN),
            Woke::Failed(e) => return fail(e),
        }
    }
}

/// `poll` from a task: a zero-timeout poll first; if nothing is ready and
/// the caller would wait, every descriptor is watched on the reactor and
/// the task pauses until one may be ready or `timeout` passes, and the
/// answer is always that of a real zero-timeout poll, so the `revents`
/// are the kernel's.
///
/// # Safety
///
/// `fds` valid for `n` entries (as for `poll(2)`).
pub(super) unsafe fn poll(
    fds: *mut libc::pollfd,
    n: libc::nfds_t,
    timeout: Option<Duration>,
) -> c_int {
    // A poll that may wait is an operation of the task's budget.
    if timeout != Some(Duration::ZERO) && !pause::proceed() {
        return fail(CANCELLED);
    }
    // SAFETY: the caller's array, for a poll that does not wait.
    let r = unsafe { real::poll(fds, n, 0) };
    if r != 0 || timeout == Some(Duration::ZERO) {
        return r;
    }
    if pause::cancelled() {
        return fail(CANCELLED);
    }
    let deadline = timeout.and_then(|t| crate::timer::now().checked_add(t));
    let given: &[libc::pollfd] = if fds.is_null() || n == 0 {
        // A poll of nothing (a sleep) may pass a null array.
        &[]
    } else {
        // SAFETY: by the contract `fds` holds `n` valid entries; only
        // read here, and not across a pause.
        unsafe { std::slice::from_raw_parts(fds, n as usize) }
    };
    let watched: Vec<(c_int, bool, bool)> = given
        .iter()
        .filter(|p| p.fd >= 0)
        .map(|p| {
            let write = p.events & libc::POLLOUT != 0;
            // Hang-ups and errors are reported whatever was asked for,
            // and come as read events.
            let read =
                p.events & libc::POLLOUT == 0 || p.events & (libc::POLLIN | libc::POLLPRI) != 0;
            (p.fd, read, write)
        })
        .collect();
    loop {
        match wait_any(&watched, deadline) {
            Woke::Ready => {
                // SAFETY: as for the first poll.
                let r = unsafe { real::poll(fds, n, 0) };
                if r != 0 {
                    return r;
                }
            }
            // SAFETY: as for the first poll; the kernel's answer at the
            // deadline (nothing ready, normally).
            Woke::TimedOut => return unsafe { real::poll(fds, n, 0) },
            Woke::Failed(e) => return fail(e),
        }
    }
}

/// Pauses until any of `watched` (descriptor, read, write) may be ready,
/// or `deadline` passes.
pub(super) fn wait_any(watched: &[(c_int, bool, bool)], deadline: Option<Instant>) -> Woke {
    if pause::cancelled() {
        return Woke::Failed(CANCELLED);
    }
    if watched.is_empty() {
        // A poll of nothing is a sleep.
        return match deadline {
            Some(d) => pause::pause(Some(d), true, |dl| {
                crate::protocol::Op::Wait(dl.unwrap_or(d))
            }),
            None => pause::pause(None, false, |d| {
                // Nothing can ever end it but a timeout scope or a
                // cancellation; a park nobody unparks waits for those.
                crate::protocol::Op::Park(crate::park::park_token(), d)
            }),
        };
    }
    let token = crate::park::park_token();
    for &(fd, read, write) in watched {
        let io = match fds::registration(fd) {
            Ok(io) => io,
            // Not watchable (a regular file is always ready, and the zero
            // poll answered for it): look again shortly.
            Err(_) => return pause::retry_soon(deadline),
        };
        let watch = |w| token.watch_io(io, w);
        if (read && watch(false).is_err()) || (write && watch(true).is_err()) {
            return pause::retry_soon(deadline);
        }
    }
    pause::pause(deadline, false, |d| crate::protocol::Op::Park(token, d))
}

/// A pause of `d` for the sleep calls. Returns the time left if the sleep
/// was cut short (never: see below), with `Ok`; an error number for an
/// invalid request is the caller's to produce.
///
/// A sleep cannot unwind, and a sleep that failed would be retried by most
/// callers (`std::thread::sleep` asserts that the only failure is
/// `EINTR`, and loops on it): so a sleep ended by a timeout scope's
/// deadline or a cancellation returns as if it had slept its full time.
/// The scope's expiry is recorded, and the task's next own pause unwinds.
pub(super) fn sleep(d: Duration) {
    if pause::cancelled() {
        return;
    }
    let Some(at) = crate::timer::now().checked_add(d) else {
        // Longer than the clock can count: forever.
        let _ = pause::pause(None, false, |dl| {
            crate::protocol::Op::Park(crate::park::park_token(), dl)
        });
        return;
    };
    loop {
        match pause::pause(Some(at), true, |dl| {
            crate::protocol::Op::Wait(dl.unwrap_or(at))
        }) {
            // `Wait` is answered once its deadline is reached.
            Woke::Ready | Woke::TimedOut => {
                if crate::timer::now() >= at {
                    return;
                }
            }
            Woke::Failed(_) => return,
        }
    }
}
