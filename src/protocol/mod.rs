//! The bottom layer: plain data shared by every layer above it. The ids
//! ([`TaskId`], [`WaitToken`], [`IoId`], [`SchedulerId`], [`ParkToken`]),
//! how messages name a task ([`TaskLabel`]),
//! the protocol between a task and its scheduler ([`Op`], [`Resume`]), and
//! why a task or another thread's work gave no value (`join_failure`).
//! Nothing here imports another module of the crate.

mod ids;
pub(crate) mod join_failure;
mod op;

pub use ids::{IoId, ParkToken, TaskId};
pub(crate) use ids::{SchedulerId, TaskLabel, WaitToken};
pub use op::{Op, Resume};
