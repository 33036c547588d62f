//! `timeout` scopes: expiry, nesting, and what runs when they fire.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::raw::{suspend, Op, Resume};
use yieldloop::{sleep, spawn, timeout, yield_now};

/// A sleep longer than the timeout is cut short, no earlier than the
/// deadline; a quick one returns its value.
#[test]
fn expires_at_the_deadline_not_before() {
    yieldloop::run(|| {
        let start = Instant::now();
        let r = timeout(Duration::from_millis(30), || sleep(Duration::from_secs(30)));
        assert!(r.is_err());
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(30), "fired early: {took:?}");
        assert!(took < Duration::from_secs(5), "fired late: {took:?}");
        assert_eq!(timeout(Duration::from_secs(5), || 7), Ok(7));
    });
}

/// An inner timeout firing does not end the outer scope, and an outer one
/// firing passes through the inner scope.
#[test]
fn nested_timeouts_stay_apart() {
    yieldloop::run(|| {
        let outer = timeout(Duration::from_secs(5), || {
            let inner = timeout(Duration::from_millis(10), || sleep(Duration::from_secs(30)));
            assert!(inner.is_err());
            sleep(Duration::from_millis(5));
            "outer finished"
        });
        assert_eq!(outer, Ok("outer finished"));

        let reached = Rc::new(Cell::new(false));
        let r2 = reached.clone();
        let outer = timeout(Duration::from_millis(20), move || {
            let inner = timeout(Duration::from_secs(30), || sleep(Duration::from_secs(30)));
            // The outer expiry unwinds through here; this never runs.
            r2.set(true);
            inner
        });
        assert!(outer.is_err());
        assert!(!reached.get());
    });
}

/// Destructors of the timed-out code run, and a socket read inside the scope
/// is abandoned cleanly.
#[test]
fn expiry_unwinds_a_socket_read() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = spawn(move || {
            let (s, _) = listener.accept().unwrap();
            // Hold the connection open without writing.
            sleep(Duration::from_millis(300));
            drop(s);
        });
        let dropped = Rc::new(Cell::new(0));
        struct Guard(Rc<Cell<u32>>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let d = dropped.clone();
        let r = timeout(Duration::from_millis(50), move || {
            let _g = Guard(d);
            let mut s = TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 16];
            s.read(&mut buf)
        });
        assert!(r.is_err());
        assert_eq!(dropped.get(), 1);
        server.join().unwrap();
    });
}

/// A join inside a scope is cut short; the joined task goes on.
#[test]
fn join_inside_timeout() {
    yieldloop::run(|| {
        let slow = spawn(|| {
            sleep(Duration::from_millis(100));
            5
        });
        let id = slow.id();
        let r = timeout(Duration::from_millis(10), move || slow.join());
        assert!(r.is_err(), "join should have timed out ({id:?})");
        let quick = spawn(|| 9);
        assert_eq!(
            timeout(Duration::from_secs(5), move || quick.join().unwrap()),
            Ok(9)
        );
    });
}

/// A raw join with a deadline is answered `TimedOut` when the deadline comes
/// first, not before it; the task it left goes on, and its end later wakes
/// nothing (a sleep after the abandoned join runs its full length).
#[test]
fn raw_join_deadline_passes_first() {
    yieldloop::run(|| {
        let slow = spawn(|| {
            sleep(Duration::from_millis(40));
            5
        });
        let start = Instant::now();
        let answer = suspend(Op::Join(slow.id(), Some(start + Duration::from_millis(10))));
        assert!(matches!(answer, Resume::TimedOut), "got {answer:?}");
        assert!(start.elapsed() >= Duration::from_millis(10));
        assert!(!slow.is_finished());
        // The slow task ends during this sleep; its end must not cut it short.
        let nap = Instant::now();
        sleep(Duration::from_millis(100));
        assert!(nap.elapsed() >= Duration::from_millis(100));
        assert!(slow.is_finished());
        assert_eq!(slow.join().unwrap(), 5);
    });
}

/// A raw join with a deadline is answered `Ready` when the task ends first,
/// and the deadline left behind wakes nothing later.
#[test]
fn raw_join_task_ends_first() {
    yieldloop::run(|| {
        let quick = spawn(|| {
            sleep(Duration::from_millis(5));
            7
        });
        let start = Instant::now();
        let answer = suspend(Op::Join(
            quick.id(),
            Some(start + Duration::from_millis(50)),
        ));
        assert!(matches!(answer, Resume::Ready), "got {answer:?}");
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(quick.is_finished());
        // The join's old deadline passes during this sleep and must not end it.
        let nap = Instant::now();
        sleep(Duration::from_millis(100));
        assert!(nap.elapsed() >= Duration::from_millis(100));
        assert_eq!(quick.join().unwrap(), 7);
    });
}

/// Inside a timeout, a join's own earlier deadline stays its own: the join is
/// answered `TimedOut` and the timeout does not expire; when the timeout's
/// deadline is the earlier, the timeout expires instead.
#[test]
fn join_deadline_against_timeout() {
    yieldloop::run(|| {
        let slow = spawn(|| sleep(Duration::from_millis(500)));
        let id = slow.id();
        let own = timeout(Duration::from_secs(5), || {
            suspend(Op::Join(
                id,
                Some(Instant::now() + Duration::from_millis(10)),
            ))
        });
        assert!(matches!(own, Ok(Resume::TimedOut)), "got {own:?}");
        let start = Instant::now();
        let scoped = timeout(Duration::from_millis(10), || {
            suspend(Op::Join(id, Some(Instant::now() + Duration::from_secs(5))))
        });
        assert!(scoped.is_err(), "the timeout should expire, got {scoped:?}");
        assert!(start.elapsed() >= Duration::from_millis(10));
        assert!(start.elapsed() < Duration::from_secs(5));
        slow.cancel();
        assert!(slow.join().unwrap_err().is_cancelled());
    });
}

/// A loop that only yields still times out, because yield_now checks the
/// deadline.
#[test]
fn yield_loop_times_out() {
    yieldloop::run(|| {
        let r = timeout(Duration::from_millis(20), || loop {
            yield_now();
        });
        assert!(r.is_err());
    });
}

/// A panic inside a timeout passes through it unchanged.
#[test]
fn panic_passes_through() {
    yieldloop::run(|| {
        let h = spawn(|| {
            let _ = timeout(Duration::from_secs(1), || panic!("inner panic"));
        });
        let e = h.join().unwrap_err();
        assert_eq!(e.panic_message(), Some("inner panic"));
    });
}

/// Elapsed converts to an io::Error of kind TimedOut.
#[test]
fn elapsed_is_timed_out_io_error() {
    let e = yieldloop::run(|| timeout(Duration::from_millis(1), || sleep(Duration::from_secs(9))))
        .unwrap_err();
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
}
