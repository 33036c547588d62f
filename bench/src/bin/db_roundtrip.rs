//! Database round trips from one task: Redis `GET` and PostgreSQL
//! `SELECT 1`, one connection, one query after another.
//!
//! ```text
//! db_roundtrip --db redis|postgres --route native|on_tokio|on_tokio_mt|blocking|tokio|tokio_hop --addr HOST:PORT --n N [--warmup W] [--tokio-workers K]
//! ```
//!
//! The routes (a task is one of yieldloop's, except for `tokio`):
//!
//! - `native`: the recipes' clients in the task, on yieldloop's own
//!   sockets (`yieldloop_redis::Connection`,
//!   `yieldloop_postgres::PgClient`: tokio-postgres driven by
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
//!   runtime, no yieldloop: the yardstick;
//! - `tokio_hop`: tokio's own version of the `on_tokio` hop, no yieldloop:
//!   a task of a plain tokio `current_thread` runtime spawns each query
//!   onto a second, multi-thread runtime (one worker, or
//!   `--tokio-workers`), where the client's connection task also runs,
//!   and awaits its join handle.
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
use std::thread;
use std::time::Duration;

use redis::{AsyncCommands, Commands};
use yieldloop::sync::mpsc;
use yieldloop_bench::db::{self, fail, Db, Pace, Route};
use yieldloop_bench::drive;
use yieldloop_postgres::{ConnectOptions as PgOptions, PgClient};
use yieldloop_redis::{ConnectOptions, Connection as NativeRedis};

const USAGE: &str = "db_roundtrip --db redis|postgres --route ROUTE --addr HOST:PORT --n N [--warmup W] [--tokio-workers K] [--vs ROUTE --pairs P]";
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

fn redis_native(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (addr, warmup) = (a.addr.clone(), a.warmup);
    yieldloop::run(move || {
        let mut c = NativeRedis::connect(&ConnectOptions::new(addr)).map_err(fail)?;
        drive!(pace, warmup, check_get(c.get(KEY).map_err(fail)?))
    })
}

fn redis_on_tokio(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (url, warmup) = (redis_url(&a.addr), a.warmup);
    yieldloop::run(move || {
        let client = redis::Client::open(url).map_err(fail)?;
        let conn =
            yieldloop::on_tokio(async move { client.get_multiplexed_async_connection().await })
                .map_err(fail)?;
        drive!(pace, warmup, {
            // A clone is a handle on the same connection (its driver runs
            // on the tokio runtime); the future must own what it uses.
            let mut c = conn.clone();
            check_get(yieldloop::on_tokio(async move { c.get(KEY).await }).map_err(fail)?)
        })
    })
}

fn redis_blocking(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (url, warmup) = (redis_url(&a.addr), a.warmup);
    let conn = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(fail)?;
    yieldloop::run(move || {
        // The connection travels to a pool thread and back with each query.
        let mut slot = Some(conn);
        drive!(pace, warmup, {
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

fn redis_tokio(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (url, warmup) = (redis_url(&a.addr), a.warmup);
    tokio_rt()?.block_on(async move {
        let client = redis::Client::open(url).map_err(fail)?;
        let mut c = client
            .get_multiplexed_async_connection()
            .await
            .map_err(fail)?;
        drive!(pace, warmup, check_get(c.get(KEY).await.map_err(fail)?))
    })
}

/// The second runtime of the `tokio_hop` route: multi-thread, sized as
/// `on_tokio`'s shared one (one worker unless `--tokio-workers` says).
fn side_rt(a: &db::Args) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.tokio_workers.unwrap_or(1))
        .enable_all()
        .build()
        .map_err(fail)
}

fn redis_tokio_hop(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (url, warmup) = (redis_url(&a.addr), a.warmup);
    let side = side_rt(a)?;
    let h = side.handle().clone();
    tokio_rt()?.block_on(async move {
        let client = redis::Client::open(url).map_err(fail)?;
        let conn = h
            .spawn(async move { client.get_multiplexed_async_connection().await })
            .await
            .map_err(fail)?
            .map_err(fail)?;
        drive!(pace, warmup, {
            let mut c = conn.clone();
            let v = h.spawn(async move { c.get(KEY).await }).await;
            check_get(v.map_err(fail)?.map_err(fail)?)
        })
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

fn pg_native(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (addr, warmup) = (a.addr.clone(), a.warmup);
    yieldloop::run(move || {
        let opts = PgOptions::new(addr).user("postgres").dbname("postgres");
        let c = PgClient::connect(&opts).map_err(fail)?;
        let st = c.prepare(SQL).map_err(fail)?;
        drive!(
            pace,
            warmup,
            check_one(c.query_one(&st, &[]).map_err(fail)?.get(0))
        )
    })
}

fn pg_on_tokio(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (conninfo, warmup) = (db::pg_conninfo(&a.addr), a.warmup);
    yieldloop::run(move || {
        let (client, st) = yieldloop::on_tokio(pg_connect(conninfo))?;
        let client = Arc::new(client);
        drive!(pace, warmup, {
            let (c, st) = (client.clone(), st.clone());
            let row = yieldloop::on_tokio(async move { c.query_one(&st, &[]).await });
            check_one(row.map_err(fail)?.get(0))
        })
    })
}

fn pg_blocking(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (conninfo, warmup) = (db::pg_conninfo(&a.addr), a.warmup);
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).map_err(fail)?;
    let st = client.prepare(SQL).map_err(fail)?;
    yieldloop::run(move || {
        let mut slot = Some(client);
        drive!(pace, warmup, {
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

fn pg_tokio(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (conninfo, warmup) = (db::pg_conninfo(&a.addr), a.warmup);
    tokio_rt()?.block_on(async move {
        let (c, st) = pg_connect(conninfo).await?;
        drive!(
            pace,
            warmup,
            check_one(c.query_one(&st, &[]).await.map_err(fail)?.get(0))
        )
    })
}

fn pg_tokio_hop(a: &db::Args, pace: Pace) -> Result<String, String> {
    let (conninfo, warmup) = (db::pg_conninfo(&a.addr), a.warmup);
    let side = side_rt(a)?;
    let h = side.handle().clone();
    tokio_rt()?.block_on(async move {
        let (client, st) = h.spawn(pg_connect(conninfo)).await.map_err(fail)??;
        let client = Arc::new(client);
        drive!(pace, warmup, {
            let (c, st) = (client.clone(), st.clone());
            let row = h.spawn(async move { c.query_one(&st, &[]).await }).await;
            check_one(row.map_err(fail)?.map_err(fail)?.get(0))
        })
    })
}

/// Runs `route` on `a`'s database at `pace`.
fn run_route(a: &db::Args, route: Route, pace: Pace) -> Result<String, String> {
    match (a.db, route) {
        (Db::Redis, Route::Native) => redis_native(a, pace),
        (Db::Redis, Route::OnTokio) => redis_on_tokio(a, pace),
        (Db::Redis, Route::Blocking) => redis_blocking(a, pace),
        (Db::Redis, Route::Tokio) => redis_tokio(a, pace),
        (Db::Redis, Route::TokioHop) => redis_tokio_hop(a, pace),
        (Db::Postgres, Route::Native) => pg_native(a, pace),
        (Db::Postgres, Route::OnTokio) => pg_on_tokio(a, pace),
        (Db::Postgres, Route::Blocking) => pg_blocking(a, pace),
        (Db::Postgres, Route::Tokio) => pg_tokio(a, pace),
        (Db::Postgres, Route::TokioHop) => pg_tokio_hop(a, pace),
    }
}

/// One route of an interleaved comparison: the thread it runs on, and
/// the coordinator's ends of its batch channels.
struct Side {
    label: &'static str,
    batches: mpsc::Sender<u64>,
    took: mpsc::Receiver<Duration>,
    thread: Option<thread::JoinHandle<Result<String, String>>>,
    /// CPU per query of each of its batches (µs).
    cpu_us: Vec<f64>,
}

impl Side {
    fn start(a: &db::Args, (route, label): (Route, &'static str)) -> Side {
        let (batches, batches_rx) = mpsc::channel();
        let (took_tx, took) = mpsc::channel();
        let a = a.clone();
        let thread = thread::spawn(move || {
            let pace = Pace::Batches {
                batches: batches_rx,
                took: took_tx,
            };
            run_route(&a, route, pace)
        });
        Side {
            label,
            batches,
            took,
            thread: Some(thread),
            cpu_us: Vec::new(),
        }
    }

    /// What the side's thread gave for ending before it was asked to.
    fn why_ended(&mut self) -> String {
        let why = match self.thread.take().map(|t| t.join()) {
            Some(Ok(Err(e))) => e,
            Some(Ok(Ok(_))) | None => "ended early".into(),
            Some(Err(_)) => "panicked".into(),
        };
        format!("{}: {why}", self.label)
    }
}

/// `--vs`: the two routes on threads of their own in this process, each
/// connected and warm, running batches of N queries in turn (the order
/// swapped every pair), so that both see the machine in the same state;
/// per batch, the process's CPU time per query.
fn interleaved(a: &db::Args, vs: (Route, &'static str)) -> Result<String, String> {
    let mut sides = [Side::start(a, (a.route, a.label)), Side::start(a, vs)];
    for side in &mut sides {
        if side.took.recv().is_err() {
            return Err(side.why_ended());
        }
    }
    for pair in 0..a.pairs {
        let order = if pair % 2 == 0 { [0, 1] } else { [1, 0] };
        for s in order {
            let side = &mut sides[s];
            let took = side
                .batches
                .send(a.n)
                .ok()
                .and_then(|()| side.took.recv().ok());
            let Some(took) = took else {
                return Err(side.why_ended());
            };
            side.cpu_us.push(took.as_secs_f64() * 1e6 / a.n as f64);
        }
    }
    let [ours, theirs] = sides;
    let (mut ratios, mut diffs): (Vec<f64>, Vec<f64>) = ours
        .cpu_us
        .iter()
        .zip(&theirs.cpu_us)
        .map(|(x, y)| (x / y, x - y))
        .unzip();
    let below = ratios.iter().filter(|r| **r < 1.0).count();
    let (mut x, mut y) = (ours.cpu_us, theirs.cpu_us);
    // Closed, the batch channels end both routes.
    drop((ours.batches, theirs.batches));
    for t in [ours.thread, theirs.thread].into_iter().flatten() {
        t.join()
            .map_err(|_| "a route's thread panicked".to_string())??;
    }
    Ok(format!(
        "vs={} pairs={} batch={} cpu_us={:.2} vs_cpu_us={:.2} ratio={:.4} ratio_p25={:.4} ratio_p75={:.4} diff_us={:.2} below={below}",
        vs.1,
        a.pairs,
        a.n,
        quantile(&mut x, 0.5),
        quantile(&mut y, 0.5),
        quantile(&mut ratios, 0.5),
        quantile(&mut ratios, 0.25),
        quantile(&mut ratios, 0.75),
        quantile(&mut diffs, 0.5),
    ))
}

/// The `q` quantile of `v` (sorted here), interpolated between ranks.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n => {
            let at = q * (n - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
        }
    }
}

fn main() {
    let a = db::args(USAGE);
    if a.n == 0 || (a.vs.is_some() != (a.pairs > 0)) {
        eprintln!("usage: {USAGE}");
        std::process::exit(2);
    }
    let setup = match a.db {
        Db::Redis => redis_setup(&a.addr),
        Db::Postgres => Ok(()),
    };
    let run = setup.and_then(|()| match a.vs {
        Some(vs) => interleaved(&a, vs),
        None => run_route(&a, a.route, Pace::Run { n: a.n }),
    });
    match run {
        Ok(fields) => println!("db_roundtrip db={} route={} {fields}", a.db.name(), a.label),
        Err(e) => {
            eprintln!("db_roundtrip {} {}: {e}", a.db.name(), a.label);
            std::process::exit(1);
        }
    }
}
