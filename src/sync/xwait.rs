//! The wait list of the cross-thread primitives that wake *everybody* when
//! their state changes ([`watch`](super::watch),
//! [`broadcast`](super::broadcast)): a waiter is a task of any scheduler,
//! which pauses, or a plain thread, which blocks.
//!
//! ```text
//!   waiter (task or thread)                waker (any thread)
//!   ───────────────────────                ──────────────────
//!   lock; ready? no: push entry; unlock
//!   park (task) / thread::park             lock; change state;
//!                                          take every entry; unlock
//!   woken ◀─────────────────────────────── unpark each entry
//!   lock; remove own entry; ready? ...
//! ```
//!
//! No wake-up is lost: the waiter looks at the state and leaves its entry
//! under the lock the waker changes the state under, and an unpark that
//! comes before the park is kept (by the scheduler for a task, by the
//! thread's park token for a thread). Since every waiter is woken, none is
//! handed anything it would have to pass on: a waiter that times out or is
//! unwound out of its pause (a [`timeout`](crate::timeout()) scope, a
//! cancellation) only takes its entry out.

use std::collections::VecDeque;
use std::time::Instant;

use super::waitq::{OnDrop, WaitQueue};
use crate::protocol::{ParkToken, Resume};
use crate::scheduler::port::ParkedOn;
use crate::sys::threads::thread::{self, Thread};
use crate::sys::threads::{Mutex, MutexGuard};
use crate::task::park::{InTask, Pause, RemoteUnparker};

/// Whoever waits, woken all at once.
#[derive(Default)]
pub(crate) struct WaitList {
    q: WaitQueue<Entry>,
}

impl std::fmt::Debug for WaitList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitList")
            .field("waiting", &self.q.len())
            .finish()
    }
}

/// One waiter.
enum Entry {
    /// A paused task: its token serves on its own thread, the unparker from
    /// others.
    Task(ParkToken, RemoteUnparker),
    /// A blocked plain thread.
    Thread(Thread),
}

/// The wake-ups taken out of a [`WaitList`] under its lock, to be sent
/// once the lock is released (so that the woken do not find it held).
#[must_use = "the waiters wake only when `wake` is called"]
pub(crate) struct Wakeups(VecDeque<(u64, Entry)>);

impl WaitList {
    /// Takes every waiter out, to be woken with [`Wakeups::wake`].
    pub(crate) fn take_all(&mut self) -> Wakeups {
        Wakeups(self.q.take_all())
    }

    /// How many wait now.
    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }
}

impl Wakeups {
    /// Wakes them, each once.
    pub(crate) fn wake(self) {
        for (_, e) in self.0 {
            match e {
                // On the task's own thread the scheduler is at hand.
                Entry::Task(token, remote) => {
                    if token.unpark_here().is_none() {
                        remote.unpark();
                    }
                }
                Entry::Thread(t) => t.unpark(),
            }
        }
    }
}

/// Why [`wait_until`] returned without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// The deadline passed.
    TimedOut,
    /// The caller is a task that is unwinding: it cannot pause.
    Unwinding,
}

/// Waits until `ready` (called under the lock) gives a result, or
/// `deadline` passes: pauses the calling task, or blocks the calling
/// thread outside any task. `list` finds the wait list in the state.
pub(crate) fn wait_until<S, R>(
    lock: &Mutex<S>,
    list: impl Fn(&mut S) -> &mut WaitList,
    ready: impl FnMut(&mut S) -> Option<R>,
    deadline: Option<Instant>,
) -> Result<R, NotReady> {
    if crate::task::spawn::current_id().is_some() {
        crate::task::coop::proceed();
        wait_in_task(lock, list, ready, deadline, &mut InTask(ParkedOn::Channel))
    } else {
        wait_blocking(lock, list, ready, deadline)
    }
}

fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    // Held for a few field moves, and values are dropped outside it: a
    // poisoned lock still holds a consistent state.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`wait_until`] for a task, pausing through `pause`.
pub(crate) fn wait_in_task<S, R>(
    m: &Mutex<S>,
    list: impl Fn(&mut S) -> &mut WaitList,
    mut ready: impl FnMut(&mut S) -> Option<R>,
    deadline: Option<Instant>,
    pause: &mut impl Pause,
) -> Result<R, NotReady> {
    loop {
        if let Some(r) = ready(&mut lock(m)) {
            return Ok(r);
        }
        if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
            return Err(NotReady::TimedOut);
        }
        // Made outside the lock, so the lock never waits on the scheduler.
        let (token, remote) = pause.prepare();
        let id = {
            let mut st = lock(m);
            if let Some(r) = ready(&mut st) {
                return Ok(r);
            }
            // A clone stays with the task while it is paused: while one
            // exists, its scheduler counts a wake-up from another thread as
            // possible (the waker drops its copy right after unparking).
            list(&mut st).q.push(Entry::Task(token, remote.clone()))
        };
        // However the pause ends, the entry goes: also when the task is
        // unwound out of it.
        let guard = OnDrop::new(|| {
            let gone = list(&mut lock(m)).q.remove(id);
            drop(gone);
        });
        let answer = pause.park(token, deadline);
        drop(guard);
        drop(remote);
        if let Resume::Cancelled = answer {
            return Err(NotReady::Unwinding);
        }
    }
}

/// [`wait_until`] for a plain thread, which blocks.
fn wait_blocking<S, R>(
    m: &Mutex<S>,
    list: impl Fn(&mut S) -> &mut WaitList,
    mut ready: impl FnMut(&mut S) -> Option<R>,
    deadline: Option<Instant>,
) -> Result<R, NotReady> {
    let me = thread::current();
    loop {
        let id = {
            let mut st = lock(m);
            if let Some(r) = ready(&mut st) {
                return Ok(r);
            }
            list(&mut st).q.push(Entry::Thread(me.clone()))
        };
        // A park may also end spuriously, or for an unpark meant for an
        // earlier wait: the look under the lock decides.
        let timed_out = match deadline {
            None => {
                thread::park();
                false
            }
            Some(d) => {
                let now = crate::scheduler::timers::now();
                if now < d {
                    thread::park_timeout(d - now);
                }
                crate::scheduler::timers::now() >= d
            }
        };
        let gone = list(&mut lock(m)).q.remove(id);
        drop(gone);
        if timed_out {
            return ready(&mut lock(m)).ok_or(NotReady::TimedOut);
        }
    }
}

/// The shared part of a wake-all channel (`watch`, `broadcast`): its own
/// state `S`, the counts of its handles and its wait list, behind one lock.
pub(crate) struct Channel<S> {
    state: Mutex<Counted<S>>,
}

/// A wake-all channel's state with what every such channel keeps; it
/// dereferences to the channel's own state.
pub(crate) struct Counted<S> {
    inner: S,
    /// Live senders; none left closes the channel.
    pub(crate) senders: usize,
    /// Live receivers.
    pub(crate) receivers: usize,
    pub(crate) waiters: WaitList,
}

impl<S> std::ops::Deref for Counted<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.inner
    }
}

impl<S> std::ops::DerefMut for Counted<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S> Channel<S> {
    /// A channel with one sender and one receiver.
    pub(crate) fn new(inner: S) -> Channel<S> {
        Channel {
            state: Mutex::new(Counted {
                inner,
                senders: 1,
                receivers: 1,
                waiters: WaitList::default(),
            }),
        }
    }

    /// Takes the lock.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Counted<S>> {
        lock(&self.state)
    }

    /// A sender handle was cloned.
    pub(crate) fn add_sender(&self) {
        self.lock().senders += 1;
    }

    /// A sender handle is gone; the last one wakes every waiter, to learn
    /// that the channel is closed.
    pub(crate) fn drop_sender(&self) {
        let wake = {
            let mut st = self.lock();
            st.senders -= 1;
            (st.senders == 0).then(|| st.waiters.take_all())
        };
        if let Some(w) = wake {
            w.wake();
        }
    }

    /// A receiver handle is made; returns the lock, held, for its start.
    pub(crate) fn add_receiver(&self) -> MutexGuard<'_, Counted<S>> {
        let mut st = self.lock();
        st.receivers += 1;
        st
    }

    /// A receiver handle is gone.
    pub(crate) fn drop_receiver(&self) {
        self.lock().receivers -= 1;
    }

    /// See [`wait_until`].
    pub(crate) fn wait<R>(
        &self,
        ready: impl FnMut(&mut Counted<S>) -> Option<R>,
        deadline: Option<Instant>,
    ) -> Result<R, NotReady> {
        wait_until(&self.state, |st| &mut st.waiters, ready, deadline)
    }

    /// [`wait`](Self::wait) in a task, pausing through `pause`.
    #[cfg(loom)]
    pub(crate) fn wait_with<R>(
        &self,
        ready: impl FnMut(&mut Counted<S>) -> Option<R>,
        pause: &mut impl Pause,
    ) -> Result<R, NotReady> {
        wait_in_task(&self.state, |st| &mut st.waiters, ready, None, pause)
    }
}
