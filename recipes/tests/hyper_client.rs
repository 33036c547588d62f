//! hyper's client on yieldloop, from tasks: against the recipes' own
//! httparse server and against hyper's server on yieldloop, one request
//! per connection and several on one kept-alive connection, a ticker task
//! on the client's thread that keeps ticking through a slow answer, and
//! the errors of a bad URL and a refused connection.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::TcpListener;
use yieldloop_http::hyper::service::service_fn;
use yieldloop_http::hyper::Request;
use yieldloop_http::with_hyper::{self as yl_hyper, Client, Error};
use yieldloop_http::{ServeConfig, Shutdown};
use yieldloop_recipes::demo::http::demo;

/// The recipes' httparse server with the demo routes on one worker, on a
/// thread of its own; stopped (and joined) on drop.
struct HttparseServer {
    addr: SocketAddr,
    stop: Shutdown,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttparseServer {
    fn start() -> HttparseServer {
        let server = ServeConfig::default()
            .signals(false)
            .bind("127.0.0.1:0", 1)
            .expect("binding");
        let (addr, stop) = (server.local_addr(), server.shutdown_handle());
        let thread = std::thread::spawn(move || {
            server.run(demo).expect("serving");
        });
        HttparseServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for HttparseServer {
    fn drop(&mut self) {
        self.stop.trigger();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `get`, `request` and a kept-alive `Client` against the httparse server.
#[test]
fn against_the_httparse_server() {
    let server = HttparseServer::start();
    let addr = server.addr;
    yieldloop::run(move || {
        let resp = yl_hyper::get(&format!("http://{addr}/")).unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.body().as_ref(), b"Hello from yieldloop!\n");
        let resp = yl_hyper::get(&format!("http://{addr}/nope")).unwrap();
        assert_eq!(resp.status(), 404);
        let req = Request::post(format!("http://{addr}/")).body("x").unwrap();
        let resp = yl_hyper::request(req).unwrap();
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.headers()["allow"], "GET, HEAD");

        let mut client = Client::connect(&format!("http://{addr}")).unwrap();
        for i in 0..10 {
            let path = if i % 2 == 0 { "/" } else { "/sleep?ms=2" };
            let resp = client.get(path).unwrap();
            assert_eq!(resp.status(), 200, "request {i}");
        }
        assert_eq!(
            client.get("/sleep?ms=3").unwrap().body().as_ref(),
            b"slept 3 ms\n"
        );
    });
    drop(server);
}

/// The client and hyper's server on one scheduler thread: the server's
/// connection task and the client's connection task interleave.
#[test]
fn against_hypers_server_on_the_same_thread() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        yieldloop::spawn(move || {
            yl_hyper::serve(listener, service_fn(yieldloop_recipes::demo::hyper::demo))
        });
        let mut client = Client::connect(&format!("http://{addr}/")).unwrap();
        for _ in 0..20 {
            let resp = client.get("/").unwrap();
            assert_eq!(resp.body().as_ref(), b"Hello from yieldloop!\n");
        }
        // Several clients at once, each in its own task.
        let tasks: Vec<_> = (0..8u64)
            .map(|i| {
                yieldloop::spawn(move || {
                    let url = format!("http://{addr}/sleep?ms={}", 10 + i);
                    let resp = yl_hyper::get(&url).unwrap();
                    String::from_utf8(resp.body().to_vec()).unwrap()
                })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.join().unwrap(), format!("slept {} ms\n", 10 + i));
        }
    });
}

/// While a task waits 300 ms for an answer, a ticker task on the same
/// thread keeps ticking.
#[test]
fn a_ticker_keeps_ticking_while_a_request_waits() {
    let server = HttparseServer::start();
    let addr = server.addr;
    yieldloop::run(move || {
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
        let start = Instant::now();
        let resp = yl_hyper::get(&format!("http://{addr}/sleep?ms=300")).unwrap();
        let took = start.elapsed();
        assert_eq!(resp.body().as_ref(), b"slept 300 ms\n");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        let during = ticks.get() - before;
        // About 60 ticks of 5 ms; at least a sixth of them.
        assert!(during >= 10, "the ticker ticked {during} times in {took:?}");
        ticker.cancel();
    });
    drop(server);
}

/// A URL that is not http:// and a refused connection are errors, not
/// panics, and the task goes on.
#[test]
fn bad_urls_and_refused_connections_are_errors() {
    // A port nobody listens on: bound, then closed.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    yieldloop::run(move || {
        assert!(matches!(
            yl_hyper::get("https://example.com/"),
            Err(Error::Url(_))
        ));
        assert!(matches!(yl_hyper::get("not a url"), Err(Error::Url(_))));
        match yl_hyper::get(&format!("http://{addr}/")) {
            Err(Error::Connect(e)) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused),
            other => panic!("expected a refused connection, got {other:?}"),
        }
    });
}

/// A server that goes away mid-answer: the request fails with hyper's
/// error, and the client's thread goes on.
#[test]
fn a_server_gone_mid_answer_is_an_error() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf);
        // Promises 100 bytes, sends 5, hangs up.
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello");
    });
    yieldloop::run(move || {
        match yl_hyper::get(&format!("http://{addr}/")) {
            Err(Error::Http(_)) => {}
            other => panic!("expected hyper's error, got {other:?}"),
        }
        assert_eq!(yieldloop::spawn(|| 1).join().unwrap(), 1);
    });
    server.join().unwrap();
}
