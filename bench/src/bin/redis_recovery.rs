//! Load on Redis while bench/run.sh kills and restarts the server: how
//! each route fails during the outage and how soon it succeeds again.
//!
//! ```text
//! redis_recovery --route pooled|multiplexed|on_tokio|hook_pooled --addr HOST:PORT --secs S [--tasks T]
//! ```
//!
//! The routes, each T tasks (default 50) of one yieldloop thread sending
//! `INCR` after `INCR` for S seconds:
//!
//! - `pooled`: `yieldloop_redis::Pool` (at most 8 connections; a broken one
//!   is dropped, the next checkout connects);
//! - `multiplexed`: `yieldloop_redis::Multiplexed`, one connection that
//!   reconnects by itself (`Reconnect`'s defaults);
//! - `on_tokio`: redis's `aio::ConnectionManager` through
//!   `yieldloop::on_tokio`, configured as chapter 12 shows (one retry per
//!   reconnect, 50–500 ms delays, 1 s connect timeout);
//! - `hook_pooled` (built with feature `hook` only): the `redis` crate's own
//!   sync client under the hook, its connections in a `yieldloop_pool::Pool`
//!   (at most 8; a connection the client marks closed is dropped, the next
//!   checkout connects), as the `hook_pool` recipe shows.
//!
//! A task that gets an error pauses 10 ms before its next call, as a
//! client that retries would, so the failure count says how often a call
//! failed, not how fast a loop can spin. Every call ends with a reply or an
//! error; one line on stdout counts them, with the wall-clock times (Unix
//! seconds) of the first failure and of the first success after the last
//! failure (a reply already read when the server died may reach its task
//! after another task's error), which run.sh sets beside the times it
//! killed and restarted the server:
//!
//! ```text
//! redis_recovery route=multiplexed tasks=50 calls=.. succeeded=.. failed=.. first_fail_unix=.. recovered_unix=.. slowest_fail_ms=.. slowest_ok_ms=..
//! ```
//!
//! `recovered_unix=nan` when no call succeeded after the last failure.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Commands, RedisResult};
use yieldloop_redis::{ConnectOptions, Multiplexed, PoolConfig};

const USAGE: &str =
    "redis_recovery --route pooled|multiplexed|on_tokio|hook_pooled --addr HOST:PORT \
                     --secs S [--tasks T]";
const KEY: &str = "yieldloop-recovery";

/// What the calls saw.
#[derive(Default)]
struct Tally {
    calls: u64,
    ok: u64,
    failed: u64,
    first_fail: Option<f64>,
    /// The first success after the latest failure.
    recovered: Option<f64>,
    slowest_fail: Duration,
    slowest_ok: Duration,
}

impl Tally {
    fn record(&mut self, took: Duration, ok: bool) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.calls += 1;
        if ok {
            self.ok += 1;
            self.slowest_ok = self.slowest_ok.max(took);
            if self.first_fail.is_some() && self.recovered.is_none() {
                self.recovered = Some(now);
            }
        } else {
            self.failed += 1;
            self.slowest_fail = self.slowest_fail.max(took);
            self.first_fail.get_or_insert(now);
            self.recovered = None;
        }
    }
}

/// One call of the route, from a task.
type Call = Rc<dyn Fn() -> RedisResult<i64>>;

fn route(name: &str, addr: &str) -> RedisResult<Call> {
    let opts = ConnectOptions::new(addr)
        .connect_timeout(Duration::from_secs(1))
        .read_timeout(Duration::from_secs(2));
    Ok(match name {
        "pooled" => {
            let pool = PoolConfig::new(opts).max_size(8).pool();
            Rc::new(move || pool.get()?.incr(KEY, 1))
        }
        "multiplexed" => {
            let conn = Multiplexed::connect(&opts)?;
            Rc::new(move || conn.clone().incr(KEY, 1))
        }
        "on_tokio" => {
            let client = redis::Client::open(format!("redis://{addr}/"))?;
            let config = ConnectionManagerConfig::new()
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(500))
                .set_connection_timeout(Some(Duration::from_secs(1)))
                .set_response_timeout(Some(Duration::from_secs(2)));
            let manager = yieldloop::on_tokio(ConnectionManager::new_with_config(client, config))?;
            Rc::new(move || {
                let mut c = manager.clone();
                yieldloop::on_tokio(async move { c.incr(KEY, 1).await })
            })
        }
        #[cfg(feature = "hook")]
        "hook_pooled" => {
            let pool = yieldloop_pool::PoolConfig::new(hooked::SyncRedis(addr.to_string()))
                .max_size(8)
                .pool();
            Rc::new(move || pool.get()?.incr(KEY, 1))
        }
        #[cfg(not(feature = "hook"))]
        "hook_pooled" => {
            eprintln!("redis_recovery: route hook_pooled needs a build with --features hook");
            std::process::exit(2);
        }
        _ => {
            eprintln!("usage: {USAGE}");
            std::process::exit(2);
        }
    })
}

/// The sync client's connections for the pool, under feature `hook`.
#[cfg(feature = "hook")]
mod hooked {
    use std::io;
    use std::time::Duration;

    use redis::{ConnectionLike, RedisError, RedisResult};
    use yieldloop_pool::{CheckoutTimeout, Manage};

    /// Connects to the address it holds, with the native routes' limits.
    #[derive(Clone, Debug)]
    pub struct SyncRedis(pub String);

    impl Manage for SyncRedis {
        type Conn = redis::Connection;
        type Error = RedisError;

        fn connect(&self) -> RedisResult<redis::Connection> {
            let client = redis::Client::open(format!("redis://{}/", self.0))?;
            let conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
            conn.set_read_timeout(Some(Duration::from_secs(2)))?;
            Ok(conn)
        }

        /// The client marks a connection whose call failed part-way as
        /// closed.
        fn is_broken(&self, conn: &redis::Connection) -> bool {
            !conn.is_open()
        }

        fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> RedisError {
            io::Error::from(timeout).into()
        }
    }
}

fn main() {
    let (mut name, mut addr, mut secs, mut tasks) = (String::new(), String::new(), 0.0, 50);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        match k.as_str() {
            "--route" => name = v,
            "--addr" => addr = v,
            "--secs" => secs = v.parse().unwrap_or(0.0),
            "--tasks" => tasks = v.parse().unwrap_or(0),
            _ => {
                eprintln!("usage: {USAGE}");
                std::process::exit(2);
            }
        }
    }
    if name.is_empty() || addr.is_empty() || secs <= 0.0 || tasks == 0 {
        eprintln!("usage: {USAGE}");
        std::process::exit(2);
    }
    let (route_name, line) = (
        name.clone(),
        yieldloop::run(move || -> RedisResult<String> {
            let call = route(&name, &addr)?;
            let tally = Rc::new(RefCell::new(Tally::default()));
            let end = Instant::now() + Duration::from_secs_f64(secs);
            let stop = Rc::new(Cell::new(false));
            let workers: Vec<_> = (0..tasks)
                .map(|_| {
                    let (call, tally, stop) = (call.clone(), tally.clone(), stop.clone());
                    yieldloop::spawn(move || {
                        while !stop.get() {
                            let start = Instant::now();
                            let ok = call().is_ok();
                            tally.borrow_mut().record(start.elapsed(), ok);
                            if !ok {
                                yieldloop::sleep(Duration::from_millis(10));
                            }
                        }
                    })
                })
                .collect();
            yieldloop::sleep_until(end);
            stop.set(true);
            for w in workers {
                let _ = w.join();
            }
            let t = tally.borrow();
            let unix = |t: Option<f64>| t.map_or("nan".to_string(), |s| format!("{s:.6}"));
            Ok(format!(
            "tasks={tasks} calls={} succeeded={} failed={} first_fail_unix={} recovered_unix={} slowest_fail_ms={:.2} slowest_ok_ms={:.2}",
            t.calls,
            t.ok,
            t.failed,
            unix(t.first_fail),
            unix(t.recovered),
            t.slowest_fail.as_secs_f64() * 1e3,
            t.slowest_ok.as_secs_f64() * 1e3,
        ))
        }),
    );
    match line {
        Ok(fields) => println!("redis_recovery route={route_name} {fields}"),
        Err(e) => {
            eprintln!("redis_recovery: {e}");
            std::process::exit(1);
        }
    }
}
