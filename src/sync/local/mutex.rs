//! [`Mutex`]: a lock that pauses the waiting task, not the thread.

use std::cell::{RefCell, RefMut};
use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::sync::flavor::Local;
use crate::sync::logic::RawMutex;

/// A mutual-exclusion lock for the tasks of one thread, held across pauses.
///
/// [`lock`](Self::lock) pauses the calling task while another task holds
/// the lock; the thread goes on running other tasks. The guard may be held
/// across pauses (a `sleep`, a socket read), which is what a `RefCell`
/// borrow alone cannot offer: other tasks would find it borrowed.
///
/// Unlocking with tasks waiting hands the lock to the one that has waited
/// longest: acquisition is first come, first served, so no waiter starves
/// and a task that unlocks and relocks at once goes to the back of the
/// queue. Underneath it is the lock of the cross-thread
/// [`sync::Mutex`](crate::sync::Mutex), its word a plain `Cell` rather than
/// an atomic, guarding a `RefCell`.
///
/// Single-thread: share it between the tasks of one scheduler through an
/// `Rc`. There is no poisoning: a task that panics while holding the guard
/// unlocks it as the guard drops.
///
/// # Cancellation
///
/// A task cancelled while it waits leaves the queue; if the lock had just
/// been handed to it, it goes on to the next waiter. A task cancelled while
/// *holding* the guard unlocks as its stack unwinds.
///
/// # Examples
///
/// ```
/// use std::{rc::Rc, time::Duration};
/// use yieldloop::sync::local::Mutex;
///
/// yieldloop::run(|| {
///     let log = Rc::new(Mutex::new(Vec::new()));
///     let tasks: Vec<_> = (0..3)
///         .map(|i| {
///             let log = log.clone();
///             yieldloop::spawn(move || {
///                 let mut entries = log.lock();
///                 entries.push(i);
///                 // Still held across the pause: nobody else gets in.
///                 yieldloop::sleep(Duration::from_millis(1));
///                 entries.push(i);
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.join().unwrap();
///     }
///     assert_eq!(*log.lock(), [0, 0, 1, 1, 2, 2]);
/// });
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawMutex<Local>,
    /// Borrowed mutably by the guard of whoever holds the lock; the lock
    /// makes sure that is one task at a time, so the borrow never fails.
    data: RefCell<T>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::new(),
            data: RefCell::new(value),
        }
    }

    /// The value, taking the mutex apart.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, pausing the task until the lock is free.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding (a destructor cannot wait). Locking again in the task that
    /// holds the lock never returns (as with any non-reentrant lock); the
    /// scheduler reports the deadlock if nothing else can happen.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.raw);
        self.guard()
    }

    /// Locks if the lock is free now.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = yieldloop::sync::local::Mutex::new(1);
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert_eq!(*m.try_lock().unwrap(), 1);
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.raw.try_lock().then(|| self.guard())
    }

    /// The value, through `&mut`: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// True while a task holds the lock.
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Tasks queued for the lock now.
    pub fn waiting(&self) -> usize {
        self.raw.waiting()
    }

    fn guard(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            data: Some(self.data.borrow_mut()),
            mutex: self,
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.data.try_borrow() {
            Ok(v) if !self.is_locked() => d.field("data", &&*v),
            _ => d.field("data", &format_args!("<locked>")),
        };
        d.field("waiting", &self.waiting()).finish()
    }
}

// The lock and unlock of every `Mutex<T>`, whatever its `T`: functions that
// are not generic, so that they are compiled once, in this crate, where
// the waiting and waking they call is inlined into them (a generic method
// would be compiled in each crate that locks a mutex, calling all of that
// across the crate boundary).

fn lock(raw: &RawMutex<Local>) {
    raw.lock("for a semaphore or mutex");
}

fn unlock(raw: &RawMutex<Local>) {
    raw.unlock();
}

/// Access to a locked [`Mutex`]'s value; unlocks when dropped.
#[must_use = "the mutex unlocks at once if the guard is not kept"]
pub struct MutexGuard<'a, T: ?Sized> {
    /// `Some` until the drop, which ends the borrow before unlocking.
    data: Option<RefMut<'a, T>>,
    mutex: &'a Mutex<T>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.data
            .as_deref()
            .expect("a guard holds its borrow until dropped")
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data
            .as_deref_mut()
            .expect("a guard holds its borrow until dropped")
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // The borrow ends first, so the next holder's borrow succeeds.
        self.data = None;
        unlock(&self.mutex.raw);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
