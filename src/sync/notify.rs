//! [`Notify`]: "something happened", across threads.

use std::fmt;
use std::time::Duration;

use super::flavor::CrossThread;
use super::logic;

/// Wakes waiters on any worker or plain thread that wait for "something
/// happened", with no data attached.
///
/// [`notify_one`](Self::notify_one) wakes the longest waiter or, if none
/// waits, stores one permit so that the next [`wait`](Self::wait) returns
/// at once (several notifications with nobody waiting store one permit).
/// [`notify_all`](Self::notify_all) wakes everyone waiting now and stores
/// nothing. The stored permit closes the race between checking a
/// condition and starting to wait. The same rules as
/// [`local::Notify`](crate::sync::local::Notify), for one thread.
///
/// # Cancellation and timeouts
///
/// A waiter that gives up leaves the queue. If `notify_one` had just
/// picked it, a timed-out waiter counts as notified and an unwound one
/// passes the notification on (to the next waiter, or as the permit).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::sync::Notify;
///
/// let ready = Arc::new(Notify::new());
/// let r = ready.clone();
/// let waiter = std::thread::spawn(move || {
///     yieldloop::run(move || {
///         r.wait(); // pauses this task until notified
///         "woken"
///     })
/// });
/// ready.notify_one(); // before or after the wait began: either way
/// assert_eq!(waiter.join().unwrap(), "woken");
/// ```
pub struct Notify {
    /// A semaphore that keeps at most one permit.
    raw: logic::Semaphore<CrossThread>,
}

impl Default for Notify {
    fn default() -> Self {
        Notify::new()
    }
}

impl Notify {
    /// A `Notify` with no permit stored.
    pub fn new() -> Notify {
        Notify {
            raw: logic::Semaphore::new(0, 1),
        }
    }

    /// Wakes the longest waiter, or stores a permit if none waits.
    pub fn notify_one(&self) {
        self.raw.release();
    }

    /// Wakes every waiter waiting now; stores nothing.
    pub fn notify_all(&self) {
        self.raw.wake_all();
    }

    /// Waits for a notification (or takes the stored permit): pauses the
    /// task, or blocks the plain thread.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    #[doc(alias = "notified")]
    pub fn wait(&self) {
        self.raw.acquire(None, WHAT);
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`. Returns
    /// whether it was notified.
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = crate::time::deadline_after(timeout);
        self.raw.acquire(Some(deadline), WHAT)
    }

    /// Waiters waiting now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }
}

/// What a wait that cannot begin says it waited for.
const WHAT: &str = "for a Notify";

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt_notify(f)
    }
}
