//! [`PausingIo`]: a non-blocking descriptor registered with the current
//! scheduler, whose calls pause the task instead of returning
//! `WouldBlock`: the "try, and on `WouldBlock` wait for readiness" loop
//! every socket, pipe and signal listener uses, and, polled with a
//! `Context`, the same loop for a future.

use std::fmt;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{outside_run, PinnedToSchedulerThread};
use crate::protocol::{IoId, Op, SchedulerId};
use crate::reactor::{ReadEvents, ReadMarkSlot};
use crate::scheduler;
use crate::scheduler::coroutine;
use crate::task::coop;
use crate::task::suspend::suspend_io;

/// A descriptor registered with the current scheduler's reactor, whose
/// calls pause only the calling task until it is ready: any file
/// descriptor or socket, made non-blocking, in blocking style.
///
/// It owns the value `T` that owns (or borrows) the descriptor: a
/// [`socket2::Socket`](https://docs.rs/socket2), a `std::fs::File` made
/// from a pipe, an [`OwnedFd`](std::os::fd::OwnedFd) a C library handed
/// over, or a [`BorrowedFd`] of one the library keeps. An operation runs
/// through [`read_with`](Self::read_with) or
/// [`write_with`](Self::write_with), which call it, and while it reports
/// [`WouldBlock`](io::ErrorKind::WouldBlock) pause the task until the
/// reactor reports the descriptor readable (writable), then call it again.
/// Where `T` reads or writes, so does `PausingIo<T>` (and `&PausingIo<T>`
/// where `&T` does), so `BufReader`, `read_line` and `io::copy` work on it
/// as on a socket of [`net`](crate::net).
///
/// Each wait honours the read (write) timeout set on it, the enclosing
/// [`timeout`](crate::timeout()) scopes, and the cancellation of the task,
/// like every other pause.
///
/// The same calls exist for futures, polled with a [`Context`] on the
/// scheduler's thread (by [`block_on`](crate::block_on) in a task):
/// [`poll_read_ready`](Self::poll_read_ready),
/// [`poll_read_with`](Self::poll_read_with) and their write twins, whose
/// wakers the reactor wakes; with the `futures-io` or `tokio` feature,
/// `PausingIo<T>` implements those crates' `AsyncRead` and `AsyncWrite`
/// on them.
///
/// # Examples
///
/// A [`socket2::Socket`](https://docs.rs/socket2), set up with options std
/// has no call for, used like a yieldloop socket:
///
/// ```
/// use std::io::{Read, Write};
/// use socket2::{Domain, Socket, Type};
/// use yieldloop::io::PausingIo;
/// use yieldloop::net::TcpListener;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let listener = TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let server = yieldloop::spawn(move || -> std::io::Result<Vec<u8>> {
///         let (mut conn, _) = listener.accept()?;
///         let mut got = vec![0; 5];
///         conn.read_exact(&mut got)?;
///         conn.write_all(b"world")?;
///         Ok(got)
///     });
///     let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
///     socket.set_keepalive(true)?;
///     // A connect to this host completes at once; `PausingIo::new` then
///     // makes the socket non-blocking and registers it.
///     socket.connect(&addr.into())?;
///     let mut conn = PausingIo::new(socket)?;
///     conn.write_all(b"hello")?;
///     let mut reply = [0; 5];
///     // Only this task pauses until the reply comes.
///     conn.read_exact(&mut reply)?;
///     assert_eq!(&reply, b"world");
///     assert_eq!(server.join().unwrap()?, b"hello");
///     Ok(())
/// })
/// .unwrap();
/// ```
///
/// A descriptor from a C library, here both ends of a pipe from
/// `libc::pipe`, the read end waited on through a closure that makes the
/// library's own call:
///
/// ```
/// use std::io::Write;
/// use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
/// use std::time::Duration;
/// use yieldloop::io::PausingIo;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let mut fds = [0; 2];
///     // SAFETY: `fds` has room for the two descriptors `pipe` writes.
///     if unsafe { libc::pipe(fds.as_mut_ptr()) } == -1 {
///         return Err(std::io::Error::last_os_error());
///     }
///     // SAFETY: `pipe` just opened them, and nothing else owns them.
///     let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
///     let rx = PausingIo::new(rx)?;
///     let mut tx = PausingIo::new(std::fs::File::from(tx))?;
///     yieldloop::spawn(move || {
///         yieldloop::sleep(Duration::from_millis(20));
///         tx.write_all(b"ping").unwrap();
///     });
///     let mut buf = [0u8; 16];
///     // WouldBlock (an empty pipe) pauses this task until the write.
///     let n = rx.read_with(|fd| {
///         // SAFETY: `buf` is valid for `buf.len()` bytes of writing.
///         let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
///         if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
///     })?;
///     assert_eq!(&buf[..n], b"ping");
///     Ok(())
/// })
/// .unwrap();
/// ```
///
/// # Threads
///
/// Neither `Send` nor `Sync`: the registration lives in this thread's
/// scheduler, and only its tasks can wait on it. A type built on it
/// inherits that, and the compiler says why when it is moved to another
/// thread:
///
/// ```compile_fail,E0277
/// // A child's pipe is a `PausingIo` inside: it cannot go to a thread.
/// fn hand_over(out: yieldloop::process::ChildStdout) {
///     std::thread::spawn(move || drop(out));
/// }
/// ```
///
/// ```compile_fail,E0277
/// // Nor can a reference to one, which reads as well as the value.
/// fn share(stream: &yieldloop::net::TcpStream) {
///     std::thread::scope(|s| {
///         s.spawn(|| drop(stream));
///     });
/// }
/// ```
///
/// ```compile_fail,E0277
/// // Nor the type itself, whatever it wraps.
/// fn send(io: yieldloop::io::PausingIo<std::os::fd::OwnedFd>) {
///     std::thread::spawn(move || drop(io));
/// }
/// ```
pub struct PausingIo<T> {
    /// Declared first, so dropped first: the descriptor leaves the reactor
    /// while it is still open.
    reg: Registration,
    /// The wrapped value. Callers get at it only through
    /// [`get_ref`](Self::get_ref) and [`get_mut`](Self::get_mut), so that
    /// it stays the one the registration is for.
    io: T,
}

/// A source's registration with its scheduler, and the per-source state
/// of the waits on it. Dropping it deregisters the source.
#[derive(Debug)]
struct Registration {
    id: IoId,
    /// The scheduler the source is registered with.
    sched: SchedulerId,
    /// Deadline length for reads (`set_read_timeout`); `None`: wait forever.
    read_timeout: TimeoutSlot,
    /// Deadline length for writes and connects.
    write_timeout: TimeoutSlot,
    /// The source's read events (counted by the reactor).
    read_events: ReadEvents,
    /// Their mark when a stream read last came back short; see
    /// [`PausingIo::read_stream_with`].
    drained_at: ReadMarkSlot,
    /// Whether a short read means an empty socket (TCP streams).
    short_read_drains: bool,
    /// Keeps the source on this thread, where its registration is.
    _pinned: PinnedToSchedulerThread,
}

impl Registration {
    /// Whether a read of `len` bytes is known to find nothing: the last
    /// stream read came back short (emptying a TCP socket) and no read
    /// event, nor an end of stream, has come since.
    fn drained(&self, len: usize) -> bool {
        let events = self.read_events.mark();
        self.short_read_drains
            && len > 0
            && !events.closed()
            && self.drained_at.get() == Some(events)
    }

    /// Records how a stream read of up to `len` bytes ended, for
    /// [`drained`](Self::drained).
    fn note_stream_read(&self, r: &io::Result<usize>, len: usize) {
        self.drained_at.set(match r {
            Ok(n) if *n > 0 && *n < len => Some(self.read_events.mark()),
            _ => None,
        });
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Outside its scheduler (after `run` returned) there is nothing to
        // deregister from: closing the descriptor is enough.
        let _ = scheduler::try_with_scheduler(|s| {
            if s.id == self.sched {
                s.deregister(self.id);
            }
        });
    }
}

impl<T: AsFd> PausingIo<T> {
    /// Takes `io` over: switches its descriptor to non-blocking mode and
    /// registers it with the current thread's scheduler, for read and
    /// write readiness.
    ///
    /// Non-blocking mode belongs to the open file description, so it
    /// changes for every duplicate of the descriptor too (and stays after
    /// [`into_inner`](Self::into_inner)). The descriptor must support
    /// readiness polling (`epoll`/`kqueue`): sockets, pipes, FIFOs,
    /// terminals, `eventfd`s and the like do; a regular file does not
    /// (the kernel refuses it with `EPERM`; read files on the
    /// [blocking pool](crate::spawn_blocking)). A descriptor can be
    /// registered with one scheduler at a time.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::Unsupported`] outside [`run`](crate::run) (or a
    /// [`Runtime`](crate::Runtime) worker); the system's error if the mode
    /// cannot be set or the descriptor cannot be registered (already
    /// registered here: `EEXIST`).
    pub fn new(io: T) -> io::Result<PausingIo<T>> {
        if !scheduler::has_scheduler() {
            return Err(outside_run());
        }
        super::set_nonblocking(io.as_fd(), true)?;
        let fd = io.as_fd().as_raw_fd();
        PausingIo::register(io, &mut mio::unix::SourceFd(&fd), fd)
    }
}

impl<T: AsRawFd> PausingIo<T> {
    /// Registers `io`, which must be in non-blocking mode already (as every
    /// socket mio makes is), with the current thread's scheduler: for
    /// sockets made or accepted here, without the system calls that would
    /// find the mode already set.
    ///
    /// # Errors
    ///
    /// The registry's error, or `Unsupported` outside a scheduler.
    pub(crate) fn from_nonblocking(io: T) -> io::Result<Self> {
        let fd = io.as_raw_fd();
        PausingIo::register(io, &mut mio::unix::SourceFd(&fd), fd)
    }
}

impl<T: mio::event::Source> PausingIo<T> {
    /// Registers a non-blocking `io` that does not show its descriptor (a
    /// signal self-pipe): the reactor keeps a descriptor only to accept
    /// connections on it and to deregister it, and such a source accepts
    /// nothing and, never duplicated, leaves the poll when it closes.
    ///
    /// # Errors
    ///
    /// As for [`from_nonblocking`](PausingIo::from_nonblocking).
    pub(crate) fn without_fd(mut io: T) -> io::Result<Self> {
        // mio registers a source through `&mut`; `io` is moved in after.
        let reg = Registration::new(&mut io, -1)?;
        Ok(PausingIo { reg, io })
    }
}

impl Registration {
    fn new(source: &mut impl mio::event::Source, fd: RawFd) -> io::Result<Registration> {
        let (sched, (id, read_events)) =
            scheduler::try_with_scheduler(|s| s.register(source, fd).map(|r| (s.id, r)))
                .unwrap_or_else(|| Err(outside_run()))?;
        Ok(Registration {
            id,
            sched,
            read_timeout: TimeoutSlot::new(),
            write_timeout: TimeoutSlot::new(),
            read_events,
            drained_at: ReadMarkSlot::new(),
            short_read_drains: false,
            _pinned: PinnedToSchedulerThread::NEW,
        })
    }

    /// An error unless the caller is a task of the scheduler the source is
    /// registered with, the only tasks that can wait on it (the calls that
    /// retry leave this to the scheduler, which refuses an unknown id).
    fn check_home(&self) -> io::Result<()> {
        let home = crate::scheduler::coroutine::in_task()
            && scheduler::try_with_scheduler(|s| s.id) == Some(self.sched);
        if home {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "yieldloop: a socket, pipe or descriptor can only be waited on in a task of the \
             yieldloop::run (or Runtime worker) that created it",
        ))
    }

    /// For a future: whether to try the operation in one direction now
    /// (`Ready(Ok)`), having filed `cx`'s waker if not (`Pending`).
    /// `would_block` says the last try just reported `WouldBlock`.
    fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        write: bool,
        would_block: bool,
    ) -> Poll<io::Result<()>> {
        let polled = scheduler::try_with_scheduler(|s| {
            if s.id != self.sched {
                return None;
            }
            Some(s.poll_io_ready(self.id, write, would_block, cx.waker()))
        });
        match polled.flatten() {
            Some(Ok(true)) => Poll::Ready(Ok(())),
            Some(Ok(false)) => Poll::Pending,
            Some(Err(e)) => Poll::Ready(Err(e)),
            None => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "yieldloop: a socket, pipe or descriptor can only be polled on the thread of \
                 the yieldloop::run (or Runtime worker) that created it, while it runs",
            ))),
        }
    }
}

impl<T> PausingIo<T> {
    fn register(io: T, source: &mut impl mio::event::Source, fd: RawFd) -> io::Result<Self> {
        let reg = Registration::new(source, fd)?;
        Ok(PausingIo { reg, io })
    }

    /// The wrapped value, to call what needs no waiting (socket options,
    /// addresses) or to make a call that must not pause.
    #[inline]
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// The wrapped value, mutably. It must not be replaced by another
    /// (`mem::swap`), nor its descriptor closed: the registration is for
    /// the descriptor it had.
    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.io
    }

    /// Deregisters the descriptor and hands the value back, still in
    /// non-blocking mode. Tasks waiting on it are woken with
    /// [`io::ErrorKind::NotConnected`], and a future waiting on it is woken
    /// to find the same.
    pub fn into_inner(self) -> T {
        let PausingIo { reg, io } = self;
        drop(reg);
        io
    }

    /// Declares that a read returning less than asked for empties the
    /// socket's receive queue, as on TCP streams, so that
    /// [`read_stream_with`](Self::read_stream_with) may skip the read after it.
    /// (Unix streams do not qualify: a read stops early at a change of the
    /// sender's credentials or at passed descriptors, with data still
    /// queued.)
    pub(crate) fn short_read_drains(mut self) -> Self {
        self.reg.short_read_drains = true;
        self
    }

    /// The id the descriptor is registered under, for hand-written
    /// [`Op::ReadReady`](crate::raw::Op::ReadReady) and
    /// [`Op::WriteReady`](crate::raw::Op::WriteReady) waits and for
    /// [`Select`](crate::sync::Select).
    #[inline]
    pub fn io_id(&self) -> IoId {
        self.reg.id
    }

    /// The read timeout: how long a read waits for readiness before it
    /// fails with [`io::ErrorKind::TimedOut`]; `None` waits for good.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.reg.read_timeout.get()
    }

    /// The write timeout, like [`read_timeout`](Self::read_timeout).
    pub fn write_timeout(&self) -> Option<Duration> {
        self.reg.write_timeout.get()
    }

    /// Bounds each wait for read readiness (of [`read_with`](Self::read_with),
    /// [`readable`](Self::readable) and `Read`) by `timeout`, like
    /// `std::net::TcpStream::set_read_timeout`; `None` waits for good.
    /// An enclosing [`timeout`](crate::timeout()) scope still applies.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a zero duration, as in std.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        check_timeout(timeout)?;
        self.reg.read_timeout.set(timeout);
        Ok(())
    }

    /// Bounds each wait for write readiness, like
    /// [`set_read_timeout`](Self::set_read_timeout).
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a zero duration, as in std.
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        check_timeout(timeout)?;
        self.reg.write_timeout.set(timeout);
        Ok(())
    }

    /// Calls `f` until it returns anything but
    /// [`WouldBlock`](io::ErrorKind::WouldBlock), pausing the task until
    /// the descriptor is readable in between (an `Interrupted` call is
    /// simply made again).
    ///
    /// `f` makes the non-blocking call, reporting "nothing yet" as
    /// `WouldBlock` (as std's calls do with `EAGAIN`). Readiness is an
    /// edge: the task only waits after `f` has said `WouldBlock`, and `f`
    /// must say so only when the descriptor truly had nothing, or the wait
    /// may be for an event that already came.
    ///
    /// # Errors
    ///
    /// `f`'s error; [`io::ErrorKind::TimedOut`] when the
    /// [read timeout](Self::set_read_timeout) or an enclosing
    /// [`timeout`](crate::timeout()) passes; `Interrupted` while the task is
    /// cancelled; `Unsupported` when it has to wait outside a task;
    /// `NotConnected` in a task of another scheduler.
    #[inline]
    pub fn read_with<R>(&self, mut f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let deadline = deadline_in(self.reg.read_timeout.get());
        retry(|| f(&self.io), self.reg.id, deadline, Op::ReadReady)
    }

    /// Like [`read_with`](Self::read_with), for a call that needs `&mut T`.
    ///
    /// # Errors
    ///
    /// As for `read_with`.
    #[inline]
    pub fn read_with_mut<R>(
        &mut self,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let deadline = deadline_in(self.reg.read_timeout.get());
        let io = &mut self.io;
        retry(|| f(io), self.reg.id, deadline, Op::ReadReady)
    }

    /// Like [`read_with`](Self::read_with), waiting for write readiness.
    ///
    /// # Errors
    ///
    /// As for `read_with`, with the [write timeout](Self::set_write_timeout).
    #[inline]
    pub fn write_with<R>(&self, mut f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let deadline = deadline_in(self.reg.write_timeout.get());
        retry(|| f(&self.io), self.reg.id, deadline, Op::WriteReady)
    }

    /// Like [`write_with`](Self::write_with), for a call that needs `&mut T`.
    ///
    /// # Errors
    ///
    /// As for `write_with`.
    #[inline]
    pub fn write_with_mut<R>(
        &mut self,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let deadline = deadline_in(self.reg.write_timeout.get());
        let io = &mut self.io;
        retry(|| f(io), self.reg.id, deadline, Op::WriteReady)
    }

    /// A read of up to `len` bytes from a stream socket, like
    /// [`read_with`](Self::read_with) but without the read that is bound to
    /// fail.
    ///
    /// A TCP read that returns fewer bytes than asked for has emptied the
    /// socket's receive queue, and with edge-triggered readiness any data
    /// arriving after it raises a new read event. So when the last read was
    /// short and no read event has come since, the next read would only say
    /// `WouldBlock`: the task waits for readiness straight away and saves
    /// that system call (in a request-response exchange, one per request).
    /// An end of stream or error the kernel has already reported is not
    /// consumed by a read that returns data, so once an event has carried
    /// one, every read is tried.
    #[inline]
    pub(crate) fn read_stream_with(
        &self,
        len: usize,
        mut f: impl FnMut(&T) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let reg = &self.reg;
        let deadline = deadline_in(reg.read_timeout.get());
        if reg.drained(len) {
            suspend_io(Op::ReadReady(reg.id, deadline))?;
        }
        let r = retry(|| f(&self.io), reg.id, deadline, Op::ReadReady);
        reg.note_stream_read(&r, len);
        r
    }

    /// Pauses the calling task until the descriptor reports read readiness,
    /// or the [read timeout](Self::set_read_timeout) passes. Readiness is
    /// an edge: wait only once a call has said `WouldBlock` (or found
    /// nothing), or the wait may be for an event that already came.
    /// [`read_with`](Self::read_with) does both in one call.
    ///
    /// # Errors
    ///
    /// `Unsupported` outside a task of the scheduler the descriptor is
    /// registered with; `TimedOut`; `Interrupted` while the task is
    /// cancelled.
    pub fn readable(&self) -> io::Result<()> {
        self.reg.check_home()?;
        suspend_io(Op::ReadReady(
            self.reg.id,
            deadline_in(self.reg.read_timeout.get()),
        ))
    }

    /// Pauses the calling task until the descriptor reports write
    /// readiness, like [`readable`](Self::readable).
    ///
    /// # Errors
    ///
    /// As for `readable`, with the [write timeout](Self::set_write_timeout).
    pub fn writable(&self) -> io::Result<()> {
        self.reg.check_home()?;
        suspend_io(Op::WriteReady(
            self.reg.id,
            deadline_in(self.reg.write_timeout.get()),
        ))
    }

    /// For a future: `Ready(Ok)` when a read is worth trying, that is when
    /// a read event has come since a read made through
    /// [`poll_read_with`](Self::poll_read_with) (or `AsyncRead`) last
    /// said `WouldBlock` (and at first); otherwise files `cx`'s waker, for
    /// the reactor to wake at the next read event, and returns `Pending`.
    ///
    /// It only looks: a read made any other way that says `WouldBlock`
    /// does not count, and this keeps answering `Ready`. Make the read
    /// through [`poll_read_with`](Self::poll_read_with), which tells the
    /// reactor. Readiness may be spurious (another reader took the data).
    ///
    /// The descriptor keeps one read waker: a poll from another future
    /// replaces it, as with tokio's `AsyncFd`. A task may meanwhile wait on
    /// the same descriptor in blocking style; both are woken by an event.
    /// Poll it on the scheduler's thread while [`run`](crate::run) runs,
    /// from [`block_on`](crate::block_on) in a task: a future polled by
    /// another executor on this thread would block the thread, and the
    /// loop that delivers events with it.
    ///
    /// # Errors
    ///
    /// `Unsupported` when polled outside the `run` (or worker) the
    /// descriptor was registered with, or after it returned.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready_spending(&self.reg, cx, false)
    }

    /// Like [`poll_read_ready`](Self::poll_read_ready), for writes.
    ///
    /// # Errors
    ///
    /// As for `poll_read_ready`.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        poll_ready_spending(&self.reg, cx, true)
    }

    /// For a future: calls `f` once the descriptor is worth trying for a
    /// read, until it returns anything but `WouldBlock`, which it returns;
    /// after a `WouldBlock`, files `cx`'s waker with the reactor and
    /// returns `Pending`, to be polled again at the next read event. The
    /// poll-style [`read_with`](Self::read_with), on which `AsyncRead` is
    /// built.
    ///
    /// # Errors
    ///
    /// `f`'s error, or as for [`poll_read_ready`](Self::poll_read_ready).
    ///
    /// # Examples
    ///
    /// A hand-written future reading a pipe, driven by
    /// [`block_on`](crate::block_on) while another task writes to it:
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use yieldloop::io::PausingIo;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let (a, mut b) = (PausingIo::new(a)?, PausingIo::new(b)?);
    ///     yieldloop::spawn(move || b.write_all(b"hi").unwrap());
    ///     let mut buf = [0u8; 8];
    ///     let n = yieldloop::block_on(std::future::poll_fn(|cx| {
    ///         a.poll_read_with(cx, |mut s| s.read(&mut buf))
    ///     }))?;
    ///     assert_eq!(&buf[..n], b"hi");
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn poll_read_with<R>(
        &self,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        poll_retry(&self.reg, cx, false, || f(&self.io))
    }

    /// Like [`poll_read_with`](Self::poll_read_with), for a call that
    /// needs `&mut T`.
    ///
    /// # Errors
    ///
    /// As for `poll_read_with`.
    pub fn poll_read_with_mut<R>(
        &mut self,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let io = &mut self.io;
        poll_retry(&self.reg, cx, false, || f(io))
    }

    /// [`poll_read_with`](Self::poll_read_with) for a read of up to `len`
    /// bytes from a stream, without the read bound to fail after a short
    /// one (see [`read_stream_with`](Self::read_stream_with)): what
    /// `AsyncRead` uses.
    #[cfg(any(feature = "futures-io", feature = "tokio"))]
    pub(crate) fn poll_read_stream_with(
        &self,
        cx: &mut Context<'_>,
        len: usize,
        mut f: impl FnMut(&T) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        poll_read_stream(&self.reg, cx, len, || f(&self.io))
    }

    /// [`poll_read_stream_with`](Self::poll_read_stream_with) for a read
    /// that needs `&mut T`.
    #[cfg(any(feature = "futures-io", feature = "tokio"))]
    pub(crate) fn poll_read_stream_with_mut(
        &mut self,
        cx: &mut Context<'_>,
        len: usize,
        mut f: impl FnMut(&mut T) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let io = &mut self.io;
        poll_read_stream(&self.reg, cx, len, || f(io))
    }

    /// Like [`poll_read_with`](Self::poll_read_with), for writes.
    ///
    /// # Errors
    ///
    /// As for `poll_read_with`.
    pub fn poll_write_with<R>(
        &self,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        poll_retry(&self.reg, cx, true, || f(&self.io))
    }

    /// Like [`poll_write_with`](Self::poll_write_with), for a call that
    /// needs `&mut T`.
    ///
    /// # Errors
    ///
    /// As for `poll_read_with`.
    pub fn poll_write_with_mut<R>(
        &mut self,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let io = &mut self.io;
        poll_retry(&self.reg, cx, true, || f(io))
    }
}

/// Runs `f` until it does not report `WouldBlock`, pausing in `op(id,
/// deadline)` in between; first spends a unit of the task's budget (see
/// `coop`), letting the other tasks run before `f` when it is spent.
#[inline]
fn retry<R>(
    mut f: impl FnMut() -> io::Result<R>,
    id: IoId,
    deadline: Option<Instant>,
    op: impl Fn(IoId, Option<Instant>) -> Op,
) -> io::Result<R> {
    coop::proceed();
    loop {
        match coroutine::own_io(&mut f) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                suspend_io(op(id, deadline))?;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// `reg`'s readiness for a future, as an operation of the task's budget:
/// `Pending` when the budget is spent, one unit spent when `Ready`.
fn poll_ready_spending(
    reg: &Registration,
    cx: &mut Context<'_>,
    write: bool,
) -> Poll<io::Result<()>> {
    std::task::ready!(coop::poll_proceed(cx));
    let ready = std::task::ready!(reg.poll_ready(cx, write, false));
    coop::spent_one();
    Poll::Ready(ready)
}

/// The poll-style [`retry`]: tries `f` while the reactor says it is worth
/// it, and files the waker after a `WouldBlock`.
fn poll_retry<R>(
    reg: &Registration,
    cx: &mut Context<'_>,
    write: bool,
    f: impl FnMut() -> io::Result<R>,
) -> Poll<io::Result<R>> {
    poll_retry_from(reg, cx, write, false, f)
}

/// The poll-style [`PausingIo::read_stream_with`]: a read of up to `len`
/// bytes, which goes straight to filing the waker when the last read was
/// short and no read event has come since (the read would only say
/// `WouldBlock`).
#[cfg(any(feature = "futures-io", feature = "tokio"))]
fn poll_read_stream(
    reg: &Registration,
    cx: &mut Context<'_>,
    len: usize,
    f: impl FnMut() -> io::Result<usize>,
) -> Poll<io::Result<usize>> {
    let polled = poll_retry_from(reg, cx, false, reg.drained(len), f);
    if let Poll::Ready(r) = &polled {
        reg.note_stream_read(r, len);
    }
    polled
}

/// [`poll_retry`], told whether `f` is already known to find nothing
/// (`would_block`), in which case the waker is filed without trying it.
fn poll_retry_from<R>(
    reg: &Registration,
    cx: &mut Context<'_>,
    write: bool,
    mut would_block: bool,
    mut f: impl FnMut() -> io::Result<R>,
) -> Poll<io::Result<R>> {
    // A spent budget answers `Pending` (and wakes the task's waker at
    // once) before anything is tried.
    std::task::ready!(coop::poll_proceed(cx));
    loop {
        match reg.poll_ready(cx, write, would_block) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
        match coroutine::own_io(&mut f) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => would_block = true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => would_block = false,
            r => {
                coop::spent_one();
                return Poll::Ready(r);
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for PausingIo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PausingIo")
            .field("io", &self.io)
            .field("id", &self.reg.id)
            .finish()
    }
}

impl<T: AsFd> AsFd for PausingIo<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.as_fd()
    }
}

impl<T: AsRawFd> AsRawFd for PausingIo<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

/// Reads pause the task while `T` has nothing to read.
impl<T: Read> Read for PausingIo<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with_mut(|io| io.read(buf))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.read_with_mut(|io| io.read_vectored(bufs))
    }
}

/// Reads through a shared reference, where `T` reads that way (sockets,
/// files, pipes), so that one task can read while another writes.
impl<T> Read for &PausingIo<T>
where
    for<'a> &'a T: Read,
{
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(|mut io| io.read(buf))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.read_with(|mut io| io.read_vectored(bufs))
    }
}

/// Writes pause the task while `T` cannot take more.
impl<T: Write> Write for PausingIo<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_with_mut(|io| io.write(buf))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.write_with_mut(|io| io.write_vectored(bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_with_mut(|io| io.flush())
    }
}

/// Writes through a shared reference, where `T` writes that way.
impl<T> Write for &PausingIo<T>
where
    for<'a> &'a T: Write,
{
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_with(|mut io| io.write(buf))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.write_with(|mut io| io.write_vectored(bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_with(|mut io| io.flush())
    }
}

/// A `Cell<Option<Duration>>` in effect, made of relaxed atomics (plain
/// loads and stores, as a `Cell`'s) so that nothing in a [`PausingIo`] but
/// its marker keeps it from being `Sync`: sharing a socket with another
/// thread then fails with an error that names the marker, not a `Cell`.
#[derive(Debug)]
struct TimeoutSlot {
    /// The whole seconds.
    secs: AtomicU64,
    /// The nanoseconds, or [`NO_TIMEOUT`].
    nanos: AtomicU32,
}

/// What [`TimeoutSlot::nanos`] holds for no timeout: no `Duration` has as
/// many nanoseconds past its whole seconds.
const NO_TIMEOUT: u32 = u32::MAX;

impl TimeoutSlot {
    fn new() -> TimeoutSlot {
        TimeoutSlot {
            secs: AtomicU64::new(0),
            nanos: AtomicU32::new(NO_TIMEOUT),
        }
    }

    #[inline]
    fn get(&self) -> Option<Duration> {
        match self.nanos.load(Ordering::Relaxed) {
            NO_TIMEOUT => None,
            nanos => Some(Duration::new(self.secs.load(Ordering::Relaxed), nanos)),
        }
    }

    fn set(&self, t: Option<Duration>) {
        // Only the owning thread reads or writes: no torn pair is seen.
        let (secs, nanos) = t.map_or((0, NO_TIMEOUT), |t| (t.as_secs(), t.subsec_nanos()));
        self.secs.store(secs, Ordering::Relaxed);
        self.nanos.store(nanos, Ordering::Relaxed);
    }
}

/// The deadline a timeout of `t` from now gives, `None` for no timeout.
#[inline]
pub(crate) fn deadline_in(t: Option<Duration>) -> Option<Instant> {
    t.map(crate::scheduler::timers::deadline_after)
}

fn check_timeout(t: Option<Duration>) -> io::Result<()> {
    if t == Some(Duration::ZERO) {
        // The same rule as std's sockets.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot set a 0 duration timeout",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::pinned::tests::{AmbiguousIfSend, AmbiguousIfSync};
    use super::PausingIo;

    /// mio's socket and `OwnedFd` are `Send` and `Sync`: only the wrapper
    /// makes them neither (this fails to build if it ever is either).
    #[test]
    fn a_registered_source_stays_on_its_thread() {
        <PausingIo<mio::net::TcpStream> as AmbiguousIfSend<_>>::not_send();
        <PausingIo<mio::net::TcpStream> as AmbiguousIfSync<_>>::not_sync();
        <PausingIo<std::os::fd::OwnedFd> as AmbiguousIfSend<_>>::not_send();
        <PausingIo<std::os::fd::OwnedFd> as AmbiguousIfSync<_>>::not_sync();
    }

    #[test]
    fn a_timeout_slot_keeps_what_it_is_given() {
        let slot = super::TimeoutSlot::new();
        assert_eq!(slot.get(), None);
        for t in [
            Duration::from_nanos(1),
            Duration::from_millis(1500),
            Duration::new(u64::MAX, 999_999_999),
        ] {
            slot.set(Some(t));
            assert_eq!(slot.get(), Some(t));
        }
        slot.set(None);
        assert_eq!(slot.get(), None);
    }
}
