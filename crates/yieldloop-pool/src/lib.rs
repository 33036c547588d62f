//! Connection pools for yieldloop: a checkout that must wait pauses the
//! task, never its thread, and a plain thread may share the pool too.
//!
//! What a pool holds is up to a [`Manage`] type (deadpool's `Manager`,
//! r2d2's `ManageConnection`): how to open a connection, how to tell that
//! one is broken, how to check one that sat idle, and the error for a
//! checkout that waited too long. The `yieldloop-redis` and
//! `yieldloop-postgres` crates implement it for their clients; any client
//! can.
//!
//! # Two ways to share
//!
//! - **One pool for every thread**, for connections that are `Send`: the
//!   `redis` crate's own synchronous client or any other client on `std`
//!   sockets, which under yieldloop's `hook` feature pause the calling task
//!   instead of blocking. [`PoolConfig::build`] makes the pool; its
//!   clones, handed to tasks on every worker of a
//!   [`Runtime`](yieldloop::Runtime) and to plain threads, share it.
//!   [`Pool`] is then `Send` and `Sync`.
//! - **A pool per worker**, for connections that belong to the thread that
//!   opened them: yieldloop's own sockets are registered with their
//!   thread's reactor, and their pool (the `yieldloop-redis` and
//!   `yieldloop-postgres` ones) cannot leave the thread: the compiler says
//!   so. [`PoolConfig::pool`] gives each thread its own pool for a
//!   configuration shared by every worker.
//!
//! Both are the same [`Pool`]; only who holds it differs.
//!
//! # What a checkout does
//!
//! [`Pool::get`] takes a place in the pool (at most
//! [`max_size`](PoolConfig::max_size) places), waiting if there is none:
//! first come first served, a task pausing and a plain thread blocking, up
//! to the [checkout timeout](PoolConfig::checkout_timeout), after which it
//! fails with [`Manage::checkout_timed_out`]'s error, made from a
//! [`CheckoutTimeout`] that says how long it waited and how many
//! connections were in use. With a place, it takes the most recently
//! returned idle connection that passes its checks (not expired,
//! [`Manage::idle_usable`], and [`Manage::check`] if it sat idle for
//! [`check_after_idle`](PoolConfig::check_after_idle)), closing those that
//! fail; with none left, it opens a new one. The connection comes back when
//! its [`Pooled`] guard is dropped, or is closed instead
//! ([`Manage::discard`]) if it is broken, past its lifetime, or held by a
//! task that panics: a broken connection is never handed out again.
//! [`Pool::status`] has the sizes and counts.
//!
//! ```text
//!                  get()                              drop(Pooled)
//!   wait for a place (FIFO) ─▶ idle conn ─ checks ─▶ in use ─▶ broken? ─yes─▶ discard
//!          │ timeout              │ none / fail ▲                 │ no
//!          ▼                      ▼             │                 ▼
//!   checkout_timed_out        connect() ────────┘            back to idle ─▶ place freed
//!                                                   (idle timeout, lifetime: reaper, or next get)
//! ```
//!
//! # Why not a std `Mutex` and `Condvar`
//!
//! A pool that blocks on a std (or parking_lot) condition variable, as r2d2
//! does, is wrong here. A task waiting on it blocks its whole scheduler
//! thread; when the connection it waits for is held by another task of
//! that thread, that task never runs again to give it back: the thread
//! deadlocks, and under the `hook` feature it happens as soon as two tasks
//! of one worker want the last connection. Here the waiting is done by
//! yieldloop's cross-thread [`Semaphore`](yieldloop::sync::Semaphore):
//! the task pauses, its thread runs the others. The pool's own std mutex is
//! held for a few field updates, never while connecting, checking,
//! discarding or paused.
//!
//! # Correctness across threads
//!
//! Every wait in the pool is a wait for a permit of yieldloop's
//! cross-thread `Semaphore`, whose hand-over, timeouts and cancellation
//! the core crate's loom models check (`tests/loom_sync.rs`); the rest is
//! plain data behind a std mutex. So the pool has no cross-thread protocol
//! of its own and no loom model of its own. What it adds is one ordering
//! rule, kept by [`Pooled`]'s `Drop`: a returned connection joins the idle
//! list *before* its place is freed, so idle connections plus checkouts
//! never outnumber the places, and at most `max_size` connections are
//! ever open. The tests check it under contention from several workers and
//! plain threads.
//!
//! # Panics and cancellation
//!
//! A task that panics, or is unwound by a [`timeout`](yieldloop::timeout)
//! or a cancel, while it holds a connection closes it and frees its place:
//! a call may have stopped half-way, so the connection is not reused. One
//! unwound while it waits for a place leaves the queue (a place just handed
//! to it goes to the next waiter); one unwound inside a connect or a check
//! frees its place too.
//!
//! # Layout
//!
//! - `manage`: [`Manage`] and [`CheckoutTimeout`].
//! - `config`: [`PoolConfig`] and the per-thread pools of
//!   [`PoolConfig::pool`].
//! - `pool`: [`Pool`], its state and counts ([`Status`]) and the checkout.
//! - `pooled`: [`Pooled`], a checked-out connection and its place.
//! - `reaper`: the task that closes expired idle connections.
//!
//! # Examples
//!
//! A pool of at most 2 connections, shared by tasks on two workers and a
//! plain thread. (Connections here are plain values; the `counted` example
//! pools real sockets.)
//!
//! ```
//! use std::io;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use yieldloop_pool::{CheckoutTimeout, Manage, PoolConfig};
//!
//! /// Opens numbered "connections".
//! #[derive(Clone, Debug, Default)]
//! struct Numbers(Arc<AtomicU32>);
//!
//! impl Manage for Numbers {
//!     type Conn = u32;
//!     type Error = io::Error;
//!     fn connect(&self) -> io::Result<u32> {
//!         Ok(self.0.fetch_add(1, Ordering::SeqCst))
//!     }
//!     fn is_broken(&self, _: &u32) -> bool {
//!         false
//!     }
//!     fn checkout_timed_out(&self, t: CheckoutTimeout) -> io::Error {
//!         t.into()
//!     }
//! }
//!
//! let pool = PoolConfig::new(Numbers::default()).max_size(2).build();
//! let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
//! let tasks: Vec<_> = (0..8)
//!     .map(|i| {
//!         let pool = pool.clone();
//!         rt.spawn_on(i % 2, move || -> io::Result<()> {
//!             let conn = pool.get()?; // pauses this task while both are out
//!             yieldloop::sleep(Duration::from_millis(5));
//!             assert!(*conn < 2);
//!             Ok(())
//!         })
//!     })
//!     .collect();
//! let on_a_thread = pool.get().unwrap(); // blocks this thread if need be
//! drop(on_a_thread);
//! for t in tasks {
//!     t.join().unwrap().unwrap();
//! }
//! let status = pool.status();
//! assert!(status.opened <= 2);
//! assert_eq!((status.in_use, status.waiting), (0, 0));
//! ```

mod config;
mod inner;
mod manage;
mod pool;
mod pooled;
mod reaper;

pub use config::PoolConfig;
pub use manage::{CheckoutTimeout, Manage};
pub use pool::{Pool, Status};
pub use pooled::Pooled;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
