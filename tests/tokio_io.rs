//! `tokio::io::AsyncRead`/`AsyncWrite` on yieldloop's reactor (feature
//! `tokio`): tokio-style async code, with no tokio runtime anywhere,
//! driven by `block_on` inside a task while the other tasks keep running;
//! `PausingIo` over a pipe; split halves in two futures; reads into
//! uninitialised buffers; polls outside the run that made the socket.

mod util;

use std::cell::Cell;
use std::future::poll_fn;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use yieldloop::io::PausingIo;
use yieldloop::net::{TcpListener, TcpStream, UnixStream};
use yieldloop::{block_on, sleep, spawn};

/// The blocking-style calls, kept apart from the async extension traits.
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
}

#[test]
fn a_tokio_style_echo_leaves_the_other_tasks_running() {
    util::within(|| {
        yieldloop::run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(move || {
                let (conn, _) = listener.accept().unwrap();
                let buf: [u8; 5] = blocking::read_exact(&conn);
                sleep(Duration::from_millis(200));
                blocking::write_all(&conn, &buf);
            });
            let stop = Rc::new(Cell::new(false));
            let ticks = Rc::new(Cell::new(0u32));
            let (s, t) = (stop.clone(), ticks.clone());
            spawn(move || {
                while !s.get() && t.get() < 10_000 {
                    sleep(Duration::from_millis(1));
                    t.set(t.get() + 1);
                }
            });
            let mut stream = TcpStream::connect(addr).unwrap();
            let start = Instant::now();
            let before = ticks.get();
            let reply = block_on(async {
                stream.write_all(b"tokio").await?;
                let mut buf = [0u8; 5];
                stream.read_exact(&mut buf).await?;
                Ok::<_, std::io::Error>(buf)
            })
            .unwrap();
            let waited = start.elapsed();
            let ticked = ticks.get() - before;
            stop.set(true);
            server.join().unwrap();
            assert_eq!(&reply, b"tokio");
            assert!(waited >= Duration::from_millis(180), "waited {waited:?}");
            assert!(
                ticked >= 40,
                "the ticker ticked {ticked} times in {waited:?}"
            );
        });
    });
}

#[test]
fn split_halves_of_a_unix_stream_in_two_futures() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixStream::pair().unwrap();
            spawn(move || {
                std::io::copy(&mut &b, &mut &b).unwrap();
            });
            let data = util::random_bytes(11, 2 << 20);
            let (written, echoed) = block_on(async {
                let (mut r, mut w) = (&a, &a);
                let write = async {
                    w.write_all(&data).await?;
                    // The inherent `shutdown(how)` would be picked first.
                    AsyncWriteExt::shutdown(&mut w).await?;
                    Ok::<_, std::io::Error>(data.len())
                };
                let read = async {
                    let mut back = Vec::new();
                    r.read_to_end(&mut back).await?;
                    Ok::<_, std::io::Error>(back)
                };
                tokio::join!(write, read)
            });
            assert_eq!(written.unwrap(), data.len());
            assert!(echoed.unwrap() == data, "the echo differs");
        });
    });
}

#[test]
fn pausing_io_over_a_pipe_with_tokio_traits() {
    util::within(|| {
        yieldloop::run(|| {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors `pipe` writes.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: just opened, owned by nothing else.
            let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let mut rx = PausingIo::new(std::fs::File::from(rx)).unwrap();
            let mut tx = PausingIo::new(std::fs::File::from(tx)).unwrap();
            // More than a pipe holds (64 KiB): the writer waits for room.
            let data = util::random_bytes(3, 1 << 20);
            let expected = data.clone();
            let writer = yieldloop::spawn_future(async move {
                tx.write_all(&data).await.unwrap();
            });
            let mut got = Vec::new();
            block_on(rx.read_to_end(&mut got)).unwrap();
            writer.join().unwrap();
            assert!(got == expected, "the pipe's data differs");
        });
    });
}

/// A poll that finds nothing to read leaves a fresh, uninitialised
/// `ReadBuf` as it was (a codec hands one over its whole spare capacity on
/// every poll), and a read fills what arrived: a socket initialises no more
/// of the buffer than that, a `PausingIo` over a pipe (its `Read` may look
/// at the buffer) zeroes the rest first.
#[test]
fn reads_into_uninitialised_buffers() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = UnixStream::pair().unwrap();
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors `pipe` writes.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: just opened, owned by nothing else.
            let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let mut rx = PausingIo::new(std::fs::File::from(rx)).unwrap();
            let tx = std::fs::File::from(tx);
            let mut store = [MaybeUninit::<u8>::uninit(); 4096];
            block_on(poll_fn(|cx| {
                // The socket tries a `recv`, which writes nothing.
                for _ in 0..2 {
                    let mut buf = ReadBuf::uninit(&mut store);
                    assert!(Pin::new(&mut &a).poll_read(cx, &mut buf).is_pending());
                    assert_eq!(buf.initialized().len(), 0);
                }
                // The pipe's first try zeroes the buffer for its `read`;
                // the poll after it, with no event since, does not try.
                let mut buf = ReadBuf::uninit(&mut store);
                assert!(Pin::new(&mut rx).poll_read(cx, &mut buf).is_pending());
                let mut buf = ReadBuf::uninit(&mut store);
                assert!(Pin::new(&mut rx).poll_read(cx, &mut buf).is_pending());
                assert_eq!(buf.initialized().len(), 0);
                Poll::Ready(())
            }));
            blocking::write_all(&b, b"hello");
            blocking::write_all(&tx, b"pipe");
            let mut buf = ReadBuf::uninit(&mut store);
            block_on(poll_fn(|cx| Pin::new(&mut &a).poll_read(cx, &mut buf))).unwrap();
            assert_eq!(buf.filled(), b"hello");
            assert_eq!(buf.initialized().len(), 5);
            let mut buf = ReadBuf::uninit(&mut store);
            block_on(poll_fn(|cx| Pin::new(&mut rx).poll_read(cx, &mut buf))).unwrap();
            assert_eq!(buf.filled(), b"pipe");
            assert_eq!(buf.initialized().len(), 4096);
        });
    });
}

#[test]
fn polls_outside_the_run_that_made_the_socket_are_errors() {
    util::within(|| {
        let (a, _b) = yieldloop::run(|| UnixStream::pair().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut buf = [0u8; 4];
        let err = rt.block_on((&a).read(&mut buf)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
        let err = rt.block_on((&a).write_all(b"x")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
    });
}
