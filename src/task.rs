//! Tasks: their ids, the scheduler's record of each one, and the handles
//! (`JoinHandle`, `Builder`) users hold.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use corosensei::{Coroutine, Yielder};

use crate::context;
use crate::op::{Op, Resume};
use crate::stack::PooledStack;

/// The coroutine type every task runs in: resumed with [`Resume`], yields
/// [`Op`], returns nothing (the task's value goes to its [`JoinHandle`]).
pub(crate) type TaskCoroutine = Coroutine<Resume, Op, (), PooledStack>;

/// The default stack size of a task: 256 KiB.
///
/// Stacks are reserved, not committed: a task only costs the pages it
/// actually touches (one or two for a typical I/O task), so a generous size
/// costs address space, not memory. 256 KiB is deep enough for formatting,
/// panics with backtraces and a few levels of buffered readers and parsers,
/// and small enough that a million tasks reserve 256 GiB of the 128 TiB
/// address space. Use [`Builder::stack_size`] for deep recursion.
pub const DEFAULT_STACK_SIZE: usize = 256 * 1024;

/// The smallest stack size [`Builder::stack_size`] accepts (16 KiB); smaller
/// requests are raised to it, since unwinding a panic alone needs several KiB.
pub const MIN_STACK_SIZE: usize = 16 * 1024;

/// Identifies a task on its scheduler.
///
/// Ids are never reused within one [`run`](crate::run): the serial number
/// grows with every spawn, so an id held after its task ended cannot name a
/// newer task that happens to occupy the same table slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskId {
    /// Slot in the scheduler's task table.
    pub(crate) key: usize,
    /// Spawn serial number; tells apart the tasks that used the same slot.
    pub(crate) serial: u64,
}

impl TaskId {
    /// The task's serial number: 1 for the main task, then one more for each
    /// task spawned on this scheduler.
    pub fn as_u64(self) -> u64 {
        self.serial
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.serial)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.serial)
    }
}

/// A wait registration: "wake task `key` if it is still in wait `token`".
///
/// Every time a task pauses it gets a fresh token, unique on its scheduler.
/// Timers, socket waiter lists and join lists keep a `Waiter`, and a wake-up
/// only takes effect if the task is still waiting under that very token, so a
/// timer that fires after its task moved on (or after its slot was reused)
/// does nothing: stale wake-ups are impossible by construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Waiter {
    pub(crate) key: usize,
    pub(crate) token: u64,
}

/// The scheduler's record of one live task.
pub(crate) struct Task {
    pub(crate) id: TaskId,
    /// Name given with [`Builder::name`], for messages.
    pub(crate) name: Option<Rc<str>>,
    /// The coroutine and the context its code reads, at a fixed address:
    /// the scheduler resumes the coroutine in place. `None` only once the
    /// task has been taken out of the table.
    pub(crate) body: Option<context::BodyBox>,
    /// True while the coroutine runs (a cancellation then only marks it).
    pub(crate) running: bool,
    /// Token of the wait the task is parked in.
    /// # Invariant
    /// 0 exactly when the task is running or queued to run.
    pub(crate) wait: u64,
    /// True while a timer entry for the current wait sits in the heap, so
    /// the heap can count entries that went stale.
    pub(crate) timer_armed: bool,
    /// The answer to send at the next resume.
    pub(crate) resume: Option<Resume>,
    /// Tasks waiting in [`Op::Join`] for this one.
    pub(crate) joiners: Joiners,
    /// Set by a cancellation of the running task: it is torn down at its
    /// next pause.
    pub(crate) cancel_requested: bool,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// The tasks waiting for one task's end. Nearly always one (its handle's
/// owner), so the first is kept inline: no allocation for a plain join, and
/// the rest (boxed) cost the task record one word.
#[derive(Debug, Default)]
pub(crate) struct Joiners {
    first: Option<Waiter>,
    rest: Option<Box<MoreJoiners>>,
}

/// The joiners after the first, behind one pointer: a `Vec` inline would
/// add two words to every task record for a list that is nearly always
/// empty.
#[derive(Debug, Default)]
struct MoreJoiners(Vec<Waiter>);

impl Joiners {
    pub(crate) fn push(&mut self, w: Waiter) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.get_or_insert_with(Default::default).0.push(w);
        }
    }

    /// Takes them all, in the order they came.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = Waiter> {
        let first = self.first.take();
        let rest = self.rest.take().map(|b| b.0).unwrap_or_default();
        first.into_iter().chain(rest)
    }
}

/// Where a task leaves its outcome for its [`JoinHandle`].
pub(crate) struct JoinSlot<T> {
    result: RefCell<Option<Result<T, JoinError>>>,
    /// Stays true after the result has been taken.
    finished: std::cell::Cell<bool>,
}

impl<T> JoinSlot<T> {
    fn new() -> Self {
        JoinSlot {
            result: RefCell::new(None),
            finished: std::cell::Cell::new(false),
        }
    }

    fn set(&self, r: Result<T, JoinError>) {
        if !self.finished.replace(true) {
            *self.result.borrow_mut() = Some(r);
        }
    }

    pub(crate) fn take(&self) -> Option<Result<T, JoinError>> {
        self.result.borrow_mut().take()
    }
}

/// Owned by the task's body: records `Cancelled` if the body is dropped or
/// unwound before it stored a result, so a join never waits for nothing.
struct Outcome<T> {
    slot: Rc<JoinSlot<T>>,
    id: TaskId,
}

impl<T> Drop for Outcome<T> {
    fn drop(&mut self) {
        self.slot.set(Err(JoinError {
            id: self.id,
            repr: Repr::Cancelled,
        }));
    }
}

/// Builds the coroutine for a task running `f`, and the slot its outcome
/// goes to.
pub(crate) fn make_task<F, T>(
    id: TaskId,
    stack: PooledStack,
    f: F,
) -> (TaskCoroutine, Rc<JoinSlot<T>>)
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let slot = Rc::new(JoinSlot::new());
    let outcome = Outcome {
        slot: slot.clone(),
        id,
    };
    let co = Coroutine::with_stack(stack, move |yielder: &Yielder<Resume, Op>, _first| {
        context::enter_task(yielder);
        let outcome = outcome;
        match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => outcome.slot.set(Ok(value)),
            Err(payload) => {
                if context::forced_unwind() {
                    // The coroutine's own teardown: let it reach the root.
                    panic::resume_unwind(payload);
                }
                outcome.slot.set(Err(JoinError {
                    id,
                    repr: Repr::Panicked(payload),
                }));
            }
        }
    });
    (co, slot)
}

/// The message of a panic payload, when it is a string (`panic!("…")` gives
/// a `&'static str` or a `String`).
pub(crate) fn payload_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Why a task produced no value.
///
/// A custom error type, not `io::Error`, because callers must be able to
/// tell the two endings apart and to get a panic's payload back (for
/// example to re-raise it with [`std::panic::resume_unwind`]).
pub struct JoinError {
    id: TaskId,
    repr: Repr,
}

enum Repr {
    Panicked(Box<dyn Any + Send + 'static>),
    Cancelled,
}

impl JoinError {
    /// The id of the task that failed.
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// True if the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panicked(_))
    }

    /// True if the task was cancelled (see [`JoinHandle::cancel`]) or torn
    /// down because [`run`](crate::run) ended before it finished.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The panic payload, or the error back if the task was cancelled.
    ///
    /// # Errors
    ///
    /// Returns `self` if the task did not panic.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panicked(p) => Ok(p),
            Repr::Cancelled => Err(self),
        }
    }

    /// The panic payload.
    ///
    /// # Panics
    ///
    /// Panics if the task was cancelled rather than panicking.
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.try_into_panic() {
            Ok(p) => p,
            Err(e) => panic!("JoinError::into_panic on a cancelled task ({e})"),
        }
    }

    /// The panic message, when the payload is a string.
    pub fn panic_message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Panicked(p) => payload_text(&**p),
            Repr::Cancelled => None,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panicked(_) => match self.panic_message() {
                Some(m) => write!(f, "task {} panicked: {m}", self.id),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({})", self.id),
            Repr::Panicked(_) => write!(
                f,
                "JoinError::Panicked({}, {:?})",
                self.id,
                self.panic_message()
            ),
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for io::Error {
    fn from(e: JoinError) -> io::Error {
        io::Error::other(e.to_string())
    }
}

/// An owned permission to wait for a task's value.
///
/// Dropping the handle detaches the task: it keeps running, and its value is
/// dropped when it ends.
///
/// A handle is tied to the thread its task runs on:
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// yieldloop::run(|| {
///     let handle = yieldloop::spawn(|| 1);
///     needs_send(handle);
/// });
/// ```
pub struct JoinHandle<T> {
    id: TaskId,
    slot: Rc<JoinSlot<T>>,
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(id: TaskId, slot: Rc<JoinSlot<T>>) -> Self {
        JoinHandle { id, slot }
    }

    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// True once the task has ended, by returning, panicking or being
    /// cancelled. Never pauses.
    pub fn is_finished(&self) -> bool {
        self.slot.finished.get()
    }

    /// Pauses the calling task until this task ends, and returns its value.
    ///
    /// # Errors
    ///
    /// A [`JoinError`] when the task panicked (carrying the payload) or was
    /// cancelled. If the *calling* task is torn down while it waits, `join`
    /// returns a cancellation error too.
    ///
    /// # Panics
    ///
    /// Panics if called outside a task while the task has not finished, or
    /// by the task itself (it could never finish).
    ///
    /// # Examples
    ///
    /// ```
    /// yieldloop::run(|| {
    ///     let ok = yieldloop::spawn(|| 6 * 7);
    ///     let bad = yieldloop::spawn(|| -> u32 { panic!("boom") });
    ///     assert_eq!(ok.join().unwrap(), 42);
    ///     let err = bad.join().unwrap_err();
    ///     assert!(err.is_panic());
    ///     assert_eq!(err.panic_message(), Some("boom"));
    /// });
    /// ```
    pub fn join(self) -> Result<T, JoinError> {
        if !self.is_finished() && current_id() == Some(self.id) {
            panic!(
                "yieldloop: task {} tried to join itself, which can never finish",
                self.id
            );
        }
        loop {
            if let Some(result) = self.slot.take() {
                return result;
            }
            if let Resume::Cancelled = crate::suspend(Op::Join(self.id)) {
                return Err(JoinError {
                    id: self.id,
                    repr: Repr::Cancelled,
                });
            }
        }
    }

    /// Cancels the task: it is unwound from where it is paused, so the
    /// destructors of everything on its stack run (sockets close, timers and
    /// waits are dropped), and [`join`](Self::join) returns a
    /// [`JoinError`] for which [`is_cancelled`](JoinError::is_cancelled) is
    /// true.
    ///
    /// Cancelling a task that has ended does nothing. A task that cancels
    /// itself goes on running until its next pause (its next `sleep`, read,
    /// `yield_now`, …) and is unwound there instead of pausing.
    ///
    /// # Panics
    ///
    /// Panics if called outside a task while the task has not finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// yieldloop::run(|| {
    ///     let sleeper = yieldloop::spawn(|| yieldloop::sleep(Duration::from_secs(3600)));
    ///     yieldloop::yield_now();
    ///     sleeper.cancel();
    ///     assert!(sleeper.join().unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn cancel(&self) {
        if self.is_finished() {
            return;
        }
        context::with_scheduler("JoinHandle::cancel", |s| s.cancel(self.id));
    }
}

/// Configures a task before spawning it, like [`std::thread::Builder`].
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let handle = yieldloop::Builder::new()
///         .name("deep-recursion")
///         .stack_size(4 * 1024 * 1024)
///         .spawn(|| (1..=10u64).product::<u64>())
///         .expect("stack allocation failed");
///     assert_eq!(handle.join().unwrap(), 3_628_800);
/// });
/// ```
#[derive(Debug, Default, Clone)]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

impl Builder {
    /// A builder with no name and the [default stack size](DEFAULT_STACK_SIZE).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the task; the name appears in diagnostics.
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Sets the task's stack size in bytes. It is rounded up to whole pages
    /// and to at least [`MIN_STACK_SIZE`]; a guard page comes on top.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Spawns the task on the current thread's scheduler.
    ///
    /// # Errors
    ///
    /// An `io::Error` when no stack can be had: out of memory, or out of
    /// memory mappings (the message names the `vm.max_map_count` sysctl).
    ///
    /// # Panics
    ///
    /// Panics when called outside a task.
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let size = self.stack_size.unwrap_or(DEFAULT_STACK_SIZE);
        let name = self.name.map(Rc::from);
        context::with_scheduler("yieldloop::spawn", |s| s.spawn(name, size, f))
    }
}

/// Spawns a task running `f` on the current thread's scheduler and returns a
/// handle to its value. The task starts on a later turn of the loop, after
/// the tasks already ready.
///
/// # Panics
///
/// Panics when called outside a task, or when no stack can be had (use
/// [`Builder::spawn`] to get that as an error).
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let handles: Vec<_> = (0..10).map(|i| yieldloop::spawn(move || i * i)).collect();
///     let sum: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
///     assert_eq!(sum, 285);
/// });
/// ```
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    match Builder::new().spawn(f) {
        Ok(handle) => handle,
        Err(e) => panic!("yieldloop::spawn: cannot start a task: {e}"),
    }
}

/// The id of the task this is called from, or `None` outside a task.
pub fn current_id() -> Option<TaskId> {
    if context::in_task() {
        context::current_task()
    } else {
        None
    }
}
