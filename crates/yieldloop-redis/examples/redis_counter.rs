//! A hit counter in Redis, driven by many tasks on several workers through
//! each worker's connection pool, while one task per worker sits in a
//! blocking `BLPOP` and a ticker checks that the workers never freeze.
//!
//! ```text
//! redis-server --port 6379 --save '' &       # from the redis-server package
//! cargo run --release --example redis_counter -- redis://127.0.0.1:6379/0
//! cargo run --release --example redis_counter -- redis://:PASSWORD@127.0.0.1:6379/2 4 100 50
//! ```
//!
//! Arguments: the server's URL (default `redis://127.0.0.1:6379/0`;
//! `?protocol=resp3` for RESP3), then the workers (default 2), the tasks
//! per worker (default 50) and the increments per task (default 100).
//!
//! Each task increments the key `redis_counter:hits` through its worker's
//! pool (at most 8 connections per worker). Meanwhile a task per worker
//! waits 200 ms in `BLPOP` on an empty list and a 1 ms ticker runs beside
//! it. One line per worker gives its pool's figures and the ticker's longest
//! gap; the last line gives the counter's growth, which must equal workers
//! × tasks × increments, and the time taken. Exits with status 1 on any
//! error or a wrong count.
//!
//! The `BLPOP` takes somewhat over 200 ms (up to about 300 ms): Redis checks
//! blocking timeouts on its own clock, 10 times a second by default.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use yieldloop_redis::redis;

use yieldloop_redis::redis::{Commands, RedisResult};
use yieldloop_redis::{ConnectOptions, PoolConfig};

const KEY: &str = "redis_counter:hits";

/// What one worker reports.
struct WorkerReport {
    worker: usize,
    opened: u64,
    longest_gap: Duration,
    blpop_took: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| "redis://127.0.0.1:6379/0".into());
    let number = |i: usize, default: u64| -> u64 {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("redis_counter: {a:?} is not a number\nusage: redis_counter [URL [WORKERS [TASKS [INCRS]]]]");
                std::process::exit(2)
            })
        })
    };
    let (workers, tasks, incrs) = (number(1, 2).max(1), number(2, 50), number(3, 100));
    match run(&url, workers as usize, tasks, incrs) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("redis_counter: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs the counter; `Ok(false)` when the count came out wrong.
fn run(url: &str, workers: usize, tasks: u64, incrs: u64) -> RedisResult<bool> {
    let connect = ConnectOptions::from_url(url)?
        .connect_timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_secs(10));
    let config = PoolConfig::new(connect).max_size(8);
    let start = Instant::now();

    // The counter before, read on a worker like everything else.
    let rt = yieldloop::Runtime::builder()
        .workers(workers)
        .build()
        .map_err(redis::RedisError::from)?;
    let before_config = config.clone();
    let before: i64 = rt
        .spawn_on(0, move || -> RedisResult<i64> {
            let mut conn = before_config.pool().get()?;
            Ok(conn.get::<_, Option<i64>>(KEY)?.unwrap_or(0))
        })
        .join()
        .expect("worker 0 panicked")?;

    let reports = rt.spawn_each(move |worker| -> RedisResult<WorkerReport> {
        let pool = config.pool();
        let stop = Rc::new(Cell::new(false));
        let ticker = {
            let stop = stop.clone();
            yieldloop::spawn(move || {
                let mut longest = Duration::ZERO;
                let mut last = Instant::now();
                while !stop.get() {
                    yieldloop::sleep(Duration::from_millis(1));
                    longest = longest.max(last.elapsed());
                    last = Instant::now();
                }
                longest
            })
        };
        // ANCHOR: tasks
        let blpop = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> RedisResult<Duration> {
                let mut conn = pool.get()?;
                let started = Instant::now();
                let _: Option<[String; 2]> =
                    conn.blpop(format!("redis_counter:empty:{worker}"), 0.2)?;
                Ok(started.elapsed())
            })
        };
        let counters: Vec<_> = (0..tasks)
            .map(|_| {
                let pool = pool.clone();
                yieldloop::spawn(move || -> RedisResult<()> {
                    for _ in 0..incrs {
                        let _: i64 = pool.get()?.incr(KEY, 1)?;
                    }
                    Ok(())
                })
            })
            .collect();
        // ANCHOR_END: tasks
        let mut result = Ok(());
        for task in counters {
            let outcome = task.join().expect("a counting task panicked");
            result = result.and(outcome);
        }
        let blpop_took = blpop.join().expect("the BLPOP task panicked");
        stop.set(true);
        let longest_gap = ticker.join().expect("the ticker panicked");
        result?;
        Ok(WorkerReport {
            worker,
            opened: pool.opened(),
            longest_gap,
            blpop_took: blpop_took?,
        })
    });

    for report in reports {
        let r = report.join().expect("a worker panicked")?;
        println!(
            "worker {}: {} connections opened, BLPOP 200 ms took {:.0?}, ticker's longest gap {:.1?}",
            r.worker, r.opened, r.blpop_took, r.longest_gap
        );
    }
    let after_config = PoolConfig::new(ConnectOptions::from_url(url)?);
    let after: i64 = rt
        .spawn_on(0, move || -> RedisResult<i64> {
            after_config.pool().get()?.get(KEY)
        })
        .join()
        .expect("worker 0 panicked")?;
    let expected = (workers as u64 * tasks * incrs) as i64;
    println!(
        "{KEY}: {before} -> {after} (+{}, expected +{expected}) in {:.2?}",
        after - before,
        start.elapsed()
    );
    Ok(after - before == expected)
}
