//! The bridges between tasks and the worlds around them: futures, tokio,
//! plain threads and Unix signals. Each brings something that is not a
//! task to a task's pause, or a task's value to something that is not one.
//!
//! - `future`: [`block_on`](crate::block_on), a `Future` awaited from a
//!   task, its waker unparking the task, and
//!   [`spawn_future`](crate::spawn_future), a task that drives one;
//! - `on_tokio` (feature `tokio`): a future that needs tokio's own reactor,
//!   run on one shared tokio runtime while only the calling task waits;
//! - `from_thread`: one value handed over from another thread to whoever
//!   waits for it (a task, a thread, or a future): the plumbing under
//!   [`BlockingHandle`](crate::BlockingHandle),
//!   [`WorkerHandle`](crate::WorkerHandle) and `on_tokio`;
//! - `blocking`: [`spawn_blocking`](crate::spawn_blocking), calls that
//!   would hold the thread, run on a pool of threads;
//! - `signal`: Unix signals as something a task waits for, the handler's
//!   self-pipe read through [`PausingIo`](crate::io::PausingIo). A public
//!   module, [`yieldloop::signal`](crate::signal), re-exported by the crate
//!   root under its own name.

pub(crate) mod blocking;
pub(crate) mod from_thread;
pub(crate) mod future;
#[cfg(feature = "tokio")]
pub(crate) mod on_tokio;
pub mod signal;
