//! `ureq`, a blocking HTTP client on `std::net`, unmodified, from tasks
//! under feature `hook`, against the recipes' HTTP server: concurrent
//! requests that each wait on the server overlap instead of queueing, a
//! 1 ms ticker stays smooth beside them, and ureq's own timeout still
//! fires.

mod hook_util;
mod util;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hook_util::HttpServer;

/// A ureq agent with one time limit for a whole call.
fn agent(limit: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(limit))
        .build()
        .into()
}

/// Twenty tasks each GET `/sleep?ms=200` with their own ureq agent: the
/// server holds each request 0.2 s, and all are answered in well under the
/// 4 s they would take one after another, while a 1 ms ticker on the same
/// thread keeps ticking. A thread frozen in a read would serialise them
/// and stop the ticker.
#[test]
fn concurrent_requests_from_tasks_overlap() {
    const TASKS: usize = 20;
    let server = HttpServer::start();
    let addr = server.addr;
    let (elapsed, ticks, longest) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                hook_util::spawn_client(move || {
                    let mut resp = agent(util::TIMEOUT)
                        .get(format!("http://{addr}/sleep?ms=200"))
                        .call()
                        .expect("the request");
                    assert_eq!(resp.status().as_u16(), 200);
                    resp.body_mut().read_to_string().expect("the body")
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.join().unwrap(), "slept 200 ms\n");
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        (elapsed, ticks, longest)
    });
    // One after another: 20 × 0.2 s = 4 s.
    hook_util::assert_overlapped_beside_ticker(
        "20 requests",
        elapsed,
        Duration::from_millis(1500),
        ticks,
        longest,
    );
}

/// One agent shared by the tasks of a thread (ureq keeps its connection
/// pool behind a lock that no call holds across its I/O): many small
/// requests from many tasks, each answered with its own body.
#[test]
fn a_shared_agent_serves_many_tasks() {
    const TASKS: usize = 16;
    const EACH: usize = 25;
    let server = HttpServer::start();
    let addr = server.addr;
    let agent = agent(util::TIMEOUT);
    let answered = yieldloop::run(move || {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let agent = agent.clone();
                hook_util::spawn_client(move || {
                    let mut n = 0;
                    for i in 0..EACH {
                        // Alternate: an answer at once, and one after a
                        // short pause of the server.
                        let path = if (t + i) % 2 == 0 { "/" } else { "/sleep?ms=2" };
                        let mut resp = agent
                            .get(format!("http://{addr}{path}"))
                            .call()
                            .expect("the request");
                        let body = resp.body_mut().read_to_string().expect("the body");
                        let want = if path == "/" {
                            String::from_utf8(yieldloop_recipes::demo::http::HELLO.to_vec())
                                .unwrap()
                        } else {
                            "slept 2 ms\n".to_string()
                        };
                        assert_eq!(body, want);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        tasks.into_iter().map(|t| t.join().unwrap()).sum::<usize>()
    });
    assert_eq!(answered, TASKS * EACH);
}

/// ureq's own time limit fires inside a task as on a thread: a request the
/// server holds for 2 s fails after ureq's 0.2 s, and the task goes on.
#[test]
fn ureqs_own_timeout_fires_in_a_task() {
    let server = HttpServer::start();
    let addr = server.addr;
    yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        let client = hook_util::spawn_client(move || {
            let start = Instant::now();
            let result = agent(Duration::from_millis(200))
                .get(format!("http://{addr}/sleep?ms=2000"))
                .call();
            let waited = start.elapsed();
            assert!(
                matches!(result, Err(ureq::Error::Timeout(_))),
                "ureq gave {result:?}"
            );
            assert!(
                waited >= Duration::from_millis(190) && waited < Duration::from_millis(1500),
                "the timeout fired after {waited:?}"
            );
            // The task goes on, and so does the client.
            let mut resp = agent(util::TIMEOUT)
                .get(format!("http://{addr}/"))
                .call()
                .expect("the next request");
            assert_eq!(
                resp.body_mut().read_to_string().unwrap(),
                "Hello from yieldloop!\n"
            );
        });
        client.join().unwrap();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        assert!(ticks >= 20, "ticker ticked {ticks} times");
        assert!(longest < Duration::from_millis(100), "gap {longest:?}");
    });
}
