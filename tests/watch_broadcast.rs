//! `sync::watch` and `sync::broadcast` between tasks of two workers and
//! plain threads.

mod util;

use std::thread;
use std::time::{Duration, Instant};

use util::within;
use yieldloop::sync::{broadcast, watch, RecvTimeoutError};
use yieldloop::Runtime;

fn runtime() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// Receivers on both workers and on a plain thread see the last of a
/// series of values, each change at most once, and the close.
#[test]
fn watch_across_workers_and_threads() {
    within(|| {
        let rt = runtime();
        let (tx, rx) = watch::channel(0u32);
        let watcher = |mut rx: watch::Receiver<u32>| {
            move || {
                let mut seen = vec![];
                while rx.changed().is_ok() {
                    seen.push(*rx.borrow_and_update());
                }
                seen
            }
        };
        let on_workers: Vec<_> = (0..2)
            .map(|w| rt.spawn_on(w, watcher(rx.clone())))
            .collect();
        let plain = thread::spawn(watcher(rx.clone()));
        drop(rx);
        for v in 1..=50 {
            tx.send(v).unwrap();
            if v % 10 == 0 {
                thread::sleep(Duration::from_millis(2));
            }
        }
        drop(tx);
        let mut all: Vec<Vec<u32>> = on_workers.into_iter().map(|h| h.join().unwrap()).collect();
        all.push(plain.join().unwrap());
        for seen in all {
            assert_eq!(seen.last(), Some(&50), "{seen:?}");
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        }
    });
}

/// `changed_timeout` times out without a send, and inside a
/// `yieldloop::timeout` scope the task stops waiting; the channel works on
/// for the next send.
#[test]
fn watch_timeouts_leave_the_channel_working() {
    within(|| {
        let rt = runtime();
        let (tx, rx) = watch::channel(0u32);
        let mut rx1 = rx.clone();
        let h = rt.spawn_on(1, move || {
            let t0 = Instant::now();
            let r = rx1.changed_timeout(Duration::from_millis(20));
            assert_eq!(r, Err(RecvTimeoutError::Timeout));
            assert!(t0.elapsed() >= Duration::from_millis(20));
            let scoped = yieldloop::timeout(Duration::from_millis(20), || rx1.changed());
            assert!(scoped.is_err(), "the scope expired first");
            // Both waits are gone; a send from another worker wakes this one.
            rx1.changed().unwrap();
            *rx1.borrow()
        });
        thread::sleep(Duration::from_millis(100));
        tx.send(7).unwrap();
        assert_eq!(h.join().unwrap(), 7);
        // A plain thread's timed wait.
        let mut rx2 = rx;
        assert!(rx2.has_changed().unwrap());
        rx2.changed().unwrap();
        assert_eq!(
            rx2.changed_timeout(Duration::from_millis(10)),
            Err(RecvTimeoutError::Timeout)
        );
    });
}

/// Every receiver, on two workers and a plain thread, gets every value in
/// order.
#[test]
fn broadcast_every_receiver_every_value() {
    within(|| {
        let rt = runtime();
        let (tx, rx) = broadcast::channel::<u64>(1024);
        let sum = |mut rx: broadcast::Receiver<u64>| {
            move || {
                let mut got = Vec::new();
                loop {
                    match rx.recv() {
                        Ok(v) => got.push(v),
                        Err(broadcast::RecvError::Closed) => return got,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        };
        let mut tasks: Vec<_> = (0..8)
            .map(|i| rt.spawn_on(i % 2, sum(tx.subscribe())))
            .collect();
        let plain = thread::spawn(sum(rx));
        for v in 0..1000 {
            tx.send(v).unwrap();
        }
        drop(tx);
        let expect: Vec<u64> = (0..1000).collect();
        for h in tasks.drain(..) {
            assert_eq!(h.join().unwrap(), expect);
        }
        assert_eq!(plain.join().unwrap(), expect);
    });
}

/// A receiver that holds its worker while 10 values go into a channel of
/// 4 is told it missed 6 and then gets the last 4.
#[test]
fn broadcast_lagging_receiver() {
    within(|| {
        let rt = runtime();
        let (tx, rx) = broadcast::channel::<u32>(4);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let mut rx0 = rx;
        let h = rt.spawn_on(0, move || {
            ready_tx.send(()).unwrap();
            // Holds the worker: the sends all happen before it looks.
            go_rx.recv().unwrap();
            let first = rx0.recv();
            let rest: Vec<u32> = (0..4).map(|_| rx0.recv().unwrap()).collect();
            (first, rest, rx0.try_recv())
        });
        ready_rx.recv().unwrap();
        for v in 0..10 {
            tx.send(v).unwrap();
        }
        go_tx.send(()).unwrap();
        let (first, rest, after) = h.join().unwrap();
        assert_eq!(first, Err(broadcast::RecvError::Lagged(6)));
        assert_eq!(rest, [6, 7, 8, 9]);
        assert_eq!(after, Err(broadcast::TryRecvError::Empty));
        drop(tx);
    });
}

/// A timed-out receive leaves the receiver in place for the next value;
/// sending with no receiver fails and gives the value back.
#[test]
fn broadcast_timeout_and_no_receiver() {
    within(|| {
        let rt = runtime();
        let (tx, mut rx) = broadcast::channel::<u32>(2);
        let h = rt.spawn_on(1, move || {
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(10)),
                Err(broadcast::TryRecvError::Empty)
            );
            rx.recv()
        });
        thread::sleep(Duration::from_millis(50));
        tx.send(3).unwrap();
        assert_eq!(h.join().unwrap(), Ok(3));
        assert_eq!(tx.receiver_count(), 0);
        assert_eq!(tx.send(4).unwrap_err().0, 4);
    });
}
