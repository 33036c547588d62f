//! The `redis` crate's own synchronous client, unmodified, under feature
//! `hook` against a real `redis-server`: its blocking `std::net` socket
//! pauses only the task that calls it. A hundred `BLPOP`s wait at once
//! beside a smooth ticker; typed commands and pipelines work; `timeout`
//! ends a blocked `BLPOP` on time; and the same code on a plain thread
//! behaves exactly as it does without the feature.

#[path = "../../tests/util/servers.rs"]
mod servers;
mod util;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use yieldloop_redis::redis;

use yieldloop_redis::redis::{Commands, RedisResult};

/// The `redis` crate's URL for a server.
fn url(addr: SocketAddr) -> String {
    format!("redis://{addr}/")
}

/// A connection of the `redis` crate's own synchronous client: a blocking
/// `std::net::TcpStream` inside, nothing of yieldloop's.
fn connect(addr: SocketAddr) -> RedisResult<redis::Connection> {
    redis::Client::open(url(addr))?.get_connection()
}

/// The bounds of the 100-BLPOP run: all done in under 1 s, a 1 ms ticker
/// never late by 5 ms or more while they wait. CI runs this test in a
/// release build, where that holds. An unoptimised build spends tens of
/// microseconds of the client's code on each reply, and the hundred
/// replies come within the same millisecond, so one scheduler turn runs
/// them all: there the gap is allowed 30 ms (a frozen thread shows 200 ms
/// and more).
const ALL_DONE: Duration = Duration::from_secs(1);
const TICKER_GAP: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(30)
} else {
    Duration::from_millis(5)
};
/// While the hundred connect (each resolving its address on the blocking
/// pool), the ticker is only required to keep going.
const CONNECT_GAP: Duration = Duration::from_millis(50);

/// What one run of [`hundred_blpops`] saw.
#[derive(Debug)]
struct Run {
    /// From the first spawn until every task has connected.
    connect: Duration,
    /// The ticker's longest gap while they connected.
    connect_gap: Duration,
    /// From the start of the BLPOPs to the last join.
    elapsed: Duration,
    /// The ticker's longest gap meanwhile, and how often it ticked.
    longest: Duration,
    ticks: u32,
}

/// A hundred tasks on one scheduler each connect, then (all at once)
/// `BLPOP` an empty list with a 0.2 s timeout, beside a 1 ms ticker.
fn hundred_blpops(addr: SocketAddr) -> Run {
    const TASKS: usize = 100;
    yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        let go = Rc::new(yieldloop::sync::local::Event::new());
        let connected = Rc::new(Cell::new(0usize));
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let (go, connected) = (go.clone(), connected.clone());
                yieldloop::spawn(move || -> RedisResult<Duration> {
                    let conn = connect(addr);
                    connected.set(connected.get() + 1);
                    go.wait();
                    let begun = Instant::now();
                    let popped: Option<[String; 2]> =
                        conn?.blpop(format!("hook:empty:{i}"), 0.2)?;
                    assert_eq!(popped, None, "the list was empty");
                    Ok(begun.elapsed())
                })
            })
            .collect();
        while connected.get() < TASKS && start.elapsed() < util::TIMEOUT {
            yieldloop::sleep(Duration::from_millis(1));
        }
        let connect = start.elapsed();
        stop.set(true);
        let (_, connect_gap) = ticker.join().unwrap();
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        go.set();
        for task in tasks {
            let waited = task.join().unwrap().expect("BLPOP on the sync client");
            // Redis's own timeout ran out: no early return.
            assert!(
                waited >= Duration::from_millis(150),
                "a BLPOP returned after {waited:?}"
            );
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        Run {
            connect,
            connect_gap,
            elapsed,
            longest,
            ticks,
        }
    })
}

/// 100 tasks each `BLPOP` an empty list for 0.2 s on their own blocking
/// connection: all are done in under 1 s and a 1 ms ticker stays smooth,
/// so no call froze the thread. Timing on a shared machine can hiccup, so
/// the bounds must hold in one of five runs; a frozen thread fails all of
/// them (100 × 0.2 s each), and after one such run there is no other.
#[test]
fn a_hundred_blpops_pause_only_their_tasks() {
    let Some(server) = servers::redis() else {
        return;
    };
    let mut runs = Vec::new();
    for _ in 0..5 {
        let run = hundred_blpops(server.addr());
        let fine =
            run.elapsed < ALL_DONE && run.longest < TICKER_GAP && run.connect_gap < CONNECT_GAP;
        let frozen = run.elapsed > 3 * ALL_DONE;
        runs.push(run);
        if fine || frozen {
            break;
        }
    }
    let last = runs.last().unwrap();
    assert!(
        last.elapsed < ALL_DONE && last.longest < TICKER_GAP && last.connect_gap < CONNECT_GAP,
        "100 BLPOPs of 0.2 s (gaps allowed: {TICKER_GAP:?}, connecting {CONNECT_GAP:?}): {runs:#?}"
    );
    assert!(last.connect < util::TIMEOUT, "{runs:#?}");
    // Ticks every ~1 ms for the run's ≥ 0.2 s.
    assert!(last.ticks >= 50, "{runs:#?}");
}

/// The typed `Commands` API, pipelines and transactions of the sync client,
/// from tasks that share the thread: every reply lands with its caller.
#[test]
fn typed_commands_and_pipelines_work_in_tasks() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let mut conn = connect(addr)?;
        let _: () = redis::cmd("FLUSHDB").query(&mut conn)?;
        let _: () = conn.set("greeting", "hello")?;
        assert_eq!(conn.get::<_, String>("greeting")?, "hello");
        assert_eq!(conn.get::<_, Option<String>>("missing")?, None);
        let _: () = conn.hset_multiple("h", &[("a", 1), ("b", 2)])?;
        let h: HashMap<String, i64> = conn.hgetall("h")?;
        assert_eq!(h, HashMap::from([("a".into(), 1), ("b".into(), 2)]));

        let (a, len): (String, usize) = redis::pipe()
            .get("greeting")
            .rpush("list", &[1, 2, 3])
            .ignore()
            .llen("list")
            .query(&mut conn)?;
        assert_eq!((a.as_str(), len), ("hello", 3));
        let (n, m): (i64, i64) = redis::pipe()
            .atomic()
            .incr("n", 2)
            .incr("m", 10)
            .query(&mut conn)?;
        assert_eq!((n, m), (2, 10));

        // A value of 4 MiB crosses many partial reads and writes.
        let big = util_bytes(4 << 20);
        let _: () = conn.set("big", &big)?;
        assert_eq!(conn.get::<_, Vec<u8>>("big")?, big);

        // Twenty tasks, a connection each, interleaved on the thread: 50
        // INCRs each, each task pausing at every reply.
        const TASKS: i64 = 20;
        const INCRS: i64 = 50;
        let in_flight = Rc::new(Cell::new(0usize));
        let peak = Rc::new(Cell::new(0usize));
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (in_flight, peak) = (in_flight.clone(), peak.clone());
                yieldloop::spawn(move || -> RedisResult<()> {
                    let mut conn = connect(addr)?;
                    for _ in 0..INCRS {
                        in_flight.set(in_flight.get() + 1);
                        peak.set(peak.get().max(in_flight.get()));
                        let _: i64 = conn.incr("counter", 1)?;
                        in_flight.set(in_flight.get() - 1);
                    }
                    Ok(())
                })
            })
            .collect();
        for task in tasks {
            task.join().unwrap()?;
        }
        assert_eq!(conn.get::<_, i64>("counter")?, TASKS * INCRS);
        // While one task waited for its reply, others ran and sent theirs.
        assert!(peak.get() >= 2, "the tasks never overlapped");
        Ok(())
    })
    .unwrap();
}

/// `len` bytes of a pattern that a lost or doubled chunk would change.
fn util_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// `yieldloop::timeout` around a `BLPOP` that would wait forever: it returns
/// `Elapsed` on time; the blocked call itself got a timeout error from its
/// socket read, which the client reports as such; the connection recovers
/// the way the client's own read timeouts do (it skips the late reply);
/// and the task goes on with its work.
#[test]
fn timeout_ends_a_blocked_blpop_on_time() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    yieldloop::run(move || -> RedisResult<()> {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        let mut conn = connect(addr)?;
        // A backstop only: a socket read timeout far beyond ours, so that
        // a build where the call blocks the thread fails instead of hanging.
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        let _: () = redis::cmd("DEL").arg("hook:never").query(&mut conn)?;
        let limit = Duration::from_millis(100);
        let seen: RefCell<Option<RedisResult<Option<[String; 2]>>>> = RefCell::new(None);
        let start = Instant::now();
        let outcome = yieldloop::timeout(limit, || {
            // 0: no timeout of Redis's own; only ours ends it.
            *seen.borrow_mut() = Some(conn.blpop("hook:never", 0.0));
        });
        let waited = start.elapsed();
        assert!(outcome.is_err(), "timeout returned {outcome:?}");
        assert!(
            waited >= limit && waited < limit + Duration::from_millis(400),
            "timeout returned after {waited:?}"
        );
        let seen = seen.into_inner().expect("the BLPOP returned");
        let err = seen.expect_err("the interrupted BLPOP failed");
        assert!(err.is_timeout(), "the client's error: {err:?}");
        assert!(
            err.to_string().to_lowercase().contains("timed out"),
            "the client's error says what happened: {err}"
        );

        // The task goes on: its pauses work and a fresh connection talks.
        yieldloop::sleep(Duration::from_millis(5));
        let mut other = connect(addr)?;
        let _: () = redis::cmd("PING").query(&mut other)?;

        // The old connection: Redis still holds the abandoned BLPOP. Once
        // another client pushes, its reply comes late and the client skips
        // it, as after any read timeout of its own; the next command gets
        // its own reply, and the pushed value went to the abandoned BLPOP.
        let _: () = other.rpush("hook:never", "late")?;
        let pong = yieldloop::timeout(Duration::from_secs(10), || -> RedisResult<String> {
            redis::cmd("PING").query(&mut conn)
        })
        .expect("PING on the old connection within 10 s")?;
        assert_eq!(pong, "PONG");
        assert_eq!(other.llen::<_, usize>("hook:never")?, 0);

        stop.set(true);
        let (count, longest) = ticker.join().unwrap();
        assert!(count >= 20, "ticker ticked {count} times");
        assert!(
            longest < Duration::from_millis(100),
            "ticker's longest gap: {longest:?}"
        );
        Ok(())
    })
    .unwrap();
}

/// One client session on the sync client: commands, a pipeline, a `BLPOP`
/// that times out on Redis's side, a socket read timeout (`SO_RCVTIMEO`)
/// that ends a `BLPOP` on ours, and the connection's recovery. Returns
/// what it saw, one line per step, timings rounded to what any machine
/// meets.
fn session(addr: SocketAddr, tag: &str) -> RedisResult<Vec<String>> {
    let mut out = Vec::new();
    let key = |k: &str| format!("hook:session:{tag}:{k}");
    let mut conn = connect(addr)?;
    let mut other = connect(addr)?;
    let _: () = conn.set(key("s"), "v")?;
    out.push(format!("get {:?}", conn.get::<_, String>(key("s"))?));
    out.push(format!("incr {}", conn.incr::<_, _, i64>(key("n"), 7)?));
    let (v, n): (String, i64) = redis::pipe()
        .get(key("s"))
        .incr(key("n"), 1)
        .query(&mut conn)?;
    out.push(format!("pipe {v:?} {n}"));

    let start = Instant::now();
    let popped: Option<[String; 2]> = conn.blpop(key("empty"), 0.2)?;
    let waited = start.elapsed();
    out.push(format!(
        "blpop {popped:?} waited>=0.15s:{}",
        waited >= Duration::from_millis(150)
    ));

    conn.set_read_timeout(Some(Duration::from_millis(100)))?;
    let start = Instant::now();
    let timed_out = conn.blpop::<_, Option<[String; 2]>>(key("never"), 0.0);
    let waited = start.elapsed();
    out.push(format!(
        "blpop with SO_RCVTIMEO: timeout={} waited>=0.1s:{} <2s:{}",
        timed_out.as_ref().is_err_and(|e| e.is_timeout()),
        waited >= Duration::from_millis(95),
        waited < Duration::from_secs(2)
    ));
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let _: () = other.rpush(key("never"), "x")?;
    out.push(format!(
        "after: {}",
        redis::cmd("PING").query::<String>(&mut conn)?
    ));
    out.push(format!("left {}", other.llen::<_, usize>(key("never"))?));
    let _: () = redis::cmd("DEL")
        .arg(key("s"))
        .arg(key("n"))
        .query(&mut conn)?;
    Ok(out)
}

/// What [`session`] sees on a correct client, task or thread alike.
fn expected_session() -> Vec<String> {
    [
        "get \"v\"",
        "incr 7",
        "pipe \"v\" 8",
        "blpop None waited>=0.15s:true",
        "blpop with SO_RCVTIMEO: timeout=true waited>=0.1s:true <2s:true",
        "after: PONG",
        "left 0",
    ]
    .map(String::from)
    .to_vec()
}

/// The same client code on a plain thread, with the feature built in but
/// outside any task: the plain system calls, the same answers, the same
/// timeouts, as inside a task (where it pauses instead).
#[test]
fn a_plain_thread_sees_the_plain_client() {
    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    let on_thread = std::thread::spawn(move || {
        assert!(yieldloop::current_id().is_none(), "outside any task");
        session(addr, "thread")
    })
    .join()
    .unwrap()
    .expect("the session on a plain thread");
    assert_eq!(on_thread, expected_session());

    let in_task = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        let out = session(addr, "task");
        stop.set(true);
        let (count, longest) = ticker.join().unwrap();
        // The session spends ≥ 0.3 s waiting on Redis; the ticker ticks
        // through it.
        assert!(count >= 50, "ticker ticked {count} times");
        assert!(longest < Duration::from_millis(100), "gap {longest:?}");
        out
    })
    .expect("the session in a task");
    assert_eq!(in_task, on_thread);
}

/// The example service with its Redis commands on the sync client
/// (`ServiceConfig::sync_client`): requests from eight client threads at
/// once, each answered in its own task on the one worker, all count.
#[test]
fn the_service_runs_on_the_sync_client() {
    use yieldloop_http::ServeConfig;
    use yieldloop_recipes::service::ServiceConfig;
    use yieldloop_redis::{ConnectOptions, PoolConfig};

    let Some(server) = servers::redis() else {
        return;
    };
    let addr = server.addr();
    let config = ServiceConfig::new(PoolConfig::new(ConnectOptions::new(addr.to_string())))
        .sync_client(redis::Client::open(url(addr)).unwrap())
        .key_prefix("hook-service:");
    let http = ServeConfig::default()
        .signals(false)
        .grace(Duration::from_millis(500))
        .bind("127.0.0.1:0", 1)
        .unwrap();
    let http_addr = http.local_addr();
    let shutdown = http.shutdown_handle();
    let serving = std::thread::spawn(move || {
        http.run_with(move || {
            let service = config.service();
            move |req: &_| service.handle(req)
        })
    });

    const CLIENTS: usize = 8;
    const HITS: usize = 25;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(util::TIMEOUT))
                    .build()
                    .into();
                for _ in 0..HITS {
                    let resp = agent
                        .post(format!("http://{http_addr}/hits/shared"))
                        .send_empty()
                        .expect("POST /hits/shared");
                    assert_eq!(resp.status().as_u16(), 200);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let body = ureq::get(format!("http://{http_addr}/hits/shared"))
        .call()
        .expect("GET /hits/shared")
        .body_mut()
        .read_to_string()
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(value["hits"], (CLIENTS * HITS) as i64, "{body}");
    // What Redis holds, read on a plain thread outside the service.
    let mut direct = connect(addr).unwrap();
    assert_eq!(
        direct.get::<_, i64>("hook-service:hits:shared").unwrap(),
        (CLIENTS * HITS) as i64
    );
    shutdown.trigger();
    serving.join().unwrap().unwrap();
}
