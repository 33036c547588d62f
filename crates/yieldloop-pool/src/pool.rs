//! [`Pool`]: the places, the idle connections and the counts, and the
//! checkout that hands them out.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use yieldloop::sync::Semaphore;

use crate::inner::Slot;
use crate::inner::{Inner, State, Why};
use crate::pooled::{Place, Pooled};
use crate::{reaper, Manage, PoolConfig};

/// A pool of connections. Clones share it.
///
/// [`get`](Self::get) hands out an idle connection, or opens one while
/// fewer than the maximum are open, or waits (a task pauses, a plain thread
/// blocks) until another checkout gives one back, first come first served.
/// A connection goes back when its [`Pooled`] guard is dropped, unless it
/// is broken, past its lifetime, or its holder is panicking: then it is
/// closed and its place freed.
///
/// `Send` and `Sync` when the connections are `Send` (and the [`Manage`]
/// value is `Send` and `Sync`): then tasks on every worker of a
/// [`Runtime`](yieldloop::Runtime) and plain threads share one pool. A
/// pool of connections that belong to their thread (yieldloop's own
/// sockets) cannot leave it:
///
/// ```compile_fail
/// # use yieldloop_pool::{Manage, CheckoutTimeout, PoolConfig};
/// # #[derive(Clone, Debug)]
/// # struct Options;
/// # impl Manage for Options {
/// #     type Conn = yieldloop::net::TcpStream;
/// #     type Error = std::io::Error;
/// #     fn connect(&self) -> std::io::Result<Self::Conn> { unimplemented!() }
/// #     fn is_broken(&self, _: &Self::Conn) -> bool { false }
/// #     fn checkout_timed_out(&self, t: CheckoutTimeout) -> std::io::Error { t.into() }
/// # }
/// let pool = PoolConfig::new(Options).pool();
/// std::thread::spawn(move || drop(pool)); // a yieldloop socket is not Send
/// ```
pub struct Pool<M: Manage> {
    pub(crate) inner: Arc<Inner<M>>,
}

impl<M: Manage> Clone for Pool<M> {
    fn clone(&self) -> Pool<M> {
        Pool {
            inner: self.inner.clone(),
        }
    }
}

/// The state of a pool at one moment, from [`Pool::status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The most connections the pool keeps open.
    pub max_size: usize,
    /// Connections open now: `idle + in_use`.
    pub size: usize,
    /// Open and idle, ready for the next checkout.
    pub idle: usize,
    /// Open and checked out (or being checked before a checkout).
    pub in_use: usize,
    /// Checkouts waiting for a place.
    pub waiting: usize,
    /// Connections opened over the pool's life.
    pub opened: u64,
    /// Connections closed over the pool's life, for any reason.
    pub closed: u64,
    /// Those of `closed` that were broken, failed a check, or were held by
    /// a task that panicked (the rest expired).
    pub discarded: u64,
}

impl<M: Manage> Pool<M> {
    /// A new pool with this configuration (the same as
    /// [`PoolConfig::build`]; not the one [`PoolConfig::pool`] keeps for
    /// the thread).
    pub fn new(config: PoolConfig<M>) -> Pool<M> {
        Pool {
            inner: Arc::new(Inner {
                places: Semaphore::new(config.max_size),
                config,
                state: Mutex::new(State {
                    idle: VecDeque::new(),
                    live: 0,
                    opened: 0,
                    closed: 0,
                    discarded: 0,
                    reaper: false,
                }),
            }),
        }
    }

    /// Checks a connection out: an idle one, else a new one, else (at the
    /// maximum) the next one given back, waiting up to the configuration's
    /// checkout timeout. From a task only the task waits; a plain thread
    /// blocks.
    ///
    /// An idle connection goes through three checks before it is handed
    /// out, and is closed (and the next tried) if it fails one: its idle
    /// timeout or lifetime has passed; [`Manage::idle_usable`] says no (a
    /// cheap look at the socket: the server closed it, or it is left from
    /// an earlier [`yieldloop::run`]); it has been idle for at least
    /// [`PoolConfig::check_after_idle`] and [`Manage::check`] fails (a
    /// round trip). The waits of a connect or a check are not part of the
    /// checkout timeout.
    ///
    /// # Errors
    ///
    /// [`Manage::checkout_timed_out`]'s error when no place came free in
    /// time; the connect's error when a new connection fails (the place it
    /// took is freed).
    ///
    /// # Panics
    ///
    /// In a task that is unwinding, if it has to wait.
    pub fn get(&self) -> Result<Pooled<M>, M::Error> {
        self.get_timeout(self.inner.config.checkout_timeout)
    }

    /// [`get`](Self::get) with a checkout timeout of its own (`None`: wait
    /// as long as it takes).
    ///
    /// # Errors
    ///
    /// As for `get`.
    ///
    /// # Panics
    ///
    /// As for `get`.
    pub fn get_timeout(&self, limit: Option<Duration>) -> Result<Pooled<M>, M::Error> {
        let inner = &self.inner;
        let manager = &inner.config.manager;
        // From here the place is ours: `out` frees it on every path that
        // does not end in a checked-out connection (an error, a panic in
        // the client's code, an unwind out of a connect or a check).
        inner.take_place(limit)?;
        let mut out = Pooled::new(Place::new(inner.clone()));
        while let Some(idle) = inner.pop_idle() {
            let usable = manager.idle_usable(&idle.slot.conn);
            let stale = (inner.config.check_after_idle)
                .is_some_and(|d| yieldloop::now().saturating_duration_since(idle.since) >= d);
            let conn = out.fill(idle.slot);
            if usable && (!stale || manager.check(conn).is_ok()) {
                return Ok(out);
            }
            out.close(Why::Discarded);
        }
        let conn = manager.connect()?;
        if inner.count_opened() {
            reaper::start(inner);
        }
        out.fill(Slot::new(conn));
        Ok(out)
    }

    /// The pool's sizes and counts now.
    pub fn status(&self) -> Status {
        let waiting = self.inner.places.waiting();
        let st = self.inner.lock();
        Status {
            max_size: self.inner.config.max_size,
            size: st.live,
            idle: st.idle.len(),
            in_use: st.live - st.idle.len(),
            waiting,
            opened: st.opened,
            closed: st.closed,
            discarded: st.discarded,
        }
    }

    /// Idle connections, ready for the next checkout.
    pub fn idle(&self) -> usize {
        self.status().idle
    }

    /// Connections checked out now (or being checked before a checkout).
    pub fn in_use(&self) -> usize {
        self.status().in_use
    }

    /// Connections this pool has opened over its life.
    pub fn opened(&self) -> u64 {
        self.status().opened
    }

    /// Connections it has closed over its life, for any reason.
    pub fn closed(&self) -> u64 {
        self.status().closed
    }

    /// Connections it has closed because they could not be reused: broken
    /// when given back, unusable or failing their check at checkout, or
    /// held by a task that panicked.
    pub fn discarded(&self) -> u64 {
        self.status().discarded
    }

    /// The configuration it was made from.
    pub fn config(&self) -> &PoolConfig<M> {
        &self.inner.config
    }
}

impl<M: Manage> fmt::Debug for Pool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("connect", &self.inner.config.manager)
            .field("status", &self.status())
            .finish()
    }
}
