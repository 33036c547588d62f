//! `yieldloop::io::PausingIo` in blocking style: descriptors of any kind
//! waited on by a task, with timeouts, `timeout` scopes and cancellation
//! like every other wait, and clear errors where no task can wait.

mod util;

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::time::{Duration, Instant};

use yieldloop::io::PausingIo;
use yieldloop::{sleep, spawn};

#[test]
fn a_read_timeout_ends_the_wait_and_others_run_meanwhile() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, _b) = StdUnixStream::pair().unwrap();
            let a = PausingIo::new(a).unwrap();
            a.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            assert_eq!(a.read_timeout(), Some(Duration::from_millis(100)));
            let ticker = spawn(|| {
                let mut n = 0;
                while n < 50 {
                    sleep(Duration::from_millis(1));
                    n += 1;
                }
                n
            });
            let start = Instant::now();
            let err = (&a).read(&mut [0u8; 8]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
            assert!(start.elapsed() >= Duration::from_millis(90));
            // The ticker ran to its end while the read waited.
            assert!(ticker.is_finished(), "the ticker did not finish meanwhile");
            assert_eq!(ticker.join().unwrap(), 50);
            assert_eq!(
                a.set_read_timeout(Some(Duration::ZERO)).unwrap_err().kind(),
                ErrorKind::InvalidInput
            );
        });
    });
}

#[test]
fn timeout_scopes_and_cancellation_end_a_wait() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = StdUnixStream::pair().unwrap();
            let a = PausingIo::new(a).unwrap();
            let r = yieldloop::timeout(Duration::from_millis(30), || {
                a.read_with(|mut s| s.read(&mut [0u8; 4]))
            });
            assert!(r.is_err(), "the scope did not end the read: {r:?}");

            // A task waiting in `readable`, cancelled.
            let waiter = spawn(move || a.readable());
            sleep(Duration::from_millis(10));
            assert!(!waiter.is_finished());
            waiter.cancel();
            assert!(waiter.join().unwrap_err().is_cancelled());
            drop(b);
        });
    });
}

#[test]
fn writable_waits_for_room_after_a_full_buffer() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = StdUnixStream::pair().unwrap();
            let a = PausingIo::new(a).unwrap();
            let b = PausingIo::new(b).unwrap();
            // Fill the socket without pausing, until it says WouldBlock.
            let chunk = [7u8; 4096];
            let mut sent = 0usize;
            loop {
                match a.get_ref().write(&chunk) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
                assert!(sent < 64 << 20, "the socket never filled");
            }
            let reader = spawn(move || {
                sleep(Duration::from_millis(20));
                let mut buf = vec![0u8; 1 << 16];
                let mut got = 0;
                // Everything, and the five bytes written after the wait.
                while got < sent + 5 {
                    got += (&b).read(&mut buf).unwrap();
                }
                got
            });
            a.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
            a.writable().unwrap();
            (&a).write_all(b"after").unwrap();
            assert_eq!(reader.join().unwrap(), sent + 5);
        });
    });
}

#[test]
fn into_inner_hands_back_a_working_descriptor() {
    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = StdUnixStream::pair().unwrap();
            let mut a = PausingIo::new(a).unwrap();
            let id = a.io_id();
            a.write_with_mut(|s| s.write(b"x")).unwrap();
            let a = a.into_inner();
            // No longer registered: a raw wait on its old id fails.
            let r = yieldloop::raw::suspend(yieldloop::raw::Op::ReadReady(id, None));
            assert!(matches!(r, yieldloop::raw::Resume::Err(_)), "{r:?}");
            // Registered again, it works as before.
            let a = PausingIo::new(a).unwrap();
            let mut b = PausingIo::new(b).unwrap();
            let mut buf = [0u8; 1];
            b.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"x");
            (&a).write_all(b"y").unwrap();
            b.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"y");
        });
    });
}

#[test]
fn where_no_task_can_wait_the_calls_fail_cleanly() {
    util::within(|| {
        let (a, _b) = StdUnixStream::pair().unwrap();
        let err = PausingIo::new(a).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");

        // Made in a run, used after it: a read that would wait fails.
        let (a, _b) = yieldloop::run(|| {
            let (a, b) = StdUnixStream::pair().unwrap();
            (PausingIo::new(a).unwrap(), b)
        });
        let err = (&a).read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        let err = a.readable().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");

        // A regular file has no readiness to wait for.
        let file = std::fs::File::open("Cargo.toml").unwrap();
        let err = yieldloop::run(move || PausingIo::new(file).unwrap_err());
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
    });
}

/// Counts its wakes.
#[derive(Default)]
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn poll_read_ready_follows_would_block_and_events() {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    util::within(|| {
        yieldloop::run(|| {
            let (a, b) = StdUnixStream::pair().unwrap();
            let a = PausingIo::new(a).unwrap();
            let counter = Arc::new(CountingWaker::default());
            let waker = Waker::from(counter.clone());
            let mut cx = Context::from_waker(&waker);
            // At first a read is worth trying.
            assert!(matches!(a.poll_read_ready(&mut cx), Poll::Ready(Ok(()))));
            // It finds nothing: from then on, not until an event.
            let r = a.poll_read_with(&mut cx, |mut s| s.read(&mut [0u8; 8]));
            assert!(r.is_pending());
            assert!(a.poll_read_ready(&mut cx).is_pending());
            (&b).write_all(b"data").unwrap();
            // The loop polls (this task pauses) and the event wakes the waker.
            let woke = util::wait_until(Duration::from_secs(10), || {
                counter.0.load(Ordering::SeqCst) > 0
            });
            assert!(woke, "the waker was not woken by the event");
            assert!(matches!(a.poll_read_ready(&mut cx), Poll::Ready(Ok(()))));
            let mut buf = [0u8; 8];
            match a.poll_read_with(&mut cx, |mut s| s.read(&mut buf)) {
                Poll::Ready(Ok(4)) => assert_eq!(&buf[..4], b"data"),
                other => panic!("{other:?}"),
            }
            // The write side was never tried: it is ready.
            assert!(matches!(a.poll_write_ready(&mut cx), Poll::Ready(Ok(()))));
        });
    });
}
