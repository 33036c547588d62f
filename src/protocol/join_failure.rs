//! Why a task, or work on another thread, produced no value: the one
//! representation behind [`JoinError`](crate::JoinError) and
//! [`RemoteJoinError`](crate::RemoteJoinError), and the accessors they
//! share. Plain data: nothing here imports the rest of the crate.

use std::any::Any;

/// How something that should have produced a value ended instead.
pub(crate) enum Failure {
    /// It panicked; the payload, to hand back or re-raise.
    Panicked(Box<dyn Any + Send + 'static>),
    /// It was torn down before it finished; the text says why.
    Cancelled(&'static str),
}

impl Failure {
    /// The panic message, when it panicked with a string.
    pub(crate) fn panic_message(&self) -> Option<&str> {
        match self {
            Failure::Panicked(p) => payload_text(&**p),
            Failure::Cancelled(_) => None,
        }
    }
}

/// The message of a panic payload, when it is a string (`panic!("…")` gives
/// a `&'static str` or a `String`).
pub(crate) fn payload_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// The accessors every error carrying a [`Failure`] in its `failure` field
/// shares; `$what` names what failed ("task", "work") in their docs and
/// messages.
macro_rules! failure_accessors {
    ($ty:ident, $what:literal) => {
        impl $ty {
            #[doc = concat!("True if the ", $what, " panicked.")]
            pub fn is_panic(&self) -> bool {
                matches!(self.failure, $crate::protocol::join_failure::Failure::Panicked(_))
            }

            #[doc = concat!("True if the ", $what, " never finished: it was cancelled or torn down (see the type's docs).")]
            pub fn is_cancelled(&self) -> bool {
                matches!(self.failure, $crate::protocol::join_failure::Failure::Cancelled(_))
            }

            #[doc = concat!("The panic payload, or the error back if the ", $what, " did not panic.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("Returns `self` if the ", $what, " was cancelled.")]
            pub fn try_into_panic(self) -> Result<Box<dyn std::any::Any + Send + 'static>, $ty> {
                match self.failure {
                    $crate::protocol::join_failure::Failure::Panicked(p) => Ok(p),
                    $crate::protocol::join_failure::Failure::Cancelled(_) => Err(self),
                }
            }

            /// The panic payload.
            ///
            /// # Panics
            ///
            #[doc = concat!("Panics if the ", $what, " was cancelled rather than panicking.")]
            pub fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
                match self.try_into_panic() {
                    Ok(p) => p,
                    Err(e) => panic!(
                        concat!(stringify!($ty), "::into_panic on a cancelled ", $what, " ({})"),
                        e
                    ),
                }
            }

            /// The panic message, when the payload is a string.
            pub fn panic_message(&self) -> Option<&str> {
                self.failure.panic_message()
            }
        }

        impl std::error::Error for $ty {}

        impl From<$ty> for std::io::Error {
            fn from(e: $ty) -> std::io::Error {
                std::io::Error::other(e.to_string())
            }
        }
    };
}
pub(crate) use failure_accessors;
