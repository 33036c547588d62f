//! The paused clock (`run_paused`, `RuntimeBuilder::start_paused`): time
//! stands still while tasks run and jumps to the next deadline when only
//! time can wake a task, so tests of hour-long sleeps, 30-second timeouts
//! and back-offs take milliseconds, with the same order of events every
//! run; it does not jump while a socket, the blocking pool or another
//! thread may still wake a task.

mod util;

use std::cell::RefCell;
use std::io::{Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::within;
use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::sync::local;

/// What happened, and when the tasks' clock said it did.
type Log = Rc<RefCell<Vec<(String, Duration)>>>;

fn note(log: &Log, t0: Instant, what: impl Into<String>) {
    log.borrow_mut().push((what.into(), yieldloop::now() - t0));
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn an_hour_of_sleep_takes_no_time() {
    within(|| {
        let started = Instant::now();
        let slept = yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            yieldloop::sleep(HOUR);
            yieldloop::now() - t0
        });
        assert_eq!(slept, HOUR, "the clock jumps exactly to the deadline");
        assert!(started.elapsed() < Duration::from_secs(10));
    });
}

/// A 30 s timeout around a minute's sleep elapses at 30 s; a timeout that
/// is not reached returns the value; a `Sleep` future driven by `block_on`
/// and a local channel's `recv_timeout` jump too.
#[test]
fn timeouts_futures_and_channel_deadlines_jump() {
    within(|| {
        let started = Instant::now();
        yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            let r = yieldloop::timeout(Duration::from_secs(30), || yieldloop::sleep(HOUR));
            assert!(r.is_err(), "the timeout must elapse");
            assert_eq!(yieldloop::now() - t0, Duration::from_secs(30));

            let r = yieldloop::timeout(Duration::from_secs(30), || {
                yieldloop::sleep(Duration::from_secs(29));
                7
            });
            assert_eq!(r.unwrap(), 7);
            assert_eq!(yieldloop::now() - t0, Duration::from_secs(59));

            yieldloop::block_on(yieldloop::sleep_future(HOUR));
            assert_eq!(yieldloop::now() - t0, HOUR + Duration::from_secs(59));

            let (tx, rx) = local::channel::<u32>();
            // Kept, so that the second receive times out rather than
            // finding the channel closed.
            let _sender = tx.clone();
            yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_secs(5));
                tx.send(5).unwrap();
            });
            let t1 = yieldloop::now();
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 5);
            assert_eq!(yieldloop::now() - t1, Duration::from_secs(5));
            assert!(rx.recv_timeout(Duration::from_secs(10)).is_err());
            assert_eq!(yieldloop::now() - t1, Duration::from_secs(15));
        });
        assert!(started.elapsed() < Duration::from_secs(10));
    });
}

/// A scenario of sleeps, a retry with exponential back-off, a timeout and
/// a channel, whose log (events and their instants on the paused clock)
/// is the same on every run, and in deadline order.
#[test]
fn the_same_events_in_the_same_order_every_run() {
    fn scenario() -> Vec<(String, Duration)> {
        yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            let log: Log = Rc::default();
            let (tx, rx) = local::channel::<&'static str>();
            let mut tasks = Vec::new();
            for (i, secs) in [30u64, 10, 20, 10].into_iter().enumerate() {
                let (log, tx) = (log.clone(), tx.clone());
                tasks.push(yieldloop::spawn(move || {
                    yieldloop::sleep(Duration::from_secs(secs));
                    note(&log, t0, format!("sleeper {i}"));
                    let _ = tx.send("tick");
                }));
            }
            drop(tx);
            let l = log.clone();
            tasks.push(yieldloop::spawn(move || {
                let mut delay = Duration::from_millis(500);
                for attempt in 1..=6 {
                    note(&l, t0, format!("attempt {attempt}"));
                    yieldloop::sleep(delay);
                    delay *= 2;
                }
            }));
            let l = log.clone();
            tasks.push(yieldloop::spawn(move || {
                let r = yieldloop::timeout(Duration::from_secs(25), || yieldloop::sleep(HOUR));
                note(&l, t0, format!("timeout elapsed: {}", r.is_err()));
            }));
            let mut ticks = 0;
            while rx.recv().is_ok() {
                ticks += 1;
            }
            note(&log, t0, format!("{ticks} ticks"));
            for t in tasks {
                t.join().unwrap();
            }
            let out = log.borrow().clone();
            out
        })
    }
    within(|| {
        let first = scenario();
        let times: Vec<Duration> = first.iter().map(|(_, t)| *t).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "out of order: {first:?}"
        );
        let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "attempt 1",
                "attempt 2",
                "attempt 3",
                "attempt 4",
                "attempt 5",
                "sleeper 1",
                "sleeper 3",
                "attempt 6",
                "sleeper 2",
                "timeout elapsed: true",
                "sleeper 0",
                "4 ticks",
            ]
        );
        assert_eq!(first[5].1, Duration::from_secs(10));
        assert_eq!(first[9].1, Duration::from_secs(25));
        for _ in 0..3 {
            assert_eq!(scenario(), first);
        }
    });
}

/// Sockets work under a paused clock, and the clock does not jump while a
/// task waits on one: a read whose data a plain thread sends after 200 ms
/// of real time completes before a one-hour sleeper wakes, at about 200 ms
/// on the tasks' clock; once nothing waits on I/O, the sleeper's hour
/// passes at once.
#[test]
fn no_jump_while_io_is_pending() {
    within(|| {
        let started = Instant::now();
        let log = yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            let log: Log = Rc::default();
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let peer = std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                std::thread::sleep(Duration::from_millis(200));
                s.write_all(b"late").unwrap();
                let mut back = [0u8; 4];
                s.read_exact(&mut back).unwrap();
                back
            });
            let l = log.clone();
            let sleeper = yieldloop::spawn(move || {
                yieldloop::sleep(HOUR);
                note(&l, t0, "sleeper woke");
            });
            let (conn, _) = listener.accept().unwrap();
            drop(listener);
            let mut buf = [0u8; 4];
            (&conn).read_exact(&mut buf).unwrap();
            note(&log, t0, "read done");
            (&conn).write_all(&buf).unwrap();
            drop(conn);
            sleeper.join().unwrap();
            assert_eq!(&peer.join().unwrap(), b"late");
            let out = log.borrow().clone();
            out
        });
        assert_eq!(log[0].0, "read done");
        assert!(
            log[0].1 >= Duration::from_millis(150) && log[0].1 < Duration::from_secs(20),
            "the clock moved with real time while the read waited: {:?}",
            log[0].1
        );
        assert_eq!(log[1], ("sleeper woke".to_string(), HOUR));
        assert!(started.elapsed() < Duration::from_secs(20));
    });
}

/// A connection between two tasks of the paused run, each side with a
/// read timeout, while a third task sleeps a day: the exchange works, and
/// the day passes once the sockets are closed.
#[test]
fn sockets_between_tasks_under_a_paused_clock() {
    within(|| {
        let started = Instant::now();
        yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let day = yieldloop::spawn(move || {
                yieldloop::sleep(24 * HOUR);
                yieldloop::now() - t0
            });
            let server = yieldloop::spawn(move || {
                let (s, _) = listener.accept().unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut buf = [0u8; 5];
                (&s).read_exact(&mut buf).unwrap();
                (&s).write_all(&buf).unwrap();
            });
            let c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            (&c).write_all(b"hello").unwrap();
            let mut buf = [0u8; 5];
            (&c).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"hello");
            server.join().unwrap();
            drop(c);
            assert_eq!(day.join().unwrap(), 24 * HOUR);
        });
        assert!(started.elapsed() < Duration::from_secs(20));
    });
}

/// Work on the blocking pool holds the clock still: its result, 100 ms of
/// real time away, comes before a 10-second sleeper wakes.
#[test]
fn the_blocking_pool_holds_the_clock() {
    within(|| {
        let log = yieldloop::run_paused(|| {
            let t0 = yieldloop::now();
            let log: Log = Rc::default();
            let l = log.clone();
            let sleeper = yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_secs(10));
                note(&l, t0, "sleeper woke");
            });
            let v = yieldloop::spawn_blocking(|| {
                std::thread::sleep(Duration::from_millis(100));
                42
            })
            .join()
            .unwrap();
            assert_eq!(v, 42);
            note(&log, t0, "blocking done");
            sleeper.join().unwrap();
            let out = log.borrow().clone();
            out
        });
        assert_eq!(log[0].0, "blocking done", "{log:?}");
        assert!(log[0].1 < Duration::from_secs(10), "{log:?}");
        assert_eq!(
            log[1],
            ("sleeper woke".to_string(), Duration::from_secs(10))
        );
    });
}

/// A thread-per-core runtime on paused clocks: tasks on both workers sleep
/// an hour in no time; a task joined from another worker holds the
/// joiner's clock until it ends.
#[test]
fn runtime_workers_start_paused() {
    within(|| {
        let started = Instant::now();
        let rt = yieldloop::Runtime::builder()
            .workers(2)
            .start_paused(true)
            .build()
            .unwrap();
        let handles: Vec<_> = (0..2)
            .map(|w| {
                rt.spawn_on(w, move || {
                    let t0 = yieldloop::now();
                    yieldloop::sleep(HOUR * (w as u32 + 1));
                    yieldloop::now() - t0
                })
            })
            .collect();
        let slept: Vec<Duration> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(slept, [HOUR, 2 * HOUR]);
        rt.shutdown();
        assert!(started.elapsed() < Duration::from_secs(20));
    });
}

/// Off by default: `run` keeps real time, and `now` is `Instant::now`.
#[test]
fn run_keeps_real_time() {
    within(|| {
        yieldloop::run(|| {
            let (t0, real0) = (yieldloop::now(), Instant::now());
            yieldloop::sleep(Duration::from_millis(30));
            assert!(yieldloop::now() - t0 >= Duration::from_millis(30));
            assert!(real0.elapsed() >= Duration::from_millis(30));
        });
        let a = Instant::now();
        let b = yieldloop::now();
        assert!(b >= a && b - a < Duration::from_secs(1));
    });
}
