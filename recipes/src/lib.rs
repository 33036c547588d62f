//! Larger programs on yieldloop and its crates, and what they share with
//! the benchmarks: the demonstration routes of the HTTP examples and the
//! JSON service over Redis and PostgreSQL.
//!
//! The programs are example programs of this package, runnable from the
//! repository root:
//!
//! ```text
//! cargo run --release --example tls_echo      # TLS echo server on 127.0.0.1:1237
//! cargo run --release --example http_server   # HTTP/1.1 server on 127.0.0.1:8080
//! cargo run --release --example http_get -- http://127.0.0.1:8080/ http://127.0.0.1:8080/sleep?ms=300
//! cargo run --release --example hyper_server  # hyper on yieldloop on 127.0.0.1:8081
//! cargo run --release --example service -- --redis redis://127.0.0.1:6379/0 --postgres 'host=127.0.0.1 user=postgres'
//! ```
//!
//! The pieces a program of one's own adds with cargo are the crates in
//! `crates/`: [`yieldloop_http`] (the HTTP/1.1 server, and hyper's server
//! and client on yieldloop), [`yieldloop_redis`], [`yieldloop_postgres`]
//! and [`yieldloop_pool`]. Their own examples run the same way
//! (`cargo run --example redis_counter`, `pg_visits`, ...).
//!
//! # Layout
//!
//! - [`demo`]: the routes of the `http_server` and `hyper_server` examples
//!   and of the HTTP benchmarks, as a handler and as a hyper service.
//! - [`service`]: the handler of the `service` example, JSON endpoints
//!   on [`serve_with`](yieldloop_http::serve_with) backed by Redis and
//!   PostgreSQL through per-worker pools.

pub mod demo;
pub mod service;
