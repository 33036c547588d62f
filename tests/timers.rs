//! Timers: sleepers wake in deadline order, ties in FIFO order, never before
//! their deadline and not much after it; zero and past deadlines only
//! yield; huge durations are fine; many timers at once are fine.

mod util;

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, sleep_until, spawn, yield_now};

/// How late a wake-up may be before a test calls it a failure. Generous:
/// the machines running the tests are shared and noisy.
const LATE: Duration = Duration::from_millis(200);

/// Sleepers wake in the order of their deadlines, whatever order they went
/// to sleep in.
#[test]
fn sleeps_wake_in_deadline_order() {
    yieldloop::run(|| {
        let mut rng = util::XorShift::new(1);
        let base = Instant::now() + Duration::from_millis(20);
        let mut slots: Vec<u64> = (0..100).collect();
        rng.shuffle(&mut slots);
        let log = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = slots
            .iter()
            .map(|&k| {
                let log = log.clone();
                spawn(move || {
                    // 0.5 ms apart: several are due in one turn of the loop,
                    // which must still hand them out in order.
                    let deadline = base + Duration::from_micros(500 * k);
                    sleep_until(deadline);
                    assert!(Instant::now() >= deadline);
                    log.borrow_mut().push(k);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*log.borrow(), (0..100).collect::<Vec<_>>());

        // The same with relative sleeps, each started a little later.
        let log = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = [50u64, 10, 40, 0, 30, 20]
            .into_iter()
            .map(|ms| {
                let log = log.clone();
                spawn(move || {
                    sleep(Duration::from_millis(ms));
                    log.borrow_mut().push(ms);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*log.borrow(), [0, 10, 20, 30, 40, 50]);
    });
}

/// Sleepers with the very same deadline wake first-in, first-out: in the
/// order they went to sleep.
#[test]
fn equal_deadlines_wake_fifo() {
    yieldloop::run(|| {
        let at = Instant::now() + Duration::from_millis(20);
        let log = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = (0..500)
            .map(|i| {
                let log = log.clone();
                spawn(move || {
                    sleep_until(at);
                    log.borrow_mut().push(i);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*log.borrow(), (0..500).collect::<Vec<_>>());

        // Going to sleep in an order other than the spawn order: the wake
        // order follows the order of going to sleep.
        let at = Instant::now() + Duration::from_millis(20);
        let slept = Rc::new(RefCell::new(Vec::new()));
        let woke = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = (0..200u64)
            .map(|i| {
                let (slept, woke) = (slept.clone(), woke.clone());
                spawn(move || {
                    for _ in 0..(i * 7) % 5 {
                        yield_now();
                    }
                    slept.borrow_mut().push(i);
                    sleep_until(at);
                    woke.borrow_mut().push(i);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_ne!(*slept.borrow(), (0..200).collect::<Vec<_>>());
        assert_eq!(*woke.borrow(), *slept.borrow());
    });
}

/// No sleep ever ends before its deadline (checked after every one of many
/// random sleeps of 0–30 ms), and none ends much after it.
#[test]
fn sleeps_never_wake_early() {
    let worst = yieldloop::run(|| {
        let worst = Rc::new(Cell::new(Duration::ZERO));
        let handles: Vec<_> = (0..200u64)
            .map(|t| {
                let worst = worst.clone();
                spawn(move || {
                    let mut rng = util::XorShift::new(t);
                    for round in 0..8 {
                        let d = Duration::from_micros(rng.below(30_001));
                        let deadline = if round % 2 == 0 {
                            let start = Instant::now();
                            sleep(d);
                            start + d
                        } else {
                            let deadline = Instant::now() + d;
                            sleep_until(deadline);
                            deadline
                        };
                        let now = Instant::now();
                        assert!(
                            now >= deadline,
                            "woke {:?} early from a {d:?} sleep",
                            deadline - now
                        );
                        let late = now - deadline;
                        if late > worst.get() {
                            worst.set(late);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        worst.get()
    });
    assert!(worst < LATE, "a sleeper woke {worst:?} late");
}

/// `sleep(Duration::ZERO)` and deadlines already past do not wait: they
/// let the other ready tasks run once, like `yield_now`.
#[test]
fn zero_and_past_deadlines_act_as_yield() {
    yieldloop::run(|| {
        type Pause = fn();
        let pauses: [(&str, Pause); 3] = [
            ("sleep(ZERO)", || sleep(Duration::ZERO)),
            ("sleep_until(past)", || {
                sleep_until(Instant::now() - Duration::from_millis(50))
            }),
            ("sleep_until(now)", || sleep_until(Instant::now())),
        ];
        for (name, pause) in pauses {
            // Two tasks pausing in turn interleave like yield_now.
            let log = Rc::new(RefCell::new(Vec::new()));
            let handles: Vec<_> = ["a", "b"]
                .into_iter()
                .map(|who| {
                    let log = log.clone();
                    spawn(move || {
                        for i in 0..3 {
                            log.borrow_mut().push(format!("{who}{i}"));
                            pause();
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(
                *log.borrow(),
                ["a0", "b0", "a1", "b1", "a2", "b2"],
                "{name} does not interleave like a yield"
            );

            // A ready task runs during the pause.
            let ran = Rc::new(Cell::new(false));
            let r = ran.clone();
            let h = spawn(move || r.set(true));
            pause();
            assert!(ran.get(), "{name} did not let a ready task run");
            h.join().unwrap();

            // Alone, thousands of them take no time at all: no real wait.
            let start = Instant::now();
            for _ in 0..5_000 {
                pause();
            }
            let took = start.elapsed();
            assert!(took < Duration::from_secs(2), "5000 × {name} took {took:?}");
        }
    });
}

/// A huge duration (`Duration::MAX`) does not overflow: the sleeper just
/// sleeps "forever", can be cancelled, does not delay nearer timers, and
/// does not keep `run` from ending.
#[test]
fn huge_duration_does_not_panic() {
    let start = Instant::now();
    yieldloop::run(|| {
        let forever = spawn(|| {
            sleep(Duration::MAX);
            "woke"
        });
        let also_forever = spawn(|| sleep(Duration::from_secs(u64::MAX)));
        yield_now();
        // A nearer timer still fires on time with the far ones armed.
        let t = Instant::now();
        sleep(Duration::from_millis(20));
        let slept = t.elapsed();
        assert!(slept >= Duration::from_millis(20));
        assert!(slept < Duration::from_millis(20) + LATE, "slept {slept:?}");
        assert!(!forever.is_finished());
        forever.cancel();
        assert!(forever.join().unwrap_err().is_cancelled());
        // `also_forever` is left for `run` to cancel.
        drop(also_forever);
    });
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// A timer whose wait ended some other way (data arrived before a read
/// timeout) fires for nobody: the task's later sleep is not cut short.
#[test]
fn stale_timers_wake_nobody() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let writer = spawn(move || {
            sleep(Duration::from_millis(5));
            (&server).write_all(b"x").unwrap();
            server
        });
        // The read's 30 ms timer goes stale when the data comes at ~5 ms.
        client
            .set_read_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let mut buf = [0u8; 1];
        assert_eq!((&client).read(&mut buf).unwrap(), 1);
        let _server = writer.join().unwrap();
        // Sleep across the stale deadline.
        let start = Instant::now();
        sleep(Duration::from_millis(80));
        let slept = start.elapsed();
        assert!(slept >= Duration::from_millis(80), "woken early: {slept:?}");

        // Thousands of stale timers (enough to make the heap compact
        // itself) leave the live ones exact.
        let (client2, server2) = {
            let c = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (s, _) = listener.accept().unwrap();
            (Rc::new(c), s)
        };
        client2
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let readers: Vec<_> = (0..3000)
            .map(|_| {
                let c = client2.clone();
                spawn(move || {
                    let mut b = [0u8; 1];
                    (&*c).read(&mut b)
                })
            })
            .collect();
        let sleepers: Vec<_> = (0..50u64)
            .map(|i| {
                spawn(move || {
                    let deadline = Instant::now() + Duration::from_millis(20 + i);
                    sleep_until(deadline);
                    Instant::now() >= deadline
                })
            })
            .collect();
        yield_now();
        // One write wakes every reader; each wins a byte or sees WouldBlock
        // and waits again, so feed them all.
        (&server2).write_all(&[7u8; 3000]).unwrap();
        for r in readers {
            assert_eq!(r.join().unwrap().unwrap(), 1);
        }
        for s in sleepers {
            assert!(s.join().unwrap(), "a live timer fired early");
        }
        // The read timeout still works afterwards.
        let start = Instant::now();
        client2
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let err = (&*client2).read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(20));
    });
}

/// 50,000 tasks sleeping 0–200 ms each all wake, none early, and the whole
/// run takes a sane time (20,000 where guard pages cost mappings).
#[test]
fn many_timers() {
    let start = Instant::now();
    let (woke, early, tasks) = yieldloop::run(|| {
        // `mprotect` guards (other systems, the `portable` feature, Linux
        // before 6.13) cost two mappings per stack, and Linux's default
        // vm.max_map_count stops those near 32,000 tasks. The first spawn
        // settles which guards the pool uses.
        drop(spawn(|| ()));
        let tasks: u64 = if yieldloop::diag::guards_use_madvise() {
            50_000
        } else {
            20_000
        };
        let woke = Rc::new(Cell::new(0u64));
        let early = Rc::new(Cell::new(0u64));
        let mut rng = util::XorShift::new(50_000);
        for _ in 0..tasks {
            let ms = rng.below(201);
            let (woke, early) = (woke.clone(), early.clone());
            drop(spawn(move || {
                let deadline = Instant::now() + Duration::from_millis(ms);
                sleep_until(deadline);
                if Instant::now() < deadline {
                    early.set(early.get() + 1);
                }
                woke.set(woke.get() + 1);
            }));
        }
        assert!(
            util::wait_until(Duration::from_secs(20), || woke.get() == tasks),
            "only {} of {tasks} sleepers woke",
            woke.get()
        );
        (woke.get(), early.get(), tasks)
    });
    let took = start.elapsed();
    assert_eq!(woke, tasks);
    assert_eq!(early, 0, "sleepers woke before their deadlines");
    assert!(
        took < Duration::from_secs(8),
        "{tasks} timers took {took:?}"
    );
}

/// A task that never stops yielding does not starve the timers: sleepers
/// beside it still wake on time.
#[test]
fn timers_fire_beside_a_task_that_keeps_yielding() {
    yieldloop::run(|| {
        let spinner = spawn(|| {
            for _ in 0..100_000_000u64 {
                yield_now();
            }
        });
        yield_now();
        for ms in [1u64, 5, 20] {
            let d = Duration::from_millis(ms);
            let start = Instant::now();
            sleep(d);
            let slept = start.elapsed();
            assert!(slept >= d);
            assert!(slept < d + LATE, "a {d:?} sleep took {slept:?}");
        }
        assert!(!spinner.is_finished());
        spinner.cancel();
    });
}
