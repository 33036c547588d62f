//! Single-thread channels ([`channel`], [`sync_channel`] and their
//! handles) and synchronisation ([`Mutex`], [`Semaphore`], [`WaitGroup`],
//! [`Barrier`], [`Notify`], [`Event`]), for the tasks of one scheduler.
//! (For channels between threads, see [`mpsc`](super::mpsc), which has the
//! same API.)
//!
//! ```
//! use yieldloop::sync::local;
//!
//! yieldloop::run(|| {
//!     let (tx, rx) = local::channel();
//!     yieldloop::spawn(move || {
//!         for i in 0..3 {
//!             tx.send(i).unwrap();
//!         }
//!     });
//!     assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
//! });
//! ```
//!
//! They are the channels and primitives of [`sync`](super) in its
//! single-thread flavor: the same code (the channel core, each
//! primitive's logic, the one waiter list) as the cross-thread kinds, made
//! with a `RefCell` where those take a lock. The state sits in an
//! `Rc<RefCell<..>>` (or a `RefCell` the caller shares through an `Rc`),
//! not behind a lock: every handle lives on one scheduler's thread (none of
//! them is `Sync`), and no borrow is ever held across a pause, so a borrow
//! can never be contended. Every waiter is a task of that scheduler, woken
//! through its [`ParkToken`](crate::raw::ParkToken) without any atomic
//! operation.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::chan::{self, channel_handles};
use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::flavor::Local;

mod mutex;
mod notify;
mod semaphore;
mod waitgroup;

pub use mutex::{Mutex, MutexGuard};
pub use notify::{Event, Notify};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use waitgroup::{Barrier, WaitGroup};

/// The shared state of one channel.
pub(crate) type Chan<T> = chan::Chan<T, Local>;

channel_handles! {
    shared: Rc<Chan>,

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
    ///     let (tx, rx) = yieldloop::sync::local::channel();
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
    /// let (tx, _rx) = yieldloop::sync::local::channel::<u8>();
    /// needs_send(tx);
    /// ```
    pub fn channel;

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
    ///     let (tx, rx) = yieldloop::sync::local::sync_channel(2);
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
    pub fn sync_channel;

    /// The sending half of an unbounded [`channel`]. Clone it for more
    /// senders; the channel closes for the receiver when the last one drops.
    pub struct Sender {
        /// Sends `value`. Never pauses.
        ///
        /// # Errors
        ///
        /// [`SendError`], carrying `value` back, if the receiver is gone.
        pub fn send;
    }

    /// The sending half of a bounded [`sync_channel`].
    pub struct SyncSender {
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
        pub fn send;

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
        ///     let (tx, rx) = yieldloop::sync::local::sync_channel(1);
        ///     tx.try_send(1).unwrap();
        ///     assert!(matches!(tx.try_send(2), Err(TrySendError::Full(2))));
        ///     assert_eq!(rx.recv(), Ok(1));
        /// });
        /// ```
        pub fn try_send;
    }

    /// The receiving half of a [`channel`] or [`sync_channel`].
    ///
    /// It is not `Clone`, but it may be shared between tasks of one thread
    /// (through an `Rc`); receivers waiting together are served first come,
    /// first served, and each message goes to exactly one of them.
    pub struct Receiver {
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
        pub fn recv;

        /// Receives a message if one is there, without pausing.
        ///
        /// # Errors
        ///
        /// [`TryRecvError::Empty`] if nothing is there now,
        /// [`TryRecvError::Disconnected`] if nothing is there and every sender
        /// is gone.
        pub fn try_recv;

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
        pub fn recv_timeout;

        /// Like [`recv`](Self::recv), giving up at `deadline`.
        ///
        /// # Errors
        ///
        /// As for [`recv_timeout`](Self::recv_timeout).
        ///
        /// # Panics
        ///
        /// Panics if it must pause outside a task.
        pub fn recv_deadline;

        /// An iterator that receives until the channel is closed and drained.
        pub fn iter;

        /// An iterator over the messages there now; it never pauses.
        pub fn try_iter;

        /// Messages waiting in the buffer now (parked senders' values not
        /// counted).
        pub fn len(&self) -> usize {
            self.chan.len()
        }

        /// True if no message waits in the buffer.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    /// Iterator of [`Receiver::iter`]: receives until the channel is closed.
    pub struct Iter;
    /// Iterator of [`Receiver::try_iter`]: what is there now.
    pub struct TryIter;
    /// Owning iterator of a [`Receiver`]: receives until the channel is closed.
    pub struct IntoIter;
}
