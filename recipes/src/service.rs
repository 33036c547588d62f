//! The handler of the `service` example: JSON endpoints backed by Redis
//! (a page-view counter) and PostgreSQL (users, read through a Redis cache).
//!
//! A [`Service`] is made once per worker by [`serve_with`]'s factory, on
//! that worker's thread: it holds the worker's own connection pools, so a
//! request never waits for a lock or another thread. Every call to a
//! database pauses only the connection's task.
//!
//! # Endpoints
//!
//! | request | answer |
//! |---|---|
//! | `GET /health` | `200 {"status":"ok"}` |
//! | `POST /hits/{key}` | `200 {"key":KEY,"hits":N}`: Redis `INCR`, the count after it |
//! | `GET /hits/{key}` | `200 {"key":KEY,"hits":N}`: Redis `GET`, 0 for a key never hit |
//! | `POST /users` with `{"name":..,"email":..}` | `201` and the new user `{"id":..,"name":..,"email":..}`, a `Location` header |
//! | `GET /users/{id}` | `200` and the user, from Redis when cached (`X-Cache: hit`), else from PostgreSQL and then cached (`X-Cache: miss`) |
//!
//! A key is 1 to 128 letters, digits, `-`, `_` or `.`; an id a positive
//! integer.
//!
//! # Errors
//!
//! Every error is a JSON object `{"error":MESSAGE}` with its status:
//!
//! - `400`: a body that is not JSON, a user without a string `name` and
//!   `email`, a bad key or id;
//! - `404`: no such route, no such user; `405`: a known path with another
//!   method (with an `Allow` header);
//! - `409`: a user with that email exists already;
//! - `503`: Redis or PostgreSQL failed for this request (refused, reset,
//!   timed out, gone away). Only that request fails: the broken connection
//!   is dropped by its pool, the next request opens a fresh one, and the
//!   other endpoints go on. A Redis failure while reading or filling the
//!   user cache is not an error: the user comes from PostgreSQL
//!   (`X-Cache: off`).
//!
//! [`serve_with`]: crate::http::serve_with

use std::fmt;
use std::time::Duration;

use ::redis::Commands;
use serde_json::{json, Value};

use crate::http::{Request, Response};
use crate::redis::{Pool as RedisPool, PoolConfig as RedisPoolConfig};

/// The longest key `/hits/{key}` takes.
pub const MAX_KEY: usize = 128;

/// What every worker's [`Service`] is made from: `Send` and `Sync`, shared
/// by the workers.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    redis: RedisPoolConfig,
    cache_ttl: Duration,
    prefix: String,
}

impl ServiceConfig {
    /// A configuration over this Redis pool configuration; users are cached
    /// for 60 s, keys start with `service:`.
    pub fn new(redis: RedisPoolConfig) -> ServiceConfig {
        ServiceConfig {
            redis,
            cache_ttl: Duration::from_secs(60),
            prefix: "service:".into(),
        }
    }

    /// How long a user stays in the Redis cache (whole seconds, at least 1).
    pub fn cache_ttl(mut self, ttl: Duration) -> ServiceConfig {
        self.cache_ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// What every Redis key of the service starts with, so that several
    /// services (or tests) can share a server.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> ServiceConfig {
        self.prefix = prefix.into();
        self
    }

    /// This worker's service: its pools are this thread's (see
    /// [`RedisPoolConfig::pool`]). Call it on the worker's thread, in the
    /// factory given to [`serve_with`](crate::http::serve_with).
    pub fn service(&self) -> Service {
        Service {
            redis: self.redis.pool(),
            prefix: self.prefix.clone(),
        }
    }
}

/// One worker's handler and pools; see the [module docs](self).
#[derive(Debug)]
pub struct Service {
    redis: RedisPool,
    prefix: String,
}

/// Why a request failed, and so its status.
#[derive(Debug)]
enum Failure {
    BadRequest(String),
    NotFound(String),
    /// A database failed: (which, what it said).
    Unavailable(&'static str, String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::BadRequest(m) | Failure::NotFound(m) => f.write_str(m),
            Failure::Unavailable(what, m) => write!(f, "{what} unavailable: {m}"),
        }
    }
}

impl From<::redis::RedisError> for Failure {
    fn from(e: ::redis::RedisError) -> Failure {
        Failure::Unavailable("redis", e.to_string())
    }
}

impl Failure {
    fn response(&self) -> Response {
        let status = match self {
            Failure::BadRequest(_) => 400,
            Failure::NotFound(_) => 404,
            Failure::Unavailable(..) => 503,
        };
        json_response(status, &json!({ "error": self.to_string() }))
    }
}

/// A JSON answer.
fn json_response(status: u16, body: &Value) -> Response {
    let mut text = body.to_string();
    text.push('\n');
    Response::new(status)
        .header("Content-Type", "application/json")
        .body(text)
}

/// `405` with the methods the path takes.
fn not_allowed(allow: &'static str) -> Response {
    json_response(405, &json!({ "error": "method not allowed" })).header("Allow", allow)
}

impl Service {
    /// Answers one request; see the [module docs](self) for the routes.
    pub fn handle(&self, req: &Request<'_>) -> Response {
        let path = req.path().strip_prefix('/').unwrap_or("");
        let (first, rest) = match path.split_once('/') {
            Some((first, rest)) => (first, Some(rest)),
            None => (path, None),
        };
        let result = match (first, rest, req.method()) {
            ("health", None, "GET" | "HEAD") => Ok(json_response(200, &json!({"status": "ok"}))),
            ("health", None, _) => return not_allowed("GET, HEAD"),
            ("hits", Some(key), "POST") => self.hit(key),
            ("hits", Some(key), "GET" | "HEAD") => self.hits(key),
            ("hits", Some(_), _) => return not_allowed("GET, HEAD, POST"),
            _ => Err(Failure::NotFound(format!("no route for {}", req.path()))),
        };
        result.unwrap_or_else(|f| f.response())
    }

    /// The Redis key of counter `key`, after checking it.
    fn counter_key(&self, key: &str) -> Result<String, Failure> {
        let fine = !key.is_empty()
            && key.len() <= MAX_KEY
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !fine {
            return Err(Failure::BadRequest(format!(
                "a key is 1 to {MAX_KEY} letters, digits, '-', '_' or '.'"
            )));
        }
        Ok(format!("{}hits:{key}", self.prefix))
    }

    /// `POST /hits/{key}`: one more hit.
    fn hit(&self, key: &str) -> Result<Response, Failure> {
        let redis_key = self.counter_key(key)?;
        let hits: i64 = self.redis.get()?.incr(redis_key, 1)?;
        Ok(json_response(200, &json!({ "key": key, "hits": hits })))
    }

    /// `GET /hits/{key}`: the count so far.
    fn hits(&self, key: &str) -> Result<Response, Failure> {
        let redis_key = self.counter_key(key)?;
        let hits: Option<i64> = self.redis.get()?.get(redis_key)?;
        Ok(json_response(
            200,
            &json!({ "key": key, "hits": hits.unwrap_or(0) }),
        ))
    }
}
