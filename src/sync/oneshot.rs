//! [`oneshot`]: a channel for exactly one value, such as the answer to a
//! request.
//!
//! It is an unbounded [`channel`](super::local::channel) whose sender can send
//! only once (its `send` consumes it), so it shares that channel's waiting
//! and cancellation rules.

use std::fmt;
use std::time::Duration;

use super::error::{RecvError, RecvTimeoutError, SendError, TryRecvError};
use super::local::{self, Receiver, Sender};
use super::select::sealed::{Registration, SelectRecv};
use crate::protocol::ParkToken;

/// Creates a single-thread channel for one value.
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let (reply_tx, reply_rx) = yieldloop::sync::oneshot();
///     yieldloop::spawn(move || reply_tx.send(6 * 7).unwrap());
///     assert_eq!(reply_rx.recv(), Ok(42));
///
///     // A sender dropped without sending closes it.
///     let (tx, rx) = yieldloop::sync::oneshot::<u8>();
///     drop(tx);
///     assert!(rx.recv().is_err());
/// });
/// ```
pub fn oneshot<T>() -> (OneshotSender<T>, OneshotReceiver<T>) {
    let (tx, rx) = local::channel();
    (OneshotSender { tx }, OneshotReceiver { rx })
}

/// The sending half of a [`oneshot`].
pub struct OneshotSender<T> {
    tx: Sender<T>,
}

impl<T> OneshotSender<T> {
    /// Sends the value and closes the channel. Never pauses.
    ///
    /// # Errors
    ///
    /// [`SendError`], carrying `value` back, if the receiver is gone.
    pub fn send(self, value: T) -> Result<(), SendError<T>> {
        self.tx.send(value)
    }
}

/// The receiving half of a [`oneshot`]. It can be waited on in a
/// [`Select`](super::Select).
pub struct OneshotReceiver<T> {
    rx: Receiver<T>,
}

impl<T> OneshotReceiver<T> {
    /// Waits for the value.
    ///
    /// # Errors
    ///
    /// [`RecvError`] if the sender was dropped without sending (or the
    /// value was taken already by [`try_recv`](Self::try_recv)), or if it
    /// would have to pause in a task that is unwinding.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn recv(self) -> Result<T, RecvError> {
        self.rx.recv()
    }

    /// Takes the value if it is there, without pausing.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] if it has not been sent yet,
    /// [`TryRecvError::Disconnected`] if it never will be.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.rx.try_recv()
    }

    /// Waits for the value, giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if the time ran out,
    /// [`RecvTimeoutError::Disconnected`] as for [`recv`](Self::recv).
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }
}

impl<T> SelectRecv for OneshotReceiver<T> {
    fn is_ready(&self) -> bool {
        self.rx.is_ready()
    }

    fn register(&self, token: ParkToken) -> Registration {
        self.rx.register(token)
    }

    fn unregister(&self, reg: &Registration) -> bool {
        self.rx.unregister(reg)
    }

    fn pass_on(&self) {
        self.rx.pass_on();
    }
}

impl<T> super::Selectable for OneshotReceiver<T> {}

impl<T> fmt::Debug for OneshotSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneshotSender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for OneshotReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneshotReceiver")
            .field("ready", &self.rx.is_ready())
            .finish()
    }
}
