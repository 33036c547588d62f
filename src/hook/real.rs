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

/// The C library's definition of each call, one row each: the man page
/// and what a caller must uphold beyond it, then the function, its name
/// the C library's and its prototype as the C library's headers (and the
/// `libc` crate) declare it. Each calls the C library's definition with
/// the caller's arguments, found by that name on its first call. A row
/// with `missing:` is a function older C libraries lack: where it is
/// missing, that expression is the answer.
macro_rules! real_calls {
    ($(
        $page:literal $(: $extra:literal)? $(, missing: $missing:expr)?
        => fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;
    )*) => {$(
        #[doc = concat!("`", $page, "`, the C library's.")]
        ///
        /// # Safety
        ///
        #[doc = concat!("As for `", $page, "`", $(": ", $extra,)? ".")]
        #[inline(always)]
        pub(super) unsafe fn $name($($arg: $ty),*) -> $ret {
            static REAL: Real = Real::new(
                match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                    Ok(name) => name,
                    Err(_) => panic!("a name with a NUL inside"),
                },
            );
            let addr = real_calls!(@addr REAL $(, $missing)?);
            let f: unsafe extern "C" fn($($ty),*) -> $ret =
                // SAFETY: the address was looked up by the very name whose
                // C prototype the function-pointer type spells out.
                unsafe { mem::transmute(addr) };
            // SAFETY: the caller's contract is the function's.
            unsafe { f($($arg),*) }
        }
    )*};
    (@addr $real:ident) => { $real.addr() };
    (@addr $real:ident, $missing:expr) => {
        match $real.find() {
            Some(addr) => addr,
            None => return $missing,
        }
    };
}

real_calls! {
    "read(2)": "`buf` valid for `n` bytes of writing"
        => fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    "readv(2)"
        => fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    "recv(2)"
        => fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    "recvfrom(2)"
        => fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    "recvmsg(2)"
        => fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    "write(2)"
        => fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    "writev(2)"
        => fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    "send(2)"
        => fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    "sendto(2)"
        => fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
    "sendmsg(2)"
        => fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    "connect(2)"
        => fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    "accept(2)"
        => fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    "accept4(2)"
        => fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    "close(2)": "the caller owns `fd`"
        => fn close(fd: c_int) -> c_int;
    "poll(2)": "`fds` valid for `n` entries"
        => fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    "ppoll(2)"
        => fn ppoll(fds: *mut pollfd, n: nfds_t, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    "select(2)"
        => fn select(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, timeout: *mut timeval) -> c_int;
    "epoll_wait(2)": "`events` valid for `max` entries"
        => fn epoll_wait(epfd: c_int, events: *mut epoll_event, max: c_int, timeout: c_int) -> c_int;
    "epoll_pwait(2)"
        => fn epoll_pwait(epfd: c_int, events: *mut epoll_event, max: c_int, timeout: c_int, mask: *const sigset_t) -> c_int;
    "epoll_pwait2(2)",
        // A C library older than 2.35 has none: the system call itself
        // (`ENOSYS` before Linux 5.11, as the C library's own answers).
        // SAFETY: the caller's contract is the system call's; the mask's
        // size is the kernel's signal set (64 signals), as the C library
        // passes it.
        missing: unsafe { libc::syscall(libc::SYS_epoll_pwait2, epfd, events, max, timeout, mask, 8usize) } as c_int
        => fn epoll_pwait2(epfd: c_int, events: *mut epoll_event, max: c_int, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    "nanosleep(2)"
        => fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    "clock_nanosleep(2)"
        => fn clock_nanosleep(clock: clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    "usleep(3)"
        => fn usleep(us: useconds_t) -> c_int;
    "sleep(3)"
        => fn sleep(s: c_uint) -> c_uint;
    "getaddrinfo(3)"
        => fn getaddrinfo(node: *const c_char, service: *const c_char, hints: *const addrinfo, res: *mut *mut addrinfo) -> c_int;
    "setsockopt(2)": "`val` valid for `len` bytes"
        => fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int;
    "fork(2)": "in a multithreaded program, the child may only make async-signal-safe calls until it calls `exec` or `_exit` (the C library's runs the `pthread_atfork` handlers)"
        => fn fork() -> libc::pid_t;
}
