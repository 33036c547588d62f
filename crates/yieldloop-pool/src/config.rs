//! [`PoolConfig`]: how a pool is made, and the per-thread pools of
//! [`PoolConfig::pool`].

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{Manage, Pool};

/// How a pool is made: the [`Manage`] value (the connect options), the most
/// connections it keeps open, how long a checkout waits, when idle
/// connections are checked, and when they are closed.
///
/// [`build`](Self::build) makes one pool, shared by its clones (across
/// threads when the connections are `Send`); [`pool`](Self::pool) gives
/// each thread a pool of its own, for connections that belong to a thread.
/// The configuration is `Send` and `Sync` when its [`Manage`] type is: one
/// value shared by every worker.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// # use yieldloop_pool::{Manage, CheckoutTimeout};
/// # #[derive(Clone, Debug)]
/// # struct Options;
/// # impl Manage for Options {
/// #     type Conn = ();
/// #     type Error = std::io::Error;
/// #     fn connect(&self) -> std::io::Result<()> { Ok(()) }
/// #     fn is_broken(&self, _: &()) -> bool { false }
/// #     fn checkout_timed_out(&self, t: CheckoutTimeout) -> std::io::Error { t.into() }
/// # }
/// use yieldloop_pool::PoolConfig;
///
/// let pool = PoolConfig::new(Options)
///     .max_size(8)
///     .checkout_timeout(Some(Duration::from_secs(5)))
///     .check_after_idle(Some(Duration::from_secs(30)))
///     .idle_timeout(Some(Duration::from_secs(600)))
///     .max_lifetime(Some(Duration::from_secs(1800)))
///     .build();
/// assert_eq!(pool.status().max_size, 8);
/// ```
#[derive(Clone, Debug)]
pub struct PoolConfig<M> {
    pub(crate) manager: M,
    pub(crate) max_size: usize,
    pub(crate) checkout_timeout: Option<Duration>,
    pub(crate) check_after_idle: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) max_lifetime: Option<Duration>,
    /// Clones share it, and so share each thread's pool.
    id: u64,
}

impl<M: Manage> PoolConfig<M> {
    /// A configuration with at most 16 connections, a checkout that waits
    /// up to 30 seconds, a health check on connections idle for a minute
    /// or more, and no idle timeout or lifetime limit.
    pub fn new(manager: M) -> PoolConfig<M> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        PoolConfig {
            manager,
            max_size: 16,
            checkout_timeout: Some(Duration::from_secs(30)),
            check_after_idle: Some(Duration::from_secs(60)),
            idle_timeout: None,
            max_lifetime: None,
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
    /// waits as long as it takes. The wait is for a place in the pool: a
    /// connect that follows is bounded by the client's own connect timeout.
    pub fn checkout_timeout(mut self, limit: Option<Duration>) -> PoolConfig<M> {
        self.checkout_timeout = limit;
        self
    }

    /// A connection idle for at least this long is checked with
    /// [`Manage::check`] before it is handed out; `Some(Duration::ZERO)`
    /// checks at every checkout, `None` never.
    pub fn check_after_idle(mut self, idle: Option<Duration>) -> PoolConfig<M> {
        self.check_after_idle = idle;
        self
    }

    /// A connection idle for this long is closed; `None` keeps idle
    /// connections open.
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> PoolConfig<M> {
        self.idle_timeout = limit;
        self
    }

    /// A connection open for this long is closed when it is next idle (one
    /// in use is never taken from its task); `None` sets no limit.
    pub fn max_lifetime(mut self, limit: Option<Duration>) -> PoolConfig<M> {
        self.max_lifetime = limit;
        self
    }

    /// The connect options (the [`Manage`] value).
    pub fn manager(&self) -> &M {
        &self.manager
    }

    /// A new pool with this configuration: the same as
    /// [`Pool::new`](Pool::new). Its clones share it; it may cross threads
    /// when the connections are `Send`.
    pub fn build(&self) -> Pool<M> {
        Pool::new(self.clone())
    }

    /// This thread's pool for this configuration (and its clones), made on
    /// first use and kept for the thread's life: one pool per worker, for
    /// connections that belong to the thread that opened them.
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
                .or_insert_with(|| Box::new(self.build()))
                .downcast_ref::<Pool<M>>()
                .expect("one id, one pool type")
                .clone()
        })
    }
}
