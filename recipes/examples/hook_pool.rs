//! One pool of the `redis` crate's own synchronous connections, shared by
//! tasks on every worker of a `Runtime`, under yieldloop's `hook` feature.
//!
//! The sync client is unmodified: a blocking `std::net::TcpStream` inside.
//! Under `hook` its reads and writes from a task pause only that task, and
//! its connections are `Send`, so a single `yieldloop_pool::Pool` serves
//! every worker (and plain threads). Each of 6 tasks per worker takes a
//! connection, counts a hit and holds the connection through a 100 ms
//! `BLPOP`, twice; the pool has half as many connections as tasks, so half
//! the tasks wait for one at any moment, paused. The run takes about as
//! long as 4 rounds of `BLPOP` (24 holds of 100 ms over 6 connections),
//! where a worker thread frozen in each call would take 12.
//!
//! ```text
//! redis-server --port 6379 --save '' --hz 100 &
//! cargo run -p yieldloop-recipes --features hook --example hook_pool -- redis://127.0.0.1:6379/0
//! ```
//!
//! (`--hz 100`: Redis ends a `BLPOP` within 10 ms of its timeout, not up
//! to 100 ms after it.)
//!
//! A pool behind a std `Mutex` and `Condvar` (r2d2's kind) would freeze a
//! worker whose task waits for a connection held by another task of the
//! same worker: that task could never run to give it back.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop_pool::{CheckoutTimeout, Manage, PoolConfig};
use yieldloop_redis::redis::{self, Commands, RedisError, RedisResult};

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

/// How the pool opens and checks connections of the sync client.
#[derive(Clone, Debug)]
pub struct SyncRedis(pub redis::Client);

impl Manage for SyncRedis {
    type Conn = redis::Connection;
    type Error = RedisError;

    fn connect(&self) -> RedisResult<redis::Connection> {
        self.0.get_connection()
    }

    /// The client marks a connection whose call failed part-way as closed.
    fn is_broken(&self, conn: &redis::Connection) -> bool {
        !redis::ConnectionLike::is_open(conn)
    }

    fn check(&self, conn: &mut redis::Connection) -> RedisResult<()> {
        redis::cmd("PING").query::<String>(conn).map(drop)
    }

    fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> RedisError {
        io::Error::from(timeout).into()
    }
}

/// The key the tasks count in.
pub const KEY: &str = "hook_pool:hits";

/// What a run saw.
#[derive(Debug)]
pub struct Report {
    /// The counter before the tasks ran.
    pub before: i64,
    /// The counter after.
    pub after: i64,
    /// Hits the tasks made.
    pub expected: i64,
    /// From the first task's start to the last one's end.
    pub elapsed: Duration,
    /// The most connections checked out at once.
    pub peak: usize,
    /// The pool's size limit.
    pub max_size: usize,
    /// The connections it opened.
    pub opened: u64,
}

/// `tasks` tasks on each of `workers` workers, each taking a connection
/// `rounds` times from a pool of `max_size`, counting a hit and holding it
/// through a `hold` `BLPOP`. The counter is read before and after from
/// this (plain) thread, through the same pool.
pub fn run(
    url: &str,
    workers: usize,
    tasks: usize,
    rounds: usize,
    max_size: usize,
    hold: Duration,
) -> RedisResult<Report> {
    let pool = PoolConfig::new(SyncRedis(redis::Client::open(url)?))
        .max_size(max_size)
        .build();
    let before: Option<i64> = pool.get()?.get(KEY)?;
    let rt = yieldloop::Runtime::builder()
        .workers(workers)
        .build()
        .map_err(RedisError::from)?;
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..workers * tasks)
        .map(|i| {
            let (pool, in_use, peak) = (pool.clone(), in_use.clone(), peak.clone());
            rt.spawn_on(i % workers, move || -> RedisResult<()> {
                for _ in 0..rounds {
                    // Pauses this task while every connection is out.
                    let mut conn = pool.get()?;
                    peak.fetch_max(in_use.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    let _: i64 = conn.incr(KEY, 1)?;
                    // A blocking call of the sync client: under `hook` it
                    // pauses this task only.
                    let _: Option<(String, String)> =
                        conn.blpop("hook_pool:never", hold.as_secs_f64())?;
                    in_use.fetch_sub(1, Ordering::SeqCst);
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a task panicked")?;
    }
    let elapsed = start.elapsed();
    let after: i64 = pool.get()?.get(KEY)?;
    Ok(Report {
        before: before.unwrap_or(0),
        after,
        expected: (workers * tasks * rounds) as i64,
        elapsed,
        peak: peak.load(Ordering::SeqCst),
        max_size,
        opened: pool.status().opened,
    })
}

fn main() {
    let mut args = Args::new("hook_pool [URL]");
    let url: String = args
        .positional("URL")
        .unwrap_or_else(|| "redis://127.0.0.1:6379/0".into());
    args.finish();
    match run(&url, 2, 6, 2, 6, Duration::from_millis(100)) {
        Ok(r) => {
            println!(
                "{KEY}: {} -> {} (+{}, expected +{})",
                r.before,
                r.after,
                r.after - r.before,
                r.expected
            );
            println!(
                "{} holds of 100 ms in {:.2} s; at most {} of {} connections out at once, {} opened",
                r.expected,
                r.elapsed.as_secs_f64(),
                r.peak,
                r.max_size,
                r.opened
            );
        }
        Err(e) => {
            eprintln!("hook_pool: {e}");
            std::process::exit(1);
        }
    }
}
