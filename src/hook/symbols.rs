//! The C library's entry points, defined by this program. Each checks
//! first whether it was called from a task that can pause (one
//! thread-local read); if not, it is the C library's own function,
//! called at once. Otherwise the work goes to `calls`, inside a guard
//! that turns a panic of the hook's own code into an error return: no
//! unwind ever leaves these `extern "C"` functions.
//!
//! The symbol names are the C library's, so this program's definitions
//! take the place of the C library's for every caller that links to the
//! name: Rust's standard library and every crate in the executable, and,
//! when the executable exports its symbols (`-rdynamic`), the shared
//! libraries it loads.

use std::ffi::CStr;
use std::time::Duration;

use libc::{
    addrinfo, c_char, c_int, c_uint, c_void, clockid_t, epoll_event, fd_set, iovec, msghdr, nfds_t,
    pollfd, sigset_t, size_t, sockaddr, socklen_t, ssize_t, timespec, timeval, useconds_t,
};

use super::calls::{self, CallDeadline};
use super::fds::{self, Kind};
use super::pause::{fail, guard, in_task};
use super::{epoll, lookup, real};

/// `read(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `read(2)`: `buf` valid for `n` bytes of writing.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::read(fd, buf, n) };
    }
    guard(-1, || {
        calls::read_like(
            fd,
            // SAFETY: the caller's buffer, for a `recv` of the same length.
            |f| unsafe { real::recv(fd, buf, n, f) },
            // SAFETY: the caller's contract, passed on.
            || unsafe { real::read(fd, buf, n) },
        )
    })
}

/// `readv(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `readv(2)`.
#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, iovcnt: c_int) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::readv(fd, iov, iovcnt) };
    }
    if !(0..=calls::IOV_MAX).contains(&iovcnt) {
        // The kernel's `EINVAL`, at once.
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::readv(fd, iov, iovcnt) };
    }
    guard(-1, || {
        calls::read_like(
            fd,
            |f| {
                // SAFETY: a zeroed `msghdr` is valid (no name, no control
                // data); it points at the caller's vectors, for a
                // `recvmsg` that fills them as `readv` would.
                let mut msg: msghdr = unsafe { std::mem::zeroed() };
                msg.msg_iov = iov as *mut iovec;
                msg.msg_iovlen = iovcnt as _;
                // SAFETY: as above.
                unsafe { real::recvmsg(fd, &mut msg, f) }
            },
            // SAFETY: the caller's contract, passed on.
            || unsafe { real::readv(fd, iov, iovcnt) },
        )
    })
}

/// `recv(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `recv(2)`.
#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::recv(fd, buf, n, flags) };
    }
    guard(-1, || {
        if flags & (libc::MSG_WAITALL | libc::MSG_DONTWAIT) == libc::MSG_WAITALL {
            return calls::recv_waitall(fd, n, flags, |done, f| {
                // SAFETY: the rest of the caller's buffer.
                unsafe { real::recv(fd, buf.cast::<u8>().add(done).cast(), n - done, f) }
            });
        }
        let mut d = CallDeadline::new(fd, false);
        // SAFETY: the caller's arguments, with MSG_DONTWAIT added.
        calls::socket_call(fd, false, flags, &mut d, |f| unsafe {
            real::recv(fd, buf, n, f)
        })
    })
}

/// `recvfrom(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `recvfrom(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::recvfrom(fd, buf, n, flags, addr, len) };
    }
    guard(-1, || {
        if flags & (libc::MSG_WAITALL | libc::MSG_DONTWAIT) == libc::MSG_WAITALL {
            return calls::recv_waitall(fd, n, flags, |done, f| {
                let at = buf.cast::<u8>();
                // SAFETY: the rest of the caller's buffer; the address, if
                // asked for, is the last part's sender's.
                unsafe { real::recvfrom(fd, at.add(done).cast(), n - done, f, addr, len) }
            });
        }
        let mut d = CallDeadline::new(fd, false);
        calls::socket_call(fd, false, flags, &mut d, |f| {
            // SAFETY: the caller's arguments, with MSG_DONTWAIT added.
            unsafe { real::recvfrom(fd, buf, n, f, addr, len) }
        })
    })
}

/// `recvmsg(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `recvmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    guard(-1, || {
        if flags & (libc::MSG_WAITALL | libc::MSG_DONTWAIT) == libc::MSG_WAITALL {
            // SAFETY: the caller's message, read only (a null one gets the
            // plain call's EFAULT below).
            if let Some(len) = unsafe { calls::waitall_message_len(msg) } {
                return calls::recv_waitall(fd, len, flags, |done, f| {
                    // SAFETY: the caller's message, received into from
                    // offset `done` of its vectors.
                    unsafe { calls::recvmsg_at(fd, msg, done, f) }
                });
            }
        }
        let mut d = CallDeadline::new(fd, false);
        // SAFETY: the caller's arguments, with MSG_DONTWAIT added.
        calls::socket_call(fd, false, flags, &mut d, |f| unsafe {
            real::recvmsg(fd, msg, f)
        })
    })
}

/// `write(2)`; see the [module docs](super). On a socket it is a `send`
/// with no flags, which raises `SIGPIPE` on a broken connection as
/// `write` does.
///
/// # Safety
///
/// As for `write(2)`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if !in_task() || calls::is_stdio(fd) {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::write(fd, buf, n) };
    }
    guard(-1, || match fds::kind(fd) {
        Kind::Socket => {
            let r = calls::send_all(fd, n, 0, |done, f| {
                // SAFETY: the rest of the caller's buffer.
                unsafe { real::send(fd, buf.cast::<u8>().add(done).cast(), n - done, f) }
            });
            if r < 0 && super::pause::errno() == libc::ENOTSOCK {
                // Not a socket any more: the number was reused behind the
                // hook's back.
                fds::forget_kind(fd);
                // SAFETY: the caller's contract, passed on.
                return unsafe { real::write(fd, buf, n) };
            }
            r
        }
        Kind::Pipe => {
            let one = iovec {
                iov_base: buf.cast_mut(),
                iov_len: n,
            };
            // SAFETY: one vector of the caller's buffer; the caller's
            // contract, passed on.
            unsafe { calls::pipe_write(fd, &one, 1, || real::write(fd, buf, n)) }
        }
        // SAFETY: the caller's contract, passed on.
        Kind::Other | Kind::Unknown => unsafe { real::write(fd, buf, n) },
    })
}

/// `writev(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `writev(2)`.
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, iovcnt: c_int) -> ssize_t {
    if !in_task() || calls::is_stdio(fd) {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::writev(fd, iov, iovcnt) };
    }
    if !(0..=calls::IOV_MAX).contains(&iovcnt) {
        // The kernel's `EINVAL`, at once (as a message, the count would
        // have been `EMSGSIZE`).
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::writev(fd, iov, iovcnt) };
    }
    guard(-1, || match fds::kind(fd) {
        Kind::Socket => {
            // SAFETY: a zeroed `msghdr` is valid: no name, no control data.
            let mut msg: msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov as *mut iovec;
            msg.msg_iovlen = iovcnt as _;
            // SAFETY: the caller's vectors, as `sendmsg` takes them.
            unsafe { sendmsg_all(fd, &msg, 0) }
        }
        // SAFETY: the caller's contract, passed on.
        Kind::Pipe => unsafe {
            calls::pipe_write(fd, iov, iovcnt, || real::writev(fd, iov, iovcnt))
        },
        // SAFETY: the caller's contract, passed on.
        Kind::Other | Kind::Unknown => unsafe { real::writev(fd, iov, iovcnt) },
    })
}

/// `send(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `send(2)`.
#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::send(fd, buf, n, flags) };
    }
    guard(-1, || {
        calls::send_all(fd, n, flags, |done, f| {
            // SAFETY: the rest of the caller's buffer.
            unsafe { real::send(fd, buf.cast::<u8>().add(done).cast(), n - done, f) }
        })
    })
}

/// `sendto(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `sendto(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::sendto(fd, buf, n, flags, addr, len) };
    }
    guard(-1, || {
        calls::send_all(fd, n, flags, |done, f| {
            // SAFETY: the rest of the caller's buffer, to the caller's
            // address.
            unsafe {
                real::sendto(
                    fd,
                    buf.cast::<u8>().add(done).cast(),
                    n - done,
                    f,
                    addr,
                    len,
                )
            }
        })
    })
}

/// `sendmsg(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `sendmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::sendmsg(fd, msg, flags) };
    }
    // SAFETY: the caller's message, as `sendmsg` takes it.
    guard(-1, || unsafe { sendmsg_all(fd, msg, flags) })
}

/// `sendmsg` with a stream socket's full-write semantics (see
/// [`calls::send_all`]): after a short send the rest of the vectors goes
/// out, without the control data, which went with the first part. The
/// caller's message is handed to the kernel as it is first, so that its
/// counts and vectors are checked there (`EMSGSIZE`, `EINVAL`, `EFAULT`,
/// as the plain call answers) before this code reads them.
///
/// # Safety
///
/// `msg` valid as for `sendmsg(2)`.
unsafe fn sendmsg_all(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    let mut deadline = CallDeadline::new(fd, true);
    // SAFETY: the caller's message as it is.
    let r = calls::socket_call(fd, true, flags, &mut deadline, |f| unsafe {
        real::sendmsg(fd, msg, f)
    });
    if r <= 0 {
        return r;
    }
    // SAFETY: accepted by the kernel: a readable message.
    let first = unsafe { *msg };
    let iov: &[iovec] = if first.msg_iov.is_null() || first.msg_iovlen == 0 {
        &[]
    } else {
        // SAFETY: accepted by the kernel: `msg_iov` holds `msg_iovlen`
        // (at most `IOV_MAX`) readable vectors.
        unsafe { std::slice::from_raw_parts(first.msg_iov, first.msg_iovlen) }
    };
    let total = iov.iter().fold(0usize, |t, v| t.saturating_add(v.iov_len));
    let mut rest: Vec<iovec> = Vec::new();
    calls::send_rest(fd, total, flags, &mut deadline, r as usize, |done, f| {
        rest.clear();
        let mut skip = done;
        for v in iov {
            if skip >= v.iov_len {
                skip -= v.iov_len;
                continue;
            }
            rest.push(iovec {
                // SAFETY: `skip < iov_len`: within the caller's vector.
                iov_base: unsafe { v.iov_base.cast::<u8>().add(skip).cast() },
                iov_len: v.iov_len - skip,
            });
            skip = 0;
        }
        let mut m = first;
        m.msg_iov = rest.as_mut_ptr();
        m.msg_iovlen = rest.len() as _;
        m.msg_control = std::ptr::null_mut();
        m.msg_controllen = 0;
        // SAFETY: the caller's message, narrowed to the bytes not sent.
        unsafe { real::sendmsg(fd, &m, f) }
    })
}

/// `connect(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `connect(2)`.
#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::connect(fd, addr, len) };
    }
    // SAFETY: the caller's contract, passed on.
    guard(-1, || unsafe { calls::connect(fd, addr, len) })
}

/// `accept(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `accept(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::accept(fd, addr, len) };
    }
    guard(-1, || {
        calls::accept(fd, || {
            // SAFETY: the caller's contract, passed on.
            unsafe { real::accept(fd, addr, len) }
        })
    })
}

/// `accept4(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `accept4(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::accept4(fd, addr, len, flags) };
    }
    guard(-1, || {
        calls::accept(fd, || {
            // SAFETY: the caller's contract, passed on.
            unsafe { real::accept4(fd, addr, len, flags) }
        })
    })
}

/// `close(2)`: drops what the hook kept about the descriptor (on any
/// thread, in a task or not), then closes it.
///
/// # Safety
///
/// As for `close(2)`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    guard((), || fds::closing(fd));
    // SAFETY: the caller's contract, passed on.
    unsafe { real::close(fd) }
}

/// `setsockopt(2)`: the plain call; a change of `SO_RCVTIMEO` or
/// `SO_SNDTIMEO` makes the hook read the socket timeouts it keeps again.
///
/// # Safety
///
/// As for `setsockopt(2)`.
#[no_mangle]
pub unsafe extern "C" fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *const c_void,
    len: socklen_t,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    let r = unsafe { real::setsockopt(fd, level, name, val, len) };
    if level == libc::SOL_SOCKET && (name == libc::SO_RCVTIMEO || name == libc::SO_SNDTIMEO) {
        fds::timeouts_changed();
    }
    r
}

/// `poll(2)`; see the [module docs](super).
///
/// # Safety
///
/// As for `poll(2)`.
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    if !in_task() || timeout == 0 {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::poll(fds, n, timeout) };
    }
    let t = (timeout > 0).then(|| Duration::from_millis(timeout as u64));
    // SAFETY: the caller's contract, passed on.
    guard(-1, || unsafe { calls::poll(fds, n, t) })
}

/// `ppoll(2)`; see the [module docs](super). A call with a signal mask is
/// the plain one: the mask is applied atomically with the wait, which a
/// pause cannot do.
///
/// # Safety
///
/// As for `ppoll(2)`.
#[no_mangle]
pub unsafe extern "C" fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    if !in_task() || !mask.is_null() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::ppoll(fds, n, timeout, mask) };
    }
    // SAFETY: a non-null timeout is the caller's valid `timespec`.
    let t = match unsafe { timeout.as_ref() } {
        None => None,
        Some(ts) => match timespec_duration(ts) {
            Some(d) => Some(d),
            None => return fail(libc::EINVAL),
        },
    };
    // SAFETY: the caller's contract, passed on.
    guard(-1, || unsafe { calls::poll(fds, n, t) })
}

/// `select(2)`; see the [module docs](super). On return the timeout holds
/// the time left, as Linux's does.
///
/// # Safety
///
/// As for `select(2)`.
#[no_mangle]
pub unsafe extern "C" fn select(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    timeout: *mut timeval,
) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::select(nfds, r, w, e, timeout) };
    }
    // SAFETY: the caller's contract, passed on.
    guard(-1, || unsafe { select_in_task(nfds, [r, w, e], timeout) })
}

/// [`select`] from a task, on top of [`calls::wait_any`]; `sets` are the
/// read, write and exception sets.
///
/// # Safety
///
/// As for `select(2)`.
unsafe fn select_in_task(nfds: c_int, sets: [*mut fd_set; 3], timeout: *mut timeval) -> c_int {
    let [r, w, e] = sets;
    if nfds < 0 {
        return fail(libc::EINVAL);
    }
    // SAFETY: a non-null timeout is the caller's valid `timeval`.
    let t = match unsafe { timeout.as_ref() } {
        None => None,
        Some(tv) => match select_timeout(tv) {
            Some(t) => Some(t),
            None => return fail(libc::EINVAL),
        },
    };
    // The kernel reads (and writes) the first `nfds` bits of each set, in
    // whole words, but no more than the process's descriptor table holds.
    let bits = if nfds as usize <= libc::FD_SETSIZE {
        nfds as usize
    } else {
        (nfds as usize).min(fd_table_size().unwrap_or(libc::FD_SETSIZE))
    };
    let words = bits.div_ceil(WORD_BITS);
    // The sets as given, to ask again after each wait.
    let copy = |p: *mut fd_set| {
        (!p.is_null()).then(|| {
            // SAFETY: the caller's set, `words` words long (the kernel
            // reads as many).
            unsafe { std::slice::from_raw_parts(p.cast::<libc::c_ulong>(), words) }.to_vec()
        })
    };
    let given = sets.map(copy);
    let restore = || {
        for (p, g) in sets.into_iter().zip(&given) {
            if let Some(g) = g {
                // SAFETY: `p` is the caller's non-null set, `g` its copy.
                unsafe { std::ptr::copy_nonoverlapping(g.as_ptr(), p.cast(), g.len()) };
            }
        }
    };
    let zero_select = || {
        restore();
        let mut zero = timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: the caller's sets, a zero timeout of ours.
        unsafe { real::select(nfds, r, w, e, &mut zero) }
    };
    let start = crate::scheduler::timers::now();
    let answer = |n: c_int| {
        if let (Some(t), false) = (t, timeout.is_null()) {
            let left =
                t.saturating_sub(crate::scheduler::timers::now().saturating_duration_since(start));
            // SAFETY: the caller's non-null `timeval`.
            unsafe {
                (*timeout).tv_sec = left.as_secs().min(i64::MAX as u64) as _;
                (*timeout).tv_usec = left.subsec_micros() as _;
            }
        }
        n
    };
    let n = zero_select();
    if n != 0 || t == Some(Duration::ZERO) {
        return answer(n);
    }
    let is = |s: &Option<Vec<libc::c_ulong>>, fd: usize| {
        s.as_ref()
            .is_some_and(|s| s[fd / WORD_BITS] >> (fd % WORD_BITS) & 1 != 0)
    };
    let mut watched = Vec::new();
    for fd in 0..bits {
        let (rd, wr, ex) = (is(&given[0], fd), is(&given[1], fd), is(&given[2], fd));
        if rd || wr || ex {
            watched.push((fd as c_int, rd || ex, wr));
        }
    }
    let deadline = t.and_then(|t| start.checked_add(t));
    loop {
        match calls::wait_any(&watched, deadline) {
            super::pause::Woke::Ready => {
                let n = zero_select();
                if n != 0 {
                    return answer(n);
                }
            }
            super::pause::Woke::TimedOut => return answer(zero_select()),
            super::pause::Woke::Failed(err) => {
                // On failure the sets are left as they were given.
                restore();
                return fail(err);
            }
        }
    }
}

/// Bits in a word of an `fd_set`, the unit the kernel copies them in.
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// `select`'s timeout as the C library and the kernel take it: negative
/// fields are invalid (`None`), and microseconds of a second or more carry
/// into the seconds.
fn select_timeout(tv: &timeval) -> Option<Duration> {
    if tv.tv_sec < 0 || tv.tv_usec < 0 {
        return None;
    }
    let usec = tv.tv_usec as u64;
    let secs = (tv.tv_sec as u64).saturating_add(usec / 1_000_000);
    Some(Duration::new(secs, (usec % 1_000_000) as u32 * 1000))
}

/// The size of this process's descriptor table (`FDSize` in
/// `/proc/self/status`): the most bits of a set the kernel's `select`
/// reads, whatever `nfds` says. Asked only for an `nfds` above
/// `FD_SETSIZE`.
fn fd_table_size() -> Option<usize> {
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c"/proc/self/status".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 4096];
    let mut len = 0;
    while len < buf.len() {
        // SAFETY: the rest of `buf`, writable.
        let n = unsafe { real::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len) };
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    // SAFETY: our own descriptor, opened above.
    unsafe { real::close(fd) };
    let key = b"\nFDSize:";
    let at = buf[..len].windows(key.len()).position(|w| w == key)? + key.len();
    let digits = buf[at..len]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit());
    let mut size = 0usize;
    let mut any = false;
    for d in digits {
        size = size.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
        any = true;
    }
    any.then_some(size)
}

/// A valid `timespec` as a duration.
fn timespec_duration(ts: &timespec) -> Option<Duration> {
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return None;
    }
    Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// `epoll_wait(2)`; see the [module docs](super): from a task, with a
/// timeout that is not zero, only the task waits.
///
/// # Safety
///
/// As for `epoll_wait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    if !in_task() || timeout == 0 {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::epoll_wait(epfd, events, max, timeout) };
    }
    // Any negative timeout is none.
    let t = (timeout > 0).then(|| Duration::from_millis(timeout as u64));
    // SAFETY: the caller's contract, passed on (no mask).
    unsafe {
        epoll::wait_or_plain(epfd, events, max, t, std::ptr::null(), || {
            // SAFETY: the caller's contract, passed on.
            real::epoll_wait(epfd, events, max, timeout)
        })
    }
}

/// `epoll_pwait(2)`; see the [module docs](super). A call with a signal
/// mask other than the thread's is the plain one: the mask is installed
/// atomically with the wait, which a pause cannot do.
///
/// # Safety
///
/// As for `epoll_pwait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    if !in_task() || timeout == 0 {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::epoll_pwait(epfd, events, max, timeout, mask) };
    }
    let t = (timeout > 0).then(|| Duration::from_millis(timeout as u64));
    // SAFETY: the caller's contract, passed on.
    unsafe {
        epoll::wait_or_plain(epfd, events, max, t, mask, || {
            // SAFETY: the caller's contract, passed on.
            real::epoll_pwait(epfd, events, max, timeout, mask)
        })
    }
}

/// `epoll_pwait2(2)`; see the [module docs](super). As `epoll_pwait`,
/// with the timeout a `timespec` (null: none).
///
/// # Safety
///
/// As for `epoll_pwait2(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait2(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::epoll_pwait2(epfd, events, max, timeout, mask) };
    }
    // SAFETY: a non-null timeout is the caller's valid `timespec`.
    let t = match unsafe { timeout.as_ref() }.map(timespec_duration) {
        None => None,
        Some(Some(d)) if !d.is_zero() => Some(d),
        // A zero timeout, and an invalid one (`EINVAL`), are the plain
        // call's.
        Some(_) => {
            // SAFETY: the caller's contract, passed on.
            return unsafe { real::epoll_pwait2(epfd, events, max, timeout, mask) };
        }
    };
    // SAFETY: the caller's contract, passed on.
    unsafe {
        epoll::wait_or_plain(epfd, events, max, t, mask, || {
            // SAFETY: the caller's contract, passed on.
            real::epoll_pwait2(epfd, events, max, timeout, mask)
        })
    }
}

/// `nanosleep(2)`; see the [module docs](super): from a task, only the
/// task sleeps.
///
/// # Safety
///
/// As for `nanosleep(2)`.
#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::nanosleep(req, rem) };
    }
    // SAFETY: a non-null request is the caller's valid `timespec`.
    let Some(d) = (unsafe { req.as_ref() }).and_then(timespec_duration) else {
        return fail(if req.is_null() {
            libc::EFAULT
        } else {
            libc::EINVAL
        });
    };
    guard(-1, || {
        calls::sleep(d);
        0
    })
}

/// `clock_nanosleep(2)`; see the [module docs](super). The clocks a task
/// can sleep on are `CLOCK_MONOTONIC`, `CLOCK_REALTIME` and
/// `CLOCK_BOOTTIME` (an absolute time is turned into a duration when the
/// call is made); other clocks get the plain call.
///
/// # Safety
///
/// As for `clock_nanosleep(2)`.
#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    let ours = matches!(
        clock,
        libc::CLOCK_MONOTONIC | libc::CLOCK_REALTIME | libc::CLOCK_BOOTTIME
    );
    if !in_task() || !ours {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::clock_nanosleep(clock, flags, req, rem) };
    }
    // SAFETY: a non-null request is the caller's valid `timespec`.
    let Some(mut d) = (unsafe { req.as_ref() }).and_then(timespec_duration) else {
        // This call returns its error rather than setting `errno`.
        return if req.is_null() {
            libc::EFAULT
        } else {
            libc::EINVAL
        };
    };
    if flags & libc::TIMER_ABSTIME != 0 {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a writable `timespec`.
        unsafe { libc::clock_gettime(clock, &mut now) };
        let now = timespec_duration(&now).unwrap_or_default();
        d = d.saturating_sub(now);
    }
    guard(libc::EIO, || {
        calls::sleep(d);
        0
    })
}

/// `usleep(3)`; see the [module docs](super).
///
/// # Safety
///
/// None beyond the C function's.
#[no_mangle]
pub unsafe extern "C" fn usleep(us: useconds_t) -> c_int {
    if !in_task() {
        // SAFETY: no pointer arguments.
        return unsafe { real::usleep(us) };
    }
    guard(-1, || {
        calls::sleep(Duration::from_micros(us.into()));
        0
    })
}

/// `sleep(3)`; see the [module docs](super). Returns 0: the task slept its
/// full time (or, cut short by a timeout scope or a cancellation, returns
/// as if it had).
///
/// # Safety
///
/// None beyond the C function's.
#[no_mangle]
pub unsafe extern "C" fn sleep(secs: c_uint) -> c_uint {
    if !in_task() {
        // SAFETY: no pointer arguments.
        return unsafe { real::sleep(secs) };
    }
    guard(0, || {
        calls::sleep(Duration::from_secs(secs.into()));
        0
    })
}

/// `getaddrinfo(3)`; see the [module docs](super): from a task, the
/// lookup runs on the blocking pool while only the task waits.
///
/// # Safety
///
/// As for `getaddrinfo(3)`.
#[no_mangle]
pub unsafe extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
    res: *mut *mut addrinfo,
) -> c_int {
    if !in_task() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { real::getaddrinfo(node, service, hints, res) };
    }
    // SAFETY: non-null strings are the caller's NUL-terminated ones; a
    // non-null `hints` its valid `addrinfo`.
    let (node, service, hints) = unsafe {
        (
            (!node.is_null()).then(|| CStr::from_ptr(node).to_owned()),
            (!service.is_null()).then(|| CStr::from_ptr(service).to_owned()),
            hints.as_ref().map(lookup::Hints::from),
        )
    };
    guard(libc::EAI_SYSTEM, || {
        match lookup::on_pool(node, service, hints) {
            Ok((code, list)) => {
                // SAFETY: `res` is the caller's out-parameter.
                unsafe { *res = list };
                code
            }
            Err(e) => {
                super::pause::set_errno(e);
                libc::EAI_SYSTEM
            }
        }
    })
}
