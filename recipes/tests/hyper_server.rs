//! hyper's server on yieldloop, answered by real HTTP clients (ureq, and
//! curl when installed): routes, keep-alive, a slow handler that pauses
//! only its connection, hyper's timer closing a silent connection, a
//! ticker task that keeps ticking through a slow request, and the
//! `hyper_server` example program.

mod util;

use std::cell::Cell;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::net::TcpListener;
use yieldloop_http::hyper::service::service_fn;
use yieldloop_http::with_hyper::{http1_builder, serve, serve_with};
use yieldloop_recipes::demo::hyper::demo;

/// A ureq agent that hands back every status and gives up after the
/// tests' timeout.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(util::TIMEOUT))
        .build()
        .into()
}

/// GET `path` with ureq: (status, body).
fn get(agent: &ureq::Agent, addr: SocketAddr, path: &str) -> (u16, String) {
    let mut resp = agent
        .get(format!("http://{addr}{path}"))
        .call()
        .expect("the request");
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().expect("the body"))
}

/// Runs the demo service with hyper in a run on this thread, and `client`
/// on a thread of the blocking pool; the run (and the server) ends when
/// the client is done.
fn with_server<T: Send + 'static>(client: impl FnOnce(SocketAddr) -> T + Send + 'static) -> T {
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        yieldloop::spawn(move || serve(listener, service_fn(demo)));
        yieldloop::spawn_blocking(move || client(addr))
            .join()
            .expect("the client")
    })
}

/// ureq gets the greeting, a 404, a 400 and a 405, and a slept answer.
#[test]
fn routes_answer_a_real_client() {
    with_server(|addr| {
        let agent = agent();
        assert_eq!(
            get(&agent, addr, "/"),
            (200, "Hello from yieldloop!\n".into())
        );
        assert_eq!(get(&agent, addr, "/nope").0, 404);
        assert_eq!(get(&agent, addr, "/sleep?ms=soon").0, 400);
        assert_eq!(
            get(&agent, addr, "/sleep?ms=20"),
            (200, "slept 20 ms\n".into())
        );
        let resp = agent
            .post(format!("http://{addr}/"))
            .send("x")
            .expect("the request");
        assert_eq!(resp.status().as_u16(), 405);
        assert_eq!(resp.headers().get("allow").unwrap(), "GET, HEAD");
    });
}

/// Several requests in turn on one raw connection, each answered on it.
#[test]
fn keeps_connections_alive() {
    with_server(|addr| {
        let s = StdStream::connect(addr).unwrap();
        s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        for i in 0..5 {
            let path = if i % 2 == 0 { "/" } else { "/sleep?ms=5" };
            write!(w, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let a = util::read_answer(&mut r, false);
            assert_eq!(a.status, 200, "request {i}");
        }
        // Then a close: the server closes its side once it has answered.
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let a = util::read_answer(&mut r, false);
        assert_eq!(a.body, b"Hello from yieldloop!\n");
        assert!(util::read_to_close(&mut r).is_empty());
    });
}

/// curl, when installed: one invocation with two URLs reuses its
/// connection (curl says so with `-v`).
#[test]
fn curl_gets_answers_on_one_connection() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping: curl is not installed (install the curl package)");
        return;
    }
    let out = with_server(|addr| {
        std::process::Command::new("curl")
            .args(["-sv", "--max-time", "30"])
            .arg(format!("http://{addr}/"))
            .arg(format!("http://{addr}/sleep?ms=10"))
            .output()
            .expect("running curl")
    });
    assert!(out.status.success(), "curl failed: {out:?}");
    let body = String::from_utf8_lossy(&out.stdout);
    assert_eq!(body, "Hello from yieldloop!\nslept 10 ms\n");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("Re-using existing connection") || log.contains("Reusing existing"),
        "curl opened a second connection:\n{log}"
    );
}

/// On one scheduler thread, a request that sleeps 600 ms (on hyper's side,
/// a `yieldloop::Sleep`) does not hold up another connection's requests.
#[test]
fn a_slow_handler_pauses_only_its_connection() {
    with_server(|addr| {
        let slow = std::thread::spawn(move || {
            let t = Instant::now();
            let got = get(&agent(), addr, "/sleep?ms=600");
            (got, t.elapsed())
        });
        // Let the slow request get going first.
        std::thread::sleep(Duration::from_millis(50));
        let agent = agent();
        let t = Instant::now();
        for _ in 0..5 {
            assert_eq!(get(&agent, addr, "/").0, 200);
        }
        let quick = t.elapsed();
        let ((status, body), slow_took) = slow.join().unwrap();
        assert_eq!((status, body.as_str()), (200, "slept 600 ms\n"));
        assert!(slow_took >= Duration::from_millis(600), "{slow_took:?}");
        // The five quick ones were done well before the slow one.
        assert!(quick < slow_took, "quick {quick:?}, slow {slow_took:?}");
    });
}

/// A ticker task on the server's own thread keeps ticking while a request
/// sleeps 300 ms in its handler.
#[test]
fn a_ticker_on_the_same_thread_keeps_ticking() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        yieldloop::spawn(move || serve(listener, service_fn(demo)));
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let ticker = yieldloop::spawn(move || {
            // Bounded: 2000 × 5 ms at most.
            for _ in 0..2000 {
                yieldloop::sleep(Duration::from_millis(5));
                t.set(t.get() + 1);
            }
        });
        let before = ticks.get();
        let client = yieldloop::spawn_blocking(move || get(&agent(), addr, "/sleep?ms=300"));
        let (status, body) = client.join().unwrap();
        assert_eq!((status, body.as_str()), (200, "slept 300 ms\n"));
        let during = ticks.get() - before;
        // About 60 ticks of 5 ms in 300 ms; at least a sixth of them.
        assert!(during >= 10, "the ticker ticked {during} times in 300 ms");
        ticker.cancel();
    });
}

/// hyper's header read timeout, on yieldloop's timer: a client that
/// connects and sends nothing is let go after it; one that sends a
/// request in time is answered, and then let go once idle as long.
#[test]
fn hypers_timer_closes_silent_connections() {
    let timeout = Duration::from_millis(200);
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut builder = http1_builder();
        builder.header_read_timeout(timeout);
        yieldloop::spawn(move || serve_with(listener, builder, service_fn(demo)));
        yieldloop::spawn_blocking(move || {
            // Silent.
            let mut s = StdStream::connect(addr).unwrap();
            s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
            let t = Instant::now();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            let took = t.elapsed();
            assert!(took >= timeout, "closed after {took:?}");
            assert!(took < util::TIMEOUT, "never closed");
            // Answered, then idle.
            let s = StdStream::connect(addr).unwrap();
            s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            assert_eq!(util::read_answer(&mut r, false).status, 200);
            let t = Instant::now();
            assert!(util::read_to_close(&mut r).is_empty());
            let took = t.elapsed();
            assert!(
                took >= timeout && took < util::TIMEOUT,
                "closed after {took:?}"
            );
        })
        .join()
        .unwrap();
    });
}

/// The executor hands futures to the scheduler as tasks.
#[test]
fn the_executor_spawns_tasks() {
    use yieldloop_http::hyper::rt::Executor;
    let n = yieldloop::run(|| {
        let hits = Arc::new(std::sync::atomic::AtomicU32::new(0));
        for _ in 0..3 {
            let hits = hits.clone();
            yieldloop_http::with_hyper::YieldloopExecutor.execute(async move {
                yieldloop::sleep_future(Duration::from_millis(5)).await;
                hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let give_up = Instant::now() + util::TIMEOUT;
        while hits.load(std::sync::atomic::Ordering::SeqCst) < 3 && Instant::now() < give_up {
            yieldloop::sleep(Duration::from_millis(5));
        }
        hits.load(std::sync::atomic::Ordering::SeqCst)
    });
    assert_eq!(n, 3);
}

/// The example program, on two workers, answers ureq.
#[test]
fn the_example_serves_on_workers() {
    let server = util::Server::start("hyper_server", &["--workers", "2"]);
    let agent = agent();
    for _ in 0..4 {
        assert_eq!(
            get(&agent, server.addr, "/"),
            (200, "Hello from yieldloop!\n".into())
        );
    }
    assert_eq!(get(&agent, server.addr, "/sleep?ms=10").0, 200);
}
