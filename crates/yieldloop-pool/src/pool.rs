//! [`Pool`]: the places, the idle connections and the counts, and the
//! checkout that hands them out.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use yieldloop::sync::Semaphore;

use crate::pooled::{Place, Pooled, Slot};
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

/// What the handles of one pool share.
pub(crate) struct Inner<M: Manage> {
    pub(crate) config: PoolConfig<M>,
    /// One permit per place in the pool. A checkout holds one from the end
    /// of its wait until its connection is back in `idle` or closed. The
    /// semaphore is yieldloop's cross-thread one: waiters are tasks of any
    /// scheduler (which pause) and plain threads (which block), served in
    /// the order they came, and a permit handed to a waiter that is
    /// unwound meanwhile goes on to the next.
    places: Semaphore,
    /// A std mutex, not a task-aware one: it is held for a few field
    /// updates, never across a connect, a check, a discard or a pause.
    state: Mutex<State<M::Conn>>,
}

/// The pool's connections and counts.
pub(crate) struct State<C> {
    /// Idle connections in the order they came back: the most recent last,
    /// and handed out first (the others age, and an idle timeout closes
    /// them).
    idle: VecDeque<Idle<C>>,
    /// Connections open: idle, handed out, or being checked.
    ///
    /// # Invariant
    /// At most `max_size`. A connection is opened only by a checkout that
    /// holds a place and found no idle one, and a returned connection
    /// joins `idle` before its place is freed: so idle connections plus
    /// checkouts never exceed the places.
    live: usize,
    opened: u64,
    /// Every connection closed, for any reason.
    closed: u64,
    /// Those of `closed` that were broken, failed a check, or were held by
    /// a task that panicked.
    discarded: u64,
    /// Whether a reaper task watches this pool (see `reaper`).
    pub(crate) reaper: bool,
}

/// An idle connection and since when.
struct Idle<C> {
    slot: Slot<C>,
    since: Instant,
}

/// Why a connection is closed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Broken, failed its check or `idle_usable`, or held in a panic.
    Discarded,
    /// Past its idle timeout or its lifetime.
    Expired,
}

impl<C> State<C> {
    /// Counts one connection closed.
    fn count_closed(&mut self, why: Why) {
        self.live -= 1;
        self.closed += 1;
        if why == Why::Discarded {
            self.discarded += 1;
        }
    }

    /// Takes out (and counts as closed) the idle connections whose idle
    /// timeout or lifetime has passed at `now`, to be discarded once the
    /// lock is released.
    fn take_expired<M>(&mut self, now: Instant, config: &PoolConfig<M>) -> Vec<C> {
        let mut expired = Vec::new();
        let mut i = 0;
        while i < self.idle.len() {
            // A deadline `<= now` has passed.
            if expiry(&self.idle[i], config).is_some_and(|at| at <= now) {
                let idle = self.idle.remove(i).expect("in range");
                expired.push(idle.slot.conn);
                self.count_closed(Why::Expired);
            } else {
                i += 1;
            }
        }
        expired
    }
}

/// When an idle connection is to be closed: the earlier of its idle
/// timeout and its lifetime, if either is set.
fn expiry<C, M>(idle: &Idle<C>, config: &PoolConfig<M>) -> Option<Instant> {
    let idle_end = config.idle_timeout.map(|t| idle.since + t);
    let life_end = config.max_lifetime.map(|t| idle.slot.born + t);
    idle_end.into_iter().chain(life_end).min()
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

impl<M: Manage> Inner<M> {
    /// Locks the state. Nothing panics while it is held (no code of the
    /// client runs under it), so a poisoned lock is still consistent.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<M::Conn>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `limit` for a place (`None`: as long as it takes).
    pub(crate) fn take_place(&self, limit: Option<Duration>) -> Result<(), M::Error> {
        match limit {
            None => self.places.acquire().forget(),
            Some(limit) => match self.places.acquire_timeout(limit) {
                Some(permit) => permit.forget(),
                None => {
                    let timeout = crate::CheckoutTimeout::new(limit, self.config.max_size);
                    return Err(self.config.manager.checkout_timed_out(timeout));
                }
            },
        }
        Ok(())
    }

    /// Frees a place taken with `take_place`: it goes to the longest
    /// waiter, if any.
    pub(crate) fn free_place(&self) {
        self.places.release();
    }

    /// The most recently returned idle connection, closing on the way the
    /// idle ones that have expired.
    fn pop_idle(&self) -> Option<Idle<M::Conn>> {
        let now = yieldloop::now();
        let (expired, next) = {
            let mut st = self.lock();
            let expired = st.take_expired(now, &self.config);
            (expired, st.idle.pop_back())
        };
        self.discard_all(expired);
        next
    }

    /// Counts a connection just opened; starts a reaper if the pool closes
    /// idle connections and none runs.
    fn count_opened(self: &Arc<Self>) {
        let expiring = self.config.idle_timeout.is_some() || self.config.max_lifetime.is_some();
        let start = {
            let mut st = self.lock();
            st.live += 1;
            st.opened += 1;
            let start = expiring && !st.reaper && yieldloop::current_id().is_some();
            st.reaper |= start;
            start
        };
        if start {
            reaper::start(self);
        }
    }

    /// Takes a connection back from a checkout: into `idle`, or closed if
    /// it has outlived its lifetime meanwhile.
    pub(crate) fn put_back(&self, slot: Slot<M::Conn>) {
        let now = yieldloop::now();
        // A deadline `<= now` has passed.
        let too_old = (self.config.max_lifetime).is_some_and(|t| slot.born + t <= now);
        if too_old {
            self.close(slot.conn, Why::Expired);
        } else {
            self.lock().idle.push_back(Idle { slot, since: now });
        }
    }

    /// Closes one open connection.
    pub(crate) fn close(&self, conn: M::Conn, why: Why) {
        self.lock().count_closed(why);
        self.config.manager.discard(conn);
    }

    /// Hands connections already counted as closed to `discard`.
    fn discard_all(&self, conns: Vec<M::Conn>) {
        for conn in conns {
            self.config.manager.discard(conn);
        }
    }

    /// Closes the idle connections that have expired, for the reaper, and
    /// says when to look again: the next expiry of an idle connection, or
    /// (none idle) one idle timeout or lifetime from now, whichever is
    /// shorter. `None`, with the reaper marked stopped, once the pool has
    /// no connection left: the next connect starts a new reaper.
    pub(crate) fn reap(&self) -> Option<Instant> {
        let now = yieldloop::now();
        let (expired, next) = {
            let mut st = self.lock();
            let expired = st.take_expired(now, &self.config);
            let next = if st.live == 0 {
                st.reaper = false;
                None
            } else {
                let period = (self.config.idle_timeout.into_iter())
                    .chain(self.config.max_lifetime)
                    .min()
                    .unwrap_or(Duration::from_secs(60));
                let soonest = st.idle.iter().filter_map(|i| expiry(i, &self.config)).min();
                Some(soonest.unwrap_or(now + period))
            };
            (expired, next)
        };
        self.discard_all(expired);
        next
    }
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
        inner.count_opened();
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
