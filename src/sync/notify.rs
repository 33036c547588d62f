//! [`Notify`]: "something happened", across threads.

use std::fmt;
use std::time::{Duration, Instant};

use super::waiters::{self, lock, Queued, Waiters, Wake};
use crate::sys::threads::Mutex as StdMutex;

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
#[derive(Default)]
pub struct Notify {
    state: StdMutex<State>,
}

#[derive(Default)]
struct State {
    permit: bool,
    waiters: Waiters,
}

impl Queued for State {
    type Kind = ();
    fn waiters(&mut self) -> &mut Waiters {
        &mut self.waiters
    }
}

impl State {
    fn notify_one(&mut self) -> Option<Wake> {
        let w = self.waiters.wake_one();
        if w.is_none() {
            self.permit = true;
        }
        w
    }
}

impl Notify {
    /// A `Notify` with no permit stored.
    pub fn new() -> Notify {
        Notify::default()
    }

    /// Wakes the longest waiter, or stores a permit if none waits.
    pub fn notify_one(&self) {
        let wake = lock(&self.state).notify_one();
        if let Some(w) = wake {
            w.wake();
        }
    }

    /// Wakes every waiter waiting now; stores nothing.
    pub fn notify_all(&self) {
        let wakes = lock(&self.state).waiters.wake_all();
        waiters::wake_all(wakes);
    }

    /// Waits for a notification (or takes the stored permit): pauses the
    /// task, or blocks the plain thread.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    #[doc(alias = "notified")]
    pub fn wait(&self) {
        self.wait_deadline(None);
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`. Returns
    /// whether it was notified.
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = crate::time::deadline_after(timeout);
        self.wait_deadline(Some(deadline))
    }

    /// Waiters waiting now.
    pub fn waiting(&self) -> usize {
        lock(&self.state).waiters.len()
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        crate::task::coop::proceed();
        let mut st = lock(&self.state);
        if std::mem::take(&mut st.permit) {
            return true;
        }
        // Picked by notify_one, then unwound: pass it on.
        waiters::wait_handed(&self.state, st, deadline, State::notify_one, "a Notify").1
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.state);
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiting", &st.waiters.len())
            .finish()
    }
}
