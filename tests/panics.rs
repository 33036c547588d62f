//! Panics stay in the task that raised them: `join` reports them, the other
//! tasks and the scheduler go on, and a panic in the main task comes out of
//! `run` after the leftover tasks were cancelled.

mod util;

use std::cell::Cell;
use std::io::{Read, Write};
use std::panic;
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::EXPECTED_PANIC;
use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now, JoinHandle};

/// Counts its drops in a shared cell.
struct DropCount(Rc<Cell<u32>>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// A panicking task leaves the tasks around it, before and after the panic,
/// running to completion with their values.
#[test]
fn panicking_task_does_not_affect_others() {
    util::quiet_panics(|| {
        yieldloop::run(|| {
            let progress = Rc::new(Cell::new(0u32));
            let workers: Vec<_> = (0..10u64)
                .map(|i| {
                    let progress = progress.clone();
                    spawn(move || {
                        for _ in 0..5 {
                            sleep(Duration::from_millis(2));
                            progress.set(progress.get() + 1);
                        }
                        i
                    })
                })
                .collect();
            let bomb = spawn(|| {
                sleep(Duration::from_millis(3));
                panic!("{EXPECTED_PANIC}: bomb");
            });
            let err = bomb.join().unwrap_err();
            assert!(err.is_panic());
            // The others are mid-way, not dead.
            let sum: u64 = workers.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, 45);
            assert_eq!(progress.get(), 50);
        });
    });
}

/// `join` returns a `JoinError` that says it was a panic and carries the
/// payload: string messages, formatted messages and any other type.
#[test]
fn join_reports_panic_with_payload() {
    util::quiet_panics(|| {
        yieldloop::run(|| {
            // A literal message (&'static str payload).
            let h = spawn(|| -> u8 { panic!("deliberate test panic: literal") });
            let id = h.id();
            let err = h.join().unwrap_err();
            assert!(err.is_panic());
            assert!(!err.is_cancelled());
            assert_eq!(err.id(), id);
            assert_eq!(err.panic_message(), Some("deliberate test panic: literal"));
            let shown = err.to_string();
            assert!(shown.contains("panicked"), "{shown}");
            assert!(shown.contains("deliberate test panic: literal"), "{shown}");
            assert!(format!("{err:?}").contains("literal"));

            // A formatted message (String payload), raised deep in a call
            // chain after a pause.
            fn deeper(n: u32) -> u32 {
                if n == 0 {
                    sleep(Duration::from_millis(1));
                    panic!("{EXPECTED_PANIC}: formatted {}", 6 * 7);
                }
                deeper(n - 1) + 1
            }
            let err = spawn(|| deeper(20)).join().unwrap_err();
            assert_eq!(
                err.panic_message(),
                Some(format!("{EXPECTED_PANIC}: formatted 42").as_str())
            );
            let payload = err.into_panic();
            assert!(payload.downcast_ref::<String>().is_some());

            // A payload of another type: no message, but it comes back.
            let err = spawn(|| panic::panic_any(1234u32)).join().unwrap_err();
            assert!(err.is_panic());
            assert_eq!(err.panic_message(), None);
            let payload = err.try_into_panic().expect("it is a panic");
            assert_eq!(payload.downcast_ref::<u32>(), Some(&1234));

            // A payload can be re-raised and caught again.
            let err = spawn(|| -> () { panic!("{EXPECTED_PANIC}: again") })
                .join()
                .unwrap_err();
            let payload = err.into_panic();
            let again =
                panic::catch_unwind(panic::AssertUnwindSafe(|| panic::resume_unwind(payload)));
            let payload = again.unwrap_err();
            assert_eq!(
                util::panic_message(&*payload),
                Some(format!("{EXPECTED_PANIC}: again").as_str())
            );
        });
    });
}

/// A task joining a task that panics is woken with the error promptly, and
/// the panicked task's resources (a socket) are released.
#[test]
fn panic_releases_resources_and_wakes_joiner() {
    util::quiet_panics(|| {
        yieldloop::run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let dropped = Rc::new(Cell::new(0));
            let d = dropped.clone();
            let victim = spawn(move || {
                let _guard = DropCount(d);
                let (stream, _) = listener.accept().unwrap();
                let mut buf = [0u8; 1];
                let _ = (&stream).read(&mut buf);
                panic!("{EXPECTED_PANIC}: holding a socket");
            });
            let joiner = spawn(move || victim.join());
            let mut client = TcpStream::connect(addr).unwrap();
            client.write_all(b"x").unwrap();
            let started = Instant::now();
            let err = joiner.join().unwrap().unwrap_err();
            assert!(err.is_panic());
            assert!(started.elapsed() < Duration::from_secs(2));
            assert_eq!(dropped.get(), 1, "the panicking task's locals were dropped");
            // The accepted socket was closed: the client reads end-of-file.
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut rest = Vec::new();
            client.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty());
        });
    });
}

/// A panic in the main task comes out of `run` with its payload, after the
/// leftover tasks were cancelled (their destructors ran, exactly once).
#[test]
fn panic_in_main_comes_out_of_run_and_cancels_leftovers() {
    let dropped = Rc::new(Cell::new(0u32));
    let finished = Rc::new(Cell::new(0u32));
    let d = dropped.clone();
    let f = finished.clone();
    let result = util::quiet_panics(|| {
        panic::catch_unwind(panic::AssertUnwindSafe(move || {
            yieldloop::run(move || {
                for i in 0..20u64 {
                    let guard = DropCount(d.clone());
                    let f = f.clone();
                    spawn(move || {
                        let _guard = guard;
                        sleep(Duration::from_secs(60 + i));
                        f.set(f.get() + 1);
                    });
                }
                // Some never started at all.
                for _ in 0..5 {
                    let guard = DropCount(d.clone());
                    spawn(move || drop(guard));
                }
                yield_now();
                panic!("{EXPECTED_PANIC}: in main");
            })
        }))
    });
    let payload = result.expect_err("the panic came out of run");
    assert_eq!(
        util::panic_message(&*payload),
        Some(format!("{EXPECTED_PANIC}: in main").as_str())
    );
    assert_eq!(finished.get(), 0, "no leftover task ran past its sleep");
    assert_eq!(dropped.get(), 25, "every leftover's destructor ran once");
    // The thread can run again.
    assert_eq!(yieldloop::run(|| 1), 1);
}

/// A non-string panic payload from main comes out of `run` unchanged.
#[test]
fn non_string_panic_in_main_keeps_its_payload() {
    let payload = util::quiet_panics(|| {
        panic::catch_unwind(|| yieldloop::run(|| panic::panic_any(vec![1u8, 2, 3])))
    })
    .unwrap_err();
    assert_eq!(payload.downcast_ref::<Vec<u8>>(), Some(&vec![1, 2, 3]));
}

/// A thousand panicking tasks in a row, then a thousand at once, leave the
/// scheduler healthy: timers, spawns and joins still work and no stack is
/// leaked.
#[test]
fn many_panicking_tasks_leave_scheduler_healthy() {
    util::quiet_panics(|| {
        yieldloop::run(|| {
            for i in 0..1000u32 {
                let h = spawn(move || -> u32 { panic!("{EXPECTED_PANIC} #{i}") });
                let err = h.join().unwrap_err();
                assert!(err.is_panic());
            }
            let handles: Vec<JoinHandle<u32>> = (0..1000u32)
                .map(|i| {
                    spawn(move || {
                        if i % 100 == 0 {
                            sleep(Duration::from_millis(1));
                        }
                        yield_now();
                        if i % 2 == 0 {
                            panic!("{EXPECTED_PANIC} #{i}");
                        }
                        i
                    })
                })
                .collect();
            let mut ok = 0;
            let mut panicked = 0;
            for (i, h) in handles.into_iter().enumerate() {
                match h.join() {
                    Ok(v) => {
                        assert_eq!(v as usize, i);
                        ok += 1;
                    }
                    Err(e) => {
                        assert!(e.is_panic());
                        assert_eq!(
                            e.panic_message(),
                            Some(format!("{EXPECTED_PANIC} #{i}").as_str())
                        );
                        panicked += 1;
                    }
                }
            }
            assert_eq!((ok, panicked), (500, 500));
            // Still healthy: a timer fires on time and tasks still run.
            let start = Instant::now();
            sleep(Duration::from_millis(10));
            let elapsed = start.elapsed();
            assert!(elapsed >= Duration::from_millis(10));
            assert!(elapsed < Duration::from_millis(500), "slept {elapsed:?}");
            let sum: u32 = (0..100u32)
                .map(|i| spawn(move || i))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .sum();
            assert_eq!(sum, 4950);
        });
    });
    // Every stack went back to the pool.
    let stats = yieldloop::diag::pool_stats();
    assert_eq!(
        stats.free, stats.carved,
        "stacks leaked by panicking tasks: {stats:?}"
    );
}

/// A panic raised while another task is mid-way through a socket exchange
/// does not disturb that exchange.
#[test]
fn panic_does_not_disturb_io_in_other_tasks() {
    util::quiet_panics(|| {
        yieldloop::run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(move || {
                let (s, _) = listener.accept().unwrap();
                let (mut r, mut w) = (&s, &s);
                std::io::copy(&mut r, &mut w).unwrap()
            });
            let client = TcpStream::connect(addr).unwrap();
            client
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut got = Vec::new();
            for round in 0..20u8 {
                let bomb = spawn(move || -> () { panic!("{EXPECTED_PANIC} round {round}") });
                (&client).write_all(&[round; 100]).unwrap();
                let mut buf = [0u8; 100];
                (&client).read_exact(&mut buf).unwrap();
                got.extend_from_slice(&buf);
                assert!(bomb.join().unwrap_err().is_panic());
            }
            client.shutdown(std::net::Shutdown::Write).unwrap();
            assert_eq!(server.join().unwrap(), 2000);
            let expected: Vec<u8> = (0..20u8).flat_map(|r| [r; 100]).collect();
            assert_eq!(got, expected);
        });
    });
}
