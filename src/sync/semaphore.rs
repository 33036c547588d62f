//! [`Semaphore`]: permits shared between threads, handed out first come,
//! first served.

use std::fmt;
use std::time::Duration;

use super::flavor::CrossThread;
use super::logic;

/// A counting semaphore for tasks on any worker and plain threads.
///
/// [`acquire`](Self::acquire) takes a permit, pausing the task (or blocking
/// the plain thread) while there is none; the [`SemaphorePermit`] gives it
/// back when dropped. A permit given back while others wait is *handed* to
/// the one that has waited longest, so none starves.
///
/// Among the tasks of one thread,
/// [`local::Semaphore`](crate::sync::local::Semaphore) does the same with
/// no lock.
///
/// # Cancellation and timeouts
///
/// A waiter that gives up leaves the queue. If a permit had just been
/// handed to it, a timed-out waiter keeps it and an unwound one hands it on
/// (to the next waiter, or back to the count).
///
/// # Examples
///
/// At most two of six jobs at once, over two workers:
///
/// ```
/// use std::sync::{atomic::{AtomicUsize, Ordering}, Arc};
/// use std::time::Duration;
/// use yieldloop::{sync::Semaphore, Runtime};
///
/// let sem = Arc::new(Semaphore::new(2));
/// let busy = Arc::new(AtomicUsize::new(0));
/// let peak = Arc::new(AtomicUsize::new(0));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let jobs: Vec<_> = (0..6)
///     .map(|i| {
///         let (sem, busy, peak) = (sem.clone(), busy.clone(), peak.clone());
///         rt.spawn_on(i % 2, move || {
///             let _permit = sem.acquire();
///             let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
///             peak.fetch_max(now, Ordering::SeqCst);
///             yieldloop::sleep(Duration::from_millis(2));
///             busy.fetch_sub(1, Ordering::SeqCst);
///         })
///     })
///     .collect();
/// for j in jobs {
///     j.join().unwrap();
/// }
/// assert!(peak.load(Ordering::SeqCst) <= 2);
/// assert_eq!(sem.available_permits(), 2);
/// ```
pub struct Semaphore {
    raw: logic::Semaphore<CrossThread>,
}

impl Semaphore {
    /// A semaphore with `permits` permits.
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            raw: logic::Semaphore::new(permits, usize::MAX),
        }
    }

    /// Takes a permit, pausing the task (or blocking the thread) until one
    /// is free.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        self.raw.acquire(None, WHAT);
        SemaphorePermit { sem: self }
    }

    /// Like [`acquire`](Self::acquire), giving up after `timeout`.
    ///
    /// # Panics
    ///
    /// As for `acquire`.
    pub fn acquire_timeout(&self, timeout: Duration) -> Option<SemaphorePermit<'_>> {
        let deadline = crate::time::deadline_after(timeout);
        self.raw
            .acquire(Some(deadline), WHAT)
            .then(|| SemaphorePermit { sem: self })
    }

    /// Takes a permit if one is free now.
    ///
    /// # Examples
    ///
    /// ```
    /// let sem = yieldloop::sync::Semaphore::new(1);
    /// let first = sem.try_acquire();
    /// assert!(first.is_some());
    /// assert!(sem.try_acquire().is_none());
    /// drop(first);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        // `then`, not `then_some`: a permit built eagerly and dropped on
        // failure would give back a permit never taken.
        self.raw
            .try_acquire()
            .then(|| SemaphorePermit { sem: self })
    }

    /// Adds one permit: hands it to the longest waiter, or adds it to the
    /// count. Pairs with [`SemaphorePermit::forget`], or grows the
    /// semaphore.
    pub fn release(&self) {
        self.raw.release();
    }

    /// Permits free now.
    pub fn available_permits(&self) -> usize {
        self.raw.available_permits()
    }

    /// Waiters queued for a permit now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }
}

/// What a wait that cannot begin says it waited for.
const WHAT: &str = "for a Semaphore";

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt_permits(f)
    }
}

/// A permit of a [`Semaphore`]; given back when dropped.
#[must_use = "the permit is given back at once if it is not kept"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
}

impl SemaphorePermit<'_> {
    /// Keeps the permit taken: it is not given back on drop. Give it back
    /// later with [`Semaphore::release`].
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.release();
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit").finish_non_exhaustive()
    }
}
