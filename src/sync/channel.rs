//! Single-thread channels: [`channel`], [`sync_channel`] and their handles.
//!
//! The state sits in an `Rc<RefCell<..>>`, not behind a lock: every handle
//! lives on one scheduler's thread (none of them is `Send`), and no borrow
//! is ever held across a pause, so a borrow can never be contended.
//!
//! Two waiter queues hang off the state:
//!
//! - `recvq`: receivers (and [`Select`](super::Select)s) waiting for a
//!   message. A sender puts the value in the buffer and unparks the first
//!   waiter that is still parked; that receiver takes it when it runs. A
//!   receiver unwound after being picked hands the wake-up to the next one.
//! - `sendq`: senders of a full bounded channel, each *holding its value*.
//!   A receiver that frees a slot moves the first parked sender's value
//!   into the buffer and unparks it: its send is done. Parked senders are
//!   served strictly in order, and a sender's value is never taken unless
//!   its unpark succeeded, so a send that was cancelled or timed out never
//!   happened.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::select::sealed::{Fired, Registration, SelectRecv};
use super::waitq::{self, park_local, OnDrop, Signal, WaitQueue, Woken};
use crate::park::{park, park_token};
use crate::protocol::ParkToken;
use crate::protocol::Resume;

/// The shared state of one channel.
pub(crate) struct Chan<T> {
    state: RefCell<State<T>>,
}

struct State<T> {
    buf: VecDeque<T>,
    /// `None`: unbounded. `Some(0)`: rendezvous.
    cap: Option<usize>,
    /// Live `Sender`/`SyncSender` handles.
    senders: usize,
    receiver_alive: bool,
    recvq: WaitQueue<Signal>,
    /// # Invariant
    /// With a buffer (`cap > 0`), parked senders exist only while the
    /// buffer is full, give or take entries whose task stopped waiting.
    sendq: WaitQueue<Parked<T>>,
}

/// A sender parked on a full channel, with the value it is sending.
struct Parked<T> {
    token: ParkToken,
    value: T,
}

impl<T> State<T> {
    /// True if a receiver would find something to do: a message, a parked
    /// sender of a rendezvous, or the end of the channel.
    fn receivable(&self) -> bool {
        !self.buf.is_empty() || !self.sendq.is_empty() || self.senders == 0
    }

    /// Takes the value of the first parked sender that is still parked,
    /// unparking it: its send has happened.
    fn take_parked_sender(&mut self) -> Option<T> {
        self.sendq.take_first(|p| p.token.unpark()).map(|p| p.value)
    }

    /// The non-blocking receive every receive is made of.
    fn try_recv(&mut self) -> Result<T, TryRecvError> {
        if let Some(v) = self.buf.pop_front() {
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

    /// Wakes one waiting receiver. Returns whether one was woken.
    fn wake_receiver(&mut self) -> bool {
        waitq::wake_one(&mut self.recvq)
    }

    /// A receiver picked by a wake-up is going away without receiving:
    /// pick the next one, if there is something for it.
    fn pass_on(&mut self, woken: Woken) {
        if woken == Woken::One && self.receivable() {
            self.wake_receiver();
        }
    }
}

impl<T> Chan<T> {
    fn new(cap: Option<usize>) -> Rc<Chan<T>> {
        Rc::new(Chan {
            state: RefCell::new(State {
                buf: VecDeque::new(),
                cap,
                senders: 1,
                receiver_alive: true,
                recvq: WaitQueue::default(),
                sendq: WaitQueue::default(),
            }),
        })
    }

    /// Sends without ever pausing: the unbounded send, and the fast path of
    /// the bounded one. Gives the value back if the channel is full.
    fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut st = self.state.borrow_mut();
        if !st.receiver_alive {
            return Err(TrySendError::Disconnected(value));
        }
        let room = match st.cap {
            None => true,
            // Parked senders go first: no overtaking them.
            Some(c) if c > 0 => st.buf.len() < c && st.sendq.is_empty(),
            // A rendezvous succeeds only into the hands of a waiting
            // receiver; it is woken and will take the value from the
            // buffer.
            Some(_) => st.wake_receiver(),
        };
        if !room {
            return Err(TrySendError::Full(value));
        }
        st.buf.push_back(value);
        if st.cap != Some(0) {
            st.wake_receiver();
        }
        Ok(())
    }

    /// The bounded send: the fast path, else park with the value until a
    /// receiver takes it.
    fn send(&self, value: T) -> Result<(), SendError<T>> {
        let value = match self.try_send(value) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(v)) => return Err(SendError(v)),
            Err(TrySendError::Full(v)) => v,
        };
        let mut token = park_token();
        let id = {
            let mut st = self.state.borrow_mut();
            let id = st.sendq.push(Parked { token, value });
            // A rendezvous needs a receiver to come and take it.
            st.wake_receiver();
            id
        };
        // Unwound while parked: withdraw the value unless it was taken
        // already (then the send happened). It is dropped after the borrow
        // ends, since its destructor may use this channel.
        let guard = OnDrop::new(|| {
            let withdrawn = self.state.borrow_mut().sendq.remove(id);
            drop(withdrawn);
        });
        loop {
            let r = park(token, None);
            let mut st = self.state.borrow_mut();
            if !st.sendq.contains(id) {
                guard.defuse();
                return Ok(());
            }
            if !st.receiver_alive || matches!(r, Resume::Cancelled) {
                // The receiver is gone, or this task is unwinding and can
                // not wait: the send fails and the value goes back.
                let parked = st.sendq.remove(id);
                drop(st);
                guard.defuse();
                return match parked {
                    Some(p) => Err(SendError(p.value)),
                    None => Ok(()),
                };
            }
            // Still queued after a wake-up that was not a hand-over: wait
            // again in the same place, under a fresh token.
            token = park_token();
            if let Some(p) = st.sendq.get_mut(id) {
                p.token = token;
            }
        }
    }

    fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        loop {
            match self.state.borrow_mut().try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // A deadline `<= now` has passed: one last look was taken above.
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            let (r, _) = park_local(
                &self.state,
                |s| &mut s.recvq,
                deadline,
                |s, woken| s.pass_on(woken),
            );
            if let Resume::Cancelled = r {
                // Unwinding: this task cannot wait, so for it the channel
                // is closed.
                return Err(RecvTimeoutError::Disconnected);
            }
            // Woken, timed out or not: look again. A wake-up whose message
            // another receiver took in the meantime just means waiting on.
        }
    }
}

/// Creates an unbounded single-thread channel: sends never pause, a
/// receive pauses the task until a message comes.
///
/// Single-thread: the handles are not `Send`; use them among the tasks of
/// one scheduler. For channels between threads see [`mpsc`](super::mpsc).
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let (tx, rx) = yieldloop::sync::channel();
///     for i in 0..3 {
///         let tx = tx.clone();
///         yieldloop::spawn(move || tx.send(i * 10).unwrap());
///     }
///     drop(tx);
///     // The loop ends when every sender is gone.
///     let mut got: Vec<i32> = rx.iter().collect();
///     got.sort();
///     assert_eq!(got, [0, 10, 20]);
/// });
/// ```
///
/// The handles stay on their thread:
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let (tx, _rx) = yieldloop::sync::channel::<u8>();
/// needs_send(tx);
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = Chan::new(None);
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// Creates a bounded single-thread channel holding at most `bound`
/// messages: a send on a full channel pauses the task until a receive makes
/// room (backpressure). Parked senders are served in the order they came.
///
/// With `bound == 0` it is a rendezvous channel with no buffer: a send
/// completes only into the hands of a receiver, pausing until one takes the
/// value (or returning at once if a receiver is already parked waiting for
/// it, which is then woken to take it).
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc};
///
/// yieldloop::run(|| {
///     let (tx, rx) = yieldloop::sync::sync_channel(2);
///     let sent = Rc::new(Cell::new(0));
///     let s = sent.clone();
///     let producer = yieldloop::spawn(move || {
///         for i in 0..5 {
///             tx.send(i).unwrap();
///             s.set(s.get() + 1);
///         }
///     });
///     yieldloop::yield_now();
///     // The producer filled both slots and is parked on the third send.
///     assert_eq!(sent.get(), 2);
///     assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
///     producer.join().unwrap();
/// });
/// ```
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let chan = Chan::new(Some(bound));
    (SyncSender { chan: chan.clone() }, Receiver { chan })
}

/// The sending half of an unbounded [`channel`]. Clone it for more
/// senders; the channel closes for the receiver when the last one drops.
pub struct Sender<T> {
    chan: Rc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`. Never pauses.
    ///
    /// # Errors
    ///
    /// [`SendError`], carrying `value` back, if the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.chan
            .try_send(value)
            .map_err(|e| SendError(e.into_inner()))
    }
}

/// The sending half of a bounded [`sync_channel`].
pub struct SyncSender<T> {
    chan: Rc<Chan<T>>,
}

impl<T> SyncSender<T> {
    /// Sends `value`, pausing the task while the channel is full. Parked
    /// senders are served first come, first served.
    ///
    /// # Cancellation
    ///
    /// If the task is cancelled (or a [`timeout`](crate::timeout) scope
    /// expires) while it is parked here, the value is withdrawn and
    /// dropped: either the send happened (a receiver took the value before)
    /// or it did not happen at all.
    ///
    /// # Errors
    ///
    /// [`SendError`], carrying `value` back, if the receiver is gone (also
    /// when it goes while this send is parked), or if the send would have
    /// to pause in a task that is unwinding.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.chan.send(value)
    }

    /// Sends `value` if that can be done without pausing.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] if there is no room (for a rendezvous
    /// channel: no receiver is waiting), [`TrySendError::Disconnected`] if
    /// the receiver is gone; both carry `value` back.
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::sync::TrySendError;
    ///
    /// yieldloop::run(|| {
    ///     let (tx, rx) = yieldloop::sync::sync_channel(1);
    ///     tx.try_send(1).unwrap();
    ///     assert!(matches!(tx.try_send(2), Err(TrySendError::Full(2))));
    ///     assert_eq!(rx.recv(), Ok(1));
    /// });
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(value)
    }
}

/// The receiving half of a [`channel`] or [`sync_channel`].
///
/// It is not `Clone`, but it may be shared between tasks of one thread
/// (through an `Rc`); receivers waiting together are served first come,
/// first served, and each message goes to exactly one of them.
pub struct Receiver<T> {
    chan: Rc<Chan<T>>,
}

impl<T> Receiver<T> {
    /// Receives the next message, pausing the task until one comes.
    ///
    /// Messages sent before the last sender dropped are still delivered;
    /// only then does `recv` fail.
    ///
    /// # Cancellation
    ///
    /// A task cancelled while parked here receives nothing; if it had
    /// already been picked for a message, the next waiting receiver is
    /// woken for it instead, so the message is not stranded.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once the channel is empty and every sender is gone,
    /// or if it would have to pause in a task that is unwinding.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.chan.recv_deadline(None).map_err(|_| RecvError)
    }

    /// Receives a message if one is there, without pausing.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] if nothing is there now,
    /// [`TryRecvError::Disconnected`] if nothing is there and every sender
    /// is gone.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.state.borrow_mut().try_recv()
    }

    /// Like [`recv`](Self::recv), giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if the time ran out first,
    /// [`RecvTimeoutError::Disconnected`] as for `recv`.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = crate::time::deadline_after(timeout);
        self.chan.recv_deadline(Some(deadline))
    }

    /// Like [`recv`](Self::recv), giving up at `deadline`.
    ///
    /// # Errors
    ///
    /// As for [`recv_timeout`](Self::recv_timeout).
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.chan.recv_deadline(Some(deadline))
    }

    /// An iterator that receives until the channel is closed and drained.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages there now; it never pauses.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// Messages waiting in the buffer now (parked senders' values not
    /// counted).
    pub fn len(&self) -> usize {
        self.chan.state.borrow().buf.len()
    }

    /// True if no message waits in the buffer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.state.borrow_mut().senders += 1;
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> Self {
        self.chan.state.borrow_mut().senders += 1;
        SyncSender {
            chan: self.chan.clone(),
        }
    }
}

/// The last sender closes the channel: every waiting receiver wakes up to
/// drain what is left and then learn it is over.
fn drop_sender<T>(chan: &Chan<T>) {
    let mut st = chan.state.borrow_mut();
    st.senders -= 1;
    if st.senders == 0 {
        waitq::wake_all(&mut st.recvq);
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        drop_sender(&self.chan);
    }
}

impl<T> Drop for SyncSender<T> {
    fn drop(&mut self) {
        drop_sender(&self.chan);
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let buffered = {
            let mut st = self.chan.state.borrow_mut();
            st.receiver_alive = false;
            // Parked senders wake, find their value still queued and get it
            // back in a `SendError`; their entries stay for them to take.
            for p in st.sendq.iter() {
                p.token.unpark();
            }
            std::mem::take(&mut st.buf)
        };
        // Dropped outside the borrow: a message's destructor may use the
        // channel.
        drop(buffered);
    }
}

impl<T> SelectRecv for Receiver<T> {
    fn is_ready(&self) -> bool {
        self.chan.state.borrow().receivable()
    }

    fn register(&self, token: ParkToken) -> Registration {
        let woken = Rc::new(std::cell::Cell::new(Woken::Not));
        let id = self
            .chan
            .state
            .borrow_mut()
            .recvq
            .push(Signal::new(token, woken.clone()));
        Registration {
            id,
            fired: Fired::Local(woken),
            _keep: None,
        }
    }

    fn unregister(&self, reg: &Registration) -> bool {
        self.chan.state.borrow_mut().recvq.remove(reg.id);
        reg.fired.get()
    }

    fn pass_on(&self) {
        self.chan.state.borrow_mut().pass_on(Woken::One);
    }
}

impl<T> super::Selectable for Receiver<T> {}

/// Iterator of [`Receiver::iter`]: receives until the channel is closed.
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

/// Iterator of [`Receiver::try_iter`]: what is there now.
#[derive(Debug)]
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// Owning iterator of a [`Receiver`]: receives until the channel is closed.
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// What the handles show in `{:?}`: counts, never the messages.
fn debug_chan<T>(name: &str, chan: &Chan<T>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = chan.state.borrow();
    f.debug_struct(name)
        .field("buffered", &st.buf.len())
        .field("capacity", &st.cap)
        .field("senders", &st.senders)
        .field("receiver_alive", &st.receiver_alive)
        .field("waiting_receivers", &st.recvq.len())
        .field("waiting_senders", &st.sendq.len())
        .finish()
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_chan("Sender", &self.chan, f)
    }
}

impl<T> fmt::Debug for SyncSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_chan("SyncSender", &self.chan, f)
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_chan("Receiver", &self.chan, f)
    }
}
