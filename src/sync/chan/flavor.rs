//! What makes a channel single-thread or cross-thread: the [`Lock`]
//! around its state and the [`Flavor`] that wakes and waits.

use std::cell::{RefCell, RefMut};
use std::ops::DerefMut;
use std::sync::PoisonError;
use std::time::Instant;

use super::{Chan, State};
use crate::protocol::ParkToken;
use crate::sync::error::{RecvTimeoutError, SendError};
use crate::sync::select::sealed::Fired;
use crate::sync::waitq::WaitQueue;
use crate::sys::threads::{Mutex, MutexGuard};
use crate::task::park::RemoteUnparker;

/// The lock around a channel's state. Either kind holds it for a few
/// instructions and never across a pause or a wait.
pub(crate) trait Lock<S> {
    /// What [`lock`](Self::lock) hands out.
    type Guard<'a>: DerefMut<Target = S>
    where
        Self: 'a;

    /// A lock around `state`.
    fn new(state: S) -> Self;

    /// Takes the lock.
    fn lock(&self) -> Self::Guard<'_>;
}

/// The single-thread lock: every handle lives on one scheduler's thread and
/// no borrow is held across a pause, so a borrow can never be contended.
impl<S> Lock<S> for RefCell<S> {
    type Guard<'a>
        = RefMut<'a, S>
    where
        Self: 'a;

    fn new(state: S) -> Self {
        RefCell::new(state)
    }

    fn lock(&self) -> RefMut<'_, S> {
        self.borrow_mut()
    }
}

/// The cross-thread lock: a std mutex, not a task-aware one, because
/// nothing ever pauses while holding it (it is released before any park or
/// condvar wait).
impl<S> Lock<S> for Mutex<S> {
    type Guard<'a>
        = MutexGuard<'a, S>
    where
        Self: 'a;

    fn new(state: S) -> Self {
        Mutex::new(state)
    }

    fn lock(&self) -> MutexGuard<'_, S> {
        // No code panics while holding the lock (values are dropped after
        // it is released), so a poisoned lock still holds a sound state.
        Mutex::lock(self).unwrap_or_else(PoisonError::into_inner)
    }
}

/// The held lock of a channel with items `T` and flavor `F`: a `RefMut` or
/// a `MutexGuard`.
pub(crate) type Guard<'a, T, F> =
    <<F as Flavor>::Lock<State<T, F>> as Lock<State<T, F>>>::Guard<'a>;

/// What makes a channel single-thread or cross-thread: the lock around its
/// state, and how its waiters are woken and wait.
pub(crate) trait Flavor: Sized {
    /// The lock around the state.
    type Lock<S>: Lock<S>;
    /// A waiting receiver's entry in `recvq`.
    type Receiver;
    /// What a parked sender is woken through; its entry in `sendq` holds it
    /// beside the value.
    type Sender;

    /// Takes out of `q` and wakes the first receiver that is still
    /// waiting, as the one singled out for a message
    /// ([`Woken::One`](super::waitq::Woken::One)). Returns whether there was
    /// one. A receiver skipped is one known to have stopped waiting; its
    /// entry stays for its owner to remove.
    fn wake_one(&self, q: &mut WaitQueue<Self::Receiver>) -> bool;

    /// Takes every receiver out of `q` and wakes it, as part of a broadcast
    /// ([`Woken::All`](super::waitq::Woken::All)).
    fn wake_all(&self, q: &mut WaitQueue<Self::Receiver>);

    /// Wakes the parked sender `w`. Returns false only when `w` is known to
    /// have stopped waiting: then the next sender is tried.
    fn wake_sender(&self, w: &Self::Sender) -> bool;

    /// For the calling task's pause `token`: its entry in `recvq`, the flag
    /// through which it learns that it was woken, and a handle it must keep
    /// until the pause is over, if the flavor needs one.
    fn task_receiver(token: ParkToken) -> (Self::Receiver, Fired, Option<RemoteUnparker>);

    /// For the calling task's pause `token`: what it is woken through as a
    /// parked sender, and a handle kept as for
    /// [`task_receiver`](Self::task_receiver).
    fn task_sender(token: ParkToken) -> (Self::Sender, Option<RemoteUnparker>);

    /// Waits as a receiver on `chan`, found empty under `st`, until a
    /// sender wakes the caller or `deadline` passes; gives the lock back,
    /// held, for another look.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Disconnected`] if the caller cannot wait (a task
    /// that is unwinding).
    fn wait_receiver<'a, T>(
        chan: &'a Chan<T, Self>,
        st: Guard<'a, T, Self>,
        deadline: Option<Instant>,
    ) -> Result<Guard<'a, T, Self>, RecvTimeoutError>;

    /// Waits as a sender of `value` on `chan`, found full under `st`, until
    /// a receiver takes the value (`Ok`) or the send fails.
    ///
    /// # Errors
    ///
    /// [`SendError`] with `value` if the receiver is gone, or if the caller
    /// cannot wait (a task that is unwinding).
    fn wait_sender<T>(
        chan: &Chan<T, Self>,
        st: Guard<'_, T, Self>,
        value: T,
    ) -> Result<(), SendError<T>>;
}
