//! A JSON service on yieldloop: a page-view counter in Redis, and users in
//! PostgreSQL read through a Redis cache. The handler is
//! [`yieldloop_recipes::service`]; each worker makes its own, with its own
//! PostgreSQL pool and multiplexed Redis connection, in the factory given
//! to `serve_with`.
//!
//! It needs a running redis-server and PostgreSQL (from the
//! `redis-server` and `postgresql` packages). Addresses come from flags,
//! else from the environment, else the defaults:
//!
//! ```text
//! redis-server --port 6379 --save '' &
//! cargo run --release --example service -- \
//!     --addr 127.0.0.1:8080 --workers 2 \
//!     --redis redis://127.0.0.1:6379/0 \
//!     --postgres 'host=127.0.0.1 port=5432 user=postgres dbname=postgres'
//!
//! curl -X POST localhost:8080/hits/home          # {"hits":1,"key":"home"}
//! curl localhost:8080/hits/home                  # {"hits":1,"key":"home"}
//! curl -d '{"name":"Ada","email":"ada@example.com"}' localhost:8080/users
//! curl -i localhost:8080/users/1                 # X-Cache: miss, then hit
//! ```
//!
//! | flag | environment | default |
//! |---|---|---|
//! | `--addr` | `SERVICE_ADDR` | `127.0.0.1:8080` |
//! | `--workers` | `SERVICE_WORKERS` | 2 |
//! | `--redis` | `REDIS_URL` | `redis://127.0.0.1:6379/0` |
//! | `--postgres` | `DATABASE_URL` | `host=127.0.0.1 user=postgres dbname=postgres` |
//!
//! The PostgreSQL string is either `key=value` pairs or a
//! `postgresql://user:password@host:port/dbname` URL. The service creates
//! its `users` table when it is missing. It runs until SIGTERM or SIGINT,
//! then drains (requests under way finish) and prints what it served.

use std::time::Duration;

use yieldloop_http::serve_with;
use yieldloop_recipes::service::{create_schema, ServiceConfig};
use {yieldloop_postgres as postgres, yieldloop_redis as redis};

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

/// The settings, from flags, the environment and defaults.
struct Settings {
    addr: String,
    workers: usize,
    redis: String,
    postgres: String,
}

/// Each setting from its flag, else from the environment, else the default.
fn settings(args: &mut Args) -> Settings {
    let mut setting = |flag: &str, var: &str, default: &str| -> String {
        args.value(flag)
            .or_else(|| std::env::var(var).ok())
            .unwrap_or_else(|| default.into())
    };
    let addr = setting("--addr", "SERVICE_ADDR", "127.0.0.1:8080");
    let workers = setting("--workers", "SERVICE_WORKERS", "2");
    let redis = setting("--redis", "REDIS_URL", "redis://127.0.0.1:6379/0");
    let postgres = setting(
        "--postgres",
        "DATABASE_URL",
        "host=127.0.0.1 user=postgres dbname=postgres",
    );
    args.finish();
    let workers = match workers.parse() {
        Ok(n) if n > 0 => n,
        _ => args.fail(format!("{workers:?} is not a number of workers")),
    };
    Settings {
        addr,
        workers,
        redis,
        postgres,
    }
}

fn main() {
    let mut args =
        Args::new("service [--addr HOST:PORT] [--workers N] [--redis URL] [--postgres CONNINFO]");
    let s = settings(&mut args);
    let redis = match redis::ConnectOptions::from_url(&s.redis) {
        Ok(options) => options,
        Err(e) => args.fail(format!("bad Redis URL {:?}: {e}", s.redis)),
    };
    // Short limits: a database that hangs fails its requests with 503
    // within seconds instead of holding them.
    let redis = redis::PoolConfig::new(
        redis
            .connect_timeout(Duration::from_secs(2))
            .read_timeout(Duration::from_secs(5))
            .write_timeout(Duration::from_secs(5)),
    )
    .max_size(32)
    .checkout_timeout(Some(Duration::from_secs(5)));
    let pg: postgres::ConnectOptions = match s.postgres.parse() {
        Ok(options) => options,
        Err(e) => args.fail(format!("bad PostgreSQL string {:?}: {e}", s.postgres)),
    };
    let pg = pg.connect_timeout(Duration::from_secs(2));
    // The table, once, before the workers start.
    let table = pg.clone();
    let created = yieldloop::run(move || create_schema(&table));
    if let Err(e) = created {
        eprintln!("service: creating the users table: {e}");
        std::process::exit(1);
    }
    let pg = postgres::PoolConfig::new(pg)
        .max_size(16)
        .checkout_timeout(Some(Duration::from_secs(5)));
    // Each worker sends its Redis commands over one multiplexed connection:
    // concurrent requests share writes and reads (the pool's settings give
    // its connect options).
    let config = ServiceConfig::new(redis).postgres(pg).multiplexed(true);
    eprintln!(
        "service: listening on {} with {} workers (Redis {}, PostgreSQL {:?})",
        s.addr, s.workers, s.redis, s.postgres
    );
    // The factory runs once on each worker's thread: each worker gets its
    // own pools (connections never cross threads).
    let served = serve_with(s.addr.as_str(), s.workers, move || {
        let service = config.service();
        move |req: &_| service.handle(req)
    });
    match served {
        Ok(summary) => eprintln!("service: stopped: {summary:?}"),
        Err(e) => {
            eprintln!("service: {e}");
            std::process::exit(1);
        }
    }
}
