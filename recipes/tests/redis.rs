//! The Redis recipe against a real `redis-server` (started per test on a
//! free port; the tests skip, saying which package to install, where it is
//! missing): typed commands, pipelines, AUTH/SELECT/HELLO, the pool, a
//! blocking command that pauses only its task, and the faults.

#[path = "../../tests/util/servers.rs"]
mod servers;
mod util;

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use yieldloop_redis::redis;

use yieldloop_redis::redis::{Commands, ErrorKind, RedisResult};
use yieldloop_redis::{ConnectOptions, Connection, Pool, PoolConfig};

/// Calls on a healthy local server answer in microseconds; this bounds any
/// one read so a hang fails the test instead of stalling the suite.
const CALL_LIMIT: Duration = Duration::from_secs(10);

fn opts(addr: SocketAddr) -> ConnectOptions {
    ConnectOptions::new(addr.to_string())
        .connect_timeout(CALL_LIMIT)
        .read_timeout(CALL_LIMIT)
        .write_timeout(CALL_LIMIT)
}

#[test]
fn typed_commands_and_pipelines() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        for resp3 in [false, true] {
            let mut conn = Connection::connect(&opts(addr).resp3(resp3))?;
            let _: () = redis::cmd("FLUSHDB").query(&mut conn)?;
            let _: () = conn.set("greeting", "hello")?;
            assert_eq!(conn.get::<_, String>("greeting")?, "hello");
            assert_eq!(conn.get::<_, Option<String>>("missing")?, None);
            assert_eq!(conn.incr::<_, _, i64>("n", 5)?, 5);
            assert_eq!(conn.incr::<_, _, i64>("n", -2)?, 3);
            let _: () = conn.hset_multiple("h", &[("a", 1), ("b", 2)])?;
            let h: HashMap<String, i64> = conn.hgetall("h")?;
            assert_eq!(h, HashMap::from([("a".into(), 1), ("b".into(), 2)]));
            let _: () = conn.rpush("list", &[1, 2, 3])?;
            assert_eq!(conn.lrange::<_, Vec<i32>>("list", 0, -1)?, [1, 2, 3]);

            // A pipeline: one write, all replies read in order.
            let (a, b, len): (String, i64, usize) = redis::pipe()
                .get("greeting")
                .get("n")
                .set("x", 1)
                .ignore()
                .llen("list")
                .query(&mut conn)?;
            assert_eq!((a.as_str(), b, len), ("hello", 3, 3));

            // A transaction: MULTI/EXEC, the QUEUED replies skipped.
            let (n, x): (i64, i64) = redis::pipe()
                .atomic()
                .incr("n", 1)
                .incr("x", 10)
                .query(&mut conn)?;
            assert_eq!((n, x), (4, 11));

            // A large value crosses many reads and writes.
            let big = "v".repeat(1 << 20);
            let _: () = conn.set("big", &big)?;
            assert_eq!(conn.get::<_, String>("big")?.len(), big.len());
            assert!(!conn.is_broken());
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn auth_select_hello_and_acl_users() {
    let Some(server) = servers::redis_with(&["--requirepass", "sesame"]) else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        // No credentials: the connect works, the first command is refused.
        let mut anon = Connection::connect(&opts(addr))?;
        let err = anon.get::<_, Option<String>>("k").unwrap_err();
        assert_eq!(err.code(), Some("NOAUTH"), "{err}");
        assert!(
            !anon.is_broken(),
            "an error reply leaves the connection usable"
        );

        // Wrong password: the connect fails, saying so.
        let err = Connection::connect(&opts(addr).password("wrong")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AuthenticationFailed, "{err}");
        let err = Connection::connect(&opts(addr).password("wrong").resp3(true)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AuthenticationFailed, "{err}");

        // Right password and database 3.
        let mut db3 = Connection::connect(&opts(addr).password("sesame").db(3))?;
        assert_eq!(redis::ConnectionLike::get_db(&db3), 3);
        let _: () = db3.set("where", "three")?;
        let mut db0 = Connection::connect(&opts(addr).password("sesame"))?;
        assert!(!db0.exists::<_, bool>("where")?);
        let _: () = redis::cmd("SELECT").arg(3).query(&mut db0)?;
        assert_eq!(db0.get::<_, String>("where")?, "three");

        // An ACL user, over RESP2 (AUTH user pass) and RESP3 (HELLO 3 AUTH).
        let _: () = redis::cmd("ACL")
            .arg(&["SETUSER", "alice", "on", ">wonderland", "~*", "+@all"])
            .query(&mut db0)?;
        for resp3 in [false, true] {
            let mut alice = Connection::connect(
                &opts(addr)
                    .user("alice", "wonderland")
                    .db(3)
                    .resp3(resp3)
                    .client_name("alice-conn"),
            )?;
            let who: String = redis::cmd("ACL").arg("WHOAMI").query(&mut alice)?;
            assert_eq!(who, "alice");
            let name: String = redis::cmd("CLIENT").arg("GETNAME").query(&mut alice)?;
            assert_eq!(name, "alice-conn");
            assert_eq!(alice.get::<_, String>("where")?, "three");
            // RESP3's own types reach the caller: a map for HGETALL.
            let _: () = alice.hset("h", "f", "v")?;
            let raw: redis::Value = redis::cmd("HGETALL").arg("h").query(&mut alice)?;
            assert_eq!(matches!(raw, redis::Value::Map(_)), resp3, "{raw:?}");
        }

        // The same through a URL.
        let url = format!("redis://alice:wonderland@{}/3?protocol=resp3", addr);
        let mut from_url = Connection::connect(&ConnectOptions::from_url(&url)?)?;
        assert_eq!(from_url.get::<_, String>("where")?, "three");
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_blpop_pauses_only_its_task() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let mut conn = Connection::connect(&opts(addr))?;
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(20));
        let start = Instant::now();
        let popped: Option<[String; 2]> = conn.blpop("empty-list", 0.2)?;
        let waited = start.elapsed();
        stop.set(true);
        let (count, longest) = ticks.join().unwrap();
        assert_eq!(popped, None);
        assert!(
            waited >= Duration::from_millis(150),
            "BLPOP returned after {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(5),
            "BLPOP returned after {waited:?}"
        );
        // A frozen thread would show one gap as long as the BLPOP; a 1 ms
        // ticker on a shared machine still ticks dozens of times.
        assert!(
            longest < Duration::from_millis(100),
            "ticker's longest gap: {longest:?}"
        );
        assert!(count >= 20, "ticker ticked {count} times in {waited:?}");

        // A BLPOP that gets its value from another task on the same thread.
        let pusher_opts = opts(addr);
        let pusher = yieldloop::spawn(move || -> RedisResult<()> {
            let mut conn = Connection::connect(&pusher_opts)?;
            yieldloop::sleep(Duration::from_millis(50));
            conn.rpush("queue", "job-1")
        });
        let popped: Option<[String; 2]> = conn.blpop("queue", 5.0)?;
        pusher.join().unwrap()?;
        assert_eq!(popped, Some(["queue".to_string(), "job-1".to_string()]));
        Ok(())
    })
    .unwrap();
}

#[test]
fn many_tasks_share_a_bounded_pool() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    const TASKS: i64 = 40;
    const INCRS: i64 = 25;
    const MAX: usize = 4;
    let config = PoolConfig::new(opts(addr)).max_size(MAX);
    yieldloop::run(move || -> RedisResult<()> {
        let pool = config.pool();
        // `pool()` hands out this thread's one pool for the configuration.
        let again = config.pool();
        let peak = Rc::new(Cell::new(0usize));
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let (pool, peak) = (pool.clone(), peak.clone());
            tasks.push(yieldloop::spawn(move || -> RedisResult<()> {
                for i in 0..INCRS {
                    let mut conn = pool.get()?;
                    peak.set(peak.get().max(pool.in_use()));
                    let _: i64 = conn.incr("counter", 1)?;
                    if (t + i) % 5 == 0 {
                        // Hold the connection across a pause now and then,
                        // so that checkouts have to wait.
                        yieldloop::sleep(Duration::from_millis(1));
                    }
                }
                Ok(())
            }));
        }
        for task in tasks {
            task.join().unwrap()?;
        }
        let mut conn = again.get()?;
        assert_eq!(conn.get::<_, i64>("counter")?, TASKS * INCRS);
        drop(conn);
        assert!(
            peak.get() <= MAX,
            "{} connections in use at once",
            peak.get()
        );
        assert!(pool.opened() <= MAX as u64, "opened {}", pool.opened());
        assert!(
            pool.opened() >= 2,
            "tasks never overlapped: opened {}",
            pool.opened()
        );
        assert_eq!(pool.in_use(), 0);
        assert_eq!(pool.idle() as u64, pool.opened());
        assert_eq!(pool.discarded(), 0);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_checkout_waits_for_a_free_connection_and_times_out() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let pool = Pool::new(
            PoolConfig::new(opts(addr))
                .max_size(1)
                .checkout_timeout(Some(Duration::from_millis(100))),
        );
        let held = pool.get()?;
        let start = Instant::now();
        let err = pool.get().unwrap_err();
        let waited = start.elapsed();
        assert!(err.is_timeout(), "{err}");
        assert!(
            waited >= Duration::from_millis(90),
            "gave up after {waited:?}"
        );
        assert!(waited < Duration::from_secs(2), "gave up after {waited:?}");

        // A waiting checkout gets the connection as soon as it is returned.
        let waiter = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> RedisResult<String> {
                let mut conn = pool.get()?;
                conn.set::<_, _, ()>("k", "v")?;
                conn.get("k")
            })
        };
        yieldloop::sleep(Duration::from_millis(20));
        drop(held);
        assert_eq!(waiter.join().unwrap()?, "v");
        assert_eq!(pool.opened(), 1);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_command_error_is_the_callers_and_the_connection_goes_on() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let pool = Pool::new(PoolConfig::new(opts(addr)).max_size(2));
        {
            let mut conn = pool.get()?;
            let _: () = conn.set("s", "a string")?;
            let err = conn.lpush::<_, _, i64>("s", "x").unwrap_err();
            assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
            assert!(!err.is_io_error());
            assert!(!conn.is_broken());
            assert_eq!(conn.get::<_, String>("s")?, "a string");

            // An error in the middle of a pipeline: every reply is still
            // read, so the next call gets its own answer.
            let err = redis::pipe()
                .get("s")
                .lpush("s", "x")
                .set("after", 1)
                .query::<(String, i64, ())>(&mut conn)
                .unwrap_err();
            // redis 1.x reports each failed command of a pipeline with its
            // index.
            let failed = err
                .clone()
                .into_server_errors()
                .expect("a pipeline failure");
            assert_eq!(failed.len(), 1, "{err}");
            assert_eq!((failed[0].0, failed[0].1.code()), (1, "WRONGTYPE"), "{err}");
            assert_eq!(conn.get::<_, i64>("after")?, 1);

            // An unknown command.
            let err = redis::cmd("NOSUCHCOMMAND")
                .query::<()>(&mut conn)
                .unwrap_err();
            assert_eq!(err.code(), Some("ERR"), "{err}");
        }
        assert_eq!((pool.idle(), pool.discarded()), (1, 0));
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_refused_connection_is_a_clear_error() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    yieldloop::run(move || {
        let opts = ConnectOptions::new(format!("127.0.0.1:{port}")).connect_timeout(CALL_LIMIT);
        let err = Connection::connect(&opts).unwrap_err();
        assert!(err.is_connection_refusal(), "{err}");
        assert!(err.is_io_error());

        let pool = Pool::new(PoolConfig::new(opts).max_size(1));
        for _ in 0..3 {
            // The failed connect gives its place back each time.
            assert!(pool.get().unwrap_err().is_connection_refusal());
            assert_eq!(pool.in_use(), 0);
        }
        assert_eq!(pool.opened(), 0);
    });
}

#[test]
fn the_server_dying_mid_call_fails_that_call_and_the_pool_drops_it() {
    let Some(mut server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    let config = PoolConfig::new(opts(addr)).max_size(4);
    yieldloop::run(move || {
        let pool = config.pool();
        let stop = Rc::new(Cell::new(false));
        let ticks = util::ticker(stop.clone());
        // Two connections: one idle, one stuck in a long BLPOP.
        let warm = pool.get().unwrap();
        drop(warm);
        let blocked = {
            let pool = pool.clone();
            yieldloop::spawn(move || -> RedisResult<Option<[String; 2]>> {
                let mut conn = pool.get()?;
                let mut other = pool.get()?;
                let _: () = other.set("x", 1)?;
                drop(other);
                conn.blpop("never", 20.0)
            })
        };
        yieldloop::sleep(Duration::from_millis(100));
        assert_eq!(pool.in_use(), 1);
        let start = Instant::now();
        server.kill();
        let err = blocked.join().unwrap().unwrap_err();
        let noticed = start.elapsed();
        assert!(err.is_io_error(), "{err}");
        assert!(
            noticed < Duration::from_secs(5),
            "noticed after {noticed:?}"
        );
        assert_eq!(pool.discarded(), 1, "the broken connection was returned");
        assert_eq!(pool.in_use(), 0);

        // The idle connection is dead too: the checkout finds it closed,
        // drops it, and tries a new connect, which is refused. Clear
        // errors, no hang.
        assert_eq!(pool.idle(), 1);
        assert!(pool.get().unwrap_err().is_connection_refusal());
        assert_eq!((pool.idle(), pool.discarded(), pool.in_use()), (0, 2, 0));

        // The rest of the thread went on throughout.
        yieldloop::sleep(Duration::from_millis(20));
        stop.set(true);
        let (count, longest) = ticks.join().unwrap();
        assert!(count >= 20, "ticker ticked {count} times");
        assert!(
            longest < Duration::from_millis(100),
            "ticker's longest gap: {longest:?}"
        );
    });
}

#[test]
fn a_timeout_around_a_slow_blpop_ends_it_on_time_and_the_connection_is_not_reused() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let pool = Pool::new(PoolConfig::new(opts(addr)).max_size(2));

        // The checkout inside the timeout: the unwind drops the connection.
        let start = Instant::now();
        let result = yieldloop::timeout(Duration::from_millis(50), || {
            let mut conn = pool.get()?;
            conn.blpop::<_, Option<[String; 2]>>("slow", 5.0)
        });
        let took = start.elapsed();
        assert!(result.is_err(), "{result:?}");
        assert!(
            took >= Duration::from_millis(45),
            "timed out after {took:?}"
        );
        assert!(
            took < Duration::from_millis(500),
            "timed out after {took:?}"
        );
        assert_eq!((pool.idle(), pool.in_use(), pool.discarded()), (0, 0, 1));

        // The checkout outside it: the caller keeps a connection that now
        // refuses every call, and the pool does not take it back.
        let mut conn = pool.get()?;
        let result = yieldloop::timeout(Duration::from_millis(50), || {
            conn.blpop::<_, Option<[String; 2]>>("slow", 5.0)
        });
        assert!(result.is_err());
        assert!(conn.is_broken());
        let err = conn.get::<_, Option<String>>("slow").unwrap_err();
        assert!(err.is_io_error(), "{err}");
        drop(conn);
        assert_eq!(pool.discarded(), 2);

        // Neither abandoned BLPOP is still waiting on the server to take a
        // value meant for someone else: the server sees both clients go.
        let mut fresh = pool.get()?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let info: String = redis::cmd("INFO").arg("clients").query(&mut fresh)?;
            if info.contains("blocked_clients:0") {
                break;
            }
            assert!(Instant::now() < deadline, "clients still blocked:\n{info}");
            yieldloop::sleep(Duration::from_millis(5));
        }
        let _: () = fresh.rpush("slow", "mine")?;
        assert_eq!(
            fresh.lpop::<_, Option<String>>("slow", None)?,
            Some("mine".into())
        );
        assert_eq!(pool.opened(), 3);
        Ok(())
    })
    .unwrap();
}

#[test]
fn idle_connections_closed_by_the_server_are_replaced_at_checkout() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let pool = Pool::new(PoolConfig::new(opts(addr)).max_size(4));
        {
            let (mut a, mut b) = (pool.get()?, pool.get()?);
            let _: () = a.set("k", "v")?;
            let _: () = b.set("k2", "v2")?;
        }
        assert_eq!(pool.idle(), 2);
        // Another client has the server close every other normal client.
        let mut admin = Connection::connect(&opts(addr))?;
        let killed: i64 = redis::cmd("CLIENT")
            .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
            .query(&mut admin)?;
        assert_eq!(killed, 2);
        // The close reaches our sockets a moment later.
        yieldloop::sleep(Duration::from_millis(50));
        let mut conn = pool.get()?;
        assert_eq!(conn.get::<_, String>("k")?, "v");
        drop(conn);
        assert_eq!((pool.discarded(), pool.opened(), pool.idle()), (2, 3, 1));
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_pool_outlives_its_run_and_serves_the_next_one() {
    let Some(server) = servers::redis() else {
        return;
    };
    let config = PoolConfig::new(opts(server.addr())).max_size(2);
    for round in 0..3i64 {
        let config = config.clone();
        yieldloop::run(move || -> RedisResult<()> {
            let pool = config.pool();
            // Each earlier run left one idle connection, registered with a
            // scheduler that is gone: it is replaced, not handed out.
            assert_eq!(pool.idle(), usize::from(round > 0));
            let mut conn = pool.get()?;
            assert_eq!(conn.incr::<_, _, i64>("rounds", 1)?, round + 1);
            drop(conn);
            assert_eq!(pool.opened(), round as u64 + 1);
            assert_eq!(pool.discarded(), round as u64);
            Ok(())
        })
        .unwrap();
    }
}
