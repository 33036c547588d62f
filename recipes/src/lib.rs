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
//! cargo run --release --example redis_counter -- redis://127.0.0.1:6379/0   # needs a redis-server
//! ```
//!
//! # Layout
//!
//! - [`http`]: one HTTP/1.1 server connection (keep-alive, pipelining,
//!   limits, the routes), parsed with `httparse`. The `http_server` recipe
//!   runs it behind thread-per-core listeners; the benchmarks run it on one
//!   scheduler against hyper.
//! - [`redis`]: a Redis client for tasks: the `redis` crate's typed
//!   commands and pipelines over yieldloop's `TcpStream`, with a per-worker
//!   connection pool (`redis_counter` is its example program).
//!
//! # Examples
//!
//! ```
//! use std::io::{Read, Write};
//! use yieldloop::net::{TcpListener, TcpStream};
//! use yieldloop_recipes::http::{serve_connection, Limits};
//!
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     yieldloop::spawn(move || {
//!         let (stream, _) = listener.accept().unwrap();
//!         serve_connection(&stream, &Limits::default()).unwrap();
//!     });
//!     let mut client = TcpStream::connect(addr)?;
//!     client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
//!     let mut answer = String::new();
//!     client.read_to_string(&mut answer)?;
//!     assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
//!     Ok(())
//! })
//! .unwrap();
//! ```

pub mod http;
pub mod redis;
