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
//! The kinds differ only in what their flavor says, the same
//! [`Flavor`](crate::sync::flavor::Flavor) the primitives of this module
//! are made with, and its [`ChanFlavor`] side: the lock around the state (a
//! `RefCell` on one thread, a `Mutex` between threads), how a waiter is
//! woken (its [`ParkToken`] on one thread; across threads also a
//! `RemoteUnparker`, or the handle of a blocked plain thread) and how the
//! caller waits (a task parks; across threads a plain thread blocks). The
//! flavor is a type parameter, not a trait object, so each kind is compiled
//! for itself: a hand-over between two tasks makes no dynamic call and no
//! allocation that the kind did not make before it shared this core.
//!
//! ```text
//!   send ─▶ try_send ─ room ─▶ done (the first waiting receiver wakes)
//!              │ full
//!              ▼
//!           ChanFlavor::wait_sender: queue (waiter, value) in sendq and wait
//!           until a receiver takes the value or the receiver is gone
//!
//!   recv ─▶ try_recv ─ msg ──▶ done (the first parked sender moves up)
//!              │ empty          ▲
//!              ▼                │ woken or timed out: look again
//!           ChanFlavor::wait_receiver: queue a waiter in recvq and wait
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::time::Instant;

use super::error::{RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::select::sealed::{Fired, Registration};
use super::wait::OnDrop;
use super::waiters::WaitQueue;
use crate::inspect::ParkedOn;
use crate::park::{park_on, park_token, RemoteUnparker};
use crate::protocol::ParkToken;
use crate::protocol::Resume;

mod flavor;
mod handles;

pub(crate) use flavor::{ChanFlavor, Guard};
pub(crate) use handles::channel_handles;

/// The state of one channel, behind its flavor's lock.
pub(crate) struct State<T, F: ChanFlavor> {
    /// Messages sent and not received yet.
    buf: VecDeque<T>,
    /// `None`: unbounded. `Some(0)`: rendezvous.
    cap: Option<usize>,
    /// Live `Sender`/`SyncSender` handles.
    senders: usize,
    /// False once the `Receiver` is gone: every send fails from then on.
    receiver_alive: bool,
    /// Receivers waiting for a message.
    recvq: WaitQueue<F::Receiver>,
    /// Senders parked on a full channel, each with its value.
    ///
    /// # Invariant
    /// With a buffer (`cap > 0`), parked senders exist only while the
    /// buffer is full, give or take entries whose task stopped waiting.
    sendq: WaitQueue<Parked<T, F::Sender>>,
    /// [`Select`](super::Select)s with a send case on this channel,
    /// waiting for room (or a receiver, for a rendezvous): all woken
    /// when one comes, each to try its send again.
    spaceq: WaitQueue<F::Receiver>,
}

/// A sender parked on a full channel, with the value it is sending.
struct Parked<T, S> {
    /// What the sender is woken through.
    waiter: S,
    /// Moved into the channel when a receiver takes it.
    value: T,
}

impl<T, F: ChanFlavor> State<T, F> {
    /// True if a receiver would find something to do: a message, a parked
    /// sender of a rendezvous, or the end of the channel.
    pub(crate) fn receivable(&self) -> bool {
        !self.buf.is_empty() || !self.sendq.is_empty() || self.senders == 0
    }

    /// Takes the value of the first parked sender that is still parked,
    /// waking it: its send has happened.
    fn take_parked_sender(&mut self) -> Option<T> {
        self.sendq
            .take_first(|p| F::wake_sender(&p.waiter))
            .map(|p| p.value)
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
            F::wake_all(&mut self.spaceq);
        }
    }

    /// Wakes one waiting receiver. Returns whether one was woken.
    fn wake_receiver(&mut self) -> bool {
        F::wake_one(&mut self.recvq)
    }

    /// A receiver that was woken but will not receive hands the wake-up
    /// on, if there is something to receive.
    pub(crate) fn pass_on(&mut self) {
        if self.receivable() {
            self.wake_receiver();
        }
    }

    /// Queues a waiting receiver; what it reports through and keeps come
    /// from [`ChanFlavor::task_receiver`] (or, for a plain thread, its like).
    pub(crate) fn register(
        &mut self,
        (entry, fired, keep): (F::Receiver, Fired, Option<RemoteUnparker>),
    ) -> Registration {
        // A rendezvous has a taker now.
        if self.cap == Some(0) {
            self.space_came();
        }
        Registration {
            id: self.recvq.push(entry),
            fired,
            _keep: keep,
        }
    }

    /// Takes a receiver's entry out again; returns whether a sender had
    /// woken it (then it holds a wake-up to use or hand on).
    pub(crate) fn unregister(&mut self, reg: &Registration) -> bool {
        let was_queued = self.recvq.remove(reg.id).is_some();
        reg.fired.after_removal(was_queued)
    }

    /// Queues a sender that waits with `value`, and wakes a receiver: a
    /// rendezvous needs one to come and take it. Returns the entry's id.
    pub(crate) fn queue_sender(&mut self, waiter: F::Sender, value: T) -> u64 {
        let id = self.sendq.push(Parked { waiter, value });
        self.wake_receiver();
        id
    }

    /// Where the sender queued as `id` stands after a wake-up: `Some` once
    /// its send is over, `None` while it is to wait on. The send is done if
    /// a receiver took the value; it fails, and the value comes back, if
    /// the receiver is gone or the sender must `give_up`.
    pub(crate) fn sent(&mut self, id: u64, give_up: bool) -> Option<Result<(), SendError<T>>> {
        if !self.sendq.contains(id) {
            return Some(Ok(()));
        }
        if !self.receiver_alive || give_up {
            let parked = self.sendq.remove(id);
            return Some(parked.map_or(Ok(()), |p| Err(SendError(p.value))));
        }
        None
    }
}

/// One channel: its state behind the flavor's lock.
pub(crate) struct Chan<T, F: ChanFlavor> {
    state: F::Lock<State<T, F>>,
}

impl<T, F: ChanFlavor> Chan<T, F> {
    /// A channel with one sender and its receiver, holding at most `cap`
    /// messages (`None`: unbounded; `Some(0)`: rendezvous).
    pub(crate) fn new(cap: Option<usize>) -> Self {
        Chan {
            state: From::from(State {
                buf: VecDeque::new(),
                cap,
                senders: 1,
                receiver_alive: true,
                recvq: WaitQueue::default(),
                sendq: WaitQueue::default(),
                spaceq: WaitQueue::default(),
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

    /// The bounded send: the fast path, else wait with the value until a
    /// receiver takes it.
    pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
        // Before the lock, which a pause must never hold.
        crate::coop::proceed();
        // One lock from the check to the queueing: across threads, a
        // receiver freeing a slot in between would leave this sender
        // parked by a buffer with room.
        let mut st = self.lock();
        let value = match st.try_send(value) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(v)) => return Err(SendError(v)),
            Err(TrySendError::Full(v)) => v,
        };
        F::wait_sender(self, st, value)
    }

    /// The receive every blocking receive is: take a message, or wait for
    /// one until `deadline`.
    pub(crate) fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        // Before the lock, which a pause must never hold.
        crate::coop::proceed();
        // The lock is held from each look to the queueing of the waiter, so
        // a message sent from another thread in between cannot go unseen.
        let mut st = self.lock();
        loop {
            match st.try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // A deadline `<= now` has passed: one last look was taken above.
            if deadline.is_some_and(|d| crate::timer::now() >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            // Woken, timed out or not: look again. A wake-up whose message
            // another receiver took in the meantime just means waiting on.
            st = F::wait_receiver(self, st, deadline)?;
        }
    }

    /// How a receiving *task* waits: queued in `recvq` under `st` (the lock
    /// it found the channel empty with), parked until a sender wakes it or
    /// `deadline` passes, and taken out of the queue again. Gives the lock
    /// back, held.
    ///
    /// If the task is unwound out of the pause (it was cancelled, or a
    /// [`timeout`](fn@crate::timeout) scope expired), or cannot pause at all, a
    /// wake-up it was given goes on to the next receiver. (A broadcast
    /// wake-up comes only at the close, after which nobody waits, so there
    /// is nobody to hand it on to.)
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Disconnected`] if the task is unwinding: it
    /// cannot wait, so for it the channel is closed.
    pub(crate) fn park_receiver<'a>(
        &'a self,
        mut st: Guard<'a, T, F>,
        deadline: Option<Instant>,
    ) -> Result<Guard<'a, T, F>, RecvTimeoutError> {
        let token = park_token();
        let reg = st.register(F::task_receiver(token));
        drop(st);
        // No lock is held across the pause: the guard below takes it while
        // the stack unwinds from inside `park`.
        let guard = OnDrop::new(|| {
            let mut st = self.lock();
            if st.unregister(&reg) {
                st.pass_on();
            }
        });
        let r = park_on(token, deadline, ParkedOn::Channel);
        guard.defuse();
        let mut st = self.lock();
        let woken = st.unregister(&reg);
        if let Resume::Cancelled = r {
            if woken {
                st.pass_on();
            }
            return Err(RecvTimeoutError::Disconnected);
        }
        Ok(st)
    }

    /// How a sending *task* waits on a full channel: queued with its value
    /// under `st` (the lock it found the channel full with), parked until a
    /// receiver takes the value or the receiver goes, parked again after a
    /// wake-up that was neither.
    ///
    /// If the task is unwound out of the pause, the value is withdrawn
    /// unless a receiver took it already (then the send happened), and
    /// dropped after the lock is released, since its destructor may use
    /// this channel.
    ///
    /// # Errors
    ///
    /// As for [`ChanFlavor::wait_sender`].
    pub(crate) fn park_sender(
        &self,
        mut st: Guard<'_, T, F>,
        value: T,
    ) -> Result<(), SendError<T>> {
        let mut token = park_token();
        let (waiter, mut _keep) = F::task_sender(token);
        let id = st.queue_sender(waiter, value);
        drop(st);
        let guard = OnDrop::new(|| {
            let withdrawn = self.lock().sendq.remove(id);
            drop(withdrawn);
        });
        loop {
            let r = park_on(token, None, ParkedOn::Channel);
            let mut st = self.lock();
            // A task that is unwinding cannot wait: its send fails unless
            // it happened already.
            if let Some(sent) = st.sent(id, matches!(r, Resume::Cancelled)) {
                guard.defuse();
                return sent;
            }
            // Still queued after a wake-up that was not a hand-over: wait
            // again in the same place, under a fresh token.
            token = park_token();
            let (waiter, keep) = F::task_sender(token);
            _keep = keep;
            if let Some(p) = st.sendq.get_mut(id) {
                p.waiter = waiter;
            }
        }
    }

    /// True if a receive would not find the channel empty: a message
    /// waits, or the channel is closed.
    pub(crate) fn is_ready(&self) -> bool {
        self.lock().receivable()
    }

    /// Queues the pause `token` of a [`Select`](super::Select) as a waiting
    /// receiver.
    pub(crate) fn register(&self, token: ParkToken) -> Registration {
        self.lock().register(F::task_receiver(token))
    }

    /// Queues the pause `token` of a [`Select`](super::Select) with a send
    /// case, to be woken when a send may succeed.
    pub(crate) fn register_space(&self, token: ParkToken) -> Registration {
        let (entry, fired, keep) = F::task_receiver(token);
        Registration {
            id: self.lock().spaceq.push(entry),
            fired,
            _keep: keep,
        }
    }

    /// Takes a send case's entry out again. Nothing to hand on: every
    /// waiter for room is woken at once.
    pub(crate) fn unregister_space(&self, reg: &Registration) {
        let gone = self.lock().spaceq.remove(reg.id);
        drop(gone);
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
            F::wake_all(&mut st.recvq);
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
            for p in st.sendq.iter() {
                F::wake_sender(&p.waiter);
            }
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
