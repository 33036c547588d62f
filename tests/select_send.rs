//! `Select` send cases (Go's `case ch <- v`) on single-thread and
//! cross-thread bounded channels, and receive cases on cross-thread
//! channels fed from other workers and plain threads.

mod util;

use std::cell::Cell;
use std::thread;
use std::time::Duration;

use util::within;
use yieldloop::sync::local::{channel, sync_channel};
use yieldloop::sync::{mpsc, Select};
use yieldloop::Runtime;

/// A send case on a full channel waits for room; a receive case that
/// wins first leaves the value in its slot.
#[test]
fn local_send_waits_for_room_and_gives_back() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel::<u32>(1);
            tx.send(1).unwrap();
            let (other_tx, other) = channel::<&str>();
            yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_millis(5));
                other_tx.send("first").unwrap();
            });
            let slot = Cell::new(Some(2));
            {
                let mut sel = Select::new().send(&tx, &slot).recv(&other);
                assert_eq!(sel.wait(), 1);
            }
            assert_eq!(slot.take(), Some(2), "the losing send kept its value");
            assert_eq!(other.try_recv(), Ok("first"));
            // Now room comes from a receiver.
            let reader = yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_millis(5));
                (rx.recv().unwrap(), rx.recv().unwrap())
            });
            slot.set(Some(3));
            let mut sel = Select::new()
                .send(&tx, &slot)
                .timeout(Duration::from_secs(5));
            assert_eq!(sel.wait(), 0);
            assert_eq!(slot.take(), None);
            drop(sel);
            assert_eq!(reader.join().unwrap(), (1, 3));
        });
    });
}

/// A rendezvous send case is ready once a receiver waits; a gone
/// receiver makes it ready with the value left in the slot.
#[test]
fn local_rendezvous_and_closed() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel::<u32>(0);
            let reader = yieldloop::spawn(move || rx.recv().unwrap());
            let slot = Cell::new(Some(9));
            let mut sel = Select::new().send(&tx, &slot);
            assert_eq!(sel.wait(), 0);
            drop(sel);
            assert_eq!(reader.join().unwrap(), 9);
            // The reader's receiver is gone with its task.
            slot.set(Some(10));
            let mut sel = Select::new().send(&tx, &slot);
            assert_eq!(sel.wait(), 0);
            drop(sel);
            assert_eq!(slot.take(), Some(10));
        });
    });
}

/// A task on worker 0 feeds a cross-thread bounded channel through a send
/// case while a plain thread drains it slowly, and stops on a quit message
/// sent from worker 1: every value arrives once, in order.
#[test]
fn mpsc_send_and_recv_cases_across_threads() {
    within(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (tx, rx) = mpsc::sync_channel::<u32>(2);
        let (quit_tx, quit_rx) = mpsc::channel::<()>();
        let drain = thread::spawn(move || {
            let mut got = Vec::new();
            while let Ok(v) = rx.recv() {
                got.push(v);
                if got.len() % 10 == 0 {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            got
        });
        let feeder = rt.spawn_on(0, move || {
            let slot = Cell::new(None);
            let mut next = 0;
            loop {
                if slot.get().is_none() {
                    slot.set(Some(next));
                    next += 1;
                }
                let mut sel = Select::new().recv(&quit_rx).send(&tx, &slot);
                match sel.wait() {
                    0 => break,
                    _ => assert!(next < 100_000, "never told to quit"),
                }
            }
            // What was sent: the value in the slot (if any) was not.
            next - u32::from(slot.get().is_some())
        });
        rt.spawn_on(1, move || {
            yieldloop::sleep(Duration::from_millis(50));
            quit_tx.send(()).unwrap();
        })
        .join()
        .unwrap();
        let sent = feeder.join().unwrap();
        let got = drain.join().unwrap();
        assert!(sent > 0);
        assert_eq!(got, (0..sent).collect::<Vec<_>>());
    });
}
