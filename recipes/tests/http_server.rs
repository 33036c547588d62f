//! The `http_server` recipe, run as a child process: a real HTTP client
//! (ureq) for the routes, raw sockets for keep-alive, pipelining and bad
//! input.

mod util;

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use util::{read_answer, read_to_close, Server};

/// A ureq agent that hands back every status (no error for 4xx) and gives
/// up after the tests' timeout.
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

/// A raw connection with a buffered reader over a clone of it.
fn raw(addr: SocketAddr) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

/// ureq gets the greeting, a 404, a 405 naming the allowed methods, a 400
/// for a bad sleep, and for HEAD the head of the greeting without its body.
#[test]
fn routes_answer_a_real_client() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let agent = agent();
    assert_eq!(
        get(&agent, server.addr, "/"),
        (200, "Hello from yieldloop!\n".into())
    );
    assert_eq!(get(&agent, server.addr, "/nope").0, 404);
    assert_eq!(get(&agent, server.addr, "/sleep?ms=soon").0, 400);
    assert_eq!(
        get(&agent, server.addr, "/sleep?ms=20"),
        (200, "slept 20 ms\n".into())
    );

    let url = format!("http://{}/", server.addr);
    let resp = agent.post(&url).send("a small body").unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()["allow"], "GET, HEAD");

    let mut resp = agent.head(&url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-length"], "22");
    assert!(resp.headers().contains_key("date"));
    assert_eq!(resp.body_mut().read_to_string().unwrap(), "");
}

/// Keep-alive: requests one after another on one connection are all
/// answered, and the connection stays open.
#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    for i in 0..20 {
        let path = if i % 2 == 0 { "/" } else { "/missing" };
        write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, if i % 2 == 0 { 200 } else { 404 });
        assert_eq!(a.header("connection"), Some("keep-alive"));
    }
}

/// Pipelining: requests sent in one write are answered in order, a
/// request's body is skipped, HEAD gets no body.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /nope HTTP/1.1\r\nHost: t\r\n\r\n\
          POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello\
          GET /sleep?ms=30 HTTP/1.1\r\nHost: t\r\n\r\n\
          HEAD / HTTP/1.1\r\nHost: t\r\n\r\n\
          GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
          GET /sleep?ms=1 HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let expected: [(u16, bool, &[u8]); 7] = [
        (200, false, b"Hello from yieldloop!\n"),
        (404, false, b"404 Not Found\n"),
        (405, false, b"405 Method Not Allowed\n"),
        (200, false, b"slept 30 ms\n"),
        (200, true, b""),
        (200, false, b"Hello from yieldloop!\n"),
        (200, false, b"slept 1 ms\n"),
    ];
    for (status, head_only, body) in expected {
        let a = read_answer(&mut r, head_only);
        assert_eq!((a.status, &a.body[..]), (status, body));
    }
    // Still open: one more.
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 200);
}

/// A request split into many small writes (byte by byte for its head) is
/// put together and answered.
#[test]
fn a_request_in_pieces_is_put_together() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    s.set_nodelay(true).unwrap();
    for b in b"GET /sleep?ms=2 HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\n" {
        s.write_all(&[*b]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(b"bo").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(b"dy").unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, &a.body[..]), (200, &b"slept 2 ms\n"[..]));
}

/// One slow request does not hold up the others, on a single thread:
/// while `/sleep?ms=3000` is pending, ten other requests are answered.
#[test]
fn a_slow_request_does_not_hold_up_the_others() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let addr = server.addr;
    let done = Arc::new(AtomicBool::new(false));
    let slow = {
        let done = done.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let (status, _) = get(&agent(), addr, "/sleep?ms=3000");
            done.store(true, Ordering::SeqCst);
            (status, t0.elapsed())
        })
    };
    // Give the slow request time to arrive first.
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..10 {
        // A fresh agent: a new connection each time.
        assert_eq!(get(&agent(), addr, "/").0, 200);
    }
    assert!(
        !done.load(Ordering::SeqCst),
        "the quick requests waited for the slow one"
    );
    let (status, took) = slow.join().unwrap();
    assert_eq!(status, 200);
    assert!(took >= Duration::from_millis(3000), "slept only {took:?}");
}

/// A malformed request gets 400 and its connection closes; a connection
/// already open is unaffected.
#[test]
fn malformed_request_gets_400_and_closes_only_its_connection() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut other, mut other_r) = raw(server.addr);
    other
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut other_r, false).status, 200);

    for bad in [
        &b"NOT HTTP AT ALL\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: -3\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header Name: x\r\n\r\n",
    ] {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(bad).unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, 400, "for {:?}", String::from_utf8_lossy(bad));
        assert_eq!(a.header("connection"), Some("close"));
        assert!(read_to_close(&mut r).is_empty());
    }

    other
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut other_r, false).status, 200);
}

/// A request head over 8 KiB gets 431 and the connection closes.
#[test]
fn an_oversized_head_gets_431() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    let big = "x".repeat(10_000);
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {big}\r\n\r\n").unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 431);
    assert!(read_to_close(&mut r).is_empty());

    // So do more headers than the server takes.
    let (mut s, mut r) = raw(server.addr);
    let many: String = (0..100).map(|i| format!("X-H{i}: v\r\n")).collect();
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\n{many}\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 431);
}

/// A body over `--max-body` gets 413 and the connection closes, even while
/// the client is still sending it; a chunked body is read like any other
/// (here a 405: the route takes no POST).
#[test]
fn an_oversized_body_gets_413() {
    let server = Server::start("http_server", &["--workers", "1", "--max-body", "1000"]);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    s.write_all(&[b'a'; 20_000]).unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 413);
    assert_eq!(a.header("connection"), Some("close"));
    drop(s);
    assert!(read_to_close(&mut r).is_empty());

    // A body within the limit is read and skipped.
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
        .unwrap();
    s.write_all(&[b'a'; 1000]).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 405);
    assert_eq!(read_answer(&mut r, false).status, 200);

    let (mut s, mut r) = raw(server.addr);
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(read_answer(&mut r, false).status, 405);
}

/// `Connection: close` gets its answer, marked so, then the server closes:
/// requests pipelined after it are not answered.
#[test]
fn connection_close_is_honoured() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n\
          GET / HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    assert_eq!(read_answer(&mut r, false).status, 200);
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 404);
    assert_eq!(a.header("connection"), Some("close"));
    assert!(read_to_close(&mut r).is_empty());
}

/// HTTP/1.0 closes after one answer unless the client asks for keep-alive,
/// which the answer then confirms.
#[test]
fn http_1_0_closes_unless_asked_to_keep_alive() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.header("connection")), (200, Some("close")));
    assert!(read_to_close(&mut r).is_empty());

    let (mut s, mut r) = raw(server.addr);
    for _ in 0..3 {
        s.write_all(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(
            (a.status, a.header("connection")),
            (200, Some("keep-alive"))
        );
    }
}

/// With two workers (two threads, a listener each), requests from many
/// clients at once are all answered.
#[test]
fn two_workers_serve_many_clients() {
    let server = Server::start("http_server", &["--workers", "2"]);
    let addr = server.addr;
    let clients: Vec<_> = (0..6)
        .map(|_| {
            std::thread::spawn(move || {
                let agent = agent();
                for i in 0..20 {
                    let path = if i % 5 == 0 { "/sleep?ms=5" } else { "/" };
                    assert_eq!(get(&agent, addr, path).0, 200);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("a client failed");
    }
}

/// Unknown arguments are refused with status 2 and a usage line.
#[test]
fn bad_arguments_exit_with_status_2() {
    let out = util::run_example("http_server", &["--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"));
}

/// SIGTERM drains: the request under way is answered (marked
/// `Connection: close`), an idle connection is closed, and the server
/// exits with status 0, saying what it did.
#[test]
fn sigterm_drains_and_exits() {
    let mut server = Server::start("http_server", &["--workers", "2", "--grace-ms", "20000"]);
    let (mut idle, mut idle_r) = raw(server.addr);
    idle.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut idle_r, false).status, 200);
    let (mut slow, mut slow_r) = raw(server.addr);
    slow.write_all(b"GET /sleep?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server.signal("TERM");

    assert!(read_to_close(&mut idle_r).is_empty());
    let a = read_answer(&mut slow_r, false);
    assert_eq!((a.status, a.header("connection")), (200, Some("close")));
    assert_eq!(a.body, b"slept 1500 ms\n");
    let status = server.wait_exit(util::TIMEOUT).expect("the server exits");
    assert!(status.success(), "{status}");
    let line = server.wait_for_line("stopped:");
    assert!(
        line.ends_with("2 connection(s), 2 request(s), 0 panic(s), 0 cut"),
        "{line}"
    );
}

/// SIGINT does the same; a request that outlasts the grace period is cut.
#[test]
fn sigint_cuts_what_outlasts_the_grace_period() {
    let mut server = Server::start("http_server", &["--workers", "1", "--grace-ms", "200"]);
    let (mut slow, mut slow_r) = raw(server.addr);
    slow.write_all(b"GET /sleep?ms=60000 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    server.signal("INT");
    assert!(read_to_close(&mut slow_r).is_empty());
    let status = server.wait_exit(util::TIMEOUT).expect("the server exits");
    assert!(status.success(), "{status}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    let line = server.wait_for_line("stopped:");
    assert!(
        line.ends_with("1 connection(s), 0 request(s), 0 panic(s), 1 cut"),
        "{line}"
    );
}

/// With `--metrics`, `GET /metrics` answers with the runtime's counters in
/// the Prometheus text format, one series per worker, and `HEAD /metrics`
/// with the same head; SIGQUIT prints a dump of every task, the request
/// asleep in the handler among them with a backtrace through the handler,
/// and the server goes on.
#[test]
fn metrics_page_and_a_task_dump_on_sigquit() {
    let mut server = Server::start("http_server", &["--workers", "2", "--metrics"]);
    let agent = agent();
    let head = agent
        .head(format!("http://{}/metrics", server.addr))
        .call()
        .expect("the request");
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(
        head.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let mut resp = agent
        .get(format!("http://{}/metrics", server.addr))
        .call()
        .expect("the request");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = resp.body_mut().read_to_string().unwrap();
    for series in [
        "# TYPE yieldloop_resumes_total counter",
        "yieldloop_tasks_alive{scheduler=",
        "yieldloop_hold_seconds_bucket{",
        "yieldloop_blocking_queued ",
    ] {
        assert!(text.contains(series), "{series} missing from:\n{text}");
    }
    let workers = text
        .lines()
        .filter(|l| l.starts_with("yieldloop_polls_total{") && l.contains("yieldloop-worker"))
        .count();
    assert_eq!(workers, 2, "{text}");

    let (mut slow, mut slow_r) = raw(server.addr);
    slow.write_all(b"GET /sleep?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server.signal("QUIT");
    server.wait_for_line("yieldloop task dump:");
    server.wait_for_line("waiting on a timer");
    server.wait_for_line("yieldloop_recipes::demo::http::demo");
    let a = read_answer(&mut slow_r, false);
    assert_eq!(
        (a.status, a.body.as_slice()),
        (200, &b"slept 1500 ms\n"[..])
    );
    assert!(server.is_running());
    server.signal("TERM");
    let status = server.wait_exit(util::TIMEOUT).expect("the server exits");
    assert!(status.success(), "{status}");
}

/// `/metrics` is off unless asked for: without `--metrics` it is the
/// handler's, like any other path (a 404 here).
#[test]
fn metrics_are_off_by_default() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let agent = agent();
    assert_eq!(get(&agent, server.addr, "/metrics").0, 404);
}

/// Under a descriptor limit of 128, 150 connections that send nothing do
/// not run the server out of descriptors: the default cap (from the limit,
/// with headroom) stops the accepts first, so no accept ever fails, the
/// descriptors in use stay below the limit, a connection opened before is
/// still served, and once the crowd leaves a new client is served.
#[test]
fn the_connection_cap_keeps_descriptors_in_hand() {
    let server = Server::start_with("http_server", &["--workers", "1"], Some(128));
    let (mut first, mut first_r) = raw(server.addr);
    first
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut first_r, false).status, 200);

    let crowd: Vec<TcpStream> = (0..150)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(fds < 128, "{fds} descriptors open under a limit of 128");

    first
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut first_r, false).status, 200);

    drop(crowd);
    let (mut late, mut late_r) = raw(server.addr);
    late.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut late_r, false).status, 200);
    let failed: Vec<String> = server
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("accept failed"))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}
