//! One Redis connection shared by every task of a thread, its commands
//! pipelined: [`Multiplexed`].

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Duration;

use ::redis::{ConnectionLike, RedisError, RedisResult, Value};
use std::net::Shutdown;

use yieldloop::net::TcpStream;
use yieldloop::sync::{local, RecvTimeoutError};

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
/// # Failures
///
/// When the connection fails (the server goes away, a write or the reader
/// fails), every call waiting on it and every later one gets an I/O error
/// and [`is_broken`](Self::is_broken) says so: make a new one. A call
/// whose reply does not come within the options' read timeout fails with
/// `TimedOut` and breaks the connection too. A caller that stops waiting
/// for its reply (a [`yieldloop::timeout`] around it) leaves the
/// connection in step: its reply is read and dropped. The one caller that
/// is writing the queued commands when it is interrupted breaks it, since
/// part of them may have gone out.
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
    /// Shuts the socket down when the last clone goes, which ends the
    /// reader task (it holds `shared`, not this).
    _closer: Rc<Closer>,
}

struct Shared {
    stream: TcpStream,
    db: i64,
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
        let _ = self.0.stream.shutdown(Shutdown::Both);
    }
}

impl fmt::Debug for Multiplexed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Multiplexed")
            .field("peer", &self.shared.stream.peer_addr().ok())
            .field("waiting", &self.shared.waiting.borrow().len())
            .field("broken", &self.shared.broken.borrow())
            .finish()
    }
}

impl Multiplexed {
    /// Connects with `opts` (handshake included, as
    /// [`Connection::connect`]) and starts the task that reads the replies.
    ///
    /// # Errors
    ///
    /// As for [`Connection::connect`].
    ///
    /// # Panics
    ///
    /// Outside a task.
    pub fn connect(opts: &ConnectOptions) -> RedisResult<Multiplexed> {
        let Connection {
            stream, parser, db, ..
        } = Connection::connect(opts)?;
        // The reader waits as long as the connection is idle; callers time
        // their own waits instead.
        stream.set_read_timeout(None)?;
        let shared = Rc::new(Shared {
            stream,
            db,
            read_timeout: opts.read_timeout,
            out: RefCell::new(Vec::new()),
            waiting: RefCell::new(VecDeque::new()),
            flushing: Cell::new(false),
            broken: RefCell::new(None),
        });
        let reader = shared.clone();
        // Detached: it ends when the socket closes or fails.
        drop(yieldloop::spawn(move || read_replies(&reader, parser)));
        Ok(Multiplexed {
            _closer: Rc::new(Closer(shared.clone())),
            shared,
        })
    }

    /// Whether the connection failed, so that every call fails now.
    pub fn is_broken(&self) -> bool {
        self.shared.broken.borrow().is_some()
    }

    /// Callers waiting for a reply now.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.borrow().len()
    }

    fn call(&self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        let s = &*self.shared;
        s.check()?;
        if offset + count == 0 {
            return Ok(Vec::new());
        }
        let (tx, rx) = local::channel();
        s.out.borrow_mut().extend_from_slice(cmd);
        s.waiting.borrow_mut().push_back(Waiter {
            offset,
            count,
            seen: 0,
            replies: Vec::with_capacity(count),
            first_err: None,
            tx,
        });
        if !s.flushing.get() {
            s.flush();
        }
        let reply = match s.read_timeout {
            Some(limit) => rx.recv_timeout(limit).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    s.fail("a reply did not come in time".into());
                    RedisError::from(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("redis reply not received within {limit:?}"),
                    ))
                }
                RecvTimeoutError::Disconnected => s.closed_error(),
            }),
            None => rx.recv().map_err(|_| s.closed_error()),
        };
        reply?
    }
}

impl Shared {
    fn check(&self) -> RedisResult<()> {
        match &*self.broken.borrow() {
            Some(why) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("redis connection unusable: {why}"),
            )
            .into()),
            None => Ok(()),
        }
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
        struct Flushing<'a>(&'a Shared, bool);
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

    /// Marks the connection unusable and fails every waiting caller.
    fn fail(&self, why: String) {
        self.broken.borrow_mut().get_or_insert(why);
        let _ = self.stream.shutdown(Shutdown::Both);
        let waiting = std::mem::take(&mut *self.waiting.borrow_mut());
        for w in waiting {
            let _ = w.tx.send(Err(self.closed_error()));
        }
    }
}

/// The reader task: each reply to the oldest waiting caller, until the
/// connection closes or fails.
fn read_replies(shared: &Shared, mut parser: ::redis::Parser) {
    loop {
        let value = match parser.parse_value(&shared.stream) {
            Ok(Value::Push { .. }) => continue,
            Ok(value) => value,
            Err(e) => {
                shared.fail(format!("read failed: {e}"));
                return;
            }
        };
        let mut waiting = shared.waiting.borrow_mut();
        let Some(w) = waiting.front_mut() else {
            drop(waiting);
            shared.fail("a reply came that no command asked for".into());
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
        if shared.broken.borrow().is_some() {
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
        self.shared.db
    }

    fn check_connection(&mut self) -> bool {
        ::redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        !self.is_broken()
    }
}
