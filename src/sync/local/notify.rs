//! [`Notify`] (wake one or all waiters) and [`Event`] (a flag tasks wait
//! to see set).

use std::cell::RefCell;
use std::fmt;
use std::time::{Duration, Instant};

use crate::protocol::Resume;
use crate::sync::waitq::{self, park_local, Signals, Woken};

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
#[derive(Default)]
pub struct Notify {
    state: RefCell<NotifyState>,
}

#[derive(Default)]
struct NotifyState {
    permit: bool,
    waiters: Signals,
}

impl NotifyState {
    fn notify_one(&mut self) {
        if !waitq::wake_one(&mut self.waiters) {
            self.permit = true;
        }
    }
}

impl Notify {
    /// A `Notify` with no permit stored.
    pub fn new() -> Notify {
        Notify::default()
    }

    /// Wakes the longest-waiting task, or stores a permit if none waits.
    pub fn notify_one(&self) {
        self.state.borrow_mut().notify_one();
    }

    /// Wakes every task waiting now; stores nothing.
    pub fn notify_all(&self) {
        waitq::wake_all(&mut self.state.borrow_mut().waiters);
    }

    /// Waits for a notification (or takes the stored permit).
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
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

    /// Tasks waiting now.
    pub fn waiting(&self) -> usize {
        self.state.borrow().waiters.len()
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        crate::task::coop::proceed();
        loop {
            if std::mem::take(&mut self.state.borrow_mut().permit) {
                return true;
            }
            // A deadline `<= now` has passed.
            if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
                return false;
            }
            let (r, woken) = park_local(
                &self.state,
                |s| &mut s.waiters,
                deadline,
                // Picked by notify_one, then unwound: pass it on.
                |s, woken| {
                    if woken == Woken::One {
                        s.notify_one();
                    }
                },
            );
            match (r, woken) {
                (_, Woken::One | Woken::All) => return true,
                (Resume::Cancelled, _) => {
                    panic!("yieldloop: cannot wait for a Notify in a task that is unwinding")
                }
                _ => {}
            }
        }
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiting", &st.waiters.len())
            .finish()
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
#[derive(Default)]
pub struct Event {
    state: RefCell<EventState>,
}

#[derive(Default)]
struct EventState {
    set: bool,
    waiters: Signals,
}

impl Event {
    /// An event that is not set.
    pub fn new() -> Event {
        Event::default()
    }

    /// Sets the flag and wakes every waiting task.
    pub fn set(&self) {
        let mut st = self.state.borrow_mut();
        st.set = true;
        waitq::wake_all(&mut st.waiters);
    }

    /// Clears the flag.
    pub fn clear(&self) {
        self.state.borrow_mut().set = false;
    }

    /// True while the flag is set.
    pub fn is_set(&self) -> bool {
        self.state.borrow().set
    }

    /// Waits until the flag is set; returns at once if it is.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
    pub fn wait(&self) {
        self.wait_deadline(None);
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`. Returns
    /// whether the flag was set.
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = crate::time::deadline_after(timeout);
        self.wait_deadline(Some(deadline))
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        crate::task::coop::proceed();
        loop {
            if self.is_set() {
                return true;
            }
            // A deadline `<= now` has passed.
            if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
                return false;
            }
            let (r, woken) = park_local(&self.state, |s| &mut s.waiters, deadline, |_, _| {});
            match (r, woken) {
                (_, Woken::One | Woken::All) => return true,
                (Resume::Cancelled, _) => {
                    panic!("yieldloop: cannot wait for an Event in a task that is unwinding")
                }
                _ => {}
            }
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Event")
            .field("set", &st.set)
            .field("waiting", &st.waiters.len())
            .finish()
    }
}
