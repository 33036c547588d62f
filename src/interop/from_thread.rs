//! Handing one value from another thread to whoever waits for it: the
//! plumbing under [`BlockingHandle`](crate::BlockingHandle) and
//! [`WorkerHandle`](crate::WorkerHandle).
//!
//! The producing thread holds a [`Completer`], the waiting side a shared
//! [`Handoff`]. A waiter inside a task parks with a [`RemoteUnparker`] left in
//! the slot, so only the task pauses; a waiter outside any task sleeps on a
//! condition variable, so its whole thread blocks; an `async` caller polls
//! the handle as a `Future`, leaving its [`Waker`] in the slot.
//!
//! ```text
//!   producer thread                 waiting task (its scheduler's thread)
//!   ───────────────                 ─────────────────────────────────────
//!                                   lock; no result: leave a RemoteUnparker
//!                                   unlock; park
//!   lock; store result;
//!   take the unparker; unlock
//!   unparker.unpark() ────────────▶ woken on the scheduler's next turn;
//!                                   lock; take the result
//! ```
//!
//! No wake-up is lost: the unparker is left under the lock that the producer
//! takes to store the result, and the scheduler only acts on the unpark
//! after the task has paused (it is busy running the task until then). A
//! [`Waker`] is left under the same lock, after a look at the result, so the
//! producer either finds it there or stored the result before the look.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::protocol::join_failure::{failure_accessors, Failure};
use crate::protocol::Resume;
use crate::scheduler::port::ParkedOn;
use crate::task::park::{InTask, Pause, RemoteUnparker};
// The slot's `Arc` is std's: the handles that hold it are the runtime's,
// and counting references is no part of the protocol the models check.
use crate::sys::threads::{Condvar, Mutex, MutexGuard};

/// Why work handed to another thread produced no value: it panicked, or it
/// never finished.
///
/// A custom error type rather than `io::Error` for the same reason as
/// [`JoinError`](crate::JoinError): callers must be able to tell a panic
/// from a cancellation and to get the panic's payload back (to re-raise it
/// with [`std::panic::resume_unwind`], say).
///
/// Work counts as cancelled when it never finished: it was dropped before
/// it ran (no thread could be started for it, or its runtime shut down), it
/// was cancelled at a pause by a runtime shutting down, or the task waiting
/// for it is itself being torn down.
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let err = yieldloop::spawn_blocking(|| -> u8 { panic!("disk on fire") })
///         .join()
///         .unwrap_err();
///     assert!(err.is_panic());
///     assert_eq!(err.panic_message(), Some("disk on fire"));
/// });
/// ```
pub struct RemoteJoinError {
    failure: Failure,
}

failure_accessors!(RemoteJoinError, "work");

impl RemoteJoinError {
    pub(crate) fn panicked(payload: Box<dyn Any + Send + 'static>) -> RemoteJoinError {
        RemoteJoinError {
            failure: Failure::Panicked(payload),
        }
    }

    pub(crate) fn cancelled(why: &'static str) -> RemoteJoinError {
        RemoteJoinError {
            failure: Failure::Cancelled(why),
        }
    }
}

impl fmt::Display for RemoteJoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Cancelled(why) => write!(f, "cancelled: {why}"),
            Failure::Panicked(_) => match self.panic_message() {
                Some(m) => write!(f, "panicked: {m}"),
                None => f.write_str("panicked"),
            },
        }
    }
}

impl fmt::Debug for RemoteJoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Cancelled(why) => write!(f, "RemoteJoinError::Cancelled({why:?})"),
            Failure::Panicked(_) => {
                write!(f, "RemoteJoinError::Panicked({:?})", self.panic_message())
            }
        }
    }
}

/// `Future` for a public handle over a [`Handoff`] kept in its field
/// `slot`, with the impl's docs given: awaiting it is
/// [`Handoff::poll`]. (The handles' `join` and `is_finished` are one call
/// each, written beside their own docs.)
macro_rules! await_handoff {
    ($(#[$doc:meta])* $handle:ident) => {
        $(#[$doc])*
        impl<T> std::future::Future for $handle<T> {
            type Output = Result<T, RemoteJoinError>;

            fn poll(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Self::Output> {
                self.slot.poll(cx)
            }
        }
    };
}
pub(crate) use await_handoff;

/// The slot one value crosses threads through.
pub(crate) struct Handoff<T> {
    state: Mutex<State<T>>,
    /// Signalled when the result arrives, for waiters outside any task.
    arrived: Condvar,
}

struct State<T> {
    /// The outcome, until the waiter takes it.
    result: Option<Result<T, RemoteJoinError>>,
    /// Stays true once the outcome has arrived, also after it was taken.
    done: bool,
    /// A task parked waiting for the outcome.
    waiter: Option<RemoteUnparker>,
    /// The waker of the last poll of the handle as a `Future`; several
    /// waiters of different kinds may wait at once (a handle polled, then
    /// joined), and the outcome wakes them all.
    waker: Option<Waker>,
    /// Threads blocked on `arrived`: the outcome signals the condition
    /// variable only for them (a signal is a system call).
    sleepers: usize,
}

impl<T> fmt::Debug for Handoff<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("done", &self.is_done())
            .finish_non_exhaustive()
    }
}

impl<T> Handoff<T> {
    /// A new empty slot: the waiting side, and the completer for the thread
    /// that will produce the value.
    pub(crate) fn new() -> (Arc<Handoff<T>>, Completer<T>) {
        let slot = Arc::new(Handoff {
            state: Mutex::new(State {
                result: None,
                done: false,
                waiter: None,
                waker: None,
                sleepers: 0,
            }),
            arrived: Condvar::new(),
        });
        (
            slot.clone(),
            Completer {
                slot: Some(slot),
                why_dropped: "the work was dropped before it finished",
            },
        )
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The lock is only held for a few field moves; no panic can leave
        // the state half-written, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True once the outcome has arrived. Never pauses.
    pub(crate) fn is_done(&self) -> bool {
        self.lock().done
    }

    /// Waits for the outcome: parks the calling task, or blocks the thread
    /// when called outside any task.
    pub(crate) fn wait(&self) -> Result<T, RemoteJoinError> {
        if crate::task::spawn::current_id().is_some() {
            self.wait_in_task(&mut InTask(ParkedOn::OtherThread))
        } else {
            self.wait_blocking()
        }
    }

    /// Waits for the outcome in a task, pausing through `pause`.
    pub(crate) fn wait_in_task(&self, pause: &mut impl Pause) -> Result<T, RemoteJoinError> {
        loop {
            if let Some(r) = self.lock().result.take() {
                return r;
            }
            // Token and unparker are made before taking the lock, so the
            // lock never waits on the scheduler.
            let (token, remote) = pause.prepare();
            {
                let mut st = self.lock();
                if let Some(r) = st.result.take() {
                    return r;
                }
                // A clone stays here on the task's stack while it is parked:
                // as long as one exists, the scheduler counts a wake-up from
                // another thread as still possible. The producer drops its
                // copy right after unparking, possibly before the scheduler
                // has drained that wake-up.
                st.waiter = Some(remote.clone());
            }
            // Nothing may pause between leaving the unparker and parking.
            let answer = {
                let _forget = ForgetWaiter(self);
                pause.park(token, None)
            };
            drop(remote);
            if let Resume::Cancelled = answer {
                // Called while the task unwinds: it cannot wait any more.
                return Err(RemoteJoinError::cancelled(
                    "the joining task is being torn down",
                ));
            }
        }
    }

    /// The `Future` side: takes the outcome if it is in, else leaves the
    /// context's waker for the producer to wake.
    ///
    /// # Panics
    ///
    /// If polled again after it returned the outcome.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, RemoteJoinError>> {
        let mut st = self.lock();
        if let Some(r) = st.result.take() {
            return Poll::Ready(r);
        }
        assert!(
            !st.done,
            "yieldloop: a handle was polled after it returned its result"
        );
        // The same task polling again keeps its waker: no clone.
        match &mut st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Waits for the outcome by blocking the calling thread, until
    /// `deadline` at the latest (then `None`), or for as long as it takes
    /// without one.
    pub(crate) fn wait_blocking_until(
        &self,
        deadline: Option<std::time::Instant>,
    ) -> Option<Result<T, RemoteJoinError>> {
        let mut st = self.lock();
        // Counted under the lock the wait releases, so the producer, which
        // looks under it, either sees this thread or stored the result
        // before the look below.
        st.sleepers += 1;
        let out = loop {
            if let Some(r) = st.result.take() {
                break Some(r);
            }
            st = match deadline {
                None => self.arrived.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let Some(left) = deadline.checked_duration_since(std::time::Instant::now())
                    else {
                        break None;
                    };
                    self.arrived
                        .wait_timeout(st, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        };
        st.sleepers -= 1;
        out
    }

    /// Waits for the outcome by blocking the calling thread.
    pub(crate) fn wait_blocking(&self) -> Result<T, RemoteJoinError> {
        self.wait_blocking_until(None)
            .expect("a wait without a deadline ends only with the outcome")
    }
}

/// Takes a parked waiter's unparker back out of the slot when its pause
/// ends, however it ends: also when the task unwinds out of the pause (its
/// [`timeout`](crate::timeout()) expired, or it was cancelled). Left there,
/// the unparker would make the task's scheduler count on a wake-up from
/// the producer until the work finishes, which may be long after: a main
/// task deadlocked meanwhile would not be reported until then.
struct ForgetWaiter<'a, T>(&'a Handoff<T>);

impl<T> Drop for ForgetWaiter<'_, T> {
    fn drop(&mut self) {
        let stale = self.0.lock().waiter.take();
        // Dropped outside the lock.
        drop(stale);
    }
}

/// The producing side of a [`Handoff`]. Dropping it without
/// [`complete`](Self::complete) delivers a cancellation, so a waiter never
/// waits for work that was lost.
pub(crate) struct Completer<T> {
    /// `None` once completed.
    slot: Option<Arc<Handoff<T>>>,
    /// The cancellation reason delivered if this is dropped uncompleted.
    why_dropped: &'static str,
}

impl<T> fmt::Debug for Completer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer")
            .field("completed", &self.slot.is_none())
            .finish_non_exhaustive()
    }
}

impl<T> Completer<T> {
    /// Sets the reason a drop without a result will report.
    pub(crate) fn set_drop_reason(&mut self, why: &'static str) {
        self.why_dropped = why;
    }

    /// Delivers the outcome and wakes the waiter, if any.
    pub(crate) fn complete(mut self, r: Result<T, RemoteJoinError>) {
        self.deliver(r);
    }

    fn deliver(&mut self, r: Result<T, RemoteJoinError>) {
        let Some(slot) = self.slot.take() else { return };
        let (waiter, waker, sleepers) = {
            let mut st = slot.lock();
            st.result = Some(r);
            st.done = true;
            (st.waiter.take(), st.waker.take(), st.sleepers)
        };
        if sleepers > 0 {
            slot.arrived.notify_all();
        }
        if let Some(w) = waiter {
            w.unpark();
        }
        // Woken outside the lock: the woken side may poll at once.
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        let why = self.why_dropped;
        self.deliver(Err(RemoteJoinError::cancelled(why)));
    }
}
