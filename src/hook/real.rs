//! The C library's own definitions of the calls the hook takes over,
//! found once with `dlsym(RTLD_NEXT, name)`: the next definition after
//! this program's, which is the C library's. Each is looked up on its
//! first use and kept in an atomic word, so a call costs one load and an
//! indirect call more than a direct one.
//!
//! `dlsym`, not raw system calls: the C library's wrappers are what the
//! caller would have reached without the hook (with their cancellation
//! points and, for `getaddrinfo`, everything that is not a system call),
//! and they exist on every architecture, where some system calls
//! (`poll`, `select`) do not.

use std::ffi::CStr;
use std::mem;
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{
    addrinfo, c_char, c_int, c_uint, c_void, clockid_t, epoll_event, fd_set, iovec, msghdr, nfds_t,
    pollfd, sigset_t, size_t, sockaddr, socklen_t, ssize_t, timespec, timeval, useconds_t,
};

/// One C library function: its name and, once looked up, its address.
struct Real {
    name: &'static CStr,
    /// 0 until looked up.
    addr: AtomicUsize,
}

impl Real {
    const fn new(name: &'static CStr) -> Real {
        Real {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The function's address, looked up on first use. Two threads may
    /// both look it up; they find the same address.
    #[inline(always)]
    fn addr(&self) -> usize {
        let a = self.addr.load(Ordering::Relaxed);
        if a != 0 {
            a
        } else {
            self.look_up()
        }
    }

    #[cold]
    #[inline(never)]
    fn look_up(&self) -> usize {
        let a = self.dlsym();
        if a == 0 {
            // Nothing to fall back to: without the C library's definition
            // the call cannot be made at all (a static executable, or a C
            // library without this function).
            let msg = b"yieldloop: feature `hook`: the C library's definition of an intercepted call was not found (a statically linked program?)\n";
            // SAFETY: a plain write of a static buffer to the standard
            // error descriptor, through the system call, not the hook.
            unsafe { libc::syscall(libc::SYS_write, 2, msg.as_ptr(), msg.len()) };
            std::process::abort();
        }
        self.addr.store(a, Ordering::Relaxed);
        a
    }

    /// The address of a function that older C libraries lack, or `None`
    /// there: looked up on first use, and a miss is kept as [`MISSING`].
    /// (Never mixed with [`Real::addr`] on one `Real`.)
    #[inline]
    fn find(&self) -> Option<usize> {
        let a = match self.addr.load(Ordering::Relaxed) {
            0 => {
                let a = match self.dlsym() {
                    0 => MISSING,
                    a => a,
                };
                self.addr.store(a, Ordering::Relaxed);
                a
            }
            a => a,
        };
        (a != MISSING).then_some(a)
    }

    /// The next definition of the name after this program's, or 0.
    fn dlsym(&self) -> usize {
        // SAFETY: `name` is a NUL-terminated string; RTLD_NEXT asks for the
        // next definition after the object this code is in.
        unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) as usize }
    }
}

/// What [`Real::find`] keeps for a function the C library does not have:
/// never the address of a function.
const MISSING: usize = usize::MAX;

static READ: Real = Real::new(c"read");
static READV: Real = Real::new(c"readv");
static RECV: Real = Real::new(c"recv");
static RECVFROM: Real = Real::new(c"recvfrom");
static RECVMSG: Real = Real::new(c"recvmsg");
static WRITE: Real = Real::new(c"write");
static WRITEV: Real = Real::new(c"writev");
static SEND: Real = Real::new(c"send");
static SENDTO: Real = Real::new(c"sendto");
static SENDMSG: Real = Real::new(c"sendmsg");
static CONNECT: Real = Real::new(c"connect");
static ACCEPT: Real = Real::new(c"accept");
static ACCEPT4: Real = Real::new(c"accept4");
static CLOSE: Real = Real::new(c"close");
static POLL: Real = Real::new(c"poll");
static PPOLL: Real = Real::new(c"ppoll");
static SELECT: Real = Real::new(c"select");
static EPOLL_WAIT: Real = Real::new(c"epoll_wait");
static EPOLL_PWAIT: Real = Real::new(c"epoll_pwait");
static EPOLL_PWAIT2: Real = Real::new(c"epoll_pwait2");
static NANOSLEEP: Real = Real::new(c"nanosleep");
static CLOCK_NANOSLEEP: Real = Real::new(c"clock_nanosleep");
static USLEEP: Real = Real::new(c"usleep");
static SLEEP: Real = Real::new(c"sleep");
static GETADDRINFO: Real = Real::new(c"getaddrinfo");
static SETSOCKOPT: Real = Real::new(c"setsockopt");
static FORK: Real = Real::new(c"fork");

// Each function below calls the C library's definition with the caller's
// arguments. The transmutes are sound because each `Real` is looked up by
// the very name whose C prototype (from the C library's headers, as the
// `libc` crate declares it) the function-pointer type spells out.

/// `read(2)`, the C library's.
///
/// # Safety
///
/// As for `read(2)`: `buf` valid for `n` bytes of writing.
#[inline(always)]
pub(super) unsafe fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t =
        unsafe { mem::transmute(READ.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n) }
}

/// `readv(2)`, the C library's.
///
/// # Safety
///
/// As for `readv(2)`.
#[inline(always)]
pub(super) unsafe fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t =
        unsafe { mem::transmute(READV.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, iov, n) }
}

/// `recv(2)`, the C library's.
///
/// # Safety
///
/// As for `recv(2)`.
#[inline(always)]
pub(super) unsafe fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut c_void, size_t, c_int) -> ssize_t =
        unsafe { mem::transmute(RECV.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n, flags) }
}

/// `recvfrom(2)`, the C library's.
///
/// # Safety
///
/// As for `recvfrom(2)`.
#[inline(always)]
pub(super) unsafe fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(
        c_int,
        *mut c_void,
        size_t,
        c_int,
        *mut sockaddr,
        *mut socklen_t,
    ) -> ssize_t = unsafe { mem::transmute(RECVFROM.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n, flags, addr, len) }
}

/// `recvmsg(2)`, the C library's.
///
/// # Safety
///
/// As for `recvmsg(2)`.
#[inline(always)]
pub(super) unsafe fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut msghdr, c_int) -> ssize_t =
        unsafe { mem::transmute(RECVMSG.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, msg, flags) }
}

/// `write(2)`, the C library's.
///
/// # Safety
///
/// As for `write(2)`.
#[inline(always)]
pub(super) unsafe fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t =
        unsafe { mem::transmute(WRITE.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n) }
}

/// `writev(2)`, the C library's.
///
/// # Safety
///
/// As for `writev(2)`.
#[inline(always)]
pub(super) unsafe fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t =
        unsafe { mem::transmute(WRITEV.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, iov, n) }
}

/// `send(2)`, the C library's.
///
/// # Safety
///
/// As for `send(2)`.
#[inline(always)]
pub(super) unsafe fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const c_void, size_t, c_int) -> ssize_t =
        unsafe { mem::transmute(SEND.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n, flags) }
}

/// `sendto(2)`, the C library's.
///
/// # Safety
///
/// As for `sendto(2)`.
#[inline(always)]
pub(super) unsafe fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(
        c_int,
        *const c_void,
        size_t,
        c_int,
        *const sockaddr,
        socklen_t,
    ) -> ssize_t = unsafe { mem::transmute(SENDTO.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, buf, n, flags, addr, len) }
}

/// `sendmsg(2)`, the C library's.
///
/// # Safety
///
/// As for `sendmsg(2)`.
#[inline(always)]
pub(super) unsafe fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const msghdr, c_int) -> ssize_t =
        unsafe { mem::transmute(SENDMSG.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, msg, flags) }
}

/// `connect(2)`, the C library's.
///
/// # Safety
///
/// As for `connect(2)`.
#[inline(always)]
pub(super) unsafe fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *const sockaddr, socklen_t) -> c_int =
        unsafe { mem::transmute(CONNECT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, addr, len) }
}

/// `accept(2)`, the C library's.
///
/// # Safety
///
/// As for `accept(2)`.
#[inline(always)]
pub(super) unsafe fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int =
        unsafe { mem::transmute(ACCEPT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, addr, len) }
}

/// `accept4(2)`, the C library's.
///
/// # Safety
///
/// As for `accept4(2)`.
#[inline(always)]
pub(super) unsafe fn accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t, c_int) -> c_int =
        unsafe { mem::transmute(ACCEPT4.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, addr, len, flags) }
}

/// `close(2)`, the C library's.
///
/// # Safety
///
/// As for `close(2)`: the caller owns `fd`.
#[inline(always)]
pub(super) unsafe fn close(fd: c_int) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int) -> c_int = unsafe { mem::transmute(CLOSE.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd) }
}

/// `poll(2)`, the C library's.
///
/// # Safety
///
/// As for `poll(2)`: `fds` valid for `n` entries.
#[inline(always)]
pub(super) unsafe fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(*mut pollfd, nfds_t, c_int) -> c_int =
        unsafe { mem::transmute(POLL.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fds, n, timeout) }
}

/// `ppoll(2)`, the C library's.
///
/// # Safety
///
/// As for `ppoll(2)`.
#[inline(always)]
pub(super) unsafe fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(*mut pollfd, nfds_t, *const timespec, *const sigset_t) -> c_int =
        unsafe { mem::transmute(PPOLL.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fds, n, timeout, mask) }
}

/// `select(2)`, the C library's.
///
/// # Safety
///
/// As for `select(2)`.
#[inline(always)]
pub(super) unsafe fn select(
    n: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    timeout: *mut timeval,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(
        c_int,
        *mut fd_set,
        *mut fd_set,
        *mut fd_set,
        *mut timeval,
    ) -> c_int = unsafe { mem::transmute(SELECT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(n, r, w, e, timeout) }
}

/// `epoll_wait(2)`, the C library's.
///
/// # Safety
///
/// As for `epoll_wait(2)`: `events` valid for `max` entries.
#[inline(always)]
pub(super) unsafe fn epoll_wait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut epoll_event, c_int, c_int) -> c_int =
        unsafe { mem::transmute(EPOLL_WAIT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(epfd, events, max, timeout) }
}

/// `epoll_pwait(2)`, the C library's.
///
/// # Safety
///
/// As for `epoll_pwait(2)`.
#[inline(always)]
pub(super) unsafe fn epoll_pwait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, *mut epoll_event, c_int, c_int, *const sigset_t) -> c_int =
        unsafe { mem::transmute(EPOLL_PWAIT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(epfd, events, max, timeout, mask) }
}

/// `epoll_pwait2(2)`, the C library's (GNU C library 2.35 and later), or
/// the system call where the C library has no such function (`ENOSYS`
/// before Linux 5.11, as the C library's own would answer).
///
/// # Safety
///
/// As for `epoll_pwait2(2)`.
#[inline(always)]
pub(super) unsafe fn epoll_pwait2(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    let Some(addr) = EPOLL_PWAIT2.find() else {
        // SAFETY: the caller's contract is the system call's; the mask's
        // size is the kernel's signal set (64 signals), as the C library
        // passes it.
        return unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events,
                max,
                timeout,
                mask,
                8usize,
            )
        } as c_int;
    };
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(
        c_int,
        *mut epoll_event,
        c_int,
        *const timespec,
        *const sigset_t,
    ) -> c_int = unsafe { mem::transmute(addr) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(epfd, events, max, timeout, mask) }
}

/// `nanosleep(2)`, the C library's.
///
/// # Safety
///
/// As for `nanosleep(2)`.
#[inline(always)]
pub(super) unsafe fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(*const timespec, *mut timespec) -> c_int =
        unsafe { mem::transmute(NANOSLEEP.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(req, rem) }
}

/// `clock_nanosleep(2)`, the C library's.
///
/// # Safety
///
/// As for `clock_nanosleep(2)`.
#[inline(always)]
pub(super) unsafe fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(clockid_t, c_int, *const timespec, *mut timespec) -> c_int =
        unsafe { mem::transmute(CLOCK_NANOSLEEP.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(clock, flags, req, rem) }
}

/// `usleep(3)`, the C library's.
///
/// # Safety
///
/// None beyond the C library's own (kept `unsafe` like its neighbours).
#[inline(always)]
pub(super) unsafe fn usleep(us: useconds_t) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(useconds_t) -> c_int = unsafe { mem::transmute(USLEEP.addr()) };
    // SAFETY: no pointer arguments.
    unsafe { f(us) }
}

/// `sleep(3)`, the C library's.
///
/// # Safety
///
/// None beyond the C library's own (kept `unsafe` like its neighbours).
#[inline(always)]
pub(super) unsafe fn sleep(s: c_uint) -> c_uint {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_uint) -> c_uint = unsafe { mem::transmute(SLEEP.addr()) };
    // SAFETY: no pointer arguments.
    unsafe { f(s) }
}

/// `getaddrinfo(3)`, the C library's.
///
/// # Safety
///
/// As for `getaddrinfo(3)`.
#[inline(always)]
pub(super) unsafe fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
    res: *mut *mut addrinfo,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(
        *const c_char,
        *const c_char,
        *const addrinfo,
        *mut *mut addrinfo,
    ) -> c_int = unsafe { mem::transmute(GETADDRINFO.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(node, service, hints, res) }
}

/// `setsockopt(2)`, the C library's.
///
/// # Safety
///
/// As for `setsockopt(2)`: `val` valid for `len` bytes.
#[inline(always)]
pub(super) unsafe fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *const c_void,
    len: socklen_t,
) -> c_int {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn(c_int, c_int, c_int, *const c_void, socklen_t) -> c_int =
        unsafe { mem::transmute(SETSOCKOPT.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f(fd, level, name, val, len) }
}

/// `fork(2)`, the C library's (which runs the `pthread_atfork` handlers).
///
/// # Safety
///
/// As for `fork(2)`: in a multithreaded program, the child may only make
/// async-signal-safe calls until it calls `exec` or `_exit`.
#[inline(always)]
pub(super) unsafe fn fork() -> libc::pid_t {
    // SAFETY: see the comment above these functions.
    let f: unsafe extern "C" fn() -> libc::pid_t = unsafe { mem::transmute(FORK.addr()) };
    // SAFETY: the caller's contract is the function's.
    unsafe { f() }
}
