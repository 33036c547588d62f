//! A visit log in PostgreSQL, written by many tasks on several workers
//! through each worker's connection pool, while one task per worker sits
//! in a 200 ms `pg_sleep` and a ticker checks that the workers never
//! freeze.
//!
//! ```text
//! # any PostgreSQL you can log in to; with Debian's package, for example:
//! sudo -u postgres psql -c "ALTER USER postgres PASSWORD 'secret'"
//! cargo run --release --example pg_visits -- "host=127.0.0.1 port=5432 user=postgres password=secret dbname=postgres"
//! cargo run --release --example pg_visits -- postgresql://postgres:secret@127.0.0.1/postgres 4 100 20
//! ```
//!
//! Arguments: the connection string (libpq's `key=value` form or a
//! `postgresql://` URL; default `host=127.0.0.1 port=5432 user=postgres
//! dbname=postgres`), then the workers (default 2), the tasks per worker
//! (default 50) and the visits each task records (default 10).
//!
//! The program creates the table `pg_visits (worker int, task int, at
//! timestamptz)` if it is missing. Each task records its visits in one
//! transaction, with a prepared `INSERT`, through its worker's pool (at
//! most 8 connections per worker). One line per worker gives its pool's
//! figures, how long its `pg_sleep(0.2)` took and the ticker's longest gap;
//! the last line gives the table's growth, which must equal workers ×
//! tasks × visits, and the time taken. Exits with status 1 on any error or
//! a wrong count.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use yieldloop_postgres::{ConnectOptions, Error, PoolConfig};

/// What one worker reports.
struct WorkerReport {
    worker: usize,
    opened: u64,
    longest_gap: Duration,
    sleep_took: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let conninfo = args
        .first()
        .cloned()
        .unwrap_or_else(|| "host=127.0.0.1 port=5432 user=postgres dbname=postgres".into());
    let number = |i: usize, default: u64| -> u64 {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("pg_visits: {a:?} is not a number\nusage: pg_visits [CONNINFO [WORKERS [TASKS [VISITS]]]]");
                std::process::exit(2)
            })
        })
    };
    let (workers, tasks, visits) = (number(1, 2).max(1), number(2, 50), number(3, 10));
    match run(&conninfo, workers as usize, tasks, visits) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("pg_visits: {e}");
            std::process::exit(1);
        }
    }
}

/// Counts the table's rows on worker 0, through that worker's pool.
fn count(rt: &yieldloop::Runtime, config: &PoolConfig) -> Result<i64, Error> {
    let config = config.clone();
    rt.spawn_on(0, move || -> Result<i64, Error> {
        let client = config.pool().get()?;
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS pg_visits (worker int, task int, at timestamptz)",
        )?;
        Ok(client
            .query_one("SELECT count(*) FROM pg_visits", &[])?
            .get(0))
    })
    .join()
    .expect("worker 0 panicked")
}

/// Runs the visits; `Ok(false)` when the count came out wrong.
fn run(
    conninfo: &str,
    workers: usize,
    tasks: u64,
    visits: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    let connect: ConnectOptions = conninfo.parse()?;
    let connect = connect.connect_timeout(Duration::from_secs(5));
    let config = PoolConfig::new(connect).max_size(8);
    let start = Instant::now();
    let rt = yieldloop::Runtime::builder().workers(workers).build()?;
    let before = count(&rt, &config)?;

    let each = config.clone();
    let reports = rt.spawn_each(move |worker| -> Result<WorkerReport, Error> {
        let pool = each.pool();
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
        let sleeper = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> Result<Duration, Error> {
                let client = pool.get()?;
                let started = Instant::now();
                client.execute("SELECT pg_sleep(0.2)", &[])?;
                Ok(started.elapsed())
            })
        };
        let writers: Vec<_> = (0..tasks)
            .map(|task| {
                let pool = pool.clone();
                yieldloop::spawn(move || -> Result<(), Error> {
                    let client = pool.get()?;
                    client.transaction(|tx| {
                        let insert = tx.prepare(
                            "INSERT INTO pg_visits (worker, task, at) VALUES ($1, $2, $3)",
                        )?;
                        for _ in 0..visits {
                            tx.execute(
                                &insert,
                                &[&(worker as i32), &(task as i32), &SystemTime::now()],
                            )?;
                        }
                        Ok(())
                    })
                })
            })
            .collect();
        let mut result = Ok(());
        for task in writers {
            let outcome = task.join().expect("a writing task panicked");
            result = result.and(outcome);
        }
        let sleep_took = sleeper.join().expect("the sleeping task panicked");
        stop.set(true);
        let longest_gap = ticker.join().expect("the ticker panicked");
        result?;
        Ok(WorkerReport {
            worker,
            opened: pool.opened(),
            longest_gap,
            sleep_took: sleep_took?,
        })
    });

    for report in reports {
        let r = report.join().expect("a worker panicked")?;
        println!(
            "worker {}: {} connections opened, pg_sleep(0.2) took {:.0?}, ticker's longest gap {:.1?}",
            r.worker, r.opened, r.sleep_took, r.longest_gap
        );
    }
    let after = count(&rt, &config)?;
    let expected = (workers as u64 * tasks * visits) as i64;
    println!(
        "pg_visits: {before} -> {after} rows (+{}, expected +{expected}) in {:.2?}",
        after - before,
        start.elapsed()
    );
    Ok(after - before == expected)
}
