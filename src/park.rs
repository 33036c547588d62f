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
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::context;
use crate::op::{Op, Resume};
use crate::task::Waiter;

/// Names one pause of one task.
///
/// Whoever holds the token can wake the task exactly once, and only out of
/// that very pause; a token whose pause is over does nothing and reports
/// `false`, so a primitive handing something over knows to try its next
/// waiter.
///
/// Take it with [`park_token`], publish it, then [`park`] with it *without
/// pausing in between* (a pause in between would use up the task's wait, and
/// the token would then name nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParkToken {
    pub(crate) waiter: Waiter,
    /// The scheduler the task lives on.
    pub(crate) sched: u64,
}

/// Takes a token for the calling task's next [`park`].
///
/// # Panics
///
/// Panics when called outside a task.
pub fn park_token() -> ParkToken {
    let key = match crate::task::current_id() {
        Some(id) if context::in_task() => id.key,
        _ => panic!(
            "yieldloop: park_token was called outside a task; \
             call it from inside yieldloop::run(..) or a task it spawned"
        ),
    };
    context::with_scheduler("park_token", |s| ParkToken {
        waiter: Waiter {
            key,
            token: s.next_token(),
        },
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
/// use yieldloop::{park, park_token, Resume};
///
/// yieldloop::run(|| {
///     let slot = Rc::new(Cell::new(None));
///     let s = slot.clone();
///     let waker = yieldloop::spawn(move || {
///         let token: yieldloop::ParkToken = s.take().expect("main parked first");
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
    crate::suspend(Op::Park(token, deadline))
}

impl ParkToken {
    /// Wakes the task if it is still parked in the pause this token names.
    /// Returns whether it did. Call it on the task's own thread (from a task
    /// or not); from other threads use [`remote`](Self::remote).
    pub fn unpark(self) -> bool {
        context::try_with_scheduler(|s| s.id == self.sched && s.unpark(self.waiter))
            .unwrap_or(false)
    }

    /// True while the task is parked in the pause this token names.
    pub fn is_parked(self) -> bool {
        context::try_with_scheduler(|s| s.id == self.sched && s.is_waiting(self.waiter))
            .unwrap_or(false)
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
    pub fn watch_io(self, io: crate::IoId, write: bool) -> std::io::Result<()> {
        context::with_scheduler("ParkToken::watch_io", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken used on a foreign thread"
            );
            s.watch_io(self.waiter, io, write)
        })
    }

    /// Makes the end of `task` unpark this token. Returns false, and
    /// watches nothing, if the task has ended already.
    ///
    /// # Panics
    ///
    /// Panics outside the token's scheduler.
    pub fn watch_task(self, task: crate::TaskId) -> bool {
        context::with_scheduler("ParkToken::watch_task", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken used on a foreign thread"
            );
            s.watch_task(self.waiter, task)
        })
    }

    /// A handle that can unpark from any thread.
    ///
    /// # Panics
    ///
    /// Panics when called outside the scheduler the token belongs to.
    pub fn remote(self) -> RemoteUnparker {
        context::with_scheduler("ParkToken::remote", |s| {
            assert_eq!(
                s.id, self.sched,
                "yieldloop: ParkToken::remote on a foreign thread"
            );
            RemoteUnparker {
                waiter: self.waiter,
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
    waiter: Waiter,
    queue: Arc<RemoteQueue>,
}

impl fmt::Debug for RemoteUnparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteUnparker")
            .field("waiter", &self.waiter)
            .finish_non_exhaustive()
    }
}

impl RemoteUnparker {
    /// Queues the wake-up and interrupts the target scheduler's poll. Whether
    /// the task was still parked is decided over there; a stale token is
    /// ignored.
    pub fn unpark(&self) {
        self.queue.push(self.waiter);
    }
}

/// Wake-ups sent to one scheduler from other threads.
#[derive(Debug)]
pub(crate) struct RemoteQueue {
    pending: Mutex<Vec<Waiter>>,
    waker: mio::Waker,
}

impl RemoteQueue {
    pub(crate) fn new(waker: mio::Waker) -> RemoteQueue {
        RemoteQueue {
            pending: Mutex::new(Vec::new()),
            waker,
        }
    }

    fn push(&self, w: Waiter) {
        let was_empty = {
            let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            q.push(w);
            q.len() == 1
        };
        // One wake-up per batch: the scheduler drains the whole queue.
        if was_empty {
            // A failed wake (the poll is gone) leaves nothing to wake.
            let _ = self.waker.wake();
        }
    }

    /// True if wake-ups are queued and not yet taken.
    pub(crate) fn has_pending(&self) -> bool {
        !self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Takes everything queued so far, into `out`.
    pub(crate) fn drain(&self, out: &mut Vec<Waiter>) {
        let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        out.append(&mut q);
    }
}
