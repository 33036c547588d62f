//! What a [`Flavor`] adds for the channel core: how a channel's waiters
//! are queued, woken and wait.

use std::time::Instant;

use super::{Chan, State};
use crate::protocol::ParkToken;
use crate::sync::error::{RecvTimeoutError, SendError};
use crate::sync::flavor::{self, Flavor};
use crate::sync::select::sealed::Fired;
use crate::sync::waiters::WaitQueue;
use crate::task::park::RemoteUnparker;

/// The held lock of a channel with items `T` and flavor `F`: a `RefMut` or
/// a `MutexGuard`.
pub(crate) type Guard<'a, T, F> = flavor::Guard<'a, F, State<T, F>>;

/// The channel side of a [`Flavor`]: on top of the lock around the state
/// and the wake handle of a waiter, what a channel's entries hold and how
/// a receiver or a sender waits.
///
/// A channel's waiters are woken under its lock, at once, and taken out of
/// their queue by the waker; a receiver learns whether a sender picked it
/// through [`Fired`], since a [`Select`](crate::sync::Select) waits in
/// several channels' queues with one pause.
pub(crate) trait ChanFlavor: Flavor {
    /// A waiting receiver's entry in `recvq`.
    type Receiver;
    /// What a parked sender is woken through; its entry in `sendq` holds it
    /// beside the value.
    type Sender;

    /// Takes out of `q` and wakes the first receiver that is still
    /// waiting, as the one singled out for a message. Returns whether there
    /// was one. A receiver skipped is one known to have stopped waiting;
    /// its entry stays for its owner to remove.
    fn wake_one(q: &mut WaitQueue<Self::Receiver>) -> bool;

    /// Takes every receiver out of `q` and wakes it, as part of a
    /// broadcast.
    fn wake_all(q: &mut WaitQueue<Self::Receiver>);

    /// Wakes the parked sender `w`. Returns false only when `w` is known to
    /// have stopped waiting: then the next sender is tried.
    fn wake_sender(w: &Self::Sender) -> bool;

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
    fn wait_sender<'a, T>(
        chan: &'a Chan<T, Self>,
        st: Guard<'a, T, Self>,
        value: T,
    ) -> Result<(), SendError<T>>;
}
