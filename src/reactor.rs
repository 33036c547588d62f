//! The reactor: a `mio::Poll` and the table of registered I/O sources.
//!
//! Each socket registers once, when it is created, for both read and write
//! readiness in edge-triggered mode; the source's slot in the table is its
//! `mio::Token`. A task that hits `WouldBlock` parks itself in the slot's
//! reader or writer list; an event for the token wakes that list. Because the
//! registration is edge-triggered, a task only ever waits *after* an attempt
//! returned `WouldBlock`, so no edge is missed: data that arrives after the
//! failed attempt raises a new event.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::op::IoId;
use crate::task::Waiter;

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
}

/// Readiness of one source, as reported by one event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readiness {
    pub(crate) key: usize,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

/// The poller and the sources registered with it.
#[derive(Debug)]
pub(crate) struct Reactor {
    poll: Poll,
    events: Events,
    pub(crate) sources: Slab<Source>,
    next_serial: u64,
}

impl Reactor {
    pub(crate) fn new() -> io::Result<Reactor> {
        Ok(Reactor {
            poll: Poll::new()?,
            events: Events::with_capacity(1024),
            sources: Slab::new(),
            next_serial: 1,
        })
    }

    /// Registers `source` (whose descriptor is `fd`) for read and write
    /// readiness.
    pub(crate) fn register(
        &mut self,
        source: &mut impl mio::event::Source,
        fd: RawFd,
    ) -> io::Result<IoId> {
        let entry = self.sources.vacant_entry();
        let key = entry.key();
        self.poll.registry().register(
            source,
            Token(key),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let serial = self.next_serial;
        self.next_serial += 1;
        entry.insert(Source {
            serial,
            fd,
            readers: Vec::new(),
            writers: Vec::new(),
        });
        Ok(IoId { key, serial })
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

    /// Waits for events, at most `timeout` (`None`: until one arrives), and
    /// appends what became ready to `out`.
    pub(crate) fn poll(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<Readiness>,
    ) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal interrupted the wait: the loop simply goes round.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        for ev in self.events.iter() {
            out.push(Readiness {
                key: ev.token().0,
                read: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                write: ev.is_writable() || ev.is_write_closed() || ev.is_error(),
            });
        }
        Ok(())
    }
}
