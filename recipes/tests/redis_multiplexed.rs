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
