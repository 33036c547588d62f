//! hyper 1.x on yieldloop, server and client, with no tokio runtime: hyper's
//! connection futures run as yieldloop tasks, its timers are yieldloop's,
//! and its sockets are yieldloop's, woken by yieldloop's reactor.
//!
//! hyper is runtime-agnostic: it asks its caller for three things, and
//! this module hands it yieldloop's.
//!
//! | hyper needs              | given here                                  |
//! |--------------------------|---------------------------------------------|
//! | I/O (`rt::Read`/`Write`) | [`Io`]: a yieldloop `TcpStream` through `hyper_util`'s `TokioIo` (the stream implements tokio's `AsyncRead`/`AsyncWrite` with yieldloop's feature `tokio`) |
//! | an `rt::Timer`           | [`YieldloopTimer`], over [`yieldloop::Sleep`] |
//! | an `rt::Executor`        | [`YieldloopExecutor`], over [`yieldloop::spawn_future`] |
//!
//! Each connection is one future driven by one task
//! ([`spawn_future`](yieldloop::spawn_future)); a service's future runs
//! inside it, so a handler that awaits a [`yieldloop::sleep_future`] (or a
//! socket) pauses only its connection, and blocking-style tasks on the same
//! thread keep running beside it.
//!
//! # Server
//!
//! - [`serve`]: accept on a yieldloop listener and serve each connection
//!   with hyper's HTTP/1.1 server (keep-alive on), until cancelled.
//! - [`serve_auto`]: HTTP/2 with prior knowledge (h2c) and HTTP/1.1 on one
//!   listener, told apart by the connection's first bytes (hyper-util's
//!   `auto` server); each HTTP/2 stream a task of its own.
//! - `serve_tls` (feature `tls`): over TLS with yieldloop-rustls, HTTP/2
//!   or HTTP/1.1 as ALPN (`h2`, `http/1.1`) agrees.
//! - [`Server`]: the same on several worker threads, each with its own
//!   `SO_REUSEPORT` listener and scheduler ([`yieldloop::Runtime`]).
//! - [`serve_connection`]: one connection, blocking-style.
//!
//! # Client
//!
//! - [`get`] and [`request`]: one request on a fresh connection, from a
//!   task, the body collected.
//! - [`Client`]: one kept-alive HTTP/1.1 connection for several requests.
//! - [`Http2Client`]: one HTTP/2 connection shared by many tasks, each
//!   request a stream; h2c with prior knowledge, or (feature `tls`) HTTP/2
//!   agreed by ALPN.
//!
//! # Stacks
//!
//! HTTP/2 connections, their streams and TLS connections run on tasks
//! with [`HYPER_TASK_STACK_SIZE`] (256 KiB): their futures overflow the
//! default 64 KiB in a debug build. A task that calls [`Http2Client`]'s
//! methods polls only the request's future on its own stack.
//!
//! hyper's upgrades (`hyper::upgrade::on`) are not available: hyper hands
//! an upgraded connection over as a `Send` value, and yieldloop's sockets
//! are not `Send`. WebSocket servers use [`crate::ws`] on a port of their
//! own.
//!
//! # Examples
//!
//! A server and a client in one run:
//!
//! ```
//! use std::convert::Infallible;
//! use yieldloop::net::TcpListener;
//! use yieldloop_http::http_body_util::Full;
//! use yieldloop_http::hyper::body::{Bytes, Incoming};
//! use yieldloop_http::hyper::{self, Request, Response};
//!
//! async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from("hello\n"))))
//! }
//!
//! yieldloop::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let service = hyper::service::service_fn(hello);
//!     yieldloop::spawn(move || yieldloop_http::with_hyper::serve(listener, service));
//!     let resp = yieldloop_http::with_hyper::get(&format!("http://{addr}/")).unwrap();
//!     assert_eq!(resp.status(), 200);
//!     assert_eq!(resp.body().as_ref(), b"hello\n");
//! });
//! ```

mod auto;
mod client;
mod http2_client;
mod rt;
mod server;
#[cfg(feature = "tls")]
mod tls;

pub use auto::{auto_builder, serve_auto, serve_auto_with};
pub use client::{get, request, Client, Error};
pub use http2_client::{http2_client_builder, Http2Client};
pub use rt::{io, Io, YieldloopExecutor, YieldloopSleep, YieldloopTimer, HYPER_TASK_STACK_SIZE};
pub use server::{http1_builder, serve, serve_connection, serve_with, Server};
#[cfg(feature = "tls")]
pub use tls::{serve_tls, serve_tls_with, ALPN_H2_HTTP1};

pub(crate) use server::accept_loop;
