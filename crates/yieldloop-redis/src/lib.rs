//! A Redis client for tasks: the `redis` crate's typed API over
//! yieldloop's [`TcpStream`], and a per-worker connection pool.
//!
//! The `redis` crate's own synchronous client opens a std socket, so every
//! call blocks the whole scheduler thread: a 200 ms `BLPOP` would stall
//! every other task of that worker. [`Connection`] instead implements
//! [`redis::ConnectionLike`] over yieldloop's socket: it writes the packed
//! command and parses the replies with the crate's own [`redis::Parser`]
//! (which keeps its own read buffer across calls), and a read or write that
//! would block pauses only the calling task. Everything the crate builds on
//! `ConnectionLike` then works from a task unchanged: the typed
//! [`redis::Commands`] methods, [`redis::cmd`], pipelines and transactions
//! ([`redis::pipe`]), scripts.
//!
//! [`Pool`] keeps connections for reuse. It is per worker: a connection's
//! socket is registered with the reactor of the thread that opened it, so
//! each thread has pools of its own, and [`PoolConfig::pool`] hands a task
//! its thread's pool for a configuration shared by all workers (the pool is
//! `yieldloop-pool`'s, which also has the checkout timeout, idle timeout,
//! lifetime limit and a `PING` check of connections that sat idle).
//!
//! [`Multiplexed`] is the other way to share: one connection for all the
//! tasks of a thread, the commands they issue in the same scheduler turn
//! written together and the replies read by a task of its own. Under many
//! concurrent tasks it costs far fewer system calls (here and in Redis)
//! than a connection per task; commands that hold a connection (`BLPOP`,
//! `WATCH`) belong on a pooled one.
//!
//! # Connecting
//!
//! [`ConnectOptions`] says where and how: the address, `AUTH` (a password,
//! or an ACL user and password), `SELECT` of a database, `HELLO 3` for the
//! RESP3 protocol, a client name, and time limits for the connect (handshake
//! included), each read and each write. They can also come from a
//! `redis://[user:password@]host:port/db[?protocol=resp3]` URL.
//!
//! # Failures
//!
//! Errors come back as [`redis::RedisError`]: a refused or reset
//! connection, a timeout and a server that went away are I/O errors
//! ([`RedisError::is_io_error`]); an error reply such as `WRONGTYPE` is a
//! server error for that one call and leaves the connection usable.
//!
//! A call that does not end with a complete reply (an I/O error, a read
//! timeout, a reply the parser rejects, or a [`yieldloop::timeout`] that
//! unwinds the task in the middle of the call) leaves unread or half-read
//! replies behind, so the connection is marked broken: every later call on
//! it fails at once, [`ConnectionLike::is_open`] says `false`, and the pool
//! drops it instead of handing it to the next task. A [`Connection`] never
//! reconnects behind the caller's back; the next checkout from the pool
//! opens a fresh one. [`Multiplexed`], which all the tasks of a thread
//! share, replaces its own failed socket in the background, with a
//! bounded, jittered backoff ([`Reconnect`]); calls made while it is down
//! fail at once.
//!
//! Idle connections are checked at checkout without a round trip: one the
//! server closed while it sat in the pool (a restart, the server's idle
//! `timeout`), or one registered with the scheduler of an earlier
//! [`yieldloop::run`] on the same thread, is closed and replaced, so the
//! caller does not see its failure.
//!
//! Not covered: TLS, Unix sockets, cluster and sentinel, and pub/sub
//! (RESP3 push messages that arrive between replies are skipped).
//!
//! # Examples
//!
//! ```no_run
//! use redis::Commands;
//! use yieldloop_redis::{ConnectOptions, PoolConfig};
//!
//! yieldloop::run(|| -> redis::RedisResult<()> {
//!     let config = PoolConfig::new(ConnectOptions::new("127.0.0.1:6379").db(1)).max_size(8);
//!     let pool = config.pool();
//!     let mut tasks = Vec::new();
//!     for n in 0..100 {
//!         let pool = pool.clone();
//!         tasks.push(yieldloop::spawn(move || -> redis::RedisResult<i64> {
//!             let mut conn = pool.get()?;
//!             conn.incr("visits", n)
//!         }));
//!     }
//!     for task in tasks {
//!         task.join().unwrap()?;
//!     }
//!     let mut conn = pool.get()?;
//!     let (visits, _): (i64, ()) = redis::pipe()
//!         .get("visits")
//!         .del("visits")
//!         .query(&mut *conn)?;
//!     assert_eq!(visits, (0..100).sum::<i64>());
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! The `redis_counter` example program runs a variant of this against a
//! real server.

use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use ::redis::{
    ConnectionAddr, ConnectionLike, ErrorKind, IntoConnectionInfo, Parser, ProtocolVersion,
    RedisError, RedisResult, Value,
};
use yieldloop::net::TcpStream;

use yieldloop_pool as pool;

mod multiplexed;
pub use multiplexed::{Multiplexed, Reconnect};
/// The `redis` crate this one speaks in (commands, pipelines, values,
/// errors), re-exported so that its version always matches.
pub use redis;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// Where and how to connect: the address, credentials, database, protocol
/// and time limits.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop_redis::ConnectOptions;
///
/// let opts = ConnectOptions::new("127.0.0.1:6379")
///     .user("app", "s3cret")
///     .db(2)
///     .resp3(true)
///     .connect_timeout(Duration::from_secs(1))
///     .read_timeout(Duration::from_secs(5));
/// assert_eq!(opts.get_db(), 2);
///
/// let from_url = ConnectOptions::from_url("redis://:s3cret@127.0.0.1:6379/2").unwrap();
/// assert_eq!(from_url.get_db(), 2);
/// ```
#[derive(Clone)]
pub struct ConnectOptions {
    addr: String,
    username: Option<String>,
    password: Option<String>,
    db: i64,
    resp3: bool,
    client_name: Option<String>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl fmt::Debug for ConnectOptions {
    // The password stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("addr", &self.addr)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("db", &self.db)
            .field("resp3", &self.resp3)
            .field("client_name", &self.client_name)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("write_timeout", &self.write_timeout)
            .finish()
    }
}

impl ConnectOptions {
    /// Options for the server at `addr` (`"host:port"`; a host name is
    /// looked up on the blocking pool), with no credentials, database 0,
    /// RESP2 and no time limits.
    pub fn new(addr: impl Into<String>) -> ConnectOptions {
        ConnectOptions {
            addr: addr.into(),
            username: None,
            password: None,
            db: 0,
            resp3: false,
            client_name: None,
            connect_timeout: None,
            read_timeout: None,
            write_timeout: None,
        }
    }

    /// Options from a `redis://` URL, as the `redis` crate parses it:
    /// `redis://[user][:password@]host[:port][/db][?protocol=resp3]`.
    ///
    /// # Errors
    ///
    /// An invalid URL, or one for a transport this client does not have
    /// (TLS, Unix sockets).
    pub fn from_url(url: &str) -> RedisResult<ConnectOptions> {
        let info = url.into_connection_info()?;
        let addr = match info.addr() {
            ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
            other => {
                return Err(RedisError::from((
                    ErrorKind::InvalidClientConfig,
                    "only plain TCP addresses are supported",
                    other.to_string(),
                )))
            }
        };
        let settings = info.redis_settings();
        Ok(ConnectOptions {
            username: settings.username().map(str::to_owned),
            password: settings.password().map(str::to_owned),
            db: settings.db(),
            resp3: settings.protocol() != ProtocolVersion::RESP2,
            ..ConnectOptions::new(addr)
        })
    }

    /// Authenticates with `AUTH password` (the `default` user).
    pub fn password(mut self, password: impl Into<String>) -> ConnectOptions {
        self.username = None;
        self.password = Some(password.into());
        self
    }

    /// Authenticates as an ACL user with `AUTH user password`.
    pub fn user(mut self, user: impl Into<String>, password: impl Into<String>) -> ConnectOptions {
        self.username = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// Selects database `db` on connect (`SELECT db`; 0 sends nothing).
    pub fn db(mut self, db: i64) -> ConnectOptions {
        self.db = db;
        self
    }

    /// The database selected on connect.
    pub fn get_db(&self) -> i64 {
        self.db
    }

    /// Speaks RESP3: the handshake is `HELLO 3` (with the credentials, if
    /// any), and replies come in RESP3's types (maps, sets, doubles, ...),
    /// which the `redis` crate converts to the same Rust types. Needs
    /// Redis 6 or later; the connect fails with the server's error
    /// otherwise.
    pub fn resp3(mut self, on: bool) -> ConnectOptions {
        self.resp3 = on;
        self
    }

    /// Names the connection (`CLIENT SETNAME`, or `SETNAME` in `HELLO`), as
    /// `CLIENT LIST` shows it.
    pub fn client_name(mut self, name: impl Into<String>) -> ConnectOptions {
        self.client_name = Some(name.into());
        self
    }

    /// The most the connect may take: the name lookup, the TCP connect and
    /// the handshake (`HELLO`, `AUTH`, `SELECT`) together.
    pub fn connect_timeout(mut self, limit: Duration) -> ConnectOptions {
        self.connect_timeout = Some(limit);
        self
    }

    /// The longest wait for data from the server within a call. A call that
    /// times out breaks the connection (its reply may still come). Blocking
    /// commands (`BLPOP key 10`) need a limit above their own.
    pub fn read_timeout(mut self, limit: Duration) -> ConnectOptions {
        self.read_timeout = Some(limit);
        self
    }

    /// The longest wait for room in the socket's send buffer.
    pub fn write_timeout(mut self, limit: Duration) -> ConnectOptions {
        self.write_timeout = Some(limit);
        self
    }
}

// ---------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------

/// One connection to a Redis server, usable from a task: reads and writes
/// pause the task, never the thread.
///
/// It implements [`ConnectionLike`], so [`redis::Commands`] methods,
/// [`redis::Cmd::query`] and [`redis::Pipeline::query`] take it directly.
/// Like yieldloop's sockets it belongs to the thread that opened it.
pub struct Connection {
    stream: TcpStream,
    parser: Parser,
    db: i64,
    /// Set at the start of every call and cleared only once its replies
    /// are all read: an error or an unwind in between leaves it set.
    broken: bool,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.stream.peer_addr().ok())
            .field("db", &self.db)
            .field("broken", &self.broken)
            .finish()
    }
}

impl Connection {
    /// Connects and runs the handshake that `opts` asks for.
    ///
    /// # Errors
    ///
    /// I/O errors of the connect (refused, timed out, the lookup failing),
    /// and the server's answer to a failed `HELLO`, `AUTH` or `SELECT`
    /// (kind [`ErrorKind::AuthenticationFailed`] for bad credentials).
    ///
    /// # Panics
    ///
    /// When `opts` has a connect timeout and this is called outside a task
    /// (without one it fails with an I/O error there instead).
    pub fn connect(opts: &ConnectOptions) -> RedisResult<Connection> {
        match opts.connect_timeout {
            Some(limit) => yieldloop::timeout(limit, || Connection::connect_now(opts))
                .unwrap_or_else(|elapsed| Err(io::Error::from(elapsed).into())),
            None => Connection::connect_now(opts),
        }
    }

    fn connect_now(opts: &ConnectOptions) -> RedisResult<Connection> {
        let stream = TcpStream::connect(opts.addr.as_str())?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(opts.read_timeout)?;
        stream.set_write_timeout(opts.write_timeout)?;
        let mut conn = Connection {
            stream,
            parser: Parser::new(),
            db: 0,
            broken: false,
        };
        conn.handshake(opts)?;
        Ok(conn)
    }

    fn handshake(&mut self, opts: &ConnectOptions) -> RedisResult<()> {
        let auth_failed = |e: RedisError| {
            if e.is_io_error() {
                e
            } else {
                RedisError::from((
                    ErrorKind::AuthenticationFailed,
                    "the server refused the credentials",
                    e.to_string(),
                ))
            }
        };
        if opts.resp3 {
            let mut hello = ::redis::cmd("HELLO");
            hello.arg(3);
            if let Some(password) = &opts.password {
                let user = opts.username.as_deref().unwrap_or("default");
                hello.arg("AUTH").arg(user).arg(password);
            }
            if let Some(name) = &opts.client_name {
                hello.arg("SETNAME").arg(name);
            }
            hello.query::<Value>(self).map_err(|e| {
                if opts.password.is_some() && e.to_string().contains("WRONGPASS") {
                    auth_failed(e)
                } else {
                    e
                }
            })?;
        } else {
            if let Some(password) = &opts.password {
                let mut auth = ::redis::cmd("AUTH");
                if let Some(user) = &opts.username {
                    auth.arg(user);
                }
                auth.arg(password).query::<()>(self).map_err(auth_failed)?;
            }
            if let Some(name) = &opts.client_name {
                ::redis::cmd("CLIENT")
                    .arg("SETNAME")
                    .arg(name)
                    .query::<()>(self)?;
            }
        }
        if opts.db != 0 {
            ::redis::cmd("SELECT").arg(opts.db).query::<()>(self)?;
            self.db = opts.db;
        }
        Ok(())
    }

    /// Whether an earlier call failed or was interrupted part-way, so that
    /// this connection can no longer be used.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The socket, for its addresses and options. Reading or writing it
    /// directly would put the connection out of step with its replies.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Whether an idle connection still looks usable, checked without a
    /// round trip: the server has not closed it or sent anything unasked,
    /// and it belongs to the current scheduler. A peek with a read timeout
    /// of a nanosecond answers all three: "timed out" means nothing to
    /// read, the healthy case; end of stream, data, a reset, or "not this
    /// scheduler's socket" all say no. Restores `read_timeout` afterwards.
    fn still_usable(&self, read_timeout: Option<Duration>) -> bool {
        if self.broken
            || self
                .stream
                .set_read_timeout(Some(Duration::from_nanos(1)))
                .is_err()
        {
            return false;
        }
        let mut byte = [0u8; 1];
        let quiet = matches!(
            self.stream.peek(&mut byte),
            Err(e) if e.kind() == io::ErrorKind::TimedOut
        );
        self.stream.set_read_timeout(read_timeout).is_ok() && quiet
    }

    /// Fails when the connection is broken; else marks it broken until the
    /// call that is starting proves otherwise.
    fn begin(&mut self) -> RedisResult<()> {
        if self.broken {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "redis connection unusable: an earlier call failed or was interrupted part-way",
            )
            .into());
        }
        self.broken = true;
        Ok(())
    }

    // ANCHOR: connection_like
    fn send(&mut self, bytes: &[u8]) -> RedisResult<()> {
        (&self.stream).write_all(bytes)?;
        Ok(())
    }

    /// The next reply, skipping RESP3 push messages.
    fn read_reply(&mut self) -> RedisResult<Value> {
        loop {
            match self.parser.parse_value(&self.stream)? {
                Value::Push { .. } => continue,
                value => return Ok(value),
            }
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.begin()?;
        self.send(cmd)?;
        let reply = self.read_reply()?;
        self.broken = false;
        Ok(reply)
    }
    // ANCHOR_END: connection_like

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        // `offset` replies to skip (a transaction's `MULTI` and `QUEUED`s),
        // then `count` to return. Every reply is read even after an error
        // reply, so the connection stays in step; the first error among the
        // skipped ones (a command refused before `EXEC`) is the result.
        self.begin()?;
        self.send(cmd)?;
        let mut replies = Vec::with_capacity(count);
        let mut first_err = None;
        for idx in 0..offset + count {
            match self.read_reply()? {
                Value::ServerError(err) if idx < offset => {
                    first_err.get_or_insert(RedisError::from(err));
                }
                value if idx >= offset => replies.push(value),
                _ => {}
            }
        }
        self.broken = false;
        first_err.map_or(Ok(replies), Err)
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        ::redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        !self.broken
    }
}

// ---------------------------------------------------------------------------
// Pool
// ---------------------------------------------------------------------------

/// How a pool of Redis connections is made: the connect options, the most
/// connections it keeps open at once, and how long a checkout waits for
/// one. `Send` and `Sync`: one configuration, shared by every worker, with
/// [`pool`](crate::pool::PoolConfig::pool) giving each thread its own pool.
/// See [`crate::pool`] for the pool itself.
pub type PoolConfig = pool::PoolConfig<ConnectOptions>;

/// A pool of Redis connections for the tasks of one thread. Clones share
/// it.
///
/// [`get`](crate::pool::Pool::get) hands out an idle connection, or opens
/// one while fewer than the maximum are open, or pauses the task until
/// another task returns one. A connection goes back when its
/// [`PooledConnection`] is dropped, unless it is broken: then it is closed
/// and its place freed.
pub type Pool = pool::Pool<ConnectOptions>;

/// A connection checked out of a [`Pool`]; it goes back when dropped,
/// unless it is broken.
///
/// It dereferences to [`Connection`], and the `redis` crate implements
/// [`ConnectionLike`] for such wrappers, so `conn.get(..)` and
/// `pipe.query(&mut *conn)` both work.
pub type PooledConnection = pool::Pooled<ConnectOptions>;

/// The pool opens [`Connection`]s with these options.
impl pool::Manage for ConnectOptions {
    type Conn = Connection;
    type Error = RedisError;

    fn connect(&self) -> RedisResult<Connection> {
        Connection::connect(self)
    }

    fn is_broken(&self, conn: &Connection) -> bool {
        conn.is_broken()
    }

    /// A non-waiting peek at the socket, which sees a connection the server
    /// closed and one of another scheduler.
    fn idle_usable(&self, conn: &Connection) -> bool {
        conn.still_usable(self.read_timeout)
    }

    /// A `PING` round trip, for a connection that sat idle long enough
    /// ([`PoolConfig::check_after_idle`](crate::pool::PoolConfig::check_after_idle)).
    fn check(&self, conn: &mut Connection) -> RedisResult<()> {
        ::redis::cmd("PING").query::<String>(conn).map(drop)
    }

    /// An I/O error of kind `TimedOut` (so [`RedisError::is_timeout`]),
    /// carrying the [`CheckoutTimeout`](pool::CheckoutTimeout).
    fn checkout_timed_out(&self, timeout: pool::CheckoutTimeout) -> RedisError {
        io::Error::from(timeout).into()
    }
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
