//! How a channel's receiver and its senders wait: a task parks; across
//! threads a plain thread blocks, unparked through its own handle. Which
//! one the caller is, its [`Flavor`] says.

use std::time::Instant;

use super::{Chan, Guard};
use crate::protocol::Resume;
use crate::scheduler::port::ParkedOn;
use crate::sync::error::{RecvTimeoutError, SendError, TryRecvError, TrySendError};
use crate::sync::flavor::Flavor;
use crate::sync::wait::OnDrop;
use crate::sync::waiters::Woken;
use crate::sys::threads::thread;
use crate::task::park::{park_on, park_token};

impl<T, F: Flavor> Chan<T, F> {
    /// The bounded send: the fast path, else wait with the value until a
    /// receiver takes it.
    ///
    /// # Errors
    ///
    /// [`SendError`] with `value` if the receiver is gone, or if the caller
    /// cannot wait (a task that is unwinding).
    pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
        // Before the lock, which a pause must never hold.
        crate::task::coop::proceed();
        // One lock from the check to the queueing: across threads, a
        // receiver freeing a slot in between would leave this sender
        // parked by a buffer with room.
        let mut st = self.lock();
        let value = match st.try_send(value) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(v)) => return Err(SendError(v)),
            Err(TrySendError::Full(v)) => v,
        };
        match F::thread_waiter() {
            Some(me) => self.block_sender(st, me, value),
            None => self.park_sender(st, value),
        }
    }

    /// The receive every blocking receive is: take a message, or wait for
    /// one until `deadline`.
    pub(crate) fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        // Before the lock, which a pause must never hold.
        crate::task::coop::proceed();
        // The lock is held from each look to the queueing of the waiter, so
        // a message sent from another thread in between cannot go unseen.
        let mut st = self.lock();
        loop {
            match st.try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // A deadline `<= now` has passed: one last look was taken above.
            if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            // Woken, timed out or not: look again. A wake-up whose message
            // another receiver took in the meantime just means waiting on.
            st = match F::thread_waiter() {
                Some(me) => self.block_receiver(st, me, deadline),
                None => self.park_receiver(st, deadline)?,
            };
        }
    }

    /// How a receiving *task* waits: queued in `recvq` under `st` (the lock
    /// it found the channel empty with), parked until a sender wakes it or
    /// `deadline` passes, and taken out of the queue again. Gives the lock
    /// back, held.
    ///
    /// If the task is unwound out of the pause (it was cancelled, or a
    /// [`timeout`](fn@crate::timeout) scope expired), or cannot pause at all, a
    /// wake-up it was given goes on to the next receiver. (A broadcast
    /// wake-up comes only at the close, after which nobody waits, so there
    /// is nobody to hand it on to.)
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Disconnected`] if the task is unwinding: it
    /// cannot wait, so for it the channel is closed.
    fn park_receiver<'a>(
        &'a self,
        mut st: Guard<'a, T, F>,
        deadline: Option<Instant>,
    ) -> Result<Guard<'a, T, F>, RecvTimeoutError> {
        let token = park_token();
        let reg = st.register(F::task_wake(token));
        drop(st);
        // No lock is held across the pause: the guard below takes it while
        // the stack unwinds from inside `park`.
        let guard = OnDrop::new(|| {
            let mut st = self.lock();
            if st.unregister(&reg) {
                st.pass_on();
            }
        });
        let r = park_on(token, deadline, ParkedOn::Channel);
        guard.defuse();
        let mut st = self.lock();
        let woken = st.unregister(&reg);
        if let Resume::Cancelled = r {
            if woken {
                st.pass_on();
            }
            return Err(RecvTimeoutError::Disconnected);
        }
        Ok(st)
    }

    /// How a sending *task* waits on a full channel: queued with its value
    /// under `st` (the lock it found the channel full with), parked until a
    /// receiver takes the value or the receiver goes, parked again after a
    /// wake-up that was neither.
    ///
    /// If the task is unwound out of the pause, the value is withdrawn
    /// unless a receiver took it already (then the send happened), and
    /// dropped after the lock is released, since its destructor may use
    /// this channel.
    fn park_sender(&self, mut st: Guard<'_, T, F>, value: T) -> Result<(), SendError<T>> {
        let mut token = park_token();
        let (wake, mut _keep) = F::task_wake(token);
        let id = st.queue_sender(wake, value);
        drop(st);
        let guard = OnDrop::new(|| {
            let withdrawn = self.lock().sendq.remove_entry(id);
            drop(withdrawn);
        });
        loop {
            let r = park_on(token, None, ParkedOn::Channel);
            let mut st = self.lock();
            // A task that is unwinding cannot wait: its send fails unless
            // it happened already.
            if let Some(sent) = st.sent(id, matches!(r, Resume::Cancelled)) {
                guard.defuse();
                return sent;
            }
            // Still queued after a wake-up that was not a hand-over: wait
            // again in the same place, under a fresh token.
            token = park_token();
            let (wake, keep) = F::task_wake(token);
            _keep = keep;
            st.sendq.rewake(id, wake);
        }
    }

    /// How a receiving plain thread waits (across threads): queued as
    /// [`park_receiver`](Self::park_receiver) queues a task, it blocks
    /// until a sender picks it or `deadline` passes.
    fn block_receiver<'a>(
        &'a self,
        mut st: Guard<'a, T, F>,
        me: F::Wake,
        deadline: Option<Instant>,
    ) -> Guard<'a, T, F> {
        let reg = st.register((me, None));
        // An unpark that came before the park returns it at once; a
        // spurious one, or one meant for an earlier wait, makes the loop
        // look again.
        while st.recvq.woken(reg.id) == Woken::Not {
            match deadline {
                None => {
                    drop(st);
                    thread::park();
                }
                Some(d) => {
                    let now = crate::scheduler::timers::now();
                    if now >= d {
                        break;
                    }
                    drop(st);
                    thread::park_timeout(d - now);
                }
            }
            st = self.lock();
        }
        st.unregister(&reg);
        st
    }

    /// How a sending plain thread waits (across threads) on a full
    /// channel: it blocks until a receiver takes the value or goes.
    fn block_sender<'a>(
        &'a self,
        mut st: Guard<'a, T, F>,
        me: F::Wake,
        value: T,
    ) -> Result<(), SendError<T>> {
        let id = st.queue_sender(me, value);
        loop {
            if let Some(sent) = st.sent(id, false) {
                return sent;
            }
            drop(st);
            thread::park();
            st = self.lock();
        }
    }
}
