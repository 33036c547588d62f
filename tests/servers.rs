//! The real-server harness itself: each server starts on a free port,
//! answers a real protocol exchange, and is gone (its pid reaped) once the
//! handle is dropped. Skips, with a message naming the package, where the
//! server is not installed.

mod util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use util::servers;

const IO_TIMEOUT: Duration = Duration::from_secs(10);

fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connecting to the server");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

/// Sends one RESP command and reads the reply's first line.
fn redis_call(s: &mut TcpStream, args: &[&str]) -> String {
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(cmd.as_bytes()).unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8];
    while !line.ends_with(b"\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the server closed: {line:?}");
        line.push(byte[0]);
        assert!(line.len() < 4096, "no line end in {line:?}");
    }
    String::from_utf8(line).unwrap()
}

#[test]
fn redis_starts_answers_and_stops_by_pid() {
    let Some(server) = servers::redis() else {
        return;
    };
    let pid = server.pid();
    assert!(servers::pid_alive(pid));
    let mut s = connect(server.addr());
    assert_eq!(redis_call(&mut s, &["PING"]), "+PONG\r\n");
    assert_eq!(redis_call(&mut s, &["SET", "k", "v1"]), "+OK\r\n");
    assert_eq!(redis_call(&mut s, &["GET", "k"]), "$2\r\n");
    let mut value = [0u8; 4];
    s.read_exact(&mut value).unwrap();
    assert_eq!(&value, b"v1\r\n");
    let dir = server.dir().to_path_buf();
    assert!(dir.is_dir());
    drop(server);
    assert!(
        !servers::pid_alive(pid),
        "redis-server {pid} outlived its handle"
    );
    assert!(!dir.exists(), "{} outlived the server", dir.display());
    // The port no longer answers (or, if someone took it, not as this server
    // did: the old connection is closed).
    let mut buf = [0u8; 16];
    assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)));
}

#[test]
fn two_redis_servers_get_two_ports() {
    let (Some(a), Some(b)) = (servers::redis(), servers::redis()) else {
        return;
    };
    assert_ne!(a.addr(), b.addr());
    let (mut sa, mut sb) = (connect(a.addr()), connect(b.addr()));
    redis_call(&mut sa, &["SET", "who", "a"]);
    assert_eq!(redis_call(&mut sb, &["EXISTS", "who"]), ":0\r\n");
}

#[test]
fn redis_with_options_and_kill() {
    let Some(mut server) = servers::redis_with(&["--requirepass", "sesame"]) else {
        return;
    };
    let mut s = connect(server.addr());
    assert!(redis_call(&mut s, &["GET", "k"]).starts_with("-NOAUTH"));
    assert_eq!(redis_call(&mut s, &["AUTH", "sesame"]), "+OK\r\n");
    let pid = server.pid();
    server.kill();
    assert!(!servers::pid_alive(pid));
}

/// Sends a PostgreSQL start-up message and returns the authentication
/// request code of the first answer ('R' message): 0 is "OK", 10 is SASL,
/// and the still open connection.
fn pg_startup(addr: std::net::SocketAddr, user: &str, db: &str) -> (u32, TcpStream) {
    let mut s = connect(addr);
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", user), ("database", db)] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    let mut head = [0u8; 9];
    s.read_exact(&mut head).unwrap();
    assert_eq!(head[0], b'R', "not an authentication message: {head:?}");
    (u32::from_be_bytes(head[5..9].try_into().unwrap()), s)
}

#[test]
fn postgres_starts_answers_and_stops_by_pid() {
    let Some(server) = servers::postgres() else {
        return;
    };
    assert_eq!(server.password(), None);
    assert!(server
        .connection_string()
        .contains(&format!("port={}", server.addr().port())));
    let pid = server.pid();
    assert!(servers::pid_alive(pid));
    let (auth, session) = pg_startup(server.addr(), server.user(), server.dbname());
    assert_eq!(auth, 0);
    // A logged-in client still connected does not hold up the stop.
    let dir = server.socket_dir().to_path_buf();
    let start = std::time::Instant::now();
    drop(server);
    let took = start.elapsed();
    assert!(took < servers::STOP_TIMEOUT, "the stop took {took:?}");
    assert!(
        !servers::pid_alive(pid),
        "postgres {pid} outlived its handle"
    );
    assert!(!dir.exists(), "{} outlived the server", dir.display());
    drop(session);
}

#[test]
fn postgres_with_password_asks_for_it() {
    let Some(server) = servers::postgres_with_password("sesame") else {
        return;
    };
    assert_eq!(server.password(), Some("sesame"));
    let (auth, _session) = pg_startup(server.addr(), server.user(), server.dbname());
    assert_eq!(auth, 10);
}
