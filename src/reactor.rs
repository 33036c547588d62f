//! The reactor: a `mio::Poll` and the table of registered I/O sources.
//!
//! Each socket registers once, when it is created, for both read and write
//! readiness in edge-triggered mode; the source's slot in the table is its
//! `mio::Token`. A task that hits `WouldBlock` parks itself in the slot's
//! reader or writer list; an event for the token wakes that list. Because the
//! registration is edge-triggered, a task only ever waits *after* an attempt
//! returned `WouldBlock`, so no edge is missed: data that arrives after the
//! failed attempt raises a new event.

use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::op::IoId;
use crate::park::RemoteQueue;
use crate::task::Waiter;
use crate::timerfd::TimerFd;

/// Deadlines further off than this are waited for with epoll's timeout.
const FAR: Duration = Duration::from_millis(5);
/// How much earlier than a far deadline epoll's timeout ends (mio rounds
/// it up to whole milliseconds, so this keeps the wake-up before it).
const EARLY: Duration = Duration::from_millis(2);

/// Serial numbers of registrations, unique in the process.
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Token of the precise-timer `timerfd`; slab keys never come near it.
pub(crate) const TIMER_KEY: usize = usize::MAX - 1;
/// Token of the cross-thread `mio::Waker`.
pub(crate) const WAKER_KEY: usize = usize::MAX - 2;

/// The bit of [`Source::read_events`] that says the end of the stream (or
/// an error) has been reported.
pub(crate) const READ_CLOSED: u64 = 1 << 63;

/// Which way a task waits on a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Readable (or hung up, or failed).
    Read,
    /// Readable listener: the scheduler accepts for the task.
    Accept,
    /// Writable (or hung up, or failed).
    Write,
}

/// One registered source.
#[derive(Debug)]
pub(crate) struct Source {
    serial: u64,
    /// The file descriptor, for `accept`s the scheduler performs.
    pub(crate) fd: RawFd,
    /// Tasks waiting to read or accept.
    pub(crate) readers: Vec<(Waiter, Dir)>,
    /// Tasks waiting to write.
    pub(crate) writers: Vec<Waiter>,
    /// How many read events the source has had, shared with its socket: a
    /// stream whose last read came back short (so it emptied the socket)
    /// and that has had no read event since knows the next read would find
    /// nothing, and waits without trying it. The [`READ_CLOSED`] bit stays
    /// set once an event reported the end of the stream or an error.
    pub(crate) read_events: Rc<Cell<u64>>,
}

/// Readiness of one source, as reported by one event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readiness {
    pub(crate) key: usize,
    pub(crate) read: bool,
    pub(crate) write: bool,
    /// The peer closed its side, or the socket failed.
    pub(crate) read_closed: bool,
}

/// The poller and the sources registered with it.
#[derive(Debug)]
pub(crate) struct Reactor {
    poll: Poll,
    events: Events,
    pub(crate) sources: Slab<Source>,
    /// The precise timer, when the kernel gave us one.
    timer: Option<TimerFd>,
    /// The deadline the timer is armed for.
    timer_deadline: Option<std::time::Instant>,
    /// Wake-ups from other threads; created on first use.
    remote: Option<std::sync::Arc<RemoteQueue>>,
}

impl Reactor {
    pub(crate) fn new() -> io::Result<Reactor> {
        let poll = Poll::new()?;
        // Without a timerfd the loop still works, with millisecond wake-ups.
        let timer = TimerFd::new().ok().and_then(|t| {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&t);
            poll.registry()
                .register(
                    &mut mio::unix::SourceFd(&fd),
                    Token(TIMER_KEY),
                    Interest::READABLE,
                )
                .ok()
                .map(|()| t)
        });
        Ok(Reactor {
            poll,
            events: Events::with_capacity(1024),
            sources: Slab::new(),
            timer,
            timer_deadline: None,
            remote: None,
        })
    }

    /// The queue other threads use to wake tasks here, created on first use.
    pub(crate) fn remote_queue(&mut self) -> io::Result<std::sync::Arc<RemoteQueue>> {
        if let Some(q) = &self.remote {
            return Ok(q.clone());
        }
        let waker = mio::Waker::new(self.poll.registry(), Token(WAKER_KEY))?;
        let q = std::sync::Arc::new(RemoteQueue::new(waker));
        self.remote = Some(q.clone());
        Ok(q)
    }

    /// The remote queue, if one was ever made.
    pub(crate) fn remote(&self) -> Option<&std::sync::Arc<RemoteQueue>> {
        self.remote.as_ref()
    }

    /// True while another thread holds a way to wake this scheduler, or a
    /// wake-up it sent (before dropping its handle) is still queued.
    pub(crate) fn has_remote_handles(&self) -> bool {
        self.remote
            .as_ref()
            .is_some_and(|q| std::sync::Arc::strong_count(q) > 1 || q.has_pending())
    }

    /// Registers `source` (whose descriptor is `fd`) for read and write
    /// readiness. Returns its id and its count of read events.
    pub(crate) fn register(
        &mut self,
        source: &mut impl mio::event::Source,
        fd: RawFd,
    ) -> io::Result<(IoId, Rc<Cell<u64>>)> {
        let entry = self.sources.vacant_entry();
        let key = entry.key();
        self.poll.registry().register(
            source,
            Token(key),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        // Serials are unique in the process, not just in this reactor, so a
        // socket kept from an earlier run never matches a live one here.
        let serial = NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let read_events = Rc::new(Cell::new(0));
        entry.insert(Source {
            serial,
            fd,
            readers: Vec::new(),
            writers: Vec::new(),
            read_events: read_events.clone(),
        });
        Ok((IoId { key, serial }, read_events))
    }

    /// Deregisters a source and frees its slot. Returns the tasks that were
    /// still waiting on it, to be woken with an error.
    pub(crate) fn deregister(
        &mut self,
        id: IoId,
        source: &mut impl mio::event::Source,
    ) -> Vec<Waiter> {
        if self.get_mut(id).is_none() {
            return Vec::new();
        }
        // Closing the descriptor would drop the epoll entry anyway; doing it
        // explicitly also covers descriptors that were duplicated.
        let _ = self.poll.registry().deregister(source);
        let src = self.sources.remove(id.key);
        src.readers
            .into_iter()
            .map(|(w, _)| w)
            .chain(src.writers)
            .collect()
    }

    /// The source named by `id`, unless the id is stale.
    pub(crate) fn get_mut(&mut self, id: IoId) -> Option<&mut Source> {
        self.sources
            .get_mut(id.key)
            .filter(|s| s.serial == id.serial)
    }

    /// Parks `waiter` on a source. Errors if the id is stale.
    pub(crate) fn add_waiter(&mut self, id: IoId, dir: Dir, waiter: Waiter) -> io::Result<()> {
        let src = self.get_mut(id).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotConnected,
                "yieldloop: the I/O source was closed or belongs to another scheduler",
            )
        })?;
        match dir {
            Dir::Read | Dir::Accept => src.readers.push((waiter, dir)),
            Dir::Write => src.writers.push(waiter),
        }
        Ok(())
    }

    /// Waits for events until `deadline` (`None`: until one arrives), and
    /// appends what became ready to `out`.
    ///
    /// A deadline in the future arms the `timerfd` for it (unless already
    /// armed for it or earlier) and polls without a timeout, so the wake-up
    /// comes within microseconds of the deadline, not at the next whole
    /// millisecond.
    pub(crate) fn poll(
        &mut self,
        deadline: Option<std::time::Instant>,
        now: std::time::Instant,
        out: &mut Vec<Readiness>,
    ) -> io::Result<()> {
        let timeout = match deadline {
            // Due already: just collect what is ready.
            Some(d) if d <= now => Some(Duration::ZERO),
            // Far off: epoll's own millisecond timeout, ending a little
            // early, costs no extra system call; the loop then comes back
            // here with the deadline near and arms the precise timer. A
            // server whose reads carry far deadlines (idle timeouts) would
            // otherwise re-arm the timer on almost every turn.
            Some(d) if d - now > FAR => Some(d - now - EARLY),
            Some(d) => match &mut self.timer {
                Some(timer) => {
                    let armed_in_time =
                        timer.is_armed() && self.timer_deadline.is_some_and(|armed| armed <= d);
                    if !armed_in_time {
                        timer.arm(d - now)?;
                        self.timer_deadline = Some(d);
                    }
                    None
                }
                // mio rounds up to whole milliseconds: never early.
                None => Some(d - now),
            },
            None => None,
        };
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal interrupted the wait: the loop simply goes round.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        for ev in self.events.iter() {
            if ev.token().0 == TIMER_KEY {
                if let Some(t) = &mut self.timer {
                    t.clear();
                }
                self.timer_deadline = None;
                continue;
            }
            out.push(Readiness {
                key: ev.token().0,
                read: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                write: ev.is_writable() || ev.is_write_closed() || ev.is_error(),
                read_closed: ev.is_read_closed() || ev.is_error(),
            });
        }
        Ok(())
    }
}
