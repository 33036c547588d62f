//! One Redis connection shared by every task of a thread, its commands
//! pipelined and its socket replaced when it fails: [`Multiplexed`], and
//! [`Reconnect`], how it replaces it.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::net::Shutdown;
use std::rc::{Rc, Weak};
use std::time::Duration;

use ::redis::{ConnectionLike, RedisError, RedisResult, Value};

use yieldloop::net::TcpStream;
use yieldloop::sync::{local, RecvTimeoutError};
use yieldloop::JoinHandle;

use super::{ConnectOptions, Connection};

/// One connection to Redis shared by all the tasks of a thread: each call
/// queues its command and pauses its task until its reply comes back.
///
/// Commands that tasks issue in the same turn of the scheduler go out in
/// one write, and their replies come back in one read: many tasks cost the
/// server and this thread about what one pipeline would. This is what
/// redis's tokio `MultiplexedConnection` does, here on yieldloop's reactor
/// and in blocking style. A [`Pool`](super::Pool) instead gives each task a
/// connection of its own, needed for what holds a connection between calls
/// (`MULTI`/`EXEC`, `WATCH`, blocking pops such as `BLPOP`, which would
/// hold up every command queued behind them here).
///
/// Clones share the connection. A task of its own reads the replies and
/// hands each to its caller, in order; the calling task writes the queued
/// commands. It is the thread's: not `Send`.
///
/// # Failures and reconnecting
///
/// When the socket fails (the server goes away, a write or the reader
/// fails, a reply does not come within the options' read timeout), every
/// call waiting on it gets an I/O error at once, and a task of its own
/// starts opening a new one in the background, as redis's tokio
/// `ConnectionManager` does: at once, then with a growing, jittered delay
/// between attempts (see [`Reconnect`] for the schedule and its
/// defaults), one attempt at a time, each a full [`Connection::connect`]
/// with the same options, so `HELLO`, `AUTH`, `SELECT` and the client name
/// are sent again. Until one succeeds, every call fails at once with an
/// I/O error of kind `NotConnected` saying why: nothing waits for the
/// server to come back, and nothing is queued for it. The first call after
/// the new connection is up goes over it. The reconnecting task ends when
/// it succeeds, or soon after the last clone is dropped, whichever comes
/// first.
///
/// A call that failed may or may not have run on the server (its reply
/// may be what was lost): this connection never sends a command twice, so
/// retrying is the caller's choice. State tied to the old connection
/// (a database chosen later with `SELECT`, `CLIENT SETNAME` sent as a
/// command) is not carried over: only what the [`ConnectOptions`] ask for.
///
/// A caller that stops waiting for its reply (a [`yieldloop::timeout`]
/// around it) leaves the connection in step: its reply is read and
/// dropped. The one caller that is writing the queued commands when it is
/// interrupted fails the connection, since part of them may have gone out;
/// it is then replaced like any other failed one.
///
/// # Examples
///
/// ```no_run
/// use redis::Commands;
/// use yieldloop_redis::{ConnectOptions, Multiplexed};
///
/// yieldloop::run(|| -> redis::RedisResult<()> {
///     let conn = Multiplexed::connect(&ConnectOptions::new("127.0.0.1:6379"))?;
///     let tasks: Vec<_> = (0..100)
///         .map(|_| {
///             let mut conn = conn.clone();
///             yieldloop::spawn(move || conn.incr::<_, _, i64>("visits", 1))
///         })
///         .collect();
///     for task in tasks {
///         task.join().unwrap()?;
///     }
///     Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Multiplexed {
    shared: Rc<Shared>,
    /// Shuts the socket down and stops reconnecting when the last clone
    /// goes (the reader and reconnecting tasks do not hold it).
    _closer: Rc<Closer>,
}

/// How [`Multiplexed`] replaces a failed connection: whether it does, the
/// delays between attempts, and how long one attempt may take.
///
/// The first attempt starts as soon as the connection fails. Before each
/// later one the reconnecting task sleeps a delay that doubles from
/// [`first_delay`](Self::first_delay) up to [`max_delay`](Self::max_delay),
/// each drawn at random between half and all of its value, so that many
/// clients that lost the same server do not all come back in the same
/// millisecond. With the defaults that is about 50–100 ms, 100–200 ms,
/// 200–400 ms, ... and then 1–2 s between attempts for as long as the
/// server stays away. A call made during the outage cuts the wait short,
/// once `first_delay` has passed since the last attempt: a connection in
/// use is back within about `first_delay` of its server, one nobody calls
/// within `max_delay`. (The call itself still fails at once.)
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use yieldloop_redis::{ConnectOptions, Multiplexed, Reconnect};
///
/// yieldloop::run(|| -> redis::RedisResult<()> {
///     let backoff = Reconnect::new()
///         .first_delay(Duration::from_millis(20))
///         .max_delay(Duration::from_millis(500));
///     let conn = Multiplexed::connect_with(&ConnectOptions::new("127.0.0.1:6379"), backoff)?;
///     assert!(conn.is_connected());
///     Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconnect {
    enabled: bool,
    first_delay: Duration,
    max_delay: Duration,
    attempt_timeout: Duration,
}

impl Default for Reconnect {
    fn default() -> Reconnect {
        Reconnect::new()
    }
}

impl Reconnect {
    /// The defaults: reconnect, 100 ms before the second attempt, at most
    /// 2 s between two, and 5 s for an attempt whose options set no
    /// connect timeout.
    pub fn new() -> Reconnect {
        Reconnect {
            enabled: true,
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(5),
        }
    }

    /// Never reconnect: once the connection fails, every call fails and
    /// stays failing, and the caller makes a new [`Multiplexed`].
    pub fn never() -> Reconnect {
        Reconnect {
            enabled: false,
            ..Reconnect::new()
        }
    }

    /// The delay before the second attempt (the first is at once); each
    /// later one doubles it, up to [`max_delay`](Self::max_delay). Default
    /// 100 ms.
    pub fn first_delay(mut self, delay: Duration) -> Reconnect {
        self.first_delay = delay;
        self
    }

    /// The longest delay between two attempts, and so about the longest a
    /// server that is back waits to be found. Default 2 s.
    pub fn max_delay(mut self, delay: Duration) -> Reconnect {
        self.max_delay = delay;
        self
    }

    /// The limit of one attempt (the connect and the handshake) when the
    /// [`ConnectOptions`] set no [`connect_timeout`](ConnectOptions::connect_timeout):
    /// an attempt never waits without end. Default 5 s.
    pub fn attempt_timeout(mut self, limit: Duration) -> Reconnect {
        self.attempt_timeout = limit;
        self
    }

    /// The sleep before attempt `attempt` (0 is the first, at once): the
    /// doubled delay, capped, times a random fraction in `[0.5, 1)`.
    fn delay(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let doubled = self
            .first_delay
            .saturating_mul(1u32 << (attempt - 1).min(20))
            .min(self.max_delay);
        doubled.mul_f64(0.5 + 0.5 * random_fraction())
    }
}

/// A number in `[0, 1)`, different at every call: std's `RandomState`
/// starts from random keys per thread and moves them on at each `new`,
/// which is jitter enough, without a dependency for it.
fn random_fraction() -> f64 {
    let bits = RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// What the clones share: the options, the connection in use and the
/// reconnecting task.
struct Shared {
    opts: ConnectOptions,
    backoff: Reconnect,
    /// The connection now. After a failure it stays the failed one (whose
    /// `broken` says why) until a new one replaces it.
    link: RefCell<Rc<Link>>,
    /// The reconnecting task while it runs.
    ///
    /// # Invariant
    ///
    /// At most one: it is set only when `None`, and the task clears it
    /// when it ends.
    reconnecting: RefCell<Option<JoinHandle<()>>>,
    /// The last attempt's error, for the message of calls that fail
    /// meanwhile.
    last_attempt: RefCell<Option<String>>,
    /// Connections opened to replace a failed one.
    reconnects: Cell<u64>,
    /// Set when the last clone goes: nothing reconnects after that.
    closed: Cell<bool>,
    /// Told by each call that finds the connection down, so that the
    /// reconnecting task tries again sooner (shared apart from the rest,
    /// so that the task may hold it across its pauses).
    demand: Rc<local::Notify>,
}

/// One socket and its reply queue: the whole connection until it fails.
struct Link {
    /// Told when this link fails, to start reconnecting; weak, so that
    /// the reader task does not keep the clones' state alive.
    owner: Weak<Shared>,
    stream: TcpStream,
    read_timeout: Option<Duration>,
    /// Packed commands not yet written.
    out: RefCell<Vec<u8>>,
    /// Callers waiting for replies, in the order their commands went out.
    waiting: RefCell<VecDeque<Waiter>>,
    /// Whether a task is writing `out` now.
    flushing: Cell<bool>,
    /// Why the connection is unusable, once it is.
    broken: RefCell<Option<String>>,
}

/// One caller's place in the reply queue.
struct Waiter {
    /// Replies to skip (a transaction's `MULTI` and `QUEUED`s).
    offset: usize,
    /// Replies to hand back after them.
    count: usize,
    seen: usize,
    replies: Vec<Value>,
    first_err: Option<RedisError>,
    tx: local::Sender<RedisResult<Vec<Value>>>,
}

struct Closer(Rc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        let s = &self.0;
        s.closed.set(true);
        let _ = s.link.borrow().stream.shutdown(Shutdown::Both);
        if let Some(task) = s.reconnecting.borrow_mut().take() {
            // Outside a task (a clone dropped after `run`) there is no
            // scheduler to ask; the task then sees `closed`, or its weak
            // reference dead, when it next wakes, and ends.
            if yieldloop::current_id().is_some() {
                task.cancel();
            }
        }
    }
}

impl fmt::Debug for Multiplexed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let link = self.shared.link.borrow().clone();
        let waiting = link.waiting.borrow().len();
        let broken = link.broken.borrow().clone();
        f.debug_struct("Multiplexed")
            .field("peer", &link.stream.peer_addr().ok())
            .field("waiting", &waiting)
            .field("broken", &broken)
            .field("reconnects", &self.shared.reconnects.get())
            .finish()
    }
}

impl Multiplexed {
    /// Connects with `opts` (handshake included, as
    /// [`Connection::connect`]) and starts the task that reads the replies;
    /// a failed connection is replaced with [`Reconnect`]'s defaults.
    ///
    /// # Errors
    ///
    /// As for [`Connection::connect`]: the first connect is not retried.
    ///
    /// # Panics
    ///
    /// Outside a task.
    pub fn connect(opts: &ConnectOptions) -> RedisResult<Multiplexed> {
        Multiplexed::connect_with(opts, Reconnect::new())
    }

    /// [`connect`](Self::connect), replacing a failed connection as
    /// `backoff` says.
    ///
    /// # Errors
    ///
    /// As for [`Connection::connect`].
    ///
    /// # Panics
    ///
    /// Outside a task.
    pub fn connect_with(opts: &ConnectOptions, backoff: Reconnect) -> RedisResult<Multiplexed> {
        let first = Connection::connect(opts)?;
        let shared = Rc::new_cyclic(|owner: &Weak<Shared>| {
            let link = Link::start(owner.clone(), first, opts.read_timeout);
            Shared {
                opts: opts.clone(),
                backoff,
                link: RefCell::new(link),
                reconnecting: RefCell::new(None),
                last_attempt: RefCell::new(None),
                reconnects: Cell::new(0),
                closed: Cell::new(false),
                demand: Rc::new(local::Notify::new()),
            }
        });
        Ok(Multiplexed {
            _closer: Rc::new(Closer(shared.clone())),
            shared,
        })
    }

    /// Whether the connection is down now: it failed and no new one is up
    /// yet, so every call fails at once. With reconnecting on (the
    /// default) this is passing: it turns back to `false` once the
    /// background task has connected again. The opposite of
    /// [`is_connected`](Self::is_connected).
    pub fn is_broken(&self) -> bool {
        self.shared.link.borrow().broken.borrow().is_some()
    }

    /// Whether calls go to the server now (see [`is_broken`](Self::is_broken)).
    pub fn is_connected(&self) -> bool {
        !self.is_broken()
    }

    /// How many times a failed connection has been replaced.
    pub fn reconnects(&self) -> u64 {
        self.shared.reconnects.get()
    }

    /// Callers waiting for a reply now.
    pub fn waiting(&self) -> usize {
        self.shared.link.borrow().waiting.borrow().len()
    }

    fn call(&self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        let link = self.shared.link.borrow().clone();
        if link.broken.borrow().is_some() {
            // The failure may have come where no task could be spawned
            // (an unwind); this call then starts the reconnecting, and in
            // any case asks for the next attempt soon.
            start_reconnecting(&self.shared);
            self.shared.demand.notify_one();
            return Err(self.shared.down_error(&link));
        }
        link.call(cmd, offset, count)
    }
}

impl Shared {
    /// The error of a call made while the connection is down.
    fn down_error(&self, link: &Link) -> RedisError {
        let why = link.broken.borrow().clone().unwrap_or_default();
        let state = if self.reconnecting.borrow().is_some() {
            match &*self.last_attempt.borrow() {
                Some(last) => format!("; reconnecting, last attempt: {last}"),
                None => "; reconnecting".to_string(),
            }
        } else {
            String::new()
        };
        io::Error::new(
            io::ErrorKind::NotConnected,
            format!("redis connection down: {why}{state}"),
        )
        .into()
    }
}

/// Starts the reconnecting task unless one runs, the clones are gone, or
/// reconnecting is off.
fn start_reconnecting(shared: &Rc<Shared>) {
    if !shared.backoff.enabled
        || shared.closed.get()
        || shared.reconnecting.borrow().is_some()
        // No spawning while a task unwinds; the next call starts it.
        || std::thread::panicking()
    {
        return;
    }
    let owner = Rc::downgrade(shared);
    let task = yieldloop::Builder::new()
        .name("redis-reconnect")
        .spawn(move || reconnect(&owner));
    // Without a stack for it, the next call tries again.
    *shared.reconnecting.borrow_mut() = task.ok();
}

/// The reconnecting task: attempts, with the backoff's delays between
/// them, until one connects (it then replaces the failed link) or the
/// clones are gone. It holds the clones' state only between its pauses.
fn reconnect(owner: &Weak<Shared>) {
    let mut attempt = 0;
    loop {
        let (opts, delay, floor, demand) = match owner.upgrade() {
            Some(s) if !s.closed.get() => {
                let mut opts = s.opts.clone();
                opts.connect_timeout = opts.connect_timeout.or(Some(s.backoff.attempt_timeout));
                let delay = s.backoff.delay(attempt);
                (
                    opts,
                    delay,
                    s.backoff.first_delay.min(delay),
                    s.demand.clone(),
                )
            }
            _ => return,
        };
        if !delay.is_zero() {
            // At least `first_delay` between attempts; after that, the rest
            // of the delay unless a call asks meanwhile (or asked since the
            // last attempt: the stored permit).
            yieldloop::sleep(floor);
            let rest = delay.saturating_sub(floor);
            if !rest.is_zero() {
                demand.wait_timeout(rest);
            }
        }
        let result = Connection::connect(&opts);
        let Some(s) = owner.upgrade().filter(|s| !s.closed.get()) else {
            return;
        };
        match result {
            Ok(conn) => {
                let link = Link::start(owner.clone(), conn, opts.read_timeout);
                *s.link.borrow_mut() = link;
                *s.last_attempt.borrow_mut() = None;
                s.reconnects.set(s.reconnects.get() + 1);
                // Dropping its own handle detaches this task, which ends
                // now.
                s.reconnecting.borrow_mut().take();
                return;
            }
            Err(e) => *s.last_attempt.borrow_mut() = Some(e.to_string()),
        }
        attempt = attempt.saturating_add(1);
    }
}

impl Link {
    /// Takes over a connected [`Connection`] and starts its reader task.
    fn start(owner: Weak<Shared>, conn: Connection, read_timeout: Option<Duration>) -> Rc<Link> {
        let Connection { stream, parser, .. } = conn;
        // The reader waits as long as the connection is idle; callers time
        // their own waits instead.
        let _ = stream.set_read_timeout(None);
        let link = Rc::new(Link {
            owner,
            stream,
            read_timeout,
            out: RefCell::new(Vec::new()),
            waiting: RefCell::new(VecDeque::new()),
            flushing: Cell::new(false),
            broken: RefCell::new(None),
        });
        let reader = link.clone();
        // Detached: it ends when the socket closes or fails.
        let spawned = yieldloop::Builder::new()
            .name("redis-reader")
            .spawn(move || read_replies(&reader, parser));
        if let Err(e) = spawned {
            link.fail(format!("no task to read the replies: {e}"));
        }
        link
    }

    fn call(&self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        if offset + count == 0 {
            return Ok(Vec::new());
        }
        let (tx, rx) = local::channel();
        self.out.borrow_mut().extend_from_slice(cmd);
        self.waiting.borrow_mut().push_back(Waiter {
            offset,
            count,
            seen: 0,
            replies: Vec::with_capacity(count),
            first_err: None,
            tx,
        });
        if !self.flushing.get() {
            self.flush();
        }
        let reply = match self.read_timeout {
            Some(limit) => rx.recv_timeout(limit).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    self.fail("a reply did not come in time".into());
                    RedisError::from(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("redis reply not received within {limit:?}"),
                    ))
                }
                RecvTimeoutError::Disconnected => self.closed_error(),
            }),
            None => rx.recv().map_err(|_| self.closed_error()),
        };
        reply?
    }

    fn closed_error(&self) -> RedisError {
        let why = self.broken.borrow().clone();
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            format!(
                "redis connection closed: {}",
                why.as_deref().unwrap_or("no reply")
            ),
        )
        .into()
    }

    /// Writes what is queued, after letting the other runnable tasks of
    /// the thread queue theirs, until nothing is left.
    fn flush(&self) {
        /// Clears `flushing` on every way out, an unwind included (then
        /// part of a command may have gone out: the connection is broken).
        struct Flushing<'a>(&'a Link, bool);
        impl Drop for Flushing<'_> {
            fn drop(&mut self) {
                self.0.flushing.set(false);
                if !self.1 {
                    self.0.fail("a write was interrupted".into());
                }
            }
        }
        self.flushing.set(true);
        let mut guard = Flushing(self, false);
        yieldloop::yield_now();
        loop {
            let buf = std::mem::take(&mut *self.out.borrow_mut());
            if buf.is_empty() || self.broken.borrow().is_some() {
                break;
            }
            if let Err(e) = (&self.stream).write_all(&buf) {
                self.fail(format!("write failed: {e}"));
                break;
            }
            // Give the buffer back for reuse when nothing came meanwhile.
            let mut out = self.out.borrow_mut();
            if out.is_empty() {
                let mut buf = buf;
                buf.clear();
                *out = buf;
                break;
            }
        }
        guard.1 = true;
    }

    /// Marks the connection unusable, fails every waiting caller and
    /// starts the reconnecting. The first failure's reason is kept.
    fn fail(&self, why: String) {
        if self.broken.borrow().is_some() {
            return;
        }
        *self.broken.borrow_mut() = Some(why);
        let _ = self.stream.shutdown(Shutdown::Both);
        self.out.borrow_mut().clear();
        let waiting = std::mem::take(&mut *self.waiting.borrow_mut());
        for w in waiting {
            let _ = w.tx.send(Err(self.closed_error()));
        }
        if let Some(owner) = self.owner.upgrade() {
            start_reconnecting(&owner);
        }
    }
}

/// The reader task: each reply to the oldest waiting caller, until the
/// connection closes or fails.
fn read_replies(link: &Link, mut parser: ::redis::Parser) {
    loop {
        let value = match parser.parse_value(&link.stream) {
            Ok(Value::Push { .. }) => continue,
            Ok(value) => value,
            Err(e) => {
                link.fail(format!("read failed: {e}"));
                return;
            }
        };
        let mut waiting = link.waiting.borrow_mut();
        let Some(w) = waiting.front_mut() else {
            drop(waiting);
            link.fail("a reply came that no command asked for".into());
            return;
        };
        let idx = w.seen;
        w.seen += 1;
        match value {
            Value::ServerError(err) if idx < w.offset => {
                w.first_err.get_or_insert(RedisError::from(err));
            }
            value if idx >= w.offset => w.replies.push(value),
            _ => {}
        }
        if w.seen == w.offset + w.count {
            let w = waiting.pop_front().expect("the front waiter");
            drop(waiting);
            let result = match w.first_err {
                Some(e) => Err(e),
                None => Ok(w.replies),
            };
            // A caller that stopped waiting is simply not told.
            let _ = w.tx.send(result);
        }
        if link.broken.borrow().is_some() {
            return;
        }
    }
}

impl ConnectionLike for Multiplexed {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let mut replies = self.call(cmd, 0, 1)?;
        Ok(replies.pop().unwrap_or(Value::Nil))
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.call(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.shared.opts.db
    }

    fn check_connection(&mut self) -> bool {
        ::redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        !self.is_broken()
    }
}
