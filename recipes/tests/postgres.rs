//! The PostgreSQL recipe against a real server (a cluster of the test's
//! own, started on a free port; the tests skip, naming the package to
//! install, where PostgreSQL is missing): typed round trips, prepared
//! statements and transactions, no tokio runtime anywhere, the pool, slow
//! queries that pause only their task, and the faults.

#[path = "../../tests/util/servers.rs"]
mod servers;
mod util;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use yieldloop_postgres::tokio_postgres::error::SqlState;
use yieldloop_postgres::{ConnectOptions, Error, PgClient, Pool, PoolConfig};

/// Bounds the connect so that a hang fails the test instead of stalling the
/// suite.
const CONNECT_LIMIT: Duration = Duration::from_secs(20);

fn opts(server: &servers::PgServer) -> ConnectOptions {
    let mut opts = ConnectOptions::new(server.addr().to_string())
        .user(server.user())
        .dbname(server.dbname())
        .connect_timeout(CONNECT_LIMIT);
    if let Some(password) = server.password() {
        opts = opts.password(password);
    }
    opts
}

/// The names of this process's threads, from `/proc` (Linux).
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Integers, floats, bool, text, bytea, timestamps and NULLs survive the round trip, through prepared statements and plain SQL.
#[test]
fn typed_values_round_trip_with_prepared_statements() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let client = PgClient::connect(&opts)?;
        client.batch_execute(
            "CREATE TEMP TABLE things (
                id serial PRIMARY KEY,
                small smallint, big bigint, ratio float8, flag bool,
                name text, blob bytea, at timestamptz, naive timestamp
            )",
        )?;
        let insert = client.prepare(
            "INSERT INTO things (small, big, ratio, flag, name, blob, at, naive)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )?;
        // Whole microseconds: PostgreSQL keeps no finer.
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let at = UNIX_EPOCH + Duration::from_micros(micros);
        let blob: Vec<u8> = (0..=255u8).chain([0, 0, 255]).collect();
        let name = "héllo, wörld ✓".to_string();
        let full: i32 = client
            .query_one(
                &insert,
                &[
                    &-7i16,
                    &(i64::MAX - 1),
                    &0.125f64,
                    &true,
                    &name,
                    &blob,
                    &at,
                    &at,
                ],
            )?
            .get(0);
        let none: (Option<i16>, Option<i64>, Option<f64>, Option<bool>) = (None, None, None, None);
        let (no_text, no_blob, no_time): (Option<&str>, Option<&[u8]>, Option<SystemTime>) =
            (None, None, None);
        let empty: i32 = client
            .query_one(
                &insert,
                &[
                    &none.0, &none.1, &none.2, &none.3, &no_text, &no_blob, &no_time, &no_time,
                ],
            )?
            .get(0);

        let select = client.prepare(
            "SELECT small, big, ratio, flag, name, blob, at, naive FROM things WHERE id = $1",
        )?;
        let row = client.query_one(&select, &[&full])?;
        assert_eq!(row.get::<_, i16>("small"), -7);
        assert_eq!(row.get::<_, i64>("big"), i64::MAX - 1);
        assert_eq!(row.get::<_, f64>("ratio"), 0.125);
        assert!(row.get::<_, bool>("flag"));
        assert_eq!(row.get::<_, String>("name"), name);
        assert_eq!(row.get::<_, Vec<u8>>("blob"), blob);
        assert_eq!(row.get::<_, SystemTime>("at"), at);
        assert_eq!(row.get::<_, SystemTime>("naive"), at);

        let row = client.query_one(&select, &[&empty])?;
        for col in 0..row.len() {
            let is_null = match col {
                0 => row.get::<_, Option<i16>>(col).is_none(),
                1 => row.get::<_, Option<i64>>(col).is_none(),
                2 => row.get::<_, Option<f64>>(col).is_none(),
                3 => row.get::<_, Option<bool>>(col).is_none(),
                4 => row.get::<_, Option<String>>(col).is_none(),
                5 => row.get::<_, Option<Vec<u8>>>(col).is_none(),
                _ => row.get::<_, Option<SystemTime>>(col).is_none(),
            };
            assert!(is_null, "column {col} is not NULL");
        }

        // The server computes on what was sent: the values arrived typed.
        let row = client.query_one(
            "SELECT $1::int8 + 1, length($2::bytea), upper($3::text), $4::int4 IS NULL",
            &[&41i64, &blob, &"abc", &None::<i32>],
        )?;
        assert_eq!(row.get::<_, i64>(0), 42);
        assert_eq!(row.get::<_, i32>(1), blob.len() as i32);
        assert_eq!(row.get::<_, String>(2), "ABC");
        assert!(row.get::<_, bool>(3));

        assert_eq!(
            client.execute("UPDATE things SET flag = false WHERE flag IS NULL", &[])?,
            1
        );
        assert_eq!(client.query("SELECT id FROM things", &[])?.len(), 2);
        assert!(client
            .query_opt("SELECT id FROM things WHERE id = $1", &[&-1i32])?
            .is_none());
        assert!(!client.is_broken());
        Ok(())
    })
    .unwrap();
}

/// `transaction` commits on `Ok`, rolls back on `Err`, and a closure that unwinds leaves the client broken.
#[test]
fn transactions_commit_on_ok_and_roll_back_on_err() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let client = PgClient::connect(&opts)?;
        client.batch_execute("CREATE TEMP TABLE t (n int UNIQUE)")?;
        client.transaction(|tx| {
            tx.execute("INSERT INTO t VALUES (1)", &[])?;
            tx.execute("INSERT INTO t VALUES (2)", &[])?;
            Ok::<_, Error>(())
        })?;
        let failed = client.transaction(|tx| {
            tx.execute("INSERT INTO t VALUES (3)", &[])?;
            // A unique violation: the whole transaction rolls back.
            tx.execute("INSERT INTO t VALUES (1)", &[])?;
            Ok::<_, Error>(())
        });
        assert_eq!(
            failed.unwrap_err().code(),
            Some(&SqlState::UNIQUE_VIOLATION)
        );
        let rows: Vec<i32> = client
            .query("SELECT n FROM t ORDER BY n", &[])?
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(rows, [1, 2]);
        assert!(!client.is_broken());

        // A transaction whose closure unwinds leaves the client broken, so
        // that no one reuses a session inside an open transaction.
        let unwound = yieldloop::timeout(Duration::from_millis(50), || {
            client.transaction(|tx| {
                tx.execute("INSERT INTO t VALUES (9)", &[])?;
                yieldloop::sleep(Duration::from_secs(10));
                Ok::<_, Error>(())
            })
        });
        assert!(unwound.is_err());
        assert!(client.is_broken());
        Ok(())
    })
    .unwrap();
}

/// Queries from several tasks run with no tokio runtime entered and no tokio thread started.
#[test]
fn queries_run_on_yieldloop_with_no_tokio_runtime() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let pool = Pool::new(PoolConfig::new(opts).max_size(2));
        let tasks: Vec<_> = (0..4)
            .map(|n| {
                let pool = pool.clone();
                yieldloop::spawn(move || -> Result<i32, Error> {
                    let client = pool.get()?;
                    // Inside a task, during a query's life: no tokio
                    // context is entered anywhere.
                    assert!(tokio::runtime::Handle::try_current().is_err());
                    let row = client.query_one("SELECT $1::int4 * 10, pg_sleep(0.05)", &[&n])?;
                    assert!(tokio::runtime::Handle::try_current().is_err());
                    Ok(row.get(0))
                })
            })
            .collect();
        let got: Vec<i32> = tasks
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Result<_, _>>()?;
        assert_eq!(got, [0, 10, 20, 30]);
        assert!(pool.opened() <= 2);
        // And no tokio runtime's threads were started by any of it.
        let names = thread_names();
        assert!(!names.is_empty(), "/proc/self/task unreadable");
        assert!(
            !names.iter().any(|n| n.starts_with("tokio")),
            "tokio threads: {names:?}"
        );
        Ok(())
    })
    .unwrap();
}

/// Tasks sharing one client have their queries pipelined on its connection: each gets its own answer, whichever task waits on the connection at the time, also after one of them times out while waiting, and through the raw tokio-postgres client.
#[test]
fn tasks_sharing_a_client_each_get_their_answer() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let client = Rc::new(PgClient::connect(&opts)?);
        // Answered in the order sent: the first, slowest, holds up the rest.
        let sleeps = [0.15f64, 0.0, 0.05, 0.0];
        let tasks: Vec<_> = sleeps
            .iter()
            .enumerate()
            .map(|(n, &secs)| {
                let client = client.clone();
                yieldloop::spawn(move || -> Result<i32, Error> {
                    let n = n as i32;
                    let row = if n == 3 {
                        let raw = client.client();
                        yieldloop::block_on(
                            raw.query_one("SELECT $1::int4, pg_sleep($2)", &[&n, &secs]),
                        )
                        .map_err(Error::Postgres)?
                    } else {
                        client.query_one("SELECT $1::int4, pg_sleep($2)", &[&n, &secs])?
                    };
                    Ok(row.get(0))
                })
            })
            .collect();
        let got: Vec<i32> = tasks
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Result<_, _>>()?;
        assert_eq!(got, [0, 1, 2, 3]);

        // The task waiting on the connection gives up; the one behind it
        // still gets its answer, once the server is done with the first.
        let start = Instant::now();
        let quitter = {
            let client = client.clone();
            yieldloop::spawn(move || {
                yieldloop::timeout(Duration::from_millis(50), || {
                    client.execute("SELECT pg_sleep(0.3)", &[])
                })
                .is_err()
            })
        };
        yieldloop::yield_now();
        let behind = {
            let client = client.clone();
            yieldloop::spawn(move || -> Result<i32, Error> {
                Ok(client.query_one("SELECT 7", &[])?.get(0))
            })
        };
        assert!(quitter.join().unwrap(), "the 0.3 s query beat 50 ms");
        assert_eq!(behind.join().unwrap()?, 7);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(250),
            "answered after {took:?}"
        );
        assert!(client.is_broken());
        Ok(())
    })
    .unwrap();
}

/// 50 connects, then 50 `pg_sleep(0.2)` queries at once, while a 1 ms ticker on the same thread keeps ticking.
#[test]
fn fifty_slow_queries_pause_only_their_tasks() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || {
        let pool = Pool::new(PoolConfig::new(opts).max_size(50));
        let fifty = |sql: &'static str| -> Duration {
            let start = Instant::now();
            let tasks: Vec<_> = (0..50)
                .map(|_| {
                    let pool = pool.clone();
                    yieldloop::spawn(move || -> Result<(), Error> {
                        pool.get()?.execute(sql, &[])?;
                        Ok(())
                    })
                })
                .collect();
            for task in tasks {
                task.join().unwrap().unwrap();
            }
            start.elapsed()
        };

        // Opening 50 connections at once, beside the ticker: the start-ups
        // are CPU work on this thread (50 tasks taking turns), so the bound
        // is looser here.
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        let took = fifty("SELECT 1");
        stop.set(true);
        let (_, longest) = ticks.join().unwrap();
        eprintln!("50 connects: {took:?} in all, ticker's longest gap {longest:?}");
        assert_eq!(pool.opened(), 50, "the checkouts did not overlap");
        assert!(
            longest < Duration::from_millis(200),
            "ticker's longest gap while connecting: {longest:?}"
        );

        // 50 slow queries on the warm pool: each pauses only its task.
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        let took = fifty("SELECT pg_sleep(0.2)");
        stop.set(true);
        let (count, longest) = ticks.join().unwrap();
        eprintln!("50 x pg_sleep(0.2): {took:?} in all, ticker's longest gap {longest:?}");
        // One after another they would take 10 s.
        assert!(took < Duration::from_secs(5), "50 sleeps took {took:?}");
        assert!(count >= 50, "ticker ticked {count} times");
        assert!(
            longest < Duration::from_millis(50),
            "ticker's longest gap: {longest:?}"
        );
        assert_eq!(pool.opened(), 50);
        assert_eq!(pool.discarded(), 0);
        assert_eq!(pool.in_use(), 0);
    });
}

/// A checkout from a full pool waits for a connection to come back, or fails with a timeout.
#[test]
fn a_checkout_waits_for_a_free_connection_and_times_out() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let pool = Pool::new(
            PoolConfig::new(opts)
                .max_size(1)
                .checkout_timeout(Some(Duration::from_millis(200))),
        );
        let held = pool.get()?;
        let start = Instant::now();
        let err = pool.get().unwrap_err();
        let waited = start.elapsed();
        assert!(err.is_timeout(), "{err}");
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_secs(5),
            "waited {waited:?}"
        );

        // Given back 50 ms later by another task: the waiting checkout gets it.
        let giver = yieldloop::spawn(move || {
            yieldloop::sleep(Duration::from_millis(50));
            drop(held);
        });
        let client = pool.get()?;
        assert_eq!(client.query_one("SELECT 1", &[])?.get::<_, i32>(0), 1);
        giver.join().unwrap();
        assert_eq!(pool.opened(), 1);
        Ok(())
    })
    .unwrap();
}

/// Syntax, constraint and arithmetic errors are the caller's, with their SQLSTATE; the connection goes back to the pool and is reused.
#[test]
fn a_query_error_is_the_callers_and_the_connection_goes_on() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let pool = Pool::new(PoolConfig::new(opts).max_size(1));
        let client = pool.get()?;
        client.batch_execute("CREATE TEMP TABLE u (n int PRIMARY KEY)")?;

        let err = client.query("SELEKT 1", &[]).unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::SYNTAX_ERROR), "{err}");
        assert!(err.to_string().contains("syntax error"), "{err}");
        assert!(!err.is_connection_lost());

        client.execute("INSERT INTO u VALUES (1)", &[])?;
        let err = client
            .execute("INSERT INTO u VALUES ($1)", &[&1i32])
            .unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{err}");
        let err = client.batch_execute("SELECT 1/0").unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::DIVISION_BY_ZERO), "{err}");
        // A wrong Rust type for a parameter fails before anything is sent.
        assert!(client.query("SELECT $1::int4", &[&"text"]).is_err());
        // So does a statement that cannot be encoded (a NUL byte in its
        // text): an I/O error of tokio-postgres's, but not a lost
        // connection.
        let err = client.batch_execute("SELECT '\0'").unwrap_err();
        assert!(!err.is_connection_lost(), "{err}");

        assert!(!client.is_broken());
        assert_eq!(
            client
                .query_one("SELECT count(*) FROM u", &[])?
                .get::<_, i64>(0),
            1
        );
        drop(client);
        // Back in the pool, and reused (the temp table is still there).
        assert_eq!(pool.idle(), 1);
        let client = pool.get()?;
        assert_eq!(
            client
                .query_one("SELECT count(*) FROM u", &[])?
                .get::<_, i64>(0),
            1
        );
        assert_eq!((pool.opened(), pool.discarded()), (1, 0));
        Ok(())
    })
    .unwrap();
}

/// The server's own `statement_timeout` ends a slow query with an error and keeps the connection.
#[test]
fn a_server_side_statement_timeout_is_an_error_and_the_connection_goes_on() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let mut opts = opts(&server);
    opts.config_mut().options("-c statement_timeout=100ms");
    yieldloop::run(move || -> Result<(), Error> {
        let client = PgClient::connect(&opts)?;
        let start = Instant::now();
        let err = client.execute("SELECT pg_sleep(5)", &[]).unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3));
        assert!(!client.is_broken());
        assert_eq!(client.query_one("SELECT 6", &[])?.get::<_, i32>(0), 6);
        Ok(())
    })
    .unwrap();
}

/// A refused connect is `Error::Connect`; a server that never answers the start-up hits the connect timeout.
#[test]
fn a_refused_or_silent_server_is_a_clear_error() {
    // A port nobody listens on: bound, then closed.
    let refused: SocketAddr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    // A listener that never answers the start-up message.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    yieldloop::run(move || {
        let opts = ConnectOptions::new(refused.to_string()).user("postgres");
        let err = PgClient::connect(&opts).unwrap_err();
        match &err {
            Error::Connect(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused),
            other => panic!("expected a refused connect, got {other:?}"),
        }
        assert!(err.to_string().contains("cannot connect"), "{err}");

        let pool = Pool::new(PoolConfig::new(opts));
        assert!(matches!(pool.get().unwrap_err(), Error::Connect(_)));
        assert_eq!(pool.in_use(), 0, "the failed connect kept its place");

        let opts = ConnectOptions::new(silent_addr.to_string())
            .user("postgres")
            .connect_timeout(Duration::from_millis(200));
        let start = Instant::now();
        let err = PgClient::connect(&opts).unwrap_err();
        let took = start.elapsed();
        assert!(err.is_timeout(), "{err}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    });
    drop(silent);
}

/// SCRAM authentication: a wrong password is the server's `28P01`, the right one logs in.
#[test]
fn a_wrong_password_is_refused_and_the_right_one_logs_in() {
    let Some(server) = servers::postgres_with_password("s3cret") else {
        return;
    };
    let good = opts(&server);
    let bad = opts(&server).password("wrong");
    yieldloop::run(move || -> Result<(), Error> {
        let err = PgClient::connect(&bad).unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::INVALID_PASSWORD), "{err}");
        let client = PgClient::connect(&good)?;
        assert_eq!(client.query_one("SELECT 1", &[])?.get::<_, i32>(0), 1);
        Ok(())
    })
    .unwrap();
}

/// `pg_terminate_backend` mid-query fails that query as a lost connection; the pool drops it while other tasks go on.
#[test]
fn a_terminated_backend_fails_its_query_and_the_pool_drops_it() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let pool = Pool::new(PoolConfig::new(opts).max_size(4));
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        let victim_pid = Rc::new(Cell::new(0i32));
        let victim = {
            let (pool, pid) = (pool.clone(), victim_pid.clone());
            yieldloop::spawn(move || -> Result<(), Error> {
                let client = pool.get()?;
                pid.set(client.query_one("SELECT pg_backend_pid()", &[])?.get(0));
                client.execute("SELECT pg_sleep(20)", &[])?;
                Ok(())
            })
        };
        // Another task keeps querying on its own connection throughout.
        let bystander = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> Result<u32, Error> {
                let client = pool.get()?;
                let mut n = 0;
                for _ in 0..20 {
                    client.execute("SELECT pg_sleep(0.01)", &[])?;
                    n += 1;
                }
                Ok(n)
            })
        };
        for _ in 0..1000 {
            if victim_pid.get() != 0 {
                break;
            }
            yieldloop::sleep(Duration::from_millis(5));
        }
        assert_ne!(victim_pid.get(), 0, "the victim never connected");
        yieldloop::sleep(Duration::from_millis(100));

        let start = Instant::now();
        let admin = pool.get()?;
        let killed: bool = admin
            .query_one("SELECT pg_terminate_backend($1)", &[&victim_pid.get()])?
            .get(0);
        assert!(killed);
        drop(admin);
        let err = victim.join().unwrap().unwrap_err();
        let noticed = start.elapsed();
        assert!(err.is_connection_lost(), "{err}");
        assert!(
            noticed < Duration::from_secs(5),
            "noticed after {noticed:?}"
        );
        assert_eq!(bystander.join().unwrap()?, 20);

        assert_eq!(
            pool.discarded(),
            1,
            "the terminated connection was returned"
        );
        assert_eq!(pool.in_use(), 0);
        // The pool goes on with healthy connections.
        let client = pool.get()?;
        assert_eq!(client.query_one("SELECT 2", &[])?.get::<_, i32>(0), 2);
        drop(client);

        stop.set(true);
        let (count, longest) = ticks.join().unwrap();
        assert!(count >= 20, "ticker ticked {count} times");
        assert!(
            longest < Duration::from_millis(100),
            "longest gap: {longest:?}"
        );
        Ok(())
    })
    .unwrap();
}

/// The server shutting down mid-query fails that query; the pool drops it and its dead idle connection, and the next connect is refused.
#[test]
fn the_server_stopping_mid_query_fails_it_and_the_pool_drops_it() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || {
        let pool = Pool::new(PoolConfig::new(opts).max_size(4));
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        // One idle connection, and one in a long query.
        drop(pool.get().unwrap());
        let slow = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> Result<(), Error> {
                let client = pool.get()?;
                let other = pool.get()?;
                drop(other);
                client.execute("SELECT pg_sleep(20)", &[])?;
                Ok(())
            })
        };
        yieldloop::sleep(Duration::from_millis(200));
        assert_eq!(pool.in_use(), 1);

        // The stop waits for the server's exit: on the blocking pool, so
        // that this thread's tasks go on meanwhile.
        let start = Instant::now();
        let stopper = yieldloop::spawn_blocking(move || {
            let mut server = server;
            server.stop();
            server
        });
        let err = slow.join().unwrap().unwrap_err();
        let noticed = start.elapsed();
        assert!(err.is_connection_lost(), "{err}");
        assert!(
            noticed < Duration::from_secs(10),
            "noticed after {noticed:?}"
        );
        assert_eq!(pool.discarded(), 1, "the broken connection was returned");
        let server = stopper.join().unwrap();

        // The idle one died with the server: the checkout drops it instead
        // of handing it out, and the new connect is refused.
        yieldloop::sleep(Duration::from_millis(50));
        let err = pool.get().unwrap_err();
        assert!(matches!(err, Error::Connect(_)), "{err}");
        assert_eq!(pool.discarded(), 2);
        assert_eq!(pool.in_use(), 0);

        stop.set(true);
        let (count, longest) = ticks.join().unwrap();
        assert!(count >= 20, "ticker ticked {count} times");
        assert!(
            longest < Duration::from_millis(100),
            "longest gap: {longest:?}"
        );
        drop(server);
    });
}

/// A `timeout` around `pg_sleep(5)` returns on time, the pool drops the client, and the server stops the abandoned query.
#[test]
fn a_timeout_around_a_slow_query_ends_it_on_time_and_cancels_it_on_the_server() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let pool = Pool::new(PoolConfig::new(opts.clone()).max_size(2));
        let watcher = PgClient::connect(&opts)?;
        let sleeping = || -> Result<i64, Error> {
            Ok(watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE state = 'active' AND query = 'SELECT pg_sleep(5)'",
                    &[],
                )?
                .get(0))
        };

        for checkout_inside in [false, true] {
            let discarded = pool.discarded();
            let start = Instant::now();
            let result = if checkout_inside {
                // The unwind drops the pooled client inside the timeout.
                yieldloop::timeout(Duration::from_millis(100), || {
                    pool.get()?.execute("SELECT pg_sleep(5)", &[])
                })
            } else {
                let client = pool.get()?;
                let result = yieldloop::timeout(Duration::from_millis(100), || {
                    client.execute("SELECT pg_sleep(5)", &[])
                });
                assert!(client.is_broken());
                let err = client.query("SELECT 1", &[]).unwrap_err();
                assert!(matches!(err, Error::Unusable(_)), "{err}");
                result
            };
            let took = start.elapsed();
            assert!(result.is_err(), "the 5 s query finished inside 100 ms");
            assert!(took < Duration::from_secs(2), "the timeout took {took:?}");
            assert_eq!(
                pool.discarded(),
                discarded + 1,
                "the interrupted client was kept"
            );

            // The server stops the abandoned sleep well before its 5 s.
            let since = Instant::now();
            while sleeping()? > 0 && since.elapsed() < Duration::from_secs(10) {
                yieldloop::sleep(Duration::from_millis(20));
            }
            let gone = since.elapsed();
            assert_eq!(sleeping()?, 0);
            assert!(
                gone < Duration::from_secs(3),
                "the query ran on for {gone:?}"
            );
        }

        // Fresh connections from then on.
        let client = pool.get()?;
        assert_eq!(client.query_one("SELECT 3", &[])?.get::<_, i32>(0), 3);
        Ok(())
    })
    .unwrap();
}

/// `cancel_query` from another task ends a running query with `57014`; the client goes on.
#[test]
fn a_running_query_can_be_cancelled_from_another_task() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> Result<(), Error> {
        let client = Rc::new(PgClient::connect(&opts)?);
        let slow = {
            let client = client.clone();
            yieldloop::spawn(move || client.execute("SELECT pg_sleep(5)", &[]))
        };
        yieldloop::sleep(Duration::from_millis(200));
        let start = Instant::now();
        client.cancel_query()?;
        let err = slow.join().unwrap().unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3));
        // A cancelled query is an ordinary error: the client goes on.
        assert!(!client.is_broken());
        assert_eq!(client.query_one("SELECT 4", &[])?.get::<_, i32>(0), 4);
        Ok(())
    })
    .unwrap();
}

/// A query still running when `run` ends is torn down without hanging, and the thread can run again.
#[test]
fn a_query_left_running_when_run_ends_is_torn_down_cleanly() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    let watch = opts.clone();
    let start = Instant::now();
    yieldloop::run(move || {
        // Left running: `run` cancels the task when the main task returns,
        // unwinding it out of the query.
        yieldloop::spawn(move || {
            let client = PgClient::connect(&opts).unwrap();
            client.execute("SELECT pg_sleep(5)", &[])
        });
        yieldloop::sleep(Duration::from_millis(300));
    });
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "run took {:?}",
        start.elapsed()
    );
    // The thread can run again, and the server is fine.
    yieldloop::run(move || -> Result<(), Error> {
        let client = PgClient::connect(&watch)?;
        assert_eq!(client.query_one("SELECT 5", &[])?.get::<_, i32>(0), 5);
        Ok(())
    })
    .unwrap();
}

/// The server killed (SIGKILL) and restarted on the same port and data directory under load from 10 tasks through a pool of 4: the queries during the outage fail fast, none hangs, every query returns its answer or an error, the pool drops the broken connections and opens new ones, the first queries after the restart succeed within a second, and a row committed before the kill is still there.
#[test]
fn the_pool_replaces_its_connections_after_a_server_restart() {
    let Some(server) = servers::postgres() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || {
        let pool = Pool::new(PoolConfig::new(opts).max_size(4));
        pool.get()
            .unwrap()
            .batch_execute("CREATE TABLE kept (note text); INSERT INTO kept VALUES ('before')")
            .unwrap();
        let stop = Rc::new(Cell::new(false));
        let tasks: Vec<_> = (0..10i32)
            .map(|i| {
                let pool = pool.clone();
                let stop = stop.clone();
                yieldloop::spawn(move || {
                    let mut seen = Vec::new();
                    let mut n = 0;
                    while !stop.get() {
                        n += 1;
                        let asked = i * 100_000 + n;
                        let start = Instant::now();
                        let r = pool
                            .get()
                            .and_then(|client| client.query_one("SELECT $1::int4", &[&asked]));
                        let r = r.map(|row| row.get::<_, i32>(0));
                        let failed = r.is_err();
                        if let Ok(answer) = &r {
                            assert_eq!(*answer, asked);
                        }
                        seen.push((Instant::now(), start.elapsed(), r));
                        if failed {
                            yieldloop::sleep(Duration::from_millis(5));
                        }
                    }
                    seen
                })
            })
            .collect();
        yieldloop::sleep(Duration::from_millis(300));
        let opened_before = pool.opened();
        // Kill and restart on the blocking pool: the start-up waits, and
        // this thread's tasks go on meanwhile.
        let killer = yieldloop::spawn_blocking(move || {
            let mut server = server;
            server.kill();
            let killed = Instant::now();
            std::thread::sleep(Duration::from_millis(700));
            let restarting = Instant::now();
            server.restart();
            (server, killed, restarting, Instant::now())
        });
        let (server, killed, restarting, restarted) = killer.join().unwrap();
        yieldloop::sleep(Duration::from_millis(1500));
        stop.set(true);

        let (mut before, mut after, mut failed) = (0, 0, 0);
        let mut first_ok_after = None::<Instant>;
        for task in tasks {
            let seen = yieldloop::timeout(Duration::from_secs(10), || task.join().unwrap())
                .expect("a load task hung");
            for (ended, took, r) in seen {
                assert!(took < Duration::from_secs(1), "a query took {took:?}");
                // Sent once every process of the server was gone, and back
                // before it was started again: nobody could have answered.
                let sent = ended - took;
                match r {
                    Ok(_) if sent >= killed && ended < restarting => {
                        panic!("an answer while the server was down")
                    }
                    Ok(_) if sent < killed => before += 1,
                    Ok(_) => {
                        after += 1;
                        first_ok_after = Some(first_ok_after.map_or(ended, |t| t.min(ended)));
                    }
                    Err(e) => {
                        failed += 1;
                        assert!(
                            e.is_connection_lost() || matches!(e, Error::Connect(_)),
                            "{e}"
                        );
                        assert!(
                            took < Duration::from_millis(500),
                            "a failing query took {took:?}: {e}"
                        );
                    }
                }
            }
        }
        assert!(
            before > 0 && failed > 0 && after > 0,
            "{before} ok, {failed} failed, {after} ok"
        );
        let first = first_ok_after.unwrap() - restarted;
        assert!(
            first < Duration::from_secs(1),
            "first success {first:?} after the restart"
        );
        assert!(pool.discarded() >= 4, "{} discarded", pool.discarded());
        assert!(pool.opened() > opened_before);
        let note: String = pool
            .get()
            .unwrap()
            .query_one("SELECT note FROM kept", &[])
            .unwrap()
            .get(0);
        assert_eq!(note, "before");
        eprintln!(
            "{before} ok before the kill, {failed} failed, {after} ok after the restart; \
             first success {first:?} after it; {} connections discarded, {} opened",
            pool.discarded(),
            pool.opened()
        );
        drop(server);
    });
}
