//! [`Mutex`]: a lock shared between threads, where a waiting task pauses
//! only itself and a waiting plain thread blocks.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use super::flavor::CrossThread;
use super::logic::RawMutex;

/// A mutual-exclusion lock for tasks on any worker and for plain threads,
/// held across pauses.
///
/// [`lock`](Self::lock) pauses the calling task while the lock is held
/// elsewhere (its scheduler goes on running its other tasks), or blocks the
/// calling plain thread. The guard may be held across pauses.
///
/// Hand-over is first come, first served: unlocking with waiters hands the
/// lock to the one that has waited longest, which then holds it without
/// having to race for it; a newcomer does not overtake the queue.
///
/// Taking and releasing a lock nobody waits for is one atomic
/// compare-and-swap each; the waiter queue, behind a std mutex, is only
/// touched under contention. Among the tasks of one thread,
/// [`local::Mutex`](crate::sync::local::Mutex) is cheaper still (no atomic
/// operation at all).
///
/// There is no poisoning: a guard dropped by a panic unlocks.
///
/// # Cancellation and timeouts
///
/// A waiter that gives up (its [`lock_timeout`](Self::lock_timeout) runs
/// out, a [`timeout`](crate::timeout()) scope expires, it is cancelled)
/// leaves the queue; if the lock had just been handed to it, a timed-out
/// waiter keeps it (the call succeeds) and an unwound one hands it on.
///
/// # Examples
///
/// A counter incremented by the tasks of two workers and a plain thread:
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::Mutex, Runtime};
///
/// let count = Arc::new(Mutex::new(0));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let handles: Vec<_> = (0..2)
///     .map(|w| {
///         let count = count.clone();
///         rt.spawn_on(w, move || {
///             for _ in 0..100 {
///                 *count.lock() += 1;
///                 yieldloop::yield_now();
///             }
///         })
///     })
///     .collect();
/// for _ in 0..100 {
///     *count.lock() += 1; // this plain thread blocks while it waits
/// }
/// for h in handles {
///     h.join().unwrap();
/// }
/// assert_eq!(*count.lock(), 300);
/// ```
pub struct Mutex<T: ?Sized> {
    pub(super) raw: RawMutex<CrossThread>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands the value from thread to thread (`T: Send`), and
// only the holder of the lock reaches it.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as for `Send`: shared `&Mutex` give access to `T` only through
// the lock, one holder at a time.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::new(),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, taking the mutex apart.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, pausing the task (or blocking the plain thread) until the
    /// lock is free.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding (a destructor
    /// cannot wait). Locking again where the lock is held never returns.
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.raw.lock(WHAT);
        MutexGuard { mutex: self }
    }

    /// Locks if the lock is free now and nobody waits for it.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = yieldloop::sync::Mutex::new(1);
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert_eq!(*m.try_lock().unwrap(), 1);
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.raw.try_lock().then(|| MutexGuard { mutex: self })
    }

    /// Like [`lock`](Self::lock), giving up after `timeout`: `None` if the
    /// lock could not be had by then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let m = yieldloop::sync::Mutex::new(());
    /// let held = m.lock();
    /// assert!(m.lock_timeout(Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(m.lock_timeout(Duration::from_millis(5)).is_some());
    /// ```
    ///
    /// # Panics
    ///
    /// As for `lock`.
    pub fn lock_timeout(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
        let deadline = crate::time::deadline_after(timeout);
        self.raw
            .lock_deadline(deadline, WHAT)
            .then(|| MutexGuard { mutex: self })
    }

    /// The value, through `&mut`: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// True while the lock is held.
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Waiters queued for the lock now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }
}

/// What a wait that cannot begin says it waited for.
const WHAT: &str = "for a Mutex";

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Access to a locked [`Mutex`]'s value; unlocks when dropped.
///
/// Unlike std's guard it may be released on another thread than the one
/// that locked (the lock belongs to no thread); a task never moves, so a
/// guard held in a task is released where it was taken.
#[must_use = "the mutex unlocks at once if the guard is not kept"]
pub struct MutexGuard<'a, T: ?Sized> {
    pub(super) mutex: &'a Mutex<T>,
}

// SAFETY: a shared guard gives `&T` only, as a `&T` shared between threads
// would.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while its holder has the lock.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` makes this the only use.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.mutex.raw.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
