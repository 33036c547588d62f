//! `tokio::io::AsyncRead`/`AsyncWrite` on yieldloop's reactor (feature
//! `tokio`): tokio-style async code, with no tokio runtime anywhere,
//! driven by `block_on` inside a task while the other tasks keep running;
//! `PausingIo` over a pipe; split halves in two futures; polls outside the
//! run that made the socket.

mod util;

use std::cell::Cell;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
