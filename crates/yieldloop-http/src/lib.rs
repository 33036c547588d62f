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
//!   together (up to `max_unwritten` bytes at a time).
//! - **Framing** (RFC 9112): bodies by `Content-Length` or
//!   `Transfer-Encoding: chunked` (decoded, extensions and trailers
//!   checked and dropped); an absolute-form target (`GET http://host/p`)
//!   gives the handler its path, and its authority as [`Request::host`];
//!   `HTTP/1.2` and later 1.x are served as 1.1. A malformed request (a bad
//!   request line, header or chunk, two different lengths, a length and a
//!   coding, HTTP/1.1 without `Host`, two `Host` headers or an invalid
//!   one) gets `400`; another major version `505`; a coding other than
//!   `chunked` `501`. Each refusal closes that connection after the
//!   answer, and nothing after it on that connection is answered.
//! - **Bodies**: the handler gets the whole body, within `max_body`; a
//!   client that sends `Expect: 100-continue` is told to go on once the
//!   head is accepted.
//! - **Limits and deadlines**: see [Facing the internet](#facing-the-internet).
//! - **Panics**: a handler that panics gets its request answered `500`;
//!   that connection closes, the worker and every other connection go on.
//! - **Drain**: on SIGTERM or SIGINT (or [`Shutdown::trigger`]) each worker
//!   stops accepting, closes the connections waiting for a request, lets
//!   those with a request under way finish it (answered with
//!   `Connection: close`) for up to `grace`, cancels the rest, and
//!   [`serve`] returns a [`Summary`].
//!
//! # Facing the internet
//!
//! Every limit a client can run into, its default ([`ServeConfig`] sets
//! each, and names the server whose default it follows), and what a
//! client that passes it gets. None of them lets a client make the server
//! hold more than its buffers: memory follows the bytes a client has
//! sent, never what it declares.
//!
//! | what | default | a client past it gets |
//! |---|---|---|
//! | request line (`max_head`) | 8 KiB | `414`, close |
//! | head: line and headers (`max_head`) | 8 KiB | `431`, close |
//! | headers (`max_headers`) | 100 | `431`, close |
//! | body, declared or decoded (`max_body`) | 1 MiB | `413`, close (as soon as a length or a chunk size says so) |
//! | chunk-size line with extensions | 4 KiB | `400`, close |
//! | trailers of a chunked body (`max_head`) | 8 KiB | `431`, close |
//! | the whole head (`header_timeout`), from its first byte, or from the accept for a connection's first request | 30 s | `408`, close (a new connection that sent nothing: closed) |
//! | the whole body (`body_timeout`), from the end of the head | 60 s | `408`, close |
//! | writing a batch of answers (`write_timeout`), all of it | 60 s | closed |
//! | silence between requests (`idle_timeout`) | 75 s | closed |
//! | answers waiting for a pipelining client (`max_unwritten`) | 64 KiB | its requests are not read until they are written: its own socket holds it back |
//! | open connections (`max_connections`), split evenly over the workers | ¾ of `RLIMIT_NOFILE`, at most 1024 below it | not accepted (it waits in the listener's backlog) until a connection closes; those open are served as before |
//! | a failing accept (`EMFILE`, `ENFILE`, …) | | the acceptor backs off 5 ms, doubling to 1 s, and retries; it never spins |
//! | `/metrics` (`metrics_path`) | off | the handler's, like any other path |
//!
//! Per connection the server holds a read buffer that starts at 1 KiB and
//! doubles up to `max_head` for a longer head (more only while a body
//! comes in, at most twice what has come), up to `max_unwritten` bytes of
//! answers (heads, and bodies under 4 KiB: a larger body is written from
//! the handler's bytes, never copied), and the task's stack (two pages
//! for a connection between requests). This server has no TLS of its own:
//! behind a proxy that ends TLS it needs none, and a TLS handshake's
//! deadline belongs to the layer that runs it (`yieldloop-rustls`, whose
//! acceptor holds a half-open handshake in a shallow pause until the
//! client's hello has come whole, or the proxy).
//!
//! # Layout
//!
//! - `message`: [`Request`] (borrowed from the connection's buffer) and
//!   [`Response`].
//! - `conn`: one connection, [`serve_connection`]: reading, limits,
//!   deadlines, back-pressure, calling the handler, writing answers.
//! - `head`: the request head: `httparse`, then what RFC 9112 leaves to
//!   the server (version, target forms, `Host`, framing).
//! - `chunked`: chunked request bodies, decoded in place as they arrive.
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

mod chunked;
mod config;
mod conn;
mod head;
mod message;
mod server;
pub mod with_hyper;
#[cfg(feature = "ws")]
pub mod ws;

pub use http_body_util;
pub use hyper;
pub use hyper_util;
#[cfg(feature = "tls")]
pub use yieldloop_rustls;

pub use config::ServeConfig;
pub use conn::serve_connection;
pub use message::{Body, Request, Response};
pub use server::{Server, Shutdown, Summary};

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
