//! The scheduler driving this thread, reachable from anywhere on it: set
//! for the whole of [`run`](crate::run) by [`install`], read by
//! [`with_scheduler`] and [`try_with_scheduler`].

use std::cell::Cell;
use std::ptr;
use std::rc::Rc;

use super::Scheduler;

thread_local! {
    /// The scheduler driving this thread, set for the whole of [`crate::run`]
    /// (the [`InstallGuard`] owns it meanwhile); null otherwise.
    static SCHEDULER: Cell<*const Scheduler> = const { Cell::new(ptr::null()) };
}

/// Runs `f` with this thread's scheduler, or returns `None` when there is
/// none (outside [`crate::run`]).
#[inline]
pub(crate) fn try_with_scheduler<R>(f: impl FnOnce(&Scheduler) -> R) -> Option<R> {
    let sched = SCHEDULER.try_with(Cell::get).ok()?;
    // SAFETY: the pointer is non-null only while the `InstallGuard` made by
    // `install` lives and holds an `Rc` of the scheduler (it nulls the
    // pointer before letting go). The guard lives for the whole of a run,
    // and `f` runs inside that run, on this thread, so the scheduler
    // outlives the borrow.
    unsafe { sched.as_ref() }.map(f)
}

/// True when this thread runs a scheduler.
pub(crate) fn has_scheduler() -> bool {
    SCHEDULER.try_with(|s| !s.get().is_null()).unwrap_or(false)
}

/// Runs `f` with this thread's scheduler.
///
/// # Panics
///
/// Panics with a message naming `what` when there is no scheduler on this
/// thread.
#[inline]
pub(crate) fn with_scheduler<R>(what: &str, f: impl FnOnce(&Scheduler) -> R) -> R {
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
        assert!(
            s.get().is_null(),
            "yieldloop::run was called inside a task (or inside another run on \
             this thread); use yieldloop::spawn to start more tasks instead"
        );
        s.set(Rc::as_ptr(&sched));
    });
    InstallGuard { _sched: sched }
}

/// Keeps the installed scheduler alive, and removes it from the
/// thread-local when dropped.
#[derive(Debug)]
pub(crate) struct InstallGuard {
    _sched: Rc<Scheduler>,
}

impl Drop for InstallGuard {
    fn drop(&mut self) {
        // Null first: nothing reached from the scheduler's own destructor
        // may see it half torn down.
        SCHEDULER.with(|s| s.set(ptr::null()));
    }
}
