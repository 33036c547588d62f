//! One HTTP/1.1 connection, written as straight-line code: read, parse,
//! read the body, call the handler, answer, repeat.
//!
//! ```text
//!   read ──▶ buf ──▶ head ─┬─ complete, body in ───▶ handler ──▶ answer into `out` ──┐
//!    ▲                     ├─ complete, body not ──▶ Pending: read the body ─────────┤
//!    │                     ├─ partial ─────────────▶ write `out`, read more ─────────┤
//!    │                     └─ invalid ─────────────▶ 400/413/414/431/501/505, close  │
//!    └──────────────── `out` past max_unwritten: write it first (back-pressure) ◀────┘
//! ```
//!
//! The request handed to the handler borrows the read buffer: the head
//! where it was parsed, the body right after it. Memory follows what the
//! client has sent, never what it declares: a body that does not come with
//! the head is read into a buffer that grows as bytes arrive (doubling, at
//! most to the head plus `max_body`), a chunked one is decoded in place as
//! it comes (`chunked`). The head is parsed again once the body is in,
//! which costs a second parse only for those requests. Answers wait in
//! `out` only up to `max_unwritten` bytes: past that they are written
//! before another request is read, so a client that pipelines and does not
//! read is held by its own socket (back-pressure), not buffered for. A
//! body of 4 KiB or more is never copied into `out`: it is written from
//! the handler's bytes, after the answers before it, in one vectored write.
//!
//! Every phase has one deadline, set when it starts and never moved by a
//! read: the head (`header_timeout`, from the first byte, or from the
//! accept for a connection's first request), the body (`body_timeout`,
//! from the end of the head), each batch of answers (`write_timeout`, from
//! the first write). Dripping a byte at a time buys nothing. Buffers are
//! per connection and reused: a request whose answer has a `'static` body
//! allocates nothing.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::{Shutdown, SocketAddr};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use yieldloop::net::TcpStream;

use super::chunked::{Decoder, Pos, Step, MAX_CHUNK_LINE};
use super::config::{ServeConfig, MAX_HEADERS_CAP};
use super::head::{self, Framing, Head, Parsed};
use super::message::{reason, Request, Response};

/// After the last answer on a connection that is closing: how long, and how
/// many bytes, the server keeps reading what the client still sends.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// See [`LINGER_TIME`].
const LINGER_BYTES: usize = 256 * 1024;

/// A read buffer grown past this for a large body goes back to the head
/// limit once the request is done, and so does the answer buffer after a
/// large answer, so that one big request does not pin memory for the rest
/// of a long keep-alive connection.
const KEEP_BUF: usize = 64 * 1024;

/// A body of at least this many bytes is written from where the handler
/// left it (its `'static` bytes, or its own vector), beside the answers
/// before it in one vectored write, never copied into the answer buffer:
/// that buffer holds heads and small bodies only, so a connection that
/// has sent large answers keeps no copy of them, and a pipelining client
/// that does not read holds little more than its socket.
const WRITE_IN_PLACE: usize = 4096;

/// The read buffer a connection starts with; it grows to `max_head` for a
/// head that long, and further for a body.
const FIRST_BUF: usize = 1024;

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
/// `TCP_NODELAY` and the limits and deadlines of `config` (see
/// [Facing the internet](crate#facing-the-internet)); the connection cap
/// and `/metrics` are the server's, not this function's.
///
/// # Errors
///
/// The connection's I/O errors: resets, broken pipes,
/// [`io::ErrorKind::TimedOut`] when answers are not taken within the
/// write timeout. A client that goes quiet between requests for the idle
/// timeout, or in the middle of one past its deadline (it gets a 408
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
        // Small at first: an idle or a slow connection holds 1 KiB, not
        // `max_head` (8 KiB, zeroed, so resident); a longer head grows it.
        buf: vec![0; FIRST_BUF.min(config.max_head.max(64))],
        start: 0,
        end: 0,
        out: Vec::with_capacity(512),
        pending: None,
        // The first request's head is due `header_timeout` after the
        // accept, as Go's ReadHeaderTimeout: a connection that sends
        // nothing is not kept for the (longer) idle timeout.
        deadline: config.header_timeout.map(|t| Instant::now() + t),
        fresh: true,
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
    /// length is the head limit, or more while a large body comes in.
    ///
    /// # Invariant
    ///
    /// Never longer than twice what the request under way has sent, and
    /// never past its head plus `max_body` (plus one chunk line for a
    /// chunked body).
    buf: Vec<u8>,
    /// See `buf`.
    start: usize,
    /// See `buf`.
    end: usize,
    /// Answers not yet written: pipelined requests are answered together,
    /// up to `max_unwritten` bytes.
    out: Vec<u8>,
    /// The request whose head is in and whose body is being read.
    pending: Option<Pending>,
    /// When the phase under way (head or body) must be done by; `None`
    /// until the first read that finds it incomplete, so a request that
    /// comes in one piece never asks the clock.
    deadline: Option<Instant>,
    /// No request has been seen on this connection yet.
    fresh: bool,
    /// `100 Continue` was sent for the request under way.
    continued: bool,
    /// The worker's drain flag and this connection's busy flag.
    watch: &'a Watch<'a>,
    /// Counts for the worker.
    stats: &'a Cell<ConnStats>,
}

/// A request whose head is complete and whose body is still coming.
struct Pending {
    /// The length of its head.
    head_len: usize,
    /// How far its body is.
    body: BodyRead,
}

/// How far a pending body is.
enum BodyRead {
    /// `Content-Length`: complete when this many bytes from the start of
    /// the request (head and body) are in.
    Length(usize),
    /// Chunked: the decoder and its offsets from the start of the request.
    Chunked(Decoder, Pos),
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

impl Conn<'_> {
    fn serve<H>(&mut self, handler: &H) -> io::Result<()>
    where
        H: Fn(&Request<'_>) -> Response,
    {
        loop {
            if self.pending.is_some() {
                match self.body_step() {
                    Ok(Some((body_end, next))) => {
                        let head_len = self.pending.take().map_or(0, |p| p.head_len);
                        if !self.respond(handler, head_len, body_end, next)? {
                            return self.close();
                        }
                        continue;
                    }
                    Ok(None) => self.make_room(),
                    Err(status) => return self.refuse(status),
                }
            } else {
                // A fresh table each time round: it borrows from `buf`,
                // which the reads below change. Uninitialised, so it costs
                // nothing.
                let mut table = [const { MaybeUninit::uninit() }; MAX_HEADERS_CAP];
                let max = self.config.max_headers.clamp(1, MAX_HEADERS_CAP);
                let parsed = head::parse(
                    &self.buf[self.start..self.end],
                    &mut table[..max],
                    self.config,
                );
                match parsed {
                    Parsed::Complete(mut head) => {
                        let (len, framing, expect) = (head.len, head.framing, head.expect_continue);
                        let have = self.end - self.start;
                        let body = match framing {
                            Framing::Length(n) if n > self.config.max_body => {
                                return self.refuse(413)
                            }
                            // The fast path: the whole request is in.
                            Framing::Length(n) if have - len >= n as usize => {
                                let need = len + n as usize;
                                head.req.body = &self.buf[self.start + len..self.start + need];
                                head.req.peer = self.peer;
                                let answered = answer(
                                    handler,
                                    &head,
                                    &mut self.out,
                                    self.stats,
                                    self.watch,
                                    self.config,
                                );
                                if !self.answered(answered, need)? {
                                    return self.close();
                                }
                                continue;
                            }
                            Framing::Length(n) => BodyRead::Length(len + n as usize),
                            Framing::Chunked => BodyRead::Chunked(
                                Decoder::default(),
                                Pos {
                                    body: len,
                                    raw: len,
                                    end: have,
                                },
                            ),
                        };
                        // The body is not all in: read it before calling
                        // the handler, within its own deadline.
                        self.pending = Some(Pending {
                            head_len: len,
                            body,
                        });
                        self.deadline = None;
                        if expect && !self.continued {
                            self.continued = true;
                            self.flush()?;
                            self.send_parts(b"HTTP/1.1 100 Continue\r\n\r\n", &[])?;
                        }
                        continue;
                    }
                    Parsed::Patch(at) => {
                        self.buf[self.start + at] = b'1';
                        continue;
                    }
                    Parsed::Partial => {
                        if self.end - self.start >= self.config.max_head {
                            let status = head::too_long(
                                &self.buf[self.start..self.end],
                                self.config.max_head,
                            );
                            return self.refuse(status);
                        }
                        self.flush()?;
                        if self.start == self.end && self.watch.draining.get() {
                            return self.close();
                        }
                        self.compact();
                        // A head longer than the buffer: double it, up to
                        // `max_head` (reached only by a head that long).
                        if self.end == self.buf.len() {
                            let len = (self.buf.len() * 2).min(self.config.max_head.max(64));
                            self.buf.resize(len.max(self.end + 1), 0);
                        }
                        if self.buf.len() > KEEP_BUF.max(self.config.max_head) && self.end == 0 {
                            self.buf.truncate(self.config.max_head.max(64));
                            self.buf.shrink_to_fit();
                        }
                    }
                    Parsed::Refuse(status) => return self.refuse(status),
                }
            }
            match self.read_more()? {
                Got::More => {}
                Got::Gone => return Ok(()),
                Got::Late => return self.refuse(408),
            }
        }
    }

    /// Takes in what has come of the pending body: `Some((body end, next
    /// request))`, offsets from `start`, once it is all in; `Err(status)`
    /// for a body refused.
    fn body_step(&mut self) -> Result<Option<(usize, usize)>, u16> {
        let have = self.end - self.start;
        let Some(pending) = self.pending.as_mut() else {
            return Ok(None);
        };
        match &mut pending.body {
            BodyRead::Length(need) => Ok((have >= *need).then_some((*need, *need))),
            BodyRead::Chunked(decoder, pos) => {
                pos.end = have;
                let buf = &mut self.buf[self.start..];
                match decoder.decode(buf, pos, self.config.max_body, self.config.max_head) {
                    Step::Done => Ok(Some((pos.body, pos.raw))),
                    Step::More => {
                        self.end = self.start + pos.end;
                        Ok(None)
                    }
                    Step::Refuse(status) => Err(status),
                }
            }
        }
    }

    /// Makes room in `buf` for more of the pending body: to the front
    /// first, then doubling, never past what the body may take.
    fn make_room(&mut self) {
        if self.end < self.buf.len() {
            return;
        }
        self.compact();
        let cap = match &self.pending {
            Some(Pending {
                body: BodyRead::Length(need),
                ..
            }) => *need,
            Some(p) => {
                let max_body = usize::try_from(self.config.max_body).unwrap_or(usize::MAX);
                p.head_len
                    .saturating_add(max_body)
                    .saturating_add(self.config.max_head + MAX_CHUNK_LINE)
            }
            None => self.buf.len(),
        };
        if self.end == self.buf.len() {
            // Never a zero-length read: that would look like the end.
            let len = (self.buf.len() * 2).min(cap).max(self.end + 1);
            self.buf.resize(len, 0);
        }
    }

    /// Calls the handler for the request at `start`, its head `head_len`
    /// bytes and its body up to `body_end`, the next one at `next`; returns
    /// whether the connection stays open.
    fn respond<H>(
        &mut self,
        handler: &H,
        head_len: usize,
        body_end: usize,
        next: usize,
    ) -> io::Result<bool>
    where
        H: Fn(&Request<'_>) -> Response,
    {
        let mut table = [const { MaybeUninit::uninit() }; MAX_HEADERS_CAP];
        let max = self.config.max_headers.clamp(1, MAX_HEADERS_CAP);
        let at = self.start;
        // The same bytes parsed the same way: this cannot fail.
        let Parsed::Complete(mut head) =
            head::parse(&self.buf[at..at + head_len], &mut table[..max], self.config)
        else {
            return Ok(false);
        };
        head.req.body = &self.buf[at + head_len..at + body_end];
        head.req.peer = self.peer;
        let answered = answer(
            handler,
            &head,
            &mut self.out,
            self.stats,
            self.watch,
            self.config,
        );
        self.answered(answered, next)
    }

    /// After an answer: consumes the request's `used` bytes, starts the
    /// next request's phase, writes a large body or a full `out`; returns
    /// whether the connection stays open.
    fn answered(&mut self, answered: Answered, used: usize) -> io::Result<bool> {
        self.start += used;
        (self.deadline, self.continued, self.fresh) = (None, false, false);
        if let Some(body) = answered.later {
            let out = std::mem::take(&mut self.out);
            let sent = self.send_parts(&out, &body);
            self.out = out;
            sent?;
            self.recycle_out();
        } else if self.out.len() >= self.config.max_unwritten {
            // Back-pressure: the next request is read only once these
            // answers are on their way.
            self.flush()?;
        }
        Ok(answered.keep)
    }

    /// Reads more of the request (or the first bytes of the next), within
    /// the idle timeout between requests and the phase's deadline inside
    /// one.
    fn read_more(&mut self) -> io::Result<Got> {
        let waiting = self.start == self.end && self.pending.is_none();
        let limit = if self.pending.is_some() {
            self.config.body_timeout
        } else {
            self.config.header_timeout
        };
        let timeout = match limit {
            _ if waiting && !self.fresh => self.config.idle_timeout,
            None if waiting => self.config.idle_timeout,
            None => None,
            Some(limit) => {
                let now = Instant::now();
                let deadline = *self.deadline.get_or_insert(now + limit);
                // A deadline <= now is due.
                match deadline.checked_duration_since(now) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ if waiting => return Ok(Got::Gone),
                    _ => return Ok(Got::Late),
                }
            }
        };
        if waiting {
            self.watch.busy.set(false);
        }
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
                Ok(if waiting { Got::Gone } else { Got::Late })
            }
            Err(e) => Err(e),
        }
    }

    /// Answers `status` (the server's own refusal) and closes.
    fn refuse(&mut self, status: u16) -> io::Result<()> {
        write_answer(&mut self.out, &Response::error(status), false, false, true)
            .expect("a valid answer");
        self.close()
    }

    /// Writes the pending answers.
    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            let out = std::mem::take(&mut self.out);
            let sent = self.send_parts(&out, &[]);
            self.out = out;
            sent?;
            self.recycle_out();
        }
        Ok(())
    }

    /// Empties `out` once written, and gives back a buffer grown past
    /// [`KEEP_BUF`] by a large batch.
    fn recycle_out(&mut self) {
        self.out.clear();
        if self.out.capacity() > KEEP_BUF {
            self.out = Vec::with_capacity(512);
        }
    }

    /// Writes `data` and then `more` whole (together, in vectored writes)
    /// within the write timeout: one deadline for all of it, not one per
    /// write, so that a client taking a few bytes now and then cannot
    /// stretch it.
    fn send_parts(&self, mut data: &[u8], mut more: &[u8]) -> io::Result<()> {
        let deadline = self.config.write_timeout.map(|t| Instant::now() + t);
        let mut first = true;
        while !data.is_empty() || !more.is_empty() {
            if let (false, Some(deadline)) = (first, deadline) {
                // A deadline <= now is due.
                let left = deadline
                    .checked_duration_since(Instant::now())
                    .filter(|d| !d.is_zero())
                    .ok_or(io::ErrorKind::TimedOut)?;
                self.stream.set_write_timeout(Some(left))?;
            }
            first = false;
            let written = if more.is_empty() {
                (&*self.stream).write(data)
            } else if data.is_empty() {
                (&*self.stream).write(more)
            } else {
                (&*self.stream).write_vectored(&[io::IoSlice::new(data), io::IoSlice::new(more)])
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    let of_data = n.min(data.len());
                    data = &data[of_data..];
                    more = &more[n - of_data..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if !first && deadline.is_some() {
            self.stream.set_write_timeout(self.config.write_timeout)?;
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
        let keep = self.buf.len().min(KEEP_BUF);
        while drained < LINGER_BYTES && Instant::now() < until {
            match (&*self.stream).read(&mut self.buf[..keep]) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
        Ok(())
    }
}

/// What [`answer`] did.
struct Answered {
    /// Whether the connection stays open.
    keep: bool,
    /// A body not to copy into `out` (see [`WRITE_IN_PLACE`]): written
    /// right after it, in the same vectored writes.
    later: Option<Cow<'static, [u8]>>,
}

/// Calls the handler and appends its answer to `out` (its head only, if
/// its body is at least [`WRITE_IN_PLACE`] or larger than `max_unwritten`:
/// the body is handed back to be written as it is). A function of its own, not a method, since the
/// request borrows the connection's read buffer meanwhile.
fn answer<H>(
    handler: &H,
    head: &Head<'_>,
    out: &mut Vec<u8>,
    stats: &Cell<ConnStats>,
    watch: &Watch<'_>,
    config: &ServeConfig,
) -> Answered
where
    H: Fn(&Request<'_>) -> Response,
{
    let mut counts = stats.get();
    let mut keep = head.keep_alive;
    let mut resp = match panic::catch_unwind(AssertUnwindSafe(|| handler(&head.req))) {
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
    let later = !head_only
        && !bodiless(resp.status)
        && (resp.body.len() >= WRITE_IN_PLACE || resp.body.len() > config.max_unwritten);
    match write_answer(out, &resp, head_only, keep, !later) {
        Ok(asked_close) => Answered {
            keep: keep && !asked_close,
            later: later.then(|| std::mem::take(&mut resp.body)),
        },
        Err(()) => {
            write_answer(out, &Response::error(500), head_only, false, true)
                .expect("a valid answer");
            Answered {
                keep: false,
                later: None,
            }
        }
    }
}

/// 1xx, 204 and 304 answers have no body, and no length to announce.
fn bodiless(status: u16) -> bool {
    status < 200 || status == 204 || status == 304
}

/// Appends the answer to `out` (its body only `with_body`): `Err(())` (and
/// nothing appended) if it cannot be sent as it is, else whether the
/// handler asked to close.
fn write_answer(
    out: &mut Vec<u8>,
    resp: &Response,
    head_only: bool,
    keep: bool,
    with_body: bool,
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
    let bodiless = bodiless(status);
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
    if with_body && !head_only && !bodiless {
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
