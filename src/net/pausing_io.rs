//! [`PausingIo`]: a non-blocking mio source registered with the current
//! scheduler, whose calls pause the task instead of returning
//! `WouldBlock`: the "try, and on `WouldBlock` wait for readiness" loop
//! every socket uses.

use std::cell::Cell;
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::protocol::{IoId, Op, SchedulerId};
use crate::reactor::{ReadEvents, ReadMark};
use crate::scheduler;

/// Owns a non-blocking mio source and its registration, and runs calls on
/// it so that a call that would block pauses the task until the source is
/// ready, then tries again.
///
/// `!Send`: the registration lives in this thread's scheduler.
#[derive(Debug)]
pub(crate) struct PausingIo<S: mio::event::Source + AsRawFd> {
    pub(crate) io: S,
    id: IoId,
    /// The scheduler the source is registered with.
    sched: SchedulerId,
    /// Deadline length for reads (`set_read_timeout`); `None`: wait forever.
    read_timeout: Cell<Option<Duration>>,
    /// Deadline length for writes and connects.
    write_timeout: Cell<Option<Duration>>,
    /// The source's read events (counted by the reactor).
    read_events: ReadEvents,
    /// Their mark when a stream read last came back short; see
    /// [`Self::do_stream_read`].
    drained_at: Cell<Option<ReadMark>>,
    /// Whether a short read means an empty socket (TCP streams).
    short_read_drains: bool,
    _not_send: PhantomData<*const ()>,
}

impl<S: mio::event::Source + AsRawFd> PausingIo<S> {
    /// Registers `io` with the current thread's scheduler.
    ///
    /// # Errors
    ///
    /// The registry's error, or `Unsupported` outside a scheduler.
    pub(crate) fn new(mut io: S) -> io::Result<Self> {
        let fd = io.as_raw_fd();
        let (sched, (id, read_events)) =
            scheduler::try_with_scheduler(|s| s.register(&mut io, fd).map(|r| (s.id, r)))
                .unwrap_or_else(|| Err(outside_run()))?;
        Ok(PausingIo {
            io,
            id,
            sched,
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
            read_events,
            drained_at: Cell::new(None),
            short_read_drains: false,
            _not_send: PhantomData,
        })
    }

    /// Declares that a read returning less than asked for empties the
    /// socket's receive queue, as on TCP streams, so that
    /// [`do_stream_read`](Self::do_stream_read) may skip the read after it.
    /// (Unix streams do not qualify: a read stops early at a change of the
    /// sender's credentials or at passed descriptors, with data still
    /// queued.)
    pub(crate) fn short_read_drains(mut self) -> Self {
        self.short_read_drains = true;
        self
    }

    /// The id the source is registered under.
    pub(crate) fn id(&self) -> IoId {
        self.id
    }

    pub(crate) fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout.get()
    }

    pub(crate) fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout.get()
    }

    /// Sets a timeout like `std::net::TcpStream::set_read_timeout`.
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        self.read_timeout.set(t);
        Ok(())
    }

    /// Sets a timeout like `std::net::TcpStream::set_write_timeout`.
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        self.write_timeout.set(t);
        Ok(())
    }

    /// Runs `f` until it does not report `WouldBlock`, pausing the task for
    /// read readiness in between.
    pub(crate) fn do_read<R>(&self, f: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        self.do_io(f, self.read_timeout.get(), Op::ReadReady)
    }

    /// A read of up to `len` bytes from a stream socket, like
    /// [`do_read`](Self::do_read) but without the read that is bound to
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
    pub(crate) fn do_stream_read(
        &self,
        len: usize,
        mut f: impl FnMut(&S) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let events = self.read_events.mark();
        let empty = self.short_read_drains
            && len > 0
            && !events.closed()
            && self.drained_at.get() == Some(events);
        let deadline = deadline_in(self.read_timeout.get());
        if empty {
            crate::suspend::suspend(Op::ReadReady(self.id, deadline)).into_io()?;
        }
        let r = self.retry(&mut f, deadline, Op::ReadReady);
        self.drained_at.set(match r {
            Ok(n) if n > 0 && n < len => Some(self.read_events.mark()),
            _ => None,
        });
        r
    }

    /// Like [`do_read`](Self::do_read), for write readiness.
    pub(crate) fn do_write<R>(&self, f: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        self.do_io(f, self.write_timeout.get(), Op::WriteReady)
    }

    fn do_io<R>(
        &self,
        mut f: impl FnMut(&S) -> io::Result<R>,
        timeout: Option<Duration>,
        op: impl Fn(IoId, Option<Instant>) -> Op,
    ) -> io::Result<R> {
        self.retry(&mut f, deadline_in(timeout), op)
    }

    /// Runs `f` until it does not report `WouldBlock`, pausing in `op`
    /// (with `deadline`) in between.
    fn retry<R>(
        &self,
        f: &mut impl FnMut(&S) -> io::Result<R>,
        deadline: Option<Instant>,
        op: impl Fn(IoId, Option<Instant>) -> Op,
    ) -> io::Result<R> {
        loop {
            match f(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::suspend::suspend(op(self.id, deadline)).into_io()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
}

/// The error of a socket call made where it cannot work: outside
/// `yieldloop::run`, with no scheduler to register the socket with, or,
/// for a call that must pause, outside a task.
pub(crate) fn outside_run() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "yieldloop: sockets can only be created inside yieldloop::run",
    )
}

/// The deadline a timeout of `t` from now gives, `None` for no timeout.
pub(crate) fn deadline_in(t: Option<Duration>) -> Option<Instant> {
    t.map(crate::time::deadline_after)
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

impl<S: mio::event::Source + AsRawFd> Drop for PausingIo<S> {
    fn drop(&mut self) {
        // Outside its scheduler (after `run` returned) there is nothing to
        // deregister from: closing the descriptor is enough.
        let _ = scheduler::try_with_scheduler(|s| {
            if s.id == self.sched {
                s.deregister(self.id, &mut self.io);
            }
        });
    }
}
