//! Unix domain sockets: an echo server on a socket path, pairs, and the
//! socket file's lifecycle.

mod util;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use util::TempDir;
use yieldloop::net::{UnixListener, UnixStream};

/// Echoes each connection's bytes until the client half-closes.
fn serve_echo(listener: UnixListener, connections: usize) {
    let mut conns = Vec::new();
    for stream in listener.incoming().take(connections) {
        let stream = stream.unwrap();
        conns.push(yieldloop::spawn(move || {
            let (mut r, mut w) = (&stream, &stream);
            std::io::copy(&mut r, &mut w).unwrap();
            stream.shutdown(Shutdown::Write).unwrap();
        }));
    }
    for c in conns {
        c.join().unwrap();
    }
}

/// Twenty clients echo lines through a listener on a socket path; the
/// path is reported as the listener's and the client's peer address.
#[test]
fn echo_over_a_socket_path() {
    let dir = TempDir::new("unix-echo");
    let path = dir.path("echo.sock");
    let p = path.clone();
    let start = Instant::now();
    yieldloop::run(move || {
        let listener = UnixListener::bind(&p).unwrap();
        assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(&*p));
        let server = yieldloop::spawn(move || serve_echo(listener, 20));
        let clients: Vec<_> = (0..20)
            .map(|c| {
                let p = p.clone();
                yieldloop::spawn(move || {
                    let stream = UnixStream::connect(&p).unwrap();
                    assert_eq!(stream.peer_addr().unwrap().as_pathname(), Some(&*p));
                    stream
                        .set_read_timeout(Some(Duration::from_secs(5)))
                        .unwrap();
                    let mut reader = BufReader::new(&stream);
                    for i in 0..10 {
                        let line = format!("client {c} line {i}\n");
                        (&stream).write_all(line.as_bytes()).unwrap();
                        let mut back = String::new();
                        reader.read_line(&mut back).unwrap();
                        assert_eq!(back, line);
                    }
                    stream.shutdown(Shutdown::Write).unwrap();
                    let mut rest = Vec::new();
                    reader.read_to_end(&mut rest).unwrap();
                    assert!(rest.is_empty());
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        server.join().unwrap();
    });
    assert!(start.elapsed() < Duration::from_secs(20));
    // Like std, the socket file outlives the listener until removed.
    assert!(path.exists());
    drop(dir);
    assert!(!path.exists());
}

/// Binding a path that exists fails with `AddrInUse`; connecting to a path
/// with nothing there fails with `NotFound`.
#[test]
fn bind_and_connect_errors() {
    let dir = TempDir::new("unix-errors");
    let path = dir.path("taken.sock");
    let missing = dir.path("missing.sock");
    yieldloop::run(move || {
        let _first = UnixListener::bind(&path).unwrap();
        let err = UnixListener::bind(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse);
        let err = UnixStream::connect(&missing).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
    });
}

/// A pair works as a two-way pipe between tasks, with owned `Read`/`Write`
/// too, and a read timeout fires when nothing comes.
#[test]
fn pair_and_read_timeout() {
    yieldloop::run(|| {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let echo = yieldloop::spawn(move || {
            let mut buf = [0u8; 5];
            b.read_exact(&mut buf).unwrap();
            b.write_all(&buf).unwrap();
            b
        });
        a.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        a.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        let _b = echo.join().unwrap();
        a.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
        let start = Instant::now();
        let err = a.read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(30));
    });
}

/// More clients than the listen backlog connect at once while the
/// acceptor is slow: the kernel refuses the surplus with `EAGAIN`, the
/// connects retry until there is room, and all succeed.
#[test]
fn connects_beyond_the_backlog_all_succeed() {
    use socket2::{Domain, SockAddr, Socket, Type};
    const CLIENTS: usize = 40;
    let dir = TempDir::new("unix-backlog");
    let path = dir.path("busy.sock");
    let start = Instant::now();
    yieldloop::run(move || {
        // A backlog of 2, set by hand: `bind` asks for the system maximum.
        let socket = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
        socket.bind(&SockAddr::unix(&path).unwrap()).unwrap();
        socket.listen(2).unwrap();
        let listener = UnixListener::from_std(socket.into()).unwrap();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let p = path.clone();
                yieldloop::spawn(move || UnixStream::connect(&p).map(|_| ()))
            })
            .collect();
        // Let every client try once before anything is accepted.
        yieldloop::sleep(Duration::from_millis(20));
        let mut accepted = Vec::new();
        for _ in 0..CLIENTS {
            accepted.push(listener.accept().unwrap().0);
        }
        for c in clients {
            c.join().unwrap().unwrap();
        }
        assert_eq!(accepted.len(), CLIENTS);
    });
    assert!(start.elapsed() < Duration::from_secs(20));
}
