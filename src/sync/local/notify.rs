//! [`Notify`] (wake one or all waiters) and [`Event`] (a flag tasks wait
//! to see set).

use std::fmt;
use std::time::Duration;

use crate::sync::flavor::Local;
use crate::sync::logic::{self, Gate};

/// Wakes tasks that wait for "something happened", with no data attached.
///
/// [`notify_one`](Self::notify_one) wakes the longest-waiting task, or, if
/// none waits, stores one permit so that the next [`wait`](Self::wait)
/// returns at once (several notifications with no waiter still store one
/// permit). [`notify_all`](Self::notify_all) wakes every task waiting now
/// and stores nothing. The stored permit closes the race between checking
/// a condition and starting to wait.
///
/// Single-thread: share it through an `Rc`.
///
/// # Cancellation
///
/// A waiter cancelled while waiting leaves the queue. If `notify_one` had
/// just picked it, the notification goes on to the next waiter (or is
/// stored), so it is not lost.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use yieldloop::sync::local::Notify;
///
/// yieldloop::run(|| {
///     let ready = Rc::new(Notify::new());
///     let r = ready.clone();
///     let waiter = yieldloop::spawn(move || {
///         r.wait();
///         "woken"
///     });
///     yieldloop::yield_now(); // the waiter parks
///     ready.notify_one();
///     assert_eq!(waiter.join().unwrap(), "woken");
///
///     // With nobody waiting, the notification is kept for the next wait.
///     ready.notify_one();
///     ready.wait();
/// });
/// ```
pub struct Notify {
    /// A semaphore that keeps at most one permit.
    raw: logic::Semaphore<Local>,
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

    /// Wakes the longest-waiting task, or stores a permit if none waits.
    pub fn notify_one(&self) {
        self.raw.release();
    }

    /// Wakes every task waiting now; stores nothing.
    pub fn notify_all(&self) {
        self.raw.wake_all();
    }

    /// Waits for a notification (or takes the stored permit).
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
    pub fn wait(&self) {
        self.raw.acquire(None, "for a Notify");
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`. Returns
    /// whether it was notified.
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = crate::time::deadline_after(timeout);
        self.raw.acquire(Some(deadline), "for a Notify")
    }

    /// Tasks waiting now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt_notify(f)
    }
}

/// A flag that tasks wait to see set, like Python's `asyncio.Event`.
///
/// [`set`](Self::set) raises the flag and wakes every waiter; while it is
/// set, [`wait`](Self::wait) returns at once. [`clear`](Self::clear)
/// lowers it again. A waiter woken by `set` returns even if the flag was
/// cleared again before it ran.
///
/// Single-thread: share it through an `Rc`. A waiter cancelled while
/// waiting just leaves the queue (every waiter is woken by `set`, so there
/// is nothing to pass on).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use yieldloop::sync::local::Event;
///
/// yieldloop::run(|| {
///     let start = Rc::new(Event::new());
///     let runners: Vec<_> = (0..3)
///         .map(|i| {
///             let start = start.clone();
///             yieldloop::spawn(move || {
///                 start.wait();
///                 i
///             })
///         })
///         .collect();
///     yieldloop::yield_now();
///     assert!(runners.iter().all(|r| !r.is_finished()));
///     start.set();
///     let sum: i32 = runners.into_iter().map(|r| r.join().unwrap()).sum();
///     assert_eq!(sum, 3);
/// });
/// ```
pub struct Event {
    /// A gate whose count is 0 while the flag is set, 1 while it is not.
    gate: Gate<Local>,
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl Event {
    /// An event that is not set.
    pub fn new() -> Event {
        Event { gate: Gate::new(1) }
    }

    /// Sets the flag and wakes every waiting task.
    pub fn set(&self) {
        self.gate.set(0);
    }

    /// Clears the flag.
    pub fn clear(&self) {
        self.gate.set(1);
    }

    /// True while the flag is set.
    pub fn is_set(&self) -> bool {
        self.gate.count() == 0
    }

    /// Waits until the flag is set; returns at once if it is.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
    pub fn wait(&self) {
        self.gate.wait(None, "for an Event");
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`. Returns
    /// whether the flag was set.
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = crate::time::deadline_after(timeout);
        self.gate.wait(Some(deadline), "for an Event")
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("set", &self.is_set())
            .field("waiting", &self.gate.waiting())
            .finish()
    }
}
