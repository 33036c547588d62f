//! The reactor: a `mio::Poll` and the table of registered I/O sources.
//!
//! It owns its sources: the scheduler hands it a wait to file under a
//! source, and it hands back, through [`WaitingTasks`], the waits an event ends,
//! performing the `accept` itself for tasks waiting in
//! [`Op::Accept`](crate::raw::Op::Accept). Wake-ups sent from other threads
//! ([`RemoteQueue`]) and, on Linux, the precise timer (`timerfd`) come in
//! through the same poll.
//!
//! # Timers on each platform
//!
//! On Linux the loop waits for a far deadline in two steps: epoll's own
//! millisecond timeout first, ending a little early, then a `timerfd`,
//! accurate to microseconds, for the rest. Elsewhere (macOS, FreeBSD, or
//! Linux with the `portable` feature) the poll's own timeout ends the wait
//! in one step: `kevent` takes nanoseconds, `epoll_wait` rounds up to the
//! next millisecond. Either way the wait may end later than the deadline,
//! never earlier. `wait` says why, and what each step costs.
//!
//! Each socket registers once, when it is created, for both read and write
//! readiness in edge-triggered mode; the source's slot in the table is its
//! `mio::Token`. A task that hits `WouldBlock` parks itself in the slot's
//! reader or writer list; an event for the token wakes that list. Because the
//! registration is edge-triggered, a task only ever waits *after* an attempt
//! returned `WouldBlock`, so no edge is missed: data that arrives after the
//! failed attempt raises a new event.
//!
//! # Wakers
//!
//! Beside the tasks, each source keeps one [`Waker`] per direction, for a
//! future polled on this thread (by `block_on`, in a task) that waits on
//! it: the shape of tokio's `ScheduledIo`, one read slot and one write slot,
//! each replaced by the next poll. A readiness flag per direction, set by
//! every event and cleared when a poll-style attempt says `WouldBlock`,
//! tells such a poll whether trying is worth a system call. Wakers are not
//! woken here: an event moves them to a list that the scheduler empties
//! once it has let go of its own state, because waking one may call right
//! back into the scheduler (unparking the task in `block_on`).

use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::task::Waker;

use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::protocol::{IoId, Resume, WaitToken};

mod accept;
mod read_events;
mod remote;
mod wait;

pub(crate) use read_events::{ReadEvents, ReadMarkSlot};
#[cfg(loom)]
pub(crate) use remote::model as remote_model;
pub(crate) use remote::RemoteQueue;
pub(crate) use wait::Wait;

use crate::sys::PreciseTimer;

/// Serial numbers of registrations, unique in the process.
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Token of the precise timer (a `timerfd`); slab keys never come near it.
const TIMER_KEY: usize = usize::MAX - 1;
/// Token of the cross-thread `mio::Waker`.
const WAKER_KEY: usize = usize::MAX - 2;

/// What the reactor asks of the task table when an event ends waits.
pub(crate) trait WaitingTasks {
    /// True while `w` is still the wait its task is in.
    fn is_waiting(&self, w: WaitToken) -> bool;
    /// Ends the wait `w` with `value`, if the task is still in it; `cause`
    /// is for the trace.
    fn wake(&mut self, w: WaitToken, value: Resume, cause: &'static str);
}

/// What a task waits for on a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IoWait {
    /// Readable (or hung up, or failed).
    Readable,
    /// A connection on a listening socket: the reactor accepts it for the
    /// task and hands it over with the wake-up.
    Connection,
    /// Writable (or hung up, or failed).
    Writable,
}

/// One registered source.
#[derive(Debug)]
struct Source {
    /// Tells this registration from earlier ones of the same slot.
    serial: u64,
    /// The file descriptor, for the `accept`s the reactor performs.
    fd: RawFd,
    /// Tasks waiting to read or accept.
    readers: Vec<(WaitToken, IoWait)>,
    /// Tasks waiting to write.
    writers: Vec<WaitToken>,
    /// The future waiting to read, if any; replaced by each poll.
    read_waker: Option<Waker>,
    /// The future waiting to write, if any.
    write_waker: Option<Waker>,
    /// A read event came since a poll-style read last said `WouldBlock`
    /// (true at first: the first poll tries).
    read_ready: bool,
    /// The same for writes.
    write_ready: bool,
    /// The read events the source has had, shared with its socket: a
    /// stream whose last read came back short (so it emptied the socket)
    /// and that has had no read event since knows the next read would find
    /// nothing, and waits without trying it.
    read_events: ReadEvents,
}

/// Readiness of one source, as reported by one event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readiness {
    key: usize,
    read: bool,
    write: bool,
    /// The peer closed its side, or the socket failed.
    read_closed: bool,
}

/// What a future's poll for readiness finds: see [`Reactor::poll_ready`].
#[derive(Debug)]
pub(crate) enum PollReady {
    /// An event came since the last `WouldBlock`: try the operation.
    Ready,
    /// The waker is filed; here is the one it replaced, to be dropped once
    /// the scheduler's state is let go of.
    Pending(Option<Waker>),
}

/// The poller and the sources registered with it.
#[derive(Debug)]
pub(crate) struct Reactor {
    poll: Poll,
    events: Events,
    sources: Slab<Source>,
    /// The precise timer, where the platform has one and the kernel gave
    /// it (never off Linux: see `sys`).
    timer: Option<PreciseTimer>,
    /// The deadline the timer is armed for.
    timer_deadline: Option<std::time::Instant>,
    /// Wake-ups from other threads; created on first use.
    remote: Option<Arc<RemoteQueue>>,
    /// Wake-ups taken from `remote`; kept to reuse its allocation.
    remote_scratch: Vec<WaitToken>,
    /// Wakers that events (or deregistrations) have ended, for the
    /// scheduler to wake once it has let go of its state.
    woken: Vec<Waker>,
}

impl Reactor {
    pub(crate) fn new() -> io::Result<Reactor> {
        let poll = Poll::new()?;
        // Without a precise timer the loop still works, with the poll's
        // own timeout.
        let timer = PreciseTimer::new().ok().and_then(|t| {
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
            remote_scratch: Vec::new(),
            woken: Vec::new(),
        })
    }

    /// The queue other threads use to wake tasks here, created on first use.
    pub(crate) fn remote_queue(&mut self) -> io::Result<Arc<RemoteQueue>> {
        if let Some(q) = &self.remote {
            return Ok(q.clone());
        }
        let waker = mio::Waker::new(self.poll.registry(), Token(WAKER_KEY))?;
        let q = Arc::new(RemoteQueue::new(waker));
        self.remote = Some(q.clone());
        Ok(q)
    }

    /// True when another thread may still wake a task of this scheduler:
    /// it holds a handle to the cross-thread queue (beyond the exempt
    /// ones), or a wake-up it sent is still queued.
    pub(crate) fn outside_wake_possible(&self) -> bool {
        self.remote
            .as_ref()
            .is_some_and(|q| q.outside_holders() > 0 || q.has_pending())
    }

    /// True when a task (`live` says which waits are current) or a future
    /// waits for a source's readiness.
    pub(crate) fn io_waited_on(&self, live: impl Fn(WaitToken) -> bool) -> bool {
        self.sources.iter().any(|(_, s)| {
            s.read_waker.is_some()
                || s.write_waker.is_some()
                || s.readers.iter().any(|(w, _)| live(*w))
                || s.writers.iter().any(|w| live(*w))
        })
    }

    /// True when nothing registered here can ever produce an event: no
    /// source, and no other thread holding a way to wake this scheduler
    /// (nor a wake-up it sent, before dropping its handle, still queued).
    pub(crate) fn is_idle(&self) -> bool {
        self.sources.is_empty()
            && !self
                .remote
                .as_ref()
                .is_some_and(|q| Arc::strong_count(q) > 1 || q.has_pending())
    }

    /// Registers `source` (whose descriptor is `fd`) for read and write
    /// readiness. Returns its id and its count of read events.
    ///
    /// A descriptor registered here already under another source (the
    /// `hook` feature registers the blocking descriptors of libraries, and
    /// a library may then hand one to a [`PausingIo`](crate::io::PausingIo),
    /// or poll one of yieldloop's own) is, with `take_over`, taken over:
    /// the older source is dropped, its waiters woken with an error, and
    /// the poller's entry points at the new one; without, the older
    /// source is the answer, shared.
    pub(crate) fn register(
        &mut self,
        source: &mut impl mio::event::Source,
        fd: RawFd,
        tasks: &mut impl WaitingTasks,
        take_over: bool,
    ) -> io::Result<(IoId, ReadEvents)> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        let mut key = self.sources.vacant_key();
        match self.poll.registry().register(source, Token(key), interest) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && fd >= 0 => {
                let older = self.sources.iter().find(|(_, s)| s.fd == fd);
                let Some((k, s)) = older else {
                    return Err(e);
                };
                let id = IoId {
                    key: k,
                    serial: s.serial,
                };
                if !take_over {
                    return Ok((id, s.read_events.clone()));
                }
                self.remove_source(id, false, tasks);
                // The freed slot may be the next one handed out.
                key = self.sources.vacant_key();
                self.poll
                    .registry()
                    .reregister(source, Token(key), interest)?;
            }
            Err(e) => return Err(e),
        }
        let entry = self.sources.vacant_entry();
        debug_assert_eq!(entry.key(), key);
        // Serials are unique in the process, not just in this reactor, so a
        // socket kept from an earlier run never matches a live one here.
        let serial = NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let read_events = ReadEvents::default();
        entry.insert(Source {
            serial,
            fd,
            readers: Vec::new(),
            writers: Vec::new(),
            read_waker: None,
            write_waker: None,
            read_ready: true,
            write_ready: true,
            read_events: read_events.clone(),
        });
        Ok((IoId { key, serial }, read_events))
    }

    /// Deregisters a source and frees its slot. The tasks still waiting on
    /// it are woken with an error; its wakers are moved to the list the
    /// scheduler wakes ([`take_woken`](Self::take_woken)), so that a future
    /// waiting on it is polled again and finds it gone.
    pub(crate) fn deregister(&mut self, id: IoId, tasks: &mut impl WaitingTasks) {
        self.remove_source(id, true, tasks);
    }

    /// Frees the slot of a source whose descriptor number may name another
    /// file by now (it was closed behind the reactor's back): as
    /// [`deregister`](Self::deregister), but without telling the poller,
    /// which would act on whatever the number names now. The kernel drops
    /// the poller's entry when the file closes.
    #[cfg(feature = "hook")]
    pub(crate) fn forget(&mut self, id: IoId, tasks: &mut impl WaitingTasks) {
        self.remove_source(id, false, tasks);
    }

    fn remove_source(&mut self, id: IoId, tell_poller: bool, tasks: &mut impl WaitingTasks) {
        if self.get_mut(id).is_none() {
            return;
        }
        let src = self.sources.remove(id.key);
        // Closing the descriptor would drop the epoll entry anyway; doing it
        // explicitly also covers descriptors that were duplicated. A source
        // registered without its descriptor (a signal self-pipe, never
        // duplicated) leaves when it closes.
        if tell_poller && src.fd >= 0 {
            let _ = self
                .poll
                .registry()
                .deregister(&mut mio::unix::SourceFd(&src.fd));
        }
        self.woken.extend(src.read_waker);
        self.woken.extend(src.write_waker);
        for w in src.readers.into_iter().map(|(w, _)| w).chain(src.writers) {
            tasks.wake(
                w,
                Resume::Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "yieldloop: the socket was closed while a task waited on it",
                )),
                "closed",
            );
        }
    }

    /// Asks, for a future, whether the source `id` is worth trying in one
    /// direction (`write` or read): ready if an event came since a
    /// poll-style attempt last said `WouldBlock`, and `would_block` says
    /// one just did. If not, files `waker` in the direction's slot, for the
    /// next event to wake.
    ///
    /// # Errors
    ///
    /// `NotConnected` if the id is stale, as for [`add_waiter`](Self::add_waiter).
    pub(crate) fn poll_ready(
        &mut self,
        id: IoId,
        write: bool,
        would_block: bool,
        waker: &Waker,
    ) -> io::Result<PollReady> {
        let src = self.get_mut(id).ok_or_else(stale_source)?;
        let (ready, slot) = if write {
            (&mut src.write_ready, &mut src.write_waker)
        } else {
            (&mut src.read_ready, &mut src.read_waker)
        };
        if would_block {
            *ready = false;
        }
        if *ready {
            return Ok(PollReady::Ready);
        }
        let replaced = match slot {
            // The same future polled again: keep the waker it left.
            Some(w) if w.will_wake(waker) => None,
            _ => slot.replace(waker.clone()),
        };
        Ok(PollReady::Pending(replaced))
    }

    /// True when events have ended wakers that are not woken yet.
    #[inline]
    pub(crate) fn has_woken(&self) -> bool {
        !self.woken.is_empty()
    }

    /// The wakers events have ended, to wake once the scheduler's state is
    /// let go of; hand the emptied list back with
    /// [`restore_woken`](Self::restore_woken) to keep its allocation.
    pub(crate) fn take_woken(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.woken)
    }

    /// The list of wakers to wake once the scheduler's state is let go
    /// of, for the scheduler to add the wakers of due timers to.
    #[inline]
    pub(crate) fn woken_mut(&mut self) -> &mut Vec<Waker> {
        &mut self.woken
    }

    /// Takes back the emptied list from [`take_woken`](Self::take_woken).
    pub(crate) fn restore_woken(&mut self, list: Vec<Waker>) {
        if self.woken.is_empty() {
            self.woken = list;
        }
    }

    /// How many sources are registered.
    pub(crate) fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// Every task wait filed on a source, with the source's descriptor
    /// (stale waits included: the caller knows which are current).
    pub(crate) fn waits(&self) -> impl Iterator<Item = (WaitToken, RawFd)> + '_ {
        self.sources.iter().flat_map(|(_, s)| {
            let readers = s.readers.iter().map(|(w, _)| *w);
            readers
                .chain(s.writers.iter().copied())
                .map(move |w| (w, s.fd))
        })
    }

    /// True while `id` names a live registration.
    #[cfg(feature = "hook")]
    pub(crate) fn is_registered(&self, id: IoId) -> bool {
        self.sources
            .get(id.key)
            .is_some_and(|s| s.serial == id.serial)
    }

    /// The source named by `id`, unless the id is stale.
    fn get_mut(&mut self, id: IoId) -> Option<&mut Source> {
        self.sources
            .get_mut(id.key)
            .filter(|s| s.serial == id.serial)
    }

    /// Files the wait `w` under the source `id`.
    ///
    /// # Errors
    ///
    /// `NotConnected` if the id is stale (its socket was closed, or it
    /// belongs to another scheduler).
    pub(crate) fn add_waiter(
        &mut self,
        id: IoId,
        what: IoWait,
        w: WaitToken,
        is_waiting: impl Fn(WaitToken) -> bool,
    ) -> io::Result<()> {
        let src = self.get_mut(id).ok_or_else(stale_source)?;
        // Waits that ended another way (a timeout, a cancellation) leave
        // their entries behind; drop them before the list grows.
        if src.readers.len() + src.writers.len() > 4 {
            src.readers.retain(|(w, _)| is_waiting(*w));
            src.writers.retain(|w| is_waiting(*w));
        }
        match what {
            IoWait::Readable | IoWait::Connection => src.readers.push((w, what)),
            IoWait::Writable => src.writers.push(w),
        }
        Ok(())
    }

    /// Ends the waits one event makes ready: the wake-ups other threads
    /// sent, or the waits on one source.
    pub(crate) fn dispatch(&mut self, r: Readiness, tasks: &mut impl WaitingTasks) {
        if r.key == WAKER_KEY {
            self.drain_remote(tasks);
        } else {
            self.dispatch_source(r, tasks);
        }
    }

    /// Wakes the tasks other threads asked to wake.
    fn drain_remote(&mut self, tasks: &mut impl WaitingTasks) {
        if let Some(q) = &self.remote {
            q.drain(&mut self.remote_scratch);
            for w in self.remote_scratch.drain(..) {
                tasks.wake(w, Resume::Ready, "remote");
            }
        }
    }

    /// Wakes the tasks waiting on one source that became ready; accepts a
    /// connection for each task waiting for one, while there are any.
    fn dispatch_source(&mut self, r: Readiness, tasks: &mut impl WaitingTasks) {
        let Some(src) = self.sources.get_mut(r.key) else {
            return;
        };
        if r.read {
            src.read_events.record(r.read_closed);
            src.read_ready = true;
            self.woken.extend(src.read_waker.take());
        }
        if r.write {
            src.write_ready = true;
            self.woken.extend(src.write_waker.take());
        }
        // The lists are taken out while their tasks are woken, then put
        // back emptied, so their allocations serve the next waits.
        let mut readers = if r.read {
            std::mem::take(&mut src.readers)
        } else {
            Vec::new()
        };
        let mut writers = if r.write {
            std::mem::take(&mut src.writers)
        } else {
            Vec::new()
        };
        let mut still_waiting = Vec::new();
        for (w, what) in readers.drain(..) {
            if what != IoWait::Connection {
                tasks.wake(w, Resume::Ready, "socket");
                continue;
            }
            // Accept only for a task still waiting: a connection accepted
            // for nobody would be lost.
            if !tasks.is_waiting(w) {
                continue;
            }
            match accept::accept_on(src.fd) {
                Ok((stream, addr)) => tasks.wake(w, Resume::Accepted(stream, addr), "socket"),
                // Another acceptor (or a spurious event) took it.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => still_waiting.push((w, what)),
                Err(e) => tasks.wake(w, Resume::Err(e), "socket"),
            }
        }
        for w in writers.drain(..) {
            tasks.wake(w, Resume::Ready, "socket");
        }
        readers.extend(still_waiting);
        if src.readers.is_empty() {
            src.readers = readers;
        } else {
            src.readers.extend(readers);
        }
        if src.writers.is_empty() {
            src.writers = writers;
        }
    }

    /// Waits for events as `wait` (from [`Reactor::plan_wait`]) says, and
    /// appends what became ready to `out`. The precise timer's expiry is
    /// not passed on: it only ends the wait, and the loop fires the timers
    /// that are due after every poll.
    pub(crate) fn poll(&mut self, wait: Wait, out: &mut Vec<Readiness>) -> io::Result<Polled> {
        let mut polled = Polled::default();
        let timeout = wait.timeout();
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal interrupted the wait: the loop simply goes round.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                polled.interrupted = true;
                return Ok(polled);
            }
            Err(e) => return Err(e),
        }
        for ev in self.events.iter() {
            if ev.token().0 == TIMER_KEY {
                if let Some(t) = &mut self.timer {
                    t.clear();
                }
                self.timer_deadline = None;
                polled.timer_fired = true;
                continue;
            }
            out.push(Readiness {
                key: ev.token().0,
                read: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                write: ev.is_writable() || ev.is_write_closed() || ev.is_error(),
                read_closed: ev.is_read_closed() || ev.is_error(),
            });
        }
        Ok(polled)
    }
}

/// The error of a wait on a source id that names no live registration.
fn stale_source() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "yieldloop: the I/O source was closed or belongs to another scheduler",
    )
}

/// How a poll ended, besides the events it brought: for the trace.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Polled {
    /// The precise timer expired during it.
    pub(crate) timer_fired: bool,
    /// A signal cut it short.
    pub(crate) interrupted: bool,
}
