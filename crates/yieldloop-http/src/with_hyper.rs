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
//! - [`Server`]: the same on several worker threads, each with its own
//!   `SO_REUSEPORT` listener and scheduler ([`yieldloop::Runtime`]).
//! - [`serve_connection`]: one connection, blocking-style.
//!
//! # Client
//!
//! - [`get`] and [`request`]: one request on a fresh connection, from a
//!   task, the body collected.
//! - [`Client`]: one kept-alive connection for several requests.
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

mod client;
mod rt;
mod server;

pub use client::{get, request, Client, Error};
pub use rt::{io, Io, YieldloopExecutor, YieldloopSleep, YieldloopTimer};
pub use server::{http1_builder, serve, serve_connection, serve_with, Server};
