//! The core of the cross-thread channels that wake *everybody* when their
//! state changes ([`watch`](super::watch), [`broadcast`](super::broadcast)):
//! the channel's own state, the counts of its handles and its waiters,
//! behind one lock. A waiter is a task of any scheduler, which pauses, or
//! a plain thread, which blocks; it waits on the one waiter list of this
//! module (see [`wait_until`](wait::wait_until)), and every change wakes
//! them all.
//!
//! ```text
//!   waiter (task or thread)                waker (any thread)
//!   ───────────────────────                ──────────────────
//!   lock; ready? no: push entry; unlock
//!   pause                                  lock; change state;
//!                                          take every entry; unlock
//!   woken ◀─────────────────────────────── wake each entry
//!   lock; remove own entry; ready? ...
//! ```
//!
//! No wake-up is lost: the waiter looks at the state and leaves its entry
//! under the lock the waker changes the state under. Since every waiter is
//! woken, none is handed anything it would have to pass on: a waiter that
//! times out or is unwound out of its pause (a
//! [`timeout`](crate::timeout()) scope, a cancellation) only takes its
//! entry out.

use std::sync::Arc;
use std::time::Instant;

use super::flavor::{CrossThread, Deferred, Flavor, Wakeups};
use super::wait::{self, NotReady};
use super::waiters::WithWaiters;
use crate::scheduler::port::ParkedOn;
use crate::sys::threads::{Mutex, MutexGuard};

/// The shared part of a wake-all channel (`watch`, `broadcast`): its own
/// state `S`, the counts of its handles and its wait list, behind one lock.
pub(crate) struct Channel<S> {
    state: Mutex<Counted<S>>,
}

/// A wake-all channel's state with what every such channel keeps, the
/// counts of its handles and its waiters; it dereferences to the channel's
/// own state.
pub(crate) type Counted<S> = WithWaiters<CrossThread, Handles<S>>;

/// A wake-all channel's own state `S` and the counts of its handles; it
/// dereferences to `S`.
pub(crate) struct Handles<S> {
    inner: S,
    /// Live senders; none left closes the channel.
    pub(crate) senders: usize,
    /// Live receivers.
    pub(crate) receivers: usize,
}

impl<S> std::ops::Deref for Handles<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.inner
    }
}

impl<S> std::ops::DerefMut for Handles<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S> Channel<S> {
    /// A channel of `state`, and the shares of its first sender and
    /// receiver.
    pub(crate) fn open(state: S) -> (SenderShare<S>, ReceiverShare<S>) {
        let chan = Arc::new(Channel {
            state: Mutex::new(Counted::new(Handles {
                inner: state,
                senders: 1,
                receivers: 1,
            })),
        });
        (SenderShare(chan.clone()), ReceiverShare(chan))
    }

    /// Takes the lock.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Counted<S>> {
        CrossThread::lock(&self.state)
    }

    /// A new receiver's share, and the lock, held, for its start.
    pub(crate) fn subscribe(self: &Arc<Self>) -> (ReceiverShare<S>, MutexGuard<'_, Counted<S>>) {
        let mut st = self.lock();
        st.receivers += 1;
        (ReceiverShare(self.clone()), st)
    }

    /// Waits until `ready` (called under the lock) gives a result, or
    /// `deadline` passes: pauses the calling task, or blocks the calling
    /// thread outside any task.
    pub(crate) fn wait<R>(
        &self,
        ready: impl FnMut(&mut Counted<S>) -> Option<R>,
        deadline: Option<Instant>,
    ) -> Result<R, NotReady> {
        crate::task::coop::proceed();
        self.wait_as(ready, deadline, wait::caller(ParkedOn::Channel))
    }

    /// [`wait`](Self::wait) in a task, pausing through `pause`.
    #[cfg(loom)]
    pub(crate) fn wait_with<R>(
        &self,
        ready: impl FnMut(&mut Counted<S>) -> Option<R>,
        pause: &mut impl crate::task::park::Pause,
    ) -> Result<R, NotReady> {
        self.wait_as(ready, None, wait::Waiter::Task(pause))
    }

    fn wait_as<R>(
        &self,
        mut ready: impl FnMut(&mut Counted<S>) -> Option<R>,
        deadline: Option<Instant>,
        waiter: wait::Waiter<'_, impl crate::task::park::Pause>,
    ) -> Result<R, NotReady> {
        wait::wait_until(
            &self.state,
            // Whoever woke it, only the state says whether it is ready.
            |st: &mut Counted<S>, _| ready(st),
            deadline,
            // Nothing to pass on: every waiter was woken.
            |_, _| Deferred::default(),
            waiter,
        )
    }
}

/// A sender handle's share of a wake-all channel: a live sender while it
/// exists. The last one gone closes the channel, waking every waiter to
/// learn that.
pub(crate) struct SenderShare<S>(Arc<Channel<S>>);

/// A receiver handle's share of a wake-all channel: a live receiver while
/// it exists.
pub(crate) struct ReceiverShare<S>(Arc<Channel<S>>);

impl<S> std::ops::Deref for SenderShare<S> {
    type Target = Arc<Channel<S>>;
    fn deref(&self) -> &Arc<Channel<S>> {
        &self.0
    }
}

impl<S> std::ops::Deref for ReceiverShare<S> {
    type Target = Arc<Channel<S>>;
    fn deref(&self) -> &Arc<Channel<S>> {
        &self.0
    }
}

impl<S> Clone for SenderShare<S> {
    fn clone(&self) -> Self {
        self.lock().senders += 1;
        SenderShare(self.0.clone())
    }
}

impl<S> Drop for SenderShare<S> {
    fn drop(&mut self) {
        let wake = {
            let mut st = self.lock();
            st.senders -= 1;
            (st.senders == 0).then(|| st.waiters.take_all())
        };
        if let Some(w) = wake {
            w.wake();
        }
    }
}

impl<S> Drop for ReceiverShare<S> {
    fn drop(&mut self) {
        self.lock().receivers -= 1;
    }
}
