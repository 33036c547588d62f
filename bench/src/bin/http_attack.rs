//! Holds attacking connections open against an HTTP server, for run.sh's
//! `attack` stage: N connections that each send one kind of attack and
//! then never read, until stdin closes.
//!
//! ```text
//! http_attack --addr 127.0.0.1:PORT --kind body|idle|pipeline|tls-hello --conns N
//!             [--pipeline-bytes 8192] [--path /page] [--rcvbuf BYTES] </path/to/fifo
//! ```
//!
//! Kinds (what each connection sends, then holds):
//!
//! - `body`: `POST /upload` with `Content-Length: 1048576` and one body
//!   byte: a large declared length, almost nothing of it sent;
//! - `idle`: nothing;
//! - `pipeline`: `GET PATH` requests back to back, `--pipeline-bytes` of
//!   them, and never reads an answer;
//! - `tls-hello`: the first 100 bytes of a TLS ClientHello whose record
//!   declares more (a half-open handshake).
//!
//! It measures nothing: run.sh reads the server's memory and drives the
//! normal client. Once every connection is open and its bytes written it
//! prints `http_attack ready ...` on stdout. When stdin reaches its end it
//! looks at each connection once (reading, without waiting, whatever the
//! server sent), prints how many the server had closed, and exits, which
//! closes the rest:
//!
//! ```text
//! http_attack ready kind=idle conns=1000 connected=1000 failed=0 bytes_per_conn=0
//! http_attack done kind=idle conns=1000 connected=1000 closed_by_server=0 answered_bytes=0
//! ```
//!
//! One thread and blocking std sockets: after the connects and the writes
//! there is nothing to do but wait.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// The attack each connection makes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Body,
    Idle,
    Pipeline,
    TlsHello,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Body => "body",
            Kind::Idle => "idle",
            Kind::Pipeline => "pipeline",
            Kind::TlsHello => "tls-hello",
        }
    }
}

struct Args {
    addr: SocketAddr,
    kind: Kind,
    conns: usize,
    pipeline_bytes: usize,
    path: String,
    /// `SO_RCVBUF` of each connection, if set: a small one keeps the
    /// answers a pipelining attacker never reads in the server rather
    /// than in the kernel's buffers on the attacker's side.
    rcvbuf: Option<usize>,
}

const USAGE: &str = "usage: http_attack --addr HOST:PORT --kind body|idle|pipeline|tls-hello --conns N [--pipeline-bytes B] [--path /page] [--rcvbuf BYTES]";

fn parse() -> Result<Args, String> {
    let mut addr = None;
    let mut kind = None;
    let mut a = Args {
        addr: "127.0.0.1:8080".parse().unwrap(),
        kind: Kind::Idle,
        conns: 0,
        pipeline_bytes: 8192,
        path: "/page".into(),
        rcvbuf: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--addr" => addr = Some(v.parse().map_err(|e| bad(&e))?),
            "--kind" => {
                kind = Some(match v.as_str() {
                    "body" => Kind::Body,
                    "idle" => Kind::Idle,
                    "pipeline" => Kind::Pipeline,
                    "tls-hello" => Kind::TlsHello,
                    _ => return Err(bad(&"unknown kind")),
                })
            }
            "--conns" => a.conns = v.parse().map_err(|e| bad(&e))?,
            "--pipeline-bytes" => a.pipeline_bytes = v.parse().map_err(|e| bad(&e))?,
            "--path" => a.path = v,
            "--rcvbuf" => a.rcvbuf = Some(v.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    a.addr = addr.ok_or("--addr is required")?;
    a.kind = kind.ok_or("--kind is required")?;
    // Bounded load only.
    if !(1..=20_000).contains(&a.conns) {
        return Err("--conns must be in 1..=20000".into());
    }
    if !(1..=1 << 20).contains(&a.pipeline_bytes) {
        return Err("--pipeline-bytes must be in 1..=1048576".into());
    }
    if !a.path.starts_with('/') || a.path.bytes().any(|b| b <= b' ') {
        return Err("--path must start with / and have no spaces".into());
    }
    Ok(a)
}

/// What one connection of kind `kind` sends before it goes quiet.
fn payload(a: &Args) -> Vec<u8> {
    match a.kind {
        Kind::Idle => Vec::new(),
        Kind::Body => b"POST /upload HTTP/1.1\r\nHost: bench\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n\r\nx".to_vec(),
        Kind::Pipeline => {
            let one = format!("GET {} HTTP/1.1\r\nHost: bench\r\n\r\n", a.path);
            // Whole requests only, at least one.
            let n = (a.pipeline_bytes / one.len()).max(1);
            one.repeat(n).into_bytes()
        }
        Kind::TlsHello => client_hello_prefix(),
    }
}

/// The first 100 bytes of a TLS 1.2/1.3 ClientHello: a handshake record
/// that declares 512 bytes, of which the server gets the header, version,
/// random, session id, cipher suites and compression methods, and then
/// waits for the rest.
fn client_hello_prefix() -> Vec<u8> {
    let mut m = vec![0x16, 0x03, 0x01, 0x02, 0x00]; // record: handshake, 512 bytes
    m.extend_from_slice(&[0x01, 0x00, 0x01, 0xfc]); // ClientHello, 508 bytes
    m.extend_from_slice(&[0x03, 0x03]); // legacy_version TLS 1.2
    m.extend((0..32u8).map(|i| i.wrapping_mul(37).wrapping_add(11))); // random
    m.push(32); // legacy_session_id
    m.extend((0..32u8).map(|i| i.wrapping_mul(53).wrapping_add(7)));
    // cipher_suites: TLS 1.3's three, then four ECDHE AEAD suites of 1.2
    m.extend_from_slice(&[0x00, 0x0e, 0x13, 0x01, 0x13, 0x02, 0x13, 0x03]);
    m.extend_from_slice(&[0xc0, 0x2b, 0xc0, 0x2f, 0xc0, 0x2c, 0xc0, 0x30]);
    m.extend_from_slice(&[0x01, 0x00]); // compression: null only
    m.extend_from_slice(&[0x01, 0xa5]); // extensions: 421 bytes
    m.extend_from_slice(&[0x00, 0x00, 0x00, 0x0a]); // server_name, 10 bytes...
    m.truncate(100);
    m
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("http_attack: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let bytes = payload(&a);
    let mut held = Vec::with_capacity(a.conns);
    let mut failed = 0usize;
    let mut first_error: Option<io::Error> = None;
    for _ in 0..a.conns {
        match open(&a.addr, &bytes, a.rcvbuf) {
            Ok(s) => held.push(s),
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = &first_error {
        eprintln!("http_attack: {failed} connections failed, the first with: {e}");
    }
    println!(
        "http_attack ready kind={} conns={} connected={} failed={failed} bytes_per_conn={}",
        a.kind.name(),
        a.conns,
        held.len(),
        bytes.len()
    );
    let _ = io::stdout().flush();

    // Hold until stdin ends (run.sh closes its end of a FIFO).
    let mut sink = [0u8; 256];
    let mut stdin = io::stdin().lock();
    while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}

    let mut closed = 0usize;
    let mut answered = 0u64;
    for s in &mut held {
        let (gone, got) = look(s);
        closed += usize::from(gone);
        answered += got;
    }
    println!(
        "http_attack done kind={} conns={} connected={} closed_by_server={closed} answered_bytes={answered}",
        a.kind.name(),
        a.conns,
        held.len()
    );
}

/// Connects, sets the receive buffer if asked, and writes the attack's
/// bytes.
fn open(addr: &SocketAddr, bytes: &[u8], rcvbuf: Option<usize>) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(addr, Duration::from_secs(5))?;
    if let Some(size) = rcvbuf {
        set_rcvbuf(&s, size)?;
    }
    // A server that stops reading must not hold the attacker in a write.
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(bytes)?;
    Ok(s)
}

/// `setsockopt(SO_RCVBUF)`, which std does not offer. Set after the
/// connect, it still bounds what the kernel keeps for this side (the
/// window it advertises shrinks to it; Linux doubles the value for its
/// own bookkeeping).
fn set_rcvbuf(s: &TcpStream, size: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(size).map_err(|_| io::Error::other("--rcvbuf too large"))?;
    // SAFETY: the descriptor is open for the call (borrowed from `s`), and
    // the option value is a c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the server has closed `s` (end of stream or a reset), and how
/// many answer bytes were waiting, read without waiting for more.
fn look(s: &mut TcpStream) -> (bool, u64) {
    if s.set_nonblocking(true).is_err() {
        return (true, 0);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = 0u64;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (true, got),
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (false, got),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return (true, got),
        }
    }
}
