//! One HTTP/1.1 server connection, written as straight-line code: read,
//! parse, answer, repeat.
//!
//! [`serve_connection`] runs in the task that owns the connection. Its reads
//! and writes pause only that task, so a slow request (`/sleep`) or a slow
//! client holds up nothing else on the thread.
//!
//! # What it does
//!
//! - **Keep-alive**: HTTP/1.1 connections stay open unless the client sends
//!   `Connection: close`; HTTP/1.0 ones close after one answer unless the
//!   client sends `Connection: keep-alive`.
//! - **Pipelining**: every complete request already in the read buffer is
//!   answered, in order, before the next read; the answers go out in one
//!   write.
//! - **Routes**: `GET /` (a short greeting), `GET /sleep?ms=N` (answers after
//!   `yieldloop::sleep(N ms)`), `404` for other paths, `405` for methods other
//!   than `GET` and `HEAD`. `HEAD` gets the same head as `GET`, no body.
//! - **Limits** ([`Limits`]): a request head larger than the read buffer, or
//!   with more than 64 headers, gets `431`; a body (`Content-Length`) larger
//!   than `max_body` gets `413`; a body within it is read and thrown away;
//!   a chunked request body gets `501`. A malformed request gets `400`. Each
//!   of these closes that connection (after the answer) and nothing else.
//! - **Closing politely**: before closing, the server shuts down its sending
//!   side and reads what the client still sends for a moment (bounded in
//!   bytes and time), so that the client's unread bytes do not turn the close
//!   into a reset that could destroy the answer in flight.
//!
//! ```text
//!   read ──▶ buffer ──▶ parse head ─┬─ complete ─▶ discard body ─▶ answer into `out` ─┐
//!    ▲                              ├─ partial ──▶ write `out`, read more ─────────────┤
//!    │                              └─ invalid ──▶ 400/431, write, close               │
//!    └─────────────────────────────────────────────────────────────────────────────────┘
//! ```

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use yieldloop::net::TcpStream;

/// The body of `GET /`.
pub const HELLO: &[u8] = b"Hello from yieldloop!\n";

/// Most headers a request may carry; more gets `431`.
const MAX_HEADERS: usize = 64;

/// After the last answer on a connection that is closing: how long, and how
/// many bytes, the server keeps reading what the client still sends.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// See [`LINGER_TIME`].
const LINGER_BYTES: usize = 256 * 1024;

/// The bounds a connection works within.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop_recipes::http::Limits;
///
/// let strict = Limits {
///     max_head: 4096,
///     idle_timeout: Some(Duration::from_secs(5)),
///     ..Limits::default()
/// };
/// assert_eq!(strict.max_body, Limits::default().max_body);
/// ```
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request head (request line and headers) in bytes; also the
    /// size of each connection's read buffer. Default 8 KiB.
    pub max_head: usize,
    /// Largest request body (`Content-Length`) read and discarded; a larger
    /// one gets `413 Content Too Large`. Default 1 MiB.
    pub max_body: u64,
    /// Longest `/sleep?ms=N`; a larger N gets `400`. Default 60 s.
    pub max_sleep: Duration,
    /// How long a connection may stay silent (while waiting for a request
    /// or for the rest of one) or refuse to take an answer; `None` = no
    /// limit. Default 60 s.
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: 8 * 1024,
            max_body: 1024 * 1024,
            max_sleep: Duration::from_secs(60),
            idle_timeout: Some(Duration::from_secs(60)),
        }
    }
}

/// Serves HTTP/1.1 requests on `stream` until the client closes, asks to
/// close, or sends something the server will not take; returns the number of
/// requests answered.
///
/// Meant to run in a task of its own (one per connection): each read and
/// write pauses only that task. The connection gets `TCP_NODELAY` and read
/// and write timeouts of `limits.idle_timeout`.
///
/// # Errors
///
/// The connection's I/O errors: [`io::ErrorKind::TimedOut`] when a request
/// stays incomplete or an answer untaken for longer than the idle timeout
/// (a connection silent *between* requests for that long is closed with
/// `Ok`), [`io::ErrorKind::UnexpectedEof`] when the client closes in the
/// middle of a request body, resets, broken pipes.
///
/// # Examples
///
/// See the [crate docs](crate#examples).
pub fn serve_connection(stream: &TcpStream, limits: &Limits) -> io::Result<u64> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(limits.idle_timeout)?;
    stream.set_write_timeout(limits.idle_timeout)?;
    let mut conn = Conn {
        stream,
        limits,
        buf: vec![0; limits.max_head.max(64)],
        start: 0,
        end: 0,
        out: Vec::with_capacity(512),
        served: 0,
    };
    conn.run()
}

/// One connection's state.
struct Conn<'a> {
    /// The socket; reads and writes pause the task.
    stream: &'a TcpStream,
    /// The bounds in force.
    limits: &'a Limits,
    /// Bytes read and not yet consumed live in `buf[start..end]`; its length
    /// is the largest request head taken.
    buf: Vec<u8>,
    /// See `buf`.
    start: usize,
    /// See `buf`.
    end: usize,
    /// Answers not yet written: pipelined requests are answered together.
    out: Vec<u8>,
    /// Requests answered, the return value.
    served: u64,
}

impl Conn<'_> {
    fn run(&mut self) -> io::Result<u64> {
        loop {
            match parse_head(&self.buf[self.start..self.end], self.limits) {
                Ok(Some((head, len))) => {
                    self.start += len;
                    if !self.answer(&head)? {
                        self.close()?;
                        return Ok(self.served);
                    }
                }
                Ok(None) => {
                    // Nothing complete left: send what is answered before
                    // waiting for more.
                    self.flush()?;
                    self.compact();
                    if self.end == self.buf.len() {
                        self.respond(431, &[], false, false, &[]);
                        self.close()?;
                        return Ok(self.served);
                    }
                    match (&*self.stream).read(&mut self.buf[self.end..]) {
                        // The client closed: between requests that is the
                        // normal end; in the middle of one it gave up.
                        Ok(0) => return Ok(self.served),
                        Ok(n) => self.end += n,
                        Err(e) if e.kind() == io::ErrorKind::TimedOut && self.end == 0 => {
                            // Idle between requests: close quietly.
                            return Ok(self.served);
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(status) => {
                    self.respond(status, &[], false, false, &[]);
                    self.close()?;
                    return Ok(self.served);
                }
            }
        }
    }

    /// Answers one request whose head was consumed; returns whether the
    /// connection stays open.
    fn answer(&mut self, head: &Head) -> io::Result<bool> {
        if head.chunked {
            // Reading chunked bodies is not implemented; without reading it
            // the next request cannot be found, so the connection ends.
            self.respond(501, &[], false, false, &[]);
            return Ok(false);
        }
        if head.body_len > self.limits.max_body {
            self.respond(413, &[], false, false, &[]);
            return Ok(false);
        }
        self.discard_body(head.body_len)?;
        let head_only = head.method == Method::Head;
        let keep = head.keep_alive;
        match (head.method, head.route) {
            (Method::Other, _) => self.respond(405, &[], false, keep, b"Allow: GET, HEAD\r\n"),
            (_, Route::NotFound) => self.respond(404, &[], head_only, keep, &[]),
            (_, Route::BadQuery) => {
                let msg = format!(
                    "ms must be a whole number of milliseconds up to {}\n",
                    self.limits.max_sleep.as_millis()
                );
                self.respond(400, msg.as_bytes(), head_only, keep, &[]);
            }
            (_, Route::Hello) => self.respond(200, HELLO, head_only, keep, &[]),
            (_, Route::Sleep(ms)) => {
                // Earlier pipelined answers should not wait for this one.
                self.flush()?;
                yieldloop::sleep(Duration::from_millis(ms));
                let msg = format!("slept {ms} ms\n");
                self.respond(200, msg.as_bytes(), head_only, keep, &[]);
            }
        }
        self.served += 1;
        Ok(keep)
    }

    /// Reads and drops `len` body bytes, from the buffer first.
    fn discard_body(&mut self, len: u64) -> io::Result<()> {
        let buffered = (self.end - self.start) as u64;
        let from_buf = len.min(buffered);
        self.start += from_buf as usize;
        let mut left = len - from_buf;
        if left == 0 {
            return Ok(());
        }
        // The buffer is empty now (the body outlasted it): use all of it.
        (self.start, self.end) = (0, 0);
        while left > 0 {
            let want = left.min(self.buf.len() as u64) as usize;
            match (&*self.stream).read(&mut self.buf[..want])? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the client closed in the middle of a request body",
                    ))
                }
                n => left -= n as u64,
            }
        }
        Ok(())
    }

    /// Appends one answer to `out`.
    fn respond(&mut self, status: u16, body: &[u8], head_only: bool, keep: bool, extra: &[u8]) {
        let reason = reason(status);
        // Error answers without a body of their own carry their reason.
        let reason_body;
        let body = if body.is_empty() && status != 200 {
            reason_body = format!("{status} {reason}\n");
            reason_body.as_bytes()
        } else {
            body
        };
        let out = &mut self.out;
        let _ = write!(out, "HTTP/1.1 {status} {reason}\r\n");
        with_date(|date| out.extend_from_slice(date.as_bytes()));
        let _ = write!(
            out,
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
            body.len()
        );
        // HTTP/1.1 keeps connections open by default, HTTP/1.0 closes them:
        // say "close" whenever we close, which is right for both; a 1.0
        // client that asked to keep the connection sent "keep-alive", and
        // the same header in the answer tells it the server agrees.
        out.extend_from_slice(if keep {
            b"Connection: keep-alive\r\n"
        } else {
            b"Connection: close\r\n"
        });
        out.extend_from_slice(extra);
        out.extend_from_slice(b"\r\n");
        if !head_only {
            out.extend_from_slice(body);
        }
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
        let until = std::time::Instant::now() + LINGER_TIME;
        let mut drained = 0;
        while drained < LINGER_BYTES && std::time::Instant::now() < until {
            match (&*self.stream).read(&mut self.buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
        Ok(())
    }
}

/// What the server takes from a request head.
#[derive(Debug)]
struct Head {
    /// `GET`, `HEAD` or something the server does not serve.
    method: Method,
    /// Where the request goes.
    route: Route,
    /// Whether the connection stays open after the answer.
    keep_alive: bool,
    /// `Content-Length`, 0 without one.
    body_len: u64,
    /// `Transfer-Encoding` was given: a body of unknown length.
    chunked: bool,
}

/// The methods the server tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Other,
}

/// The routes, decided while the head is borrowed from the buffer so that
/// nothing is copied.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// `/`.
    Hello,
    /// `/sleep?ms=N`.
    Sleep(u64),
    /// `/sleep` without a usable `ms`.
    BadQuery,
    /// Anything else.
    NotFound,
}

/// Parses the request head at the start of `buf`: `Ok(None)` if it is not
/// complete yet, `Err(status)` if it is not acceptable.
fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<(Head, usize)>, u16> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(431),
        Err(_) => return Err(400),
    };
    // A complete parse fills these in.
    let (Some(method), Some(path), Some(version)) = (req.method, req.path, req.version) else {
        return Err(400);
    };
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let mut body_len: Option<u64> = None;
    let (mut chunked, mut close, mut keep, mut host) = (false, false, false, false);
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let n = content_length(h.value).ok_or(400u16)?;
            // Two different lengths: which one frames the body is anyone's
            // guess, so refuse.
            if body_len.is_some_and(|m| m != n) {
                return Err(400);
            }
            body_len = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("host") {
            host = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        }
    }
    // HTTP/1.1 requires Host; both framings at once is how requests are
    // smuggled past proxies.
    if (version == 1 && !host) || (chunked && body_len.is_some()) {
        return Err(400);
    }
    let keep_alive = !close && (version == 1 || keep);
    let head = Head {
        method,
        route: route(path, limits),
        keep_alive,
        body_len: body_len.unwrap_or(0),
        chunked,
    };
    Ok(Some((head, len)))
}

/// A `Content-Length` value: digits only, without sign or spaces around.
fn content_length(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

fn route(target: &str, limits: &Limits) -> Route {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/" => Route::Hello,
        "/sleep" => {
            let ms = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok());
            match ms {
                Some(ms) if u128::from(ms) <= limits.max_sleep.as_millis() => Route::Sleep(ms),
                _ => Route::BadQuery,
            }
        }
        _ => Route::NotFound,
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        _ => "Unknown",
    }
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
