//! Whether a thread keeps its other tasks running while many tasks wait on
//! a database: a 1 ms ticker beside N tasks that each wait about 200 ms on
//! the server.
//!
//! ```text
//! db_ticker --db redis|postgres --route native|on_tokio|on_tokio_mt|blocking|tokio --addr HOST:PORT [--tasks 50] [--wait-ms 200] [--tokio-workers K]
//! ```
//!
//! Each waiting task has a connection of its own (made before the clocks
//! start) and sends one query the server answers only after the wait:
//! Redis `BLPOP` of an empty list with a timeout of 0.2 s (the timeout in
//! seconds is `--wait-ms` / 1000), PostgreSQL `SELECT pg_sleep(0.2)`. The
//! routes are those of `db_roundtrip` (its module documentation says what
//! each is). On yieldloop's routes, the ticker is a task of the same
//! scheduler looping on `yieldloop::sleep(1 ms)`; on the tokio route, a
//! tokio task on `tokio::time::interval(1 ms)` (missed ticks delayed, not
//! bunched) beside N tokio tasks, all on one `current_thread` runtime.
//!
//! The ticker records the time between its wake-ups from just before the
//! waiting tasks start until the last of them is done. A round of the same
//! waits runs first, untimed, so that connections, pool threads and
//! runtimes are warm. One line on stdout:
//!
//! ```text
//! db_ticker db=redis route=native tasks=50 ticks=190 max_gap_ms=1.412 max_gap_end_ms=201.7 p99_gap_ms=1.210 p50_gap_ms=1.060 wait_min_ms=200.3 wait_max_ms=203.9
//! ```
//!
//! (`max_gap_end_ms`: when the longest gap ended, from the ticker's start:
//! near 0 a stall while the queries go out, near the wait a stall while
//! the answers come in, elsewhere most likely the machine.)
//!
//! A failure ends the process with status 1 and the error on stderr.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::{AsyncCommands, Commands};
use yieldloop_bench::db::{self, fail, Db, Gaps, Route};
use yieldloop_postgres::{ConnectOptions as PgOptions, PgClient};
use yieldloop_redis::{ConnectOptions, Connection as NativeRedis};

const USAGE: &str = "db_ticker --db redis|postgres --route native|on_tokio|on_tokio_mt|blocking|tokio --addr HOST:PORT [--tasks 50] [--wait-ms 200] [--tokio-workers K]";
/// A list nobody pushes to: `BLPOP` on it waits for its whole timeout.
const EMPTY: &str = "yieldloop-bench-empty-list";
const TICK: Duration = Duration::from_millis(1);

/// The answer `BLPOP` gives after its timeout.
type Popped = Option<(String, String)>;

fn check_popped(v: Popped) -> Result<(), String> {
    match v {
        None => Ok(()),
        Some(v) => Err(format!("BLPOP of an empty list returned {v:?}")),
    }
}

/// One round on a yieldloop scheduler: a ticker task, and one task per
/// connection running `wait` on it (which hands the connection back).
fn yieldloop_round<C: 'static>(
    conns: Vec<C>,
    wait: fn(C) -> Result<C, String>,
) -> Result<(Vec<C>, Gaps), String> {
    let done = Rc::new(Cell::new(false));
    let gaps = Rc::new(RefCell::new(Vec::new()));
    let ticker = {
        let (done, gaps) = (done.clone(), gaps.clone());
        yieldloop::spawn(move || {
            let start = Instant::now();
            let mut last = start;
            while !done.get() {
                yieldloop::sleep(TICK);
                let now = Instant::now();
                gaps.borrow_mut().push((now - start, now - last));
                last = now;
            }
        })
    };
    let waiters: Vec<_> = conns
        .into_iter()
        .map(|c| {
            yieldloop::spawn(move || {
                let t = Instant::now();
                let c = wait(c)?;
                Ok::<_, String>((c, t.elapsed()))
            })
        })
        .collect();
    let mut out = Gaps::default();
    let mut back = Vec::new();
    let mut first_err = None;
    for w in waiters {
        match w.join().map_err(fail).and_then(|r| r) {
            Ok((c, d)) => {
                back.push(c);
                out.waits.push(d);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    done.set(true);
    ticker.join().map_err(fail)?;
    if let Some(e) = first_err {
        return Err(e);
    }
    out.gaps = gaps.take();
    Ok((back, out))
}

/// A warm-up round, then the timed one; hands the connections back.
fn yieldloop_rounds<C: 'static>(
    conns: Vec<C>,
    wait: fn(C) -> Result<C, String>,
) -> Result<(Vec<C>, String), String> {
    let (conns, _) = yieldloop_round(conns, wait)?;
    let (conns, gaps) = yieldloop_round(conns, wait)?;
    Ok((conns, gaps.fields()))
}

/// `--wait-ms`, for the `fn` pointers of the rounds.
static WAIT_MS: AtomicU64 = AtomicU64::new(200);

/// The `BLPOP` timeout, in seconds.
fn wait_secs() -> f64 {
    WAIT_MS.load(Ordering::Relaxed) as f64 / 1000.0
}

/// The statement that keeps PostgreSQL busy for the wait.
fn pg_sql() -> String {
    format!("SELECT pg_sleep({})", wait_secs())
}

fn redis_url(addr: &str) -> String {
    format!("redis://{addr}/")
}

fn tokio_rt() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(fail)
}

fn redis_native(a: &db::Args) -> Result<String, String> {
    let (addr, n) = (a.addr.clone(), a.n);
    yieldloop::run(move || {
        let opts = ConnectOptions::new(addr);
        let conns = (0..n)
            .map(|_| NativeRedis::connect(&opts).map_err(fail))
            .collect::<Result<Vec<_>, _>>()?;
        yieldloop_rounds(conns, |mut c| {
            check_popped(c.blpop(EMPTY, wait_secs()).map_err(fail)?)?;
            Ok(c)
        })
        .map(|(_, fields)| fields)
    })
}

fn redis_on_tokio(a: &db::Args) -> Result<String, String> {
    let (url, n) = (redis_url(&a.addr), a.n);
    yieldloop::run(move || {
        let client = redis::Client::open(url).map_err(fail)?;
        // One connection per task: a blocked BLPOP holds its connection.
        let conns = (0..n)
            .map(|_| {
                let client = client.clone();
                yieldloop::on_tokio(async move { client.get_multiplexed_async_connection().await })
                    .map_err(fail)
            })
            .collect::<Result<Vec<_>, _>>()?;
        yieldloop_rounds(conns, |mut c| {
            let secs = wait_secs();
            yieldloop::on_tokio(async move {
                let v: redis::RedisResult<Popped> = c.blpop(EMPTY, secs).await;
                v.map_err(fail).and_then(check_popped).map(|()| c)
            })
        })
        .map(|(_, fields)| fields)
    })
}

fn redis_blocking(a: &db::Args) -> Result<String, String> {
    let (url, n) = (redis_url(&a.addr), a.n);
    let client = redis::Client::open(url).map_err(fail)?;
    let conns = (0..n)
        .map(|_| client.get_connection().map_err(fail))
        .collect::<Result<Vec<_>, _>>()?;
    yieldloop::run(move || {
        yieldloop_rounds(conns, |mut c| {
            let secs = wait_secs();
            yieldloop::spawn_blocking(move || {
                let v: redis::RedisResult<Popped> = c.blpop(EMPTY, secs);
                v.map_err(fail).and_then(check_popped).map(|()| c)
            })
            .join()
            .map_err(fail)?
        })
        .and_then(close_on_pool)
    })
}

/// Closes synchronous connections on the blocking pool, where closing
/// them may block (the `postgres` crate's close waits for its runtime),
/// and returns the result fields.
fn close_on_pool<C: Send + 'static>((conns, fields): (Vec<C>, String)) -> Result<String, String> {
    yieldloop::spawn_blocking(move || drop(conns))
        .join()
        .map_err(fail)?;
    Ok(fields)
}

/// One round on the tokio runtime: an interval task beside a task per
/// connection; the same shape as [`yieldloop_round`].
async fn tokio_round<C, F, Fut>(conns: Vec<C>, wait: F) -> Result<(Vec<C>, Gaps), String>
where
    C: 'static,
    F: Fn(C) -> Fut,
    Fut: std::future::Future<Output = Result<C, String>> + 'static,
{
    let done = Rc::new(Cell::new(false));
    let local = tokio::task::LocalSet::new();
    let ticker = {
        let done = done.clone();
        local.spawn_local(async move {
            let mut iv = tokio::time::interval(TICK);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            iv.tick().await;
            let mut gaps = Vec::new();
            let start = Instant::now();
            let mut last = start;
            while !done.get() {
                iv.tick().await;
                let now = Instant::now();
                gaps.push((now - start, now - last));
                last = now;
            }
            gaps
        })
    };
    let waiters: Vec<_> = conns
        .into_iter()
        .map(|c| {
            let fut = wait(c);
            local.spawn_local(async move {
                let t = Instant::now();
                let c = fut.await?;
                Ok::<_, String>((c, t.elapsed()))
            })
        })
        .collect();
    local
        .run_until(async move {
            let mut out = Gaps::default();
            let mut back = Vec::new();
            let mut first_err = None;
            for w in waiters {
                match w.await.map_err(fail).and_then(|r| r) {
                    Ok((c, d)) => {
                        back.push(c);
                        out.waits.push(d);
                    }
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            done.set(true);
            let gaps = ticker.await.map_err(fail)?;
            if let Some(e) = first_err {
                return Err(e);
            }
            out.gaps = gaps;
            Ok((back, out))
        })
        .await
}

fn redis_tokio(a: &db::Args) -> Result<String, String> {
    let (url, n) = (redis_url(&a.addr), a.n);
    let secs = wait_secs();
    tokio_rt()?.block_on(async move {
        let client = redis::Client::open(url).map_err(fail)?;
        let mut conns = Vec::new();
        for _ in 0..n {
            conns.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(fail)?,
            );
        }
        let wait = move |mut c: redis::aio::MultiplexedConnection| async move {
            let v: redis::RedisResult<Popped> = c.blpop(EMPTY, secs).await;
            v.map_err(fail).and_then(check_popped).map(|()| c)
        };
        let (conns, _) = tokio_round(conns, wait).await?;
        let (_, gaps) = tokio_round(conns, wait).await?;
        Ok(gaps.fields())
    })
}

async fn pg_connect(conninfo: String) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .map_err(fail)?;
    tokio::spawn(connection);
    Ok(client)
}

fn pg_native(a: &db::Args) -> Result<String, String> {
    let (addr, n) = (a.addr.clone(), a.n);
    yieldloop::run(move || {
        let opts = PgOptions::new(addr).user("postgres").dbname("postgres");
        let conns = (0..n)
            .map(|_| PgClient::connect(&opts).map_err(fail))
            .collect::<Result<Vec<_>, _>>()?;
        yieldloop_rounds(conns, |c| {
            c.execute(pg_sql().as_str(), &[]).map_err(fail)?;
            Ok(c)
        })
        .map(|(_, fields)| fields)
    })
}

fn pg_on_tokio(a: &db::Args) -> Result<String, String> {
    let (conninfo, n) = (db::pg_conninfo(&a.addr), a.n);
    yieldloop::run(move || {
        let conns = (0..n)
            .map(|_| yieldloop::on_tokio(pg_connect(conninfo.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        yieldloop_rounds(conns, |c| {
            let sql = pg_sql();
            yieldloop::on_tokio(async move {
                c.execute(sql.as_str(), &[]).await.map_err(fail)?;
                Ok(c)
            })
        })
        .map(|(_, fields)| fields)
    })
}

fn pg_blocking(a: &db::Args) -> Result<String, String> {
    let (conninfo, n) = (db::pg_conninfo(&a.addr), a.n);
    let conns = (0..n)
        .map(|_| postgres::Client::connect(&conninfo, postgres::NoTls).map_err(fail))
        .collect::<Result<Vec<_>, _>>()?;
    yieldloop::run(move || {
        yieldloop_rounds(conns, |mut c| {
            let sql = pg_sql();
            yieldloop::spawn_blocking(move || {
                c.execute(sql.as_str(), &[]).map_err(fail)?;
                Ok(c)
            })
            .join()
            .map_err(fail)?
        })
        .and_then(close_on_pool)
    })
}

fn pg_tokio(a: &db::Args) -> Result<String, String> {
    let (conninfo, n) = (db::pg_conninfo(&a.addr), a.n);
    let sql = pg_sql();
    tokio_rt()?.block_on(async move {
        let mut conns = Vec::new();
        for _ in 0..n {
            conns.push(pg_connect(conninfo.clone()).await?);
        }
        let wait = move |c: tokio_postgres::Client| {
            let sql = sql.clone();
            async move {
                c.execute(sql.as_str(), &[]).await.map_err(fail)?;
                Ok(c)
            }
        };
        let (conns, _) = tokio_round(conns, wait.clone()).await?;
        let (_, gaps) = tokio_round(conns, wait).await?;
        Ok(gaps.fields())
    })
}

fn main() {
    let mut a = db::args(USAGE);
    if a.n == 0 {
        a.n = 50;
    }
    WAIT_MS.store(a.wait_ms, Ordering::Relaxed);
    let run = match (a.db, a.route) {
        (Db::Redis, Route::Native) => redis_native(&a),
        (Db::Redis, Route::OnTokio) => redis_on_tokio(&a),
        (Db::Redis, Route::Blocking) => redis_blocking(&a),
        (Db::Redis, Route::Tokio) => redis_tokio(&a),
        (Db::Postgres, Route::Native) => pg_native(&a),
        (Db::Postgres, Route::OnTokio) => pg_on_tokio(&a),
        (Db::Postgres, Route::Blocking) => pg_blocking(&a),
        (Db::Postgres, Route::Tokio) => pg_tokio(&a),
        (_, Route::TokioHop) => Err("the tokio_hop route is db_roundtrip's only".to_string()),
    };
    match run {
        Ok(fields) => println!("db_ticker db={} route={} {fields}", a.db.name(), a.label),
        Err(e) => {
            eprintln!("db_ticker {} {}: {e}", a.db.name(), a.label);
            std::process::exit(1);
        }
    }
}
