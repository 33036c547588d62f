//! What a task does, on top of the scheduler: pause, park, spawn other
//! tasks and wait for them, bound its waits with a deadline, keep values of
//! its own.
//!
//! - `suspend`: [`suspend`](crate::raw::suspend), the one way a task
//!   pauses, each pause narrowed to the enclosing `timeout` scope;
//! - `timeout`: [`timeout`](crate::timeout()) and
//!   [`timeout_at`](crate::timeout_at), a deadline over a piece of a task's
//!   code, which every pause inside it carries;
//! - `coop`: the cooperative budget, spent by each operation that could
//!   have paused and went ahead, and paid back by a pause once it is spent;
//! - `park`: park tokens, the one building block of every waiting
//!   primitive;
//! - `task_local`: values that belong to one task;
//! - `spawn`: [`spawn`](crate::spawn()), [`JoinHandle`](crate::JoinHandle)
//!   and [`run`](crate::run), which starts the first task;
//! - `scope`: [`scope`](crate::scope()), tasks that borrow from the task
//!   that opened the scope;
//! - `join_many`: [`join_all`](crate::join_all) and
//!   [`join_any`](crate::join_any), waiting for several tasks at once;
//! - `raw`: the pauses above as a public protocol, for primitives of your
//!   own.
//!
//! `raw` and `task_local` are public modules, re-exported by the crate
//! root under their own names; the rest reaches the root item by item.

pub(crate) mod coop;
pub(crate) mod join_many;
pub(crate) mod park;
pub mod raw;
pub(crate) mod scope;
pub(crate) mod spawn;
pub(crate) mod suspend;
pub mod task_local;
pub(crate) mod timeout;
