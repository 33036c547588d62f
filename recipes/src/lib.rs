//! Real programs on yieldloop's blocking-style sockets: the pieces that the
//! recipes in `recipes/examples/` share with the benchmarks.
//!
//! The recipes themselves are example programs of this package, runnable
//! from the repository root:
//!
//! ```text
//! cargo run --release --example tls_echo      # TLS echo server on 127.0.0.1:1237
//! cargo run --release --example http_server   # HTTP/1.1 server on 127.0.0.1:8080
//! cargo run --release --example http_get -- http://127.0.0.1:8080/ http://127.0.0.1:8080/sleep?ms=300
//! cargo run --release --example hyper_server  # hyper on yieldloop on 127.0.0.1:8081
//! cargo run --release --example redis_counter -- redis://127.0.0.1:6379/0   # needs a redis-server
//! cargo run --release --example pg_visits -- "host=127.0.0.1 user=postgres dbname=postgres"   # needs a PostgreSQL
//! cargo run --release --example service -- --redis redis://127.0.0.1:6379/0 --postgres 'host=127.0.0.1 user=postgres'
//! ```
//!
//! # Layout
//!
//! - [`http`]: an HTTP/1.1 server whose service is a handler,
//!   [`serve(addr, workers, handler)`](http::serve): thread-per-core
//!   workers on `SO_REUSEPORT` listeners, keep-alive and pipelining,
//!   limits and timeouts, a 500 for a panicking handler, a graceful drain
//!   on SIGTERM. Requests are parsed with `httparse`. The `http_server`
//!   recipe serves its [`demo`](http::demo) routes; the benchmarks run the
//!   same on one worker against hyper.
//! - [`hyper`](mod@hyper): hyper 1.x, server and client, on yieldloop with
//!   no tokio runtime: yieldloop's tasks as hyper's executor, its timers as
//!   hyper's timer, its sockets as hyper's I/O (`hyper_server` is its
//!   example program).
//! - [`redis`]: a Redis client for tasks: the `redis` crate's typed
//!   commands and pipelines over yieldloop's `TcpStream`, with a per-worker
//!   connection pool (`redis_counter` is its example program).
//! - [`postgres`]: a PostgreSQL client for tasks: tokio-postgres on
//!   yieldloop's reactor (`connect_raw` over yieldloop's `TcpStream`, its
//!   connection future on [`yieldloop::spawn_future`]), blocking-style
//!   calls, and a per-worker pool (`pg_visits` is its example program).
//! - [`pool`]: the per-worker connection pool both clients use.
//! - [`service`]: the handler of the `service` example, JSON endpoints
//!   on [`serve_with`](http::serve_with) backed by Redis and PostgreSQL
//!   through per-worker pools.
//!
//! # Examples
//!
//! A service is a handler; here on one connection accepted by hand, with
//! [`serve_connection`](http::serve_connection) (what each connection task
//! of [`serve`](http::serve) runs):
//!
//! ```
//! use std::io::{Read, Write};
//! use yieldloop::net::{TcpListener, TcpStream};
//! use yieldloop_recipes::http::{serve_connection, Request, Response, ServeConfig};
//!
//! fn hello(req: &Request<'_>) -> Response {
//!     match req.path() {
//!         "/" => Response::text(200, "hello\n"),
//!         _ => Response::error(404),
//!     }
//! }
//!
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     yieldloop::spawn(move || {
//!         let (stream, _) = listener.accept().unwrap();
//!         serve_connection(&stream, &ServeConfig::default(), &hello).unwrap();
//!     });
//!     let mut client = TcpStream::connect(addr)?;
//!     client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
//!     let mut answer = String::new();
//!     client.read_to_string(&mut answer)?;
//!     assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
//!     assert!(answer.ends_with("\r\n\r\nhello\n"));
//!     Ok(())
//! })
//! .unwrap();
//! ```

pub mod http;
pub mod hyper;
pub mod pool;
pub mod postgres;
pub mod redis;
pub mod service;
