//! Database round trips from one task: Redis `GET` and PostgreSQL
//! `SELECT 1`, one connection, one query after another.
//!
//! ```text
//! db_roundtrip --db redis|postgres --route native|on_tokio|on_tokio_mt|blocking|tokio --addr HOST:PORT --n N [--warmup W] [--tokio-workers K]
//! ```
//!
//! The routes (a task is one of yieldloop's, except for `tokio`):
//!
//! - `native`: the recipes' clients in the task, on yieldloop's own
//!   sockets (`yieldloop_recipes::redis::Connection`,
//!   `yieldloop_recipes::postgres::PgClient`: tokio-postgres driven by
//!   yieldloop's reactor, no tokio runtime);
//! - `on_tokio`: redis's tokio client (`MultiplexedConnection`) and
//!   tokio-postgres's own `connect`, each query one `yieldloop::on_tokio`
//!   call onto the shared tokio runtime (its default of one worker, which
//!   keeps the client's connection task and the caller's futures on one
//!   thread, unless `--tokio-workers` says otherwise); `on_tokio_mt`: the
//!   same with that runtime sized to one worker per CPU
//!   (`yieldloop::tokio_runtime`), tokio's own default;
//! - `blocking`: the synchronous clients (`redis::Connection`, the
//!   `postgres` crate), each query one `yieldloop::spawn_blocking` call;
//! - `tokio`: the same tokio clients on a plain tokio `current_thread`
//!   runtime, no yieldloop: the yardstick.
//!
//! Redis reads one 16-byte value; PostgreSQL runs a statement prepared
//! once (`SELECT 1`, one `int4`). After W warm-up queries, N queries are
//! timed one by one; the process's CPU time (`getrusage`, all threads: the
//! scheduler, tokio's workers, the blocking pool) is read around the N.
//! One line on stdout:
//!
//! ```text
//! db_roundtrip db=redis route=native n=10000 wall_us=31.20 cpu_us=12.40 user_us=4.10 sys_us=8.30 p50_us=30.1 p99_us=55.0 max_us=410.2
//! ```
//!
//! (`wall_us`, `cpu_us`, `user_us`, `sys_us`: per query). The client's
//! CPU only: the server runs in processes of its own. A failure ends the
//! process with status 1 and the error on stderr.

use std::sync::Arc;
use std::time::Instant;

use redis::{AsyncCommands, Commands};
use yieldloop_bench::db::{self, fail, Db, Meter, Route};
use yieldloop_recipes::postgres::{ConnectOptions as PgOptions, PgClient};
use yieldloop_recipes::redis::{ConnectOptions, Connection as NativeRedis};

const USAGE: &str = "db_roundtrip --db redis|postgres --route native|on_tokio|on_tokio_mt|blocking|tokio --addr HOST:PORT --n N [--warmup W] [--tokio-workers K]";
const KEY: &str = "yieldloop-bench-key";
const VALUE: &str = "0123456789abcdef";
const SQL: &str = "SELECT 1";

/// Checks what a query returned, so that a wrong answer is not timed as a
/// right one.
fn check_get(v: Option<String>) -> Result<(), String> {
    match v.as_deref() {
        Some(VALUE) => Ok(()),
        other => Err(format!("GET returned {other:?}")),
    }
}

fn check_one(v: i32) -> Result<(), String> {
    if v == 1 {
        Ok(())
    } else {
        Err(format!("SELECT 1 returned {v}"))
    }
}

/// Runs `q` W times untimed, then N times timed.
fn measure(
    n: u64,
    warmup: u64,
    mut q: impl FnMut() -> Result<(), String>,
) -> Result<String, String> {
    for _ in 0..warmup {
        q()?;
    }
    let mut m = Meter::start(n);
    for _ in 0..n {
        let t = Instant::now();
        q()?;
        m.lap(t);
    }
    Ok(m.finish())
}

fn tokio_rt() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(fail)
}

fn redis_url(addr: &str) -> String {
    format!("redis://{addr}/")
}

/// Stores the value every route then reads.
fn redis_setup(addr: &str) -> Result<(), String> {
    let mut c = redis::Client::open(redis_url(addr))
        .and_then(|c| c.get_connection())
        .map_err(fail)?;
    c.set::<_, _, ()>(KEY, VALUE).map_err(fail)
}

fn redis_native(a: &db::Args) -> Result<String, String> {
    let (addr, n, warmup) = (a.addr.clone(), a.n, a.warmup);
    yieldloop::run(move || {
        let mut c = NativeRedis::connect(&ConnectOptions::new(addr)).map_err(fail)?;
        measure(n, warmup, || check_get(c.get(KEY).map_err(fail)?))
    })
}

fn redis_on_tokio(a: &db::Args) -> Result<String, String> {
    let (url, n, warmup) = (redis_url(&a.addr), a.n, a.warmup);
    yieldloop::run(move || {
        let client = redis::Client::open(url).map_err(fail)?;
        let conn =
            yieldloop::on_tokio(async move { client.get_multiplexed_async_connection().await })
                .map_err(fail)?;
        measure(n, warmup, || {
            // A clone is a handle on the same connection (its driver runs
            // on the tokio runtime); the future must own what it uses.
            let mut c = conn.clone();
            check_get(yieldloop::on_tokio(async move { c.get(KEY).await }).map_err(fail)?)
        })
    })
}

fn redis_blocking(a: &db::Args) -> Result<String, String> {
    let (url, n, warmup) = (redis_url(&a.addr), a.n, a.warmup);
    let conn = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(fail)?;
    yieldloop::run(move || {
        // The connection travels to a pool thread and back with each query.
        let mut slot = Some(conn);
        measure(n, warmup, || {
            let mut c = slot.take().ok_or("connection lost")?;
            let (c, v) = yieldloop::spawn_blocking(move || {
                let v = c.get::<_, Option<String>>(KEY);
                (c, v)
            })
            .join()
            .map_err(fail)?;
            slot = Some(c);
            check_get(v.map_err(fail)?)
        })
    })
}

fn redis_tokio(a: &db::Args) -> Result<String, String> {
    let (url, n, warmup) = (redis_url(&a.addr), a.n, a.warmup);
    tokio_rt()?.block_on(async move {
        let client = redis::Client::open(url).map_err(fail)?;
        let mut c = client
            .get_multiplexed_async_connection()
            .await
            .map_err(fail)?;
        for _ in 0..warmup {
            check_get(c.get(KEY).await.map_err(fail)?)?;
        }
        let mut m = Meter::start(n);
        for _ in 0..n {
            let t = Instant::now();
            check_get(c.get(KEY).await.map_err(fail)?)?;
            m.lap(t);
        }
        Ok(m.finish())
    })
}

/// tokio-postgres's own connect on the current tokio runtime, its
/// connection driven by a tokio task, and the statement prepared.
async fn pg_connect(
    conninfo: String,
) -> Result<(tokio_postgres::Client, tokio_postgres::Statement), String> {
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .map_err(fail)?;
    tokio::spawn(connection);
    let st = client.prepare(SQL).await.map_err(fail)?;
    Ok((client, st))
}

fn pg_native(a: &db::Args) -> Result<String, String> {
    let (addr, n, warmup) = (a.addr.clone(), a.n, a.warmup);
    yieldloop::run(move || {
        let opts = PgOptions::new(addr).user("postgres").dbname("postgres");
        let c = PgClient::connect(&opts).map_err(fail)?;
        let st = c.prepare(SQL).map_err(fail)?;
        measure(n, warmup, || {
            check_one(c.query_one(&st, &[]).map_err(fail)?.get(0))
        })
    })
}

fn pg_on_tokio(a: &db::Args) -> Result<String, String> {
    let (conninfo, n, warmup) = (db::pg_conninfo(&a.addr), a.n, a.warmup);
    yieldloop::run(move || {
        let (client, st) = yieldloop::on_tokio(pg_connect(conninfo))?;
        let client = Arc::new(client);
        measure(n, warmup, || {
            let (c, st) = (client.clone(), st.clone());
            let row = yieldloop::on_tokio(async move { c.query_one(&st, &[]).await });
            check_one(row.map_err(fail)?.get(0))
        })
    })
}

fn pg_blocking(a: &db::Args) -> Result<String, String> {
    let (conninfo, n, warmup) = (db::pg_conninfo(&a.addr), a.n, a.warmup);
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).map_err(fail)?;
    let st = client.prepare(SQL).map_err(fail)?;
    yieldloop::run(move || {
        let mut slot = Some(client);
        measure(n, warmup, || {
            let (mut c, st) = (slot.take().ok_or("connection lost")?, st.clone());
            let (c, row) = yieldloop::spawn_blocking(move || {
                let row = c.query_one(&st, &[]);
                (c, row)
            })
            .join()
            .map_err(fail)?;
            slot = Some(c);
            check_one(row.map_err(fail)?.get(0))
        })
    })
}

fn pg_tokio(a: &db::Args) -> Result<String, String> {
    let (conninfo, n, warmup) = (db::pg_conninfo(&a.addr), a.n, a.warmup);
    tokio_rt()?.block_on(async move {
        let (c, st) = pg_connect(conninfo).await?;
        for _ in 0..warmup {
            check_one(c.query_one(&st, &[]).await.map_err(fail)?.get(0))?;
        }
        let mut m = Meter::start(n);
        for _ in 0..n {
            let t = Instant::now();
            check_one(c.query_one(&st, &[]).await.map_err(fail)?.get(0))?;
            m.lap(t);
        }
        Ok(m.finish())
    })
}

fn main() {
    let a = db::args(USAGE);
    if a.n == 0 {
        eprintln!("usage: {USAGE}");
        std::process::exit(2);
    }
    let run = match (a.db, a.route) {
        (Db::Redis, route) => redis_setup(&a.addr).and_then(|()| match route {
            Route::Native => redis_native(&a),
            Route::OnTokio => redis_on_tokio(&a),
            Route::Blocking => redis_blocking(&a),
            Route::Tokio => redis_tokio(&a),
        }),
        (Db::Postgres, Route::Native) => pg_native(&a),
        (Db::Postgres, Route::OnTokio) => pg_on_tokio(&a),
        (Db::Postgres, Route::Blocking) => pg_blocking(&a),
        (Db::Postgres, Route::Tokio) => pg_tokio(&a),
    };
    match run {
        Ok(fields) => println!("db_roundtrip db={} route={} {fields}", a.db.name(), a.label),
        Err(e) => {
            eprintln!("db_roundtrip {} {}: {e}", a.db.name(), a.label);
            std::process::exit(1);
        }
    }
}
