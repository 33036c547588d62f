//! Channels: single-thread `channel`/`sync_channel`/`oneshot` and the
//! cross-thread `sync::mpsc`, under contention, closing, timeouts and
//! cancellation.

mod util;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use yieldloop::sync::local::{channel, sync_channel};
use yieldloop::sync::{mpsc, oneshot, RecvError, RecvTimeoutError, TryRecvError, TrySendError};
use yieldloop::{spawn, yield_now};

use util::within;

/// A value that counts its drops, to see values are neither lost nor
/// dropped twice.
struct Tracked(u32, Rc<Cell<u32>>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.1.set(self.1.get() + 1);
    }
}

/// Messages from one sender arrive in the order they were sent.
#[test]
fn unbounded_keeps_order() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            let producer = spawn(move || {
                for i in 0..10_000u32 {
                    tx.send(i).unwrap();
                    if i % 100 == 0 {
                        yield_now();
                    }
                }
            });
            let got: Vec<u32> = rx.iter().collect();
            assert_eq!(got, (0..10_000).collect::<Vec<_>>());
            producer.join().unwrap();
        })
    });
}

/// Five thousand tasks send into one channel; every message arrives once.
#[test]
fn thousands_of_senders() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            for i in 0..5_000u32 {
                let tx = tx.clone();
                spawn(move || {
                    yield_now();
                    tx.send(i).unwrap();
                });
            }
            drop(tx);
            let mut got: Vec<u32> = rx.into_iter().collect();
            got.sort_unstable();
            assert_eq!(got, (0..5_000).collect::<Vec<_>>());
        })
    });
}

/// Two thousand tasks push through a bounded channel of 8: the buffer
/// never holds more than 8, completed sends never run more than 8 ahead of
/// receives, and nothing is lost.
#[test]
fn bounded_contention_backpressure() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel(8);
            let sent = Rc::new(Cell::new(0usize));
            for t in 0..2_000u64 {
                let (tx, sent) = (tx.clone(), sent.clone());
                spawn(move || {
                    for k in 0..5 {
                        tx.send(t * 10 + k).unwrap();
                        sent.set(sent.get() + 1);
                    }
                });
            }
            drop(tx);
            let (mut received, mut sum) = (0usize, 0u64);
            while let Ok(v) = rx.recv() {
                received += 1;
                sum += v;
                assert!(rx.len() <= 8, "buffer grew to {}", rx.len());
                assert!(
                    sent.get() <= received + 8,
                    "{} sent, {received} received",
                    sent.get()
                );
                if received % 7 == 0 {
                    yield_now();
                }
            }
            assert_eq!(received, 10_000);
            assert_eq!(sum, (0..2_000u64).map(|t| 5 * t * 10 + 10).sum::<u64>());
        })
    });
}

/// Senders parked on a full channel are served in the order they parked.
#[test]
fn parked_senders_are_served_in_order() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel(1);
            tx.send(0).unwrap();
            for i in 1..=50 {
                let tx = tx.clone();
                spawn(move || tx.send(i).unwrap());
            }
            drop(tx);
            yield_now(); // all fifty park, in spawn order
            let got: Vec<i32> = rx.iter().collect();
            assert_eq!(got, (0..=50).collect::<Vec<_>>());
        })
    });
}

/// A rendezvous channel: a send completes only when a receiver takes the
/// value; try_send needs a waiting receiver; try_recv takes from a parked
/// sender.
#[test]
fn rendezvous_channel() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel(0);
            assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
            let done = Rc::new(Cell::new(0));
            let d = done.clone();
            let tx2 = tx.clone();
            let sender = spawn(move || {
                for i in 1..=3 {
                    tx2.send(i).unwrap();
                    d.set(i);
                }
            });
            yield_now();
            assert_eq!(
                done.get(),
                0,
                "a rendezvous send returned with nobody receiving"
            );
            assert_eq!(rx.try_recv(), Ok(1));
            yield_now();
            assert_eq!(done.get(), 1);
            assert_eq!(rx.recv(), Ok(2));
            assert_eq!(rx.recv(), Ok(3));
            sender.join().unwrap();
            // A receiver parked first: try_send hands it the value.
            let rx = Rc::new(rx);
            let r = rx.clone();
            let receiver = spawn(move || r.recv());
            yield_now();
            assert_eq!(tx.try_send(9), Ok(()));
            assert_eq!(receiver.join().unwrap(), Ok(9));
            assert_eq!(rx.len(), 0);
        })
    });
}

/// After the last sender drops, buffered messages are still delivered;
/// then receives report the close.
#[test]
fn buffered_messages_survive_the_close() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel(4);
            let tx2 = tx.clone();
            tx.send(1).unwrap();
            tx2.send(2).unwrap();
            drop(tx);
            assert_eq!(rx.try_recv(), Ok(1));
            drop(tx2);
            assert_eq!(rx.recv(), Ok(2));
            assert_eq!(rx.recv(), Err(RecvError));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            assert_eq!(
                rx.recv_timeout(Duration::from_secs(5)),
                Err(RecvTimeoutError::Disconnected)
            );
        })
    });
}

/// Receivers parked on an empty channel all wake with `RecvError` when the
/// last sender drops.
#[test]
fn parked_receivers_see_the_close() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel::<u8>();
            let rx = Rc::new(rx);
            let waiters: Vec<_> = (0..100)
                .map(|_| {
                    let rx = rx.clone();
                    spawn(move || rx.recv())
                })
                .collect();
            yield_now();
            drop(tx);
            for w in waiters {
                assert_eq!(w.join().unwrap(), Err(RecvError));
            }
        })
    });
}

/// A send to a dropped receiver gives the value back, and so does a send
/// parked on a full channel when the receiver drops; nothing is dropped
/// twice or leaked.
#[test]
fn send_to_a_closed_channel_gives_the_value_back() {
    within(|| {
        yieldloop::run(|| {
            let drops = Rc::new(Cell::new(0));
            let (tx, rx) = sync_channel(1);
            tx.send(Tracked(0, drops.clone())).unwrap();
            let tx2 = tx.clone();
            let d = drops.clone();
            let parked = spawn(move || tx2.send(Tracked(1, d)).map_err(|e| e.into_inner().0));
            yield_now();
            drop(rx); // drops the buffered value 0, wakes the parked sender
            assert_eq!(drops.get(), 1);
            assert_eq!(parked.join().unwrap(), Err(1));
            assert_eq!(drops.get(), 2);
            let err = tx.send(Tracked(2, drops.clone())).unwrap_err();
            assert_eq!(err.to_string(), "sending on a closed channel");
            assert_eq!(err.0 .0, 2);
            drop(err);
            assert_eq!(drops.get(), 3);
            let (tx, rx) = sync_channel::<u8>(1);
            drop(rx);
            assert_eq!(tx.try_send(5), Err(TrySendError::Disconnected(5)));
        })
    });
}

/// `try_recv` and `try_send` report empty, full and disconnected, and the
/// errors print clearly.
#[test]
fn try_operations_and_error_messages() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = sync_channel(1);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            tx.try_send(1).unwrap();
            let full = tx.try_send(2).unwrap_err();
            assert_eq!(full.to_string(), "sending on a full channel");
            assert_eq!(full.into_inner(), 2);
            assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1]);
            drop(tx);
            let closed = rx.try_recv().unwrap_err();
            assert_eq!(closed, TryRecvError::Disconnected);
            assert_eq!(closed.to_string(), "receiving on a closed channel");
            assert_eq!(
                TryRecvError::Empty.to_string(),
                "receiving on an empty channel"
            );
            assert_eq!(RecvError.to_string(), "receiving on a closed channel");
            assert_eq!(
                RecvTimeoutError::Timeout.to_string(),
                "timed out waiting on a channel"
            );
        })
    });
}

/// `recv_timeout` gives up no earlier than its timeout, and returns a
/// message that comes in time without waiting the timeout out.
#[test]
fn recv_timeout_times_out_and_succeeds() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            let start = Instant::now();
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(30)),
                Err(RecvTimeoutError::Timeout)
            );
            assert!(start.elapsed() >= Duration::from_millis(30));
            assert!(format!("{rx:?}").contains("waiting_receivers: 0"));
            spawn(move || {
                yieldloop::sleep(Duration::from_millis(10));
                tx.send("on time").unwrap();
            });
            let start = Instant::now();
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("on time"));
            assert!(start.elapsed() < Duration::from_secs(5));
        })
    });
}

/// `iter`, `&rx` in a for loop and `into_iter` end once every sender is
/// gone.
#[test]
fn iterators_end_at_the_close() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            spawn(move || {
                for i in 0..5 {
                    tx.send(i).unwrap();
                    yield_now();
                }
            });
            let mut n = 0;
            for v in &rx {
                assert_eq!(v, n);
                n += 1;
            }
            assert_eq!(n, 5);
            let (tx, rx) = sync_channel(2);
            spawn(move || (0..5).for_each(|i| tx.send(i).unwrap()));
            assert_eq!(rx.into_iter().sum::<i32>(), 10);
        })
    });
}

/// A receiver cancelled while parked leaves no ghost in the queue: the next
/// message goes to a live receiver.
#[test]
fn cancelled_receiver_leaves_no_ghost() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            let rx = Rc::new(rx);
            let (ra, rb) = (rx.clone(), rx.clone());
            let a = spawn(move || ra.recv());
            let b = spawn(move || rb.recv());
            yield_now(); // a parks first, then b
            a.cancel();
            assert!(format!("{rx:?}").contains("waiting_receivers: 1"));
            tx.send(7).unwrap();
            assert_eq!(b.join().unwrap(), Ok(7));
            assert!(a.join().unwrap_err().is_cancelled());
        })
    });
}

/// A receiver that was picked for a message but cancelled before it ran
/// hands the message to the next receiver.
#[test]
fn receiver_cancelled_after_pick_passes_the_message_on() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            let rx = Rc::new(rx);
            let (ra, rb) = (rx.clone(), rx.clone());
            let a = spawn(move || ra.recv());
            let b = spawn(move || rb.recv());
            yield_now();
            tx.send(1).unwrap(); // wakes a …
            a.cancel(); // … which never gets to run
            assert_eq!(b.join().unwrap(), Ok(1));
        })
    });
}

/// A sender cancelled while parked on a full channel withdraws its value
/// (dropped once, never delivered); the senders behind it keep their order.
#[test]
fn cancelled_sender_withdraws_its_value() {
    within(|| {
        yieldloop::run(|| {
            let drops = Rc::new(Cell::new(0));
            let (tx, rx) = sync_channel(1);
            tx.send(Tracked(0, drops.clone())).unwrap();
            let senders: Vec<_> = (1..=3)
                .map(|i| {
                    let (tx, d) = (tx.clone(), drops.clone());
                    spawn(move || tx.send(Tracked(i, d)).is_ok())
                })
                .collect();
            drop(tx);
            yield_now(); // 1, 2, 3 park in order
            assert!(format!("{rx:?}").contains("waiting_senders: 3"));
            senders[1].cancel();
            assert_eq!(drops.get(), 1, "the withdrawn value is dropped once");
            assert!(format!("{rx:?}").contains("waiting_senders: 2"));
            let got: Vec<u32> = rx.iter().map(|t| t.0).collect();
            assert_eq!(got, [0, 1, 3]);
            assert_eq!(drops.get(), 4);
        })
    });
}

/// A receive inside an expiring `timeout` scope unwinds out cleanly, and
/// the channel goes on working.
#[test]
fn timeout_scope_around_recv() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel::<u8>();
            let r = yieldloop::timeout(Duration::from_millis(10), || rx.recv());
            assert!(r.is_err());
            assert!(format!("{rx:?}").contains("waiting_receivers: 0"));
            let (stx, srx) = sync_channel(0);
            let r = yieldloop::timeout(Duration::from_millis(10), || stx.send(1u8));
            assert!(r.is_err());
            assert_eq!(
                srx.try_recv(),
                Err(TryRecvError::Empty),
                "timed-out send happened"
            );
            tx.send(3).unwrap();
            assert_eq!(rx.recv(), Ok(3));
        })
    });
}

/// A oneshot delivers its one value; a sender dropped unsent closes it;
/// `recv_timeout` times out while it is empty.
#[test]
fn oneshot_delivers_once() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = oneshot();
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(5)),
                Err(RecvTimeoutError::Timeout)
            );
            spawn(move || tx.send("answer").unwrap());
            assert_eq!(rx.recv(), Ok("answer"));

            let (tx, rx) = oneshot::<u8>();
            drop(tx);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            assert_eq!(rx.recv(), Err(RecvError));

            let (tx, rx) = oneshot::<u8>();
            drop(rx);
            assert_eq!(tx.send(1).unwrap_err().0, 1);
        })
    });
}

/// Four OS threads, each running its own scheduler with a hundred sending
/// tasks, and two plain threads all send to one receiving task.
#[test]
fn mpsc_many_schedulers_and_plain_threads() {
    within(|| {
        let (tx, rx) = mpsc::channel::<(usize, usize)>();
        let mut threads = Vec::new();
        for w in 0..4 {
            let tx = tx.clone();
            threads.push(thread::spawn(move || {
                yieldloop::run(move || {
                    let tasks: Vec<_> = (0..100)
                        .map(|t| {
                            let tx = tx.clone();
                            spawn(move || {
                                for k in 0..10 {
                                    tx.send((w * 100 + t, k)).unwrap();
                                    if k % 3 == 0 {
                                        yield_now();
                                    }
                                }
                            })
                        })
                        .collect();
                    tasks.into_iter().for_each(|t| t.join().unwrap());
                })
            }));
        }
        for p in 0..2 {
            let tx = tx.clone();
            threads.push(thread::spawn(move || {
                for k in 0..500 {
                    tx.send((1_000 + p, k)).unwrap();
                }
            }));
        }
        drop(tx);
        let per_sender = yieldloop::run(move || {
            let mut last = std::collections::HashMap::<usize, usize>::new();
            let mut n = 0;
            for (sender, k) in rx.iter() {
                // Each sender's messages arrive in the order it sent them.
                if let Some(prev) = last.insert(sender, k) {
                    assert_eq!(k, prev + 1, "sender {sender} out of order");
                }
                n += 1;
            }
            (n, last.len())
        });
        assert_eq!(per_sender, (4 * 100 * 10 + 2 * 500, 402));
        threads.into_iter().for_each(|t| t.join().unwrap());
    });
}

/// A plain-thread sender on a full bounded cross-thread channel blocks until
/// the receiving task makes room.
#[test]
fn mpsc_bounded_plain_thread_sender_blocks() {
    within(|| {
        let (tx, rx) = mpsc::sync_channel(2);
        let sent = Arc::new(AtomicUsize::new(0));
        let s = sent.clone();
        let producer = thread::spawn(move || {
            for i in 0..100 {
                tx.send(i).unwrap();
                s.store(i + 1, Ordering::SeqCst);
            }
        });
        let got = yieldloop::run(move || {
            // However slow the producer thread is to start, it fills the
            // two slots …
            while sent.load(Ordering::SeqCst) < 2 {
                yieldloop::sleep(Duration::from_millis(1));
            }
            // … and then stays blocked on the third send.
            yieldloop::sleep(Duration::from_millis(50));
            assert_eq!(sent.load(Ordering::SeqCst), 2);
            rx.iter().collect::<Vec<usize>>()
        });
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        producer.join().unwrap();
    });
}

/// Tasks on two schedulers play ping-pong through two bounded cross-thread
/// channels, a thousand rounds.
#[test]
fn mpsc_ping_pong_between_schedulers() {
    within(|| {
        let (to_b, from_a) = mpsc::sync_channel::<u32>(1);
        let (to_a, from_b) = mpsc::sync_channel::<u32>(0);
        let b = thread::spawn(move || {
            yieldloop::run(move || {
                for v in from_a.iter() {
                    to_a.send(v + 1).unwrap();
                }
            })
        });
        yieldloop::run(move || {
            for i in 0..1_000 {
                to_b.send(i).unwrap();
                assert_eq!(from_b.recv(), Ok(i + 1));
            }
        });
        b.join().unwrap();
    });
}

/// Tasks of three schedulers park on a full bounded channel that a plain
/// thread drains; every value arrives, each sender's in order.
#[test]
fn mpsc_parked_task_senders_drained_by_a_plain_thread() {
    within(|| {
        let (tx, rx) = mpsc::sync_channel::<(usize, usize)>(4);
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let tx = tx.clone();
                thread::spawn(move || {
                    yieldloop::run(move || {
                        let tasks: Vec<_> = (0..50)
                            .map(|t| {
                                let tx = tx.clone();
                                spawn(move || {
                                    (0..20).for_each(|k| tx.send((w * 50 + t, k)).unwrap())
                                })
                            })
                            .collect();
                        tasks.into_iter().for_each(|t| t.join().unwrap());
                    })
                })
            })
            .collect();
        drop(tx);
        let mut last = std::collections::HashMap::<usize, usize>::new();
        let mut n = 0;
        for (sender, k) in rx.iter() {
            if let Some(prev) = last.insert(sender, k) {
                assert_eq!(k, prev + 1);
            }
            n += 1;
        }
        assert_eq!(n, 3 * 50 * 20);
        workers.into_iter().for_each(|w| w.join().unwrap());
    });
}

/// `recv_timeout` on a cross-thread channel times out in a task and on a
/// plain thread, and returns early when a message comes from elsewhere.
#[test]
fn mpsc_recv_timeout() {
    within(|| {
        let (tx, rx) = mpsc::channel::<u8>();
        let start = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(20)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(start.elapsed() >= Duration::from_millis(20));
        let rx = yieldloop::run(move || {
            let start = Instant::now();
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(20)),
                Err(RecvTimeoutError::Timeout)
            );
            assert!(start.elapsed() >= Duration::from_millis(20));
            let t = thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                tx.send(1).unwrap();
            });
            let start = Instant::now();
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(1));
            assert!(start.elapsed() < Duration::from_secs(5));
            t.join().unwrap();
            rx
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(5)),
            Err(RecvTimeoutError::Disconnected)
        );
    });
}

/// Dropping a cross-thread receiver wakes senders parked on other
/// schedulers, each getting its value back.
#[test]
fn mpsc_receiver_drop_wakes_parked_senders() {
    within(|| {
        let (tx, rx) = mpsc::sync_channel::<u32>(0);
        let (parked_tx, parked_rx) = std::sync::mpsc::channel();
        let sender = thread::spawn(move || {
            yieldloop::run(move || {
                let tasks: Vec<_> = (0..10)
                    .map(|i| {
                        let tx = tx.clone();
                        spawn(move || tx.send(i).map_err(|e| e.0))
                    })
                    .collect();
                yield_now();
                parked_tx.send(()).unwrap();
                let mut back: Vec<u32> = tasks
                    .into_iter()
                    .map(|t| t.join().unwrap().unwrap_err())
                    .collect();
                back.sort_unstable();
                back
            })
        });
        parked_rx.recv().unwrap();
        drop(rx);
        assert_eq!(sender.join().unwrap(), (0..10).collect::<Vec<_>>());
    });
}

/// A task cancelled while parked on a cross-thread receive leaves no ghost:
/// a message from a plain thread goes to the live receiver.
#[test]
fn mpsc_cancelled_receiver_leaves_no_ghost() {
    within(|| {
        let (tx, rx) = mpsc::channel::<u8>();
        yieldloop::run(move || {
            let rx = Rc::new(rx);
            let (ra, rb) = (rx.clone(), rx.clone());
            let a = spawn(move || ra.recv());
            let b = spawn(move || rb.recv());
            yield_now();
            a.cancel();
            assert!(format!("{rx:?}").contains("waiting_receivers: 1"));
            let t = thread::spawn(move || tx.send(4).unwrap());
            assert_eq!(b.join().unwrap(), Ok(4));
            t.join().unwrap();
        });
    });
}

/// A task picked for a cross-thread message but cancelled before it ran
/// hands the wake-up to the next receiving task.
#[test]
fn mpsc_receiver_cancelled_after_pick_passes_it_on() {
    within(|| {
        let (tx, rx) = mpsc::channel::<u8>();
        yieldloop::run(move || {
            let rx = Rc::new(rx);
            let (ra, rb) = (rx.clone(), rx.clone());
            let a = spawn(move || ra.recv());
            let b = spawn(move || rb.recv());
            yield_now();
            tx.send(8).unwrap(); // picks a, on this thread …
            a.cancel(); // … which never runs
            assert_eq!(b.join().unwrap(), Ok(8));
        });
    });
}

/// The cross-thread channel's handles can move to other threads.
#[test]
fn mpsc_handles_are_send() {
    fn send<T: Send>() {}
    send::<mpsc::Sender<u8>>();
    send::<mpsc::SyncSender<u8>>();
    send::<mpsc::Receiver<u8>>();
}
