//! Task-locals: values that belong to one task, declared with
//! [`task_local!`](crate::task_local!) and reached through a [`LocalKey`],
//! as `thread_local!` values belong to one thread.
//!
//! Many tasks share one thread, so a `thread_local!` holding "the current
//! request" is overwritten by whichever task ran last: after a pause, a task
//! may find another task's value in it. A task-local is one value per task.
//!
//! # Where the values live
//!
//! Each task's context (at the top of its stack, see the scheduler's
//! `coroutine`) has a slot for its task-locals, empty until the task first
//! uses a key: a task that never does costs no allocation, and no resume or
//! pause ever looks at the slot. On first use a key's value is made from its initializer and
//! kept, behind an `Rc`, in a small list in that slot, found by the key's
//! address. The task's body tears the list down on its way out, after the
//! task's own frames, whether it returns, panics or is cancelled: each
//! value is dropped exactly once, on the task's stack (or, for values a
//! task inherited but never started with, when it is torn down).
//!
//! ```text
//!   TaskContext.locals: None ──first use──▶ Some(Live[(key, Rc<value>, clone?), …])
//!                        └──────────task ends──────────▶ Some(TornDown)  (zero-sized)
//! ```
//!
//! A list, not a `HashMap`: a task uses a handful of keys, and a scan of a
//! few addresses beats hashing. Values sit behind an `Rc` so that a `with`
//! holds no borrow of the list while its closure runs: the closure may use
//! (and so create) other task-locals, and the list may grow under it.
//!
//! # Inheritance
//!
//! A key declared `#[inherit]` is copied into every task spawned while the
//! spawner has a value for it: [`spawn`](crate::spawn()) and
//! [`Builder::spawn`](crate::Builder::spawn) clone the value, in the
//! spawner, at spawn time. The choice belongs to the key, not to each spawn
//! call, because it follows from what the value means: a request id should
//! follow the work into every task a request spawns, including tasks that a
//! library spawns without knowing the key; a per-task buffer or counter
//! should not. A key can only be declared `#[inherit]` if its type is
//! `Clone`, which the compiler checks.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::error::Error;
use std::fmt;
use std::rc::Rc;

use crate::scheduler::coroutine;

/// Makes a child's copy of an inherited value (the parent's, behind `&dyn
/// Any`).
type CloneFn = fn(&dyn Any) -> Rc<dyn Any>;

/// A key to a task-local value: each task that uses it gets its own `T`,
/// made from the key's initializer on first use and dropped when the task
/// ends, however it ends (return, panic, cancellation). Declared with
/// [`task_local!`](crate::task_local!).
///
/// [`with`](Self::with) lends the running task's value; as with
/// [`std::thread::LocalKey`], the value is shared (`&T`), so a value that
/// changes lives in a [`Cell`] or [`RefCell`], and the keys of those types
/// have std's shortcuts: `get`/`set`/`take`/`replace` and
/// `with_borrow`/`with_borrow_mut`.
///
/// A key declared `#[inherit]` is copied into the tasks its task spawns:
/// at [`spawn`](crate::spawn()) (or [`Builder::spawn`](crate::Builder::spawn)),
/// if the spawner has a value for the key, the child starts with a clone of
/// it; otherwise the child makes its own from the initializer, as it does
/// for keys that are not inherited. Tasks started on another thread
/// ([`Runtime::spawn_on`](crate::Runtime::spawn_on)) inherit nothing: the
/// values need not be `Send`.
///
/// The values of the main task of [`run`](crate::run) are its own too;
/// outside `run` and its tasks there is no value: [`with`](Self::with)
/// panics and [`try_with`](Self::try_with) returns an [`AccessError`].
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
///
/// yieldloop::task_local! {
///     static STEPS: Cell<u32> = Cell::new(0);
/// }
///
/// yieldloop::run(|| {
///     let a = yieldloop::spawn(|| {
///         for _ in 0..3 {
///             STEPS.set(STEPS.get() + 1);
///             yieldloop::yield_now();
///         }
///         STEPS.get()
///     });
///     let b = yieldloop::spawn(|| {
///         STEPS.set(100);
///         yieldloop::yield_now();
///         STEPS.get()
///     });
///     // Interleaved on one thread, yet each task counted alone.
///     assert_eq!((a.join().unwrap(), b.join().unwrap()), (3, 100));
///     assert_eq!(STEPS.get(), 0);
/// });
/// ```
pub struct LocalKey<T: 'static> {
    /// The static's path, for messages.
    name: &'static str,
    /// Makes a task's first value.
    init: fn() -> T,
    /// For an `#[inherit]` key: how a child gets its copy (only `T: Clone`
    /// keys have one, see [`LocalKey::__new_inherited`]).
    inherit: Option<CloneFn>,
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKey")
            .field("name", &self.name)
            .field("inherit", &self.inherit.is_some())
            .finish()
    }
}

impl<T: 'static> LocalKey<T> {
    /// A key named `name` whose values start as `init()`; used by
    /// [`task_local!`](crate::task_local!).
    #[doc(hidden)]
    pub const fn __new(name: &'static str, init: fn() -> T) -> LocalKey<T> {
        LocalKey {
            name,
            init,
            inherit: None,
        }
    }

    /// An `#[inherit]` key; used by [`task_local!`](crate::task_local!).
    /// The bound here is what makes `#[inherit]` on a type that is not
    /// `Clone` a compile error.
    #[doc(hidden)]
    pub const fn __new_inherited(name: &'static str, init: fn() -> T) -> LocalKey<T>
    where
        T: Clone,
    {
        LocalKey {
            name,
            init,
            inherit: Some(clone_value::<T> as CloneFn),
        }
    }

    /// Runs `f` with the running task's value, made from the initializer
    /// first if the task has none yet.
    ///
    /// # Panics
    ///
    /// Panics outside a task (call it inside [`yieldloop::run`](crate::run)
    /// or a task spawned there), or from a task-local's destructor while
    /// its task's values are being dropped. The message names the key.
    ///
    /// # Examples
    ///
    /// ```
    /// yieldloop::task_local! {
    ///     static GREETING: String = "hello".to_string();
    /// }
    /// yieldloop::run(|| {
    ///     assert_eq!(GREETING.with(|g| g.len()), 5);
    /// });
    /// ```
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        match self.try_with(f) {
            Ok(r) => r,
            Err(e) => panic!("yieldloop: {e}"),
        }
    }

    /// Runs `f` with the running task's value, like [`with`](Self::with),
    /// or returns an error where `with` would panic.
    ///
    /// # Errors
    ///
    /// An [`AccessError`] outside a task, or from a task-local's
    /// destructor while its task's values are being dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// yieldloop::task_local! {
    ///     static DEPTH: u32 = 1;
    /// }
    /// // Outside `run` there is no task, so no value.
    /// assert!(DEPTH.try_with(|d| *d).is_err());
    /// yieldloop::run(|| assert_eq!(DEPTH.try_with(|d| *d), Ok(1)));
    /// ```
    pub fn try_with<F, R>(&'static self, f: F) -> Result<R, AccessError>
    where
        F: FnOnce(&T) -> R,
    {
        let value = self.value_or_init(self.init)?;
        Ok(f(downcast::<T>(&value)))
    }

    /// The running task's value, made by `init` (and kept) if it has none.
    fn value_or_init(&'static self, init: impl FnOnce() -> T) -> Result<Rc<dyn Any>, AccessError> {
        let key = self.key();
        if let Some(value) = lookup(key).map_err(|e| self.error(e))? {
            return Ok(value);
        }
        // The initializer runs with the list in place: it may use other keys.
        let value: Rc<dyn Any> = Rc::new(init());
        insert(key, value, self.inherit).map_err(|e| self.error(e))
    }

    /// The key's identity in a task's list: the static's address (statics
    /// that are not zero-sized have distinct addresses).
    fn key(&'static self) -> usize {
        self as *const LocalKey<T> as usize
    }

    fn error(&'static self, cause: Cause) -> AccessError {
        AccessError {
            key: self.name,
            cause,
        }
    }
}

/// std's shortcuts for a task-local [`Cell`].
impl<T: 'static> LocalKey<Cell<T>> {
    /// Sets the running task's value to `value`. If the task had none yet,
    /// it starts as `value`, and the initializer is not run.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// yieldloop::task_local! {
    ///     static ATTEMPT: Cell<u32> = Cell::new(1);
    /// }
    /// yieldloop::run(|| {
    ///     ATTEMPT.set(2);
    ///     assert_eq!(ATTEMPT.get(), 2);
    /// });
    /// ```
    pub fn set(&'static self, value: T) {
        let mut value = Some(value);
        let cell = self.value_or_init(|| Cell::new(value.take().expect("initialized once")));
        match cell {
            Ok(cell) => {
                if let Some(value) = value {
                    downcast::<Cell<T>>(&cell).set(value);
                }
            }
            Err(e) => panic!("yieldloop: {e}"),
        }
    }

    /// A copy of the running task's value.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// yieldloop::task_local! {
    ///     static LIMIT: Cell<usize> = Cell::new(64);
    /// }
    /// yieldloop::run(|| assert_eq!(LIMIT.get(), 64));
    /// ```
    pub fn get(&'static self) -> T
    where
        T: Copy,
    {
        self.with(Cell::get)
    }

    /// Takes the running task's value, leaving `T::default()`.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// yieldloop::task_local! {
    ///     static PENDING: Cell<Option<u32>> = Cell::new(Some(5));
    /// }
    /// yieldloop::run(|| {
    ///     assert_eq!(PENDING.take(), Some(5));
    ///     assert_eq!(PENDING.take(), None);
    /// });
    /// ```
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(Cell::take)
    }

    /// Replaces the running task's value with `value`, returning the old one.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// yieldloop::task_local! {
    ///     static LEVEL: Cell<u8> = Cell::new(1);
    /// }
    /// yieldloop::run(|| {
    ///     assert_eq!(LEVEL.replace(3), 1);
    ///     assert_eq!(LEVEL.get(), 3);
    /// });
    /// ```
    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

/// std's shortcuts for a task-local [`RefCell`].
impl<T: 'static> LocalKey<RefCell<T>> {
    /// Runs `f` with a shared borrow of the running task's value.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with), and if the value is mutably borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// yieldloop::task_local! {
    ///     static PATH: RefCell<Vec<&'static str>> = RefCell::new(vec!["root"]);
    /// }
    /// yieldloop::run(|| assert_eq!(PATH.with_borrow(|p| p.len()), 1));
    /// ```
    pub fn with_borrow<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        self.with(|cell| f(&cell.borrow()))
    }

    /// Runs `f` with a mutable borrow of the running task's value.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with), and if the value is borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// yieldloop::task_local! {
    ///     static PATH: RefCell<Vec<&'static str>> = RefCell::new(vec!["root"]);
    /// }
    /// yieldloop::run(|| {
    ///     PATH.with_borrow_mut(|p| p.push("child"));
    ///     assert_eq!(PATH.with_borrow(|p| p.join("/")), "root/child");
    /// });
    /// ```
    pub fn with_borrow_mut<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&mut T) -> R,
    {
        self.with(|cell| f(&mut cell.borrow_mut()))
    }

    /// Sets the running task's value to `value`. If the task had none yet,
    /// it starts as `value`, and the initializer is not run.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with), and if the value is borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// yieldloop::task_local! {
    ///     static USER: RefCell<String> = RefCell::new(String::new());
    /// }
    /// yieldloop::run(|| {
    ///     USER.set("ada".to_string());
    ///     assert_eq!(USER.with_borrow(|u| u.clone()), "ada");
    /// });
    /// ```
    pub fn set(&'static self, value: T) {
        let mut value = Some(value);
        let cell = self.value_or_init(|| RefCell::new(value.take().expect("initialized once")));
        match cell {
            Ok(cell) => {
                if let Some(value) = value {
                    *downcast::<RefCell<T>>(&cell).borrow_mut() = value;
                }
            }
            Err(e) => panic!("yieldloop: {e}"),
        }
    }

    /// Takes the running task's value, leaving `T::default()`.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with), and if the value is borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// yieldloop::task_local! {
    ///     static EVENTS: RefCell<Vec<u32>> = RefCell::new(vec![1, 2]);
    /// }
    /// yieldloop::run(|| {
    ///     assert_eq!(EVENTS.take(), [1, 2]);
    ///     assert!(EVENTS.with_borrow(Vec::is_empty));
    /// });
    /// ```
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(RefCell::take)
    }

    /// Replaces the running task's value with `value`, returning the old one.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with), and if the value is borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// yieldloop::task_local! {
    ///     static ROUTE: RefCell<String> = RefCell::new("/".to_string());
    /// }
    /// yieldloop::run(|| {
    ///     assert_eq!(ROUTE.replace("/users".to_string()), "/");
    /// });
    /// ```
    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

/// Why a task-local could not be reached: no task runs on this thread
/// (outside [`yieldloop::run`](crate::run), or on the scheduler's own
/// stack), or the task's task-locals are being dropped. Returned by
/// [`LocalKey::try_with`], like [`std::thread::AccessError`].
///
/// # Examples
///
/// ```
/// yieldloop::task_local! {
///     static ID: u64 = 0;
/// }
/// let err = ID.try_with(|id| *id).unwrap_err();
/// assert!(err.to_string().contains("outside a task"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError {
    /// The key's path, as `module::NAME`.
    key: &'static str,
    cause: Cause,
}

/// What made an [`AccessError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// No task runs on this thread.
    OutsideTask,
    /// The task's values are being (or have been) dropped.
    TornDown,
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause {
            Cause::OutsideTask => write!(
                f,
                "task-local `{}` used outside a task; use it inside `yieldloop::run` \
                 or a task spawned there",
                self.key
            ),
            Cause::TornDown => write!(
                f,
                "task-local `{}` used while its task's task-locals are being dropped",
                self.key
            ),
        }
    }
}

impl Error for AccessError {}

/// A task's values, while it may use them: `(key, value, clone)` for each
/// key it has used (see [`LocalKey::key`]).
struct Live(Vec<Entry>);

/// Stands in a task's slot once its values have been dropped (or while
/// they are): keys fail with [`Cause::TornDown`] from then on. Zero-sized,
/// so its box owns no memory and the slot may keep it for good.
struct TornDown;

/// One key's value in a task.
struct Entry {
    key: usize,
    value: Rc<dyn Any>,
    /// The key's `inherit`, kept here so spawning needs no key.
    inherit: Option<CloneFn>,
}

/// The value `key` has in the running task, if any.
fn lookup(key: usize) -> Result<Option<Rc<dyn Any>>, Cause> {
    edit(|slot| match slot {
        None => Ok(None),
        Some(b) => match b.downcast_ref::<Live>() {
            Some(live) => Ok(live
                .0
                .iter()
                .find(|e| e.key == key)
                .map(|e| e.value.clone())),
            None => Err(Cause::TornDown),
        },
    })
}

/// Gives `key` the value `value` in the running task and returns it; if
/// the key got one meanwhile (its initializer used the key), that one
/// stays and is returned, and `value` is dropped.
fn insert(key: usize, value: Rc<dyn Any>, inherit: Option<CloneFn>) -> Result<Rc<dyn Any>, Cause> {
    let kept = edit(|slot| {
        let live = match slot {
            None => slot
                .insert(Box::new(Live(Vec::new())))
                .downcast_mut::<Live>(),
            Some(b) => b.downcast_mut::<Live>(),
        };
        let Some(live) = live else {
            return Err(Cause::TornDown);
        };
        if let Some(e) = live.0.iter().find(|e| e.key == key) {
            return Ok(e.value.clone());
        }
        live.0.push(Entry {
            key,
            value: value.clone(),
            inherit,
        });
        Ok(value.clone())
    });
    // `value` is dropped here, out of `edit`: it may be a value that lost.
    drop(value);
    kept
}

/// Runs `f` on the running task's slot, taken out for the call and put
/// back after. `f` must run no code of the user's (no initializer, clone
/// or destructor): it would find the slot empty. No task: `OutsideTask`.
fn edit<R>(f: impl FnOnce(&mut Option<Box<dyn Any>>) -> Result<R, Cause>) -> Result<R, Cause> {
    coroutine::with_locals(|cell| {
        let mut slot = cell.take();
        let r = f(&mut slot);
        cell.set(slot);
        r
    })
    .unwrap_or(Err(Cause::OutsideTask))
}

/// The `T` behind a value of a `LocalKey<T>`.
fn downcast<T: 'static>(value: &Rc<dyn Any>) -> &T {
    // A key's address names one static, so one `T`: this cannot fail.
    (**value)
        .downcast_ref::<T>()
        .expect("a task-local's value has its key's type")
}

/// A child's copy of an inherited value.
fn clone_value<T: Clone + 'static>(parent: &dyn Any) -> Rc<dyn Any> {
    Rc::new(
        parent
            .downcast_ref::<T>()
            .expect("a task-local's value has its key's type")
            .clone(),
    )
}

/// The values a task spawned now starts with: clones of the running task's
/// values of `#[inherit]` keys. Empty (and no allocation) outside a task
/// and for a task that has none.
#[derive(Default)]
pub(crate) struct Inherited(Vec<Entry>);

impl fmt::Debug for Inherited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Inherited({} values)", self.0.len())
    }
}

/// Clones the running task's inherited values for a task it spawns; see
/// [`Inherited`]. Runs `Clone` impls, so it must be called outside any
/// borrow of the scheduler.
pub(crate) fn inherit() -> Inherited {
    let any = edit(|slot| {
        Ok(slot
            .as_ref()
            .and_then(|b| b.downcast_ref::<Live>())
            .is_some_and(|live| live.0.iter().any(|e| e.inherit.is_some())))
    })
    .unwrap_or(false);
    if !any {
        // The common case, kept to a check: nothing to clone, nothing
        // allocated, nothing to drop.
        return Inherited::default();
    }
    // First the parent's values (no user code while the slot is out)...
    let parents: Vec<(usize, Rc<dyn Any>, CloneFn)> = edit(|slot| {
        Ok(match slot.as_ref().and_then(|b| b.downcast_ref::<Live>()) {
            Some(live) => live
                .0
                .iter()
                .filter_map(|e| e.inherit.map(|clone| (e.key, e.value.clone(), clone)))
                .collect(),
            None => Vec::new(),
        })
    })
    .unwrap_or_default();
    // ...then the clones, which may use task-locals themselves.
    Inherited(
        parents
            .into_iter()
            .map(|(key, value, clone)| Entry {
                key,
                value: clone(&*value),
                inherit: Some(clone),
            })
            .collect(),
    )
}

/// Owned by a running task's body: drops the task's values when it is
/// dropped, after the task's own frames have returned or unwound.
#[derive(Debug)]
pub(crate) struct Teardown(());

/// Starts the running task's task-locals with `inherited`; called first
/// thing in its body. The guard returned drops them all.
pub(crate) fn enter(inherited: Inherited) -> Teardown {
    let values = inherited.0;
    if values.capacity() == 0 {
        // Nothing inherited and nothing allocated (the common case): there
        // is nothing to drop either, so none of the drop's code runs.
        std::mem::forget(values);
    } else if !values.is_empty() {
        let _ = edit(|slot| {
            debug_assert!(slot.is_none(), "a task starts with no task-locals");
            *slot = Some(Box::new(Live(values)));
            Ok(())
        });
    }
    Teardown(())
}

impl Drop for Teardown {
    fn drop(&mut self) {
        // The marker takes the values' place (so that their destructors,
        // and anything after, get an error, not new values nobody would
        // drop), and only then are they dropped, out of the slot. Its box
        // allocates nothing.
        let values = coroutine::with_locals(|cell| cell.replace(Some(Box::new(TornDown))));
        drop(values);
    }
}
