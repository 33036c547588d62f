//! [`OnceCell`]: a value set once, by the first caller, while the others
//! wait.

use std::cell::UnsafeCell;
use std::fmt;

use super::flavor::{CrossThread, Deferred, Flavor, Wakeups};
use super::wait::{self, OnDrop};
use super::waiters::{WithWaiters, Woken};
use crate::sys::threads::atomic::{AtomicBool, Ordering};
use crate::sys::threads::Mutex as StdMutex;

/// A cell written once, shared between tasks on any worker and plain
/// threads: the first caller of [`get_or_init`](Self::get_or_init) runs
/// the initialiser while the others wait (a task pauses, a thread
/// blocks), and everyone then reads the same value.
///
/// An initialiser that panics (or whose task is cancelled) leaves the cell
/// empty and lets the next waiter, first come first served, try with its
/// own initialiser. Reading a set cell is one atomic load.
///
/// # Examples
///
/// ```
/// use std::sync::{atomic::{AtomicUsize, Ordering}, Arc};
/// use yieldloop::{sync::OnceCell, Runtime};
///
/// let cell = Arc::new(OnceCell::new());
/// let calls = Arc::new(AtomicUsize::new(0));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let tasks: Vec<_> = (0..4)
///     .map(|i| {
///         let (cell, calls) = (cell.clone(), calls.clone());
///         rt.spawn_on(i % 2, move || {
///             *cell.get_or_init(|| {
///                 calls.fetch_add(1, Ordering::SeqCst);
///                 yieldloop::sleep(std::time::Duration::from_millis(5));
///                 42
///             })
///         })
///     })
///     .collect();
/// for t in tasks {
///     assert_eq!(t.join().unwrap(), 42);
/// }
/// assert_eq!(calls.load(Ordering::SeqCst), 1);
/// ```
pub struct OnceCell<T> {
    /// True once `value` is written; it is never written again.
    set: AtomicBool,
    /// # Invariant
    /// Written only by the one caller that set `running` under the state's
    /// lock, and only while `set` is false.
    value: UnsafeCell<Option<T>>,
    state: StdMutex<WithWaiters<CrossThread, Init>>,
}

// SAFETY: the value moves in from whichever thread initialises it
// (`T: Send`).
unsafe impl<T: Send> Send for OnceCell<T> {}
// SAFETY: the value is written by one thread and then shared as `&T`
// (`T: Sync`), moving in from the thread that made it (`T: Send`).
unsafe impl<T: Send + Sync> Sync for OnceCell<T> {}

/// Whether an initialiser is running; its waiters wait beside it.
#[derive(Default)]
struct Init {
    /// An initialiser is running.
    running: bool,
}

impl WithWaiters<CrossThread, Init> {
    /// Wakes the longest waiter, to try its own initialiser.
    fn next_tries(&mut self) -> Deferred {
        let mut wakes = Deferred::default();
        self.waiters.wake_one(&mut wakes);
        wakes
    }
}

impl<T> Default for OnceCell<T> {
    fn default() -> Self {
        OnceCell::new()
    }
}

impl<T> OnceCell<T> {
    /// An empty cell.
    pub fn new() -> OnceCell<T> {
        OnceCell {
            set: AtomicBool::new(false),
            value: UnsafeCell::new(None),
            state: StdMutex::new(WithWaiters::default()),
        }
    }

    /// The value, if it is set.
    pub fn get(&self) -> Option<&T> {
        if self.set.load(Ordering::Acquire) {
            // SAFETY: `set` is true: the value was written before (the
            // Release store below), and is never written again.
            unsafe { (*self.value.get()).as_ref() }
        } else {
            None
        }
    }

    /// The value, initialising it with `f` if nobody has: the first caller
    /// runs `f` while later ones wait for it.
    ///
    /// # Panics
    ///
    /// If `f` panics, the panic goes on in this caller and the cell stays
    /// empty (the next waiter tries). Calling `get_or_init` on the same
    /// cell from inside `f` never returns. Panics if it must pause in a
    /// task that is unwinding.
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        crate::task::coop::proceed();
        if let Some(v) = self.get() {
            return v;
        }
        self.init(f)
    }

    /// Sets the value if the cell is empty and no initialiser runs;
    /// otherwise gives `value` back.
    ///
    /// # Errors
    ///
    /// `value`, if the cell was set or being set.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = yieldloop::sync::OnceCell::new();
    /// assert_eq!(cell.set(1), Ok(()));
    /// assert_eq!(cell.set(2), Err(2));
    /// assert_eq!(cell.get(), Some(&1));
    /// ```
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut st = CrossThread::lock(&self.state);
        if st.running || self.set.load(Ordering::Acquire) {
            return Err(value);
        }
        // SAFETY: under the lock, with no initialiser running and the cell
        // unset, nobody else reads or writes the value.
        unsafe { *self.value.get() = Some(value) };
        self.set.store(true, Ordering::Release);
        let wakes = st.waiters.take_all();
        drop(st);
        wakes.wake();
        Ok(())
    }

    /// The value, taking the cell apart.
    pub fn into_inner(self) -> Option<T> {
        self.value.into_inner()
    }

    #[cold]
    fn init(&self, f: impl FnOnce() -> T) -> &T {
        let mut st = CrossThread::lock(&self.state);
        loop {
            if let Some(v) = self.get() {
                return v;
            }
            if !st.running {
                break;
            }
            (st, _) = wait::wait(
                &self.state,
                st,
                (),
                None,
                wait::nothing,
                // Picked to try after a failed initialiser, then unwound:
                // the next waiter tries instead.
                |st: &mut WithWaiters<CrossThread, Init>, woken| match woken {
                    Woken::One => st.next_tries(),
                    _ => Deferred::default(),
                },
                "for a OnceCell",
            );
        }
        st.running = true;
        drop(st);
        // If `f` panics (or its task is cancelled in it), the next waiter
        // tries.
        let failed = OnDrop::new(|| {
            let mut st = CrossThread::lock(&self.state);
            st.running = false;
            let wakes = st.next_tries();
            drop(st);
            wakes.wake();
        });
        let value = f();
        // SAFETY: `running` was set by this caller under the lock and the
        // cell is unset: nobody else reads or writes the value.
        unsafe { *self.value.get() = Some(value) };
        self.set.store(true, Ordering::Release);
        failed.defuse();
        let mut st = CrossThread::lock(&self.state);
        st.running = false;
        let wakes = st.waiters.take_all();
        drop(st);
        wakes.wake();
        self.get().expect("the value was just set")
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnceCell")
            .field("value", &self.get())
            .finish()
    }
}
