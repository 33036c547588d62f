//! A channel whose every receiver sees every value, in the order sent.
//! Cross-thread: the handles are `Send` (for `T: Send`), and a receiver
//! waits by pausing its task (on any worker) or, on a plain thread, by
//! blocking.
//!
//! The channel keeps the last `capacity` values. A receiver that falls
//! further behind than that has missed the oldest ones: its next receive
//! says how many ([`RecvError::Lagged`]) and it goes on from the oldest
//! value still kept. Senders never wait for slow receivers.
//!
//! For events every worker must act on (an invalidation per key, a chat
//! room's messages). For "the latest state" use [`watch`](super::watch),
//! for one consumer per value [`mpsc`](super::mpsc).
//!
//! Costs: a send takes one lock, stores the value once and wakes every
//! waiting receiver; each receive takes the lock and clones the value.
//!
//! # Examples
//!
//! ```
//! use yieldloop::sync::broadcast;
//!
//! let (tx, rx) = broadcast::channel::<u32>(16);
//! let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
//! let sums: Vec<_> = (0..2)
//!     .map(|w| {
//!         let mut rx = if w == 0 { rx.resubscribe() } else { tx.subscribe() };
//!         rt.spawn_on(w, move || {
//!             let mut sum = 0;
//!             while let Ok(v) = rx.recv() {
//!                 sum += v;
//!             }
//!             sum
//!         })
//!     })
//!     .collect();
//! drop(rx);
//! for v in 1..=10 {
//!     tx.send(v).unwrap();
//! }
//! drop(tx);
//! for s in sums {
//!     assert_eq!(s.join().unwrap(), 55);
//! }
//! ```

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::error::SendError;
use super::fanout::{Channel, Counted, ReceiverShare, SenderShare};
use super::flavor::Wakeups;
use super::wait::NotReady;

/// Why a receive got no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Every sender is gone and this receiver has seen every value.
    Closed,
    /// This receiver fell behind by more than the capacity and missed this
    /// many values; the next receive gives the oldest value still kept.
    Lagged(u64),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("channel closed"),
            RecvError::Lagged(n) => write!(f, "receiver lagged behind by {n} values"),
        }
    }
}

impl Error for RecvError {}

/// Why a receive that does not wait, or waits for a while, got no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing new yet (or, for a timed receive, nothing new in time).
    Empty,
    /// As [`RecvError::Closed`].
    Closed,
    /// As [`RecvError::Lagged`].
    Lagged(u64),
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("channel empty"),
            TryRecvError::Closed => f.write_str("channel closed"),
            TryRecvError::Lagged(n) => write!(f, "receiver lagged behind by {n} values"),
        }
    }
}

impl Error for TryRecvError {}

/// What the handles share. Values are dropped outside its lock.
struct State<T> {
    /// The values kept, oldest first; the first has number `head`.
    buf: VecDeque<T>,
    cap: usize,
    /// The number of the oldest value kept.
    head: u64,
}

impl<T> State<T> {
    /// The number the next value sent will get.
    fn tail(&self) -> u64 {
        self.head + self.buf.len() as u64
    }
}

/// Creates a broadcast channel that keeps the last `capacity` values.
///
/// # Panics
///
/// If `capacity` is 0.
///
/// # Examples
///
/// ```
/// use yieldloop::sync::broadcast::{self, RecvError};
///
/// let (tx, mut rx) = broadcast::channel(2);
/// for v in 0..5 {
///     tx.send(v).unwrap();
/// }
/// // 0, 1 and 2 were pushed out by 3 and 4.
/// assert_eq!(rx.recv(), Err(RecvError::Lagged(3)));
/// assert_eq!(rx.recv(), Ok(3));
/// assert_eq!(rx.recv(), Ok(4));
/// drop(tx);
/// assert_eq!(rx.recv(), Err(RecvError::Closed));
/// ```
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(
        capacity > 0,
        "yieldloop: a broadcast channel needs capacity"
    );
    let (tx, rx) = Channel::open(State {
        buf: VecDeque::with_capacity(capacity),
        cap: capacity,
        head: 0,
    });
    (
        Sender { shared: tx },
        Receiver {
            shared: rx,
            next: 0,
        },
    )
}

/// The sending half of a broadcast [`channel`]; cloning it gives another
/// sender.
///
/// The last sender dropped closes the channel: waiting receivers wake,
/// take what is left, then learn it is over.
pub struct Sender<T> {
    shared: SenderShare<State<T>>,
}

/// A receiving half of a broadcast [`channel`]; get more with
/// [`Sender::subscribe`] or [`Receiver::resubscribe`].
pub struct Receiver<T> {
    shared: ReceiverShare<State<T>>,
    /// The number of the next value this receiver takes.
    next: u64,
}

impl<T> Sender<T> {
    /// Sends `value` to every receiver there is now; returns how many.
    /// Never waits: the oldest value kept makes way if the channel is
    /// full.
    ///
    /// # Errors
    ///
    /// [`SendError`], with `value`, if there is no receiver.
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let (n, wake, dropped) = {
            let mut st = self.shared.lock();
            if st.receivers == 0 {
                return Err(SendError(value));
            }
            let dropped = if st.buf.len() == st.cap {
                st.head += 1;
                st.buf.pop_front()
            } else {
                None
            };
            st.buf.push_back(value);
            (st.receivers, st.waiters.take_all(), dropped)
        };
        wake.wake();
        drop(dropped);
        Ok(n)
    }

    /// A new receiver, which receives the values sent from now on.
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver::from_now(&self.shared)
    }

    /// How many receivers there are.
    pub fn receiver_count(&self) -> usize {
        self.shared.lock().receivers
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T: Clone> Receiver<T> {
    /// Receives the next value: pauses the calling task, or blocks the
    /// thread outside any task, until there is one.
    ///
    /// # Cancellation
    ///
    /// Inside a [`timeout`](crate::timeout()) scope, or cancelled, the
    /// task stops waiting and nothing is received.
    ///
    /// # Errors
    ///
    /// [`RecvError::Lagged`] if this receiver missed values (the next
    /// receive goes on from the oldest kept); [`RecvError::Closed`] once
    /// every sender is gone and everything sent was received, or if it
    /// would have to pause in a task that is unwinding.
    pub fn recv(&mut self) -> Result<T, RecvError> {
        match self.recv_deadline(None) {
            Ok(v) => Ok(v),
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(_) => Err(RecvError::Closed),
        }
    }

    /// Receives the next value if there is one, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] when nothing new is there, the others as
    /// for [`recv`](Self::recv).
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut st = self.shared.lock();
        match Self::take(&mut st, &mut self.next) {
            Some(r) => r,
            None => Err(TryRecvError::Empty),
        }
    }

    /// [`recv`](Self::recv), giving up after `timeout` with
    /// [`TryRecvError::Empty`].
    ///
    /// # Errors
    ///
    /// As for [`try_recv`](Self::try_recv).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<T, TryRecvError> {
        self.recv_deadline(crate::scheduler::timers::now().checked_add(timeout))
    }

    /// [`recv`](Self::recv), giving up at `deadline` (`None`: never) with
    /// [`TryRecvError::Empty`].
    ///
    /// # Errors
    ///
    /// As for [`try_recv`](Self::try_recv).
    pub fn recv_deadline(&mut self, deadline: Option<Instant>) -> Result<T, TryRecvError> {
        let next = &mut self.next;
        let r = self.shared.wait(|st| Self::take(st, next), deadline);
        Self::finish(r)
    }

    /// What a receiver finds under the lock: `Some` once it can stop.
    fn take(st: &mut Counted<State<T>>, next: &mut u64) -> Option<Result<T, TryRecvError>> {
        if *next < st.head {
            let missed = st.head - *next;
            *next = st.head;
            return Some(Err(TryRecvError::Lagged(missed)));
        }
        // `next` never passes the tail: it starts at or before it and
        // moves one value at a time.
        let i = (*next - st.head) as usize;
        if let Some(v) = st.buf.get(i) {
            *next += 1;
            return Some(Ok(v.clone()));
        }
        (st.senders == 0).then_some(Err(TryRecvError::Closed))
    }

    fn finish(r: Result<Result<T, TryRecvError>, NotReady>) -> Result<T, TryRecvError> {
        match r {
            Ok(r) => r,
            Err(NotReady::TimedOut) => Err(TryRecvError::Empty),
            Err(NotReady::Unwinding) => Err(TryRecvError::Closed),
        }
    }

    /// [`recv`](Self::recv) in a task, pausing through `pause`.
    #[cfg(loom)]
    pub(crate) fn recv_with(
        &mut self,
        pause: &mut impl crate::task::park::Pause,
    ) -> Result<T, TryRecvError> {
        let next = &mut self.next;
        let r = self.shared.wait_with(|st| Self::take(st, next), pause);
        Self::finish(r)
    }
}

impl<T> Receiver<T> {
    /// A new receiver of the same channel, which receives the values sent
    /// from now on (not those this one has yet to receive).
    pub fn resubscribe(&self) -> Receiver<T> {
        Receiver::from_now(&self.shared)
    }

    /// A new receiver of `chan`, starting at the values sent from now on.
    fn from_now(chan: &Arc<Channel<State<T>>>) -> Receiver<T> {
        let (shared, st) = chan.subscribe();
        let next = st.tail();
        drop(st);
        Receiver { shared, next }
    }

    /// How many values this receiver has yet to receive (those it missed
    /// not counted).
    pub fn len(&self) -> usize {
        let st = self.shared.lock();
        (st.tail() - self.next.max(st.head)) as usize
    }

    /// True if this receiver has nothing to receive now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("broadcast::Sender")
            .field("kept", &st.buf.len())
            .field("capacity", &st.cap)
            .field("receivers", &st.receivers)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("broadcast::Receiver")
            .field("next", &self.next)
            .field("tail", &st.tail())
            .field("waiting", &st.waiters.len())
            .finish_non_exhaustive()
    }
}
