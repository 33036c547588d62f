//! The errors of the channels, shaped like those of `std::sync::mpsc`.
//!
//! Custom types rather than `io::Error`, because callers match on them
//! (empty or closed? timed out or closed?) and because a failed send must
//! give the value back.

use std::error::Error;
use std::fmt;

/// A send failed because the receiver is gone; the value comes back.
///
/// # Examples
///
/// ```
/// yieldloop::run(|| {
///     let (tx, rx) = yieldloop::sync::local::channel();
///     drop(rx);
///     let err = tx.send(String::from("lost?")).unwrap_err();
///     assert_eq!(err.to_string(), "sending on a closed channel");
///     assert_eq!(err.into_inner(), "lost?");
/// });
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that could not be sent.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value need not be `Debug`, like std's.
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> Error for SendError<T> {}

/// Why a [`try_send`](super::local::SyncSender::try_send) did not send; either way
/// the value comes back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// The channel is full (or, for a rendezvous channel, no receiver is
    /// waiting).
    Full(T),
    /// The receiver is gone.
    Disconnected(T),
}

impl<T> TrySendError<T> {
    /// The value that could not be sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }
}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Disconnected(e.0)
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Disconnected(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> Error for TrySendError<T> {}

/// A receive failed because the channel is empty and every sender is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed channel")
    }
}

impl Error for RecvError {}

/// Why a [`try_recv`](super::local::Receiver::try_recv) returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing is there now; senders remain, so something may come.
    Empty,
    /// Nothing is there and every sender is gone: nothing ever will be.
    Disconnected,
}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Disconnected
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Disconnected => f.write_str("receiving on a closed channel"),
        }
    }
}

impl Error for TryRecvError {}

/// Why a [`recv_timeout`](super::local::Receiver::recv_timeout) returned nothing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop::sync::RecvTimeoutError;
///
/// yieldloop::run(|| {
///     let (tx, rx) = yieldloop::sync::local::channel::<u8>();
///     let err = rx.recv_timeout(Duration::from_millis(5)).unwrap_err();
///     assert_eq!(err, RecvTimeoutError::Timeout);
///     assert_eq!(err.to_string(), "timed out waiting on a channel");
///     drop(tx);
///     let err = rx.recv_timeout(Duration::from_millis(5)).unwrap_err();
///     assert_eq!(err, RecvTimeoutError::Disconnected);
/// });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvTimeoutError {
    /// The time ran out with the channel still empty; senders remain.
    Timeout,
    /// The channel is empty and every sender is gone.
    Disconnected,
}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Disconnected
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on a channel"),
            RecvTimeoutError::Disconnected => f.write_str("receiving on a closed channel"),
        }
    }
}

impl Error for RecvTimeoutError {}
