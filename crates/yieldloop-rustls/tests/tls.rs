//! yieldloop-rustls's sessions against each other and against
//! `openssl s_server`: many sessions on one scheduler beside a ticker,
//! ALPN, the handshake deadline, a certificate not trusted, the async face.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
use yieldloop_rustls::rustls::RootCertStore;
use yieldloop_rustls::{TlsAcceptor, TlsConnector};

/// A certificate for `localhost` and 127.0.0.1: the acceptor presenting
/// it, a connector trusting it, and both as PEM text (cert, key).
fn pair() -> (TlsAcceptor, TlsConnector, String, String) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let acceptor =
        TlsAcceptor::from_single_cert(vec![made.cert.der().clone()], key.into()).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(made.cert.der().clone()).unwrap();
    (
        acceptor,
        TlsConnector::with_roots(roots),
        made.cert.pem(),
        made.signing_key.serialize_pem(),
    )
}

/// Serves line echo on a fresh listener, one task per connection.
fn echo_server(acceptor: TlsAcceptor) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    yieldloop::spawn(move || loop {
        let (stream, _) = listener.accept().unwrap();
        let acceptor = acceptor.clone();
        yieldloop::spawn(move || -> io::Result<()> {
            let mut lines = BufReader::new(acceptor.accept(stream)?);
            let mut line = String::new();
            while lines.read_line(&mut line)? > 0 {
                lines.get_mut().write_all(line.as_bytes())?;
                line.clear();
            }
            lines.into_inner().shutdown()
        });
    });
    addr
}

/// 200 client sessions overlap on one scheduler, each with ten round
/// trips, while a ticker task keeps ticking; ALPN agrees on h2.
#[test]
fn many_sessions_on_one_scheduler_beside_a_ticker() {
    let (acceptor, connector, _, _) = pair();
    let acceptor = acceptor.alpn(&[b"h2", b"http/1.1"]);
    let connector = connector.alpn(&[b"h2"]);
    yieldloop::run(move || {
        let addr = echo_server(acceptor);
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let ticks = ticks.clone();
            yieldloop::spawn(move || loop {
                yieldloop::sleep(Duration::from_millis(2));
                ticks.set(ticks.get() + 1);
            })
        };
        let in_flight = Rc::new(Cell::new((0usize, 0usize)));
        let clients: Vec<_> = (0..200)
            .map(|i| {
                let (connector, in_flight) = (connector.clone(), in_flight.clone());
                yieldloop::spawn(move || {
                    let tls = connector
                        .connect("localhost", TcpStream::connect(addr).unwrap())
                        .unwrap();
                    assert_eq!(tls.alpn_protocol(), Some(&b"h2"[..]));
                    let (now, most) = in_flight.get();
                    in_flight.set((now + 1, most.max(now + 1)));
                    let mut lines = BufReader::new(tls);
                    for j in 0..10 {
                        let sent = format!("client {i} line {j}\n");
                        lines.get_mut().write_all(sent.as_bytes()).unwrap();
                        let mut back = String::new();
                        lines.read_line(&mut back).unwrap();
                        assert_eq!(back, sent);
                    }
                    let (now, most) = in_flight.get();
                    in_flight.set((now - 1, most));
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        ticker.cancel();
        let most = in_flight.get().1;
        assert!(most > 10, "only {most} sessions were open at once");
        assert!(ticks.get() > 0, "the ticker never ticked");
    });
}

/// A client that connects and says nothing is dropped at the handshake
/// deadline; the acceptor's error says so.
#[test]
fn a_silent_client_meets_the_handshake_deadline() {
    let (acceptor, _, _, _) = pair();
    let acceptor = acceptor.handshake_timeout(Some(Duration::from_millis(200)));
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let _silent = TcpStream::connect(addr).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let start = Instant::now();
        let err = acceptor.accept(stream).unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(5),
            "{took:?}"
        );
    });
}

/// A client that drips a ClientHello a byte at a time, each byte well
/// within any per-read limit, still meets the deadline of the whole
/// handshake: the drips buy it nothing.
#[test]
fn a_dripping_client_meets_the_handshake_deadline() {
    let (acceptor, _, _, _) = pair();
    let acceptor = acceptor.handshake_timeout(Some(Duration::from_millis(300)));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let dripper = std::thread::spawn(move || {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // The start of a TLS record carrying a ClientHello, then filler:
        // never a whole handshake message.
        let mut hello = vec![
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
        ];
        hello.resize(100, 0x2a);
        for b in hello {
            if s.write_all(&[b]).is_err() {
                return; // the server gave up
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    yieldloop::run(move || {
        let listener = TcpListener::from_std(listener).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let start = Instant::now();
        let err = acceptor.accept(stream).unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        // 100 bytes 20 ms apart would take 2 s: the deadline ends it first.
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
            "{took:?}"
        );
    });
    dripper.join().unwrap();
}

/// `await_hello` waits for the client's first record whole, however it is
/// split, and reads none of it: the handshake that follows gets all of
/// it, with the deadline's rest. A client that is not speaking TLS is not
/// waited for: its refusal comes at once, not at the deadline.
#[test]
fn the_hello_is_awaited_whole_and_left_for_the_handshake() {
    let (acceptor, _, cert, _) = pair();
    let acceptor = acceptor.handshake_timeout(Some(Duration::from_secs(10)));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        let mut roots = RootCertStore::empty();
        for c in rustls_pemfile_certs(&cert) {
            roots.add(c).unwrap();
        }
        let config = std::sync::Arc::new(yieldloop_rustls::client_config(roots));
        let name = "localhost".try_into().unwrap();
        let mut conn = yieldloop_rustls::rustls::ClientConnection::new(config, name).unwrap();
        let mut hello = Vec::new();
        conn.write_tls(&mut hello).unwrap();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // The record header in two pieces, then the rest of the record.
        for piece in [&hello[..3], &hello[3..9], &hello[9..]] {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
        while conn.is_handshaking() {
            conn.complete_io(&mut s).unwrap();
        }
        let mut tls = yieldloop_rustls::rustls::StreamOwned::new(conn, s);
        tls.write_all(b"whole\n").unwrap();
        let mut back = [0u8; 6];
        tls.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"whole\n");
        // Not TLS at all.
        let mut plain = std::net::TcpStream::connect(addr).unwrap();
        plain.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    yieldloop::run(move || {
        let listener = TcpListener::from_std(listener).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let start = Instant::now();
        let rest = acceptor.await_hello(&stream).unwrap();
        let waited = start.elapsed();
        // Three pieces 60 ms apart: the wait ended with the last.
        assert!(waited >= Duration::from_millis(100), "{waited:?}");
        let mut tls = BufReader::new(rest.accept(stream).unwrap());
        let mut line = String::new();
        tls.read_line(&mut line).unwrap();
        tls.get_mut().write_all(line.as_bytes()).unwrap();
        assert_eq!(line, "whole\n");

        let (plain, _) = listener.accept().unwrap();
        let start = Instant::now();
        let err = acceptor.accept(plain).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    });
    client.join().unwrap();
}

/// The certificates of a PEM text.
fn rustls_pemfile_certs(
    pem: &str,
) -> Vec<yieldloop_rustls::rustls::pki_types::CertificateDer<'static>> {
    let path = scratch("hello").join("cert.pem");
    std::fs::write(&path, pem).unwrap();
    yieldloop_rustls::load_certs(&path).unwrap()
}

/// A connector trusting another certificate refuses the server; the
/// server goes on serving a client that trusts it.
#[test]
fn an_untrusted_server_is_refused() {
    let (acceptor, trusting, _, _) = pair();
    let (_, stranger, _, _) = pair();
    yieldloop::run(move || {
        let addr = echo_server(acceptor);
        let err = stranger
            .connect("localhost", TcpStream::connect(addr).unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("certificate"), "{err}");
        let mut tls = trusting
            .connect("localhost", TcpStream::connect(addr).unwrap())
            .unwrap();
        tls.write_all(b"still serving\n").unwrap();
        let mut back = [0u8; 14];
        tls.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"still serving\n");
    });
}

/// The async face: tokio-rustls's streams over yieldloop's sockets, the
/// handshakes and the I/O as futures on yieldloop, no tokio runtime.
#[cfg(feature = "tokio")]
#[test]
fn the_async_face_runs_on_yieldloop() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (acceptor, connector, _, _) = pair();
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The async handshakes run on their polling task's stack: more
        // than the default 64 KiB in a debug build.
        let big = || yieldloop::Builder::new().stack_size(yieldloop_rustls::HANDSHAKE_STACK_SIZE);
        let server = big().spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            yieldloop::block_on(async move {
                let mut tls = acceptor.accept_async(stream).await?;
                let mut buf = [0u8; 5];
                tls.read_exact(&mut buf).await?;
                tls.write_all(&buf).await?;
                tls.shutdown().await
            })
        });
        let server = server.unwrap();
        let client = big().spawn(move || {
            yieldloop::block_on(async move {
                let stream = TcpStream::connect(addr)?;
                let mut tls = connector.connect_async("localhost", stream).await?;
                tls.write_all(b"hello").await?;
                let mut back = Vec::new();
                tls.read_to_end(&mut back).await?;
                io::Result::Ok(back)
            })
        });
        let got = client.unwrap().join().unwrap().unwrap();
        assert_eq!(got, b"hello");
        server.join().unwrap().unwrap();
        assert!(tokio::runtime::Handle::try_current().is_err());
    });
}

/// A scratch directory under the target directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("yieldloop-rustls-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `openssl s_server`, killed on drop.
struct OpenSsl(Child);

impl Drop for OpenSsl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The rustls client of this crate against `openssl s_server -rev` (which
/// answers each line reversed), with ALPN: a server that shares no code
/// with rustls.
#[test]
fn the_client_talks_to_openssl_s_server() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("skipping: openssl is not installed (install the openssl package)");
        return;
    }
    let (_, connector, cert, key) = pair();
    let connector = connector.alpn(&[b"http/1.1"]);
    let dir = scratch("openssl");
    std::fs::write(dir.join("cert.pem"), cert).unwrap();
    std::fs::write(dir.join("key.pem"), key).unwrap();
    // A free port: bound, read, and released for openssl.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = OpenSsl(
        Command::new("openssl")
            .args(["s_server", "-quiet", "-rev", "-alpn", "http/1.1", "-accept"])
            .arg(port.to_string())
            .arg("-cert")
            .arg(dir.join("cert.pem"))
            .arg("-key")
            .arg(dir.join("key.pem"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting openssl s_server"),
    );
    yieldloop::run(move || {
        // openssl takes a moment to listen.
        let start = Instant::now();
        let stream = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(e) if start.elapsed() < Duration::from_secs(10) => {
                    let _ = e;
                    yieldloop::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("openssl s_server never listened: {e}"),
            }
        };
        let tls = connector.connect("localhost", stream).unwrap();
        assert_eq!(tls.alpn_protocol(), Some(&b"http/1.1"[..]));
        let mut lines = BufReader::new(tls);
        lines.get_mut().write_all(b"hello openssl\n").unwrap();
        let mut back = String::new();
        lines.read_line(&mut back).unwrap();
        assert_eq!(back.trim_end(), "lssnepo olleh");
    });
}
