//! Scoped tasks: [`scope`] and the tasks it spawns, which may borrow from
//! the stack of the task that opened the scope.
//!
//! `std::thread::scope` can lend a thread's locals to other threads because
//! it does not return until they have all ended. A stackful task can do the
//! same for tasks: while it waits at the end of the scope, its stack stays
//! where it is, so whatever the children borrow stays alive. What a thread
//! scope never has to face is the waiting task itself being torn down
//! (cancelled, timed out, or left over when `run` ends): its stack then
//! unwinds *now*, and children still running would outlive what they
//! borrow. So the unwind tears them down first. That needs no waiting: on
//! one thread, while the scope's task runs (or unwinds), none of its
//! children is running, and cancelling a paused task unwinds its stack on
//! the spot.
//!
//! ```text
//!   scope(|s| { ... s.spawn(child) ... })        the scope's task
//!     ├─ f returns  ─▶ wait for every child ─▶ re-raise a child's panic
//!     │                   (a pause: the stack stays put)   that nobody joined
//!     └─ f unwinds, or the wait is cut short (cancel, timeout, shutdown)
//!           ─▶ tear every child down now ─▶ go on unwinding
//! ```

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use super::spawn::{Builder, JoinError, JoinHandle, UnjoinedPanic};
use super::suspend::suspend;
use crate::protocol::{Op, TaskId};
use crate::scheduler;
use crate::scheduler::coroutine;

/// Runs `f` with a [`Scope`] whose tasks may borrow anything that outlives
/// the call, and returns once every task spawned in the scope has ended.
///
/// Modelled on [`std::thread::scope`], for tasks:
///
/// - `f` and the scoped tasks may spawn more scoped tasks through the
///   `&Scope`; `scope` waits for all of them (pausing the calling task, so
///   the thread's other tasks run meanwhile).
/// - If a scoped task panics, the others are cancelled at once (their
///   stacks unwound, so their destructors run), and once all have ended the
///   panic comes out of `scope`, unless the task's handle took it with
///   [`ScopedJoinHandle::join`]: then the caller has handled it. The first
///   such panic wins, as in Go's `errgroup` or asyncio's `TaskGroup`.
/// - If `f` panics, the scoped tasks are cancelled and the panic goes on.
/// - [`Scope::cancel_all`] cancels the scoped tasks on demand.
/// - If the calling task is itself cancelled, or a
///   [`timeout`](crate::timeout()) around the scope expires, while the
///   scope is open, every scoped task is torn down before the calling
///   task's stack unwinds past the scope: no task outlives a borrow.
///
/// # Panics
///
/// When called outside a task; as described above, with the panic of a
/// scoped task or of `f`. If a scoped task tears down the very task that
/// waits on its scope (which would leave the scoped task running on
/// borrowed memory), the process is aborted with a message.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// yieldloop::run(|| {
///     let words = vec!["alpha", "beta", "gamma"];
///     let mut total = 0;
///     let lengths = yieldloop::scope(|s| {
///         let handles: Vec<_> = words
///             .iter()
///             .map(|w| {
///                 s.spawn(move || {
///                     yieldloop::sleep(Duration::from_millis(5));
///                     w.len() // borrows `words`
///                 })
///             })
///             .collect();
///         s.spawn(|| total += 1); // borrows `total` mutably
///         handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
///     });
///     assert_eq!(lengths, [5, 4, 5]);
///     assert_eq!(total, 1);
/// });
/// ```
///
/// A scoped task cannot borrow what does not outlive the scope:
///
/// ```compile_fail
/// yieldloop::run(|| {
///     yieldloop::scope(|s| {
///         let local = String::from("made inside the scope");
///         s.spawn(|| local.len());
///     });
/// });
/// ```
///
/// nor can its handle leave the scope:
///
/// ```compile_fail
/// yieldloop::run(|| {
///     let n = 1;
///     let escaped = yieldloop::scope(|s| s.spawn(|| n + 1));
///     escaped.join().unwrap();
/// });
/// ```
///
/// and the usual borrow rules hold across tasks:
///
/// ```compile_fail
/// yieldloop::run(|| {
///     let mut v = vec![1];
///     yieldloop::scope(|s| {
///         s.spawn(|| v.push(2));
///         s.spawn(|| v.len());
///     });
/// });
/// ```
pub fn scope<'env, F, R>(f: F) -> R
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    assert!(
        coroutine::in_task(),
        "yieldloop: scope was called outside a task; \
         call it from inside yieldloop::run(..) or a task it spawned"
    );
    let scope = Scope {
        children: ManuallyDrop::new(RefCell::new(Vec::new())),
        failed: Cell::new(false),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let guard = TearDownOnUnwind(&scope);
    let result = f(&scope);
    scope.wait_all();
    std::mem::forget(guard);
    let children = scope.take_children();
    let unjoined = children.iter().find_map(|c| c.panic.take_panic());
    // Values nobody joined are dropped here, inside the scope.
    drop(children);
    if let Some(payload) = unjoined {
        panic::resume_unwind(payload);
    }
    result
}

/// Tears down every child of the scope when the scope's task unwinds past
/// it (a panic in `f`, a cancellation, a timeout, the end of `run`).
struct TearDownOnUnwind<'a, 'scope, 'env>(&'a Scope<'scope, 'env>);

impl Drop for TearDownOnUnwind<'_, '_, '_> {
    fn drop(&mut self) {
        self.0.cancel_children(None);
        if self.0.any_alive() {
            // Only a scoped task that is running now can still be alive: it
            // tore down the task that owns this scope, and would go on
            // running on memory that is about to go away.
            eprintln!(
                "yieldloop: a scoped task tore down the task waiting on its scope; \
                 aborting, since the scoped task would outlive what it borrows"
            );
            std::process::abort();
        }
        drop(self.0.take_children());
    }
}

/// A scope to spawn tasks that borrow; see [`scope`].
///
/// `'scope` is the scope's own life: tasks spawned in it end within it.
/// `'env` is what they may borrow: anything that outlives the scope.
pub struct Scope<'scope, 'env: 'scope> {
    /// Every task spawned in the scope, in spawn order.
    ///
    /// `ManuallyDrop` because what the outcomes hold may borrow for
    /// `'scope`: they are dropped explicitly before the scope ends
    /// ([`Scope::take_children`]), which also keeps the compiler from
    /// assuming the scope's own drop touches them.
    children: ManuallyDrop<RefCell<Vec<Child<'scope>>>>,
    /// Set by the first scoped task that panics; its siblings are then
    /// cancelled.
    failed: Cell<bool>,
    /// Invariant in `'scope`, as in `std::thread::Scope`.
    _scope: PhantomData<&'scope mut &'scope ()>,
    /// Invariant in `'env`.
    _env: PhantomData<&'env mut &'env ()>,
}

/// What the scope keeps of one of its tasks.
struct Child<'scope> {
    id: TaskId,
    /// Its outcome, for a panic nobody joined.
    panic: Rc<dyn UnjoinedPanic + 'scope>,
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("tasks", &self.children.borrow().len())
            .field("failed", &self.failed.get())
            .finish()
    }
}

impl<'scope> Scope<'scope, '_> {
    /// Spawns a task running `f`, which may borrow anything that outlives
    /// the scope. The task starts on a later turn of the loop, like
    /// [`spawn`](crate::spawn()).
    ///
    /// # Panics
    ///
    /// When no stack can be had (see [`Scope::spawn_with`] to get that as
    /// an error).
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + 'scope,
        T: 'scope,
    {
        match self.spawn_with(Builder::new(), f) {
            Ok(h) => h,
            Err(e) => panic!("yieldloop::Scope::spawn: cannot start a task: {e}"),
        }
    }

    /// Like [`spawn`](Self::spawn), configured by `builder` (name, stack
    /// size).
    ///
    /// # Errors
    ///
    /// An `io::Error` when no stack can be had.
    pub fn spawn_with<F, T>(
        &'scope self,
        builder: Builder,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + 'scope,
        T: 'scope,
    {
        // The user's closure, made to cancel its siblings when it panics.
        let f = move || match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => v,
            Err(payload) => {
                if !coroutine::forced_unwind() {
                    // A panic of this task: the first one cancels the
                    // others, at once. (This task runs, so it is spared.)
                    if !self.failed.replace(true) {
                        self.cancel_children(coroutine::current_task());
                    }
                }
                panic::resume_unwind(payload)
            }
        };
        // SAFETY: the task borrows for at most `'scope`, and the scope does
        // not end before every task in `children` is over: `scope` waits
        // for them before it returns, and `TearDownOnUnwind` tears them
        // down (and checks none is left) before an unwind leaves it.
        let inner = unsafe { builder.spawn_unchecked(f)? };
        self.children.borrow_mut().push(Child {
            id: inner.id(),
            panic: inner.unjoined_panic(),
        });
        Ok(ScopedJoinHandle {
            inner,
            _scope: PhantomData,
        })
    }

    /// Cancels every task of the scope that is still running, except the
    /// caller if it is one of them: each is unwound from where it is
    /// paused, so its destructors run, and its handle reports a
    /// cancellation. Tasks spawned in the scope afterwards run normally.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// yieldloop::run(|| {
    ///     let first = yieldloop::scope(|s| {
    ///         let slow = s.spawn(|| yieldloop::sleep(Duration::from_secs(60)));
    ///         let quick = s.spawn(|| 7);
    ///         let v = quick.join().unwrap();
    ///         s.cancel_all(); // no need to wait for the slow one
    ///         assert!(slow.join().unwrap_err().is_cancelled());
    ///         v
    ///     });
    ///     assert_eq!(first, 7);
    /// });
    /// ```
    pub fn cancel_all(&self) {
        self.cancel_children(coroutine::current_task());
    }

    /// Cancels every child but `spare`. A paused child is torn down on the
    /// spot; the running one (only ever the caller) at its next pause.
    fn cancel_children(&self, spare: Option<TaskId>) {
        // Ids are copied out: a child's teardown may spawn or cancel more.
        let ids: Vec<TaskId> = self.children.borrow().iter().map(|c| c.id).collect();
        for id in ids.into_iter().filter(|id| Some(*id) != spare) {
            let _ = scheduler::try_with_scheduler(|s| s.cancel(id));
        }
    }

    /// Takes the record of the children, once they are all over, so that
    /// what their outcomes hold is dropped before the scope ends.
    fn take_children(&self) -> Vec<Child<'scope>> {
        std::mem::take(&mut *self.children.borrow_mut())
    }

    /// True while any child is still in its scheduler's table.
    fn any_alive(&self) -> bool {
        let ids: Vec<TaskId> = self.children.borrow().iter().map(|c| c.id).collect();
        scheduler::try_with_scheduler(|s| ids.iter().any(|id| s.is_alive(*id))).unwrap_or(false)
    }

    /// Pauses until every child, including those spawned meanwhile, has
    /// ended.
    fn wait_all(&self) {
        let mut next = 0;
        loop {
            let Some(id) = self.children.borrow().get(next).map(|c| c.id) else {
                return;
            };
            while scheduler::with_scheduler("yieldloop::scope", |s| s.is_alive(id)) {
                // Not unwinding here (an unwind leaves through the guard),
                // so the answer is Ready once the child has ended.
                let _ = suspend(Op::Join(id, None));
            }
            next += 1;
        }
    }
}

/// An owned permission to wait for the value of a scoped task; see
/// [`Scope::spawn`]. It cannot leave its scope.
pub struct ScopedJoinHandle<'scope, T> {
    inner: JoinHandle<T>,
    _scope: PhantomData<&'scope ()>,
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("id", &self.inner.id())
            .field("finished", &self.inner.is_finished())
            .finish()
    }
}

impl<T> ScopedJoinHandle<'_, T> {
    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.inner.id()
    }

    /// True once the task has ended. Never pauses.
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// Pauses until the task ends and returns its value; see
    /// [`JoinHandle::join`]. A panic taken here is the caller's: the scope
    /// does not raise it again.
    ///
    /// # Errors
    ///
    /// A [`JoinError`] when the task panicked or was cancelled.
    pub fn join(self) -> Result<T, JoinError> {
        self.inner.join()
    }

    /// Cancels the task; see [`JoinHandle::cancel`].
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}
