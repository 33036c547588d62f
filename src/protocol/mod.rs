//! The bottom layer: plain data shared by every layer above it. The ids
//! ([`TaskId`], [`WaitToken`], [`IoId`], [`SchedulerId`], [`ParkToken`]),
//! how messages name a task ([`TaskLabel`]), and
//! the protocol between a task and its scheduler ([`Op`], [`Resume`]).
//! Nothing here imports another module of the crate.

mod ids;
mod op;

pub use ids::{IoId, ParkToken, TaskId};
pub(crate) use ids::{SchedulerId, TaskLabel, WaitToken};
pub use op::{Op, Resume};
