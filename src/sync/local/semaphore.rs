//! [`Semaphore`]: a count of permits that tasks wait for, first come,
//! first served.

use std::fmt;

use crate::sync::flavor::Local;
use crate::sync::logic;

/// A counting semaphore for the tasks of one thread.
///
/// [`acquire`](Self::acquire) takes a permit, pausing the task while there
/// is none; the [`SemaphorePermit`] it returns gives the permit back when
/// dropped. A permit given back while tasks wait is *handed* to the one
/// that has waited longest (it is never put up for grabs), so waiters are
/// served in order and none starves.
///
/// Single-thread: share it between the tasks of one scheduler through an
/// `Rc`.
///
/// # Cancellation
///
/// A task cancelled while it waits leaves the queue. If a permit had just
/// been handed to it, the permit goes on to the next waiter (or back to
/// the count), so permits are never lost to a task that is gone.
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc, time::Duration};
/// use yieldloop::sync::local::Semaphore;
///
/// yieldloop::run(|| {
///     let sem = Rc::new(Semaphore::new(2));
///     let busy = Rc::new(Cell::new(0));
///     let peak = Rc::new(Cell::new(0));
///     let tasks: Vec<_> = (0..6)
///         .map(|_| {
///             let (sem, busy, peak) = (sem.clone(), busy.clone(), peak.clone());
///             yieldloop::spawn(move || {
///                 let _permit = sem.acquire();
///                 busy.set(busy.get() + 1);
///                 peak.set(peak.get().max(busy.get()));
///                 yieldloop::sleep(Duration::from_millis(2));
///                 busy.set(busy.get() - 1);
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.join().unwrap();
///     }
///     assert_eq!(peak.get(), 2);
///     assert_eq!(sem.available_permits(), 2);
/// });
/// ```
pub struct Semaphore {
    raw: logic::Semaphore<Local>,
}

impl Semaphore {
    /// A semaphore with `permits` permits.
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            raw: logic::Semaphore::new(permits, usize::MAX),
        }
    }

    /// Takes a permit, pausing the task until one is free.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding (a destructor cannot wait).
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        self.raw.acquire(None, "for a semaphore or mutex");
        SemaphorePermit { sem: self }
    }

    /// Takes a permit if one is free now.
    ///
    /// # Examples
    ///
    /// ```
    /// let sem = yieldloop::sync::local::Semaphore::new(1);
    /// let first = sem.try_acquire();
    /// assert!(first.is_some());
    /// assert!(sem.try_acquire().is_none());
    /// drop(first);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        // `then`, not `then_some`: a permit built eagerly and dropped on
        // failure would release a permit never taken.
        self.raw
            .try_acquire()
            .then(|| SemaphorePermit { sem: self })
    }

    /// Adds one permit: hands it to the longest-waiting task, or adds it to
    /// the count. Pairs with [`SemaphorePermit::forget`], or grows the
    /// semaphore.
    pub fn release(&self) {
        self.raw.release();
    }

    /// Permits free now.
    pub fn available_permits(&self) -> usize {
        self.raw.available_permits()
    }

    /// Tasks queued for a permit now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }
}

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
