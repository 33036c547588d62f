//! A per-worker connection pool for yieldloop tasks: a checkout that must
//! wait pauses the task, never its thread. The `yieldloop-redis` and
//! `yieldloop-postgres` crates keep their connections in it; any client
//! whose connections belong to one thread can.
//!
//! A scheduler's tasks never move to another thread, so each thread keeps
//! pools of its own: no locks, no cross-thread hand-off, and a connection
//! stays registered with the reactor of the thread that opened it.
//! [`PoolConfig`] is `Send` and `Sync` (when its [`Manage`] type is), one
//! value shared by every worker; [`PoolConfig::pool`] hands a task its
//! thread's pool for it.
//!
//! What a pool holds is up to a [`Manage`] type: how to open a
//! connection, how to tell that one is broken, and the error for a
//! checkout that waited too long. The pool itself only counts places:
//! [`Pool::get`] hands out an idle connection, or opens one while fewer
//! than the maximum are open, or pauses the task (not the thread) until
//! another task gives one back. A connection goes back when its
//! [`Pooled`] guard is dropped, unless [`Manage::is_broken`] says it is
//! broken: then it is handed to [`Manage::discard`] and its place freed, so
//! a broken connection is never given to another task.
//!
//! A pool's connections are registered with the scheduler that opened
//! them: after a [`yieldloop::run`] ends they are dead, and a later `run` on
//! the same thread that takes [`PoolConfig::pool`] again gets that old
//! pool. Its idle connections fail the checkout's check
//! ([`Manage::idle_usable`]) and are replaced by new ones. The workers of
//! a [`yieldloop::Runtime`] keep their schedulers for their whole life and
//! are not affected.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use yieldloop::sync::local::Semaphore;

/// What a [`Pool`] needs to know about its connections.
///
/// The database crates implement it on their connect options, so that
/// `PoolConfig::new(options)` makes a pool of that client's connections.
pub trait Manage: Clone + fmt::Debug + 'static {
    /// The connection type handed out.
    type Conn;
    /// The error of a connect, and of a checkout that waited too long.
    type Error;

    /// Opens a new connection (from a task: it may pause the task).
    fn connect(&self) -> Result<Self::Conn, Self::Error>;

    /// Whether `conn` can no longer be used (an earlier call failed or was
    /// interrupted part-way, or the server closed it): such a connection is
    /// discarded instead of going back to the pool.
    fn is_broken(&self, conn: &Self::Conn) -> bool;

    /// Whether an idle connection may be handed out, checked at each
    /// checkout: one the server closed while it sat in the pool, or one
    /// left from an earlier [`yieldloop::run`] on the same thread, is
    /// discarded and the next one tried. Should not wait for the server
    /// (no round trip). The default asks [`is_broken`](Self::is_broken).
    fn idle_usable(&self, conn: &Self::Conn) -> bool {
        !self.is_broken(conn)
    }

    /// The error [`Pool::get`] returns when no connection came free within
    /// `waited`, with `max_size` connections in use.
    fn checkout_timed_out(&self, waited: Duration, max_size: usize) -> Self::Error;

    /// Disposes of a broken connection. The default drops it; a client can
    /// do more (ask the server to cancel a query left running).
    fn discard(&self, conn: Self::Conn) {
        drop(conn);
    }
}

/// How a pool is made: the [`Manage`] value (the connect options), the
/// most connections it keeps open at once, and how long a checkout waits
/// for one. One configuration, shared by every worker, with
/// [`pool`](Self::pool) giving each thread its own pool.
#[derive(Clone, Debug)]
pub struct PoolConfig<M> {
    manager: M,
    max_size: usize,
    checkout_timeout: Option<Duration>,
    /// Clones share it, and so share each thread's pool.
    id: u64,
}

impl<M: Manage> PoolConfig<M> {
    /// A configuration with at most 16 connections per worker and a
    /// checkout that waits up to 30 seconds.
    pub fn new(manager: M) -> PoolConfig<M> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        PoolConfig {
            manager,
            max_size: 16,
            checkout_timeout: Some(Duration::from_secs(30)),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The most connections a pool keeps open (checked out and idle
    /// together); at least 1.
    pub fn max_size(mut self, max: usize) -> PoolConfig<M> {
        self.max_size = max.max(1);
        self
    }

    /// How long a checkout waits when every connection is in use; `None`
    /// waits as long as it takes.
    pub fn checkout_timeout(mut self, limit: Option<Duration>) -> PoolConfig<M> {
        self.checkout_timeout = limit;
        self
    }

    /// The connect options (the [`Manage`] value).
    pub fn manager(&self) -> &M {
        &self.manager
    }

    /// This thread's pool for this configuration (and its clones), made on
    /// first use and kept for the thread's life.
    pub fn pool(&self) -> Pool<M> {
        // A thread-local cannot be generic: one map for every pool type,
        // keyed by the configuration's id, its values downcast back.
        thread_local! {
            static POOLS: RefCell<HashMap<u64, Box<dyn Any>>> = RefCell::new(HashMap::new());
        }
        POOLS.with(|pools| {
            pools
                .borrow_mut()
                .entry(self.id)
                .or_insert_with(|| Box::new(Pool::new(self.clone())))
                .downcast_ref::<Pool<M>>()
                .expect("one id, one pool type")
                .clone()
        })
    }
}

/// A pool of connections for the tasks of one thread. Clones share it.
///
/// [`get`](Self::get) hands out an idle connection, or opens one while
/// fewer than the maximum are open, or pauses the task until another task
/// returns one. A connection goes back when its [`Pooled`] guard is
/// dropped, unless it is broken: then it is discarded and its place freed.
pub struct Pool<M: Manage> {
    inner: Rc<PoolInner<M>>,
}

impl<M: Manage> Clone for Pool<M> {
    fn clone(&self) -> Pool<M> {
        Pool {
            inner: self.inner.clone(),
        }
    }
}

struct PoolInner<M: Manage> {
    config: PoolConfig<M>,
    /// Idle connections, the most recently used last.
    idle: RefCell<Vec<M::Conn>>,
    /// One permit per checkout (a connection in use, or being opened).
    permits: Semaphore,
    /// Connections opened over the pool's life.
    opened: Cell<u64>,
    /// Broken connections dropped instead of returned.
    discarded: Cell<u64>,
}

impl<M: Manage> fmt::Debug for Pool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("connect", &self.inner.config.manager)
            .field("max_size", &self.inner.config.max_size)
            .field("idle", &self.idle())
            .field("in_use", &self.in_use())
            .finish()
    }
}

impl<M: Manage> Pool<M> {
    /// A pool of this thread's own (not the one [`PoolConfig::pool`]
    /// shares).
    pub fn new(config: PoolConfig<M>) -> Pool<M> {
        Pool {
            inner: Rc::new(PoolInner {
                permits: Semaphore::new(config.max_size),
                config,
                idle: RefCell::new(Vec::new()),
                opened: Cell::new(0),
                discarded: Cell::new(0),
            }),
        }
    }

    /// Checks a connection out: an idle one, else a new one, else (at the
    /// maximum) the next one returned, waiting up to the checkout timeout.
    ///
    /// An idle connection is checked before it is handed out, without a
    /// round trip ([`Manage::idle_usable`]): one the server has closed
    /// meanwhile (a restart, its idle timeout), or one left from an earlier
    /// [`yieldloop::run`], is discarded and the next is tried.
    ///
    /// # Errors
    ///
    /// [`Manage::checkout_timed_out`]'s error when the wait runs out; the
    /// connect's error when a new connection fails (the place it took is
    /// freed).
    ///
    /// # Panics
    ///
    /// Outside a task.
    pub fn get(&self) -> Result<Pooled<M>, M::Error> {
        let inner = &self.inner;
        let config = &inner.config;
        let waited = match config.checkout_timeout {
            Some(limit) => yieldloop::timeout(limit, || inner.permits.acquire().forget()),
            None => {
                inner.permits.acquire().forget();
                Ok(())
            }
        };
        if waited.is_err() {
            return Err(config
                .manager
                .checkout_timed_out(config.checkout_timeout.unwrap_or_default(), config.max_size));
        }
        // From here the permit is ours: `Place` gives it back on every path
        // that does not end in a checked-out connection.
        let place = Place(Some(self.inner.clone()));
        // The most recently returned idle connection that is still usable;
        // the server may have closed some while they sat idle.
        let idle = loop {
            let next = inner.idle.borrow_mut().pop();
            match next {
                Some(conn) if !config.manager.idle_usable(&conn) => {
                    inner.discarded.set(inner.discarded.get() + 1);
                    config.manager.discard(conn);
                }
                next => break next,
            }
        };
        let conn = match idle {
            Some(conn) => conn,
            None => {
                let conn = config.manager.connect()?;
                inner.opened.set(inner.opened.get() + 1);
                conn
            }
        };
        Ok(Pooled {
            conn: Some(conn),
            place,
        })
    }

    /// Idle connections, ready for the next checkout.
    pub fn idle(&self) -> usize {
        self.inner.idle.borrow().len()
    }

    /// Connections checked out (or being opened) now.
    pub fn in_use(&self) -> usize {
        // Idle connections hold no permit: a permit is a checkout. Open
        // connections still never pass the maximum, since a new one is
        // opened only when none is idle.
        self.inner.config.max_size - self.inner.permits.available_permits()
    }

    /// Connections this pool has opened over its life.
    pub fn opened(&self) -> u64 {
        self.inner.opened.get()
    }

    /// Connections it has discarded instead of reusing: broken on return,
    /// or found unusable at checkout.
    pub fn discarded(&self) -> u64 {
        self.inner.discarded.get()
    }

    /// The configuration it was made from.
    pub fn config(&self) -> &PoolConfig<M> {
        &self.inner.config
    }
}

/// A place in the pool: one permit, released on drop.
struct Place<M: Manage>(Option<Rc<PoolInner<M>>>);

impl<M: Manage> Drop for Place<M> {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.permits.release();
        }
    }
}

/// A connection checked out of a [`Pool`]; it dereferences to the
/// connection and goes back when dropped, unless it is broken.
pub struct Pooled<M: Manage> {
    conn: Option<M::Conn>,
    // Dropped after `conn` is dealt with (see `Drop`).
    place: Place<M>,
}

impl<M: Manage> fmt::Debug for Pooled<M>
where
    M::Conn: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pooled").field(&self.conn).finish()
    }
}

impl<M: Manage> Deref for Pooled<M> {
    type Target = M::Conn;

    fn deref(&self) -> &M::Conn {
        self.conn.as_ref().expect("present until drop")
    }
}

impl<M: Manage> DerefMut for Pooled<M> {
    fn deref_mut(&mut self) -> &mut M::Conn {
        self.conn.as_mut().expect("present until drop")
    }
}

impl<M: Manage> Drop for Pooled<M> {
    fn drop(&mut self) {
        let (Some(conn), Some(inner)) = (self.conn.take(), self.place.0.as_ref()) else {
            return;
        };
        let manager = &inner.config.manager;
        if manager.is_broken(&conn) {
            inner.discarded.set(inner.discarded.get() + 1);
            manager.discard(conn);
        } else {
            inner.idle.borrow_mut().push(conn);
        }
        // `place` drops next and frees the permit, waking a waiting checkout.
    }
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
