//! A PostgreSQL client for tasks: tokio-postgres on yieldloop's own
//! reactor, in straight-line code, with a per-worker pool.
//!
//! tokio-postgres is an async crate, but the only part of tokio its
//! protocol needs is the `AsyncRead`/`AsyncWrite` traits, which yieldloop's
//! [`TcpStream`] implements (the `tokio` feature). So [`PgClient::connect`]
//! opens a yieldloop socket and hands it to tokio-postgres's
//! [`Config::connect_raw`]; the background [`Connection`] future that
//! tokio-postgres returns is driven by a task of its own
//! ([`yieldloop::spawn_future`]), and each call runs its future with
//! [`yieldloop::block_on`]. While a call waits, its own task polls the
//! connection too, and takes the connection's wake-ups from the driver
//! task: a round trip is then one pause of the calling task, not three
//! task switches (call, driver, driver). A query that waits for the server
//! pauses only the calling task: other tasks of the thread (other queries
//! on the same or other connections, a server's other requests) keep
//! running. No tokio runtime exists anywhere on this path.
//!
//! [`PgClient`] has the usual calls in blocking style: [`query`],
//! [`query_one`], [`query_opt`], [`execute`], [`batch_execute`],
//! [`prepare`] (its [`Statement`] goes wherever a query string does) and
//! [`transaction`]. Parameters and columns use tokio-postgres's types
//! ([`ToSql`] and [`FromSql`]): integers, floats, `bool`, `String`/`&str`,
//! `Vec<u8>`/`&[u8]` for `bytea`, [`SystemTime`](std::time::SystemTime)
//! for `timestamp`/`timestamptz`, `Option<T>` for NULL. The whole async API
//! stays at hand through [`PgClient::client`] and `block_on`.
//!
//! [`Pool`] keeps connections for reuse, per worker thread (a client's
//! socket belongs to the thread that opened it): see [`crate::pool`], which
//! the Redis crate shares, for the checkout timeout, idle timeout, lifetime
//! limit and the `SELECT 1` check of clients that sat idle.
//!
//! [`query`]: PgClient::query
//! [`query_one`]: PgClient::query_one
//! [`query_opt`]: PgClient::query_opt
//! [`execute`]: PgClient::execute
//! [`batch_execute`]: PgClient::batch_execute
//! [`prepare`]: PgClient::prepare
//! [`transaction`]: PgClient::transaction
//! [`Config::connect_raw`]: tokio_postgres::Config::connect_raw
//! [`Connection`]: tokio_postgres::Connection
//! [`ToSql`]: tokio_postgres::types::ToSql
//! [`FromSql`]: tokio_postgres::types::FromSql
//!
//! # Failures
//!
//! Every call returns [`Error`]. A statement the server rejects (a syntax
//! error, a broken constraint) is an error for that call only, with the
//! server's SQLSTATE in [`Error::code`], and the connection stays usable.
//! A refused connection is [`Error::Connect`]; a connect or checkout that
//! runs out of time is [`Error::Timeout`].
//!
//! When the server goes away (it shuts down, or the session is ended with
//! `pg_terminate_backend`), the call in progress gets the server's `FATAL`
//! error or a "connection closed" error, [`Error::is_connection_lost`] says
//! so, and the client is broken: every later call fails at once with
//! [`Error::Unusable`] and the pool drops it.
//!
//! A call interrupted part-way, by a [`yieldloop::timeout`] around it or by
//! the task being cancelled, also breaks the client: its statement may
//! still be running on the server, and anything sent next would queue
//! behind it. When such a client is dropped (the pool drops it rather than
//! returning it), a task of its own asks the server to cancel what is
//! running, with tokio-postgres's cancel token sent over a new yieldloop
//! [`TcpStream`], and then the connection closes. A `timeout` of 100 ms
//! around `SELECT pg_sleep(5)` thus returns after 100 ms, the server stops
//! the sleep right after, and the next checkout gets a fresh connection.
//! Until the server has closed it, such a connection still counts at the
//! server but no longer in the pool, which may open a new one meanwhile.
//! To bound statements without losing the connection, let the server do
//! it: `statement_timeout` (see [`ConnectOptions::config_mut`]) ends a slow
//! statement with an error, and the client goes on.
//!
//! Not covered: TLS (connect through a TLS tunnel, or use
//! `tokio-postgres`'s TLS crates with `connect_raw` by hand), Unix sockets,
//! several hosts. `LISTEN`/`NOTIFY` messages are not delivered.
//!
//! # Examples
//!
//! ```no_run
//! use yieldloop_postgres::{ConnectOptions, Error, PoolConfig};
//!
//! yieldloop::run(|| -> Result<(), Error> {
//!     let opts = ConnectOptions::new("127.0.0.1:5432")
//!         .user("postgres")
//!         .dbname("postgres");
//!     let pool = PoolConfig::new(opts).max_size(8).pool();
//!     pool.get()?.batch_execute(
//!         "CREATE TEMP TABLE IF NOT EXISTS visits (n int); TRUNCATE visits",
//!     )?;
//!     let mut tasks = Vec::new();
//!     for n in 0..100 {
//!         let pool = pool.clone();
//!         tasks.push(yieldloop::spawn(move || -> Result<u64, Error> {
//!             // Only this task waits for the server.
//!             let client = pool.get()?;
//!             let row = client.query_one("SELECT $1::int * 2", &[&n])?;
//!             let double: i32 = row.get(0);
//!             Ok(double as u64)
//!         }));
//!     }
//!     let mut sum = 0;
//!     for task in tasks {
//!         sum += task.join().unwrap()?;
//!     }
//!     assert_eq!(sum, (0..100).map(|n| 2 * n).sum::<u64>());
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! The `pg_visits` example program runs a variant of this against a real
//! server.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::error::{DbError, SqlState};
use tokio_postgres::types::ToSql;
use tokio_postgres::{CancelToken, Client, NoTls, Row, Statement, ToStatement};
use yieldloop::net::TcpStream;
use yieldloop::JoinHandle;

use yieldloop_pool as pool;

mod link;

use link::Link;

/// The tokio-postgres crate this recipe is built on, for its types
/// ([`types`](tokio_postgres::types), [`Row`], [`Statement`], errors).
pub use tokio_postgres;

/// How long the cancel request for an interrupted call may take before it
/// is given up (the connection closes either way).
const CANCEL_LIMIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// Where and how to connect: the address, user, password, database and a
/// time limit for the connect.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop_postgres::ConnectOptions;
///
/// let opts = ConnectOptions::new("127.0.0.1:5432")
///     .user("app")
///     .password("s3cret")
///     .dbname("shop")
///     .connect_timeout(Duration::from_secs(2));
/// assert_eq!(opts.addr(), "127.0.0.1:5432");
///
/// // libpq's key=value strings and postgresql:// URLs work too.
/// let parsed: ConnectOptions = "host=127.0.0.1 port=5433 user=app dbname=shop connect_timeout=2"
///     .parse()
///     .unwrap();
/// assert_eq!(parsed.addr(), "127.0.0.1:5433");
/// let url: ConnectOptions = "postgresql://app:s3cret@127.0.0.1/shop".parse().unwrap();
/// assert_eq!(url.addr(), "127.0.0.1:5432");
/// ```
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    addr: String,
    // Its `Debug` hides the password.
    config: tokio_postgres::Config,
    connect_timeout: Option<Duration>,
}

impl ConnectOptions {
    /// Options for the server at `addr` (`"host:port"`; a host name is
    /// looked up on the blocking pool), with no user (set one: the server
    /// needs it), no password, the user's own database and no time limit.
    pub fn new(addr: impl Into<String>) -> ConnectOptions {
        ConnectOptions {
            addr: addr.into(),
            config: tokio_postgres::Config::new(),
            connect_timeout: None,
        }
    }

    /// The user to log in as.
    pub fn user(mut self, user: impl Into<String>) -> ConnectOptions {
        self.config.user(user.into());
        self
    }

    /// The password, for `password`, `md5` or `scram-sha-256`
    /// authentication.
    pub fn password(mut self, password: impl AsRef<[u8]>) -> ConnectOptions {
        self.config.password(password);
        self
    }

    /// The database; by default the server picks the one named after the
    /// user.
    pub fn dbname(mut self, dbname: impl Into<String>) -> ConnectOptions {
        self.config.dbname(dbname.into());
        self
    }

    /// The name `pg_stat_activity` shows for the session.
    pub fn application_name(mut self, name: impl Into<String>) -> ConnectOptions {
        self.config.application_name(name.into());
        self
    }

    /// The most the connect may take: the name lookup, the TCP connect and
    /// the start-up (authentication included) together.
    pub fn connect_timeout(mut self, limit: Duration) -> ConnectOptions {
        self.connect_timeout = Some(limit);
        self
    }

    /// The `host:port` connected to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The tokio-postgres configuration sent at start-up (user, database,
    /// password, options), for settings these methods do not cover. For
    /// example a limit the server itself enforces on every statement,
    /// which ends a slow one with an error and keeps the connection
    /// (unlike a [`yieldloop::timeout`] around the call, which breaks it):
    ///
    /// ```
    /// use yieldloop_postgres::ConnectOptions;
    ///
    /// let mut opts = ConnectOptions::new("127.0.0.1:5432").user("app");
    /// opts.config_mut().options("-c statement_timeout=5s");
    /// ```
    pub fn config_mut(&mut self) -> &mut tokio_postgres::Config {
        &mut self.config
    }
}

/// Parses a libpq-style `key=value` string (`host=... port=... user=...
/// password=... dbname=... connect_timeout=...`) or a `postgresql://` URL,
/// as tokio-postgres does. Only the first TCP host is used; the port
/// defaults to 5432.
impl FromStr for ConnectOptions {
    type Err = Error;

    fn from_str(s: &str) -> Result<ConnectOptions, Error> {
        let config = tokio_postgres::Config::from_str(s).map_err(Error::Postgres)?;
        let host = config
            .get_hosts()
            .iter()
            .find_map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => Some(name.clone()),
                #[allow(unreachable_patterns)]
                _ => None,
            })
            .unwrap_or_else(|| "127.0.0.1".to_string());
        let port = config.get_ports().first().copied().unwrap_or(5432);
        // An IPv6 literal needs brackets before the port.
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(ConnectOptions {
            addr,
            connect_timeout: config.get_connect_timeout().copied(),
            config,
        })
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// What went wrong in a call.
///
/// A type of its own rather than tokio-postgres's error, because callers
/// need to tell cases apart that the latter cannot carry: the connect
/// refused (an `io::Error`), a time limit of this recipe's, and a client
/// already unusable, beside the server's errors with their SQLSTATE.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The TCP connect failed: refused, unreachable, the name not found.
    Connect(io::Error),
    /// A time limit ran out: the connect's, or a pool checkout's.
    Timeout(String),
    /// tokio-postgres's error for this call: the server's error for the
    /// statement ([`Error::as_db_error`], [`Error::code`]), a failed
    /// start-up, a value that does not convert, or the connection closing
    /// under the call.
    Postgres(tokio_postgres::Error),
    /// The client was not used: the server closed the connection, or an
    /// earlier call was interrupted part-way.
    Unusable(String),
}

impl Error {
    /// The server's error, when the server refused the statement (or the
    /// session).
    pub fn as_db_error(&self) -> Option<&DbError> {
        match self {
            Error::Postgres(e) => e.as_db_error(),
            _ => None,
        }
    }

    /// The server's SQLSTATE code (for example
    /// [`SqlState::UNIQUE_VIOLATION`] or [`SqlState::SYNTAX_ERROR`]).
    pub fn code(&self) -> Option<&SqlState> {
        match self {
            Error::Postgres(e) => e.code(),
            _ => None,
        }
    }

    /// Whether the connection is gone: the server ended the session (a
    /// `FATAL` error), the socket closed or failed (a reset, say, from a
    /// server process that was killed), or the client was already
    /// unusable.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            Error::Postgres(e) => fatal(e),
            Error::Unusable(_) => true,
            _ => false,
        }
    }

    /// Whether a time limit ran out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connect(e) => write!(f, "cannot connect to PostgreSQL: {e}"),
            Error::Timeout(what) => f.write_str(what),
            // tokio-postgres's `Display` of a server error leaves out the
            // message ("db error"): its source has it.
            Error::Postgres(e) => match e.as_db_error() {
                Some(db) => write!(
                    f,
                    "{}: {} ({})",
                    db.severity(),
                    db.message(),
                    db.code().code()
                ),
                None => write!(f, "{e}"),
            },
            Error::Unusable(why) => write!(f, "PostgreSQL connection unusable: {why}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connect(e) => Some(e),
            Error::Postgres(e) => Some(e),
            _ => None,
        }
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Error {
        Error::Postgres(e)
    }
}

/// Whether `e` means the session is over.
fn fatal(e: &tokio_postgres::Error) -> bool {
    use std::error::Error as _;
    use std::io::ErrorKind::*;
    e.is_closed()
        // The socket failed under the session (a reset from a backend
        // that was killed, say): tokio-postgres's connection ends with it.
        // (Not every I/O error is that: a statement that cannot be encoded,
        // with a NUL byte in its text, is an `InvalidInput` one, and the
        // session goes on.)
        || e.source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .is_some_and(|io| {
                matches!(
                    io.kind(),
                    ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected | TimedOut
                )
            })
        || e.as_db_error()
            .is_some_and(|db| matches!(db.severity(), "FATAL" | "PANIC"))
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// One connection to a PostgreSQL server, usable from a task: every call
/// pauses the calling task, never the thread.
///
/// Calls take `&self`, so tasks sharing a client (through an `Rc`) have
/// their statements pipelined on the one connection. Like yieldloop's
/// sockets it belongs to the thread (and the [`yieldloop::run`]) that
/// opened it.
pub struct PgClient {
    client: Client,
    /// The task driving tokio-postgres's `Connection` while no call does;
    /// it ends by itself once the client is dropped and the server's last
    /// answers are in.
    driver: Option<JoinHandle<()>>,
    /// The connection, which a call's task drives while the call waits.
    link: Rc<Link>,
    peer: SocketAddr,
    /// A call unwound instead of returning (a timeout, a cancelled task):
    /// its statement may still be running.
    interrupted: Cell<bool>,
    /// A call saw the session end.
    dead: Cell<bool>,
    /// Inside [`transaction`](Self::transaction)'s closure: if that unwinds,
    /// the session is left in an open transaction.
    in_transaction: Cell<bool>,
}

impl fmt::Debug for PgClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgClient")
            .field("peer", &self.peer)
            .field("broken", &self.is_broken())
            .finish()
    }
}

impl PgClient {
    /// Connects and logs in as `opts` says.
    ///
    /// # Errors
    ///
    /// [`Error::Connect`] when the TCP connect fails (refused, no route,
    /// the name not found); [`Error::Timeout`] when the connect timeout
    /// runs out; [`Error::Postgres`] when the server refuses the start-up
    /// (a wrong password, an unknown database: see [`Error::code`]).
    ///
    /// # Panics
    ///
    /// Outside a task (the connection needs a task to drive it).
    pub fn connect(opts: &ConnectOptions) -> Result<PgClient, Error> {
        match opts.connect_timeout {
            Some(limit) => yieldloop::timeout(limit, || PgClient::connect_now(opts))
                .unwrap_or_else(|_| {
                    Err(Error::Timeout(format!(
                        "connecting to PostgreSQL at {} took longer than {limit:?}",
                        opts.addr
                    )))
                }),
            None => PgClient::connect_now(opts),
        }
    }

    fn connect_now(opts: &ConnectOptions) -> Result<PgClient, Error> {
        let stream = TcpStream::connect(opts.addr.as_str()).map_err(Error::Connect)?;
        stream.set_nodelay(true).map_err(Error::Connect)?;
        let peer = stream.peer_addr().map_err(Error::Connect)?;
        let (client, connection) = yieldloop::block_on(opts.config.connect_raw(stream, NoTls))?;
        let link = Link::new(connection);
        let driver = yieldloop::spawn_future(link.clone().drive());
        Ok(PgClient {
            client,
            driver: Some(driver),
            link,
            peer,
            interrupted: Cell::new(false),
            dead: Cell::new(false),
            in_transaction: Cell::new(false),
        })
    }

    /// Runs one call's future on this task, keeping the client's state.
    fn call<T>(
        &self,
        future: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Error> {
        if let Some(why) = self.unusable() {
            return Err(Error::Unusable(why));
        }
        // Set by the guard's drop, which only an unwind reaches: calls of
        // other tasks sharing the client may be in flight meanwhile.
        let unwound = Unwound(&self.interrupted);
        let future = std::pin::pin!(future);
        let result = yieldloop::block_on(self.link.drive_while(future));
        std::mem::forget(unwound);
        result.map_err(|e| {
            if fatal(&e) {
                self.dead.set(true);
            }
            Error::Postgres(e)
        })
    }

    /// Why no call may start now, if none may.
    fn unusable(&self) -> Option<String> {
        if self.dead.get() || self.client.is_closed() {
            let why = self.link.lost();
            return Some(why.unwrap_or_else(|| "the server ended the session".to_string()));
        }
        if self.interrupted() {
            return Some("an earlier call was interrupted part-way".to_string());
        }
        None
    }

    /// A call unwound without returning.
    fn interrupted(&self) -> bool {
        self.interrupted.get()
    }

    /// Whether this client can no longer be used: the server closed the
    /// connection, or a call (or a transaction) was interrupted part-way.
    /// The pool drops broken clients.
    pub fn is_broken(&self) -> bool {
        self.unusable().is_some() || self.in_transaction.get()
    }

    /// Runs a statement and returns its rows.
    ///
    /// `statement` is SQL text or a [`Statement`] from
    /// [`prepare`](Self::prepare); `params` fill `$1`, `$2`, ...
    ///
    /// # Errors
    ///
    /// The server's error for the statement (the client stays usable), a
    /// parameter that does not convert, or the connection lost.
    pub fn query<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.call(self.client.query(statement, params))
    }

    /// Runs a statement that returns exactly one row.
    ///
    /// # Errors
    ///
    /// As [`query`](Self::query), and an error when there is not exactly
    /// one row.
    pub fn query_one<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.call(self.client.query_one(statement, params))
    }

    /// Runs a statement that returns at most one row.
    ///
    /// # Errors
    ///
    /// As [`query`](Self::query), and an error when there is more than one
    /// row.
    pub fn query_opt<T>(
        &self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.call(self.client.query_opt(statement, params))
    }

    /// Runs a statement and returns how many rows it changed (for
    /// `INSERT`, `UPDATE`, `DELETE`, ...).
    ///
    /// # Errors
    ///
    /// As [`query`](Self::query).
    pub fn execute<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.call(self.client.execute(statement, params))
    }

    /// Runs one or more `;`-separated statements without parameters, with
    /// the simple query protocol (for DDL and scripts). Stops at the first
    /// statement that fails.
    ///
    /// # Errors
    ///
    /// The first statement's error; the client stays usable.
    pub fn batch_execute(&self, sql: &str) -> Result<(), Error> {
        self.call(self.client.batch_execute(sql))
    }

    /// Prepares a statement once, to run it many times with
    /// [`query`](Self::query) and the others without parsing it again.
    /// The statement belongs to this connection.
    ///
    /// # Errors
    ///
    /// The server's error for the SQL.
    pub fn prepare(&self, sql: &str) -> Result<Statement, Error> {
        self.call(self.client.prepare(sql))
    }

    /// Runs `f` in a transaction: `BEGIN`, then `COMMIT` if `f` returns
    /// `Ok`, or `ROLLBACK` if it returns `Err`. The result is `f`'s.
    ///
    /// If `f` unwinds (a panic, a timeout, the task cancelled), nothing is
    /// sent and the client is broken, so the pool never hands out a session
    /// left inside a transaction; closing it rolls the transaction back.
    ///
    /// # Errors
    ///
    /// `f`'s error, or the error of `BEGIN`, `COMMIT` (a deferred
    /// constraint, a serialization failure) or `ROLLBACK`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use yieldloop_postgres::{PgClient, Error};
    /// # fn transfer(client: &PgClient) -> Result<(), Error> {
    /// client.transaction(|tx| {
    ///     tx.execute("UPDATE accounts SET balance = balance - 10 WHERE id = $1", &[&1i32])?;
    ///     tx.execute("UPDATE accounts SET balance = balance + 10 WHERE id = $1", &[&2i32])?;
    ///     Ok::<_, Error>(())
    /// })
    /// # }
    /// ```
    pub fn transaction<T, E>(&self, f: impl FnOnce(&PgClient) -> Result<T, E>) -> Result<T, E>
    where
        E: From<Error>,
    {
        if self.in_transaction.get() {
            return Err(Error::Unusable(
                "a transaction is already open on this client (nested transactions need SAVEPOINT)"
                    .to_string(),
            )
            .into());
        }
        self.batch_execute("BEGIN")?;
        self.in_transaction.set(true);
        let result = f(self);
        self.in_transaction.set(false);
        match result {
            Ok(value) => {
                self.batch_execute("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                // `f`'s error is the one to report. A session the rollback
                // did not reach stays marked as inside a transaction, so
                // the pool drops it.
                if self.batch_execute("ROLLBACK").is_err() {
                    self.in_transaction.set(true);
                }
                Err(e)
            }
        }
    }

    /// Asks the server to cancel whatever statement this connection is
    /// running, over a connection of its own (tokio-postgres's cancel
    /// token on a yieldloop [`TcpStream`]); the cancelled call fails with
    /// SQLSTATE `57014` (`query_canceled`). Use it from another task.
    ///
    /// # Errors
    ///
    /// The connect or the write of the cancel request failed. Success says
    /// the request was sent, not that anything was running.
    pub fn cancel_query(&self) -> Result<(), Error> {
        send_cancel(self.peer, &self.client.cancel_token())
    }

    /// The tokio-postgres client, for the rest of its async API: run its
    /// futures with [`yieldloop::block_on`]. Calls made this way are not
    /// tracked: one interrupted part-way does not mark this client broken.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The server's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }
}

/// Marks its client interrupted when dropped: [`PgClient::call`] forgets it
/// on return, so only an unwind out of the call drops it.
struct Unwound<'a>(&'a Cell<bool>);

impl Drop for Unwound<'_> {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Sends a cancel request for `token`'s session to the server at `addr`.
fn send_cancel(addr: SocketAddr, token: &CancelToken) -> Result<(), Error> {
    let stream = TcpStream::connect(addr).map_err(Error::Connect)?;
    yieldloop::block_on(token.cancel_query_raw(stream, NoTls))?;
    Ok(())
}

impl Drop for PgClient {
    fn drop(&mut self) {
        // A call that was interrupted may have left a statement running (a
        // `pg_sleep(5)` under a 100 ms timeout). Closing the socket alone
        // would not stop it: the server notices a gone client only when it
        // next writes. So a task of its own sends the cancel request, and
        // the client (dropped right after this) lets the driver end once
        // the cancelled statement's error is in. Outside a task there is no
        // scheduler left to drive anything: the socket just closes.
        if !self.interrupted.get() || self.client.is_closed() || yieldloop::current_id().is_none() {
            return;
        }
        let token = self.client.cancel_token();
        let peer = self.peer;
        let driver = self.driver.take();
        yieldloop::spawn(move || {
            let sent = yieldloop::timeout(CANCEL_LIMIT, || send_cancel(peer, &token));
            if !matches!(sent, Ok(Ok(()))) {
                // The statement may run on; do not wait for its end to
                // close the connection.
                if let Some(driver) = driver {
                    driver.cancel();
                }
            }
        });
    }
}

// ---------------------------------------------------------------------------
// Pool
// ---------------------------------------------------------------------------

/// How a pool of PostgreSQL connections is made: the connect options, the
/// most connections it keeps open at once, and how long a checkout waits.
/// One configuration, shared by every worker; see [`crate::pool`].
pub type PoolConfig = pool::PoolConfig<ConnectOptions>;

/// A pool of [`PgClient`]s for the tasks of one thread. Clones share it.
pub type Pool = pool::Pool<ConnectOptions>;

/// A [`PgClient`] checked out of a [`Pool`]; it dereferences to the client
/// and goes back when dropped, unless it is broken.
pub type PooledClient = pool::Pooled<ConnectOptions>;

/// The pool opens [`PgClient`]s with these options.
impl pool::Manage for ConnectOptions {
    type Conn = PgClient;
    type Error = Error;

    fn connect(&self) -> Result<PgClient, Error> {
        PgClient::connect(self)
    }

    fn is_broken(&self, client: &PgClient) -> bool {
        client.is_broken()
    }

    /// A `SELECT 1` round trip, for a client that sat idle long enough
    /// ([`PoolConfig::check_after_idle`](crate::pool::PoolConfig::check_after_idle)).
    fn check(&self, client: &mut PgClient) -> Result<(), Error> {
        client.batch_execute("SELECT 1")
    }

    fn checkout_timed_out(&self, timeout: pool::CheckoutTimeout) -> Error {
        Error::Timeout(format!("no pooled PostgreSQL connection: {timeout}"))
    }
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
