//! [`RwLock`]: many readers or one writer, across threads.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use super::flavor::{CrossThread, Deferred, Flavor, Wakeups};
use super::wait;
use super::waiters::{WithWaiters, Woken};
use crate::sys::threads::Mutex as StdMutex;

/// A reader-writer lock for tasks on any worker and plain threads: any
/// number of readers at once, or one writer.
///
/// A waiting task pauses only itself; a waiting plain thread blocks.
/// Access is first come, first served: a reader arriving while a writer
/// waits queues behind it (writers do not starve), and a writer's unlock
/// admits the run of readers at the front of the queue together.
///
/// # Cancellation
///
/// A waiter unwound while it waits leaves the queue; access it had just
/// been granted is given back (and so goes to the next in line).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::RwLock, Runtime};
///
/// let config = Arc::new(RwLock::new(String::from("v1")));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let c = config.clone();
/// let reader = rt.spawn_on(1, move || c.read().clone());
/// let seen = reader.join().unwrap();
/// assert!(seen == "v1");
/// *config.write() = String::from("v2"); // a plain thread: blocks if needed
/// assert_eq!(*config.read(), "v2");
/// ```
pub struct RwLock<T: ?Sized> {
    state: StdMutex<State>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands the value between threads (`T: Send`); readers on
// several threads share `&T` at once (`T: Sync`).
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

/// What a waiter wants.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Read,
    Write,
}

/// Who holds the lock.
struct Holders {
    /// Readers holding the lock.
    readers: usize,
    /// # Invariant
    /// Never true while `readers > 0`.
    writer: bool,
}

/// The holders and the waiters, each for a read or a write lock.
type State = WithWaiters<CrossThread, Holders, Want>;

impl State {
    /// Grants the lock to whoever is at the front of the queue and can
    /// have it now: a writer alone, or the run of readers before the next
    /// writer. Returns the waiters to wake.
    fn grant(&mut self) -> Deferred {
        let mut wakes = Deferred::default();
        loop {
            let (writer, readers) = (self.writer, self.readers);
            let granted = self.waiters.take_one_if(&mut wakes, |want| match want {
                Want::Write => !writer && readers == 0,
                Want::Read => !writer,
            });
            match granted {
                Some(Want::Write) => {
                    self.writer = true;
                    break;
                }
                Some(Want::Read) => self.readers += 1,
                None => break,
            }
        }
        wakes
    }

    fn unlock(&mut self, want: Want) -> Deferred {
        match want {
            Want::Read => self.readers -= 1,
            Want::Write => self.writer = false,
        }
        self.grant()
    }

    fn try_take(&mut self, want: Want) -> bool {
        // Nobody queued: a newcomer does not overtake waiters.
        if self.writer || !self.waiters.is_empty() {
            return false;
        }
        match want {
            Want::Read => self.readers += 1,
            Want::Write if self.readers == 0 => self.writer = true,
            Want::Write => return false,
        }
        true
    }
}

impl<T> RwLock<T> {
    /// An unlocked lock holding `value`.
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            state: StdMutex::new(State::new(Holders {
                readers: 0,
                writer: false,
            })),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, taking the lock apart.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks for reading, waiting while a writer holds the lock or waits
    /// before this reader.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        self.take(Want::Read);
        RwLockReadGuard { lock: self }
    }

    /// Locks for writing, waiting until no reader or writer holds it.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.take(Want::Write);
        RwLockWriteGuard { lock: self }
    }

    /// Locks for reading if that needs no waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = yieldloop::sync::RwLock::new(0);
    /// let r1 = l.try_read().unwrap();
    /// let _r2 = l.try_read().unwrap(); // readers share
    /// assert!(l.try_write().is_none());
    /// drop((r1, _r2));
    /// assert!(l.try_write().is_some());
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        CrossThread::lock(&self.state)
            .try_take(Want::Read)
            .then(|| RwLockReadGuard { lock: self })
    }

    /// Locks for writing if that needs no waiting.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        CrossThread::lock(&self.state)
            .try_take(Want::Write)
            .then(|| RwLockWriteGuard { lock: self })
    }

    /// The value, through `&mut`: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    fn take(&self, want: Want) {
        crate::task::coop::proceed();
        let mut st = CrossThread::lock(&self.state);
        if st.try_take(want) {
            return;
        }
        let (_st, woken) = wait::wait(
            &self.state,
            st,
            want,
            None,
            wait::nothing,
            // Granted, then unwound: give it back. Not granted: a writer
            // leaving may let the readers queued behind it in.
            move |st: &mut State, woken| match woken {
                Woken::One => st.unlock(want),
                _ => st.grant(),
            },
            "for an RwLock",
        );
        // Only a grant ends a wait with no deadline.
        debug_assert_eq!(woken, Woken::One);
    }

    fn unlock(&self, want: Want) {
        let wakes = CrossThread::lock(&self.state).unlock(want);
        wakes.wake();
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Shared access to an [`RwLock`]'s value; unlocks when dropped.
#[must_use = "the lock is released at once if the guard is not kept"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to an [`RwLock`]'s value; unlocks when dropped.
#[must_use = "the lock is released at once if the guard is not kept"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: a shared guard gives `&T` only.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a read guard exists only while no writer holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the write guard is the lock's only holder.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the write guard is the lock's only holder, and `&mut
        // self` makes this the only use of it.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.unlock(Want::Read);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.unlock(Want::Write);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
