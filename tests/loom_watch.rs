//! Model checks of `sync::watch` and `sync::broadcast`: a receiver waiting
//! (as a task or as a plain thread) is woken by a send or the close from
//! another thread, under every interleaving within `LOOM_MAX_PREEMPTIONS`.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_watch`.
#![cfg(loom)]

use loom::thread;
use yieldloop::model::{broadcast_recv_task, watch_changed_task, ModelTask};
use yieldloop::sync::{broadcast, watch};

#[test]
fn watch_task_sees_the_change() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0u32);
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
        });
        let mut task = ModelTask::new();
        assert!(watch_changed_task(&mut rx, &mut task));
        assert_eq!(*rx.borrow(), 1);
        t.join().unwrap();
        // The sender is gone: the next wait ends with the close.
        assert!(!watch_changed_task(&mut rx, &mut task));
    });
}

#[test]
fn watch_thread_sees_the_change() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0u32);
        let t = thread::spawn(move || tx.send_replace(1));
        rx.changed().unwrap();
        assert_eq!(*rx.borrow_and_update(), 1);
        assert_eq!(t.join().unwrap(), 0);
    });
}

/// Two receivers, a task and a thread, both woken by one send.
#[test]
fn watch_wakes_every_receiver() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0u32);
        let mut rx2 = rx.clone();
        let waiter = thread::spawn(move || rx2.changed().is_ok());
        let sender = thread::spawn(move || tx.send(1).is_ok());
        let mut task = ModelTask::new();
        assert!(watch_changed_task(&mut rx, &mut task));
        assert!(waiter.join().unwrap());
        sender.join().unwrap();
    });
}

#[test]
fn watch_close_wakes_thread() {
    loom::model(|| {
        let (tx, mut rx) = watch::channel(0u32);
        let t = thread::spawn(move || drop(tx));
        assert!(rx.changed().is_err());
        t.join().unwrap();
    });
}

#[test]
fn broadcast_task_gets_each_value() {
    loom::model(|| {
        let (tx, mut rx) = broadcast::channel::<u32>(2);
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        let mut task = ModelTask::new();
        assert_eq!(broadcast_recv_task(&mut rx, &mut task), Ok(1));
        assert_eq!(broadcast_recv_task(&mut rx, &mut task), Ok(2));
        assert_eq!(
            broadcast_recv_task(&mut rx, &mut task),
            Err(broadcast::TryRecvError::Closed)
        );
        t.join().unwrap();
    });
}

/// Capacity 1 and two sends: the thread receiver gets both or is told it
/// missed the first, never anything else.
#[test]
fn broadcast_thread_lags_or_gets_all() {
    loom::model(|| {
        let (tx, mut rx) = broadcast::channel::<u32>(1);
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        let mut got = Vec::new();
        loop {
            match rx.recv() {
                Ok(v) => got.push(v),
                Err(broadcast::RecvError::Lagged(n)) => {
                    assert_eq!(n, 1);
                    got.push(0);
                }
                Err(broadcast::RecvError::Closed) => break,
            }
        }
        assert!(got == [1, 2] || got == [0, 2], "{got:?}");
        t.join().unwrap();
    });
}
