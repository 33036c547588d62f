//! The raw protocol between a task and its scheduler, for building your own
//! waiting primitives or for seeing the generator model at work.
//!
//! A task pauses with [`suspend`], handing the scheduler an [`Op`] that
//! says what it waits for; the scheduler resumes it with a [`Resume`]
//! answer once that has happened: the `yield` and `send` of the generator
//! articles. Everything in the crate root ([`sleep`](crate::sleep),
//! [`JoinHandle::join`](crate::JoinHandle::join), the sockets in
//! [`net`](crate::net)) is a thin wrapper over these.
//!
//! [`park`] and [`ParkToken`] are the building block of waiting on
//! something that is neither a timer nor a socket nor a task: channels,
//! mutexes and events are made of them, and so can yours be.
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, Instant};
//! use yieldloop::raw::{suspend, Op, Resume};
//!
//! yieldloop::run(|| {
//!     // What `yieldloop::sleep` does underneath.
//!     let deadline = Instant::now() + Duration::from_millis(5);
//!     assert!(matches!(suspend(Op::Wait(deadline)), Resume::Ready));
//!     assert!(Instant::now() >= deadline);
//! });
//! ```

pub use super::coop::{consume_budget, poll_consume_budget, unconstrained};
pub use super::park::{park, park_token, RemoteUnparker};
pub use super::suspend::suspend;
pub use crate::protocol::{IoId, Op, ParkToken, Resume};
