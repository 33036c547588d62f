//! `on_tokio`: futures that need tokio's reactor and timers, run on the
//! shared tokio runtime while only the calling task waits. Tokio timers
//! from tasks that keep their thread free, values and panics coming back,
//! cancellation and `timeout` aborting the tokio side, plain threads, many
//! calls at once, and two tokio-only clients (redis's async client,
//! tokio-postgres's own `connect`) against real servers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::on_tokio;

/// Sets its flag when dropped: tells whether tokio really dropped a future.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Waits, from a task, until `flag` is set or `limit` passes; returns
/// whether it was set.
fn wait_for(flag: &AtomicBool, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while !flag.load(Ordering::SeqCst) {
        if Instant::now() > end {
            return false;
        }
        yieldloop::sleep(Duration::from_millis(2));
    }
    true
}

/// A ticker task: sleeps 1 ms at a time until `stop` is set (at most
/// `max_ticks` times) and returns how many ticks it made and its longest
/// gap between two ticks.
fn ticker(stop: Arc<AtomicBool>, max_ticks: usize) -> yieldloop::JoinHandle<(usize, Duration)> {
    yieldloop::spawn(move || {
        let mut ticks = 0;
        let mut longest = Duration::ZERO;
        let mut last = Instant::now();
        while !stop.load(Ordering::SeqCst) && ticks < max_ticks {
            yieldloop::sleep(Duration::from_millis(1));
            let now = Instant::now();
            longest = longest.max(now - last);
            last = now;
            ticks += 1;
        }
        (ticks, longest)
    })
}

/// A tokio timer awaited from a task pauses only that task: a ticker on
/// the same thread keeps ticking through it.
#[test]
fn tokio_sleep_leaves_the_other_tasks_running() {
    let (elapsed, ticks, longest) = yieldloop::run(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let tick = ticker(stop.clone(), 10_000);
        let start = Instant::now();
        on_tokio(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        let elapsed = start.elapsed();
        stop.store(true, Ordering::SeqCst);
        let (ticks, longest) = tick.join().unwrap();
        (elapsed, ticks, longest)
    });
    assert!(
        elapsed >= Duration::from_millis(200),
        "woke early: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "woke late: {elapsed:?}");
    // 200 ticks if every 1 ms sleep took 1 ms; a frozen thread gives 1.
    assert!(ticks >= 20, "the ticker ticked only {ticks} times");
    assert!(
        longest < Duration::from_millis(150),
        "longest gap {longest:?}"
    );
}

/// The future's value comes back, including one computed by a task the
/// future spawned on tokio.
#[test]
fn the_value_comes_back() {
    let got = yieldloop::run(|| {
        let word = String::from("tokio");
        on_tokio(async move {
            let spawned = tokio::spawn(async move { word.len() });
            format!("{} letters", spawned.await.unwrap())
        })
    });
    assert_eq!(got, "5 letters");
}

/// A panic in the future panics the calling task with the same message.
#[test]
fn a_panic_comes_out_in_the_calling_task() {
    let err = yieldloop::run(|| {
        let t = yieldloop::spawn(|| {
            on_tokio(async {
                tokio::task::yield_now().await;
                let n = 7;
                if n == 7 {
                    panic!("broken at step {n}");
                }
                n
            })
        });
        t.join().unwrap_err()
    });
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("broken at step 7"));
    // The runtime survives it.
    assert_eq!(on_tokio(async { 1 + 1 }), 2);
}

/// Called from a destructor while the task unwinds from a panic, where the
/// task cannot pause: the call still runs the future and returns its
/// output (blocking the thread meanwhile), and the task's own panic is
/// what its join reports.
#[test]
fn from_a_destructor_while_the_task_unwinds() {
    struct CallsOnDrop(Arc<AtomicUsize>);
    impl Drop for CallsOnDrop {
        fn drop(&mut self) {
            let n = on_tokio(async {
                tokio::task::yield_now().await;
                6 * 7
            });
            self.0.store(n, Ordering::SeqCst);
        }
    }
    let got = Arc::new(AtomicUsize::new(0));
    let g = got.clone();
    let err = yieldloop::run(move || {
        yieldloop::spawn(move || {
            let _on_drop = CallsOnDrop(g);
            panic!("the task's own panic");
        })
        .join()
        .unwrap_err()
    });
    assert_eq!(err.panic_message(), Some("the task's own panic"));
    assert_eq!(got.load(Ordering::SeqCst), 42);
}

/// Cancelling the calling task aborts the tokio task: its future is
/// dropped (its drop guard runs) and never finishes.
#[test]
fn cancelling_the_task_aborts_the_tokio_task() {
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (s, d, f) = (started.clone(), dropped.clone(), finished.clone());
    let (cancelled, was_dropped) = yieldloop::run(move || {
        let t = yieldloop::spawn(move || {
            on_tokio(async move {
                let _guard = DropFlag(d);
                s.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                f.store(true, Ordering::SeqCst);
            })
        });
        assert!(wait_for(&started, Duration::from_secs(10)), "never started");
        t.cancel();
        let cancelled = t.join().unwrap_err().is_cancelled();
        (cancelled, wait_for(&dropped, Duration::from_secs(10)))
    });
    assert!(cancelled);
    assert!(was_dropped, "the tokio task still runs");
    assert!(!finished.load(Ordering::SeqCst));
}

/// A `timeout` around the call ends it on time and aborts the tokio task.
#[test]
fn a_timeout_aborts_the_tokio_task() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (d, f) = (dropped.clone(), finished.clone());
    let (timed_out, elapsed, was_dropped) = yieldloop::run(move || {
        let start = Instant::now();
        // Made outside the future and moved in: the flag is set when the
        // future is dropped, also if the abort comes before its first poll
        // (the shared runtime's one worker may be busy with other calls).
        let guard = DropFlag(d);
        let r = yieldloop::timeout(Duration::from_millis(50), || {
            on_tokio(async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(60)).await;
                f.store(true, Ordering::SeqCst);
            })
        });
        let elapsed = start.elapsed();
        (
            r.is_err(),
            elapsed,
            wait_for(&dropped, Duration::from_secs(10)),
        )
    });
    assert!(timed_out);
    assert!(elapsed >= Duration::from_millis(50), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(was_dropped, "the tokio task still runs");
    assert!(!finished.load(Ordering::SeqCst));
}

/// Outside any task, the call blocks the calling thread, from any thread.
#[test]
fn from_plain_threads() {
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            std::thread::spawn(move || {
                on_tokio(async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    i * 10
                })
            })
        })
        .collect();
    let got: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, [0, 10, 20, 30]);
}

/// On a thread driving a tokio runtime, outside a task, the call refuses
/// with tokio's message instead of blocking that thread.
#[test]
fn refused_inside_a_tokio_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = std::thread::spawn(move || rt.block_on(async { on_tokio(async { 1 }) }))
        .join()
        .unwrap_err();
    let msg = (err.downcast_ref::<String>().map(String::as_str))
        .or_else(|| err.downcast_ref::<&str>().copied());
    assert!(
        msg.is_some_and(|m| m.contains("from within a runtime")),
        "{msg:?}"
    );
    // A tokio blocking thread may wait, like any plain thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        tokio::task::spawn_blocking(|| on_tokio(async { 5 }))
            .await
            .unwrap()
    });
    assert_eq!(got, 5);
}

/// Many tasks on two scheduler threads call at once; every value comes
/// back to its own caller, and the calls overlap rather than queue.
#[test]
fn many_concurrent_calls() {
    const TASKS: u64 = 200;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let handles: Vec<_> = (0..2u64)
        .map(|w| {
            let (in_flight, peak) = (in_flight.clone(), peak.clone());
            rt.spawn_on(w as usize, move || {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|i| {
                        let (in_flight, peak) = (in_flight.clone(), peak.clone());
                        yieldloop::spawn(move || {
                            let n = w * TASKS + i;
                            on_tokio(async move {
                                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                                peak.fetch_max(now, Ordering::SeqCst);
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                in_flight.fetch_sub(1, Ordering::SeqCst);
                                n * 2
                            }) == n * 2
                        })
                    })
                    .collect();
                tasks
                    .into_iter()
                    .filter_map(|t| t.join().ok())
                    .filter(|ok| *ok)
                    .count()
            })
        })
        .collect();
    let right: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    rt.shutdown();
    assert_eq!(right, [TASKS as usize, TASKS as usize]);
    // 400 sleeps of 20 ms one after the other would take 8 s.
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(
        peak.load(Ordering::SeqCst) > 10,
        "the calls did not overlap"
    );
}

/// The runtime's settings are fixed once it runs.
#[test]
fn configuring_after_first_use_is_refused() {
    let handle = yieldloop::tokio_handle();
    assert!(handle.metrics().num_workers() >= 1);
    let err = yieldloop::tokio_runtime(|b| {
        b.worker_threads(3);
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    // The handle spawns on the same runtime `on_tokio` uses.
    let bg = handle.spawn(async { 40 });
    assert_eq!(on_tokio(async move { bg.await.unwrap() + 2 }), 42);
}

// ---------------------------------------------------------------------------
// Two tokio-only clients against real servers. Each test skips, with a
// message naming the package to install, where the server is missing.
// ---------------------------------------------------------------------------

mod util;

/// Runs `f` while a ticker task ticks beside it; returns `f`'s value, how
/// long it took, and the ticker's count and longest gap.
fn beside_a_ticker<T>(f: impl FnOnce() -> T) -> (T, Duration, usize, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let tick = ticker(stop.clone(), 10_000);
    let start = Instant::now();
    let v = f();
    let elapsed = start.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (ticks, longest) = tick.join().unwrap();
    (v, elapsed, ticks, longest)
}

/// redis's `ConnectionManager`, configured to fail fast while Redis is
/// down: one retry per reconnect, short delays and timeouts. Its
/// connection is multiplexed, and it reconnects on the first call after a
/// failure.
// ANCHOR: redis_manager_config
fn redis_manager_config() -> redis::aio::ConnectionManagerConfig {
    redis::aio::ConnectionManagerConfig::new()
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500))
        .set_connection_timeout(Some(Duration::from_secs(1)))
        // Longer than the longest blocking command (`BLPOP key 5`) sent.
        .set_response_timeout(Some(Duration::from_secs(6)))
}
// ANCHOR_END: redis_manager_config

/// redis's tokio client (`tokio-comp`, `connection-manager`), connected and
/// used through `on_tokio`: commands from many tasks on one multiplexed
/// connection that heals, a `BLPOP` that pauses only its task, a `BLPOP`
/// woken by a push from another task, and a `timeout` that ends a long
/// `BLPOP` on time.
#[test]
fn redis_async_client_through_on_tokio() {
    use redis::aio::ConnectionManager;
    use redis::AsyncCommands;

    let Some(server) = util::servers::redis() else {
        return;
    };
    // ANCHOR: redis_async
    let client = redis::Client::open(server.url()).unwrap();
    yieldloop::run(move || {
        let connect = move || {
            let client = client.clone();
            on_tokio(ConnectionManager::new_with_config(
                client,
                redis_manager_config(),
            ))
            .expect("connecting to redis-server")
        };
        let shared = connect();

        // Twenty tasks, one connection shared through its clones.
        let tasks: Vec<_> = (0..20i64)
            .map(|i| {
                let mut c = shared.clone();
                yieldloop::spawn(move || {
                    on_tokio(async move {
                        let key = format!("on_tokio:{i}");
                        let () = c.set(&key, i * 3).await?;
                        c.get::<_, i64>(&key).await
                    })
                })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.join().unwrap().unwrap(), i as i64 * 3);
        }
        // ANCHOR_END: redis_async

        // A BLPOP on an empty list waits out its 300 ms; only this task
        // waits.
        let mut c = connect();
        let (popped, elapsed, ticks, longest) = beside_a_ticker(|| {
            on_tokio(async move { c.blpop::<_, Option<(String, String)>>("empty", 0.3).await })
        });
        assert_eq!(popped.unwrap(), None);
        assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
        assert!(ticks >= 20, "the ticker ticked only {ticks} times");
        assert!(
            longest < Duration::from_millis(150),
            "longest gap {longest:?}"
        );

        // A push from another task wakes a waiting BLPOP.
        let mut c = connect();
        let waiter = yieldloop::spawn(move || {
            on_tokio(async move { c.blpop::<_, Option<(String, String)>>("jobs", 5.0).await })
        });
        yieldloop::sleep(Duration::from_millis(50));
        let mut c = shared.clone();
        let pushed: i64 = on_tokio(async move { c.rpush("jobs", "job 1").await }).unwrap();
        assert_eq!(pushed, 1, "the BLPOP was not waiting yet");
        let got = waiter.join().unwrap().unwrap();
        assert_eq!(got, Some(("jobs".to_string(), "job 1".to_string())));

        // A 50 ms timeout ends a 5 s BLPOP after 50 ms.
        let mut c = connect();
        let start = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(50), || {
            on_tokio(async move { c.blpop::<_, Option<(String, String)>>("empty", 5.0).await })
        });
        let elapsed = start.elapsed();
        assert!(r.is_err(), "the BLPOP returned {r:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");

        // A server error comes back as the client's error.
        let mut c = shared.clone();
        let wrong = on_tokio(async move {
            let () = c.set("a string", "x").await?;
            c.lpush::<_, _, i64>("a string", "y").await
        })
        .unwrap_err();
        assert!(wrong.to_string().contains("WRONGTYPE"), "{wrong}");
    });
}

/// redis's `ConnectionManager` through `on_tokio` while redis-server is
/// killed and restarted on the same port under load from ten tasks: the
/// calls during the outage fail fast with an I/O error (the manager's one
/// retry, refused at once), none hangs, and calls succeed again soon after
/// the restart. Every call returns its reply or an error, and each
/// server's replies count up from 1 without a gap.
#[test]
fn redis_connection_manager_heals_through_on_tokio() {
    use redis::aio::ConnectionManager;
    use redis::AsyncCommands;
    use std::cell::Cell;
    use std::rc::Rc;

    let Some(mut server) = util::servers::redis() else {
        return;
    };
    let client = redis::Client::open(server.url()).unwrap();
    yieldloop::run(move || {
        let manager = on_tokio(ConnectionManager::new_with_config(
            client,
            redis_manager_config(),
        ))
        .expect("connecting to redis-server");
        let stop = Rc::new(Cell::new(false));
        // Each task: (when the call ended, how long it took, its result).
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let manager = manager.clone();
                let stop = stop.clone();
                yieldloop::spawn(move || {
                    let mut seen = Vec::new();
                    while !stop.get() {
                        let mut c = manager.clone();
                        let start = Instant::now();
                        let r: redis::RedisResult<i64> =
                            on_tokio(async move { c.incr("heal:n", 1).await });
                        let failed = r.is_err();
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
        server.kill();
        let killed = Instant::now();
        yieldloop::sleep(Duration::from_millis(700));
        server.restart(&[]);
        let restarted = Instant::now();
        yieldloop::sleep(Duration::from_millis(1500));
        stop.set(true);

        let (mut before, mut after, mut failed) = (Vec::new(), Vec::new(), 0);
        let mut first_ok_after = None::<Instant>;
        for task in tasks {
            let seen = yieldloop::timeout(Duration::from_secs(10), || task.join().unwrap())
                .expect("a load task hung");
            for (ended, took, r) in seen {
                assert!(took < Duration::from_secs(2), "a call took {took:?}");
                match r {
                    Ok(n) if ended < restarted => before.push(n),
                    Ok(n) => {
                        after.push(n);
                        first_ok_after = Some(first_ok_after.map_or(ended, |t| t.min(ended)));
                    }
                    Err(e) => {
                        failed += 1;
                        assert!(e.is_io_error() || e.is_timeout(), "{e}");
                        if ended > killed + Duration::from_millis(100) {
                            assert!(
                                took < Duration::from_millis(900),
                                "a failing call took {took:?}: {e}"
                            );
                        }
                    }
                }
            }
        }
        before.sort_unstable();
        after.sort_unstable();
        assert!(
            !before.is_empty() && failed > 0,
            "{} ok, {failed} failed",
            before.len()
        );
        assert_eq!(before, (1..=before.len() as i64).collect::<Vec<_>>());
        assert_eq!(after, (1..=after.len() as i64).collect::<Vec<_>>());
        let first = first_ok_after.expect("no success after the restart") - restarted;
        assert!(
            first < Duration::from_secs(1),
            "first success {first:?} after the restart"
        );
        eprintln!(
            "{} ok before the restart, {failed} failed, {} ok after; first success {first:?} after the restart",
            before.len(),
            after.len()
        );
    });
}

/// tokio-postgres's own `connect` (tokio's TCP, its connection future
/// spawned on tokio) and queries through `on_tokio`: parameters and rows
/// from many tasks on one client, a slow query that pauses only its task,
/// a query error, and a `timeout` that ends a long query on time.
#[test]
fn tokio_postgres_connect_through_on_tokio() {
    let Some(server) = util::servers::postgres() else {
        return;
    };
    let config: tokio_postgres::Config = server.connection_string().parse().unwrap();
    yieldloop::run(move || {
        let connect = move || {
            let config = config.clone();
            let client = on_tokio(async move {
                let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                // The connection drives the socket between calls, on tokio;
                // it ends when the client is dropped.
                tokio::spawn(connection);
                Ok::<_, tokio_postgres::Error>(client)
            });
            Arc::new(client.expect("connecting to PostgreSQL"))
        };
        let client = connect();

        let tasks: Vec<_> = (0..10i32)
            .map(|i| {
                let c = client.clone();
                yieldloop::spawn(move || {
                    on_tokio(async move {
                        let sql = "SELECT $1::INT4 * 2, $2::TEXT";
                        let row = c.query_one(sql, &[&i, &"pg"]).await?;
                        Ok::<_, tokio_postgres::Error>((
                            row.get::<_, i32>(0),
                            row.get::<_, String>(1),
                        ))
                    })
                })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.join().unwrap().unwrap(), (i as i32 * 2, "pg".to_string()));
        }

        // A 300 ms query pauses only this task.
        let c = client.clone();
        let (r, elapsed, ticks, longest) = beside_a_ticker(|| {
            on_tokio(async move { c.execute("SELECT pg_sleep(0.3)", &[]).await })
        });
        assert_eq!(r.unwrap(), 1);
        assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
        assert!(ticks >= 20, "the ticker ticked only {ticks} times");
        assert!(
            longest < Duration::from_millis(150),
            "longest gap {longest:?}"
        );

        // A query error is the client's error, with the server's code.
        let c = client.clone();
        let err =
            on_tokio(async move { c.query("SELECT * FROM no_such_table", &[]).await }).unwrap_err();
        assert_eq!(
            err.code(),
            Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE),
            "{err}"
        );

        // A 50 ms timeout ends a 5 s query after 50 ms (on a client of its
        // own: the server still runs the query, and that connection's next
        // statement would queue behind it).
        let slow = connect();
        let start = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(50), || {
            on_tokio(async move { slow.execute("SELECT pg_sleep(5)", &[]).await })
        });
        let elapsed = start.elapsed();
        assert!(r.is_err(), "the query returned {r:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");

        // The first client still works.
        let c = client.clone();
        let one: i32 = on_tokio(async move { c.query_one("SELECT 1", &[]).await })
            .unwrap()
            .get(0);
        assert_eq!(one, 1);
    });
}

/// A plain HTTP/1.1 server on a thread of its own, answering every request
/// of every connection with `body` (keep-alive), until the process ends.
fn http_server(body: &'static str) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                loop {
                    // The request's head; these GETs have no body.
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    // Each answer waits a little, as a real server's does.
                    std::thread::sleep(Duration::from_millis(50));
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if w.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// `reqwest`, which needs tokio's reactor, through `on_tokio`: 20 tasks
/// each GET a local server that takes 50 ms per answer; the GETs overlap
/// (well under 20 × 50 ms) and a ticker beside them keeps time.
#[test]
fn reqwest_through_on_tokio() {
    let addr = http_server("hello");
    let url = format!("http://{addr}/");
    let client = reqwest::Client::new();
    let (bodies, took, _, gap) = yieldloop::run(move || {
        beside_a_ticker(|| {
            let tasks: Vec<_> = (0..20)
                .map(|_| {
                    let (client, url) = (client.clone(), url.clone());
                    yieldloop::spawn(move || {
                        on_tokio(async move {
                            let r = client.get(url).send().await?;
                            assert_eq!(r.status(), 200);
                            r.text().await
                        })
                    })
                })
                .collect();
            tasks
                .into_iter()
                .map(|t| t.join().unwrap().expect("the GET"))
                .collect::<Vec<String>>()
        })
    });
    assert!(bodies.iter().all(|b| b == "hello"), "{bodies:?}");
    assert!(took < Duration::from_millis(800), "20 GETs took {took:?}");
    assert!(
        gap < Duration::from_millis(100),
        "the ticker stalled for {gap:?}"
    );
}
