//! `UnixDatagram`: round trips between socket paths, pairs keeping message
//! boundaries, waits that pause only their task, sends to full queues (in
//! time and without spinning), timeouts, truncation, shutdown and
//! cancellation.

mod util;

use std::cell::Cell;
use std::io::ErrorKind;
use std::net::Shutdown;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::{within, TempDir, XorShift};
use yieldloop::net::UnixDatagram;

/// Fills the queue of the socket bound at `path` from std sockets, a
/// fresh one whenever one's own send buffer is full, until even a fresh
/// socket is refused: then the queue itself is full. Returns the sockets
/// (keep them until the queue is read) and how many datagrams `b"filler"`
/// they queued.
fn fill_queue(path: &Path) -> (Vec<std::os::unix::net::UnixDatagram>, u32) {
    let mut fillers = Vec::new();
    let mut filled = 0u32;
    for _ in 0..256 {
        let f = std::os::unix::net::UnixDatagram::unbound().unwrap();
        f.set_nonblocking(true).unwrap();
        for sent in 0..100_000 {
            match f.send_to(b"filler", path) {
                Ok(_) => filled += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock && sent == 0 => {
                    assert!(filled > 0);
                    return (fillers, filled);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling: {e}"),
            }
        }
        fillers.push(f);
    }
    panic!("the queue took {filled} datagrams and was not full yet");
}

/// The most CPU time a task waiting to send may use over 300 ms. Generous:
/// a busy loop would use all of it.
const IDLE_CPU: Duration = Duration::from_millis(50);

/// Two sockets bound to paths exchange datagrams with `send_to` and
/// `recv_from`; each sees the other's path as the sender, and the socket
/// files are gone with the directory.
#[test]
fn send_to_and_recv_from_between_bound_sockets() {
    let dir = TempDir::new("udg-round-trip");
    let (a_path, b_path) = (dir.path("a.sock"), dir.path("b.sock"));
    let (ap, bp) = (a_path.clone(), b_path.clone());
    within(move || {
        yieldloop::run(move || {
            let a = UnixDatagram::bind(&ap).unwrap();
            let b = UnixDatagram::bind(&bp).unwrap();
            assert_eq!(a.local_addr().unwrap().as_pathname(), Some(&*ap));
            assert!(a.peer_addr().is_err(), "not connected");
            let debug = format!("{a:?}");
            assert!(debug.starts_with("UnixDatagram"), "{debug}");
            b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let echo = yieldloop::spawn(move || {
                let mut buf = [0u8; 256];
                for _ in 0..20 {
                    let (n, from) = b.recv_from(&mut buf).unwrap();
                    let back = from.as_pathname().expect("the sender is bound").to_owned();
                    let reply = buf[..n].to_ascii_uppercase();
                    assert_eq!(b.send_to(&reply, back).unwrap(), n);
                }
            });
            let mut buf = [0u8; 256];
            for i in 0..20 {
                let msg = format!("datagram {i}");
                assert_eq!(a.send_to(msg.as_bytes(), &bp).unwrap(), msg.len());
                let (n, from) = a.recv_from(&mut buf).unwrap();
                assert_eq!(from.as_pathname(), Some(&*bp));
                assert_eq!(&buf[..n], msg.to_ascii_uppercase().as_bytes());
            }
            echo.join().unwrap();
        });
    });
    // Like std, the socket files outlive the sockets until removed.
    assert!(a_path.exists() && b_path.exists());
    drop(dir);
    assert!(!a_path.exists());
}

/// Binding an existing path, connecting to a missing one and sending
/// without a peer fail with the system's errors; `connect` fixes the peer
/// for `send` and `recv`, and an unbound socket has an unnamed address.
#[test]
fn connect_bind_errors_and_addresses() {
    let dir = TempDir::new("udg-connect");
    let (server, missing) = (dir.path("server.sock"), dir.path("missing.sock"));
    within(move || {
        yieldloop::run(move || {
            let s = UnixDatagram::bind(&server).unwrap();
            let err = UnixDatagram::bind(&server).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::AddrInUse);
            let c = UnixDatagram::unbound().unwrap();
            assert!(c.local_addr().unwrap().is_unnamed());
            let err = c.connect(&missing).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotFound);
            let err = c.send(b"nowhere").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotConnected);
            c.connect(&server).unwrap();
            assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(&*server));
            c.send(b"hello").unwrap();
            let mut buf = [0u8; 16];
            let (n, from) = s.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"hello");
            assert!(from.is_unnamed(), "an unbound sender has no name");
            assert!(c.take_error().unwrap().is_none());
        });
    });
}

/// Two tasks exchange 2000 datagrams of random lengths (empty ones
/// included) in each direction over a pair; each receive returns exactly
/// one whole datagram, in order. The receive queue holds only a few
/// datagrams, so the senders wait for room again and again.
#[test]
fn pair_keeps_message_boundaries() {
    const COUNT: usize = 2000;
    within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixDatagram::pair().unwrap();
            let (a, b) = (Rc::new(a), Rc::new(b));
            let mut tasks = Vec::new();
            for (seed, tx, rx) in [(1, a.clone(), b.clone()), (2, b, a)] {
                tasks.push(yieldloop::spawn(move || {
                    let mut rng = XorShift::new(seed);
                    for i in 0..COUNT {
                        let len = rng.below(300) as usize;
                        let mut msg = (i as u32).to_le_bytes().to_vec();
                        msg.extend(rng.bytes(len));
                        assert_eq!(tx.send(&msg[..len]).unwrap(), len);
                    }
                }));
                tasks.push(yieldloop::spawn(move || {
                    rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let mut rng = XorShift::new(seed);
                    let mut buf = [0u8; 1024];
                    for i in 0..COUNT {
                        let len = rng.below(300) as usize;
                        let mut msg = (i as u32).to_le_bytes().to_vec();
                        msg.extend(rng.bytes(len));
                        let n = rx.recv(&mut buf).unwrap();
                        assert_eq!(&buf[..n], &msg[..len], "datagram {i}");
                    }
                }));
            }
            for t in tasks {
                t.join().unwrap();
            }
        });
    });
}

/// `send_to` a receiver whose queue is full of other sockets' datagrams:
/// the kernel refuses the datagram and, as none of the sender's own
/// datagrams leaves the queue, never signals the sender. It still gets
/// all its datagrams through, in order and in time, once the receiver
/// reads.
#[test]
fn send_to_a_queue_full_of_others_datagrams_waits_for_room() {
    const COUNT: u32 = 200;
    let dir = TempDir::new("udg-full");
    let path = dir.path("slow.sock");
    within(move || {
        let start = Instant::now();
        yieldloop::run(move || {
            let rx = UnixDatagram::bind(&path).unwrap();
            let (fillers, filled) = fill_queue(&path);
            let sender = yieldloop::spawn(move || {
                let tx = UnixDatagram::unbound().unwrap();
                tx.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
                for i in 0..COUNT {
                    tx.send_to(&i.to_le_bytes(), &path).unwrap();
                }
            });
            yieldloop::sleep(Duration::from_millis(30));
            assert!(!sender.is_finished(), "the queue should be full");
            rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = [0u8; 8];
            for _ in 0..filled {
                let n = rx.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], b"filler");
            }
            for i in 0..COUNT {
                let n = rx.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &i.to_le_bytes());
            }
            sender.join().unwrap();
            drop(fillers);
        });
        assert!(start.elapsed() < Duration::from_secs(10));
    });
}

/// A task receiving on an empty socket pauses only itself: a counting task
/// keeps running meanwhile, and the datagram it finally sends arrives.
#[test]
fn empty_recv_pauses_only_its_task() {
    within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixDatagram::pair().unwrap();
            let count = Rc::new(Cell::new(0u32));
            let c = count.clone();
            let counter = yieldloop::spawn(move || {
                for _ in 0..50 {
                    c.set(c.get() + 1);
                    yieldloop::sleep(Duration::from_millis(1));
                }
                b.send(b"done counting").unwrap();
            });
            let mut buf = [0u8; 32];
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"done counting");
            assert_eq!(count.get(), 50);
            counter.join().unwrap();
        });
    });
}

/// `from_std` makes the socket non-blocking: a receive on it pauses the
/// task instead of blocking the thread, so the task that sends can run.
#[test]
fn from_std_does_not_block_the_thread() {
    within(|| {
        yieldloop::run(|| {
            let (a, b) = std::os::unix::net::UnixDatagram::pair().unwrap();
            let a = UnixDatagram::from_std(a).unwrap();
            let sender = yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_millis(10));
                b.send(b"from std").unwrap();
            });
            let mut buf = [0u8; 16];
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"from std");
            sender.join().unwrap();
        });
    });
}

/// A receive with a read timeout fails with `TimedOut`, never early, and
/// other tasks run meanwhile; zero timeouts are refused as in std.
#[test]
fn recv_times_out() {
    within(|| {
        yieldloop::run(|| {
            let (a, _b) = UnixDatagram::pair().unwrap();
            assert_eq!(a.read_timeout().unwrap(), None);
            assert_eq!(a.write_timeout().unwrap(), None);
            a.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            a.set_write_timeout(Some(Duration::from_millis(70)))
                .unwrap();
            assert_eq!(a.read_timeout().unwrap(), Some(Duration::from_millis(50)));
            assert_eq!(a.write_timeout().unwrap(), Some(Duration::from_millis(70)));
            let other = yieldloop::spawn(|| {
                yieldloop::sleep(Duration::from_millis(10));
                "ran"
            });
            let start = Instant::now();
            let err = a.recv(&mut [0u8; 8]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            assert!(start.elapsed() >= Duration::from_millis(50));
            assert!(start.elapsed() < Duration::from_secs(5));
            assert_eq!(other.join().unwrap(), "ran");
            let start = Instant::now();
            let err = a.recv_from(&mut [0u8; 8]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            assert!(start.elapsed() >= Duration::from_millis(50));
            let zero = a.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
            assert_eq!(zero.kind(), ErrorKind::InvalidInput);
            let zero = a.set_write_timeout(Some(Duration::ZERO)).unwrap_err();
            assert_eq!(zero.kind(), ErrorKind::InvalidInput);
            a.set_read_timeout(None).unwrap();
            assert_eq!(a.read_timeout().unwrap(), None);
        });
    });
}

/// A datagram longer than the buffer is cut to fit, as with std: the
/// receive returns the buffer's length, the rest of that datagram is lost,
/// and the next receive gets the next datagram.
#[test]
fn long_datagram_is_truncated() {
    within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixDatagram::pair().unwrap();
            let long: Vec<u8> = (0..100).collect();
            a.send(&long).unwrap();
            a.send(b"next").unwrap();
            a.send(&long).unwrap();
            let mut small = [0u8; 10];
            assert_eq!(b.recv(&mut small).unwrap(), 10);
            assert_eq!(&small[..], &long[..10]);
            let mut buf = [0u8; 200];
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"next");
            let (n, from) = b.recv_from(&mut small).unwrap();
            assert_eq!((n, &small[..]), (10, &long[..10]));
            assert!(from.is_unnamed());
            // An empty buffer takes a whole datagram and keeps none of it.
            a.send(b"gone").unwrap();
            a.send(b"last").unwrap();
            assert_eq!(b.recv(&mut []).unwrap(), 0);
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"last");
        });
    });
}

/// Outside `run` every constructor fails with `Unsupported` instead of
/// panicking.
#[test]
fn outside_run_is_unsupported() {
    let dir = TempDir::new("udg-outside");
    let path = dir.path("outside.sock");
    let err = UnixDatagram::bind(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let err = UnixDatagram::unbound().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let err = UnixDatagram::pair().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let (std_a, _std_b) = std::os::unix::net::UnixDatagram::pair().unwrap();
    let err = UnixDatagram::from_std(std_a).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

/// A task cancelled while it waits in `recv` leaves nothing behind: the
/// next datagram is not swallowed for it, and other tasks receive on the
/// same socket as before.
#[test]
fn cancelled_recv_leaves_no_ghost_waiter() {
    within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixDatagram::pair().unwrap();
            let b = Rc::new(b);
            let got = Rc::new(Cell::new(false));
            let (b1, g) = (b.clone(), got.clone());
            let waiter = yieldloop::spawn(move || {
                let r = b1.recv(&mut [0u8; 16]);
                g.set(true);
                r
            });
            yieldloop::sleep(Duration::from_millis(5));
            assert!(!waiter.is_finished(), "the waiter should be receiving");
            waiter.cancel();
            assert!(waiter.join().unwrap_err().is_cancelled());
            assert!(!got.get(), "the cancelled receive never returned");

            // A datagram sent now is there for the next receiver, whether
            // the event comes before or after it starts waiting.
            a.send(b"first").unwrap();
            yieldloop::yield_now();
            let mut buf = [0u8; 16];
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"first");

            for round in 0..20u8 {
                let b2 = b.clone();
                let next = yieldloop::spawn(move || {
                    b2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut buf = [0u8; 16];
                    b2.recv(&mut buf).map(|n| buf[..n].to_vec())
                });
                yieldloop::yield_now();
                a.send(&[round]).unwrap();
                assert_eq!(next.join().unwrap().unwrap(), [round]);
            }
        });
    });
}

/// A read shutdown wakes a task waiting in `recv`, which returns 0 as a
/// blocking std socket would; datagrams queued before it are still
/// received first, and senders then get `BrokenPipe`.
#[test]
fn shutdown_read_ends_waiting_receives() {
    within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixDatagram::pair().unwrap();
            let b = Rc::new(b);
            let b1 = b.clone();
            let waiter = yieldloop::spawn(move || {
                let mut buf = [0u8; 16];
                b1.recv(&mut buf)
            });
            yieldloop::sleep(Duration::from_millis(5));
            assert!(!waiter.is_finished());
            a.send(b"queued").unwrap();
            assert_eq!(waiter.join().unwrap().unwrap(), 6);

            let b1 = b.clone();
            let waiter = yieldloop::spawn(move || b1.recv(&mut [0u8; 16]));
            yieldloop::sleep(Duration::from_millis(5));
            a.send(b"kept").unwrap();
            a.send(b"kept too").unwrap();
            let mut buf = [0u8; 16];
            b.shutdown(Shutdown::Read).unwrap();
            assert_eq!(waiter.join().unwrap().unwrap(), 4);
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"kept too");
            assert_eq!(b.recv(&mut buf).unwrap(), 0);
            let (n, from) = b.recv_from(&mut buf).unwrap();
            assert_eq!(n, 0);
            assert!(from.is_unnamed());
            let err = a.send(b"too late").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe);

            // A receiver already waiting when the read side is shut down.
            let (c, _d) = UnixDatagram::pair().unwrap();
            let c = Rc::new(c);
            let c1 = c.clone();
            let waiter = yieldloop::spawn(move || c1.recv(&mut [0u8; 16]));
            yieldloop::sleep(Duration::from_millis(5));
            assert!(!waiter.is_finished());
            c.shutdown(Shutdown::Read).unwrap();
            assert_eq!(waiter.join().unwrap().unwrap(), 0);

            let (e, _f) = UnixDatagram::pair().unwrap();
            e.shutdown(Shutdown::Write).unwrap();
            let err = e.send(b"x").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe);
        });
    });
}

/// A task waiting to send, whether its peer's queue is full (`send` on a
/// pair) or a queue full of other sockets' datagrams refuses it
/// (`send_to`), leaves the thread idle rather than trying again and again.
#[test]
fn waiting_sends_use_no_cpu() {
    let dir = TempDir::new("udg-idle");
    let path = dir.path("full.sock");
    within(move || {
        yieldloop::run(move || {
            let rx = UnixDatagram::bind(&path).unwrap();
            let (_fillers, _) = fill_queue(&path);
            let p = path.clone();
            let unconnected = yieldloop::spawn(move || {
                let tx = UnixDatagram::unbound().unwrap();
                tx.send_to(b"refused", &p).map(|_| ())
            });
            let (a, _b) = UnixDatagram::pair().unwrap();
            let connected = yieldloop::spawn(move || {
                for _ in 0..1_000_000 {
                    a.send(b"to a full peer")?;
                }
                Ok::<_, std::io::Error>(())
            });
            yieldloop::sleep(Duration::from_millis(10));
            let cpu = util::thread_cpu_time();
            yieldloop::sleep(Duration::from_millis(300));
            let used = util::thread_cpu_time() - cpu;
            assert!(!unconnected.is_finished() && !connected.is_finished());
            assert!(
                used < IDLE_CPU,
                "waiting senders used {used:?} of CPU in 300 ms"
            );
            unconnected.cancel();
            connected.cancel();
            drop(rx);
        });
    });
}

/// Sends that cannot go out fail with `TimedOut` after the write timeout,
/// never early: `send_to` a queue full of other sockets' datagrams and
/// `send` to a pair's full peer.
#[test]
fn sends_time_out_on_a_full_queue() {
    let dir = TempDir::new("udg-send-timeout");
    let path = dir.path("full.sock");
    within(move || {
        yieldloop::run(move || {
            let _rx = UnixDatagram::bind(&path).unwrap();
            let (_fillers, _) = fill_queue(&path);
            let tx = UnixDatagram::unbound().unwrap();
            tx.set_write_timeout(Some(Duration::from_millis(40)))
                .unwrap();
            let start = Instant::now();
            let err = tx.send_to(b"refused", &path).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            assert!(start.elapsed() >= Duration::from_millis(40));
            assert!(start.elapsed() < Duration::from_secs(5));

            let (a, _b) = UnixDatagram::pair().unwrap();
            a.set_write_timeout(Some(Duration::from_millis(40)))
                .unwrap();
            let mut sent = 0;
            let err = loop {
                let start = Instant::now();
                match a.send(b"to a full peer") {
                    Ok(_) => sent += 1,
                    Err(e) => break (e, start.elapsed()),
                }
                assert!(sent < 1_000_000, "the peer's queue never filled");
            };
            assert_eq!(err.0.kind(), ErrorKind::TimedOut);
            assert!(err.1 >= Duration::from_millis(40));
            assert!(err.1 < Duration::from_secs(5));
        });
    });
}
