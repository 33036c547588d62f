//! A channel that holds one value, the latest: senders replace it,
//! receivers look at it and wait for a newer one. Cross-thread: the
//! handles are `Send` and `Sync` (for `T: Send + Sync`), and a receiver
//! waits by pausing its task (on any worker) or, on a plain thread, by
//! blocking.
//!
//! For configuration that changes now and then and that every worker must
//! see (a reloaded certificate, a new routing table, a shutdown flag): a
//! receiver reads the current value without waiting, and
//! [`changed`](Receiver::changed) waits for the next one. Values in between
//! may be skipped: a receiver sees the latest, not each. For every value,
//! use [`broadcast`](super::broadcast).
//!
//! Costs: a send takes one lock and wakes every waiting receiver; a look
//! takes the same lock (no clone of the value); a wait is a pause.
//!
//! # Examples
//!
//! ```
//! use yieldloop::sync::watch;
//!
//! let (tx, mut rx) = watch::channel("v1");
//! let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
//! // A task on a worker waits for each change until the sender goes.
//! let seen = rt
//!     .spawn_on(0, move || {
//!         let mut seen = vec![*rx.borrow()];
//!         while rx.changed().is_ok() {
//!             seen.push(*rx.borrow_and_update());
//!         }
//!         seen
//!     });
//! // The config changes once, from a plain thread, then the sender goes.
//! std::thread::sleep(std::time::Duration::from_millis(20));
//! tx.send_replace("v2");
//! drop(tx);
//! let seen = seen.join().unwrap();
//! assert_eq!(seen.first(), Some(&"v1"));
//! assert_eq!(seen.last(), Some(&"v2"));
//! ```

use std::fmt;
use std::ops::Deref;
use std::time::{Duration, Instant};

use super::error::{RecvError, RecvTimeoutError, SendError};
use super::fanout::{Channel, Counted, ReceiverShare, SenderShare};
use super::flavor::Wakeups;
use super::wait::NotReady;
use crate::sys::threads::MutexGuard;

/// What the handles share. Values are dropped outside its lock.
struct State<T> {
    value: T,
    /// Counts sends; a receiver has seen up to the version it remembers.
    version: u64,
}

/// Creates a watch channel holding `init`; the receiver counts it as seen.
///
/// # Examples
///
/// ```
/// let (tx, rx) = yieldloop::sync::watch::channel(0);
/// tx.send(5).unwrap();
/// assert_eq!(*rx.borrow(), 5);
/// assert!(rx.has_changed().unwrap());
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = Channel::open(State {
        value: init,
        version: 0,
    });
    (
        Sender { shared: tx },
        Receiver {
            shared: rx,
            seen: 0,
        },
    )
}

/// The sending half of a [`channel`]; cloning it gives another sender.
///
/// The last sender dropped closes the channel: waiting receivers wake and
/// learn it.
pub struct Sender<T> {
    shared: SenderShare<State<T>>,
}

/// The receiving half of a [`channel`]; a clone starts with what this one
/// has seen.
pub struct Receiver<T> {
    shared: ReceiverShare<State<T>>,
    /// The version this receiver has seen.
    seen: u64,
}

/// A look at the current value, holding the channel's lock: keep it short
/// and never across a pause (a sender waits for it meanwhile).
pub struct Ref<'a, T> {
    guard: MutexGuard<'a, Counted<State<T>>>,
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T> Sender<T> {
    /// Replaces the value and wakes every waiting receiver.
    ///
    /// # Errors
    ///
    /// [`SendError`], with `value`, if no receiver is left (the value is
    /// not stored).
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = yieldloop::sync::watch::channel(1);
    /// assert!(tx.send(2).is_ok());
    /// drop(rx);
    /// assert_eq!(tx.send(3).unwrap_err().0, 3);
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.shared.lock().receivers == 0 {
            return Err(SendError(value));
        }
        drop(self.send_replace(value));
        Ok(())
    }

    /// Replaces the value whether or not anyone receives, wakes every
    /// waiting receiver, and returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, _rx) = yieldloop::sync::watch::channel(1);
    /// assert_eq!(tx.send_replace(2), 1);
    /// ```
    pub fn send_replace(&self, value: T) -> T {
        let (old, wake) = {
            let mut st = self.shared.lock();
            st.version += 1;
            let old = std::mem::replace(&mut st.value, value);
            (old, st.waiters.take_all())
        };
        wake.wake();
        old
    }

    /// Looks at the current value.
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.lock(),
        }
    }

    /// A new receiver, which counts the current value as seen.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = yieldloop::sync::watch::channel(1);
    /// drop(rx);
    /// let rx = tx.subscribe();
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let (shared, st) = self.shared.subscribe();
        let seen = st.version;
        drop(st);
        Receiver { shared, seen }
    }

    /// How many receivers there are.
    pub fn receiver_count(&self) -> usize {
        self.shared.lock().receivers
    }

    /// True when no receiver is left.
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Receiver<T> {
    /// Looks at the current value, without marking it seen.
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.lock(),
        }
    }

    /// Looks at the current value and marks it seen.
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let guard = self.shared.lock();
        self.seen = guard.version;
        Ref { guard }
    }

    /// True if a value newer than the one this receiver saw is there.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once every sender is gone.
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let st = self.shared.lock();
        if st.senders == 0 {
            return Err(RecvError);
        }
        Ok(st.version != self.seen)
    }

    /// Waits until a value newer than the one this receiver saw is there,
    /// and marks it seen: pauses the calling task, or blocks the thread
    /// outside any task. Returns at once if there is one already.
    ///
    /// # Cancellation
    ///
    /// Inside a [`timeout`](crate::timeout()) scope, or cancelled, the
    /// task stops waiting and leaves the channel as it was; the receiver
    /// has not marked anything seen.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once every sender is gone (a value sent before that
    /// is reported first), or if it would have to pause in a task that is
    /// unwinding.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (tx, mut rx) = yieldloop::sync::watch::channel(0);
    /// yieldloop::run(move || {
    ///     yieldloop::spawn(move || {
    ///         yieldloop::sleep(Duration::from_millis(5));
    ///         tx.send(1).unwrap();
    ///     });
    ///     rx.changed().unwrap();
    ///     assert_eq!(*rx.borrow(), 1);
    ///     // The sender is gone with its task.
    ///     assert!(rx.changed().is_err());
    /// });
    /// ```
    pub fn changed(&mut self) -> Result<(), RecvError> {
        self.changed_deadline(None).map_err(|_| RecvError)
    }

    /// [`changed`](Self::changed), giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if no newer value came in time,
    /// [`RecvTimeoutError::Disconnected`] as for `changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use yieldloop::sync::{watch, RecvTimeoutError};
    ///
    /// let (_tx, mut rx) = watch::channel(0);
    /// // On a plain thread: blocks for 10 ms.
    /// assert_eq!(
    ///     rx.changed_timeout(Duration::from_millis(10)),
    ///     Err(RecvTimeoutError::Timeout)
    /// );
    /// ```
    pub fn changed_timeout(&mut self, timeout: Duration) -> Result<(), RecvTimeoutError> {
        self.changed_deadline(crate::scheduler::timers::now().checked_add(timeout))
    }

    /// [`changed`](Self::changed), giving up at `deadline` (`None`: never).
    ///
    /// # Errors
    ///
    /// As for [`changed_timeout`](Self::changed_timeout).
    pub fn changed_deadline(&mut self, deadline: Option<Instant>) -> Result<(), RecvTimeoutError> {
        let seen = self.seen;
        let r = self.shared.wait(|st| Self::look(st, seen), deadline);
        self.finish(r)
    }

    /// What a waiter finds under the lock: `Some` once it can stop.
    fn look(st: &mut Counted<State<T>>, seen: u64) -> Option<Result<u64, RecvError>> {
        if st.version != seen {
            Some(Ok(st.version))
        } else if st.senders == 0 {
            Some(Err(RecvError))
        } else {
            None
        }
    }

    fn finish(
        &mut self,
        r: Result<Result<u64, RecvError>, NotReady>,
    ) -> Result<(), RecvTimeoutError> {
        match r {
            Ok(Ok(v)) => {
                self.seen = v;
                Ok(())
            }
            Ok(Err(RecvError)) | Err(NotReady::Unwinding) => Err(RecvTimeoutError::Disconnected),
            Err(NotReady::TimedOut) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// [`changed`](Self::changed) in a task, pausing through `pause`.
    #[cfg(loom)]
    pub(crate) fn changed_with(
        &mut self,
        pause: &mut impl crate::task::park::Pause,
    ) -> Result<(), RecvError> {
        let seen = self.seen;
        let r = self.shared.wait_with(|st| Self::look(st, seen), pause);
        self.finish(r).map_err(|_| RecvError)
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        let (shared, st) = self.shared.subscribe();
        drop(st);
        Receiver {
            shared,
            seen: self.seen,
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("watch::Sender")
            .field("version", &st.version)
            .field("receivers", &st.receivers)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("watch::Receiver")
            .field("seen", &self.seen)
            .field("version", &st.version)
            .field("waiting", &st.waiters.len())
            .finish_non_exhaustive()
    }
}
