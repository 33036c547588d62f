//! TCP failure paths: half-close, refused and reset connections, read,
//! write and connect timeouts, invalid timeouts, and sockets made outside
//! `run`. Every failure is an `io::Error` of the right kind, never a panic,
//! and the scheduler carries on afterwards.

mod util;

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now};

/// How late a timeout may fire before a test calls it a failure. Generous:
/// the machines running the tests are shared and noisy.
const LATE: Duration = Duration::from_millis(200);

/// A connected pair of yieldloop sockets: (client, server side).
fn socket_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

/// An address on which nothing listens (bound a moment ago, then closed).
fn dead_address() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr
}

/// Makes closing `fd` reset the connection (RST) instead of ending it (FIN).
fn set_linger_zero(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is an open socket and `linger` a valid `struct linger` of
    // the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(
        r,
        0,
        "setsockopt(SO_LINGER): {}",
        io::Error::last_os_error()
    );
}

/// Checks that the scheduler still runs timers, tasks and sockets normally.
fn assert_scheduler_healthy() {
    let start = Instant::now();
    sleep(Duration::from_millis(10));
    let slept = start.elapsed();
    assert!(slept >= Duration::from_millis(10));
    assert!(slept < Duration::from_millis(10) + LATE, "slept {slept:?}");
    let (client, server) = socket_pair();
    let echo = spawn(move || {
        let (mut r, mut w) = (&server, &server);
        io::copy(&mut r, &mut w).unwrap()
    });
    (&client).write_all(b"still alive").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let mut back = Vec::new();
    (&client).read_to_end(&mut back).unwrap();
    assert_eq!(back, b"still alive");
    assert_eq!(echo.join().unwrap(), 11);
}

/// Half-close: the client shuts down its write side, the server reads to
/// end-of-file, finishes echoing and closes; the client reads everything,
/// then end-of-file (again and again).
#[test]
fn half_close() {
    yieldloop::run(|| {
        let (client, server) = socket_pair();
        let server = spawn(move || {
            let (mut r, mut w) = (&server, &server);
            let n = io::copy(&mut r, &mut w).unwrap();
            // Reading on after end-of-file gives end-of-file again.
            let mut b = [0u8; 1];
            assert_eq!((&server).read(&mut b).unwrap(), 0);
            n
        });
        let msg = util::random_bytes(7, 100_000);
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // The message is bigger than the socket buffers may take at once, so
        // write from a task while this one reads.
        let client = std::rc::Rc::new(client);
        let writer = {
            let (c, m) = (client.clone(), msg.clone());
            spawn(move || {
                (&*c).write_all(&m).unwrap();
                c.shutdown(Shutdown::Write).unwrap();
                // Writing after shutting down the write side fails.
                let err = (&*c).write_all(b"late").unwrap_err();
                assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
            })
        };
        let mut back = Vec::new();
        (&*client).read_to_end(&mut back).unwrap();
        writer.join().unwrap();
        assert!(back == msg, "the echo differs");
        assert_eq!(server.join().unwrap(), 100_000);
        let mut b = [0u8; 8];
        for _ in 0..3 {
            assert_eq!((&*client).read(&mut b).unwrap(), 0);
        }
    });
}

/// Connecting to a port where nothing listens is `ConnectionRefused`, an
/// ordinary `io::Error`, with or without a timeout.
#[test]
fn connection_refused() {
    yieldloop::run(|| {
        let addr = dead_address();
        let err = TcpStream::connect(addr).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        let err = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        // Many at once, from many tasks.
        let tries: Vec<_> = (0..50)
            .map(|_| spawn(move || TcpStream::connect(addr).map(|_| ()).unwrap_err().kind()))
            .collect();
        for t in tries {
            assert_eq!(t.join().unwrap(), ErrorKind::ConnectionRefused);
        }
        // No address at all.
        let none: &[SocketAddr] = &[];
        let err = TcpStream::connect(none).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert_scheduler_healthy();
    });
}

/// A peer that resets the connection (SO_LINGER 0, then close) while a task
/// waits in a read gives that read an error or end-of-file, not a panic, and
/// the scheduler carries on.
#[test]
fn peer_reset_mid_read() {
    yieldloop::run(|| {
        // Reset while parked in a read, with nothing received.
        let (client, server) = socket_pair();
        let reader = spawn(move || {
            let mut b = [0u8; 64];
            (&client).read(&mut b).map(|n| n == 0)
        });
        sleep(Duration::from_millis(20));
        assert!(!reader.is_finished(), "the reader should be waiting");
        set_linger_zero(server.as_raw_fd());
        drop(server);
        match reader.join().unwrap() {
            Ok(eof) => assert!(eof, "a reset connection delivered data"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        }

        // Reset in the middle of a stream, with a plain-thread peer.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            let s = std::net::TcpStream::connect(addr).unwrap();
            (&s).write_all(&[1u8; 1000]).unwrap();
            std::thread::sleep(Duration::from_millis(30));
            set_linger_zero(s.as_raw_fd());
            drop(s);
        });
        let (conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut got = 0;
        let mut buf = [0u8; 256];
        // Bounded: at most 1000 bytes come, then the reset.
        let end = loop {
            match (&conn).read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => got += n,
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = &end {
            assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
        }
        assert!(got <= 1000);
        // Writing to a reset connection fails too.
        let err = (&conn).write_all(&[0u8; 100_000]).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
            ),
            "{err}"
        );
        peer.join().unwrap();
        assert_scheduler_healthy();
    });
}

/// `set_read_timeout` makes a read with no data fail with `TimedOut` after
/// the timeout (never before); data before the deadline is read normally,
/// and the connection works on after a timeout.
#[test]
fn read_timeout() {
    yieldloop::run(|| {
        let (client, server) = socket_pair();
        assert_eq!(client.read_timeout().unwrap(), None);
        let t = Duration::from_millis(50);
        client.set_read_timeout(Some(t)).unwrap();
        assert_eq!(client.read_timeout().unwrap(), Some(t));

        let mut buf = [0u8; 16];
        for _ in 0..3 {
            let start = Instant::now();
            let err = (&client).read(&mut buf).unwrap_err();
            let took = start.elapsed();
            assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
            assert!(took >= t, "timed out early, after {took:?}");
            assert!(took < t + LATE, "timed out late, after {took:?}");
        }

        // Data within the timeout is read normally.
        let writer = spawn(move || {
            sleep(Duration::from_millis(10));
            (&server).write_all(b"in time").unwrap();
            server
        });
        let n = (&client).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"in time");
        let server = writer.join().unwrap();

        // Clearing the timeout: the read waits as long as it takes.
        client.set_read_timeout(None).unwrap();
        let writer = spawn(move || {
            sleep(Duration::from_millis(120));
            (&server).write_all(b"late").unwrap();
            server
        });
        let n = (&client).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"late");
        let server = writer.join().unwrap();

        // The largest timeout is as good as none, and does not overflow.
        client.set_read_timeout(Some(Duration::MAX)).unwrap();
        let writer = spawn(move || {
            sleep(Duration::from_millis(10));
            (&server).write_all(b"max").unwrap();
            server
        });
        let n = (&client).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"max");
        drop(writer.join().unwrap());
        assert_scheduler_healthy();
    });
}

/// `set_write_timeout` makes a write to a peer that never reads fail with
/// `TimedOut` once the socket buffers are full.
#[test]
fn write_timeout() {
    yieldloop::run(|| {
        let (client, server) = socket_pair();
        let t = Duration::from_millis(100);
        client.set_write_timeout(Some(t)).unwrap();
        assert_eq!(client.write_timeout().unwrap(), Some(t));
        let chunk = vec![0u8; 64 * 1024];
        let mut written = 0usize;
        let mut timed_out = None;
        // The loopback buffers take a few MiB at most; 256 MiB is a bound.
        for _ in 0..4096 {
            let start = Instant::now();
            match (&client).write(&chunk) {
                Ok(n) => written += n,
                Err(e) => {
                    timed_out = Some((e, start.elapsed()));
                    break;
                }
            }
        }
        let (err, took) = timed_out.expect("the writes never timed out");
        assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
        assert!(took >= t, "timed out early, after {took:?}");
        assert!(took < t + LATE, "timed out late, after {took:?}");
        assert!(written > 0);

        // Once the peer reads, writing works again.
        client.set_write_timeout(None).unwrap();
        let drain = spawn(move || {
            let mut sink = Vec::new();
            (&server).read_to_end(&mut sink).unwrap();
            sink.len()
        });
        (&client).write_all(b"more").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        assert_eq!(drain.join().unwrap(), written + 4);
    });
}

/// `connect_timeout` connects like `connect`, and the timeout is for the
/// connect only.
#[test]
fn connect_timeout() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        assert_eq!(c.peer_addr().unwrap(), addr);
        let huge = TcpStream::connect_timeout(&addr, Duration::MAX).unwrap();
        assert_eq!(huge.peer_addr().unwrap(), addr);
        // The timeout was only for the connect: a read waits without one.
        assert_eq!(c.read_timeout().unwrap(), None);
        assert_eq!(c.write_timeout().unwrap(), None);
    });
}

/// `connect_timeout` gives up with `TimedOut` when the handshake does not
/// finish in time: a Linux listener whose backlog is full drops new
/// handshakes. (FreeBSD's SYN cache completes them regardless, so there is
/// no such listener to test against there.)
#[cfg(target_os = "linux")]
#[test]
fn connect_timeout_gives_up_in_time() {
    yieldloop::run(|| {
        // A listener with a backlog of 0, never accepting.
        let full = listen_with_backlog_zero();
        let full_addr = full.local_addr().unwrap();
        let t = Duration::from_millis(150);
        let mut kept = Vec::new();
        let mut timed_out = None;
        for _ in 0..16 {
            let start = Instant::now();
            match TcpStream::connect_timeout(&full_addr, t) {
                Ok(s) => kept.push(s),
                Err(e) => {
                    timed_out = Some((e, start.elapsed()));
                    break;
                }
            }
        }
        let (err, took) = timed_out.expect("no connect timed out against a full backlog");
        assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
        assert!(took >= t, "timed out early, after {took:?}");
        assert!(took < t + LATE, "timed out late, after {took:?}");
        drop(kept);
        assert_scheduler_healthy();
    });
}

/// A listening socket with a backlog of 0: once one connection waits in its
/// queue, the kernel drops further handshakes.
#[cfg(target_os = "linux")]
fn listen_with_backlog_zero() -> std::net::TcpListener {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns; the
    // address is a valid `sockaddr_in` of the size passed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", io::Error::last_os_error());
        let listener = std::net::TcpListener::from_raw_fd(fd);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let r = libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "bind: {}", io::Error::last_os_error());
        let r = libc::listen(fd, 0);
        assert_eq!(r, 0, "listen: {}", io::Error::last_os_error());
        listener
    }
}

/// A zero timeout is refused with `InvalidInput`, as std does, for reads,
/// writes and connects.
#[test]
fn zero_timeout_is_invalid_input() {
    yieldloop::run(|| {
        let (client, _server) = socket_pair();
        let err = client.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let err = client.set_write_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        // The refused setting changed nothing.
        assert_eq!(client.read_timeout().unwrap(), None);
        assert_eq!(client.write_timeout().unwrap(), None);

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let err = TcpStream::connect_timeout(&addr, Duration::ZERO).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    });
}

/// Sockets cannot be made outside `run`; trying gives an `Unsupported`
/// `io::Error`, not a panic.
#[test]
fn sockets_outside_run_are_unsupported() {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();

    let err = TcpListener::bind("127.0.0.1:0").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let err = TcpStream::connect(addr).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let err = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let err = TcpListener::from_std(std_listener.try_clone().unwrap()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let plain = std::net::TcpStream::connect(other.local_addr().unwrap()).unwrap();
    let err = TcpStream::from_std(plain).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("run"), "unhelpful message: {err}");

    // The same calls work inside run.
    yieldloop::run(move || {
        let l = TcpListener::from_std(std_listener).unwrap();
        let c = TcpStream::connect(addr).unwrap();
        // Skip what the failed calls above may have left in the backlog
        // (see `connect_outside_run_does_not_reach_the_peer`).
        let me = c.local_addr().unwrap();
        let s = (0..5)
            .map(|_| l.accept().unwrap())
            .find(|(_, peer)| *peer == me)
            .expect("our connection was accepted")
            .0;
        (&c).write_all(b"ok").unwrap();
        let mut b = [0u8; 2];
        (&s).read_exact(&mut b).unwrap();
        assert_eq!(&b, b"ok");
    });
}

/// A connect outside `run` fails before it starts: no handshake reaches
/// the peer, so the peer sees no connection at all.
#[test]
fn connect_outside_run_does_not_reach_the_peer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let err = TcpStream::connect(addr).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let err = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    // Give a handshake, had one been started, time to land in the backlog.
    std::thread::sleep(Duration::from_millis(50));
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => panic!("accept: {e}"),
        Ok((_, peer)) => panic!(
            "a connect that failed with Unsupported still reached the peer \
             (a connection from {peer} was waiting to be accepted)"
        ),
    }
}

/// A zero connect timeout is refused before anything is sent: the peer
/// sees no connection, as with std's `connect_timeout`.
#[test]
fn connect_timeout_zero_does_not_reach_the_peer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    yieldloop::run(move || {
        let err = TcpStream::connect_timeout(&addr, Duration::ZERO).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        sleep(Duration::from_millis(50));
    });
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => panic!("accept: {e}"),
        Ok((_, peer)) => panic!(
            "connect_timeout(.., ZERO) failed with InvalidInput but still \
             connected (a connection from {peer} was waiting to be accepted)"
        ),
    }
}

/// A listener kept from a finished `run` and used in a later one never
/// takes the connections of another listener of the later run: an I/O id
/// of another scheduler must be recognised, not mistaken for a live one.
#[test]
fn listener_from_finished_run_does_not_steal_connections() {
    let old = yieldloop::run(|| TcpListener::bind("127.0.0.1:0").unwrap());
    let old_addr = old.local_addr().unwrap();
    yieldloop::run(move || {
        let new = TcpListener::bind("127.0.0.1:0").unwrap();
        let new_addr = new.local_addr().unwrap();
        // The old listener may fail or wait, but only for its own clients.
        let stray = spawn(move || {
            old.accept()
                .map(|(s, _)| s.local_addr().unwrap())
                .map_err(|e| e.kind())
        });
        yield_now();
        let rightful = spawn(move || new.accept().map(|(s, _)| s.local_addr().unwrap()));
        yield_now();
        let _client = TcpStream::connect(new_addr).unwrap();
        util::wait_until(Duration::from_secs(2), || rightful.is_finished());
        if stray.is_finished() {
            if let Ok(local) = stray.join().unwrap() {
                assert_ne!(
                    local, new_addr,
                    "the listener on {old_addr} accepted a connection made to {new_addr}"
                );
            }
        }
        assert!(
            rightful.is_finished(),
            "the connection to {new_addr} never reached its listener"
        );
        assert_eq!(rightful.join().unwrap().unwrap(), new_addr);
    });
}

/// A stream kept from a finished `run` and read in a later one either gets
/// its data or fails at once; it never waits on another socket's readiness
/// (which would leave it deaf to its own data until the timeout).
#[test]
fn stream_from_finished_run_does_not_wait_on_another_socket() {
    let (old_client, old_server) = yieldloop::run(socket_pair);
    yieldloop::run(move || {
        // New sockets take the table slots the old ones had.
        let (_new_client, _new_server) = socket_pair();
        old_client
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let writer = spawn(move || {
            sleep(Duration::from_millis(20));
            // Writing to a socket with room never waits.
            (&old_server).write_all(b"data").unwrap();
            old_server
        });
        let start = Instant::now();
        let mut buf = [0u8; 8];
        let r = (&old_client).read(&mut buf);
        let took = start.elapsed();
        match r {
            Ok(n) => assert_eq!(&buf[..n], b"data"),
            Err(e) => assert_ne!(
                e.kind(),
                ErrorKind::TimedOut,
                "the read waited {took:?} for readiness of another socket \
                 and missed its own data"
            ),
        }
        drop(writer.join().unwrap());
    });
}
