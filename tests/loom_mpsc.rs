//! Model checks of the cross-thread channels (`yieldloop::sync::mpsc`),
//! with plain threads as senders and receivers: the hand-off of a message
//! to a receiver that waits, a rendezvous, a full bounded channel, and the
//! close, under every interleaving within `LOOM_MAX_PREEMPTIONS`.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_mpsc`.
#![cfg(loom)]

use loom::thread;
use yieldloop::sync::mpsc;

#[test]
fn send_wakes_waiting_receiver() {
    loom::model(|| {
        let (tx, rx) = mpsc::channel::<u32>();
        let t = thread::spawn(move || tx.send(1).unwrap());
        assert_eq!(rx.recv(), Ok(1));
        // The sender is gone once its thread ends.
        t.join().unwrap();
        assert!(rx.recv().is_err());
    });
}

#[test]
fn close_wakes_waiting_receiver() {
    loom::model(|| {
        let (tx, rx) = mpsc::channel::<u32>();
        let t = thread::spawn(move || drop(tx));
        assert!(rx.recv().is_err());
        t.join().unwrap();
    });
}

#[test]
fn rendezvous_hands_over() {
    loom::model(|| {
        let (tx, rx) = mpsc::sync_channel::<u32>(0);
        let t = thread::spawn(move || tx.send(5).is_ok());
        assert_eq!(rx.recv(), Ok(5));
        assert!(t.join().unwrap());
    });
}

/// A sender parked on a full channel is let in by a receive, in order.
#[test]
fn full_channel_sender_moves_up() {
    loom::model(|| {
        let (tx, rx) = mpsc::sync_channel::<u32>(1);
        let t = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        t.join().unwrap();
    });
}

/// A receiver that goes while a sender is parked gives the sender its
/// value back.
#[test]
fn receiver_drop_releases_parked_sender() {
    loom::model(|| {
        let (tx, rx) = mpsc::sync_channel::<u32>(0);
        let t = thread::spawn(move || tx.send(9));
        drop(rx);
        assert_eq!(t.join().unwrap().unwrap_err().0, 9);
    });
}

/// Two senders on two threads, one receiver: both messages arrive.
#[test]
fn two_senders() {
    loom::model(|| {
        let (tx, rx) = mpsc::channel::<u32>();
        let tx2 = tx.clone();
        let a = thread::spawn(move || tx.send(1).unwrap());
        let b = thread::spawn(move || tx2.send(2).unwrap());
        let x = rx.recv().unwrap();
        let y = rx.recv().unwrap();
        assert_eq!(x + y, 3);
        a.join().unwrap();
        b.join().unwrap();
    });
}
