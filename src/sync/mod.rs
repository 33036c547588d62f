//! Synchronisation between tasks: channels, select, mutex, read-write
//! lock, semaphore, wait group, barrier, notify, once cell and condition
//! variable, each across threads or, in [`local`], for one thread.
//!
//! Every waiting operation here pauses the calling *task*, never the
//! thread: the scheduler goes on running the thread's other tasks. (The
//! cross-thread kinds may also be used from plain threads, which they
//! block.) All of them are built the same way on
//! [`ParkToken`](crate::raw::ParkToken): a waiting task takes a token,
//! publishes it in the primitive's FIFO waiter queue and parks; whoever
//! makes progress possible unparks the first waiter still waiting,
//! skipping (and so never waking) tasks that timed out or are being torn
//! down. Waiters are served in the order they came, and what one is handed
//! (a lock, a permit, a message wake-up) is never lost if it goes away
//! before using it.
//!
//! # Which thread
//!
//! | item | threads |
//! |---|---|
//! | [`local::channel`], [`local::sync_channel`], [`oneshot`] | one thread (`Rc`/`RefCell`, no locks) |
//! | [`mpsc::channel`], [`mpsc::sync_channel`] | any: tasks on several schedulers, and plain threads |
//! | [`Select`] | one thread; receives from and sends to channels of both kinds |
//! | [`watch::channel`] (the latest value), [`broadcast::channel`] (every value to every receiver) | any: tasks on several schedulers, and plain threads |
//! | [`Mutex`], [`RwLock`], [`Semaphore`], [`Notify`], [`Barrier`], [`WaitGroup`], [`OnceCell`], [`Condvar`] | any: tasks on several schedulers (a waiting task pauses), and plain threads (a waiting thread blocks); share them through an `Arc` |
//! | [`local::Mutex`], [`local::Semaphore`], [`local::WaitGroup`], [`local::Barrier`], [`local::Notify`], [`local::Event`] | one thread: share them between the tasks of one scheduler through an `Rc` |
//!
//! The single-thread types are not `Send` (or hold no waiters across
//! threads): their waiters are tasks of one scheduler, woken without any
//! atomic operation. The cross-thread ones keep their state behind a std
//! mutex held for a few instructions (never across a pause) and wake a
//! task on another thread through its scheduler's cross-thread queue.
//!
//! # Which to use
//!
//! Data touched only by the tasks of one scheduler (a connection's state,
//! a per-worker cache) takes the [`local`] kinds: no atomic operation at
//! all, and they cannot leave the thread by mistake. Data shared by the
//! workers of a [`Runtime`](crate::Runtime), or with plain threads, takes
//! the cross-thread kinds. An uncontended [`Mutex`] costs one
//! compare-and-swap to lock and one to unlock (some nanoseconds above the
//! single-thread one's price, see the "Mutex across threads" rows of the
//! benchmarks); a contended hand-over to a task on another worker costs a
//! wake-up of that worker's thread, microseconds rather than the
//! nanoseconds of a hand-over between tasks of one thread.
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
//! - a barrier waiter withdraws its arrival;
//! - an initialiser of a [`OnceCell`] that is unwound leaves the cell
//!   empty for the next waiter to try.
//!
//! A waiter whose own deadline passes just as it is handed a lock, permit
//! or notification keeps it: the call succeeds. The cross-thread kinds
//! follow the same rules; there a plain thread can only time out.
//!
//! A task that is already unwinding cannot pause. A waiting call made then
//! (from a destructor, say) fails where it can report an error (channel
//! operations report the channel closed) and panics where it cannot
//! (`lock`, `acquire`, the `wait`s), which aborts the process as any panic
//! during unwinding does.
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
//!
//! # Layout
//!
//! The files follow the public paths: the cross-thread kinds at this
//! module's root, one file each (`mutex`, `rwlock`, `condvar`,
//! `semaphore`, `notify`, `waitgroup`, `once`, and the modules [`mpsc`],
//! [`watch`], [`broadcast`]), the single-thread ones under [`local`]
//! (`local/mutex`, `local/semaphore`, `local/notify`, `local/waitgroup`,
//! and the channels in `local/mod`). Each kind is written once, over a
//! flavor that makes it single-thread or cross-thread; the public types of
//! both flavors are thin faces over it, each with its own docs:
//!
//! ```text
//!  local::Mutex  Mutex   local::Semaphore  Semaphore  ...   local::channel  mpsc
//!         \      /              \          /                      \        /
//!     logic::RawMutex<F>     logic::Semaphore<F>    ...        chan::Chan<T, F>
//!               \                   |                               /
//!                wait: queue, pause, remove, learn how woken         /
//!                                    |                              /
//!                waiters::Waiters<F, K>: the one waiter list ───────
//!                                    |
//!                flavor::Flavor: Local | CrossThread
//! ```
//!
//! - `flavor`: `Local` and `CrossThread`: the lock around a state, a
//!   mutex's lock word, a waiter's wake handle, when a waker wakes it and
//!   who may wait.
//! - `waiters`: the one waiter list every primitive and channel queues its
//!   waiters in; `wait`: the one way a primitive's waiter waits on it (a
//!   task parks, across threads a plain thread blocks), handing on
//!   whatever a waiter unwound out of its pause was given.
//! - `logic`: each primitive's logic, once for both flavors: the semaphore
//!   (also [`Notify`]'s), a mutex's lock, the count a [`WaitGroup`] or an
//!   [`local::Event`] waits on, the barrier. [`RwLock`], [`Condvar`] and
//!   [`OnceCell`], which exist across threads only, hold theirs in their
//!   own files.
//! - `chan`: the channel core (state, rules, waiting, handle plumbing) of
//!   both channel kinds, on the same flavors and waiter list; `oneshot`:
//!   [`oneshot()`], on the single-thread channel; `select`: [`Select`];
//!   `error`: [`SendError`], [`TrySendError`], [`RecvError`],
//!   [`TryRecvError`], [`RecvTimeoutError`].
//! - `fanout`: the core of [`watch`] and [`broadcast`], whose every change
//!   wakes all their waiters.

pub mod broadcast;
mod chan;
mod condvar;
mod error;
mod fanout;
mod flavor;
pub mod local;
mod logic;
pub mod mpsc;
mod mutex;
mod notify;
mod once;
mod oneshot;
mod rwlock;
mod select;
mod semaphore;
mod wait;
mod waiters;
mod waitgroup;
pub mod watch;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use error::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
pub use mutex::{Mutex, MutexGuard};
pub use notify::Notify;
pub use once::OnceCell;
pub use oneshot::{oneshot, OneshotReceiver, OneshotSender};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use select::{Select, Selectable, SelectableSender};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use waitgroup::{Barrier, BarrierWaitResult, WaitGroup};
