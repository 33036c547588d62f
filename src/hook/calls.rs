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

/// True for the descriptors of standard output and standard error, whose
/// writes are always the plain calls, in a task too: std holds its
/// `Stdout`/`Stderr` lock (a `RefCell` inside a lock that the same thread
/// re-enters) across the write, so a task paused in it would make the next
/// `println!` of another task on the thread panic with "already borrowed";
/// and a task that is cancelled or panicking must still get its last words
/// out, where a failed write to stderr inside the panic hook aborts the
/// process. The price: a write to a full stdout or stderr pipe blocks the
/// thread until the reader drains it, as it would without the hook.
#[inline(always)]
pub(super) fn is_stdio(fd: c_int) -> bool {
    fd == libc::STDOUT_FILENO || fd == libc::STDERR_FILENO
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
    if pause::cancelled() || !pause::proceed_on(fd) {
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
    op: impl FnMut(usize, c_int) -> ssize_t,
) -> ssize_t {
    send_rest(fd, len, flags, &mut CallDeadline::new(fd, true), 0, op)
}

/// [`send_all`] from offset `done`, which an earlier send of the same
/// call reached (under the same `deadline`).
pub(super) fn send_rest(
    fd: c_int,
    len: usize,
    flags: c_int,
    deadline: &mut CallDeadline,
    mut done: usize,
    mut op: impl FnMut(usize, c_int) -> ssize_t,
) -> ssize_t {
    if done > 0 && (done >= len || flags & libc::MSG_DONTWAIT != 0 || fds::nonblocking(fd)) {
        return done as ssize_t;
    }
    loop {
        let r = socket_call(fd, true, flags, deadline, |f| op(done, f));
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

/// An integer socket option of `fd` (`SO_TYPE`, `SO_PROTOCOL`,
/// `SO_DOMAIN`); `None` if it is not a socket.
pub(super) fn socket_option(fd: c_int, name: c_int) -> Option<c_int> {
    let mut v: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` describe a writable `int`, what these options
    // hold.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&mut v as *mut c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// The bytes a `recvmsg` with `MSG_WAITALL` waits for: the sum of its
/// vectors' lengths; `None` where it is served as one receive: a null
/// message or vector array, a count outside `0..=IOV_MAX`, or control
/// data asked for (later receives would write over what the first one
/// put there, where the kernel's one call returns it whole).
///
/// # Safety
///
/// `msg`, if not null, must be the caller's valid `msghdr`, and its
/// vectors valid for `msg_iovlen` entries, as for `recvmsg(2)`.
pub(super) unsafe fn waitall_message_len(msg: *const libc::msghdr) -> Option<usize> {
    // SAFETY: the contract.
    let m = unsafe { msg.as_ref() }?;
    let n = m.msg_iovlen;
    if m.msg_controllen != 0 || n > IOV_MAX as usize || (n > 0 && m.msg_iov.is_null()) {
        return None;
    }
    if n == 0 {
        return Some(0);
    }
    // SAFETY: the contract: `n` valid vectors.
    let iov = unsafe { std::slice::from_raw_parts(m.msg_iov, n) };
    iov.iter()
        .try_fold(0usize, |sum, v| sum.checked_add(v.iov_len))
}

/// `recvmsg` into the caller's message from offset `done` of its
/// vectors: the vector array is narrowed to what is left for the one call
/// (the first vector cut at the offset), and put back as it was before
/// this returns, so the caller sees its own message, filled.
///
/// # Safety
///
/// As for [`waitall_message_len`], which must have answered `Some(len)`
/// with `done <= len`; nothing else may use the message meanwhile (the
/// caller is inside its `recvmsg`).
pub(super) unsafe fn recvmsg_at(
    fd: c_int,
    msg: *mut libc::msghdr,
    mut done: usize,
    flags: c_int,
) -> ssize_t {
    // SAFETY: the contract: a valid message, ours for the call.
    let m = unsafe { &mut *msg };
    let (iov, n) = (m.msg_iov, m.msg_iovlen);
    let mut first = 0;
    // SAFETY: `first < n`, within the caller's vectors.
    while first < n && done >= unsafe { (*iov.add(first)).iov_len } {
        // SAFETY: as above.
        done -= unsafe { (*iov.add(first)).iov_len };
        first += 1;
    }
    if first == n {
        // Nothing left to fill: a zero-length receive.
        m.msg_iovlen = 0;
        // SAFETY: the caller's message with no vectors.
        let r = unsafe { real::recvmsg(fd, msg, flags) };
        m.msg_iovlen = n;
        return r;
    }
    // SAFETY: `first < n`: one of the caller's vectors, changed only for
    // this call and put back below.
    let v = unsafe { &mut *iov.add(first) };
    let kept = *v;
    // SAFETY: `done < iov_len`: still inside the caller's buffer.
    v.iov_base = unsafe { v.iov_base.cast::<u8>().add(done).cast() };
    v.iov_len -= done;
    // SAFETY: as above: `first < n`.
    m.msg_iov = unsafe { iov.add(first) };
    m.msg_iovlen = n - first;
    // SAFETY: the caller's message, narrowed to its vectors' rest.
    let r = unsafe { real::recvmsg(fd, msg, flags) };
    m.msg_iov = iov;
    m.msg_iovlen = n;
    // SAFETY: the same vector as above.
    unsafe { *iov.add(first) = kept };
    r
}

/// A `recv`, `recvfrom` or `recvmsg` with `MSG_WAITALL` (and without `MSG_DONTWAIT`),
/// as the kernel serves it for the socket's type:
///
/// - a datagram (or sequenced-packet, or raw) socket ignores the flag:
///   one receive, one datagram;
/// - TCP with `MSG_PEEK`: waits until `len` bytes are queued (or the
///   stream ends, fails or times out) and returns them, consuming none;
/// - another stream socket (`AF_UNIX`) with `MSG_PEEK`: one peek, which
///   returns what is queued (the kernel's does not wait for more);
/// - a stream socket without `MSG_PEEK`: [`recv_all`].
///
/// `op(done, flags)` receives at offset `done` of the caller's buffer.
pub(super) fn recv_waitall(
    fd: c_int,
    len: usize,
    flags: c_int,
    mut op: impl FnMut(usize, c_int) -> ssize_t,
) -> ssize_t {
    let once = |op: &mut dyn FnMut(usize, c_int) -> ssize_t| {
        let mut d = CallDeadline::new(fd, false);
        socket_call(fd, false, flags, &mut d, |f| op(0, f))
    };
    if socket_option(fd, libc::SO_TYPE) != Some(libc::SOCK_STREAM) {
        // Not a stream (or not a socket: the call itself says so).
        return once(&mut op);
    }
    if flags & libc::MSG_PEEK == 0 {
        return recv_all(fd, len, flags, op);
    }
    if socket_option(fd, libc::SO_PROTOCOL) != Some(libc::IPPROTO_TCP) {
        return once(&mut op);
    }
    let mut deadline = CallDeadline::new(fd, false);
    loop {
        // Waits until something is queued, then peeks at all of it.
        let r = socket_call(fd, false, flags, &mut deadline, |f| op(0, f));
        if r <= 0 || r as usize >= len || fds::nonblocking(fd) {
            return r;
        }
        // Fewer than asked for: the kernel returns them if the stream has
        // ended or failed, and otherwise waits for more.
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN | libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        let n = unsafe { real::poll(&mut p, 1, 0) };
        if n != 1 || p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return r;
        }
        match wait_fd(fd, false, deadline.get()) {
            Woke::Ready => {}
            // The socket's timeout: what is queued by then.
            Woke::TimedOut => {
                let again = op(0, flags | libc::MSG_DONTWAIT);
                return if again > 0 { again } else { r };
            }
            // Cut short after some: the bytes peeked so far.
            Woke::Failed(_) => return r,
        }
    }
}

/// A receive with `MSG_WAITALL` on a stream socket the caller left
/// blocking: as a blocking one, it returns once `len` bytes have come, or
/// fewer at the end of the stream or when an error, a timeout or a
/// cancellation cuts it short after some. `op(done, flags)` receives at
/// offset `done`.
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
    if pause::cancelled() || !pause::proceed_on(fd) {
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

/// The most vectors `readv`, `writev`, `sendmsg` and `recvmsg` take
/// (`UIO_MAXIOV`, which `IOV_MAX` is): a count outside `0..=IOV_MAX` gets
/// the plain call, which fails at once (`EINVAL`; `EMSGSIZE` for a
/// message), before anything is read from the caller's array.
pub(super) const IOV_MAX: c_int = libc::UIO_MAXIOV;

/// The most bytes a `write` on a pipe moves at once (`PIPE_BUF`): a write
/// of at most this many is atomic, and fits in the room a pipe that polls
/// writable has (one free page of its ring).
const PIPE_BUF: usize = 4096;

/// `write`/`writev` on a pipe or FIFO the caller left blocking, of the
/// `cnt` vectors at `iov`: as the kernel's blocking write, it returns once
/// every byte is in the pipe (or when an error, or a cancellation, cuts it
/// short: then with the count written so far), and a write of at most
/// `PIPE_BUF` bytes goes in whole. Each attempt is a `pwritev2` with
/// `RWF_NOWAIT` (a write of what fits now, never a wait; Linux 6.4 and
/// later on pipes), and while the pipe is full the task waits for it to be
/// writable. Where the kernel refuses `RWF_NOWAIT` (older kernels, some
/// FIFOs) the bytes go `PIPE_BUF` at a time, each after the pipe polled
/// writable, so that none of them blocks the thread. `plain` is the
/// caller's own call, for a count the kernel refuses.
///
/// # Safety
///
/// `iov` and `cnt` as for `writev(2)`.
pub(super) unsafe fn pipe_write(
    fd: c_int,
    iov: *const libc::iovec,
    cnt: c_int,
    plain: impl FnOnce() -> ssize_t,
) -> ssize_t {
    if !(0..=IOV_MAX).contains(&cnt) {
        return plain();
    }
    if pause::cancelled() || !pause::proceed_on(fd) {
        return fail(CANCELLED);
    }
    // The caller's vectors as they are first: the kernel checks them
    // (EFAULT, EINVAL) before this code reads them.
    // SAFETY: the caller's vectors, for a write at the pipe's position.
    let r = unsafe { libc::pwritev2(fd, iov, cnt, -1, libc::RWF_NOWAIT) };
    let e = errno();
    if r < 0 && e != libc::EAGAIN {
        if e == libc::EOPNOTSUPP || e == libc::ENOSYS {
            // SAFETY: as above.
            return unsafe { pipe_write_pieces(fd, iov, cnt, plain) };
        }
        return r;
    }
    // Accepted by the kernel: `cnt` readable vectors.
    let vecs: &[libc::iovec] = if cnt == 0 || iov.is_null() {
        &[]
    } else {
        // SAFETY: checked by the kernel's call just made.
        unsafe { std::slice::from_raw_parts(iov, cnt as usize) }
    };
    let total = vecs.iter().fold(0usize, |t, v| t.saturating_add(v.iov_len));
    let mut done = r.max(0) as usize;
    if done >= total || fds::nonblocking(fd) {
        // All of it, or the library's own non-blocking pipe: the plain
        // call's answer, which this was.
        return if r < 0 { fail(e) } else { r };
    }
    // The pipe is full (that attempt wrote what fit, or nothing): wait
    // until the reader makes room, write what fits, and so on.
    loop {
        match wait_fd(fd, true, None) {
            Woke::Ready | Woke::TimedOut => {}
            Woke::Failed(e) => return progress_or(done, e),
        }
        // SAFETY: the caller's vectors, past the bytes written: `v` holds
        // `n` vectors within them.
        let r = unsafe {
            write_from(vecs, done, |v, n| {
                libc::pwritev2(fd, v, n, -1, libc::RWF_NOWAIT)
            })
        };
        if r < 0 {
            let e = errno();
            if e == libc::EAGAIN {
                // A wake-up for room another writer took first.
                continue;
            }
            return progress_or(done, e);
        }
        done += r as usize;
        if done >= total {
            return done as ssize_t;
        }
    }
}

/// The count written so far, or, if nothing was, the failure `e`.
fn progress_or(done: usize, e: c_int) -> ssize_t {
    if done > 0 {
        done as ssize_t
    } else {
        fail(e)
    }
}

/// Calls `write(vectors, count)` on what of `vecs` lies past the first
/// `done` bytes: the caller's own array from the first vector not yet
/// begun, or, when `done` falls inside a vector, the rest of that one
/// vector alone (so no array is built).
///
/// # Safety
///
/// `vecs` describes the caller's readable buffers.
unsafe fn write_from(
    vecs: &[libc::iovec],
    done: usize,
    write: impl FnOnce(*const libc::iovec, c_int) -> ssize_t,
) -> ssize_t {
    let mut skip = done;
    for (i, v) in vecs.iter().enumerate() {
        if skip >= v.iov_len {
            skip -= v.iov_len;
            continue;
        }
        if skip == 0 {
            return write(vecs[i..].as_ptr(), (vecs.len() - i) as c_int);
        }
        let one = libc::iovec {
            // SAFETY: `skip < iov_len`: within the caller's buffer.
            iov_base: unsafe { v.iov_base.cast::<u8>().add(skip).cast() },
            iov_len: v.iov_len - skip,
        };
        return write(&one, 1);
    }
    0
}

/// [`pipe_write`] where the kernel refuses `RWF_NOWAIT` on the pipe: a
/// write of at most `PIPE_BUF` bytes is the plain call once the pipe polls
/// writable (it fits then, whole); a longer one goes `PIPE_BUF` bytes at a
/// time, each once the pipe polls writable. (Another writer filling the
/// pipe between the poll and the write makes that write block the
/// thread, as it would have.)
///
/// # Safety
///
/// As for [`pipe_write`]; the kernel has accepted the vectors (its
/// `pwritev2` checks them before the flags).
unsafe fn pipe_write_pieces(
    fd: c_int,
    iov: *const libc::iovec,
    cnt: c_int,
    plain: impl FnOnce() -> ssize_t,
) -> ssize_t {
    if fds::nonblocking(fd) {
        return plain();
    }
    let vecs: &[libc::iovec] = if cnt == 0 || iov.is_null() {
        &[]
    } else {
        // SAFETY: by the contract.
        unsafe { std::slice::from_raw_parts(iov, cnt as usize) }
    };
    let total = vecs.iter().fold(0usize, |t, v| t.saturating_add(v.iov_len));
    let mut plain = Some(plain);
    let mut done = 0usize;
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        if unsafe { real::poll(&mut p, 1, 0) } == 0 {
            match wait_fd(fd, true, None) {
                Woke::Ready | Woke::TimedOut => continue,
                Woke::Failed(e) => return progress_or(done, e),
            }
        }
        if total <= PIPE_BUF {
            if let Some(plain) = plain.take() {
                return plain();
            }
        }
        // SAFETY: the caller's vectors, past the bytes written: `v` is a
        // vector within them, and at most `PIPE_BUF` bytes of it go.
        let r = unsafe {
            write_from(vecs, done, |v, _| {
                real::write(fd, (*v).iov_base, (*v).iov_len.min(PIPE_BUF))
            })
        };
        if r < 0 {
            return if done > 0 { done as ssize_t } else { r };
        }
        done += r as usize;
        if done >= total {
            return done as ssize_t;
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
    if pause::cancelled() || !pause::proceed_on(fd) {
        return fail(CANCELLED);
    }
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 || flags & libc::O_NONBLOCK != 0 {
        // SAFETY: the caller's arguments.
        return unsafe { real::connect(fd, addr, len) };
    }
    // The connection started without blocking: the mode switched for the
    // one system call, and put back at once.
    let attempt = || {
        // SAFETY: F_SETFL with an integer argument.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
            return None;
        }
        // SAFETY: the caller's arguments.
        let r = unsafe { real::connect(fd, addr, len) };
        let e = errno();
        // SAFETY: F_SETFL with an integer argument: the caller's mode back.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
        Some((r, e))
    };
    let Some((r, e)) = attempt() else {
        // SAFETY: the caller's arguments.
        return unsafe { real::connect(fd, addr, len) };
    };
    if r == 0 {
        return 0;
    }
    if e == libc::EAGAIN && socket_option(fd, libc::SO_DOMAIN) == Some(libc::AF_UNIX) {
        return unix_connect_wait(fd, attempt);
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

/// The rest of a blocking `connect` of an `AF_UNIX` stream socket whose
/// listener's backlog is full: the kernel's blocking call waits until the
/// listener accepts and then connects, where a non-blocking one fails with
/// `EAGAIN` (there is no connection in progress to wait for, and no event
/// on this socket says when the backlog has room). So the attempt is made
/// again after a pause, 1 ms at first and doubling up to 50 ms, until it
/// connects, fails otherwise, or `SO_SNDTIMEO` passes (`EAGAIN`, as the
/// kernel's). `attempt` is one non-blocking `connect`: its return value
/// and `errno`, or `None` if the mode could not be switched.
fn unix_connect_wait(fd: c_int, attempt: impl Fn() -> Option<(c_int, c_int)>) -> c_int {
    let deadline = pause::socket_deadline(fd, true);
    let mut delay = Duration::from_millis(1);
    loop {
        let last = match pause::retry_after(delay, deadline) {
            Woke::Ready => false,
            // The kernel, too, looks once more when its time is up.
            Woke::TimedOut => true,
            Woke::Failed(e) => return fail(e),
        };
        delay = (delay * 2).min(Duration::from_millis(50));
        match attempt() {
            Some((0, _)) => return 0,
            Some((_, libc::EAGAIN)) | None if last => return fail(libc::EAGAIN),
            Some((_, libc::EAGAIN)) => {}
            Some((_, e)) => return fail(e),
            None => return fail(libc::EAGAIN),
        }
    }
}

/// `accept`/`accept4` on a listener the caller left blocking: the task
/// waits until a connection is pending, then the plain call takes it (a
/// connection taken meanwhile by another process or thread sharing the
/// listener makes that call block the thread until the next). The
/// listener's `SO_RCVTIMEO` bounds the wait (`EAGAIN`).
pub(super) fn accept(fd: c_int, op: impl FnOnce() -> c_int) -> c_int {
    if pause::cancelled() || !pause::proceed_on(fd) {
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
    let deadline = timeout.and_then(|t| crate::scheduler::timers::now().checked_add(t));
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
                crate::protocol::Op::Park(crate::task::park::park_token(), d)
            }),
        };
    }
    let token = crate::task::park::park_token();
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
    let Some(at) = crate::scheduler::timers::now().checked_add(d) else {
        // Longer than the clock can count: forever.
        let _ = pause::pause(None, false, |dl| {
            crate::protocol::Op::Park(crate::task::park::park_token(), dl)
        });
        return;
    };
    if pause::cancelled() || pause::scope_expired() {
        // A task cancelled inside an intercepted call, or whose timeout
        // scope has passed, that sleeps again (a reconnect loop between
        // two failed connects): the sleep is not cut short again, or the
        // loop would spin, holding the thread; it sleeps its time.
        pause::sleep_regardless(at);
        return;
    }
    loop {
        match pause::pause(Some(at), true, |dl| {
            crate::protocol::Op::Wait(dl.unwrap_or(at))
        }) {
            // `Wait` is answered once its deadline is reached.
            Woke::Ready | Woke::TimedOut => {
                if crate::scheduler::timers::now() >= at {
                    return;
                }
            }
            Woke::Failed(_) => return,
        }
    }
}
