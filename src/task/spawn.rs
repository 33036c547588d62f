//! Spawning tasks and waiting for them: [`spawn`], [`Builder`],
//! [`JoinHandle`] and [`JoinError`], and [`run`], which starts the first
//! task. The scheduler below knows nothing of handles: a task's body here
//! leaves its outcome in a [`JoinSlot`] that its handle reads.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use super::suspend::suspend;
use super::task_local::{self, Inherited};
use crate::protocol::join_failure::{failure_accessors, Failure};
use crate::protocol::{Op, Resume, TaskId};
use crate::scheduler;
use crate::scheduler::coroutine;
use crate::stack::DEFAULT_STACK_SIZE;

/// Where a task leaves its outcome for its [`JoinHandle`].
///
/// One small block per task, shared by the task and its handle: with a
/// million tasks alive, every byte here is a megabyte. So the error, which
/// is rare, is boxed (for a `u64` value the block is 48 bytes of heap
/// rather than 80), and the result sits in a `Cell`: it is only ever moved
/// in or out whole, never borrowed.
struct JoinSlot<T> {
    result: Cell<Option<Result<T, Box<JoinError>>>>,
    /// Stays true after the result has been taken.
    finished: Cell<bool>,
}

impl<T> JoinSlot<T> {
    fn new() -> Self {
        JoinSlot {
            result: Cell::new(None),
            finished: Cell::new(false),
        }
    }

    fn set(&self, r: Result<T, JoinError>) {
        if !self.finished.replace(true) {
            // Not finished before, so never set: the slot held `None`, and
            // forgetting it skips a drop that would find nothing to do.
            std::mem::forget(self.result.replace(Some(r.map_err(Box::new))));
        }
    }

    fn take(&self) -> Option<Result<T, JoinError>> {
        self.result.take().map(|r| r.map_err(|e| *e))
    }
}

/// A task's panic, as a [`scope`](crate::scope) sees it without knowing
/// the task's value type.
pub(crate) trait UnjoinedPanic {
    /// Takes the panic payload if the task panicked and its handle has not
    /// taken the outcome.
    fn take_panic(&self) -> Option<Box<dyn std::any::Any + Send + 'static>>;
}

impl<T> UnjoinedPanic for JoinSlot<T> {
    fn take_panic(&self) -> Option<Box<dyn std::any::Any + Send + 'static>> {
        match self.result.take() {
            Some(Err(e)) if e.is_panic() => Some(e.into_panic()),
            other => {
                self.result.set(other);
                None
            }
        }
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
        self.slot.set(Err(JoinError::cancelled(self.id)));
    }
}

/// What a task spawned to run `f` runs: `f`, with its value or its panic
/// left in `slot`. A forced unwind (the scheduler tearing the task down)
/// is let through, and leaves `Cancelled` behind.
///
/// The task's task-locals start as `inherited` and are dropped once `f`
/// has returned or unwound, before the outcome is stored (so a joiner finds
/// them gone) and still under `catch_unwind` (so a destructor's panic on
/// return is the task's panic).
fn task_body<'a, F, T>(
    id: TaskId,
    slot: Rc<JoinSlot<T>>,
    inherited: Inherited,
    f: F,
) -> impl FnOnce() + 'a
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    let outcome = Outcome { slot, id };
    move || {
        let outcome = outcome;
        let f = move || {
            let _locals = task_local::enter(inherited);
            f()
        };
        match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => outcome.slot.set(Ok(value)),
            Err(payload) => {
                if coroutine::forced_unwind() {
                    // The coroutine's own teardown: let it reach the root.
                    panic::resume_unwind(payload);
                }
                outcome.slot.set(Err(JoinError {
                    id,
                    failure: Failure::Panicked(payload),
                }));
            }
        }
    }
}

/// Runs `f` as the main task of a new scheduler on this thread; see
/// [`crate::run`].
pub(crate) fn run<'a, F, T>(f: F) -> T
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    run_clocked(false, f)
}

/// [`run`], on a paused clock if `paused` (see [`crate::run_paused`]).
/// `f` and its value may borrow for `'a`, from the caller.
pub(crate) fn run_clocked<'a, F, T>(paused: bool, f: F) -> T
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    let slot = Rc::new(JoinSlot::new());
    let main = slot.clone();
    scheduler::run_main(
        paused,
        move |id| {
            let body: Box<dyn FnOnce() + 'a> =
                Box::new(task_body(id, main, Inherited::default(), f));
            // SAFETY: only the lifetime changes, from `'a` to `'static`,
            // between two types of the same layout. The body lives in the
            // main task's coroutine, and `run_main` returns, or unwinds
            // past its own frame, only once that coroutine is gone: it
            // holds the scheduler, and with it every task, in a local of
            // its own (the thread-local it installs is cleared before it
            // ends), and tears the tasks down before it returns; a task
            // it cannot tear down is leaked, its stack never run again.
            // So nothing `f` borrows is used after `'a`, which the caller
            // of `run` holds for the whole call.
            unsafe {
                std::mem::transmute::<Box<dyn FnOnce() + 'a>, Box<dyn FnOnce() + 'static>>(body)
            }
        },
        || slot.finished.get(),
    );
    match slot.take() {
        Some(Ok(v)) => v,
        Some(Err(e)) if e.is_panic() => panic::resume_unwind(e.into_panic()),
        Some(Err(e)) => panic!("yieldloop::run: the main task was cancelled ({e})"),
        None => unreachable!("run_main returns only once the main task has finished"),
    }
}

/// Why a task produced no value.
///
/// A custom error type, not `io::Error`, because callers must be able to
/// tell the two endings apart and to get a panic's payload back (for
/// example to re-raise it with [`std::panic::resume_unwind`]).
///
/// A task counts as cancelled when [`JoinHandle::cancel`] tore it down, or
/// when [`run`](crate::run) ended before it finished.
pub struct JoinError {
    id: TaskId,
    failure: Failure,
}

failure_accessors!(JoinError, "task");

impl JoinError {
    fn cancelled(id: TaskId) -> JoinError {
        JoinError {
            id,
            failure: Failure::Cancelled("cancelled"),
        }
    }

    /// The id of the task that failed.
    pub fn id(&self) -> TaskId {
        self.id
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Cancelled(_) => write!(f, "task {} was cancelled", self.id),
            Failure::Panicked(_) => match self.panic_message() {
                Some(m) => write!(f, "task {} panicked: {m}", self.id),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Cancelled(_) => write!(f, "JoinError::Cancelled({})", self.id),
            Failure::Panicked(_) => write!(
                f,
                "JoinError::Panicked({}, {:?})",
                self.id,
                self.panic_message()
            ),
        }
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

/// A task's attempt to join itself, which can never finish: out of line,
/// so that `join`'s path is only the wait.
#[cold]
#[inline(never)]
fn joined_itself(id: TaskId) -> ! {
    panic!("yieldloop: task {id} tried to join itself, which can never finish");
}

impl<T> JoinHandle<T> {
    /// The outcome slot, as a [`scope`](crate::scope) sees it.
    pub(crate) fn unjoined_panic<'a>(&self) -> Rc<dyn UnjoinedPanic + 'a>
    where
        T: 'a,
    {
        self.slot.clone()
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
            joined_itself(self.id);
        }
        if let Some(result) = self.slot.take() {
            // The task had ended: a join that goes ahead without a pause.
            super::coop::proceed();
            return result;
        }
        loop {
            if let Resume::Cancelled = suspend(Op::Join(self.id, None)) {
                return Err(JoinError::cancelled(self.id));
            }
            if let Some(result) = self.slot.take() {
                return result;
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
    /// `yield_now`, …) and is unwound there instead of pausing. With the
    /// feature `hook`, a task paused inside an intercepted C library call
    /// cannot be unwound through the library's frames: it is marked
    /// cancelled and woken instead, and `cancel` returns at once. On its
    /// next turn its call fails with `ECANCELED`, as do its later
    /// intercepted calls (its sleeps still sleep their time, so a loop of
    /// them does not spin), and it is unwound at its next own pause;
    /// until then [`diag::dump`](crate::diag::dump) lists it as cancelled
    /// (see the `hook` module).
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
        scheduler::with_scheduler("JoinHandle::cancel", |s| s.cancel_soon(self.id));
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
    budget: Option<u32>,
}

impl Builder {
    /// A builder with no name and the [default stack size](crate::DEFAULT_STACK_SIZE).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the task; the name appears in diagnostics: the message of a
    /// panic inside the task (`task 'conn-7' (id 12) panicked at …`, see
    /// [`run`](crate::run)), the slow-task warning, the stack-overflow
    /// report and the trace. A task without a name is called by its id.
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Sets the task's stack size in bytes. It is rounded up to whole pages
    /// and to at least [`MIN_STACK_SIZE`](crate::MIN_STACK_SIZE); a guard page comes on top.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Sets the task's cooperative budget: how many operations that could
    /// pause it (a socket read that finds data, a channel receive that
    /// finds a value, a lock that is free) it may complete in a row before
    /// the next one first lets the other tasks of its thread run. 0 is
    /// taken as 1. The default is the scheduler's:
    /// [`DEFAULT_BUDGET`](crate::diag::DEFAULT_BUDGET), or what
    /// [`RuntimeBuilder::budget`](crate::RuntimeBuilder::budget) set.
    ///
    /// A larger budget lets a busy task go further between turns (more
    /// throughput for it, longer waits for the others); a smaller one
    /// shares the thread more finely. To run one region with no budget
    /// at all, see [`raw::unconstrained`](crate::raw::unconstrained).
    ///
    /// # Examples
    ///
    /// ```
    /// yieldloop::run(|| {
    ///     let bulk = yieldloop::Builder::new()
    ///         .name("bulk-copy")
    ///         .budget(1024)
    ///         .spawn(|| (0..10_000u64).sum::<u64>())
    ///         .unwrap();
    ///     assert_eq!(bulk.join().unwrap(), 49_995_000);
    /// });
    /// ```
    pub fn budget(mut self, budget: u32) -> Builder {
        self.budget = Some(budget);
        self
    }

    /// Spawns the task on the current thread's scheduler.
    ///
    /// # Errors
    ///
    /// An `io::Error` when no stack can be had: out of memory, or out of
    /// memory mappings (on Linux the message names the `vm.max_map_count`
    /// sysctl).
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
        let slot = Rc::new(JoinSlot::new());
        let theirs = slot.clone();
        // Before the scheduler is borrowed: cloning runs the user's code.
        let inherited = task_local::inherit();
        let id = scheduler::with_scheduler("yieldloop::spawn", |s| {
            s.spawn(name, size, self.budget, move |id| {
                task_body(id, theirs, inherited, f)
            })
        })?;
        Ok(JoinHandle { id, slot })
    }

    /// Like [`spawn`](Self::spawn), for a closure (and value) that may
    /// borrow from the caller: the scoped tasks of [`scope`](crate::scope).
    ///
    /// # Safety
    ///
    /// The task must be over (ended, or cancelled and so torn down) before
    /// anything `f` or its value borrows goes away. [`scope`](crate::scope)
    /// makes sure of it by waiting for (or tearing down) every task it
    /// spawned before it returns or unwinds.
    pub(crate) unsafe fn spawn_unchecked<'a, F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'a,
        T: 'a,
    {
        let size = self.stack_size.unwrap_or(DEFAULT_STACK_SIZE);
        let name = self.name.map(Rc::from);
        let slot = Rc::new(JoinSlot::new());
        let theirs = slot.clone();
        let inherited = task_local::inherit();
        let id = scheduler::with_scheduler("yieldloop::scope", |s| {
            s.spawn(name, size, self.budget, move |id| {
                let body: Box<dyn FnOnce() + 'a> = Box::new(task_body(id, theirs, inherited, f));
                // SAFETY: only the lifetime changes, from `'a` to `'static`,
                // between two types of the same layout. The scheduler keeps
                // the body no longer than the task lives, and by this
                // function's contract the task is over before `'a` ends.
                unsafe {
                    std::mem::transmute::<Box<dyn FnOnce() + 'a>, Box<dyn FnOnce() + 'static>>(body)
                }
            })
        })?;
        Ok(JoinHandle { id, slot })
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
    if coroutine::in_task() {
        coroutine::current_task()
    } else {
        None
    }
}
