//! Channels between threads, with the names and shape of
//! `std::sync::mpsc`: [`channel`], [`sync_channel`], [`Sender`],
//! [`SyncSender`], [`Receiver`]. Their errors ([`RecvError`],
//! [`TrySendError`] and the others) are [`sync`](super)'s, shared with the
//! single-thread channels of [`local`](super::local).
//!
//! The handles are `Send` (for `T: Send`), and each side works both inside
//! tasks and on plain threads:
//!
//! - in a task, a receive (or a send on a full bounded channel) *parks the
//!   task*: its scheduler goes on running other tasks, and the thread that
//!   makes progress possible wakes it through a
//!   [`RemoteUnparker`](crate::raw::RemoteUnparker) handle, which
//!   interrupts that scheduler's poll;
//! - on a plain thread (no `yieldloop::run` on it), it blocks the thread,
//!   like std's channels, until it is unparked.
//!
//! So the schedulers of several threads, and plain threads, can feed each
//! other. The state is an `Arc<Mutex<..>>`: a std mutex, not a task-aware
//! one, because nothing ever pauses while holding it (the lock is taken for
//! a few instructions and released before any park).
//!
//! # Waking across threads
//!
//! A task waiter on the waker's own thread is unparked directly, and if it
//! turns out to have stopped waiting the next waiter is tried. A task on
//! another thread cannot be asked synchronously, so it is *assumed* to take
//! the wake-up; if it does not use it (it timed out, was cancelled, or
//! another receiver took the message) it hands the wake-up on itself. A
//! parked sender's value moves into the channel when a receiver frees a
//! slot; a parked sender that is cancelled withdraws its value under the
//! lock first, so a send either happened or did not.
//!
//! # Examples
//!
//! ```
//! use std::thread;
//! use yieldloop::sync::mpsc;
//!
//! let (tx, rx) = mpsc::channel();
//! // Two threads, each with its own scheduler, and one plain thread.
//! let workers: Vec<_> = (0..2)
//!     .map(|w| {
//!         let tx = tx.clone();
//!         thread::spawn(move || {
//!             yieldloop::run(move || {
//!                 for i in 0..3 {
//!                     tx.send(w * 100 + i).unwrap();
//!                     yieldloop::yield_now();
//!                 }
//!             })
//!         })
//!     })
//!     .collect();
//! let plain = thread::spawn(move || tx.send(999).unwrap());
//!
//! let total = yieldloop::run(move || {
//!     // Parks the main task until the other threads send.
//!     rx.iter().sum::<i32>()
//! });
//! assert_eq!(total, (0 + 1 + 2) + (100 + 101 + 102) + 999);
//! for w in workers {
//!     w.join().unwrap();
//! }
//! plain.join().unwrap();
//! ```

use std::time::{Duration, Instant};

use super::chan::{self, channel_handles};
use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::flavor::CrossThread;
use crate::sys::threads::Arc;

/// The shared state of one channel.
type Chan<T> = chan::Chan<T, CrossThread>;

channel_handles! {
    shared: Arc<Chan>,

    /// Creates an unbounded channel between threads. Sends never pause or
    /// block; a receive parks the task (or blocks the plain thread) until a
    /// message comes.
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::sync::mpsc;
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let producer = std::thread::spawn(move || {
    ///     for i in 0..5 {
    ///         tx.send(i).unwrap();
    ///     }
    /// });
    /// let got: Vec<i32> = yieldloop::run(move || rx.iter().collect());
    /// assert_eq!(got, [0, 1, 2, 3, 4]);
    /// producer.join().unwrap();
    /// ```
    pub fn channel;

    /// Creates a bounded channel between threads holding at most `bound`
    /// messages. A send on a full channel parks the task, or blocks the plain
    /// thread, until a receive makes room; parked senders are served in the
    /// order they came. `bound == 0` makes a rendezvous channel, as for the
    /// single-thread [`sync_channel`](super::local::sync_channel).
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::sync::mpsc;
    ///
    /// let (tx, rx) = mpsc::sync_channel(1);
    /// // A plain thread: the second send blocks it until the task receives.
    /// let producer = std::thread::spawn(move || {
    ///     for i in 0..3 {
    ///         tx.send(i).unwrap();
    ///     }
    /// });
    /// let got: Vec<i32> = yieldloop::run(move || rx.iter().collect());
    /// assert_eq!(got, [0, 1, 2]);
    /// producer.join().unwrap();
    /// ```
    pub fn sync_channel;

    /// The sending half of an unbounded cross-thread [`channel`].
    pub struct Sender {
        /// Sends `value`. Never pauses or blocks (beyond the channel's lock).
        ///
        /// # Errors
        ///
        /// [`SendError`], carrying `value` back, if the receiver is gone.
        pub fn send;
    }

    /// The sending half of a bounded cross-thread [`sync_channel`].
    pub struct SyncSender {
        /// Sends `value`; while the channel is full, parks the task (inside a
        /// task) or blocks the thread (outside one).
        ///
        /// # Cancellation
        ///
        /// A task cancelled while parked here withdraws its value, unless a
        /// receiver took it first (then the send happened).
        ///
        /// # Errors
        ///
        /// [`SendError`], carrying `value` back, if the receiver is gone (also
        /// when it goes while this send waits), or if the send would have to
        /// pause in a task that is unwinding.
        pub fn send;

        /// Sends `value` if that can be done without waiting.
        ///
        /// # Errors
        ///
        /// [`TrySendError::Full`] or [`TrySendError::Disconnected`], carrying
        /// `value` back.
        pub fn try_send;
    }

    /// The receiving half of a cross-thread channel.
    ///
    /// It may be used from a task or a plain thread. It is also `Sync`: several
    /// threads may receive from one `&Receiver`, each message going to one of
    /// them, first come, first served.
    pub struct Receiver {
        /// Receives the next message; parks the task (or blocks the thread)
        /// until one comes.
        ///
        /// # Errors
        ///
        /// [`RecvError`] once the channel is empty and every sender is gone,
        /// or if it would have to pause in a task that is unwinding.
        pub fn recv;

        /// Receives a message if one is there, without waiting.
        ///
        /// # Errors
        ///
        /// [`TryRecvError::Empty`] or [`TryRecvError::Disconnected`].
        pub fn try_recv;

        /// Like [`recv`](Self::recv), giving up after `timeout`.
        ///
        /// # Errors
        ///
        /// [`RecvTimeoutError::Timeout`] if the time ran out first,
        /// [`RecvTimeoutError::Disconnected`] as for `recv`.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        /// use yieldloop::sync::{mpsc, RecvTimeoutError};
        ///
        /// let (tx, rx) = mpsc::channel::<u8>();
        /// // On a plain thread: blocks for 10 ms.
        /// assert_eq!(
        ///     rx.recv_timeout(Duration::from_millis(10)),
        ///     Err(RecvTimeoutError::Timeout)
        /// );
        /// drop(tx);
        /// assert_eq!(
        ///     rx.recv_timeout(Duration::from_millis(10)),
        ///     Err(RecvTimeoutError::Disconnected)
        /// );
        /// ```
        pub fn recv_timeout;

        /// Like [`recv`](Self::recv), giving up at `deadline`.
        ///
        /// # Errors
        ///
        /// As for [`recv_timeout`](Self::recv_timeout).
        pub fn recv_deadline;

        /// An iterator that receives until the channel is closed and drained.
        pub fn iter;

        /// An iterator over the messages there now; it never waits.
        pub fn try_iter;
    }

    /// Iterator of [`Receiver::iter`].
    pub struct Iter;
    /// Iterator of [`Receiver::try_iter`].
    pub struct TryIter;
    /// Owning iterator of a [`Receiver`].
    pub struct IntoIter;
}
