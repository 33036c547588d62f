//! The thread-local "where am I" of the runtime: the scheduler running on
//! this thread, the task it is running, and that task's yielder.
//!
//! [`suspend`] is the one way a task pauses. It reaches its own coroutine's
//! [`Yielder`] through a raw pointer kept here, which is why this module holds
//! the crate's main `unsafe`. The rules that keep the pointer valid are all
//! enforced in this file:
//!
//! * a task stores its yielder pointer when its body starts ([`enter_task`]),
//!   and `suspend` puts it back each time the task is resumed (the other
//!   tasks that ran in between changed it);
//! * the scheduler clears it whenever control comes back from a coroutine
//!   ([`resume_task`], [`drop_task`]), so code running on the scheduler's own
//!   stack never sees a pointer to a yielder that is not running.
//!
//! The yielder lives on the coroutine's own stack, which stays mapped for as
//! long as the coroutine exists, and it is only dereferenced from code running
//! on that very stack.

use std::cell::{Cell, RefCell};
use std::ptr;
use std::rc::Rc;

use corosensei::{CoroutineResult, Yielder};

use crate::op::{Op, Resume};
use crate::scheduler::Scheduler;
use crate::task::{TaskCoroutine, TaskId};

thread_local! {
    /// The scheduler driving this thread, set for the whole of [`crate::run`].
    static SCHEDULER: RefCell<Option<Rc<Scheduler>>> = const { RefCell::new(None) };
    /// The running task's yielder; null while the scheduler itself runs.
    static YIELDER: Cell<*const Yielder<Resume, Op>> = const { Cell::new(ptr::null()) };
    /// The running (or unwinding) task's id.
    static CURRENT_TASK: Cell<Option<TaskId>> = const { Cell::new(None) };
    /// True while the scheduler tears a task down; tells a task's body that a
    /// caught unwind is the coroutine's forced unwind and must go on.
    static FORCED_UNWIND: Cell<bool> = const { Cell::new(false) };
    /// The running task's earliest active [`crate::timeout`] scope. Saved
    /// across each pause like the yielder, since other tasks run between.
    static SCOPE: Cell<Option<Scope>> = const { Cell::new(None) };
}

/// An active `timeout` scope: its deadline and the id its expiry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    pub(crate) deadline: std::time::Instant,
    pub(crate) id: u64,
}

/// The running task's earliest timeout scope.
pub(crate) fn scope() -> Option<Scope> {
    SCOPE.with(Cell::get)
}

/// Replaces the running task's timeout scope, returning the old one.
pub(crate) fn set_scope(scope: Option<Scope>) -> Option<Scope> {
    SCOPE.with(|s| s.replace(scope))
}

/// Pauses the running task, hands `op` to the scheduler, and returns what the
/// scheduler sends back when it resumes the task.
///
/// This is the `yield` of the generator articles, and every blocking-style
/// call in this crate is built on it. It works from any depth of the task's
/// call stack: the whole stack is kept while the task is paused.
///
/// If the task is unwinding from a panic or being cancelled, `suspend` does
/// not pause (a coroutine must never switch away mid-unwind) and returns
/// [`Resume::Cancelled`] at once.
///
/// # Panics
///
/// Panics when called outside a task, that is, not from inside
/// [`run`](crate::run) or a task it spawned.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use yieldloop::{suspend, Op, Resume};
///
/// yieldloop::run(|| {
///     let deadline = Instant::now() + Duration::from_millis(10);
///     // "Wake me at `deadline`": the scheduler parks us in its timer heap.
///     let answer = suspend(Op::Wait(deadline));
///     assert!(matches!(answer, Resume::Ready));
///     assert!(Instant::now() >= deadline);
/// });
/// ```
pub fn suspend(op: Op) -> Resume {
    if FORCED_UNWIND.with(Cell::get) {
        // A task being torn down, possibly one that never started and whose
        // captured values are dropped on the scheduler's stack: no pause.
        return Resume::Cancelled;
    }
    let yielder = YIELDER.with(Cell::get);
    assert!(
        !yielder.is_null(),
        "yieldloop: a task-only operation ({op:?}) was called outside a task; \
         call it from inside yieldloop::run(..) or a task it spawned"
    );
    if std::thread::panicking() {
        return Resume::Cancelled;
    }
    match scope() {
        None => raw_suspend(op),
        Some(scope) => crate::timeout::scoped(op, scope, raw_suspend),
    }
}

/// Switches to the scheduler with `op`; see [`suspend`], which checked that
/// a task is running.
fn raw_suspend(op: Op) -> Resume {
    let yielder = YIELDER.with(Cell::get);
    assert!(!yielder.is_null(), "yieldloop: suspend outside a task");
    /// Puts the task's yielder and timeout scope back once the task runs
    /// again, whether `suspend` returns or the forced unwind of a
    /// cancellation passes through it: other tasks ran in between and
    /// changed the thread-locals.
    struct Restore(*const Yielder<Resume, Op>, Option<Scope>);
    impl Drop for Restore {
        fn drop(&mut self) {
            YIELDER.with(|y| y.set(self.0));
            SCOPE.with(|s| s.set(self.1));
        }
    }

    YIELDER.with(|y| y.set(ptr::null()));
    let _restore = Restore(yielder, SCOPE.with(|s| s.replace(None)));
    // SAFETY: the pointer was stored by `enter_task` from the `&Yielder` the
    // running coroutine was started with. That yielder lives on this
    // coroutine's stack, which is the stack we are running on now, so it is
    // alive; the scheduler nulls the pointer whenever it regains control, so a
    // non-null value always belongs to the running coroutine.
    unsafe { (*yielder).suspend(op) }
}

/// Records the running task's yielder; called first thing in a task's body.
pub(crate) fn enter_task(yielder: &Yielder<Resume, Op>) {
    YIELDER.with(|y| y.set(yielder));
}

/// Resumes a task's coroutine with `value`, with `id` as the current task,
/// and clears the task context again once control comes back.
///
/// Only the scheduler calls this, from its own stack, where the yielder and
/// timeout scope are always clear; a task that pauses clears them itself
/// (in `raw_suspend`), so after a pause only the task id and guard info need
/// resetting, and after a task's end its yielder too. This is the hot path
/// of every hand-over, hence no save-and-restore here.
pub(crate) fn resume_task(
    co: &mut TaskCoroutine,
    id: TaskId,
    value: Resume,
    guard: *const crate::overflow::GuardInfo,
) -> CoroutineResult<Op, ()> {
    /// Clears the task context however the resume ends.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            YIELDER.with(|y| y.set(ptr::null()));
            SCOPE.with(|s| s.set(None));
            CURRENT_TASK.with(|c| c.set(None));
            crate::overflow::set_running(ptr::null());
        }
    }
    CURRENT_TASK.with(|c| c.set(Some(id)));
    crate::overflow::set_running(guard);
    let _clear = Clear;
    co.resume(value)
}

/// Drops a task's coroutine. A suspended coroutine is unwound first, so the
/// destructors of everything on its stack run; the task's body sees the
/// unwind as forced and lets it pass.
pub(crate) fn drop_task(co: TaskCoroutine, id: TaskId) {
    let _scope = TaskScope::enter(id, true);
    drop(co);
}

/// Saves the task context on entry and restores it on exit, so a task torn
/// down from inside another task (a cancellation) leaves the outer task's
/// context as it was.
struct TaskScope {
    yielder: *const Yielder<Resume, Op>,
    task: Option<TaskId>,
    forced: bool,
    scope: Option<Scope>,
}

impl TaskScope {
    fn enter(id: TaskId, forced: bool) -> TaskScope {
        TaskScope {
            yielder: YIELDER.with(|y| y.replace(ptr::null())),
            task: CURRENT_TASK.with(|c| c.replace(Some(id))),
            forced: FORCED_UNWIND.with(|f| f.replace(forced)),
            scope: SCOPE.with(|s| s.replace(None)),
        }
    }
}

impl Drop for TaskScope {
    fn drop(&mut self) {
        YIELDER.with(|y| y.set(self.yielder));
        CURRENT_TASK.with(|c| c.set(self.task));
        FORCED_UNWIND.with(|f| f.set(self.forced));
        SCOPE.with(|s| s.set(self.scope));
    }
}

/// True while the scheduler is unwinding a task it tears down.
pub(crate) fn forced_unwind() -> bool {
    FORCED_UNWIND.with(Cell::get)
}

/// The id of the task running on this thread, if any.
pub(crate) fn current_task() -> Option<TaskId> {
    CURRENT_TASK.with(Cell::get)
}

/// True when called from a task's stack.
pub(crate) fn in_task() -> bool {
    !YIELDER.with(Cell::get).is_null()
}

/// Runs `f` with this thread's scheduler, or returns `None` when there is
/// none (outside [`crate::run`]).
pub(crate) fn try_with_scheduler<R>(f: impl FnOnce(&Rc<Scheduler>) -> R) -> Option<R> {
    // Clone the Rc out so `f` may itself reach the thread-local again.
    let sched = SCHEDULER.try_with(|s| s.borrow().clone()).ok().flatten()?;
    Some(f(&sched))
}

/// True when this thread runs a scheduler.
pub(crate) fn has_scheduler() -> bool {
    SCHEDULER
        .try_with(|s| s.borrow().is_some())
        .unwrap_or(false)
}

/// Runs `f` with this thread's scheduler.
///
/// # Panics
///
/// Panics with a message naming `what` when there is no scheduler on this
/// thread.
pub(crate) fn with_scheduler<R>(what: &str, f: impl FnOnce(&Rc<Scheduler>) -> R) -> R {
    match try_with_scheduler(f) {
        Some(r) => r,
        None => panic!(
            "yieldloop: {what} was called outside a task; \
             call it from inside yieldloop::run(..) or a task it spawned"
        ),
    }
}

/// Installs `sched` as this thread's scheduler until the guard drops.
pub(crate) fn install(sched: Rc<Scheduler>) -> InstallGuard {
    SCHEDULER.with(|s| {
        let mut slot = s.borrow_mut();
        assert!(
            slot.is_none(),
            "yieldloop::run was called inside a task (or inside another run on \
             this thread); use yieldloop::spawn to start more tasks instead"
        );
        *slot = Some(sched);
    });
    InstallGuard(())
}

/// Removes the scheduler from the thread-local when dropped.
#[derive(Debug)]
pub(crate) struct InstallGuard(());

impl Drop for InstallGuard {
    fn drop(&mut self) {
        let sched = SCHEDULER.with(|s| s.borrow_mut().take());
        drop(sched);
    }
}
