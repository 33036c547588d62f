//! The attacks of issue 38, each against a real server on `127.0.0.1:0`:
//! what a client on the internet may send, and what it must not be able to
//! make the server hold. See the crate docs' "Facing the internet".

mod util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use util::{raw, read_answer, read_to_close, resident, Running, TIMEOUT};
use yieldloop_http::{Request, Response, ServeConfig};

/// Tests that measure this process's memory, or take a lot of it, run one
/// at a time.
static MEMORY: Mutex<()> = Mutex::new(());

/// A handler that describes the request it got.
fn describe(req: &Request<'_>) -> Response {
    Response::text(
        200,
        format!(
            "{} {} q={} host={} v=1.{} body={}",
            req.method(),
            req.path(),
            req.query(),
            req.host(),
            req.version(),
            String::from_utf8_lossy(req.body()),
        ),
    )
}

/// Finding 1: a declared `Content-Length` is not allocated ahead of the
/// body. 200 connections each declare 1 MiB (the body limit) and send one
/// byte: the process grows by far less than the 200 MiB they declare.
#[test]
fn a_declared_length_is_not_allocated() {
    let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let server = Running::start(ServeConfig::default(), describe);
    let before = resident();
    let conns: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\nx")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    let grown = resident().saturating_sub(before);
    assert!(
        grown < 40 << 20,
        "resident memory grew by {} MiB for 200 connections",
        grown >> 20
    );
    drop(conns);
}

/// Finding 3: a client that pipelines requests and never reads their
/// answers is held back by its own socket: the server stops reading its
/// requests once `max_unwritten` bytes of answers wait, instead of
/// answering every request it has read into memory.
#[test]
fn pipelining_without_reading_is_held_back() {
    static BIG: [u8; 256 * 1024] = [b'x'; 256 * 1024];
    let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = Running::start(ServeConfig::default(), move |_req: &Request<'_>| {
        c.fetch_add(1, Ordering::SeqCst);
        Response::new(200).body(&BIG[..])
    });
    let mut s = TcpStream::connect(server.addr).unwrap();
    let many = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n".repeat(300);
    s.write_all(&many).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let n = calls.load(Ordering::SeqCst);
    // What the kernel's socket buffers take, at 256 KiB an answer, and no
    // more: not the ~290 requests one read brings in.
    assert!(n < 100, "{n} answers made for a client that reads none");
    drop(s);
}

/// Bodies of 4 KiB and more are written from the handler's bytes, beside
/// the answers waiting before them, not copied: pipelined answers of
/// every size, `'static` and owned, come back whole and in order, through
/// the partial writes of a socket whose reader is slow to start.
#[test]
fn large_bodies_are_written_in_place_in_order() {
    static PAGE: [u8; 5000] = {
        let mut page = [0u8; 5000];
        let mut i = 0;
        while i < page.len() {
            page[i] = b'a' + (i % 26) as u8;
            i += 1;
        }
        page
    };
    let owned = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
    let server = Running::start(ServeConfig::default(), move |req: &Request<'_>| {
        match req.path() {
            "/page" => Response::new(200).body(&PAGE[..]),
            "/owned" => Response::new(200).body(owned(300_000)),
            "/exact" => Response::new(200).body(owned(4096)),
            _ => Response::text(200, "small"),
        }
    });
    let (mut s, mut r) = raw(server.addr);
    let paths = [
        "/", "/page", "/owned", "/", "/exact", "/page", "/", "/owned", "/",
    ];
    let mut requests = Vec::new();
    for p in paths {
        requests.extend_from_slice(format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    s.write_all(&requests).unwrap();
    // Let the server fill the socket before anything is read.
    std::thread::sleep(Duration::from_millis(200));
    for p in paths {
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, 200, "{p}");
        let want: Vec<u8> = match p {
            "/page" => PAGE.to_vec(),
            "/owned" => owned(300_000),
            "/exact" => owned(4096),
            _ => b"small".to_vec(),
        };
        assert!(
            a.body == want,
            "{p}: a body of {} bytes differs",
            a.body.len()
        );
    }
}

/// Finding 3, the slow reader: one deadline covers writing a whole answer,
/// so a client that takes a little now and then cannot hold the server's
/// buffer for longer than `write_timeout`.
#[test]
fn a_slow_reader_is_cut_at_the_write_deadline() {
    let _one = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    const SIZE: usize = 32 << 20;
    let config = ServeConfig::default().write_timeout(Some(Duration::from_secs(1)));
    let server = Running::start(config, |_req: &Request<'_>| {
        Response::new(200).body(vec![b'y'; SIZE])
    });
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let t0 = Instant::now();
    let mut got = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    while t0.elapsed() < TIMEOUT {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(got < SIZE, "the whole answer went out to a slow reader");
    assert!(t0.elapsed() < TIMEOUT, "{:?}", t0.elapsed());
}

/// Finding 5: chunked request bodies (RFC 9112 §7.1) are decoded, in
/// pieces, with extensions and trailers, and the connection goes on; one
/// over `max_body` gets 413, a malformed one 400, and nothing after either
/// is answered.
#[test]
fn chunked_uploads_are_decoded() {
    let server = Running::start(ServeConfig::default().max_body(100), describe);
    let (mut s, mut r) = raw(server.addr);
    s.set_nodelay(true).unwrap();
    s.write_all(b"PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    for piece in [
        &b"5;name=\"v\"\r\nhel"[..],
        b"lo\r\n",
        b"1\r\n \r\n",
        b"5\r\nworld\r\n0\r\n",
        b"X-Sum: 1\r\n\r\n",
    ] {
        std::thread::sleep(Duration::from_millis(20));
        s.write_all(piece).unwrap();
    }
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 200);
    assert!(a.body.ends_with(b"body=hello world"), "{:?}", a.body);
    s.write_all(b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(read_answer(&mut r, false).body.starts_with(b"GET /next"));

    for (bad, status) in [
        (&b"65\r\n"[..], 413),
        (b"5\r\nhelloXY", 400),
        (b"zz\r\n", 400),
        (b"5\nhello\r\n0\r\n\r\n", 400),
    ] {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        s.write_all(bad).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        let a = read_answer(&mut r, false);
        assert_eq!((a.status, a.header("connection")), (status, Some("close")));
        assert!(read_to_close(&mut r).is_empty(), "an answer after {status}");
    }
}

/// Finding 5: two `Host` headers, or an invalid one, get 400 (RFC 9112
/// §3.2); a valid one reaches the handler as `host()`.
#[test]
fn host_headers_are_checked() {
    let server = Running::start(ServeConfig::default(), describe);
    for bad in [
        &b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n",
        b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
    ] {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(bad).unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, 400, "for {:?}", String::from_utf8_lossy(bad));
        assert!(read_to_close(&mut r).is_empty());
    }
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n")
        .unwrap();
    let a = read_answer(&mut r, false);
    assert!(String::from_utf8_lossy(&a.body).contains("host=[::1]:8080"));
}

/// Finding 5: an absolute-form target gives the handler its path and
/// query, and its authority as the host (before the `Host` header).
#[test]
fn absolute_form_targets_give_the_path() {
    let server = Running::start(ServeConfig::default(), describe);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n")
        .unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!(
        String::from_utf8_lossy(&a.body),
        "GET /a/b q=c=d host=example.com:8080 v=1.1 body="
    );
    s.write_all(b"OPTIONS HTTP://x HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let a = read_answer(&mut r, false);
    assert!(a.body.starts_with(b"OPTIONS / q= host=x "), "{:?}", a.body);
}

/// Finding 5: `HTTP/1.2` is served as 1.1; `HTTP/2.0` and other major
/// versions get 505; what is no version gets 400.
#[test]
fn versions_1_x_are_served_and_others_get_505() {
    let server = Running::start(ServeConfig::default(), describe);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET /v HTTP/1.2\r\nHost: t\r\n\r\n").unwrap();
    let a = read_answer(&mut r, false);
    assert_eq!(a.line, "HTTP/1.1 200 OK");
    assert!(a.body.ends_with(b"v=1.1 body="), "{:?}", a.body);
    assert_eq!(a.header("connection"), Some("keep-alive"));

    for (request, status) in [
        (&b"GET / HTTP/2.0\r\nHost: t\r\n\r\n"[..], 505),
        (b"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTP/0.9\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTX/1.1\r\nHost: t\r\n\r\n", 400),
    ] {
        let (mut s, mut r) = raw(server.addr);
        s.write_all(request).unwrap();
        let a = read_answer(&mut r, false);
        assert_eq!(a.status, status, "{:?}", String::from_utf8_lossy(request));
        assert!(read_to_close(&mut r).is_empty());
    }
}

/// Finding 5: a request line longer than the head limit gets 414; a head
/// made long by its headers still 431.
#[test]
fn a_long_request_line_gets_414() {
    let server = Running::start(ServeConfig::default(), describe);
    let (mut s, mut r) = raw(server.addr);
    let long = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(100_000));
    let _ = s.write_all(long.as_bytes());
    let a = read_answer(&mut r, false);
    assert_eq!(
        (a.status, a.line.as_str()),
        (414, "HTTP/1.1 414 URI Too Long")
    );

    let (mut s, mut r) = raw(server.addr);
    let big = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n",
        "a".repeat(10_000)
    );
    let _ = s.write_all(big.as_bytes());
    assert_eq!(read_answer(&mut r, false).status, 431);
}

/// Finding 3: `/metrics` is off by default (the path is the handler's);
/// turned on, `HEAD` gets the head `GET` gets.
#[test]
fn metrics_are_opt_in_and_head_is_like_get() {
    let server = Running::start(ServeConfig::default(), describe);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(read_answer(&mut r, false).body.starts_with(b"GET /metrics"));

    let on = ServeConfig::default().metrics_path(Some("/metrics"));
    let server = Running::start(on, describe);
    let (mut s, mut r) = raw(server.addr);
    s.write_all(
        b"HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /metrics HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let head = read_answer(&mut r, true);
    let get = read_answer(&mut r, false);
    assert_eq!((head.status, get.status), (200, 200));
    assert_eq!(head.header("content-type"), get.header("content-type"));
    assert!(String::from_utf8_lossy(&get.body).contains("yieldloop_resumes_total"));
}

/// Finding 2: past `max_connections` the server accepts no more until one
/// closes, and serves the connections it has meanwhile.
#[test]
fn the_connection_cap_holds_new_clients_back() {
    let server = Running::start(ServeConfig::default().max_connections(2), describe);
    let (mut a, mut a_r) = raw(server.addr);
    let (mut b, mut b_r) = raw(server.addr);
    for (s, r) in [(&mut a, &mut a_r), (&mut b, &mut b_r)] {
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        assert_eq!(read_answer(r, false).status, 200);
    }
    let (mut c, c_r) = raw(server.addr);
    c.write_all(b"GET /c HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    c_r.get_ref()
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut c_r = c_r;
    let mut byte = [0u8; 1];
    assert!(
        c_r.get_mut().peek(&mut byte).is_err(),
        "a third connection was served"
    );
    // The two it has are served as before.
    a.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut a_r, false).status, 200);
    // One closes: the third is let in.
    drop((b, b_r));
    c_r.get_ref().set_read_timeout(Some(TIMEOUT)).unwrap();
    assert!(read_answer(&mut c_r, false).body.starts_with(b"GET /c"));
}

/// Deadlines: the whole body has one (a byte now and then does not
/// stretch it), and so does a new connection's first head, counted from
/// the accept: a connection that sends nothing is closed then, not after
/// the idle timeout.
#[test]
fn deadlines_cover_whole_phases() {
    let config = ServeConfig::default()
        .body_timeout(Some(Duration::from_millis(400)))
        .header_timeout(Some(Duration::from_millis(400)))
        .idle_timeout(Some(Duration::from_secs(60)));
    let server = Running::start(config, describe);
    let (mut s, mut r) = raw(server.addr);
    s.set_nodelay(true).unwrap();
    s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n")
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if s.write_all(b"x").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let a = read_answer(&mut r, false);
    assert_eq!(a.status, 408);
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(350), "408 after {took:?}");

    let (_s, mut r) = raw(server.addr);
    let t0 = Instant::now();
    assert!(read_to_close(&mut r).is_empty());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

/// A head longer than the small buffer a connection starts with (1 KiB)
/// is read whole, in pieces, and its headers reach the handler; one just
/// past `max_head` still gets 431.
#[test]
fn a_head_longer_than_the_first_buffer_is_read_whole() {
    let server = Running::start(ServeConfig::default(), |req: &Request<'_>| {
        Response::text(200, format!("{}", req.header("x-long").map_or(0, str::len)))
    });
    let (mut s, mut r) = raw(server.addr);
    let long = "y".repeat(5000);
    for piece in format!("GET / HTTP/1.1\r\nHost: t\r\nX-Long: {long}\r\n\r\n")
        .as_bytes()
        .chunks(700)
    {
        s.write_all(piece).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let a = read_answer(&mut r, false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"5000"[..]));
    let too_long = "y".repeat(9000);
    s.write_all(format!("GET / HTTP/1.1\r\nHost: t\r\nX-Long: {too_long}\r\n\r\n").as_bytes())
        .unwrap();
    assert_eq!(read_answer(&mut r, false).status, 431);
}
