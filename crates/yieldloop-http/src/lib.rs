//! An HTTP/1.1 server whose service is a handler: a function from a
//! [`Request`] to a [`Response`].
//!
//! [`serve`] runs one yieldloop scheduler per worker thread, each accepting
//! on its own `SO_REUSEPORT` listener, one task per connection. A handler
//! runs in its connection's task: it may sleep, read sockets, query a
//! database through a task-aware client, and only that connection waits.
//!
//! # What the server does for the handler
//!
//! - **Keep-alive**: HTTP/1.1 connections stay open unless the client (or
//!   the handler's answer) says `Connection: close`; HTTP/1.0 ones close
//!   after one answer unless the client sends `Connection: keep-alive`.
//!   Pipelined requests are answered in order, their answers written
//!   together.
//! - **Limits** ([`ServeConfig`]): a head over `max_head` bytes or with more
//!   than `max_headers` headers gets `431`; a `Content-Length` over
//!   `max_body` gets `413`; a malformed request (a bad request line or
//!   header, two different lengths, HTTP/1.1 without `Host`) gets `400`; a
//!   chunked body gets `411 Length Required` (chunked request bodies are not
//!   read: send a `Content-Length`), another transfer coding `501`. Each of
//!   these closes that connection after the answer, and nothing else.
//! - **Bodies**: the handler gets the whole body; a client that sends
//!   `Expect: 100-continue` is told to go on once the head is accepted.
//! - **Timeouts**: a connection silent between requests for `idle_timeout`
//!   is closed; a request that takes longer than `read_timeout` to come in
//!   gets `408` and the connection closes; an answer the client does not
//!   take within `write_timeout` closes it.
//! - **Panics**: a handler that panics gets its request answered `500`;
//!   that connection closes, the worker and every other connection go on.
//! - **Drain**: on SIGTERM or SIGINT (or [`Shutdown::trigger`]) each worker
//!   stops accepting, closes the connections waiting for a request, lets
//!   those with a request under way finish it (answered with
//!   `Connection: close`) for up to `grace`, cancels the rest, and
//!   [`serve`] returns a [`Summary`].
//!
//! # Layout
//!
//! - `message`: [`Request`] (borrowed from the connection's buffer) and
//!   [`Response`].
//! - `conn`: one connection, [`serve_connection`]: parsing (`httparse`),
//!   limits, timeouts, calling the handler, writing answers.
//! - `server`: [`ServeConfig`], [`Server`], [`Shutdown`], the workers and
//!   the drain.
//! - [`with_hyper`]: hyper 1.x, server and client, on yieldloop with no
//!   tokio runtime, for those who want hyper's own types and services.
//!
//! The crates this one's API speaks in are re-exported, so that their
//! versions always match: [`hyper`], [`http_body_util`] and
//! [`hyper_util`].
//!
//! # Examples
//!
//! A service with two routes, stopped here by its [`Shutdown`] handle
//! (a real one would simply call [`serve`] and stop on SIGTERM):
//!
//! ```
//! use yieldloop_http::{Request, Response, ServeConfig};
//!
//! fn service(req: &Request<'_>) -> Response {
//!     match (req.method(), req.path()) {
//!         ("GET", "/hello") => Response::text(200, "hello\n"),
//!         ("POST", "/len") => Response::text(200, format!("{}\n", req.body().len())),
//!         _ => Response::error(404),
//!     }
//! }
//!
//! let server = ServeConfig::default().signals(false).bind("127.0.0.1:0", 2)?;
//! let (addr, stop) = (server.local_addr(), server.shutdown_handle());
//! let running = std::thread::spawn(move || server.run(service));
//!
//! // Any client will do; here a raw one.
//! use std::io::{Read, Write};
//! let mut client = std::net::TcpStream::connect(addr)?;
//! client.write_all(b"POST /len HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")?;
//! let mut answer = String::new();
//! client.read_to_string(&mut answer)?;
//! assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
//! assert!(answer.ends_with("\r\n\r\n5\n"));
//!
//! stop.trigger();
//! let summary = running.join().unwrap()?;
//! assert_eq!(summary.requests, 1);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A handler with per-worker state (a connection pool, a cache): made on
//! each worker's thread by a factory, so it may hold `Rc`s and other things
//! that never leave the thread.
//!
//! ```no_run
//! use std::cell::Cell;
//! use std::rc::Rc;
//! use yieldloop_http::{serve_with, Request, Response};
//!
//! serve_with("127.0.0.1:8080", 4, || {
//!     let hits = Rc::new(Cell::new(0u64)); // this worker's own
//!     move |_req: &Request<'_>| {
//!         hits.set(hits.get() + 1);
//!         Response::text(200, format!("{} hits on this worker\n", hits.get()))
//!     }
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use yieldloop::net::ToSocketAddrs;

mod conn;
mod message;
mod server;
pub mod with_hyper;

pub use http_body_util;
pub use hyper;
pub use hyper_util;

pub use conn::serve_connection;
pub use message::{Body, Request, Response};
pub use server::{ServeConfig, Server, Shutdown, Summary};

/// Serves `handler` on `addr` with `workers` threads (one scheduler and one
/// `SO_REUSEPORT` listener each) and the default [`ServeConfig`], until
/// SIGTERM or SIGINT; then drains and returns what it did.
///
/// The handler is cloned once per worker and called from that worker's
/// connection tasks. For per-worker state, see [`serve_with`]; for other
/// limits, the port chosen for port 0, or a way to stop other than a
/// signal, see [`ServeConfig::bind`].
///
/// # Errors
///
/// Binding `addr`, starting the threads, installing the signal handlers.
///
/// # Examples
///
/// ```no_run
/// use yieldloop_http::{serve, Response};
///
/// serve("0.0.0.0:8080", 4, |req| match req.path() {
///     "/" => Response::text(200, "hello\n"),
///     _ => Response::error(404),
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve<H>(addr: impl ToSocketAddrs, workers: usize, handler: H) -> io::Result<Summary>
where
    H: Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
{
    ServeConfig::default().bind(addr, workers)?.run(handler)
}

/// Like [`serve`], with a handler made by `factory` on each worker's
/// thread, once, before it accepts: the place for per-worker state such as
/// a connection pool, which need not be `Send`.
///
/// # Errors
///
/// As for [`serve`].
///
/// # Examples
///
/// See the [module docs](self#examples).
pub fn serve_with<F, H>(addr: impl ToSocketAddrs, workers: usize, factory: F) -> io::Result<Summary>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: Fn(&Request<'_>) -> Response + 'static,
{
    ServeConfig::default()
        .bind(addr, workers)?
        .run_with(factory)
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
