//! `yieldloop_http::serve` in this process: handlers reached by a
//! real HTTP client (ureq) and by raw sockets for what no client sends
//! willingly; limits, timeouts, panics and the drain, stopped through a
//! `Shutdown` handle. (The drain on a real signal is tested on the
//! `http_server` example, in a process of its own, in `http_server.rs`.)

mod util;

use std::cell::Cell;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use util::{read_answer, read_to_close, TIMEOUT};
use yieldloop_http::{Request, Response, ServeConfig, Shutdown, Summary};
use yieldloop_recipes::demo::http::demo;

/// A server running on a thread of the test; drained when dropped.
struct Running {
    addr: SocketAddr,
    stop: Shutdown,
    done: mpsc::Receiver<std::io::Result<Summary>>,
}

impl Running {
    /// Serves `handler` with `config` (signals off: the test process is
    /// shared) on one worker.
    fn start<H>(config: ServeConfig, handler: H) -> Running
    where
        H: Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
    {
        let server = config.signals(false).bind("127.0.0.1:0", 1).unwrap();
        let (addr, stop) = (server.local_addr(), server.shutdown_handle());
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(server.run(handler));
        });
        Running { addr, stop, done }
    }

    /// Starts the drain and waits (bounded) for `run` to return.
    fn drain(&self) -> Summary {
        self.stop.trigger();
        self.wait()
    }

    /// Waits (bounded) for `run` to return.
    fn wait(&self) -> Summary {
        self.done
            .recv_timeout(TIMEOUT)
            .expect("the server returns after a drain")
            .expect("the server ran without error")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.trigger();
    }
}

/// A ureq agent that hands back every status and gives up after TIMEOUT.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .build()
        .into()
}

/// A raw connection with a buffered reader over a clone of it.
fn raw(addr: SocketAddr) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

/// A handler that describes the request it got.
fn describe(req: &Request<'_>) -> Response {
    let text = format!(
        "{} {} q={} x={} len={} body={} v=1.{}",
        req.method(),
        req.path(),
        req.query(),
        req.header("x-test").unwrap_or("-"),
        req.query_param("n").unwrap_or("-"),
        String::from_utf8_lossy(req.body()),
        req.version(),
    );
    Response::text(200, text).header("X-Port", req.peer().unwrap().port().to_string())
}

/// The handler gets method, path, query, headers and body, from a real
/// client; its status, headers and body come back.
#[test]
fn a_handler_sees_the_whole_request() {
    let server = Running::start(ServeConfig::default(), describe);
    let agent = agent();
    let url = format!("http://{}/items/7?n=3&x", server.addr);
    let mut resp = agent.get(&url).header("X-Test", "yes").call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.body_mut().read_to_string().unwrap(),
        "GET /items/7 q=n=3&x x=yes len=3 body= v=1.1"
    );

    let mut resp = agent
        .post(format!("http://{}/up", server.addr))
        .send("a small body")
        .unwrap();
    assert_eq!(
        resp.body_mut().read_to_string().unwrap(),
        "POST /up q= x=- len=- body=a small body v=1.1"
    );
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    let summary = server.drain();
    assert_eq!(summary.requests, 2);
}

/// Keep-alive: one client's requests all come over one connection (the
/// handler sees the same client port), raw and with ureq's pool.
#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = Running::start(ServeConfig::default(), describe);
    let agent = agent();
    let ports: Vec<String> = (0..5)
        .map(|_| {
            let mut resp = agent
                .get(format!("http://{}/", server.addr))
                .call()
                .unwrap();
            // Read to the end: only then does the connection go back to the pool.
            let _ = resp.body_mut().read_to_string().unwrap();
            resp.headers()["x-port"].to_str().unwrap().to_string()
        })
        .collect();
    assert!(ports.iter().all(|p| *p == ports[0]), "ports {ports:?}");

    let (mut s, mut r) = raw(server.addr);
    for i in 0..10 {
        write!(s, "GET /{i} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, 200);
        assert_eq!(a.header("connection"), Some("keep-alive"));
        assert!(String::from_utf8_lossy(&a.body).starts_with(&format!("GET /{i} ")));
    }
    drop(s);
    let summary = server.drain();
    assert_eq!(summary.requests, 15);
    assert_eq!(summary.connections, 2);
}

/// HTTP/1.0 and `Connection: close` get one answer, marked so, then the
/// connection closes.
#[test]
fn http_1_0_and_connection_close_end_the_connection() {
    let server = Running::start(ServeConfig::default(), describe);
    for request in [
        &b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n"[..],
        b"GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(request).unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!((a.status, a.header("connection")), (200, Some("close")));
        assert!(String::from_utf8_lossy(&a.body).starts_with("GET /a "));
        assert!(read_to_close(&mut r).is_empty(), "no answer to /b");
    }
}

/// A head over `max_head`, or with more than `max_headers` headers, gets
/// 431; the handler never sees it.
#[test]
fn an_oversized_head_gets_431() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let config = ServeConfig::default().max_head(1024).max_headers(8);
    let server = Running::start(config, move |req: &Request<'_>| {
        c.fetch_add(1, Ordering::SeqCst);
        describe(req)
    });
    let (mut s, mut r) = raw(server.addr);
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "x".repeat(2000)
    )
    .unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.header("connection")), (431, Some("close")));
    assert!(read_to_close(&mut r).is_empty());

    let (mut s, mut r) = raw(server.addr);
    let many: String = (0..9).map(|i| format!("X-H{i}: v\r\n")).collect();
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\n{many}\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 431);

    // Just within both limits: served.
    let (mut s, mut r) = raw(server.addr);
    let seven: String = (0..7).map(|i| format!("X-H{i}: v\r\n")).collect();
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\n{seven}\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 200);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A body over `max_body` gets 413 while the client is still sending it; a
/// body within it, sent slowly and after `100 Continue`, reaches the
/// handler whole; so does a chunked one, decoded.
#[test]
fn bodies_over_the_limit_get_413_and_chunked_ones_are_decoded() {
    let config = ServeConfig::default().max_body(10_000);
    let server = Running::start(config, |req: &Request<'_>| {
        let sum: u64 = req.body().iter().map(|&b| u64::from(b)).sum();
        Response::text(200, format!("{} {sum}", req.body().len()))
    });
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    let _ = s.write_all(&[b'a'; 20_000]);
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.header("connection")), (413, Some("close")));
    drop(s);
    assert!(read_to_close(&mut r).is_empty());

    // 10,000 bytes (the limit) after `Expect: 100-continue`, in pieces.
    let (mut s, mut r) = raw(server.addr);
    s.set_nodelay(true).unwrap();
    s.write_all(
        b"PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 10000\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut cont = [0u8; 25];
    r.read_exact(&mut cont).unwrap();
    assert_eq!(&cont, b"HTTP/1.1 100 Continue\r\n\r\n");
    for _ in 0..10 {
        s.write_all(&[3u8; 1000]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, &a.body[..]), (200, &b"10000 30000"[..]));
    // The connection goes on, and its buffer is back to head size.
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).body, b"0 0");

    let (mut s, mut r) = raw(server.addr);
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    )
    .unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, &a.body[..]), (200, &b"5 532"[..]));
    assert_eq!(a.header("connection"), Some("keep-alive"));
}

/// Malformed requests get 400 and close their connection only.
#[test]
fn malformed_requests_get_400() {
    let server = Running::start(ServeConfig::default(), describe);
    let (mut other, mut other_r) = raw(server.addr);
    other
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut other_r, false).status, 200);
    for bad in [
        &b"NOT HTTP AT ALL\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n",
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

/// A handler that panics gets its request a 500 and its connection
/// closed; another connection, open all along, is served before and after,
/// and so are new ones.
#[test]
fn a_panicking_handler_gets_500_and_the_server_goes_on() {
    let server = Running::start(ServeConfig::default(), |req: &Request<'_>| {
        if req.path() == "/panic" {
            panic!("the handler gave up");
        }
        describe(req)
    });
    let (mut other, mut other_r) = raw(server.addr);
    other
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut other_r, false).status, 200);

    for _ in 0..3 {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!((a.status, a.header("connection")), (500, Some("close")));
        assert!(read_to_close(&mut r).is_empty());
    }

    other
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut other_r, false).status, 200);
    let mut resp = agent()
        .get(format!("http://{}/", server.addr))
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let _ = resp.body_mut().read_to_string();
    drop(other);
    let summary = server.drain();
    assert_eq!((summary.panics, summary.requests), (3, 6));
}

/// An answer the server cannot send as it is (a header with a line break)
/// becomes a 500; `Connection: close` from the handler closes; HEAD gets
/// the head only; a 204 no body.
#[test]
fn answers_are_framed_by_the_server() {
    let server = Running::start(ServeConfig::default(), |req: &Request<'_>| {
        match req.path() {
            "/split" => Response::text(200, "x").header("X-Evil", "a\r\nSet-Cookie: b"),
            "/bye" => Response::text(200, "bye").header("Connection", "close"),
            "/none" => Response::new(204),
            _ => Response::text(200, "hello")
                .header("Content-Type", "application/json")
                .header("Content-Length", "999"),
        }
    });
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let a = read_answer(&mut r, true);
    assert_eq!((a.status, a.header("content-length")), (200, Some("5")));
    let a = read_answer(&mut r, false);
    assert_eq!(a.body, b"hello");
    assert_eq!(a.header("content-type"), Some("application/json"));

    s.write_all(b"GET /none HTTP/1.1\r\nHost: t\r\n\r\nGET /split HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut r, &mut line).unwrap();
    assert_eq!(line, "HTTP/1.1 204 No Content\r\n");
    loop {
        line.clear();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        assert!(!line.to_ascii_lowercase().starts_with("content-length"));
        if line == "\r\n" {
            break;
        }
    }
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 500);
    assert!(a.header("x-evil").is_none() && a.header("set-cookie").is_none());
    assert!(read_to_close(&mut r).is_empty());

    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET /bye HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.header("connection")), (200, Some("close")));
    assert!(read_to_close(&mut r).is_empty());
}

/// A connection silent between requests for the idle timeout is closed;
/// one that stops in the middle of a request head gets 408 after the
/// header timeout.
#[test]
fn idle_and_read_timeouts_close_the_connection() {
    let config = ServeConfig::default()
        .idle_timeout(Some(Duration::from_millis(300)))
        .header_timeout(Some(Duration::from_millis(300)));
    let server = Running::start(config, describe);

    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut r, false).status, 200);
    let t0 = Instant::now();
    assert!(read_to_close(&mut r).is_empty());
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(10),
        "closed after {took:?}"
    );

    // A byte every 100 ms keeps no request alive past the read timeout.
    let (mut s, mut r) = raw(server.addr);
    let t0 = Instant::now();
    for b in b"GET / HTTP/1.1\r\nHo" {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if t0.elapsed() > Duration::from_millis(600) {
            break;
        }
    }
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.header("connection")), (408, Some("close")));
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(250), "408 after {took:?}");
}

/// The drain: a request under way finishes (answered with
/// `Connection: close`), an idle keep-alive connection is closed at once,
/// new connections are refused, and `run` returns.
#[test]
fn a_drain_lets_a_request_under_way_finish() {
    let server = Running::start(ServeConfig::default().grace(Duration::from_secs(20)), demo);
    let addr = server.addr;
    let (mut idle, mut idle_r) = raw(addr);
    idle.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_answer(&mut idle_r, false).status, 200);

    let (mut slow, mut slow_r) = raw(addr);
    slow.write_all(b"GET /sleep?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    server.stop.trigger();

    // The idle connection ends well before the slow request.
    assert!(read_to_close(&mut idle_r).is_empty());
    assert!(
        t0.elapsed() < Duration::from_millis(1000),
        "{:?}",
        t0.elapsed()
    );
    // No new connections (within a bounded wait for the listener to go).
    let refused = (0..100).any(|_| {
        let refused = TcpStream::connect(addr).is_err();
        if !refused {
            std::thread::sleep(Duration::from_millis(20));
        }
        refused
    });
    assert!(refused, "the listener is still open");

    let a = read_answer(&mut slow_r, false);
    assert_eq!((a.status, a.header("connection")), (200, Some("close")));
    assert_eq!(a.body, b"slept 1500 ms\n");
    let summary = server.wait();
    assert_eq!((summary.requests, summary.cut), (2, 0));
}

/// The drain cancels what is still running when the grace period ends:
/// the client sees the connection close without an answer.
#[test]
fn a_drain_cuts_what_outlasts_the_grace_period() {
    let server = Running::start(
        ServeConfig::default().grace(Duration::from_millis(200)),
        demo,
    );
    let (mut slow, mut slow_r) = raw(server.addr);
    slow.write_all(b"GET /sleep?ms=30000 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let summary = server.drain();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!((summary.cut, summary.requests), (1, 0));
    assert!(read_to_close(&mut slow_r).is_empty());
}

/// `serve_with` makes one handler per worker, on its thread: the handler
/// may hold an `Rc`, and each worker counts on its own.
#[test]
fn serve_with_makes_a_handler_per_worker() {
    let made = Arc::new(AtomicUsize::new(0));
    let m = made.clone();
    let server = ServeConfig::default()
        .signals(false)
        .bind("127.0.0.1:0", 2)
        .unwrap();
    let (addr, stop) = (server.local_addr(), server.shutdown_handle());
    let t = std::thread::spawn(move || {
        server.run_with(move || {
            m.fetch_add(1, Ordering::SeqCst);
            let hits = Rc::new(Cell::new(0u32));
            move |_req: &Request<'_>| {
                hits.set(hits.get() + 1);
                Response::text(200, hits.get().to_string())
            }
        })
    });
    let mut total = 0;
    for _ in 0..8 {
        // A new connection each time, spread over the workers by the kernel.
        let (mut s, mut r) = raw(addr);
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let a = read_answer(&mut r, false);
        total += 1;
        let n: u32 = String::from_utf8(a.body).unwrap().parse().unwrap();
        assert!((1..=total).contains(&n));
    }
    stop.trigger();
    let deadline = Instant::now() + TIMEOUT;
    while !t.is_finished() {
        assert!(Instant::now() < deadline, "run_with did not return");
        std::thread::sleep(Duration::from_millis(10));
    }
    let summary = t.join().unwrap().unwrap();
    assert_eq!(made.load(Ordering::SeqCst), 2);
    assert_eq!(summary.requests, 8);
}

/// A factory that panics on one worker makes `run_with` return that
/// failure, after stopping the worker that started fine (rather than
/// serving on with half its workers, or waiting forever).
#[test]
fn a_failing_worker_stops_the_server() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = ServeConfig::default()
        .signals(false)
        .bind("127.0.0.1:0", 2)
        .unwrap();
    let t = std::thread::spawn(move || {
        server.run_with(move || {
            if c.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("no database today");
            }
            describe
        })
    });
    let deadline = Instant::now() + TIMEOUT;
    while !t.is_finished() {
        assert!(Instant::now() < deadline, "run_with did not return");
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = t.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("no database today"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
