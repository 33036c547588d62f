//! Synchronisation between tasks: channels, select, mutex, semaphore, wait
//! group, barrier, notify and event.
//!
//! Every waiting operation here pauses the calling *task*, never the
//! thread: the scheduler goes on running the thread's other tasks. All of
//! them are built the same way on [`ParkToken`](crate::raw::ParkToken): a
//! waiting task takes a token, publishes it in the primitive's FIFO waiter
//! queue and parks; whoever makes progress possible unparks the first
//! waiter whose token still names a pause, skipping (and so never waking)
//! tasks that timed out or are being torn down. Waiters are served in the
//! order they came, and what one is handed (a lock, a permit, a message
//! wake-up) is never lost if it goes away before using it.
//!
//! # Which thread
//!
//! | item | threads |
//! |---|---|
//! | [`local::channel`], [`local::sync_channel`], [`oneshot`] | one thread (`Rc`/`RefCell`, no locks) |
//! | [`mpsc::channel`], [`mpsc::sync_channel`] | any: tasks on several schedulers, and plain threads |
//! | [`Select`] | one thread; waits on channels of both kinds |
//! | [`local::Mutex`], [`local::Semaphore`], [`local::WaitGroup`], [`local::Barrier`], [`local::Notify`], [`local::Event`] | one thread: share them between the tasks of one scheduler through an `Rc` |
//!
//! The single-thread types are not `Send` (or hold no waiters across
//! threads): their waiters are tasks of one scheduler, woken without any
//! atomic operation.
//!
//! # Cancellation and timeouts
//!
//! A task can stop waiting in three ways: a deadline of its own
//! (`recv_timeout`, `wait_timeout`), a [`timeout`](crate::timeout) scope
//! expiring, or [`JoinHandle::cancel`](crate::JoinHandle::cancel). In the
//! last two the task is unwound out of its pause, and drop guards take its
//! entry out of the waiter queue, so no ghost waiter is left behind:
//!
//! - a lock, permit or `notify_one` handed to it just before goes on to the
//!   next waiter;
//! - a receiver picked to take a message wakes the next receiver instead;
//! - a parked sender withdraws its value (a send either happened or not);
//! - a barrier waiter withdraws its arrival.
//!
//! A task that is already unwinding cannot pause. A waiting call made then
//! (from a destructor, say) fails where it can report an error (channel
//! operations report the channel closed) and panics where it cannot
//! (`lock`, `acquire`, the `wait`s), which aborts the process as any panic
//! during unwinding does.
//!
//! # Layout
//!
//! - `waitq`: the waiter queue and park step everything here is made of.
//! - `chan`: the channel core (state, rules, handle plumbing) that both
//!   channel kinds share, made single-thread or cross-thread by a flavor.
//! - `chan`: the one channel core under both kinds of channel.
//! - [`local`]: the single-thread channels, [`local::channel`] and
//!   [`local::sync_channel`], and the single-thread primitives below;
//!   `oneshot`: [`oneshot`].
//! - `error`: [`SendError`], [`TrySendError`], [`RecvError`],
//!   [`TryRecvError`], [`RecvTimeoutError`].
//! - [`mpsc`]: the cross-thread channels.
//! - `select`: [`Select`].
//! - `semaphore`: [`local::Semaphore`]; `mutex`: [`local::Mutex`] (a
//!   one-permit semaphore around a `RefCell`).
//! - `waitgroup`: [`local::WaitGroup`], [`local::Barrier`]; `notify`:
//!   [`local::Notify`], [`local::Event`].
//!
//! # Example
//!
//! A worker pool fed through a bounded channel, its results gathered
//! through another:
//!
//! ```
//! use yieldloop::sync::local::{channel, sync_channel};
//!
//! yieldloop::run(|| {
//!     let (jobs_tx, jobs_rx) = sync_channel::<u64>(4);
//!     let (results_tx, results_rx) = channel();
//!     let jobs_rx = std::rc::Rc::new(jobs_rx);
//!     for _ in 0..3 {
//!         let (jobs, results) = (jobs_rx.clone(), results_tx.clone());
//!         yieldloop::spawn(move || {
//!             for n in jobs.iter() {
//!                 results.send(n * n).unwrap();
//!             }
//!         });
//!     }
//!     drop(results_tx);
//!     for n in 1..=10 {
//!         jobs_tx.send(n).unwrap(); // pauses while 4 jobs are queued
//!     }
//!     drop(jobs_tx);
//!     assert_eq!(results_rx.iter().sum::<u64>(), 385);
//! });
//! ```

mod chan;
mod cross;
mod error;
pub mod local;
pub mod mpsc;
mod mutex;
mod notify;
mod oneshot;
mod select;
mod semaphore;
mod waitgroup;
mod waitq;

pub use cross::{
    Barrier, Condvar, Mutex, MutexGuard, Notify, OnceCell, RwLock, RwLockReadGuard,
    RwLockWriteGuard, Semaphore, SemaphorePermit, WaitGroup, WaitTimeoutResult,
};
pub use error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
pub use oneshot::{oneshot, OneshotReceiver, OneshotSender};
pub use select::{Select, Selectable};
pub use waitgroup::BarrierWaitResult;
