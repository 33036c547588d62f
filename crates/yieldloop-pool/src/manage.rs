//! [`Manage`]: what a pool needs to know about its connections, and
//! [`CheckoutTimeout`], the error of a checkout that waited too long.

use std::error::Error;
use std::fmt;
use std::io;
use std::time::Duration;

/// What a [`Pool`](crate::Pool) needs to know about its connections: how to
/// open one, how to tell that one is broken, how to check one that sat
/// idle, and the error for a checkout that waited too long. (deadpool calls
/// it `Manager`, r2d2 `ManageConnection`.)
///
/// The database crates implement it on their connect options, so that
/// `PoolConfig::new(options)` makes a pool of that client's connections.
///
/// The pool calls these methods with no lock held: a connect or a check may
/// take a round trip, and pauses only the calling task (or blocks the
/// calling plain thread).
pub trait Manage: Clone + fmt::Debug + 'static {
    /// The connection type handed out. When it is `Send` (a `std` socket
    /// inside, say), the pool is `Send` and `Sync` and may be shared by
    /// every worker of a [`Runtime`](yieldloop::Runtime) and plain threads;
    /// when it is not (a yieldloop socket, registered with one thread's
    /// reactor), the pool stays on its thread.
    type Conn;
    /// The error of a connect, and of a checkout that waited too long.
    type Error;

    /// Opens a new connection. From a task it may pause the task; from a
    /// plain thread it blocks.
    fn connect(&self) -> Result<Self::Conn, Self::Error>;

    /// Whether `conn` can no longer be used (an earlier call failed or was
    /// interrupted part-way, or the server closed it): such a connection is
    /// closed instead of going back to the pool.
    fn is_broken(&self, conn: &Self::Conn) -> bool;

    /// Whether an idle connection may be handed out, asked at each checkout
    /// before anything else: one the server closed while it sat in the
    /// pool, or one left from an earlier [`yieldloop::run`] on the same
    /// thread, is closed and the next one tried. It must be cheap (no round
    /// trip); [`check`](Self::check) is the one that may wait for the
    /// server. The default asks [`is_broken`](Self::is_broken).
    fn idle_usable(&self, conn: &Self::Conn) -> bool {
        !self.is_broken(conn)
    }

    /// A health check that may take a round trip (a `PING`, a `SELECT 1`),
    /// run at checkout on a connection that has been idle for at least
    /// [`PoolConfig::check_after_idle`](crate::PoolConfig::check_after_idle).
    /// An error closes the connection and the checkout goes on with the
    /// next idle one, or a new one; the error itself is not reported. (r2d2
    /// and bb8 call it `is_valid`, deadpool `recycle`.) The default does
    /// nothing.
    fn check(&self, conn: &mut Self::Conn) -> Result<(), Self::Error> {
        let _ = conn;
        Ok(())
    }

    /// The error [`Pool::get`](crate::Pool::get) returns when no connection
    /// came free in time. Clients whose error wraps an [`io::Error`] can
    /// convert: `io::Error::from(timeout)` is of kind
    /// [`TimedOut`](io::ErrorKind::TimedOut) and carries `timeout` as its
    /// inner error.
    fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> Self::Error;

    /// Disposes of a connection the pool closes: broken, failed its check,
    /// past its idle timeout or lifetime, or held by a task that panicked.
    /// The default drops it; a client can do more (ask the server to cancel
    /// a query left running).
    ///
    /// It may run in a destructor, while a task unwinds: it must not pause.
    fn discard(&self, conn: Self::Conn) {
        drop(conn);
    }
}

/// A checkout that found no connection free within its time limit: how
/// long it waited, and the pool's size, every connection of which was in
/// use.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop_pool::CheckoutTimeout;
///
/// let t = CheckoutTimeout::new(Duration::from_millis(250), 4);
/// assert_eq!(t.to_string(), "no connection came free within 250ms (all 4 in use)");
/// let e = std::io::Error::from(t);
/// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
/// assert_eq!(e.into_inner().unwrap().downcast::<CheckoutTimeout>().unwrap().max_size(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckoutTimeout {
    waited: Duration,
    max_size: usize,
}

impl CheckoutTimeout {
    /// A timeout after waiting `waited` in a pool of at most `max_size`.
    pub fn new(waited: Duration, max_size: usize) -> CheckoutTimeout {
        CheckoutTimeout { waited, max_size }
    }

    /// How long the checkout waited.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The pool's maximum size: that many connections were in use.
    pub fn max_size(&self) -> usize {
        self.max_size
    }
}

impl fmt::Display for CheckoutTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no connection came free within {:?} (all {} in use)",
            self.waited, self.max_size
        )
    }
}

impl Error for CheckoutTimeout {}

impl From<CheckoutTimeout> for io::Error {
    fn from(t: CheckoutTimeout) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, t)
    }
}
