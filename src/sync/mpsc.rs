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

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

pub use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use super::select::sealed::{Fired, Registration, SelectRecv};
use super::waitq::{OnDrop, WaitQueue};
use crate::park::{park, park_token, RemoteUnparker};
use crate::protocol::ParkToken;
use crate::protocol::Resume;

thread_local! {
    /// This thread's id, without the `Arc` clone of `thread::current()`.
    static THREAD: ThreadId = thread::current().id();
}

fn this_thread() -> ThreadId {
    THREAD.with(|t| *t)
}

/// State and condvars of one channel.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Plain threads waiting to receive sleep on this one…
    recv_cv: Condvar,
    /// … and plain threads waiting to send on this one.
    send_cv: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code panics while holding the lock (values are dropped after
        // it is released), so a poisoned lock still holds a sound state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct State<T> {
    buf: VecDeque<T>,
    /// `None`: unbounded. `Some(0)`: rendezvous.
    cap: Option<usize>,
    /// Live `Sender`/`SyncSender` handles.
    senders: usize,
    receiver_alive: bool,
    recvq: WaitQueue<Waiter>,
    /// Senders parked on a full channel, with their values.
    sendq: WaitQueue<Parked<T>>,
}

/// A sender parked with its value.
struct Parked<T> {
    waiter: Waiter,
    value: T,
}

/// One waiting task or thread.
struct Waiter {
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

impl Waiter {
    /// A waiter for the calling task's pause `token`, and a second handle
    /// on its unparker that the task must keep until the pause is over.
    ///
    /// The second handle is there because a waker on another thread drops
    /// the waiter's handle right after unparking, and the scheduler counts
    /// live handles to decide whether a parked task can still be woken: with
    /// none left while the wake-up is still on its way, it would report a
    /// deadlock. The task's own handle keeps the count up until it runs.
    fn task(token: ParkToken, fired: Arc<AtomicBool>) -> (Waiter, RemoteUnparker) {
        let remote = token.remote();
        let keep = remote.clone();
        let waiter = Waiter {
            how: How::Task {
                token,
                remote,
                thread: this_thread(),
            },
            fired,
        };
        (waiter, keep)
    }

    fn thread(fired: Arc<AtomicBool>) -> Waiter {
        Waiter {
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

impl<T> State<T> {
    /// True if a receiver would find something to do.
    fn receivable(&self) -> bool {
        !self.buf.is_empty() || !self.sendq.is_empty() || self.senders == 0
    }

    fn wake_receiver(&mut self, recv_cv: &Condvar) -> bool {
        self.recvq.take_first(|w| w.wake(recv_cv)).is_some()
    }

    /// A receiver that was woken but will not receive hands the wake-up
    /// on, if there is something to receive.
    fn pass_on(&mut self, recv_cv: &Condvar) {
        if self.receivable() {
            self.wake_receiver(recv_cv);
        }
    }

    fn take_parked_sender(&mut self, send_cv: &Condvar) -> Option<T> {
        self.sendq
            .take_first(|p| p.waiter.wake(send_cv))
            .map(|p| p.value)
    }

    fn try_recv(&mut self, shared: &Shared<T>) -> Result<T, TryRecvError> {
        if let Some(v) = self.buf.pop_front() {
            if self.cap.is_some_and(|c| self.buf.len() < c) {
                if let Some(next) = self.take_parked_sender(&shared.send_cv) {
                    self.buf.push_back(next);
                }
            }
            return Ok(v);
        }
        if let Some(v) = self.take_parked_sender(&shared.send_cv) {
            return Ok(v);
        }
        if self.senders == 0 {
            Err(TryRecvError::Disconnected)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    fn try_send(&mut self, value: T, shared: &Shared<T>) -> Result<(), TrySendError<T>> {
        if !self.receiver_alive {
            return Err(TrySendError::Disconnected(value));
        }
        let room = match self.cap {
            None => true,
            Some(c) if c > 0 => self.buf.len() < c && self.sendq.is_empty(),
            Some(_) => self.wake_receiver(&shared.recv_cv),
        };
        if !room {
            return Err(TrySendError::Full(value));
        }
        self.buf.push_back(value);
        if self.cap != Some(0) {
            self.wake_receiver(&shared.recv_cv);
        }
        Ok(())
    }
}

/// True when the caller is a task (and may park), false on a plain thread.
fn in_task() -> bool {
    crate::spawn::current_id().is_some()
}

impl<T> Shared<T> {
    fn new(cap: Option<usize>) -> Arc<Shared<T>> {
        Arc::new(Shared {
            state: Mutex::new(State {
                buf: VecDeque::new(),
                cap,
                senders: 1,
                receiver_alive: true,
                recvq: WaitQueue::default(),
                sendq: WaitQueue::default(),
            }),
            recv_cv: Condvar::new(),
            send_cv: Condvar::new(),
        })
    }

    fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        let mut st = self.lock();
        loop {
            match st.try_recv(self) {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // A deadline `<= now` has passed.
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            let fired = Arc::new(AtomicBool::new(false));
            if in_task() {
                let token = park_token();
                let (waiter, _keep) = Waiter::task(token, fired.clone());
                let id = st.recvq.push(waiter);
                drop(st);
                // Unwound while parked: leave, handing on a wake-up this
                // task was given but will not use.
                let guard = OnDrop::new(|| {
                    let mut st = self.lock();
                    st.recvq.remove(id);
                    if fired.load(Ordering::Acquire) {
                        st.pass_on(&self.recv_cv);
                    }
                });
                let r = park(token, deadline);
                guard.defuse();
                st = self.lock();
                st.recvq.remove(id);
                if let Resume::Cancelled = r {
                    // Unwinding: this task cannot wait.
                    if fired.load(Ordering::Acquire) {
                        st.pass_on(&self.recv_cv);
                    }
                    return Err(RecvTimeoutError::Disconnected);
                }
            } else {
                let id = st.recvq.push(Waiter::thread(fired.clone()));
                while !fired.load(Ordering::Acquire) {
                    st = match deadline {
                        None => self
                            .recv_cv
                            .wait(st)
                            .unwrap_or_else(PoisonError::into_inner),
                        Some(d) => {
                            let now = Instant::now();
                            if now >= d {
                                break;
                            }
                            self.recv_cv
                                .wait_timeout(st, d - now)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0
                        }
                    };
                }
                st.recvq.remove(id);
            }
            // Look again: a wake-up whose message another receiver took
            // just means waiting on.
        }
    }

    fn send(&self, value: T) -> Result<(), SendError<T>> {
        let mut st = self.lock();
        let value = match st.try_send(value, self) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(v)) => return Err(SendError(v)),
            Err(TrySendError::Full(v)) => v,
        };
        let fired = Arc::new(AtomicBool::new(false));
        if !in_task() {
            let id = st.sendq.push(Parked {
                waiter: Waiter::thread(fired),
                value,
            });
            st.wake_receiver(&self.recv_cv);
            loop {
                if !st.sendq.contains(id) {
                    return Ok(());
                }
                if !st.receiver_alive {
                    let parked = st.sendq.remove(id);
                    drop(st);
                    return parked.map_or(Ok(()), |p| Err(SendError(p.value)));
                }
                st = self
                    .send_cv
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        let mut token = park_token();
        let (waiter, mut _keep) = Waiter::task(token, fired);
        let id = st.sendq.push(Parked { waiter, value });
        st.wake_receiver(&self.recv_cv);
        drop(st);
        // Unwound while parked: withdraw the value unless a receiver took
        // it already; it is dropped after the lock is released.
        let guard = OnDrop::new(|| {
            let withdrawn = self.lock().sendq.remove(id);
            drop(withdrawn);
        });
        loop {
            let r = park(token, None);
            let mut st = self.lock();
            if !st.sendq.contains(id) {
                guard.defuse();
                return Ok(());
            }
            if !st.receiver_alive || matches!(r, Resume::Cancelled) {
                let parked = st.sendq.remove(id);
                drop(st);
                guard.defuse();
                return parked.map_or(Ok(()), |p| Err(SendError(p.value)));
            }
            // Still queued: wait again in the same place, under a fresh
            // token.
            token = park_token();
            let (waiter, keep) = Waiter::task(token, Arc::new(AtomicBool::new(false)));
            _keep = keep;
            if let Some(p) = st.sendq.get_mut(id) {
                p.waiter = waiter;
            }
        }
    }
}

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
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Shared::new(None);
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

/// Creates a bounded channel between threads holding at most `bound`
/// messages. A send on a full channel parks the task, or blocks the plain
/// thread, until a receive makes room; parked senders are served in the
/// order they came. `bound == 0` makes a rendezvous channel, as for the
/// single-thread [`sync_channel`](super::sync_channel).
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
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let shared = Shared::new(Some(bound));
    (
        SyncSender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

/// The sending half of an unbounded cross-thread [`channel`].
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`. Never pauses or blocks (beyond the channel's lock).
    ///
    /// # Errors
    ///
    /// [`SendError`], carrying `value` back, if the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.shared
            .lock()
            .try_send(value, &self.shared)
            .map_err(|e| SendError(e.into_inner()))
    }
}

/// The sending half of a bounded cross-thread [`sync_channel`].
pub struct SyncSender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> SyncSender<T> {
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
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.shared.send(value)
    }

    /// Sends `value` if that can be done without waiting.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] or [`TrySendError::Disconnected`], carrying
    /// `value` back.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.shared.lock().try_send(value, &self.shared)
    }
}

/// The receiving half of a cross-thread channel.
///
/// It may be used from a task or a plain thread. It is also `Sync`: several
/// threads may receive from one `&Receiver`, each message going to one of
/// them, first come, first served.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Receiver<T> {
    /// Receives the next message; parks the task (or blocks the thread)
    /// until one comes.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once the channel is empty and every sender is gone,
    /// or if it would have to pause in a task that is unwinding.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.shared.recv_deadline(None).map_err(|_| RecvError)
    }

    /// Receives a message if one is there, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] or [`TryRecvError::Disconnected`].
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.shared.lock().try_recv(&self.shared)
    }

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
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = crate::time::deadline_after(timeout);
        self.shared.recv_deadline(Some(deadline))
    }

    /// Like [`recv`](Self::recv), giving up at `deadline`.
    ///
    /// # Errors
    ///
    /// As for [`recv_timeout`](Self::recv_timeout).
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.shared.recv_deadline(Some(deadline))
    }

    /// An iterator that receives until the channel is closed and drained.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages there now; it never waits.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        SyncSender {
            shared: self.shared.clone(),
        }
    }
}

fn drop_sender<T>(shared: &Shared<T>) {
    let mut st = shared.lock();
    st.senders -= 1;
    if st.senders == 0 {
        for (_, w) in st.recvq.take_all() {
            w.wake(&shared.recv_cv);
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        drop_sender(&self.shared);
    }
}

impl<T> Drop for SyncSender<T> {
    fn drop(&mut self) {
        drop_sender(&self.shared);
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let buffered = {
            let mut st = self.shared.lock();
            st.receiver_alive = false;
            // Parked senders take their values back themselves.
            for p in st.sendq.iter() {
                p.waiter.wake(&self.shared.send_cv);
            }
            std::mem::take(&mut st.buf)
        };
        drop(buffered);
    }
}

impl<T> SelectRecv for Receiver<T> {
    fn is_ready(&self) -> bool {
        self.shared.lock().receivable()
    }

    fn register(&self, token: ParkToken) -> Registration {
        let fired = Arc::new(AtomicBool::new(false));
        let (waiter, keep) = Waiter::task(token, fired.clone());
        let id = self.shared.lock().recvq.push(waiter);
        Registration {
            id,
            fired: Fired::Shared(fired),
            _keep: Some(keep),
        }
    }

    fn unregister(&self, reg: &Registration) -> bool {
        self.shared.lock().recvq.remove(reg.id);
        reg.fired.get()
    }

    fn pass_on(&self) {
        self.shared.lock().pass_on(&self.shared.recv_cv);
    }
}

impl<T> super::Selectable for Receiver<T> {}

/// Iterator of [`Receiver::iter`].
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

/// Iterator of [`Receiver::try_iter`].
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

/// Owning iterator of a [`Receiver`].
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

fn debug_shared<T>(name: &str, shared: &Shared<T>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = shared.lock();
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
        debug_shared("Sender", &self.shared, f)
    }
}

impl<T> fmt::Debug for SyncSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_shared("SyncSender", &self.shared, f)
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_shared("Receiver", &self.shared, f)
    }
}
