//! The `tls_echo` recipe, run as a child process and checked by rustls
//! clients on plain std sockets.

mod util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use util::Server;

/// A TLS client session over a std socket.
type Client = StreamOwned<ClientConnection, TcpStream>;

/// A client configuration trusting only the certificates in `pem`.
fn trusting(pem: &Path) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(pem).expect("reading the certificate") {
        roots
            .add(cert.expect("a PEM certificate"))
            .expect("a usable certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Starts the server with its own certificate written to a scratch file;
/// returns it and a client configuration trusting that certificate.
fn start() -> (Server, Arc<ClientConfig>) {
    let pem = util::scratch("cert.pem");
    let server = Server::start(
        "tls_echo",
        &["--quiet", "--write-cert", pem.to_str().unwrap()],
    );
    let config = trusting(&pem);
    (server, config)
}

fn connect(addr: SocketAddr, config: &Arc<ClientConfig>) -> Client {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_nodelay(true).unwrap();
    sock.set_read_timeout(Some(util::TIMEOUT)).unwrap();
    sock.set_write_timeout(Some(util::TIMEOUT)).unwrap();
    let session = ClientConnection::new(config.clone(), "localhost".try_into().unwrap()).unwrap();
    StreamOwned::new(session, sock)
}

/// Sends `msg` and reads back as many bytes, which must be the same.
fn round_trip(client: &mut Client, msg: &[u8]) {
    client.write_all(msg).unwrap();
    client.flush().unwrap();
    let mut back = vec![0u8; msg.len()];
    client.read_exact(&mut back).unwrap();
    assert!(back == msg, "the echo differs from what was sent");
}

/// Deterministic bytes of a given length.
fn message(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Eight clients at once, each with 20 messages of 1 B to 40 KB, get every
/// byte back.
#[test]
fn concurrent_clients_get_their_bytes_back() {
    let (server, config) = start();
    let addr = server.addr;
    let clients: Vec<_> = (0..8u64)
        .map(|c| {
            let config = config.clone();
            std::thread::spawn(move || {
                let mut client = connect(addr, &config);
                for i in 0..20u64 {
                    let len = 1 + (c * 7919 + i * 104_729) as usize % 40_000;
                    round_trip(&mut client, &message(c * 100 + i, len));
                }
                client.conn.send_close_notify();
                client.flush().unwrap();
                // The server answers close_notify with its own and closes.
                let mut rest = Vec::new();
                client.read_to_end(&mut rest).unwrap();
                assert!(rest.is_empty());
            })
        })
        .collect();
    for c in clients {
        c.join().expect("a client failed");
    }
}

/// 4 MiB in 64 KiB pieces comes back intact: TLS records are split and
/// joined across reads on both sides.
#[test]
fn large_messages_come_back_intact() {
    let (server, config) = start();
    let mut client = connect(server.addr, &config);
    for i in 0..64 {
        round_trip(&mut client, &message(1000 + i, 64 * 1024));
    }
    round_trip(&mut client, &message(7, 1));
}

/// A client sending plain text instead of a TLS hello loses its own
/// connection; a session already open and new ones carry on.
#[test]
fn garbage_instead_of_a_hello_kills_only_that_connection() {
    let (server, config) = start();
    let mut open = connect(server.addr, &config);
    round_trip(&mut open, b"before");

    let mut garbage = TcpStream::connect(server.addr).unwrap();
    garbage.set_read_timeout(Some(util::TIMEOUT)).unwrap();
    garbage
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // The server may send an alert first; then it closes.
    let answer = util::read_to_close(&mut garbage);
    assert!(answer.len() < 100, "unexpected answer: {answer:?}");

    round_trip(&mut open, b"after");
    let mut fresh = connect(server.addr, &config);
    round_trip(&mut fresh, b"a new session");
}

/// A client trusting another certificate refuses the server; the server
/// goes on serving others.
#[test]
fn a_client_trusting_another_certificate_refuses_the_server() {
    let (server, config) = start();
    let other = util::scratch("other.pem");
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&other, made.cert.pem()).unwrap();
    let mut wary = connect(server.addr, &trusting(&other));
    let err = wary.write_all(b"hello").and_then(|()| wary.flush());
    let err = match err {
        Err(e) => e,
        Ok(()) => wary
            .read(&mut [0u8; 16])
            .expect_err("the handshake should fail"),
    };
    assert!(
        err.to_string().contains("certificate"),
        "unexpected error: {err}"
    );
    let mut trusting = connect(server.addr, &config);
    round_trip(&mut trusting, b"still serving");
}

/// Given `--cert` and `--key` PEM files, the server presents that
/// certificate; `--cert` alone is refused with status 2.
#[test]
fn certificate_and_key_from_files() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (util::scratch("cert.pem"), util::scratch("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let (cert_s, key_s) = (cert.to_str().unwrap(), key.to_str().unwrap());

    let server = Server::start("tls_echo", &["--quiet", "--cert", cert_s, "--key", key_s]);
    let mut client = connect(server.addr, &trusting(&cert));
    round_trip(&mut client, b"signed by the files");

    let out = util::run_example("tls_echo", &["--addr", "127.0.0.1:0", "--cert", cert_s]);
    assert_eq!(out.status.code(), Some(2));
    let missing = util::run_example(
        "tls_echo",
        &[
            "--addr",
            "127.0.0.1:0",
            "--cert",
            "/nonexistent.pem",
            "--key",
            key_s,
        ],
    );
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("/nonexistent.pem"), "stderr: {stderr}");
}

/// The server logs each connection's open and close with the bytes echoed.
#[test]
fn connections_are_logged() {
    let pem = util::scratch("cert.pem");
    let server = Server::start("tls_echo", &["--write-cert", pem.to_str().unwrap()]);
    let mut client = connect(server.addr, &trusting(&pem));
    round_trip(&mut client, b"12345");
    client.conn.send_close_notify();
    client.flush().unwrap();
    let _ = client.read_to_end(&mut Vec::new());
    let mut lines = Vec::new();
    for _ in 0..200 {
        lines.extend(server.log_lines());
        if lines.iter().any(|l| l.starts_with("close ")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(lines.iter().any(|l| l.starts_with("open ")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("close ") && l.contains("after 5 bytes")),
        "{lines:?}"
    );
}
