//! `run`, `spawn` and `JoinHandle::join`: values in and out, task ids,
//! detaching, `Builder`, and the places where task-only calls are refused.

mod util;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt::Debug;
use std::hint::black_box;
use std::io::{Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::raw::Op;
use yieldloop::{current_id, sleep, spawn, yield_now, Builder, JoinHandle, TaskId};

/// Sends `value` into a task and back out through `join`, unchanged.
fn round_trip<T: Clone + PartialEq + Debug + 'static>(value: T) {
    let expected = value.clone();
    let back = spawn(move || {
        yield_now();
        value
    })
    .join()
    .expect("task ended normally");
    assert_eq!(back, expected);
}

/// `run` returns whatever the main closure returns.
#[test]
fn run_returns_main_value() {
    assert_eq!(yieldloop::run(|| 42), 42);
    assert_eq!(yieldloop::run(|| String::from("done")), "done");
    assert_eq!(yieldloop::run(|| vec![1u8, 2, 3]), [1, 2, 3]);
    yieldloop::run(|| ());
    // A non-Send value can leave `run` too: it never crosses a thread.
    let rc = yieldloop::run(|| Rc::new(RefCell::new(7)));
    assert_eq!(*rc.borrow(), 7);
    // A main task that pauses still delivers its value.
    let v = yieldloop::run(|| {
        sleep(Duration::from_millis(5));
        yield_now();
        "after pauses"
    });
    assert_eq!(v, "after pauses");
}

/// `join` hands back values of many kinds, unchanged.
#[test]
fn join_returns_values_of_many_types() {
    yieldloop::run(|| {
        round_trip(());
        round_trip(7u8);
        round_trip(-123_456_789_i64);
        round_trip(u128::MAX);
        round_trip(3.5f64);
        round_trip('λ');
        round_trip(String::from("hello"));
        round_trip(vec![String::from("a"), String::from("b")]);
        round_trip(Some((1u16, "two", [3u32; 4])));
        round_trip(Result::<u8, String>::Err("bad".into()));
        round_trip(Box::new([9u8; 4096]));
        round_trip(std::collections::BTreeMap::from([(1, "x"), (2, "y")]));
        // A closure comes back callable.
        let f = spawn(|| {
            let k = 5;
            move |x: i32| x * k
        })
        .join()
        .unwrap();
        assert_eq!(f(3), 15);
    });
}

/// Values that are not `Send` (`Rc`, `RefCell`) move freely between tasks.
#[test]
fn non_send_values_cross_join() {
    yieldloop::run(|| {
        let shared = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<JoinHandle<Rc<RefCell<Vec<i32>>>>> = (0..10)
            .map(|i| {
                let shared = shared.clone();
                spawn(move || {
                    yield_now();
                    shared.borrow_mut().push(i);
                    shared
                })
            })
            .collect();
        for h in handles {
            let back = h.join().unwrap();
            assert!(Rc::ptr_eq(&back, &shared));
        }
        let mut seen = shared.borrow().clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        // Main holds the last reference again.
        assert_eq!(Rc::strong_count(&shared), 1);

        // A fresh Rc made inside a task comes out as the only reference.
        let made = spawn(|| Rc::new(Cell::new(99))).join().unwrap();
        assert_eq!(Rc::strong_count(&made), 1);
        assert_eq!(made.get(), 99);
    });
}

/// Tasks spawn tasks, several levels deep, and every level joins its children.
#[test]
fn nested_spawns() {
    /// Sums the leaves of a tree of tasks `depth` levels deep, `fanout` wide.
    fn tree(depth: u32, fanout: u64, label: u64) -> u64 {
        if depth == 0 {
            yield_now();
            return label;
        }
        let children: Vec<_> = (0..fanout)
            .map(|i| spawn(move || tree(depth - 1, fanout, label * fanout + i)))
            .collect();
        children.into_iter().map(|c| c.join().unwrap()).sum()
    }
    let total = yieldloop::run(|| spawn(|| tree(4, 4, 0)).join().unwrap());
    // The leaves are labelled 0..4^4, each once.
    assert_eq!(total, (0..256u64).sum::<u64>());
}

/// Join order need not follow finishing order: in order, reversed, shuffled,
/// and long after the task ended, every join gets its own task's value.
#[test]
fn join_order_is_independent_of_finish_order() {
    yieldloop::run(|| {
        let mut rng = util::XorShift::new(11);
        for round in 0..3 {
            // Later tasks finish first.
            let mut handles: Vec<(u64, JoinHandle<u64>)> = (0..20u64)
                .map(|i| {
                    let h = spawn(move || {
                        sleep(Duration::from_millis(2 * (20 - i)));
                        i * 1000 + round
                    });
                    (i, h)
                })
                .collect();
            match round {
                0 => {}
                1 => handles.reverse(),
                _ => rng.shuffle(&mut handles),
            }
            for (i, h) in handles {
                assert_eq!(h.join().unwrap(), i * 1000 + round);
            }
        }
        // Joined long after it ended: no pause needed, value still there.
        let early = spawn(|| 5);
        sleep(Duration::from_millis(20));
        assert!(early.is_finished());
        assert_eq!(early.join().unwrap(), 5);
    });
}

/// `is_finished` is false until the task ends and true afterwards.
#[test]
fn is_finished_tracks_task_end() {
    yieldloop::run(|| {
        let h = spawn(|| sleep(Duration::from_millis(30)));
        // Not started yet, then started and sleeping.
        assert!(!h.is_finished());
        yield_now();
        assert!(!h.is_finished());
        assert!(util::wait_until(Duration::from_secs(5), || h.is_finished()));
        h.join().unwrap();

        let quick = spawn(|| 1);
        assert!(
            !quick.is_finished(),
            "a task does not run before it is scheduled"
        );
        yield_now();
        yield_now();
        assert!(quick.is_finished());
        assert_eq!(quick.join().unwrap(), 1);

        let bad = spawn(|| -> u8 { panic!("{}", util::EXPECTED_PANIC) });
        util::quiet_panics(yield_now);
        assert!(bad.is_finished(), "a panicked task has ended");
        assert!(bad.join().unwrap_err().is_panic());
    });
}

/// Every task gets its own id, never reused within a run (even when table
/// slots are), and `current_id` inside a task agrees with its handle.
#[test]
fn task_ids_are_unique() {
    yieldloop::run(|| {
        let main_id = current_id().expect("main is a task");
        assert_eq!(main_id.as_u64(), 1, "the main task is task 1");
        let mut seen: HashSet<TaskId> = HashSet::from([main_id]);
        let mut serials = vec![main_id.as_u64()];
        // Waves of short-lived tasks, so that slots are freed and reused.
        for _wave in 0..20 {
            let handles: Vec<_> = (0..100)
                .map(|_| spawn(|| current_id().expect("inside a task")))
                .collect();
            for h in handles {
                let id = h.id();
                assert_eq!(h.join().unwrap(), id, "current_id matches the handle");
                assert!(seen.insert(id), "id {id:?} was handed out twice");
                serials.push(id.as_u64());
            }
        }
        assert_eq!(seen.len(), 2001);
        // Serial numbers grow with every spawn.
        assert!(serials.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(current_id(), Some(main_id), "main's id did not change");
    });
    assert_eq!(current_id(), None, "no task outside run");
    // Ids are per run: a new run starts again at 1.
    assert_eq!(yieldloop::run(|| current_id().unwrap().as_u64()), 1);
}

/// Tasks start in the order they were spawned.
#[test]
fn tasks_start_in_spawn_order() {
    let order = yieldloop::run(|| {
        let log = Rc::new(RefCell::new(Vec::new()));
        let handles: Vec<_> = (0..50)
            .map(|i| {
                let log = log.clone();
                spawn(move || log.borrow_mut().push(i))
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let v = log.borrow().clone();
        v
    });
    assert_eq!(order, (0..50).collect::<Vec<_>>());
}

/// Dropping a `JoinHandle` detaches the task: it still runs to the end, its
/// side effects happen, and its value is dropped when it ends.
#[test]
fn dropping_join_handle_detaches() {
    struct Noisy(Rc<Cell<u32>>);
    impl Drop for Noisy {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    yieldloop::run(|| {
        let done = Rc::new(Cell::new(false));
        let dropped = Rc::new(Cell::new(0));
        {
            let done = done.clone();
            let dropped = dropped.clone();
            // The handle is dropped at once.
            drop(spawn(move || {
                sleep(Duration::from_millis(10));
                yield_now();
                done.set(true);
                Noisy(dropped)
            }));
        }
        assert!(!done.get());
        assert!(
            util::wait_until(Duration::from_secs(5), || done.get()),
            "the detached task never finished"
        );
        yield_now();
        assert_eq!(dropped.get(), 1, "its value was dropped exactly once");

        // A detached task can itself spawn and detach more.
        let count = Rc::new(Cell::new(0));
        let c = count.clone();
        drop(spawn(move || {
            for _ in 0..10 {
                let c = c.clone();
                drop(spawn(move || {
                    yield_now();
                    c.set(c.get() + 1);
                }));
            }
        }));
        assert!(util::wait_until(Duration::from_secs(5), || count.get() == 10));
    });
}

/// `Builder` names a task and sizes its stack; a big stack carries deep
/// recursion that the default one could not.
#[test]
fn builder_name_and_stack_size() {
    /// Recurses `n` levels, each with a 1 KiB frame the optimiser must keep.
    fn deep(n: u32) -> u64 {
        let frame = black_box([n as u8; 1024]);
        if n == 0 {
            return u64::from(frame[0]);
        }
        deep(n - 1) + u64::from(frame[n as usize % 1024])
    }
    let expected: u64 = (1..=10_000u32).map(|n| u64::from(n as u8)).sum();
    yieldloop::run(move || {
        // About 10 MiB of frames, 40 times the default stack.
        let h = Builder::new()
            .name("deep-recursion")
            .stack_size(64 * 1024 * 1024)
            .spawn(|| deep(10_000))
            .expect("a 64 MiB stack is only address space");
        assert_eq!(h.join().unwrap(), expected);

        // Named tasks behave like any other; a builder can be reused.
        let b = Builder::new().name("worker");
        let hs: Vec<_> = (0..5)
            .map(|i| b.clone().spawn(move || i * 2).unwrap())
            .collect();
        let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, 20);

        // A tiny request is raised to the minimum, which still formats,
        // pauses and unwinds a panic.
        let small = Builder::new()
            .stack_size(1)
            .spawn(|| {
                sleep(Duration::from_millis(1));
                format!("{:>8}|{:?}", 42, [1.5f64, 2.25])
            })
            .unwrap();
        assert_eq!(small.join().unwrap(), "      42|[1.5, 2.25]");
        let small_panic = Builder::new()
            .stack_size(yieldloop::MIN_STACK_SIZE)
            .spawn(|| -> () { panic!("{} on a small stack", util::EXPECTED_PANIC) })
            .unwrap();
        let err = util::quiet_panics(|| small_panic.join().unwrap_err());
        assert!(err.is_panic());
    });
}

/// `run` inside a task panics with a message that says to use `spawn`, and
/// the outer scheduler is unharmed.
#[test]
fn run_inside_task_panics_with_clear_message() {
    yieldloop::run(|| {
        let msg = util::panic_message_of(|| yieldloop::run(|| 1));
        assert!(
            msg.contains("yieldloop::run was called inside a task"),
            "unclear message: {msg}"
        );
        assert!(
            msg.contains("spawn"),
            "message should point at spawn: {msg}"
        );
        // The same from a spawned task.
        let msg2 = spawn(|| util::panic_message_of(|| yieldloop::run(|| 2)))
            .join()
            .unwrap();
        assert_eq!(msg, msg2);
        // The outer scheduler still works.
        sleep(Duration::from_millis(1));
        assert_eq!(spawn(|| 3).join().unwrap(), 3);
    });
}

/// The task-only calls panic outside any task, with a message saying so.
#[test]
fn task_only_functions_panic_outside_a_task() {
    fn check<R>(what: &str, f: impl FnOnce() -> R) {
        let msg = util::panic_message_of(f);
        assert!(
            msg.contains("outside a task"),
            "{what}: message does not say \"outside a task\": {msg}"
        );
    }
    check("spawn", || spawn(|| ()));
    check("Builder::spawn", || Builder::new().spawn(|| ()));
    check("sleep", || sleep(Duration::from_millis(1)));
    check("sleep_until", || yieldloop::sleep_until(Instant::now()));
    check("yield_now", yield_now);
    check("suspend", || yieldloop::raw::suspend(Op::Yield));
    assert_eq!(current_id(), None);
    // The thread is left clean: run still works afterwards.
    assert_eq!(yieldloop::run(|| spawn(|| 5).join().unwrap()), 5);
}

/// `run` can be called again on the same thread once it has returned, with
/// fresh timers, sockets and tasks each time.
#[test]
fn run_twice_in_sequence() {
    fn one_run(tag: u64) -> u64 {
        yieldloop::run(move || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(move || {
                let (mut s, _) = listener.accept().unwrap();
                let mut b = [0u8; 8];
                s.read_exact(&mut b).unwrap();
                u64::from_le_bytes(b)
            });
            let sleepers: Vec<_> = (0..10u64)
                .map(|i| {
                    spawn(move || {
                        sleep(Duration::from_millis(i));
                        i
                    })
                })
                .collect();
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(&tag.to_le_bytes()).unwrap();
            let got = server.join().unwrap();
            got + sleepers.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
    }
    assert_eq!(one_run(1000), 1045);
    assert_eq!(one_run(2000), 2045);
    assert_eq!(one_run(3000), 3045);
}

/// Several OS threads each run their own scheduler at the same time.
#[test]
fn run_on_several_threads_at_once() {
    let results: Vec<u64> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                scope.spawn(move || {
                    yieldloop::run(move || {
                        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                        let addr = listener.local_addr().unwrap();
                        let echo = spawn(move || {
                            let (s, _) = listener.accept().unwrap();
                            let (mut r, mut w) = (&s, &s);
                            std::io::copy(&mut r, &mut w).unwrap()
                        });
                        let workers: Vec<_> = (0..200u64)
                            .map(|i| {
                                spawn(move || {
                                    sleep(Duration::from_millis(i % 20));
                                    yield_now();
                                    t * 1_000_000 + i
                                })
                            })
                            .collect();
                        let mut c = TcpStream::connect(addr).unwrap();
                        let msg = util::random_bytes(t, 10_000);
                        // 10 kB fits in the socket buffers: writing all
                        // before reading cannot stall.
                        c.write_all(&msg).unwrap();
                        c.shutdown(std::net::Shutdown::Write).unwrap();
                        let mut back = Vec::new();
                        c.read_to_end(&mut back).unwrap();
                        assert_eq!(back, msg);
                        assert_eq!(echo.join().unwrap(), 10_000);
                        workers.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                    })
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for (t, sum) in results.into_iter().enumerate() {
        let t = t as u64;
        assert_eq!(sum, 200 * t * 1_000_000 + (0..200).sum::<u64>());
    }
}

/// A main task that waits for something nothing can provide makes `run`
/// panic with a deadlock report instead of hanging.
#[test]
fn run_reports_deadlock_instead_of_hanging() {
    let start = Instant::now();
    let msg = util::panic_message_of(|| {
        yieldloop::run(|| {
            let main_id = current_id().unwrap();
            // The child waits for main to end, main waits for the child.
            let child = spawn(move || {
                let _ = yieldloop::raw::suspend(Op::Join(main_id, None));
            });
            let _ = child.join();
        })
    });
    assert!(msg.contains("deadlock"), "unexpected message: {msg}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // The thread is usable again.
    assert_eq!(yieldloop::run(|| 1), 1);
}

/// A task whose closure captures more than fits the coroutine's start
/// frame (corosensei takes at most 1 KiB there) runs like any other; so
/// does a large future handed to `spawn_future`.
#[test]
fn large_task_bodies_and_futures_spawn() {
    let (sum, fut_sum) = yieldloop::run(|| {
        let big = [7u8; 2000];
        let task = spawn(move || big.iter().map(|&b| u64::from(b)).sum::<u64>());
        let also_big = [1u8; 4096];
        let fut = yieldloop::spawn_future(async move {
            yieldloop::yield_now();
            also_big.iter().map(|&b| u64::from(b)).sum::<u64>()
        });
        (task.join().unwrap(), fut.join().unwrap())
    });
    assert_eq!(sum, 7 * 2000);
    assert_eq!(fut_sum, 4096);
}

/// `run`'s closure borrows from its caller, mutably too, and its value
/// may be a borrow.
#[test]
fn run_borrows_from_its_caller() {
    let names = ["ada".to_string(), "grace".to_string()];
    let mut calls = 0;
    let longest: &str = yieldloop::run(|| {
        calls += 1;
        let child = yieldloop::spawn(|| 40);
        let n = child.join().unwrap();
        assert_eq!(n, 40);
        names.iter().max_by_key(|s| s.len()).unwrap().as_str()
    });
    assert_eq!(longest, "grace");
    assert_eq!(calls, 1);
}

/// A main task that holds a borrow of its caller's data and can never
/// finish (it waits for nothing that can come): `run` panics only after
/// the task is torn down, so the borrow is given back before the caller
/// sees the panic.
#[test]
fn a_deadlocked_run_gives_its_borrows_back_before_it_panics() {
    let cell = std::cell::RefCell::new(0u32);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        yieldloop::run(|| {
            let mut held = cell.borrow_mut();
            *held += 1;
            // A park nobody will ever end: a deadlock.
            let token = yieldloop::raw::park_token();
            let _ = yieldloop::raw::park(token, None);
            *held += 1;
        })
    }));
    assert!(r.is_err(), "run must report the deadlock");
    // Torn down: the main task's `RefMut` was dropped during its unwind.
    assert_eq!(*cell.try_borrow().expect("the borrow was given back"), 1);
}

/// A panic of a main task that borrows comes out of `run`, with the
/// borrowed data intact.
#[test]
fn a_panicking_run_that_borrows() {
    let data = vec![1, 2, 3];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        yieldloop::run(|| {
            assert_eq!(data.len(), 3);
            panic!("boom with {} items", data.len());
        })
    }));
    assert!(r.is_err());
    assert_eq!(data, [1, 2, 3]);
}
