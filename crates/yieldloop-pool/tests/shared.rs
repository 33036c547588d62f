//! One pool shared by tasks on several workers of a `Runtime` and by plain
//! threads: the maximum holds under contention, a checkout that waits too
//! long fails with the wait and the size, waiters are served in the order
//! they came, and a panic while holding a connection leaks nothing.

mod util;

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use util::{wait_for, Counts, Lines, Server};
use yieldloop::Runtime;
use yieldloop_pool::{CheckoutTimeout, Pool, PoolConfig};

/// A pool of `Send` connections is `Send` and `Sync`, and so is its guard.
#[test]
fn a_pool_of_send_connections_crosses_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Pool<Lines>>();
    send_sync::<PoolConfig<Lines>>();
    send::<yieldloop_pool::Pooled<Lines>>();
}

/// Six tasks on each of two workers and two plain threads take turns on at
/// most three connections: never more are open or in use, every call is
/// answered, and the pool ends with nothing in use or waiting.
#[test]
fn tasks_on_two_workers_and_plain_threads_share_at_most_max_size() {
    const MAX: usize = 3;
    const ROUNDS: usize = 15;
    let server = Server::start();
    let pool = PoolConfig::new(Lines::new(&server)).max_size(MAX).build();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    // One round: check out, count, ask, hold across a pause, give back.
    let round = {
        let (pool, in_flight, peak) = (pool.clone(), in_flight.clone(), peak.clone());
        move |pause: &dyn Fn()| -> io::Result<()> {
            let mut conn = pool.get()?;
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            assert_eq!(conn.ask("hello")?, "hello");
            pause();
            in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
    };
    let rt = Runtime::builder().workers(2).build().unwrap();
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let round = round.clone();
            rt.spawn_on(i % 2, move || -> io::Result<usize> {
                for _ in 0..ROUNDS {
                    round(&|| yieldloop::sleep(Duration::from_millis(1)))?;
                }
                Ok(Runtime::current_worker().unwrap())
            })
        })
        .collect();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let round = round.clone();
            std::thread::spawn(move || -> io::Result<()> {
                for _ in 0..ROUNDS {
                    round(&|| std::thread::sleep(Duration::from_millis(1)))?;
                }
                Ok(())
            })
        })
        .collect();
    let mut workers = Vec::new();
    for t in tasks {
        workers.push(t.join().unwrap().unwrap());
    }
    for t in threads {
        t.join().unwrap().unwrap();
    }
    workers.sort();
    workers.dedup();
    assert_eq!(workers, [0, 1]);
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= MAX, "{peak} checked out at once");
    assert!(peak >= 2, "the checkouts never overlapped");
    assert!(server.peak() <= MAX, "{} open at the server", server.peak());
    let status = pool.status();
    assert!(status.opened <= MAX as u64, "{status:?}");
    assert_eq!((status.in_use, status.waiting, status.closed), (0, 0, 0));
    assert_eq!(status.size, status.idle);
    assert_eq!(status.opened as usize, status.size);
}

/// The error of a checkout that waited too long.
fn timeout_of(err: io::Error) -> CheckoutTimeout {
    assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
    *err.into_inner()
        .expect("an inner error")
        .downcast::<CheckoutTimeout>()
        .expect("a CheckoutTimeout")
}

/// With the one connection held elsewhere, a task's checkout gives up after
/// its timeout with an error that says so, while the other tasks of its
/// worker keep running; a plain thread's does the same, blocking.
#[test]
fn a_checkout_that_waits_too_long_fails_naming_the_wait_and_the_size() {
    const LIMIT: Duration = Duration::from_millis(100);
    let server = Server::start();
    let pool = PoolConfig::new(Lines::new(&server))
        .max_size(1)
        .checkout_timeout(Some(LIMIT))
        .build();
    let held = pool.get().unwrap();
    let rt = Runtime::builder().workers(1).build().unwrap();
    let in_task = {
        let pool = pool.clone();
        rt.spawn_on(0, move || {
            let ticks = yieldloop::spawn(|| {
                let mut n = 0;
                let end = Instant::now() + LIMIT;
                while Instant::now() < end {
                    yieldloop::sleep(Duration::from_millis(5));
                    n += 1;
                }
                n
            });
            let start = Instant::now();
            let err = pool.get().unwrap_err();
            (err, start.elapsed(), ticks.join().unwrap())
        })
    };
    let (err, waited, ticks) = in_task.join().unwrap();
    let timeout = timeout_of(err);
    assert_eq!((timeout.waited(), timeout.max_size()), (LIMIT, 1));
    assert!(waited >= LIMIT - Duration::from_millis(10), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert!(ticks >= 5, "the worker froze: {ticks} ticks");

    let start = Instant::now();
    let err = pool
        .get_timeout(Some(Duration::from_millis(50)))
        .unwrap_err();
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(40), "{waited:?}");
    let timeout = timeout_of(err);
    assert_eq!(timeout.waited(), Duration::from_millis(50));
    assert_eq!(
        timeout.to_string(),
        "no connection came free within 50ms (all 1 in use)"
    );
    drop(held);
    assert!(pool.get().is_ok());
}

/// Waiters alternate between tasks of two workers and plain threads, each
/// queued before the next starts; the one connection goes to them in that
/// order.
#[test]
fn waiters_are_served_first_come_first_served() {
    const WAITERS: usize = 6;
    let server = Server::start();
    let pool = PoolConfig::new(Lines::new(&server))
        .max_size(1)
        .checkout_timeout(None)
        .build();
    let held = pool.get().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let rt = Runtime::builder().workers(2).build().unwrap();
    let mut tasks = Vec::new();
    let mut threads = Vec::new();
    for i in 0..WAITERS {
        let (mine, order) = (pool.clone(), order.clone());
        let wait = move || {
            let mut conn = mine.get().unwrap();
            order.lock().unwrap().push(i);
            conn.ask("turn").unwrap();
        };
        match i % 3 {
            0 => tasks.push(rt.spawn_on(0, wait)),
            1 => threads.push(std::thread::spawn(wait)),
            _ => tasks.push(rt.spawn_on(1, wait)),
        }
        wait_for(|| pool.status().waiting == i + 1, "the waiter to queue");
    }
    drop(held);
    for t in tasks {
        t.join().unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
    assert_eq!(pool.status().opened, 1);
}

/// A task and a plain thread each panic while holding a connection: the
/// connection is closed (its state is unknown), its place goes to the
/// checkout waiting for it, and nothing stays counted as in use.
#[test]
fn a_panic_while_holding_a_connection_closes_it_and_frees_the_place() {
    let server = Server::start();
    let lines = Lines::new(&server);
    let counts = lines.counts.clone();
    let pool = PoolConfig::new(lines).max_size(1).build();
    let rt = Runtime::builder().workers(2).build().unwrap();

    let first = {
        let pool = pool.clone();
        rt.spawn_on(0, move || {
            let conn = pool.get().unwrap();
            yieldloop::sleep(Duration::from_millis(30));
            panic!("holding connection {}", conn.id);
        })
    };
    wait_for(|| pool.in_use() == 1, "the first checkout");
    let waiter = {
        let pool = pool.clone();
        rt.spawn_on(1, move || pool.get().unwrap().id)
    };
    assert!(first.join().is_err());
    let second_id = waiter.join().unwrap();
    assert_ne!(second_id, 1, "the panicking task's connection was reused");
    assert_eq!(Counts::get(&counts.discards), 1);

    let thread = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let _conn = pool.get().unwrap();
            panic!("a plain thread panics too");
        })
    };
    assert!(thread.join().is_err());
    let status = pool.status();
    assert_eq!(
        (status.size, status.in_use, status.discarded, status.opened),
        (0, 0, 2, 2),
        "{status:?}"
    );
    assert_eq!(pool.get().unwrap().id, 3);
    server.wait_open(1);
}
