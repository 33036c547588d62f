//! Channels between threads, with the names and shape of
//! `std::sync::mpsc`: [`channel`], [`sync_channel`], [`Sender`],
//! [`SyncSender`], [`Receiver`].
//!
//! The handles are `Send` (for `T: Send`), and each side works both inside
//! tasks and on plain threads:
//!
//! - in a task, a receive (or a send on a full bounded channel) *parks the
//!   task*: its scheduler goes on running other tasks, and the thread that
//!   makes progress possible wakes it through a
//!   [`RemoteUnparker`] handle, which interrupts that
//!   scheduler's poll;
//! - on a plain thread (no `yieldloop::run` on it), it blocks the thread on
//!   a `Condvar`, like std's channels.
//!
//! So the schedulers of several threads, and plain threads, can feed each
//! other. The state is an `Arc<Mutex<..>>`: a std mutex, not a task-aware
//! one, because nothing ever pauses while holding it (the lock is taken for
//! a few instructions and released before any park or condvar wait).
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

use std::sync::PoisonError;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use super::chan::{self, channel_handles, Flavor, Guard};
pub use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::select::sealed::Fired;
use super::waitq::WaitQueue;
use crate::protocol::ParkToken;
use crate::sys::threads::atomic::{AtomicBool, Ordering};
use crate::sys::threads::{Arc, Condvar};
use crate::task::park::RemoteUnparker;

thread_local! {
    /// This thread's id, without the `Arc` clone of `thread::current()`.
    static THREAD: ThreadId = thread::current().id();
}

fn this_thread() -> ThreadId {
    THREAD.with(|t| *t)
}

/// The cross-thread flavor of the channel core: the state sits in a
/// `Mutex`, and a waiter is a task of any scheduler or a plain thread.
#[derive(Debug)]
struct CrossThread {
    /// Plain threads waiting to receive sleep on this one…
    recv_cv: Condvar,
    /// … and plain threads waiting to send on this one.
    send_cv: Condvar,
}

impl CrossThread {
    fn new() -> CrossThread {
        CrossThread {
            recv_cv: Condvar::new(),
            send_cv: Condvar::new(),
        }
    }
}

/// The shared state of one channel.
type Chan<T> = chan::Chan<T, CrossThread>;

/// One task or plain thread waiting on a cross-thread channel.
struct TaskOrThread {
    how: How,
    /// Set by whoever wakes it; the waiter reads it after its entry is
    /// gone, to know whether it holds a wake-up to use or hand on.
    fired: Arc<AtomicBool>,
}

enum How {
    /// A parked task: `token` on its own thread, `remote` from others.
    Task {
        token: ParkToken,
        remote: RemoteUnparker,
        thread: ThreadId,
    },
    /// A plain thread blocked on one of the channel's condvars.
    Thread,
}

impl TaskOrThread {
    /// A waiter for the calling task's pause `token`, and a second handle
    /// on its unparker that the task must keep until the pause is over.
    ///
    /// The second handle is there because a waker on another thread drops
    /// the waiter's handle right after unparking, and the scheduler counts
    /// live handles to decide whether a parked task can still be woken: with
    /// none left while the wake-up is still on its way, it would report a
    /// deadlock. The task's own handle keeps the count up until it runs.
    fn task(token: ParkToken, fired: Arc<AtomicBool>) -> (TaskOrThread, RemoteUnparker) {
        let remote = token.remote();
        let keep = remote.clone();
        let waiter = TaskOrThread {
            how: How::Task {
                token,
                remote,
                thread: this_thread(),
            },
            fired,
        };
        (waiter, keep)
    }

    fn thread(fired: Arc<AtomicBool>) -> TaskOrThread {
        TaskOrThread {
            how: How::Thread,
            fired,
        }
    }

    /// Wakes the waiter. Returns false only when it is known to have
    /// stopped waiting (a task of this thread); see the module docs.
    fn wake(&self, cv: &Condvar) -> bool {
        match &self.how {
            How::Task { token, thread, .. } if *thread == this_thread() => {
                if token.unpark() {
                    self.fired.store(true, Ordering::Release);
                    true
                } else {
                    false
                }
            }
            How::Task { remote, .. } => {
                self.fired.store(true, Ordering::Release);
                remote.unpark();
                true
            }
            How::Thread => {
                self.fired.store(true, Ordering::Release);
                // All of them: each sleeper checks its own flag.
                cv.notify_all();
                true
            }
        }
    }
}

/// True when the caller is a task (and may park), false on a plain thread.
fn in_task() -> bool {
    crate::task::spawn::current_id().is_some()
}

// `#[inline]` throughout, for the reason given at the single-thread flavor.
impl Flavor for CrossThread {
    type Lock<S> = crate::sys::threads::Mutex<S>;
    type Receiver = TaskOrThread;
    type Sender = TaskOrThread;

    #[inline]
    fn wake_one(&self, q: &mut WaitQueue<TaskOrThread>) -> bool {
        q.take_first(|w| w.wake(&self.recv_cv)).is_some()
    }

    #[inline]
    fn wake_all(&self, q: &mut WaitQueue<TaskOrThread>) {
        for (_, w) in q.take_all() {
            w.wake(&self.recv_cv);
        }
    }

    #[inline]
    fn wake_sender(&self, w: &TaskOrThread) -> bool {
        w.wake(&self.send_cv)
    }

    #[inline]
    fn task_receiver(token: ParkToken) -> (TaskOrThread, Fired, Option<RemoteUnparker>) {
        let fired = Arc::new(AtomicBool::new(false));
        let (waiter, keep) = TaskOrThread::task(token, fired.clone());
        (waiter, Fired::Shared(fired), Some(keep))
    }

    #[inline]
    fn task_sender(token: ParkToken) -> (TaskOrThread, Option<RemoteUnparker>) {
        let (waiter, keep) = TaskOrThread::task(token, Arc::new(AtomicBool::new(false)));
        (waiter, Some(keep))
    }

    #[inline]
    fn wait_receiver<'a, T>(
        chan: &'a Chan<T>,
        mut st: Guard<'a, T, CrossThread>,
        deadline: Option<Instant>,
    ) -> Result<Guard<'a, T, CrossThread>, RecvTimeoutError> {
        if in_task() {
            return chan.park_receiver(st, deadline);
        }
        // A plain thread sleeps on the condvar until a sender picks it.
        let fired = Arc::new(AtomicBool::new(false));
        let reg = st.register(
            (
                TaskOrThread::thread(fired.clone()),
                Fired::Shared(fired),
                None,
            ),
            &chan.flavor,
        );
        let cv = &chan.flavor.recv_cv;
        while !reg.fired.shared_get() {
            st = match deadline {
                None => cv.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let now = crate::scheduler::timers::now();
                    if now >= d {
                        break;
                    }
                    cv.wait_timeout(st, d - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        st.unregister(&reg);
        Ok(st)
    }

    #[inline]
    fn wait_sender<T>(
        chan: &Chan<T>,
        mut st: Guard<'_, T, CrossThread>,
        value: T,
    ) -> Result<(), SendError<T>> {
        if in_task() {
            return chan.park_sender(st, value);
        }
        // A plain thread sleeps on the condvar until a receiver takes the
        // value or goes.
        let waiter = TaskOrThread::thread(Arc::new(AtomicBool::new(false)));
        let id = st.queue_sender(waiter, value, &chan.flavor);
        loop {
            if let Some(sent) = st.sent(id, false) {
                return sent;
            }
            st = chan
                .flavor
                .send_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

channel_handles! {
    shared: Arc<Chan>,
    flavor: CrossThread::new(),

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
        /// use yieldloop::sync::mpsc::{self, RecvTimeoutError};
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
