//! One HTTP/1.1 connection, written as straight-line code: read, parse,
//! call the handler, answer, repeat.
//!
//! ```text
//!   read ──▶ buf ──▶ parse head ─┬─ complete, body in ──▶ handler ──▶ answer into `out` ─┐
//!    ▲                           ├─ complete, body not ─▶ grow buf, read more ───────────┤
//!    │                           ├─ partial ────────────▶ write `out`, read more ────────┤
//!    │                           └─ invalid ────────────▶ 400/411/413/431, close          │
//!    └───────────────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! The request handed to the handler borrows the read buffer: the head
//! where it was parsed, the body right after it. A body that did not come
//! with the head makes the buffer grow to hold it (up to the body limit);
//! the head is then parsed again once it is all in, which costs a second
//! parse only for those requests. Buffers are per connection and reused:
//! a request whose answer has a `'static` body allocates nothing.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::{Shutdown, SocketAddr};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use yieldloop::net::TcpStream;

use super::message::{reason, Request, Response};
use super::server::ServeConfig;

/// The most headers a request may carry whatever the configuration says:
/// the size of the parser's table, which lives on the task's stack.
/// 128 headers of 32 bytes are 4 KiB of a connection task's 64 KiB
/// default stack, reserved but not written (the table is uninitialised).
pub(crate) const MAX_HEADERS_CAP: usize = 128;

/// After the last answer on a connection that is closing: how long, and how
/// many bytes, the server keeps reading what the client still sends.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// See [`LINGER_TIME`].
const LINGER_BYTES: usize = 256 * 1024;

/// A read buffer grown past this for a large body goes back to the head
/// limit once the request is done, so one big upload does not pin memory
/// for the rest of a long keep-alive connection.
const KEEP_BUF: usize = 64 * 1024;

/// What one connection did, for the server's summary.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConnStats {
    /// Requests answered by the handler (its 500s for panics included).
    pub(crate) requests: u64,
    /// Handler calls that panicked.
    pub(crate) panics: u64,
}

/// How a connection and its worker see each other during a drain.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    /// Set by the worker when it drains: answer what is under way, with
    /// `Connection: close`, and take no more.
    pub(crate) draining: &'a Cell<bool>,
    /// Cleared by the connection while it waits for a new request (nothing
    /// of one read yet): the worker may then cancel it at once.
    pub(crate) busy: &'a Cell<bool>,
}

/// Serves HTTP/1.1 requests on `stream` with `handler` until the client
/// closes, asks to close, stays silent too long or sends something the
/// server will not take; returns the number of requests answered.
///
/// This is one connection of [`serve`](super::serve), for a program that
/// accepts connections itself: run it in a task of its own per connection,
/// since each read and write pauses only that task. The connection gets
/// `TCP_NODELAY` and the limits and timeouts of `config`.
///
/// # Errors
///
/// The connection's I/O errors: resets, broken pipes,
/// [`io::ErrorKind::TimedOut`] when an answer is not taken within the
/// write timeout. A client that goes quiet between requests for the idle
/// timeout, or in the middle of one for the read timeout (it gets a 408
/// first), ends the connection with `Ok`.
///
/// # Examples
///
/// See the [crate docs](crate#examples).
pub fn serve_connection<H>(stream: &TcpStream, config: &ServeConfig, handler: &H) -> io::Result<u64>
where
    H: Fn(&Request<'_>) -> Response,
{
    let (draining, busy) = (Cell::new(false), Cell::new(true));
    let watch = Watch {
        draining: &draining,
        busy: &busy,
    };
    let stats = Cell::new(ConnStats::default());
    let result = run(stream, config, handler, &watch, &stats);
    result.map(|()| stats.get().requests)
}

/// Serves one connection; `stats` is kept up to date as it goes, so a
/// cancelled connection's counts are still there.
pub(crate) fn run<H>(
    stream: &TcpStream,
    config: &ServeConfig,
    handler: &H,
    watch: &Watch<'_>,
    stats: &Cell<ConnStats>,
) -> io::Result<()>
where
    H: Fn(&Request<'_>) -> Response,
{
    stream.set_nodelay(true)?;
    stream.set_write_timeout(config.write_timeout)?;
    let mut conn = Conn {
        stream,
        config,
        peer: stream.peer_addr().ok(),
        buf: vec![0; config.max_head.max(64)],
        start: 0,
        end: 0,
        out: Vec::with_capacity(512),
        deadline: None,
        continued: false,
        watch,
        stats,
    };
    conn.serve(handler)
}

/// One connection's state.
struct Conn<'a> {
    /// The socket; reads and writes pause the task.
    stream: &'a TcpStream,
    /// The limits and timeouts in force.
    config: &'a ServeConfig,
    /// The client, for [`Request::peer`].
    peer: Option<SocketAddr>,
    /// Bytes read and not yet consumed live in `buf[start..end]`. Its
    /// length is the head limit, or more while a large body is read.
    buf: Vec<u8>,
    /// See `buf`.
    start: usize,
    /// See `buf`.
    end: usize,
    /// Answers not yet written: pipelined requests are answered together.
    out: Vec<u8>,
    /// When the request under way must be in by (head and body); `None`
    /// until the first read that finds it incomplete, so a request that
    /// comes in one piece never asks the clock.
    deadline: Option<Instant>,
    /// `100 Continue` was sent for the request under way.
    continued: bool,
    /// The worker's drain flag and this connection's busy flag.
    watch: &'a Watch<'a>,
    /// Counts for the worker.
    stats: &'a Cell<ConnStats>,
}

/// Why the loop stops reading.
enum Got {
    /// More bytes are in.
    More,
    /// The client closed, or went quiet between requests: end quietly.
    Gone,
    /// The client went quiet in the middle of a request: 408.
    Late,
}

/// A parsed head.
enum Parsed<'b> {
    /// Not all of the head is in yet.
    Partial,
    /// Not acceptable: answer this status and close.
    Refuse(u16),
    /// A head the server takes.
    Complete(Head<'b>),
}

/// A complete head and what frames its request.
struct Head<'b> {
    /// The request, its body still empty.
    req: Request<'b>,
    /// The length of the head in bytes.
    len: usize,
    /// `Content-Length`, 0 without one.
    body_len: u64,
    /// Whether the connection may stay open after the answer.
    keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    expect_continue: bool,
}

impl Conn<'_> {
    fn serve<H>(&mut self, handler: &H) -> io::Result<()>
    where
        H: Fn(&Request<'_>) -> Response,
    {
        loop {
            // A fresh table each time round: it borrows from `buf`, which
            // the reads below change. Uninitialised, so it costs nothing.
            let mut table = [const { MaybeUninit::uninit() }; MAX_HEADERS_CAP];
            let max = self.config.max_headers.clamp(1, MAX_HEADERS_CAP);
            let parsed = parse(
                &self.buf[self.start..self.end],
                &mut table[..max],
                self.config,
            );
            match parsed {
                Parsed::Complete(mut head) => {
                    // The whole request is held in memory: the body limit
                    // bounds what one connection may make the server hold.
                    let need = usize::try_from(head.body_len)
                        .ok()
                        .and_then(|body| body.checked_add(head.len));
                    let Some(need) = need.filter(|_| head.body_len <= self.config.max_body) else {
                        return self.refuse(413);
                    };
                    if self.end - self.start >= need {
                        head.req.body = &self.buf[self.start + head.len..self.start + need];
                        head.req.peer = self.peer;
                        let keep = answer(handler, &head, &mut self.out, self.stats, self.watch);
                        self.start += need;
                        (self.deadline, self.continued) = (None, false);
                        if !keep {
                            return self.close();
                        }
                        continue;
                    }
                    // The body is not all in: make room for it, read on and
                    // parse the head again once it is.
                    let expect = head.expect_continue && !self.continued;
                    self.flush()?;
                    self.compact();
                    if self.buf.len() < need {
                        self.buf.resize(need, 0);
                    }
                    if expect {
                        self.continued = true;
                        (&*self.stream).write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                    }
                }
                Parsed::Partial => {
                    if self.end - self.start >= self.config.max_head {
                        return self.refuse(431);
                    }
                    self.flush()?;
                    if self.start == self.end && self.watch.draining.get() {
                        return self.close();
                    }
                    self.compact();
                    if self.buf.len() > KEEP_BUF.max(self.config.max_head) && self.end == 0 {
                        self.buf.truncate(self.config.max_head.max(64));
                        self.buf.shrink_to_fit();
                    }
                }
                Parsed::Refuse(status) => return self.refuse(status),
            }
            match self.read_more()? {
                Got::More => {}
                Got::Gone => return Ok(()),
                Got::Late => return self.refuse(408),
            }
        }
    }

    /// Reads more of the request (or the first bytes of the next), within
    /// the idle timeout between requests and the read timeout inside one.
    fn read_more(&mut self) -> io::Result<Got> {
        let idle = self.start == self.end;
        let timeout = if idle {
            self.watch.busy.set(false);
            self.config.idle_timeout
        } else {
            match self.config.read_timeout {
                None => None,
                Some(limit) => {
                    let now = Instant::now();
                    let deadline = *self.deadline.get_or_insert(now + limit);
                    // A deadline <= now is due.
                    match deadline.checked_duration_since(now) {
                        Some(left) if !left.is_zero() => Some(left),
                        _ => return Ok(Got::Late),
                    }
                }
            }
        };
        self.stream.set_read_timeout(timeout)?;
        let got = (&*self.stream).read(&mut self.buf[self.end..]);
        self.watch.busy.set(true);
        match got {
            // The client closed: between requests that is the normal end;
            // in the middle of one it gave up, and nobody is left to tell.
            Ok(0) => Ok(Got::Gone),
            Ok(n) => {
                self.end += n;
                Ok(Got::More)
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                Ok(if idle { Got::Gone } else { Got::Late })
            }
            Err(e) => Err(e),
        }
    }

    /// Answers `status` (the server's own refusal) and closes.
    fn refuse(&mut self, status: u16) -> io::Result<()> {
        write_answer(&mut self.out, &Response::error(status), false, false)
            .expect("a valid answer");
        self.close()
    }

    /// Writes the pending answers.
    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            (&*self.stream).write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Moves the unconsumed bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Sends the pending answers and closes: shut down our side, then read
    /// (and drop) for a moment what the client may still be sending.
    ///
    /// Closing a socket that has unread bytes makes the kernel send a reset,
    /// and a reset can reach the client before it has read our last answer,
    /// which it then never sees. Reading until the client closes too (or the
    /// bounds run out) avoids that.
    fn close(&mut self) -> io::Result<()> {
        self.flush()?;
        // The client may be gone already; there is nothing left to save then.
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return Ok(());
        }
        self.stream.set_read_timeout(Some(LINGER_TIME))?;
        let until = Instant::now() + LINGER_TIME;
        let mut drained = 0;
        while drained < LINGER_BYTES && Instant::now() < until {
            match (&*self.stream).read(&mut self.buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
        Ok(())
    }
}

/// Calls the handler and appends its answer to `out`; returns whether
/// the connection stays open. A function of its own, not a method, since
/// the request borrows the connection's read buffer meanwhile.
fn answer<H>(
    handler: &H,
    head: &Head<'_>,
    out: &mut Vec<u8>,
    stats: &Cell<ConnStats>,
    watch: &Watch<'_>,
) -> bool
where
    H: Fn(&Request<'_>) -> Response,
{
    let mut counts = stats.get();
    let mut keep = head.keep_alive;
    let resp = match panic::catch_unwind(AssertUnwindSafe(|| handler(&head.req))) {
        Ok(resp) => resp,
        Err(payload) => {
            // The task being torn down (cancelled) unwinds through here
            // too: that is no panic of the handler's, let it go on.
            if yieldloop::current_id().is_none() {
                panic::resume_unwind(payload);
            }
            // What the handler left half-done may concern this connection:
            // close it after the 500.
            counts.panics += 1;
            keep = false;
            Response::error(500)
        }
    };
    counts.requests += 1;
    stats.set(counts);
    // Read after the handler: a drain that began while it ran closes too.
    let keep = keep && !watch.draining.get();
    let head_only = head.req.method == "HEAD";
    match write_answer(out, &resp, head_only, keep) {
        Ok(asked_close) => keep && !asked_close,
        Err(()) => {
            write_answer(out, &Response::error(500), head_only, false).expect("a valid answer");
            false
        }
    }
}

/// Parses the request head at the start of `buf` into `table`.
fn parse<'b>(
    buf: &'b [u8],
    table: &'b mut [MaybeUninit<httparse::Header<'b>>],
    config: &ServeConfig,
) -> Parsed<'b> {
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, table) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Refuse(431),
        Err(_) => return Parsed::Refuse(400),
    };
    if len > config.max_head {
        return Parsed::Refuse(431);
    }
    // A complete parse fills these in.
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Refuse(400);
    };
    let headers: &'b [httparse::Header<'b>] = req.headers;
    let mut body_len: Option<u64> = None;
    let (mut transfer, mut chunked, mut close, mut keep, mut host, mut expect) =
        (false, false, false, false, false, false);
    for h in headers {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = content_length(h.value) else {
                return Parsed::Refuse(400);
            };
            // Two different lengths: which one frames the body is anyone's
            // guess, so refuse.
            if body_len.is_some_and(|m| m != n) {
                return Parsed::Refuse(400);
            }
            body_len = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer = true;
            chunked |= h
                .value
                .split(|&b| b == b',')
                .any(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("host") {
            host = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    // HTTP/1.1 requires Host; both framings at once is how requests are
    // smuggled past proxies.
    if (version == 1 && !host) || (transfer && body_len.is_some()) {
        return Parsed::Refuse(400);
    }
    if transfer {
        // Chunked bodies are not read: say which length the server wants
        // (411); any other coding it does not know at all (501).
        return Parsed::Refuse(if chunked { 411 } else { 501 });
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Parsed::Complete(Head {
        req: Request {
            method,
            path,
            query,
            version,
            headers,
            body: &[],
            peer: None,
        },
        len,
        body_len: body_len.unwrap_or(0),
        keep_alive: !close && (version == 1 || keep),
        expect_continue: expect && version == 1,
    })
}

/// A `Content-Length` value: digits only, without sign or spaces around.
fn content_length(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Appends the answer to `out`: `Err(())` (and nothing appended) if it
/// cannot be sent as it is, else whether the handler asked to close.
fn write_answer(
    out: &mut Vec<u8>,
    resp: &Response,
    head_only: bool,
    keep: bool,
) -> Result<bool, ()> {
    let status = resp.status;
    let mut asked_close = false;
    let mut typed = false;
    for (name, value) in &resp.headers {
        let bad = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n');
        if name.is_empty() || bad(name) || bad(value) {
            return Err(());
        }
        if name.eq_ignore_ascii_case("connection") {
            asked_close |= value
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("close"));
        }
        typed |= name.eq_ignore_ascii_case("content-type");
    }
    if !(100..=999).contains(&status) {
        return Err(());
    }
    let keep = keep && !asked_close;
    // 1xx, 204 and 304 answers have no body, and no length to announce.
    let bodiless = status < 200 || status == 204 || status == 304;
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    with_date(|date| out.extend_from_slice(date.as_bytes()));
    if !bodiless {
        let _ = write!(out, "Content-Length: {}\r\n", resp.body.len());
        if !typed {
            out.extend_from_slice(b"Content-Type: text/plain; charset=utf-8\r\n");
        }
    }
    // HTTP/1.1 keeps connections open by default, HTTP/1.0 closes them:
    // say "close" whenever we close, which is right for both; a 1.0 client
    // that asked to keep the connection sent "keep-alive", and the same
    // header in the answer tells it the server agrees.
    out.extend_from_slice(if keep {
        b"Connection: keep-alive\r\n"
    } else {
        b"Connection: close\r\n"
    });
    for (name, value) in &resp.headers {
        let framing = ["content-length", "transfer-encoding", "connection"]
            .iter()
            .any(|f| name.eq_ignore_ascii_case(f));
        if !framing {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
    if !head_only && !bodiless {
        out.extend_from_slice(&resp.body);
    }
    Ok(asked_close)
}

/// Calls `f` with this second's `Date: ...\r\n` header line, formatted at
/// most once a second per thread.
fn with_date(f: impl FnOnce(&str)) {
    thread_local! {
        /// (the second it was made for, the line).
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.0 != secs {
            *cell = (secs, format!("Date: {}\r\n", httpdate::fmt_http_date(now)));
        }
        f(&cell.1);
    });
}
