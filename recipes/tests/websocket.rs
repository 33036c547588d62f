//! WebSocket on yieldloop (tungstenite over yieldloop's streams), checked
//! against a WebSocket client and server written here on std sockets from
//! RFC 6455 alone, apart from tungstenite: echo of text, binary (with the
//! 64-bit length form), ping/pong and close; many connections overlapped
//! on one scheduler beside a ticker; `wss://` over yieldloop-rustls.

mod util;

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use yieldloop::net::TcpListener;
use yieldloop_http::ws::{self, Message};
use yieldloop_http::yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
use yieldloop_http::yieldloop_rustls::rustls::RootCertStore;
use yieldloop_http::yieldloop_rustls::{TlsAcceptor, TlsConnector};

// ----- RFC 6455 by hand ---------------------------------------------------

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Sec-WebSocket-Accept for a key (RFC 6455 section 4.2.2).
fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    data_encoding::BASE64.encode(&sha.finalize())
}

/// Writes one frame, FIN set, masked with `mask` if given.
fn write_frame(w: &mut impl Write, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    let mut f = vec![0x80 | opcode];
    let m = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => f.push(m | n as u8),
        n if n < 65536 => {
            f.push(m | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(m | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(k) => {
            f.extend_from_slice(&k);
            f.extend(payload.iter().enumerate().map(|(i, b)| b ^ k[i % 4]));
        }
        None => f.extend_from_slice(payload),
    }
    w.write_all(&f).unwrap();
}

/// Reads one frame: (fin, opcode, masked, payload unmasked).
fn read_frame(r: &mut impl Read) -> (bool, u8, bool, Vec<u8>) {
    let mut h = [0u8; 2];
    r.read_exact(&mut h).unwrap();
    let masked = h[1] & 0x80 != 0;
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).unwrap();
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            r.read_exact(&mut b).unwrap();
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut key = [0u8; 4];
    if masked {
        r.read_exact(&mut key).unwrap();
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).unwrap();
    if masked {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
    }
    (h[0] & 0x80 != 0, h[0] & 0x0f, masked, payload)
}

/// Reads an HTTP head up to its blank line; returns its lines.
fn read_head(r: &mut impl BufRead) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).unwrap() > 0, "the head was cut");
        let line = line.trim_end().to_string();
        if line.is_empty() {
            return lines;
        }
        lines.push(line);
    }
}

/// The value of header `name` (any case) among head lines.
fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The hand-written client's opening handshake on a std socket.
fn hand_client(addr: SocketAddr) -> BufReader<StdStream> {
    let s = StdStream::connect(addr).unwrap();
    s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
    let key = data_encoding::BASE64.encode(b"sixteen byte key");
    let mut r = BufReader::new(s);
    write!(
        r.get_mut(),
        "GET /echo HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let head = read_head(&mut r);
    assert!(head[0].starts_with("HTTP/1.1 101"), "{head:?}");
    assert_eq!(
        header(&head, "sec-websocket-accept"),
        Some(accept_key(&key).as_str())
    );
    assert!(header(&head, "upgrade")
        .unwrap()
        .eq_ignore_ascii_case("websocket"));
    r
}

/// A deterministic payload.
fn payload(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + seed * 7) as u8).collect()
}

// ----- the yieldloop server -----------------------------------------------

/// The echo handler of the yieldloop servers here.
fn echo(mut socket: ws::WebSocket<impl Read + Write>) {
    while let Ok(msg) = socket.read() {
        if (msg.is_text() || msg.is_binary()) && socket.send(msg).is_err() {
            return;
        }
    }
}

/// Runs a yieldloop echo server with a ticker on a run of this thread, and
/// `client` on a thread of the blocking pool; returns what the client
/// returns and the ticks seen while it ran.
fn with_server<T: Send + 'static>(
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
) -> (T, u32) {
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        yieldloop::spawn(move || ws::serve(listener, echo));
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let ticks = ticks.clone();
            yieldloop::spawn(move || loop {
                yieldloop::sleep(Duration::from_millis(2));
                ticks.set(ticks.get() + 1);
            })
        };
        let out = yieldloop::spawn_blocking(move || client(addr))
            .join()
            .expect("the client");
        ticker.cancel();
        (out, ticks.get())
    })
}

/// The hand-written client gets its text, a 70,000-byte binary message
/// (64-bit length), a fragmented text reassembled, a pong for its ping,
/// and the close echoed; the server's frames are unmasked.
#[test]
fn the_server_speaks_rfc6455_to_a_hand_written_client() {
    with_server(|addr| {
        let mut c = hand_client(addr);
        let mask = Some([1, 2, 3, 4]);
        write_frame(c.get_mut(), 0x1, b"hello", mask);
        assert_eq!(read_frame(&mut c), (true, 0x1, false, b"hello".to_vec()));

        let big = payload(1, 70_000);
        write_frame(c.get_mut(), 0x2, &big, mask);
        assert_eq!(read_frame(&mut c), (true, 0x2, false, big));

        // "frag" + "ment": a text frame without FIN, then a continuation.
        let mut first = vec![0x01, 0x84, 9, 9, 9, 9];
        first.extend(b"frag".iter().map(|b| b ^ 9));
        c.get_mut().write_all(&first).unwrap();
        write_frame(c.get_mut(), 0x0, b"ment", mask);
        assert_eq!(read_frame(&mut c), (true, 0x1, false, b"fragment".to_vec()));

        write_frame(c.get_mut(), 0x9, b"ping?", mask);
        assert_eq!(read_frame(&mut c), (true, 0xA, false, b"ping?".to_vec()));

        write_frame(c.get_mut(), 0x8, &1000u16.to_be_bytes(), mask);
        let (_, op, _, body) = read_frame(&mut c);
        assert_eq!((op, &body[..2]), (0x8, &1000u16.to_be_bytes()[..]));
    });
}

/// 50 hand-written clients on 50 threads, each with 20 messages, overlap
/// on the one scheduler's connection tasks; the ticker keeps ticking.
#[test]
fn many_connections_overlap_on_one_scheduler() {
    let (_, ticks) = with_server(|addr| {
        let start = Instant::now();
        let clients: Vec<_> = (0..50)
            .map(|i| {
                std::thread::spawn(move || {
                    let mut c = hand_client(addr);
                    for j in 0..20 {
                        let p = payload(i * 100 + j, 1 + (i * 997 + j * 131) % 3000);
                        write_frame(c.get_mut(), 0x2, &p, Some([i as u8, 7, j as u8, 3]));
                        assert_eq!(read_frame(&mut c).3, p);
                        std::thread::sleep(Duration::from_millis(2));
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        start.elapsed()
    });
    assert!(ticks >= 5, "the ticker ticked {ticks} times");
}

/// A request that is not an upgrade gets no `101`: tungstenite closes the
/// connection, and the server goes on.
#[test]
fn a_plain_request_is_refused() {
    with_server(|addr| {
        let mut s = StdStream::connect(addr).unwrap();
        s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let answer = util::read_to_close(&mut s);
        assert!(
            !answer.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        let mut c = hand_client(addr);
        write_frame(c.get_mut(), 0x1, b"still here", Some([5, 6, 7, 8]));
        assert_eq!(read_frame(&mut c).3, b"still here");
    });
}

// ----- the yieldloop client -----------------------------------------------

/// A hand-written RFC 6455 echo server on a std thread, for one
/// connection: it checks the client's handshake, answers 101, and echoes
/// (unmasked) each frame until a close, which it answers. Returns the
/// address and what it saw: (opcode, masked) per frame.
fn hand_server() -> (SocketAddr, std::thread::JoinHandle<Vec<(u8, bool)>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(util::TIMEOUT)).unwrap();
        let mut r = BufReader::new(s);
        let head = read_head(&mut r);
        assert!(head[0].starts_with("GET /chat HTTP/1.1"), "{head:?}");
        assert_eq!(header(&head, "sec-websocket-version"), Some("13"));
        let key = header(&head, "sec-websocket-key")
            .expect("a key")
            .to_string();
        write!(
            r.get_mut(),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            accept_key(&key)
        )
        .unwrap();
        let mut seen = Vec::new();
        loop {
            let (fin, op, masked, body) = read_frame(&mut r);
            assert!(fin);
            seen.push((op, masked));
            write_frame(r.get_mut(), op, &body, None);
            if op == 0x8 {
                return seen;
            }
        }
    });
    (addr, t)
}

/// yieldloop's client against the hand-written server: text, binary of
/// 70,000 bytes and a close, every client frame masked.
#[test]
fn the_client_speaks_rfc6455_to_a_hand_written_server() {
    let (addr, server) = hand_server();
    yieldloop::run(move || {
        let (mut socket, resp) = ws::connect(&format!("ws://{addr}/chat")).unwrap();
        assert_eq!(resp.status(), 101);
        socket.send(Message::text("hello")).unwrap();
        assert_eq!(socket.read().unwrap(), Message::text("hello"));
        let big = payload(3, 70_000);
        socket.send(Message::binary(big.clone())).unwrap();
        assert_eq!(socket.read().unwrap(), Message::binary(big));
        socket.close(None).unwrap();
        // The server's close answer ends the session.
        loop {
            match socket.read() {
                Ok(_) => continue,
                Err(ws::tungstenite::Error::ConnectionClosed) => break,
                Err(e) => panic!("{e}"),
            }
        }
    });
    let seen = server.join().unwrap();
    assert_eq!(seen, vec![(0x1, true), (0x2, true), (0x8, true)]);
}

/// 200 client tasks against the yieldloop server, all on one scheduler
/// with a ticker: each sends ten messages, waiting a millisecond between
/// them; they overlap (the run takes far less than the sum of the
/// waits) and the ticker ticks.
#[test]
fn client_tasks_and_server_share_one_scheduler() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = yieldloop::spawn(move || ws::serve(listener, echo));
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let ticks = ticks.clone();
            yieldloop::spawn(move || loop {
                yieldloop::sleep(Duration::from_millis(2));
                ticks.set(ticks.get() + 1);
            })
        };
        let start = Instant::now();
        let clients: Vec<_> = (0..200)
            .map(|i| {
                yieldloop::spawn(move || {
                    let (mut socket, _) = ws::connect(&format!("ws://{addr}/")).unwrap();
                    for j in 0..10 {
                        let text = format!("client {i} message {j}");
                        socket.send(Message::text(text.clone())).unwrap();
                        assert_eq!(socket.read().unwrap(), Message::text(text));
                        yieldloop::sleep(Duration::from_millis(1));
                    }
                    socket.close(None).unwrap();
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        let took = start.elapsed();
        ticker.cancel();
        server.cancel();
        // 200 x 10 x 1 ms of waits in sequence would be 2 s.
        assert!(took < Duration::from_secs(2), "took {took:?}");
        assert!(ticks.get() >= 2, "the ticker ticked {} times", ticks.get());
    });
}

/// `wss://`: the server's TLS session from yieldloop-rustls under
/// tungstenite, the client's through `ws::connect_tls`.
#[test]
fn wss_over_yieldloop_rustls() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let acceptor =
        TlsAcceptor::from_single_cert(vec![made.cert.der().clone()], key.into()).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(made.cert.der().clone()).unwrap();
    let connector = TlsConnector::with_roots(roots);
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // A larger stack than the default 64 KiB: rustls's record layer
        // under tungstenite needs it in a debug build.
        let _server = yieldloop::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let (stream, _) = listener.accept().unwrap();
                let tls = acceptor.accept(stream).unwrap();
                echo(ws::accept(tls).unwrap());
            })
            .unwrap();
        let url = format!("wss://localhost:{port}/secure");
        assert!(ws::connect(&url).is_err(), "ws::connect takes no wss://");
        let (mut socket, _) = ws::connect_tls(&url, &connector).unwrap();
        socket.send(Message::text("over TLS")).unwrap();
        assert_eq!(socket.read().unwrap(), Message::text("over TLS"));
        socket.close(None).unwrap();
    });
}
