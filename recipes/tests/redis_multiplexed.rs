//! The Redis recipe's `Multiplexed` connection against a real redis-server:
//! many tasks over one connection, pipelines and transactions, an error
//! reply, and the server dying under it. Skips (with a message naming the
//! package) when redis-server is not installed.

#[path = "../../tests/util/servers.rs"]
mod servers;

use std::time::{Duration, Instant};
use yieldloop_redis::redis;

use yieldloop_redis::redis::{Commands, RedisResult};
use yieldloop_redis::{ConnectOptions, Multiplexed};

fn opts(server: &servers::RedisServer) -> ConnectOptions {
    ConnectOptions::new(server.addr().to_string())
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(10))
}

/// 200 tasks, 20 increments each, over one connection: every increment
/// counted, each task's own answers rising, and the server seeing one
/// client.
#[test]
fn many_tasks_share_one_connection() {
    let Some(server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let tasks: Vec<_> = (0..200)
            .map(|_| {
                let mut conn = conn.clone();
                yieldloop::spawn(move || -> RedisResult<Vec<i64>> {
                    (0..20).map(|_| conn.incr("mux:n", 1)).collect()
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            let seen = task.join().unwrap()?;
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
            all.extend(seen);
        }
        all.sort_unstable();
        assert_eq!(all, (1..=4000).collect::<Vec<i64>>());
        let mut conn = conn.clone();
        let clients: String = redis::cmd("INFO").arg("clients").query(&mut conn)?;
        assert!(
            clients.contains("connected_clients:1\r\n"),
            "one connection only: {clients}"
        );
        assert_eq!(conn.waiting(), 0);
        Ok(())
    })
    .unwrap();
}

/// Pipelines and a transaction keep their replies together while other
/// tasks' commands go over the same connection.
#[test]
fn pipelines_and_transactions_among_other_commands() {
    let Some(server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let tasks: Vec<_> = (0..50)
            .map(|i| {
                let mut conn = conn.clone();
                yieldloop::spawn(move || -> RedisResult<()> {
                    let key = format!("mux:list:{i}");
                    if i % 2 == 0 {
                        let (len, items): (i64, Vec<i64>) = redis::pipe()
                            .rpush(&key, &[i, i + 1, i + 2])
                            .lrange(&key, 0, -1)
                            .query(&mut conn)?;
                        assert_eq!((len, items), (3, vec![i, i + 1, i + 2]));
                    } else {
                        let (n, v): (i64, i64) = redis::pipe()
                            .atomic()
                            .incr(&key, i)
                            .get(&key)
                            .query(&mut conn)?;
                        assert_eq!((n, v), (i, i));
                    }
                    let _: () = conn.set(format!("mux:s:{i}"), i)?;
                    assert_eq!(conn.get::<_, i64>(format!("mux:s:{i}"))?, i);
                    Ok(())
                })
            })
            .collect();
        for task in tasks {
            task.join().unwrap()?;
        }
        Ok(())
    })
    .unwrap();
}

/// An error reply is that call's only; the connection goes on.
#[test]
fn an_error_reply_is_the_callers_and_the_connection_goes_on() {
    let Some(server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> RedisResult<()> {
        let mut conn = Multiplexed::connect(&opts)?;
        let _: () = conn.set("mux:text", "not a number")?;
        let err = conn.incr::<_, _, i64>("mux:text", 1).unwrap_err();
        assert!(!err.is_io_error(), "{err}");
        assert!(!conn.is_broken());
        assert_eq!(conn.incr::<_, _, i64>("mux:number", 5)?, 5);
        Ok(())
    })
    .unwrap();
}

/// The server killed: the calls waiting and every later one fail promptly
/// with an I/O error, and the connection says it is broken.
#[test]
fn the_server_dying_fails_every_call_promptly() {
    let Some(mut server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    let outcome = yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let mut c = conn.clone();
        assert_eq!(c.incr::<_, _, i64>("mux:k", 1)?, 1);
        server.kill();
        let started = Instant::now();
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let mut conn = conn.clone();
                yieldloop::spawn(move || conn.incr::<_, _, i64>("mux:k", 1))
            })
            .collect();
        for task in tasks {
            let err = task.join().unwrap().unwrap_err();
            assert!(err.is_io_error(), "{err}");
        }
        assert!(conn.is_broken());
        let err = c.get::<_, i64>("mux:k").unwrap_err();
        assert!(err.is_io_error(), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "failing took {:?}",
            started.elapsed()
        );
        Ok(())
    });
    outcome.unwrap();
}

/// A caller that gives up waiting (a `timeout` around it) leaves the
/// connection in step: its late reply is dropped and the next caller gets
/// its own.
#[test]
fn a_caller_that_gives_up_leaves_the_connection_in_step() {
    let Some(server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let mut c = conn.clone();
        let _: () = c.set("mux:after", "mine")?;
        let started = Instant::now();
        // BLPOP holds the connection about 300 ms; the caller leaves at 50.
        let gave_up = yieldloop::timeout(Duration::from_millis(50), || {
            c.blpop::<_, Option<(String, String)>>("mux:empty", 0.3)
        });
        assert!(gave_up.is_err(), "{gave_up:?}");
        assert!(started.elapsed() < Duration::from_millis(250));
        assert!(!conn.is_broken());
        // Queued behind the BLPOP: its nil reply goes nowhere, this one's here.
        assert_eq!(c.get::<_, String>("mux:after")?, "mine");
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!(conn.waiting(), 0);
        Ok(())
    })
    .unwrap();
}

/// What one call of the load saw: when it ended, how long it took, and
/// its reply or error.
struct Outcome {
    ended: Instant,
    took: Duration,
    result: RedisResult<i64>,
}

/// Tasks calling `INCR key` over `conn` back to back until `stop` is set,
/// pausing `pause` after each failed call (a client that retries, not
/// spins); every call's outcome is kept.
fn load(
    conn: &Multiplexed,
    tasks: usize,
    key: &'static str,
    stop: &std::rc::Rc<std::cell::Cell<bool>>,
) -> Vec<yieldloop::JoinHandle<Vec<Outcome>>> {
    (0..tasks)
        .map(|_| {
            let mut conn = conn.clone();
            let stop = stop.clone();
            yieldloop::spawn(move || {
                let mut seen = Vec::new();
                while !stop.get() {
                    let start = Instant::now();
                    let result = conn.incr(key, 1);
                    let failed = result.is_err();
                    let ended = Instant::now();
                    seen.push(Outcome {
                        ended,
                        took: ended - start,
                        result,
                    });
                    if failed {
                        yieldloop::sleep(Duration::from_millis(5));
                    }
                }
                seen
            })
        })
        .collect()
}

/// The server killed and restarted on the same port under load from 20
/// tasks: the calls waiting at the kill and every call during the outage
/// fail fast with an I/O error, none hangs, the connection is replaced in
/// the background, and the calls after the restart succeed within the
/// backoff's bound. Every call returns its reply or an error, and the
/// replies of each server count up from 1 without a gap: no command was
/// lost or sent twice.
#[test]
fn reconnects_after_the_server_restarts_under_load() {
    let Some(mut server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        let tasks = load(&conn, 20, "heal:n", &stop);
        yieldloop::sleep(Duration::from_millis(300));
        server.kill();
        let killed = Instant::now();
        yieldloop::sleep(Duration::from_millis(700));
        assert!(conn.is_broken(), "still connected with the server down");
        server.restart(&[]);
        let restarted = Instant::now();
        // The defaults' longest delay between attempts is 2 s.
        let deadline = restarted + Duration::from_secs(3);
        while !conn.is_connected() {
            assert!(Instant::now() < deadline, "not reconnected within 3 s");
            yieldloop::sleep(Duration::from_millis(5));
        }
        let back = restarted.elapsed();
        yieldloop::sleep(Duration::from_millis(300));
        stop.set(true);

        let mut before = Vec::new();
        let mut after = Vec::new();
        let (mut failed, mut calls) = (0, 0);
        let mut first_ok_after = None::<Instant>;
        for task in tasks {
            for o in yieldloop::timeout(Duration::from_secs(5), || task.join().unwrap())
                .expect("a load task hung")
            {
                calls += 1;
                assert!(o.took < Duration::from_secs(1), "a call took {:?}", o.took);
                match o.result {
                    Ok(n) if o.ended < killed => before.push(n),
                    Ok(n) => {
                        // No reply between the kill and the restart but
                        // what the old server sent before dying.
                        if o.ended >= restarted {
                            after.push(n);
                            first_ok_after =
                                Some(first_ok_after.map_or(o.ended, |t| t.min(o.ended)));
                        } else {
                            before.push(n);
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        assert!(e.is_io_error(), "{e}");
                        assert!(
                            o.took < Duration::from_millis(500),
                            "a failing call took {:?}: {e}",
                            o.took
                        );
                    }
                }
            }
        }
        before.sort_unstable();
        after.sort_unstable();
        assert!(!before.is_empty() && !after.is_empty() && failed > 0);
        assert_eq!(before, (1..=before.len() as i64).collect::<Vec<_>>());
        assert_eq!(after, (1..=after.len() as i64).collect::<Vec<_>>());
        let first = first_ok_after.expect("a success after the restart") - restarted;
        assert!(
            first < Duration::from_secs(3),
            "first success {first:?} after the restart"
        );
        assert_eq!(conn.reconnects(), 1);
        eprintln!(
            "{calls} calls: {} before the kill, {failed} failed, {} after the restart; \
             connected {back:?} and first success {first:?} after the restart",
            before.len(),
            after.len()
        );
        Ok(())
    })
    .unwrap();
}

/// The new connection runs the options' setup again: `AUTH`, `SELECT` and
/// the client name are in force after a restart.
#[test]
fn a_reconnect_runs_the_setup_again() {
    let Some(mut server) = servers::redis_with(&["--requirepass", "s3cret"]) else {
        return;
    };
    let opts = opts(&server)
        .password("s3cret")
        .db(3)
        .client_name("mux-heal");
    let fast = yieldloop_redis::Reconnect::new()
        .first_delay(Duration::from_millis(10))
        .max_delay(Duration::from_millis(100));
    yieldloop::run(move || -> RedisResult<()> {
        let mut conn = Multiplexed::connect_with(&opts, fast)?;
        let _: () = conn.set("heal:db", "before")?;
        server.kill();
        let err = conn.get::<_, String>("heal:db").unwrap_err();
        assert!(err.is_io_error(), "{err}");
        server.restart(&["--requirepass", "s3cret"]);
        let restarted = Instant::now();
        while conn.is_broken() {
            assert!(restarted.elapsed() < Duration::from_secs(2));
            yieldloop::sleep(Duration::from_millis(5));
        }
        let name: String = redis::cmd("CLIENT").arg("GETNAME").query(&mut conn)?;
        assert_eq!(name, "mux-heal");
        let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut conn)?;
        assert!(info.contains(" db=3 "), "{info}");
        // Authenticated, or the command would be refused with NOAUTH.
        assert_eq!(conn.get::<_, Option<String>>("heal:db")?, None);
        Ok(())
    })
    .unwrap();
}

/// With the server gone for good, the reconnecting task keeps trying with
/// its delays growing, one attempt at a time, and ends with the last
/// clone; `Reconnect::never` keeps a failed connection failed.
#[test]
fn the_reconnecting_task_ends_with_the_last_clone() {
    let Some(mut server) = servers::redis() else {
        return;
    };
    let opts = opts(&server);
    // This thread's scheduler only: the other tests run beside it.
    let reconnecting = || {
        let here = std::thread::current().name().map(str::to_owned);
        yieldloop::diag::dump()
            .schedulers
            .iter()
            .filter(|s| s.thread == here)
            .flat_map(|s| &s.tasks)
            .filter(|t| t.name.as_deref() == Some("redis-reconnect"))
            .count()
    };
    yieldloop::run(move || -> RedisResult<()> {
        let conn = Multiplexed::connect(&opts)?;
        let never = Multiplexed::connect_with(&opts, yieldloop_redis::Reconnect::never())?;
        server.kill();
        let mut c = conn.clone();
        assert!(c.incr::<_, _, i64>("k", 1).unwrap_err().is_io_error());
        let mut n = never.clone();
        assert!(n.incr::<_, _, i64>("k", 1).unwrap_err().is_io_error());
        yieldloop::sleep(Duration::from_millis(500));
        // One task for `conn`, none for `never`.
        assert_eq!(reconnecting(), 1);
        drop((conn, c));
        yieldloop::sleep(Duration::from_millis(20));
        assert_eq!(reconnecting(), 0);
        server.restart(&[]);
        yieldloop::sleep(Duration::from_millis(100));
        assert!(never.is_broken());
        assert!(n.incr::<_, _, i64>("k", 1).unwrap_err().is_io_error());
        Ok(())
    })
    .unwrap();
}
