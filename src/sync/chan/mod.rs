//! The core both channel kinds are made of: the single-thread
//! [`channel`](super::local::channel) / [`sync_channel`](super::local::sync_channel) and
//! the cross-thread ones of [`mpsc`](super::mpsc).
//!
//! Both keep the same state (a buffer with an optional capacity, the count
//! of senders, whether the receiver lives, two waiter queues) and follow
//! the same rules over it:
//!
//! - `recvq`: receivers (and [`Select`](super::Select)s) waiting for a
//!   message. A sender puts the value in the buffer and wakes the first
//!   waiter that is still waiting; that receiver takes it when it runs. A
//!   receiver that was picked but goes away without receiving hands the
//!   wake-up to the next one.
//! - `sendq`: senders of a full bounded channel, each *holding its value*.
//!   A receiver that frees a slot moves the first parked sender's value
//!   into the buffer and wakes it: its send is done. Parked senders are
//!   served strictly in order, and a sender's value is taken only if its
//!   wake-up went through, so a send that was cancelled or timed out never
//!   happened.
//!
//! Their queues are the waiter list of every primitive of this module,
//! [`Waiters`], and the kinds differ only in what their
//! [`Flavor`] says, the same the primitives are made with: the lock around
//! the state (a `RefCell` on one thread, a `Mutex` between threads), how a
//! waiter is woken (its [`ParkToken`] on one thread;
//! across threads also a `RemoteUnparker`, or the handle of a blocked plain
//! thread) and how the caller waits (a task parks; across threads a plain
//! thread blocks). The flavor is a type parameter, not a trait object, so
//! each kind is compiled for itself: a hand-over between two tasks makes no
//! dynamic call and no allocation that the kind did not make before it
//! shared this core.
//!
//! A channel wakes its waiters under its lock, as soon as it decides to
//! (a waiter of another thread is queued a wake-up then). A receiver learns
//! whether a sender picked it from its entry, when it takes it out
//! ([`Woken::One`]); a [`Select`](super::Select) waits in several
//! channels' queues with one pause, and so learns which case fired.
//!
//! ```text
//!   send ─▶ try_send ─ room ─▶ done (the first waiting receiver wakes)
//!              │ full
//!              ▼
//!           wait_sender: queue (waiter, value) in sendq and wait
//!           until a receiver takes the value or the receiver is gone
//!
//!   recv ─▶ try_recv ─ msg ──▶ done (the first parked sender moves up)
//!              │ empty          ▲
//!              ▼                │ woken or timed out: look again
//!           wait_receiver: queue a waiter in recvq and wait
//! ```

use std::collections::VecDeque;
use std::fmt;

use super::error::{SendError, TryRecvError, TrySendError};
use super::flavor::{self, Flavor, Wakeups};
use super::select::sealed::Registration;
use super::waiters::{Waiters, Woken};
use crate::protocol::ParkToken;

mod handles;
mod waiting;

pub(crate) use handles::channel_handles;

/// The held lock of a channel with items `T` and flavor `F`: a `RefMut` or
/// a `MutexGuard`.
pub(crate) type Guard<'a, T, F> = flavor::Guard<'a, F, State<T, F>>;

/// The state of one channel, behind its flavor's lock.
pub(crate) struct State<T, F: Flavor> {
    /// Messages sent and not received yet.
    buf: VecDeque<T>,
    /// `None`: unbounded. `Some(0)`: rendezvous.
    cap: Option<usize>,
    /// Live `Sender`/`SyncSender` handles.
    senders: usize,
    /// False once the `Receiver` is gone: every send fails from then on.
    receiver_alive: bool,
    /// Receivers waiting for a message.
    recvq: Waiters<F>,
    /// Senders parked on a full channel, each with its value, moved into
    /// the channel when a receiver takes it.
    ///
    /// # Invariant
    /// With a buffer (`cap > 0`), parked senders exist only while the
    /// buffer is full, give or take entries whose task stopped waiting.
    sendq: Waiters<F, T>,
    /// [`Select`](super::Select)s with a send case on this channel,
    /// waiting for room (or a receiver, for a rendezvous): all woken
    /// when one comes, each to try its send again.
    spaceq: Waiters<F>,
}

impl<T, F: Flavor> State<T, F> {
    /// True if a receiver would find something to do: a message, a parked
    /// sender of a rendezvous, or the end of the channel.
    pub(crate) fn receivable(&self) -> bool {
        !self.buf.is_empty() || !self.sendq.is_empty() || self.senders == 0
    }

    /// Takes the value of the first parked sender that is still parked,
    /// waking it: its send has happened. Looks inline whether one is
    /// queued, which on an unbounded channel none ever is.
    #[inline]
    fn take_parked_sender(&mut self) -> Option<T> {
        if self.sendq.is_empty() {
            return None;
        }
        self.take_queued_sender()
    }

    /// [`take_parked_sender`](Self::take_parked_sender) with a sender
    /// queued.
    #[inline(never)]
    fn take_queued_sender(&mut self) -> Option<T> {
        let mut wakes = F::Wakeups::default();
        let value = self.sendq.take_one(&mut wakes);
        wakes.wake();
        value
    }

    /// The non-blocking receive every receive is made of.
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        if let Some(v) = self.buf.pop_front() {
            self.space_came();
            // A slot came free: the longest-parked sender fills it.
            if self.cap.is_some_and(|c| self.buf.len() < c) {
                if let Some(next) = self.take_parked_sender() {
                    self.buf.push_back(next);
                }
            }
            return Ok(v);
        }
        // Empty buffer: a rendezvous hands over straight from the sender.
        if let Some(v) = self.take_parked_sender() {
            return Ok(v);
        }
        if self.senders == 0 {
            Err(TryRecvError::Disconnected)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Sends without ever waiting: the unbounded send, and the fast path of
    /// the bounded one. Gives the value back if the channel is full.
    /// Inlined into each send: a few loads and a push when nobody waits.
    #[inline]
    pub(crate) fn try_send(&mut self, value: T) -> Result<(), TrySendError<T>> {
        if !self.receiver_alive {
            return Err(TrySendError::Disconnected(value));
        }
        let room = match self.cap {
            None => true,
            // Parked senders go first: no overtaking them.
            Some(c) if c > 0 => self.buf.len() < c && self.sendq.is_empty(),
            // A rendezvous succeeds only into the hands of a waiting
            // receiver; it is woken and will take the value from the
            // buffer.
            Some(_) => self.wake_receiver(),
        };
        if !room {
            return Err(TrySendError::Full(value));
        }
        self.buf.push_back(value);
        if self.cap != Some(0) {
            self.wake_receiver();
        }
        Ok(())
    }

    /// Wakes the selects waiting to send: room came free, or a receiver
    /// came to wait, or the receiver went (then their sends fail at once).
    #[inline]
    fn space_came(&mut self) {
        if !self.spaceq.is_empty() {
            self.spaceq.take_all().wake();
        }
    }

    /// Wakes one waiting receiver. Returns whether one was woken. Most
    /// sends find nobody waiting: that look is inlined into them, the wake
    /// is a call.
    #[inline(always)]
    fn wake_receiver(&mut self) -> bool {
        !self.recvq.is_empty() && self.wake_queued_receiver()
    }

    /// [`wake_receiver`](Self::wake_receiver) with a receiver queued.
    #[inline(never)]
    fn wake_queued_receiver(&mut self) -> bool {
        let mut wakes = F::Wakeups::default();
        let woke = self.recvq.wake_one(&mut wakes);
        wakes.wake();
        woke
    }

    /// A receiver that was woken but will not receive hands the wake-up
    /// on, if there is something to receive.
    pub(crate) fn pass_on(&mut self) {
        if self.receivable() {
            self.wake_receiver();
        }
    }

    /// Queues a waiting receiver, woken through `wake`; `keep` is what it
    /// holds for the length of its pause (see [`Flavor::task_wake`]).
    pub(crate) fn register(
        &mut self,
        (wake, keep): (F::Wake, Option<crate::task::park::RemoteUnparker>),
    ) -> Registration {
        // A rendezvous has a taker now.
        if self.cap == Some(0) {
            self.space_came();
        }
        Registration {
            id: self.recvq.push((), wake),
            _keep: keep,
        }
    }

    /// Takes a receiver's entry out again; returns whether a sender had
    /// picked it (then it holds a wake-up to use or hand on).
    #[inline]
    pub(crate) fn unregister(&mut self, reg: &Registration) -> bool {
        self.recvq.remove(reg.id) == Woken::One
    }

    /// Queues a sender that waits with `value`, woken through `wake`, and
    /// wakes a receiver: a rendezvous needs one to come and take it.
    /// Returns the entry's id.
    pub(crate) fn queue_sender(&mut self, wake: F::Wake, value: T) -> u64 {
        let id = self.sendq.push(value, wake);
        self.wake_receiver();
        id
    }

    /// Where the sender queued as `id` stands after a wake-up: `Some` once
    /// its send is over, `None` while it is to wait on. The send is done if
    /// a receiver took the value; it fails, and the value comes back, if
    /// the receiver is gone or the sender must `give_up`.
    pub(crate) fn sent(&mut self, id: u64, give_up: bool) -> Option<Result<(), SendError<T>>> {
        if self.sendq.woken(id) != Woken::Not {
            return Some(Ok(()));
        }
        if !self.receiver_alive || give_up {
            return Some(
                self.sendq
                    .remove_entry(id)
                    .map_or(Ok(()), |v| Err(SendError(v))),
            );
        }
        None
    }
}

/// One channel: its state behind the flavor's lock.
pub(crate) struct Chan<T, F: Flavor> {
    state: F::Lock<State<T, F>>,
}

impl<T, F: Flavor> Chan<T, F> {
    /// A channel with one sender and its receiver, holding at most `cap`
    /// messages (`None`: unbounded; `Some(0)`: rendezvous).
    pub(crate) fn new(cap: Option<usize>) -> Self {
        Chan {
            state: From::from(State {
                buf: VecDeque::new(),
                cap,
                senders: 1,
                receiver_alive: true,
                recvq: Waiters::default(),
                sendq: Waiters::default(),
                spaceq: Waiters::default(),
            }),
        }
    }

    /// Takes the lock around the state.
    pub(crate) fn lock(&self) -> Guard<'_, T, F> {
        F::lock(&self.state)
    }

    /// See [`State::try_send`].
    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.lock().try_send(value)
    }

    /// See [`State::try_recv`].
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        self.lock().try_recv()
    }

    /// True if a receive would not find the channel empty: a message
    /// waits, or the channel is closed.
    pub(crate) fn is_ready(&self) -> bool {
        self.lock().receivable()
    }

    /// Queues the pause `token` of a [`Select`](super::Select) as a waiting
    /// receiver.
    pub(crate) fn register(&self, token: ParkToken) -> Registration {
        self.lock().register(F::task_wake(token))
    }

    /// Queues the pause `token` of a [`Select`](super::Select) with a send
    /// case, to be woken when a send may succeed.
    pub(crate) fn register_space(&self, token: ParkToken) -> Registration {
        let (wake, keep) = F::task_wake(token);
        Registration {
            id: self.lock().spaceq.push((), wake),
            _keep: keep,
        }
    }

    /// Takes a send case's entry out again. Nothing to hand on: every
    /// waiter for room is woken at once.
    pub(crate) fn unregister_space(&self, reg: &Registration) {
        self.lock().spaceq.remove(reg.id);
    }

    /// See [`State::unregister`].
    pub(crate) fn unregister(&self, reg: &Registration) -> bool {
        self.lock().unregister(reg)
    }

    /// See [`State::pass_on`].
    pub(crate) fn pass_on(&self) {
        self.lock().pass_on();
    }

    /// A sender handle was cloned.
    pub(crate) fn add_sender(&self) {
        self.lock().senders += 1;
    }

    /// A sender handle is gone. The last one closes the channel: every
    /// waiting receiver wakes up to drain what is left and then learn that
    /// it is over.
    pub(crate) fn drop_sender(&self) {
        let mut st = self.lock();
        st.senders -= 1;
        if st.senders == 0 {
            st.recvq.take_all().wake();
        }
    }

    /// The receiver is gone: sends fail from now on, and the buffered
    /// messages are dropped.
    pub(crate) fn drop_receiver(&self) {
        let buffered = {
            let mut st = self.lock();
            st.receiver_alive = false;
            st.space_came();
            // Parked senders wake, find their value still queued and take
            // it back in a `SendError`; their entries stay for them to
            // take.
            let mut wakes = F::Wakeups::default();
            st.sendq.wake_in_place(&mut wakes);
            wakes.wake();
            std::mem::take(&mut st.buf)
        };
        // Dropped outside the lock: a message's destructor may use the
        // channel.
        drop(buffered);
    }

    /// Messages waiting in the buffer now (parked senders' values not
    /// counted).
    pub(crate) fn len(&self) -> usize {
        self.lock().buf.len()
    }

    /// What the handles show in `{:?}`: counts, never the messages.
    pub(crate) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct(name)
            .field("buffered", &st.buf.len())
            .field("capacity", &st.cap)
            .field("senders", &st.senders)
            .field("receiver_alive", &st.receiver_alive)
            .field("waiting_receivers", &st.recvq.len())
            .field("waiting_senders", &st.sendq.len())
            .finish()
    }
}
