//! Parking: the one building block every waiting primitive (channels,
//! mutexes, blocking offload) is made of.
//!
//! A task takes a [`ParkToken`] naming *this* pause of *this* task, puts it
//! where a waker will find it (a channel's waiter queue, say), and parks with
//! [`Op::Park`]. Whoever holds the token can wake the task exactly once, and
//! only out of that very pause: a token whose pause is over (the task timed
//! out, was cancelled, or already woke) does nothing and reports `false`, so
//! a primitive handing something over knows to try its next waiter. Nothing
//! is woken by mistake and no wake-up is lost.
//!
//! A [`RemoteUnparker`] does the same from another thread: it queues the
//! token and wakes the target scheduler's poll through a `mio::Waker`.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::suspend::suspend;
use crate::protocol::{IoId, Op, ParkToken, Resume, TaskId, WaitToken};
use crate::reactor::RemoteQueue;
use crate::scheduler::coroutine;
use crate::scheduler::port::ParkedOn;
use crate::scheduler::{try_with_scheduler, with_scheduler};

/// Takes a token for the calling task's next [`park`].
///
/// # Panics
///
/// Panics when called outside a task.
pub fn park_token() -> ParkToken {
    let key = match coroutine::current_task() {
        Some(id) if coroutine::in_task() => id.key,
        _ => panic!(
            "yieldloop: park_token was called outside a task; \
             call it from inside yieldloop::run(..) or a task it spawned"
        ),
    };
    with_scheduler("park_token", |s| ParkToken {
        wait: s.wait_token(key),
        sched: s.id,
    })
}

/// Parks the calling task until `token` is unparked ([`Resume::Ready`]) or
/// `deadline` passes ([`Resume::TimedOut`]). A token of another task or
/// scheduler is answered with [`Resume::Err`].
///
/// # Panics
///
/// Panics when called outside a task.
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// use yieldloop::raw::{park, park_token, ParkToken, Resume};
///
/// yieldloop::run(|| {
///     let slot = Rc::new(Cell::new(None));
///     let s = slot.clone();
///     let waker = yieldloop::spawn(move || {
///         let token: ParkToken = s.take().expect("main parked first");
///         assert!(token.unpark());
///         assert!(!token.unpark(), "a token wakes its pause once");
///     });
///     let token = park_token();
///     slot.set(Some(token));
///     assert!(matches!(park(token, None), Resume::Ready));
///     waker.join().unwrap();
/// });
/// ```
pub fn park(token: ParkToken, deadline: Option<Instant>) -> Resume {
    park_on(token, deadline, ParkedOn::Park)
}

/// [`park`], saying what the task parks on, for
/// [`diag::dump`](crate::diag::dump).
#[inline]
pub(crate) fn park_on(token: ParkToken, deadline: Option<Instant>, on: ParkedOn) -> Resume {
    crate::scheduler::port::set_parked_on(on);
    suspend(Op::Park(token, deadline))
}

impl ParkToken {
    /// Wakes the task if it is still parked in the pause this token names.
    /// Returns whether it did. Call it on the task's own thread (from a task
    /// or not); from other threads use [`remote`](Self::remote).
    pub fn unpark(self) -> bool {
        try_with_scheduler(|s| s.id == self.sched && s.unpark(self.wait)).unwrap_or(false)
    }

    /// [`unpark`](Self::unpark) when called on the token's own scheduler
    /// thread: `Some(whether it woke the task)`; `None` elsewhere (another
    /// thread, or no scheduler running here any more), where only a
    /// [`RemoteUnparker`] can reach the task.
    pub(crate) fn unpark_here(self) -> Option<bool> {
        try_with_scheduler(|s| (s.id == self.sched).then(|| s.unpark(self.wait))).flatten()
    }

    /// True while the task is parked in the pause this token names.
    pub fn is_parked(self) -> bool {
        try_with_scheduler(|s| s.id == self.sched && s.is_waiting(self.wait)).unwrap_or(false)
    }

    /// Makes readiness of the socket `io` unpark this token: readable when
    /// `write` is false, writable when true. With several `watch_*` calls on
    /// one token, the task waits for whichever comes first (a select).
    ///
    /// # Errors
    ///
    /// If `io` names no live socket of this scheduler.
    ///
    /// # Panics
    ///
    /// Panics outside the token's scheduler.
    pub fn watch_io(self, io: IoId, write: bool) -> std::io::Result<()> {
        with_scheduler("ParkToken::watch_io", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken used on a foreign thread"
            );
            s.watch_io(self.wait, io, write)
        })
    }

    /// Makes the end of `task` unpark this token. Returns false, and
    /// watches nothing, if the task has ended already.
    ///
    /// # Panics
    ///
    /// Panics outside the token's scheduler.
    pub fn watch_task(self, task: TaskId) -> bool {
        with_scheduler("ParkToken::watch_task", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken used on a foreign thread"
            );
            s.watch_task(self.wait, task)
        })
    }

    /// A handle that can unpark from any thread.
    ///
    /// # Panics
    ///
    /// Panics when called outside the scheduler the token belongs to.
    pub fn remote(self) -> RemoteUnparker {
        with_scheduler("ParkToken::remote", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken::remote on a foreign thread"
            );
            RemoteUnparker {
                wait: self.wait,
                queue: s.remote_queue(),
            }
        })
    }
}

/// Unparks a task from any thread; see [`ParkToken::remote`].
///
/// While one exists, the task's scheduler counts it as a possible source of
/// wake-ups, so a main task waiting on it is not reported as deadlocked.
#[derive(Clone)]
pub struct RemoteUnparker {
    /// The pause to end.
    wait: WaitToken,
    queue: Arc<RemoteQueue>,
}

impl fmt::Debug for RemoteUnparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteUnparker")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl RemoteUnparker {
    /// Has a paused clock disregard `n` handles to this scheduler's
    /// cross-thread queue (this one and its clones, say) until the guard
    /// drops: handles that can only bring new work, not end a wait on
    /// time (a runtime worker's job inbox).
    pub(crate) fn exempt_from_clock(&self, n: usize) -> ClockExempt {
        // The guard's own clone counts too.
        self.queue.set_exempt(n + 1, true);
        ClockExempt {
            queue: self.queue.clone(),
            n: n + 1,
        }
    }

    /// An unparker of the pause `wait` through `queue`, for a model check's
    /// stand-in scheduler.
    #[cfg(loom)]
    pub(crate) fn model(wait: WaitToken, queue: Arc<RemoteQueue>) -> RemoteUnparker {
        RemoteUnparker { wait, queue }
    }

    /// Queues the wake-up and interrupts the target scheduler's poll. Whether
    /// the task was still parked is decided over there; a stale token is
    /// ignored.
    pub fn unpark(&self) {
        self.queue.push(self.wait);
    }
}

/// Ends an exemption made by [`RemoteUnparker::exempt_from_clock`].
#[derive(Debug)]
pub(crate) struct ClockExempt {
    queue: Arc<RemoteQueue>,
    n: usize,
}

impl Drop for ClockExempt {
    fn drop(&mut self) {
        self.queue.set_exempt(self.n, false);
    }
}

/// How a waiter inside a task pauses for a wake-up from another thread.
///
/// The cross-thread protocols (the hand-off slot, `block_on`'s waker) take
/// it as a parameter rather than calling [`park`] themselves, so that the
/// model checks can put a plain thread in the task's place and run the
/// protocol's very code.
pub(crate) trait Pause {
    /// A fresh pause: its token, and the handle that ends it from any
    /// thread.
    fn prepare(&mut self) -> (ParkToken, RemoteUnparker);

    /// Pauses until `token` is unparked or `deadline` passes.
    /// [`Resume::Cancelled`] says the caller cannot pause (it is
    /// unwinding).
    fn park(&mut self, token: ParkToken, deadline: Option<Instant>) -> Resume;
}

/// The calling task's pauses: [`park_token`] and [`park`], on what the
/// field says (for a dump).
pub(crate) struct InTask(pub(crate) ParkedOn);

impl Pause for InTask {
    fn prepare(&mut self) -> (ParkToken, RemoteUnparker) {
        let token = park_token();
        (token, token.remote())
    }

    fn park(&mut self, token: ParkToken, deadline: Option<Instant>) -> Resume {
        park_on(token, deadline, self.0)
    }
}
