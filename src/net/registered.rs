//! A mio source registered with the current scheduler, and the
//! "try, and on `WouldBlock` wait for readiness" loop every socket uses.

use std::cell::Cell;
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::context;
use crate::op::{IoId, Op};

/// Owns a non-blocking mio source and its registration.
///
/// `!Send`: the registration lives in this thread's scheduler.
#[derive(Debug)]
pub(crate) struct Registered<S: mio::event::Source + AsRawFd> {
    pub(crate) io: S,
    id: IoId,
    /// The scheduler the source is registered with.
    sched: u64,
    /// Deadline length for reads (`set_read_timeout`); `None`: wait forever.
    read_timeout: Cell<Option<Duration>>,
    /// Deadline length for writes and connects.
    write_timeout: Cell<Option<Duration>>,
    _not_send: PhantomData<*const ()>,
}

impl<S: mio::event::Source + AsRawFd> Registered<S> {
    /// Registers `io` with the current thread's scheduler.
    ///
    /// # Errors
    ///
    /// The registry's error, or `Unsupported` outside a scheduler.
    pub(crate) fn new(mut io: S) -> io::Result<Self> {
        let fd = io.as_raw_fd();
        let (sched, id) =
            context::try_with_scheduler(|s| s.register(&mut io, fd).map(|id| (s.id, id)))
                .unwrap_or_else(|| {
                    Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "yieldloop: sockets can only be created inside yieldloop::run",
                    ))
                })?;
        Ok(Registered {
            io,
            id,
            sched,
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
            _not_send: PhantomData,
        })
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
        let deadline = timeout.map(|t| {
            Instant::now()
                .checked_add(t)
                .unwrap_or_else(crate::time::far_future)
        });
        loop {
            match f(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::suspend(op(self.id, deadline)).into_io()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
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

impl<S: mio::event::Source + AsRawFd> Drop for Registered<S> {
    fn drop(&mut self) {
        // Outside its scheduler (after `run` returned) there is nothing to
        // deregister from: closing the descriptor is enough.
        let _ = context::try_with_scheduler(|s| {
            if s.id == self.sched {
                s.deregister(self.id, &mut self.io);
            }
        });
    }
}
