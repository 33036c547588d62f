//! [`PausingIo`]: a non-blocking mio source registered with the current
//! scheduler, whose calls pause the task instead of returning
//! `WouldBlock`: the "try, and on `WouldBlock` wait for readiness" loop
//! every socket, pipe and signal listener uses.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{outside_run, PinnedToSchedulerThread};
use crate::protocol::{IoId, Op, SchedulerId};
use crate::reactor::{ReadEvents, ReadMarkSlot};
use crate::scheduler;
use crate::suspend::suspend;

/// Owns a non-blocking mio source and its registration, and runs calls on
/// it so that a call that would block pauses the task until the source is
/// ready, then tries again.
///
/// Neither `Send` nor `Sync` ([`PinnedToSchedulerThread`]): the
/// registration lives in this thread's scheduler. A type built on it
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
#[derive(Debug)]
pub(crate) struct PausingIo<S: mio::event::Source> {
    /// The source itself. Callers get at it only through
    /// [`get_ref`](Self::get_ref) and [`get_mut`](Self::get_mut), so that
    /// it stays the source the registration is for.
    io: S,
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
    /// [`Self::read_stream_with`].
    drained_at: ReadMarkSlot,
    /// Whether a short read means an empty socket (TCP streams).
    short_read_drains: bool,
    /// Keeps the source on this thread, where its registration is.
    _pinned: PinnedToSchedulerThread,
}

impl<S: mio::event::Source + AsRawFd> PausingIo<S> {
    /// Registers `io`, which must be in non-blocking mode already (as every
    /// socket mio makes is), with the current thread's scheduler.
    ///
    /// # Errors
    ///
    /// The registry's error, or `Unsupported` outside a scheduler.
    pub(crate) fn new(io: S) -> io::Result<Self> {
        let fd = io.as_raw_fd();
        Self::register(io, fd)
    }
}

impl<S: mio::event::Source + AsFd + AsRawFd> PausingIo<S> {
    /// Switches `io` to non-blocking mode, then registers it as
    /// [`new`](PausingIo::new) does: for a descriptor from elsewhere (a
    /// std pipe or socket) whose mode is not known.
    ///
    /// # Errors
    ///
    /// As for `new`, and the system's error if the mode cannot be set.
    pub(crate) fn new_nonblocking(io: S) -> io::Result<Self> {
        super::set_nonblocking(io.as_fd(), true)?;
        Self::new(io)
    }
}

impl<S: mio::event::Source> PausingIo<S> {
    /// Registers a non-blocking `io` that does not show its descriptor (a
    /// signal self-pipe): the reactor keeps a descriptor only to accept
    /// connections on it, which such a source never has.
    ///
    /// # Errors
    ///
    /// As for [`new`](PausingIo::new).
    pub(crate) fn without_fd(io: S) -> io::Result<Self> {
        Self::register(io, -1)
    }

    fn register(mut io: S, fd: RawFd) -> io::Result<Self> {
        let (sched, (id, read_events)) =
            scheduler::try_with_scheduler(|s| s.register(&mut io, fd).map(|r| (s.id, r)))
                .unwrap_or_else(|| Err(outside_run()))?;
        Ok(PausingIo {
            io,
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

    /// The source.
    #[inline]
    pub(crate) fn get_ref(&self) -> &S {
        &self.io
    }

    /// The source, to call what needs it mutably. It must not be replaced
    /// by another source (`mem::swap`): the registration would still be
    /// for the old one.
    pub(crate) fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }

    /// Declares that a read returning less than asked for empties the
    /// socket's receive queue, as on TCP streams, so that
    /// [`read_stream_with`](Self::read_stream_with) may skip the read after it.
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
    pub(crate) fn read_with<R>(&self, f: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        self.do_io(f, self.read_timeout.get(), Op::ReadReady)
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
    pub(crate) fn read_stream_with(
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
            suspend(Op::ReadReady(self.id, deadline)).into_io()?;
        }
        let r = self.retry(&mut f, deadline, Op::ReadReady);
        self.drained_at.set(match r {
            Ok(n) if n > 0 && n < len => Some(self.read_events.mark()),
            _ => None,
        });
        r
    }

    /// Like [`read_with`](Self::read_with), for write readiness.
    pub(crate) fn write_with<R>(&self, f: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
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
                    suspend(op(self.id, deadline)).into_io()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Pauses the calling task until the source reports read readiness, or
    /// the read timeout passes. Readiness is an edge: wait only once a call
    /// has said `WouldBlock` (or found nothing), or the wait may be for an
    /// event that already came.
    ///
    /// # Errors
    ///
    /// `Unsupported` outside a task of the scheduler the source is
    /// registered with; `TimedOut`; `Interrupted` while the task is
    /// cancelled.
    pub(crate) fn readable(&self) -> io::Result<()> {
        self.check_home()?;
        suspend(Op::ReadReady(self.id, deadline_in(self.read_timeout.get()))).into_io()
    }

    /// An error unless the caller is a task of the scheduler the source is
    /// registered with, the only tasks that can wait on it (the calls that
    /// retry leave this to the scheduler, which refuses an unknown id).
    fn check_home(&self) -> io::Result<()> {
        let home =
            crate::task::in_task() && scheduler::try_with_scheduler(|s| s.id) == Some(self.sched);
        if home {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "yieldloop: a socket, pipe or signal listener can only be waited on in a task of \
             the yieldloop::run (or Runtime worker) that created it",
        ))
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
pub(crate) fn deadline_in(t: Option<Duration>) -> Option<Instant> {
    t.map(crate::timer::deadline_after)
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

impl<S: mio::event::Source> Drop for PausingIo<S> {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::pinned::tests::{AmbiguousIfSend, AmbiguousIfSync};
    use super::PausingIo;

    /// mio's socket is `Send` and `Sync`: only the wrapper makes it
    /// neither (this fails to build if it ever is either).
    #[test]
    fn a_registered_source_stays_on_its_thread() {
        <PausingIo<mio::net::TcpStream> as AmbiguousIfSend<_>>::not_send();
        <PausingIo<mio::net::TcpStream> as AmbiguousIfSync<_>>::not_sync();
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
