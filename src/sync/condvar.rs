//! [`Condvar`]: waiting for a condition on the data of a cross-thread
//! [`Mutex`].

use std::fmt;
use std::time::{Duration, Instant};

use super::flavor::{CrossThread, Deferred, Flavor, Wakeups};
use super::mutex::{Mutex, MutexGuard};
use super::wait;
use super::waiters::{WithWaiters, Woken};
use crate::sys::threads::Mutex as StdMutex;

/// A condition variable for the cross-thread [`Mutex`]: a task waiting on
/// it pauses only itself, a plain thread blocks.
///
/// [`wait`](Self::wait) unlocks the mutex, waits for a notification and
/// locks again before it returns. As with std's, check the condition in a
/// loop: a notification says "look again", not "it holds" (another waiter
/// may have got to the mutex first). Notifications with nobody waiting are
/// not kept; waiters are notified first come, first served.
///
/// # Cancellation
///
/// A waiter that is unwound while it waits (its task cancelled, a
/// [`timeout`](crate::timeout()) scope expired) leaves the queue without
/// locking the mutex again; a `notify_one` that had just picked it goes on
/// to the next waiter.
///
/// # Examples
///
/// A queue fed by a plain thread and drained by a task on another thread:
///
/// ```
/// use std::{collections::VecDeque, sync::Arc};
/// use yieldloop::sync::{Condvar, Mutex};
///
/// let shared = Arc::new((Mutex::new(VecDeque::new()), Condvar::new()));
/// let s = shared.clone();
/// let consumer = std::thread::spawn(move || {
///     yieldloop::run(move || {
///         let (queue, ready) = &*s;
///         let mut sum = 0;
///         for _ in 0..5 {
///             let mut q = queue.lock();
///             while q.is_empty() {
///                 q = ready.wait(q); // only this task pauses
///             }
///             sum += q.pop_front().unwrap();
///         }
///         sum
///     })
/// });
/// for i in 1..=5 {
///     shared.0.lock().push_back(i);
///     shared.1.notify_one();
/// }
/// assert_eq!(consumer.join().unwrap(), 15);
/// ```
#[derive(Default)]
pub struct Condvar {
    waiters: StdMutex<WithWaiters<CrossThread, ()>>,
}

/// Whether [`Condvar::wait_timeout`] returned because its time ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True if the wait ended because the time ran out, not by a
    /// notification.
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub fn new() -> Condvar {
        Condvar::default()
    }

    /// Unlocks `guard`'s mutex, waits for a notification, and locks it
    /// again.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait_deadline(guard, None).0
    }

    /// Like [`wait`](Self::wait), giving up after `timeout` (the mutex is
    /// locked again either way).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use yieldloop::sync::{Condvar, Mutex};
    ///
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let (_guard, r) = cv.wait_timeout(m.lock(), Duration::from_millis(5));
    /// assert!(r.timed_out());
    /// ```
    ///
    /// # Panics
    ///
    /// As for `wait`.
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        let deadline = crate::time::deadline_after(timeout);
        self.wait_deadline(guard, Some(deadline))
    }

    fn wait_deadline<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        let mutex: &'a Mutex<T> = guard.mutex;
        // The guard's unlock is done by hand, once this waiter is queued: a
        // notification sent after the unlock finds it there.
        std::mem::forget(guard);
        let st = CrossThread::lock(&self.waiters);
        let (st, woken) = wait::wait(
            &self.waiters,
            st,
            (),
            deadline,
            || mutex.raw.unlock(),
            // Picked by notify_one, then unwound: pass it on.
            |st: &mut WithWaiters<CrossThread, ()>, woken| {
                let mut wakes = Deferred::default();
                if woken == Woken::One {
                    st.waiters.wake_one(&mut wakes);
                }
                wakes
            },
            "for a Condvar",
        );
        drop(st);
        let guard = mutex.lock();
        (guard, WaitTimeoutResult(woken == Woken::Not))
    }

    /// Wakes the longest waiter, if any.
    pub fn notify_one(&self) {
        let mut wakes = Deferred::default();
        CrossThread::lock(&self.waiters)
            .waiters
            .wake_one(&mut wakes);
        wakes.wake();
    }

    /// Wakes every waiter waiting now.
    pub fn notify_all(&self) {
        let wakes = CrossThread::lock(&self.waiters).waiters.take_all();
        wakes.wake();
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar")
            .field("waiting", &CrossThread::lock(&self.waiters).waiters.len())
            .finish()
    }
}
