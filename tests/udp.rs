//! `UdpSocket`: datagram round trips, connected sockets and timeouts.

use std::io::ErrorKind;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::UdpSocket;

/// A server task echoes datagrams back to their senders; several clients
/// each get their own datagrams back.
#[test]
fn echo_round_trips_with_send_to_and_recv_from() {
    yieldloop::run(|| {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let echo = yieldloop::spawn(move || {
            let mut buf = [0u8; 1500];
            // 5 clients × 20 datagrams, then stop.
            for _ in 0..100 {
                let (n, from) = server.recv_from(&mut buf).unwrap();
                server.send_to(&buf[..n], from).unwrap();
            }
        });
        let clients: Vec<_> = (0..5)
            .map(|c| {
                yieldloop::spawn(move || {
                    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
                    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut buf = [0u8; 64];
                    for i in 0..20 {
                        let msg = format!("client {c} datagram {i}");
                        assert_eq!(sock.send_to(msg.as_bytes(), addr).unwrap(), msg.len());
                        let (n, from) = sock.recv_from(&mut buf).unwrap();
                        assert_eq!(from, addr);
                        assert_eq!(&buf[..n], msg.as_bytes());
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        echo.join().unwrap();
    });
}

/// `connect` fixes the peer: `send` and `recv` then need no address, and
/// `peer_addr` reports it.
#[test]
fn connected_send_and_recv() {
    yieldloop::run(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        a.connect(b_addr).unwrap();
        b.connect(a_addr).unwrap();
        assert_eq!(a.peer_addr().unwrap(), b_addr);
        let b = Rc::new(b);
        let b2 = b.clone();
        let replier = yieldloop::spawn(move || {
            let mut buf = [0u8; 16];
            let n = b2.recv(&mut buf).unwrap();
            b2.send(&buf[..n].to_ascii_uppercase()).unwrap();
        });
        a.send(b"hello").unwrap();
        let mut buf = [0u8; 16];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"HELLO");
        replier.join().unwrap();
    });
}

/// `peek_from` leaves the datagram queued for the next receive.
#[test]
fn peek_leaves_the_datagram() {
    yieldloop::run(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(b"once", b.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 8];
        let (n, from) = b.peek_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], from), (&b"once"[..], a.local_addr().unwrap()));
        let (n, _) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"once");
    });
}

/// A receive with a read timeout fails with `TimedOut`, never early, and
/// other tasks run meanwhile.
#[test]
fn recv_times_out() {
    yieldloop::run(|| {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(sock.read_timeout().unwrap(), None);
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        assert_eq!(
            sock.read_timeout().unwrap(),
            Some(Duration::from_millis(50))
        );
        let other = yieldloop::spawn(|| {
            yieldloop::sleep(Duration::from_millis(10));
            "ran"
        });
        let start = Instant::now();
        let err = sock.recv_from(&mut [0u8; 8]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(other.join().unwrap(), "ran");
        let zero = sock.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(zero.kind(), ErrorKind::InvalidInput);
    });
}

/// A socket is not made outside a task.
#[test]
fn bind_outside_run_is_unsupported() {
    let err = UdpSocket::bind("127.0.0.1:0").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}
