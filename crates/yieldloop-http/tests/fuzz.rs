//! A fuzz test of the request parser and the connection's state machine:
//! proptest makes byte streams (well-formed requests, their pieces
//! mutated, random bytes, cut anywhere and sent in random slices), a real
//! connection serves each with `serve_connection`, and every case checks:
//!
//! - the connection task never panics;
//! - everything the server sends is a sequence of well-formed answers, each
//!   a valid status line, headers, and as many body bytes as it announces;
//! - after a refusal (400, 408, 411, 413, 414, 431, 501, 505) or any answer
//!   saying `Connection: close`, nothing more is answered.
//!
//! `cargo test` runs 256 cases (CI with it); `PROPTEST_CASES=100000 cargo
//! test -p yieldloop-http --test fuzz` runs longer.

mod util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use yieldloop_http::{serve_connection, Request, Response, ServeConfig};

/// The handler: an empty body always (so that a HEAD answer and a GET one
/// frame alike), what it saw in a header.
fn handler(req: &Request<'_>) -> Response {
    if req.path() == "/panic" {
        panic!("asked to");
    }
    Response::new(200).header("X-Seen", format!("{} {}", req.method(), req.body().len()))
}

/// A server on its own thread running `serve_connection` per connection,
/// and the result of each connection's task, in order of their ends.
fn server() -> &'static (SocketAddr, std::sync::Mutex<mpsc::Receiver<bool>>) {
    static SERVER: OnceLock<(SocketAddr, std::sync::Mutex<mpsc::Receiver<bool>>)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let (addr_tx, addr_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            yieldloop::run(move || {
                let listener = yieldloop::net::TcpListener::bind("127.0.0.1:0").unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let config = ServeConfig::default()
                    .max_head(512)
                    .max_headers(16)
                    .max_body(256)
                    .header_timeout(Some(Duration::from_secs(5)))
                    .body_timeout(Some(Duration::from_secs(5)))
                    .max_unwritten(64);
                let config = std::rc::Rc::new(config);
                loop {
                    let (stream, _) = listener.accept().unwrap();
                    let (config, done) = (config.clone(), done_tx.clone());
                    let task = yieldloop::spawn(move || {
                        let _ = serve_connection(&stream, &config, &handler);
                    });
                    yieldloop::spawn(move || {
                        // A panic of the connection's own code (the
                        // handler's are caught and answered 500) makes the
                        // join fail.
                        let _ = done.send(task.join().is_ok());
                    });
                }
            });
        });
        (addr_rx.recv().unwrap(), std::sync::Mutex::new(done_rx))
    })
}

/// Statuses with which the server refuses a request and closes.
const REFUSALS: [u16; 8] = [400, 408, 411, 413, 414, 431, 501, 505];

/// Checks the bytes a connection answered; `Err` says what is wrong.
fn check_answers(mut bytes: &[u8]) -> Result<(), String> {
    let mut closed = false;
    while !bytes.is_empty() {
        if closed {
            return Err(format!(
                "answered after a close: {:?}",
                String::from_utf8_lossy(bytes)
            ));
        }
        let end = find(bytes, b"\r\n\r\n").ok_or("an answer's head is cut")?;
        let head = std::str::from_utf8(&bytes[..end]).map_err(|_| "a head not UTF-8")?;
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap_or("");
        let status: u16 = line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse().ok())
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| format!("not a status line: {line:?}"))?;
        if line.len() > 12 && line.as_bytes()[12] != b' ' {
            return Err(format!("not a status line: {line:?}"));
        }
        let mut len = 0usize;
        for h in lines {
            let (name, value) = h
                .split_once(": ")
                .ok_or_else(|| format!("bad header {h:?}"))?;
            if name.eq_ignore_ascii_case("content-length") {
                len = value.parse().map_err(|_| "bad length")?;
            }
            if name.eq_ignore_ascii_case("connection") && value == "close" {
                closed = true;
            }
        }
        if REFUSALS.contains(&status) && !closed {
            return Err(format!("{status} without Connection: close"));
        }
        let rest = &bytes[end + 4..];
        if rest.len() < len {
            return Err("a body is cut".into());
        }
        bytes = &rest[len..];
    }
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Sends `input` in `slices`, closes the sending side, reads every answer;
/// then the task's result.
fn exchange(input: &[u8], slices: &[usize]) -> (Vec<u8>, bool) {
    let (addr, done) = server();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
    let mut at = 0usize;
    for &n in slices.iter().chain(std::iter::once(&usize::MAX)) {
        let end = at.saturating_add(n).min(input.len());
        if s.write_all(&input[at..end]).is_err() {
            break;
        }
        at = end;
        if at == input.len() {
            break;
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut answers = Vec::new();
    let _ = s.read_to_end(&mut answers);
    drop(s);
    let ok = done
        .lock()
        .unwrap()
        .recv_timeout(util::TIMEOUT)
        .expect("the connection ends");
    (answers, ok)
}

/// Pieces of requests, well-formed and not.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let fixed = prop::sample::select(vec![
        &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"HEAD /x?y HTTP/1.1\r\nHost: a:1\r\n\r\n",
        b"GET http://h/p HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.0\r\n\r\n",
        b"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9999\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n0\r\nT: v\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET /panic HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        b"5\r\nhello\r\n",
        b"0\r\n\r\n",
        b"ffffffffffffffffff\r\n",
        b"\r\n",
        b"Content-Length: 1\r\n",
        b"Host: x\r\n",
    ])
    .prop_map(<[u8]>::to_vec);
    prop_oneof![
        4 => fixed.clone(),
        // A piece with a few bytes changed.
        3 => (fixed, prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4))
            .prop_map(|(mut p, edits)| {
                for (i, b) in edits {
                    let at = i.index(p.len());
                    p[at] = b;
                }
                p
            }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any byte stream: no panic, well-formed answers, nothing after a
    /// refusal or a close.
    #[test]
    fn any_bytes_get_well_formed_answers(
        pieces in prop::collection::vec(piece(), 1..5),
        cut in any::<prop::sample::Index>(),
        slices in prop::collection::vec(1usize..40, 0..6),
    ) {
        let mut input: Vec<u8> = pieces.concat();
        // Sometimes cut short, anywhere.
        if input.len() > 1 && cut.index(4) == 0 {
            input.truncate(cut.index(input.len()));
        }
        let (answers, ok) = exchange(&input, &slices);
        prop_assert!(ok, "the connection task panicked on {:?}", String::from_utf8_lossy(&input));
        if let Err(why) = check_answers(&answers) {
            prop_assert!(
                false,
                "{why}\ninput: {:?}\nanswers: {:?}",
                String::from_utf8_lossy(&input),
                String::from_utf8_lossy(&answers)
            );
        }
    }
}
