//! `futures_io::AsyncRead`/`AsyncWrite` on yieldloop's reactor (feature
//! `futures-io`): async code driven by `block_on` inside a task, while the
//! other tasks of the thread keep running; `PausingIo` over a socket2
//! socket and a pipe; one source used by a future and a task at once; a
//! source dropped while a waker is filed; and polls where no scheduler can
//! serve them, which fail with an error.

mod util;

use std::cell::Cell;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use futures::io::{AsyncReadExt, AsyncWriteExt};
use yieldloop::io::PausingIo;
use yieldloop::net::{TcpListener, TcpStream, UnixStream};
use yieldloop::{block_on, sleep, spawn};

/// The blocking-style calls, kept apart: with `AsyncReadExt` in scope
/// too, a method call on a socket would be ambiguous.
mod blocking {
    use std::io::{Read, Write};

    pub fn read_exact<const N: usize>(mut r: impl Read) -> [u8; N] {
        let mut buf = [0u8; N];
        r.read_exact(&mut buf).unwrap();
        buf
    }

    pub fn write_all(mut w: impl Write, data: &[u8]) {
        w.write_all(data).unwrap();
    }

    pub fn read(mut r: impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
        r.read(buf)
    }
}

/// Counts its wakes.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Spawns a task that ticks every millisecond until `stop` is set (or a
/// bound of 10,000 ticks); returns the tick count it keeps.
fn ticker(stop: Rc<Cell<bool>>) -> Rc<Cell<u32>> {
    let ticks = Rc::new(Cell::new(0u32));
    let t = ticks.clone();
    spawn(move || {
        while !stop.get() && t.get() < 10_000 {
            sleep(Duration::from_millis(1));
            t.set(t.get() + 1);
        }
    });
    ticks
}

/// A pipe from `libc::pipe`, as `(read end, write end)`.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: just opened, owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[test]
fn an_async_echo_leaves_the_other_tasks_running() {
    util::within(|| {
        yieldloop::run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            // The server answers only after 200 ms: the async read waits
            // that long, and the ticker must go on meanwhile.
            let server = spawn(move || {
                let (conn, _) = listener.accept().unwrap();
                let buf: [u8; 5] = blocking::read_exact(&conn);
                sleep(Duration::from_millis(200));
                blocking::write_all(&conn, &buf);
            });
            let stop = Rc::new(Cell::new(false));
            let ticks = ticker(stop.clone());
            let mut stream = TcpStream::connect(addr).unwrap();
            let start = Instant::now();
            let before = ticks.get();
            let reply = block_on(async {
                stream.write_all(b"hello").await?;
                let mut buf = [0u8; 5];
                stream.read_exact(&mut buf).await?;
                Ok::<_, std::io::Error>(buf)
            })
            .unwrap();
            let waited = start.elapsed();
            let ticked = ticks.get() - before;
            stop.set(true);
            server.join().unwrap();
            assert_eq!(&reply, b"hello");
            assert!(waited >= Duration::from_millis(180), "waited {waited:?}");
            // About 200 ticks of 1 ms; a frozen loop would give none.
            assert!(
                ticked >= 40,
                "the ticker ticked {ticked} times in {waited:?}"
            );
        });
    });
}

#[test]
fn shared_references_read_and_write_in_two_futures_at_once() {
    util::within(|| {
        yieldloop::run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            // A blocking-style echo on the far side.
            spawn(move || {
                let (conn, _) = listener.accept().unwrap();
                std::io::copy(&mut &conn, &mut &conn).unwrap();
            });
            let stream = TcpStream::connect(addr).unwrap();
            // More than the socket buffers hold: the writer must wait for
            // write readiness while the reader drains the echo.
            let data = util::random_bytes(7, 4 << 20);
            let (written, echoed) = block_on(async {
                let (mut r, mut w) = (&stream, &stream);
                let write = async {
                    w.write_all(&data).await?;
                    w.close().await?;
                    Ok::<_, std::io::Error>(data.len())
                };
                let read = async {
                    let mut back = Vec::new();
                    r.read_to_end(&mut back).await?;
                    Ok::<_, std::io::Error>(back)
                };
                futures::join!(write, read)
            });
            assert_eq!(written.unwrap(), data.len());
            assert!(echoed.unwrap() == data, "the echo differs");
        });
    });
}

#[test]
fn pausing_io_over_a_socket2_socket_and_a_pipe() {
    util::within(|| {
        yieldloop::run(|| {
            // A socket2 socket, connected before it is wrapped.
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(move || {
                let (conn, _) = listener.accept().unwrap();
                sleep(Duration::from_millis(30));
                blocking::write_all(&conn, b"from server");
                blocking::read_exact::<2>(&conn)
            });
            let socket =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            socket.connect(&addr.into()).unwrap();
            let mut socket = PausingIo::new(socket).unwrap();
            let mut buf = [0u8; 11];
            block_on(socket.read_exact(&mut buf)).unwrap();
            assert_eq!(&buf, b"from server");
            block_on(socket.write_all(b"ok")).unwrap();
            assert_eq!(&server.join().unwrap(), b"ok");

            // A pipe, the read end as a plain `OwnedFd` read through the
            // closure, the write end as a `File` written by another task.
            let (rx, tx) = pipe();
            let rx = PausingIo::new(std::fs::File::from(rx)).unwrap();
            let mut tx = PausingIo::new(std::fs::File::from(tx)).unwrap();
            let writer = spawn(move || {
                sleep(Duration::from_millis(30));
                block_on(tx.write_all(b"through the pipe")).unwrap();
                // Dropping the write end: the reader sees the end.
            });
            let mut got = Vec::new();
            block_on((&rx).read_to_end(&mut got)).unwrap();
            writer.join().unwrap();
            assert_eq!(got, b"through the pipe");
            // Handed back, the descriptor is no longer registered: a new
            // registration of the same descriptor succeeds.
            let file = rx.into_inner();
            let again = PausingIo::new(file).unwrap();
            drop(again);
        });
    });
}

#[test]
fn a_future_and_a_task_wait_on_one_source() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixStream::pair().unwrap();
            let a = Rc::new(a);
            // A task reading in blocking style …
            let a1 = a.clone();
            let blocking = spawn(move || blocking::read_exact::<4>(&*a1));
            // … and a future reading the same socket, in another task.
            let a2 = a.clone();
            let future = spawn(move || {
                let mut buf = [0u8; 4];
                block_on((&*a2).read_exact(&mut buf)).unwrap();
                buf
            });
            // Both wait now; each message goes to one of them, and the one
            // that finds nothing after the first must wait again.
            sleep(Duration::from_millis(20));
            blocking::write_all(&b, b"AAAA");
            sleep(Duration::from_millis(50));
            blocking::write_all(&b, b"BBBB");
            let mut got = [blocking.join().unwrap(), future.join().unwrap()];
            got.sort();
            assert_eq!(got, [*b"AAAA", *b"BBBB"]);
        });
    });
}

#[test]
fn dropping_a_source_wakes_the_waker_filed_on_it() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
            let a = PausingIo::new(a).unwrap();
            let counter = Arc::new(CountingWaker::default());
            let waker = Waker::from(counter.clone());
            let mut cx = Context::from_waker(&waker);
            // Nothing to read: the read says WouldBlock and files the waker.
            let polled = a.poll_read_with(&mut cx, |s| blocking::read(s, &mut [0u8; 8]));
            assert!(polled.is_pending());
            assert_eq!(counter.0.load(Ordering::SeqCst), 0);
            drop(a);
            assert_eq!(counter.0.load(Ordering::SeqCst), 1, "not woken on drop");

            // A future owning its socket, cancelled while it waits: the
            // socket goes with the future, its waker filed.
            let (c, d) = UnixStream::pair().unwrap();
            let reader = yieldloop::spawn_future(async move {
                let mut buf = [0u8; 8];
                (&c).read(&mut buf).await
            });
            sleep(Duration::from_millis(10));
            reader.cancel();
            assert!(reader.join().unwrap_err().is_cancelled());
            drop(d);
            // The loop goes on, and new sockets work.
            let (e, f) = UnixStream::pair().unwrap();
            blocking::write_all(&e, b"fine");
            let mut buf = [0u8; 4];
            block_on((&f).read_exact(&mut buf)).unwrap();
            assert_eq!(&buf, b"fine");
        });
    });
}

#[test]
fn polls_outside_the_run_that_made_the_socket_are_errors() {
    util::within(|| {
        let (a, b) = yieldloop::run(|| UnixStream::pair().unwrap());
        // After `run` returned: no scheduler to wait with.
        let mut buf = [0u8; 4];
        let err = futures::executor::block_on((&a).read(&mut buf)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
        let err = futures::executor::block_on((&b).write_all(b"x")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
        // In another run: the registration belongs to the first one.
        let err = yieldloop::run(move || {
            let mut buf = [0u8; 4];
            block_on((&a).read(&mut buf)).unwrap_err()
        });
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
    });
}

/// A short `AsyncRead` has emptied the socket, and the next poll files its
/// waker without trying the read: data and the end of the stream that
/// arrive together must still be seen (the read returning the data comes
/// back short while the end is pending, with no new event to announce it),
/// with the event collected while the task sleeps and while it blocks its
/// thread.
#[test]
fn async_end_of_stream_after_a_short_read_is_seen() {
    for block_thread in [false, true] {
        util::within(move || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let peer = util::send_and_shut(l, b"bye");
            yieldloop::run(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                if block_thread {
                    std::thread::sleep(Duration::from_millis(100));
                } else {
                    sleep(Duration::from_millis(100));
                }
                block_on(async {
                    let mut buf = [0u8; 64];
                    let mut got = Vec::new();
                    while got.len() < 3 {
                        let n = s.read(&mut buf).await.unwrap();
                        assert!(n > 0, "end of stream before the data");
                        got.extend_from_slice(&buf[..n]);
                    }
                    assert_eq!(got, b"bye");
                    assert_eq!(s.read(&mut buf).await.unwrap(), 0, "end of stream expected");
                });
            });
            peer.join().unwrap();
        });
    }
}

/// Random chunks with random pauses against random buffer sizes, read by
/// `AsyncRead` (most reads short, so most polls skip the read bound to
/// fail), with the task pausing, blocking and yielding between reads: the
/// stream arrives whole and in order.
#[test]
fn async_random_chunks_arrive_whole() {
    for seed in 1..=3u64 {
        util::within(move || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let mut rng = util::XorShift::new(seed);
            let data = rng.bytes(200_000);
            let peer = util::send_in_random_chunks(l, seed, data.clone());
            let got = yieldloop::run(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let mut rng = util::XorShift::new(seed ^ 0x1234);
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                loop {
                    let len = rng.range(1, 4096) as usize;
                    let n = block_on(s.read(&mut buf[..len])).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    match rng.below(6) {
                        0 => yieldloop::yield_now(),
                        1 => sleep(Duration::from_micros(rng.below(500))),
                        2 => std::thread::sleep(Duration::from_micros(rng.below(500))),
                        _ => {}
                    }
                }
                got
            });
            peer.join().unwrap();
            assert!(got == data, "seed {seed}: stream differs");
        });
    }
}
