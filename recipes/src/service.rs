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
//! integer. Users live in the table [`SCHEMA`] creates
//! ([`create_schema`]); without a PostgreSQL configuration
//! ([`ServiceConfig::postgres`]) the user endpoints answer 503.
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
//! [`serve_with`]: yieldloop_http::serve_with

use std::fmt;
use std::time::Duration;

use std::cell::RefCell;

use serde_json::{json, Value};
use yieldloop_postgres::tokio_postgres::error::SqlState;
use yieldloop_redis::redis::{self, Cmd, FromRedisValue, RedisResult};

use yieldloop_http::{Request, Response};
use yieldloop_postgres::{self as postgres, Pool as PgPool, PoolConfig as PgPoolConfig};
use yieldloop_redis::{Multiplexed, Pool as RedisPool, PoolConfig as RedisPoolConfig};

/// The service's table, created when missing by [`create_schema`].
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS users (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    email text NOT NULL UNIQUE
)";

/// The longest name or email `POST /users` takes, in characters.
pub const MAX_FIELD: usize = 200;

/// Creates the service's table when it is missing: once, before serving
/// (two workers creating it at the same moment could collide).
///
/// # Errors
///
/// The connect's, or the server's for the statement.
///
/// # Panics
///
/// Outside a task.
pub fn create_schema(opts: &postgres::ConnectOptions) -> Result<(), postgres::Error> {
    postgres::PgClient::connect(opts)?.batch_execute(SCHEMA)
}

/// The longest key `/hits/{key}` takes.
pub const MAX_KEY: usize = 128;

/// What every worker's [`Service`] is made from: `Send` and `Sync`, shared
/// by the workers.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    redis: RedisPoolConfig,
    postgres: Option<PgPoolConfig>,
    multiplexed: bool,
    /// Feature `hook`: Redis through the `redis` crate's own synchronous
    /// client instead of the recipe.
    #[cfg(feature = "hook")]
    sync_client: Option<redis::Client>,
    pg_timeout: Duration,
    cache_ttl: Duration,
    prefix: String,
}

impl ServiceConfig {
    /// A configuration over this Redis pool configuration; users are cached
    /// for 60 s, keys start with `service:`.
    pub fn new(redis: RedisPoolConfig) -> ServiceConfig {
        ServiceConfig {
            redis,
            postgres: None,
            multiplexed: false,
            #[cfg(feature = "hook")]
            sync_client: None,
            pg_timeout: Duration::from_secs(5),
            cache_ttl: Duration::from_secs(60),
            prefix: "service:".into(),
        }
    }

    /// Where the users are: without it, the user endpoints answer 503.
    pub fn postgres(mut self, postgres: PgPoolConfig) -> ServiceConfig {
        self.postgres = Some(postgres);
        self
    }

    /// Whether each worker sends its Redis commands over one shared
    /// [`Multiplexed`] connection (opened with the pool configuration's
    /// connect options, and opened again after it fails) instead of taking
    /// a connection from the pool per command. Concurrent requests then
    /// share writes and reads: fewer system calls, here and in Redis.
    pub fn multiplexed(mut self, on: bool) -> ServiceConfig {
        self.multiplexed = on;
        self
    }

    /// Feature `hook`: send the Redis commands through the `redis` crate's
    /// own synchronous client, unmodified (`redis::Connection`, a blocking
    /// `std::net::TcpStream` inside), instead of the Redis recipe. Each
    /// worker keeps the connections it opened in a free list and a request
    /// takes one for its command, so there are as many as requests in
    /// flight; under the hook a call pauses only its request's task. The
    /// pool configuration is then unused. This is what an existing program
    /// written for threads looks like on yieldloop; the recipe (the
    /// default, or [`multiplexed`](Self::multiplexed)) is the faster route.
    #[cfg(feature = "hook")]
    pub fn sync_client(mut self, client: redis::Client) -> ServiceConfig {
        self.sync_client = Some(client);
        self
    }

    /// How long a PostgreSQL call (checkout included) may take before its
    /// request gets 503 (default 5 s): a server that hangs fails requests
    /// instead of holding them. The interrupted connection is dropped by
    /// its pool.
    pub fn postgres_timeout(mut self, limit: Duration) -> ServiceConfig {
        self.pg_timeout = limit;
        self
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
    /// factory given to [`serve_with`](yieldloop_http::serve_with).
    pub fn service(&self) -> Service {
        Service {
            redis: self.redis.pool(),
            mux: self.multiplexed.then(|| RefCell::new(None)),
            #[cfg(feature = "hook")]
            sync: self.sync_client.clone().map(|client| SyncRedis {
                client,
                idle: RefCell::new(Vec::new()),
            }),
            postgres: self.postgres.as_ref().map(PgPoolConfig::pool),
            cache_ttl_s: self.cache_ttl.as_secs(),
            pg_timeout: self.pg_timeout,
            prefix: self.prefix.clone(),
        }
    }
}

/// One worker's handler and pools; see the [module docs](self).
#[derive(Debug)]
pub struct Service {
    redis: RedisPool,
    /// The shared connection, when multiplexed (`None` inside until the
    /// first command, and again after it breaks).
    mux: Option<RefCell<Option<Multiplexed>>>,
    /// The sync client's connections, with feature `hook`.
    #[cfg(feature = "hook")]
    sync: Option<SyncRedis>,
    postgres: Option<PgPool>,
    pg_timeout: Duration,
    cache_ttl_s: u64,
    prefix: String,
}

/// One worker's connections of the `redis` crate's synchronous client:
/// the idle ones; a request takes one (or opens one) for its command and
/// gives it back after a reply. No borrow of the list is held across a
/// call, which pauses the task.
#[cfg(feature = "hook")]
struct SyncRedis {
    client: redis::Client,
    idle: RefCell<Vec<redis::Connection>>,
}

#[cfg(feature = "hook")]
impl SyncRedis {
    fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        let taken = self.idle.borrow_mut().pop();
        let mut conn = match taken {
            Some(conn) => conn,
            None => self.client.get_connection()?,
        };
        let result = cmd.query(&mut conn);
        // After an error the connection may hold a late reply: drop it.
        if result.is_ok() && redis::ConnectionLike::is_open(&conn) {
            self.idle.borrow_mut().push(conn);
        }
        result
    }
}

#[cfg(feature = "hook")]
impl fmt::Debug for SyncRedis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncRedis")
            .field("client", &self.client)
            .field("idle", &self.idle.borrow().len())
            .finish()
    }
}

/// Why a request failed, and so its status.
#[derive(Debug)]
enum Failure {
    BadRequest(String),
    NotFound(String),
    Conflict(String),
    /// A database failed: (which, what it said).
    Unavailable(&'static str, String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::BadRequest(m) | Failure::NotFound(m) | Failure::Conflict(m) => f.write_str(m),
            Failure::Unavailable(what, m) => write!(f, "{what} unavailable: {m}"),
        }
    }
}

impl From<redis::RedisError> for Failure {
    fn from(e: redis::RedisError) -> Failure {
        Failure::Unavailable("redis", e.to_string())
    }
}

impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Failure {
        Failure::Unavailable("postgres", e.to_string())
    }
}

impl Failure {
    fn response(&self) -> Response {
        let status = match self {
            Failure::BadRequest(_) => 400,
            Failure::NotFound(_) => 404,
            Failure::Conflict(_) => 409,
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
            ("users", None, "POST") => self.create_user(req.body()),
            ("users", None, _) => return not_allowed("POST"),
            ("users", Some(id), "GET" | "HEAD") => self.user(id),
            ("users", Some(_), _) => return not_allowed("GET, HEAD"),
            _ => Err(Failure::NotFound(format!("no route for {}", req.path()))),
        };
        result.unwrap_or_else(|f| f.response())
    }

    /// Runs one Redis command: over this worker's multiplexed connection
    /// (opened on first use, and again after it broke), on a connection
    /// from its pool, or (feature `hook`) on the sync client.
    fn redis<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        #[cfg(feature = "hook")]
        if let Some(sync) = &self.sync {
            return sync.query(cmd);
        }
        let Some(mux) = &self.mux else {
            return cmd.query(&mut *self.redis.get()?);
        };
        let current = mux.borrow().clone().filter(|c| !c.is_broken());
        let mut conn = match current {
            Some(conn) => conn,
            None => {
                let conn = Multiplexed::connect(self.redis.config().manager())?;
                *mux.borrow_mut() = Some(conn.clone());
                conn
            }
        };
        cmd.query(&mut conn)
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
        let hits: i64 = self.redis(redis::cmd("INCR").arg(redis_key))?;
        Ok(json_response(200, &json!({ "key": key, "hits": hits })))
    }

    /// `GET /hits/{key}`: the count so far.
    fn hits(&self, key: &str) -> Result<Response, Failure> {
        let redis_key = self.counter_key(key)?;
        let hits: Option<i64> = self.redis(redis::cmd("GET").arg(redis_key))?;
        Ok(json_response(
            200,
            &json!({ "key": key, "hits": hits.unwrap_or(0) }),
        ))
    }

    /// Runs `f` on a client from this worker's PostgreSQL pool, within
    /// the service's time limit.
    fn with_postgres<T>(
        &self,
        f: impl FnOnce(&postgres::PgClient) -> Result<T, postgres::Error>,
    ) -> Result<Result<T, postgres::Error>, Failure> {
        let Some(pool) = &self.postgres else {
            return Err(Failure::Unavailable(
                "postgres",
                "no PostgreSQL configured".into(),
            ));
        };
        let limit = self.pg_timeout;
        yieldloop::timeout(limit, || pool.get().and_then(|client| f(&client)))
            .map_err(|_| Failure::Unavailable("postgres", format!("no answer within {limit:?}")))
    }

    /// `POST /users`: a new user from `{"name":..,"email":..}`.
    fn create_user(&self, body: &[u8]) -> Result<Response, Failure> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| Failure::BadRequest(format!("the body is not JSON: {e}")))?;
        let field = |name: &str| -> Result<&str, Failure> {
            match value.get(name).and_then(Value::as_str) {
                Some(v) if !v.trim().is_empty() && v.chars().count() <= MAX_FIELD => Ok(v),
                _ => Err(Failure::BadRequest(format!(
                    "a user needs a \"{name}\": a string of 1 to {MAX_FIELD} characters"
                ))),
            }
        };
        let (name, email) = (field("name")?, field("email")?);
        if !email.contains('@') {
            return Err(Failure::BadRequest("an email has an '@'".into()));
        }
        let inserted = self.with_postgres(|client| {
            client.query_one(
                "INSERT INTO users (name, email) VALUES ($1, $2) RETURNING id",
                &[&name, &email],
            )
        })?;
        let id: i64 = match inserted {
            Ok(row) => row.get(0),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                return Err(Failure::Conflict(format!(
                    "a user with email {email:?} exists already"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        let user = json!({ "id": id, "name": name, "email": email });
        Ok(json_response(201, &user).header("Location", format!("/users/{id}")))
    }

    /// `GET /users/{id}`: from the cache, else from PostgreSQL (and then
    /// into the cache). A cache that fails is passed by, not an error.
    fn user(&self, id: &str) -> Result<Response, Failure> {
        // Digits only: `parse` would also take a leading `+`.
        let id = match id.parse::<i64>() {
            Ok(n) if n > 0 && id.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(Failure::BadRequest("an id is a positive integer".into())),
        };
        let cache_key = format!("{}user:{id}", self.prefix);
        let cached: Result<Option<String>, _> = self.redis(redis::cmd("GET").arg(&cache_key));
        if let Ok(Some(text)) = &cached {
            return Ok(Response::new(200)
                .header("Content-Type", "application/json")
                .header("X-Cache", "hit")
                .body(text.clone()));
        }
        let row = self.with_postgres(|client| {
            client.query_opt("SELECT id, name, email FROM users WHERE id = $1", &[&id])
        })??;
        let Some(row) = row else {
            return Err(Failure::NotFound(format!("no user {id}")));
        };
        let user = json!({
            "id": row.get::<_, i64>(0),
            "name": row.get::<_, String>(1),
            "email": row.get::<_, String>(2),
        });
        let mut text = user.to_string();
        text.push('\n');
        let cache = if cached.is_ok() {
            let stored: RedisResult<()> = self.redis(
                redis::cmd("SET")
                    .arg(&cache_key)
                    .arg(&text)
                    .arg("EX")
                    .arg(self.cache_ttl_s),
            );
            if stored.is_ok() {
                "miss"
            } else {
                "off"
            }
        } else {
            "off"
        };
        Ok(Response::new(200)
            .header("Content-Type", "application/json")
            .header("X-Cache", cache)
            .body(text))
    }
}
