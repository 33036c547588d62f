//! `Select`: channels, sockets, task ends and deadlines; losers unregistered
//! and wake-ups handed on.

mod util;

use std::io::{Read, Write};
use std::rc::Rc;
use std::thread;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::sync::local::channel;
use yieldloop::sync::{mpsc, oneshot, Select, TryRecvError};
use yieldloop::{sleep, spawn, yield_now};

use util::within;

/// A connected pair of sockets: (accepted side, connecting side).
fn socket_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = spawn(move || TcpStream::connect(addr).unwrap());
    let (server, _) = listener.accept().unwrap();
    (server, client.join().unwrap())
}

/// A case that is ready already is reported without pausing, and among
/// ready cases the first added wins.
#[test]
fn ready_case_is_reported_in_order() {
    within(|| {
        yieldloop::run(|| {
            let (atx, a) = channel();
            let (btx, b) = channel();
            btx.send(2).unwrap();
            assert_eq!(Select::new().recv(&a).recv(&b).wait(), 1);
            atx.send(1).unwrap();
            assert_eq!(Select::new().recv(&a).recv(&b).wait(), 0);
            assert_eq!(a.try_recv(), Ok(1));
            assert_eq!(b.try_recv(), Ok(2));
        })
    });
}

/// The select waits for whichever channel gets a message first.
#[test]
fn waits_for_the_first_message() {
    within(|| {
        yieldloop::run(|| {
            let (_atx, a) = channel::<u8>();
            let (btx, b) = channel();
            spawn(move || {
                sleep(Duration::from_millis(10));
                btx.send("b").unwrap();
            });
            let start = Instant::now();
            let mut sel = Select::new().recv(&a).recv(&b);
            assert_eq!(sel.wait(), 1);
            assert!(start.elapsed() >= Duration::from_millis(10));
            assert_eq!(b.try_recv(), Ok("b"));
        })
    });
}

/// A deadline case fires when nothing else does, no earlier than its
/// instant; a timeout case counts from the start of each wait.
#[test]
fn deadline_and_timeout_cases() {
    within(|| {
        yieldloop::run(|| {
            let (_tx, rx) = channel::<u8>();
            let start = Instant::now();
            let at = start + Duration::from_millis(30);
            assert_eq!(Select::new().recv(&rx).deadline(at).wait(), 1);
            assert!(Instant::now() >= at);
            let mut sel = Select::new().recv(&rx).timeout(Duration::from_millis(15));
            for _ in 0..2 {
                let t = Instant::now();
                assert_eq!(sel.wait(), 1);
                assert!(t.elapsed() >= Duration::from_millis(15));
            }
            assert!(format!("{rx:?}").contains("waiting_receivers: 0"));
        })
    });
}

/// A join case fires when the task ends, and stays ready after.
#[test]
fn join_case_fires_when_the_task_ends() {
    within(|| {
        yieldloop::run(|| {
            let (_tx, rx) = channel::<u8>();
            let worker = spawn(|| {
                sleep(Duration::from_millis(10));
                42
            });
            let mut sel = Select::new().recv(&rx).join(&worker);
            assert_eq!(sel.wait(), 1);
            assert_eq!(sel.wait(), 1);
            drop(sel);
            assert_eq!(worker.join().unwrap(), 42);
            // A task that has ended already is ready at once.
            let done = spawn(|| ());
            yield_now();
            assert_eq!(Select::new().recv(&rx).join(&done).wait(), 1);
        })
    });
}

/// A socket case fires when the peer writes.
#[test]
fn readable_socket_case() {
    within(|| {
        yieldloop::run(|| {
            let (server, client) = socket_pair();
            let (_tx, rx) = channel::<u8>();
            spawn(move || {
                sleep(Duration::from_millis(10));
                (&client).write_all(b"ping").unwrap();
                client
            });
            let mut sel = Select::new()
                .recv(&rx)
                .readable(server.io_id())
                .timeout(Duration::from_secs(10));
            assert_eq!(sel.wait(), 1);
            let mut buf = [0; 4];
            (&server).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"ping");
        })
    });
}

/// Two sockets made readable in the same turn are both reported, one per
/// wait: the edge of the one not reported first is remembered, not lost.
#[test]
fn two_socket_edges_are_both_reported() {
    within(|| {
        yieldloop::run(|| {
            let (s1, c1) = socket_pair();
            let (s2, c2) = socket_pair();
            let writer = spawn(move || {
                sleep(Duration::from_millis(10));
                (&c2).write_all(b"2").unwrap();
                (&c1).write_all(b"1").unwrap();
                (c1, c2)
            });
            let mut sel = Select::new()
                .readable(s1.io_id())
                .readable(s2.io_id())
                .timeout(Duration::from_secs(5));
            let mut buf = [0; 1];
            assert_eq!(sel.wait(), 0);
            (&s1).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"1");
            assert_eq!(sel.wait(), 1, "the second socket's edge was lost");
            (&s2).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"2");
            drop(writer.join().unwrap());
        })
    });
}

/// After a select returns, its entries are gone from every channel: a
/// message on a losing channel goes to that channel's other receiver.
#[test]
fn losers_are_unregistered() {
    within(|| {
        yieldloop::run(|| {
            let (atx, a) = channel();
            let (btx, b) = channel();
            let b = Rc::new(b);
            let selector = {
                let b = b.clone();
                spawn(move || Select::new().recv(&a).recv(&*b).wait())
            };
            yield_now(); // the select parks on both
            let other = {
                let b = b.clone();
                spawn(move || b.recv())
            };
            yield_now(); // the other receiver queues behind it on b
            atx.send(1).unwrap();
            assert_eq!(selector.join().unwrap(), 0);
            assert!(format!("{b:?}").contains("waiting_receivers: 1"));
            btx.send(2).unwrap();
            assert_eq!(other.join().unwrap(), Ok(2));
        })
    });
}

/// A channel that picked the select for a message the select does not
/// report hands that wake-up to the channel's next receiver.
#[test]
fn unused_pick_is_handed_on() {
    within(|| {
        yieldloop::run(|| {
            let (atx, a) = channel();
            let (btx, b) = channel();
            let b = Rc::new(b);
            let selector = {
                let b = b.clone();
                spawn(move || Select::new().recv(&a).recv(&*b).wait())
            };
            yield_now();
            let other = {
                let b = b.clone();
                spawn(move || b.recv())
            };
            yield_now();
            btx.send("for b").unwrap(); // picks the select (first in b's queue)
            atx.send("for a").unwrap(); // ready too; case 0 wins
            assert_eq!(selector.join().unwrap(), 0);
            assert_eq!(other.join().unwrap(), Ok("for b"));
        })
    });
}

/// A task cancelled while in a select leaves no entry behind, and a message
/// it had been picked for goes to the next receiver.
#[test]
fn cancelled_select_leaves_no_ghost() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel();
            let rx = Rc::new(rx);
            let r = rx.clone();
            let selector = spawn(move || Select::new().recv(&*r).wait());
            let r = rx.clone();
            let other = spawn(move || r.recv());
            yield_now();
            assert!(format!("{rx:?}").contains("waiting_receivers: 2"));
            selector.cancel();
            assert!(format!("{rx:?}").contains("waiting_receivers: 1"));
            tx.send(1).unwrap();
            assert_eq!(other.join().unwrap(), Ok(1));

            // Picked, then cancelled before it ran: handed on.
            let r = rx.clone();
            let selector = spawn(move || Select::new().recv(&*r).wait());
            let r = rx.clone();
            let other = spawn(move || r.recv());
            yield_now();
            tx.send(2).unwrap();
            selector.cancel();
            assert_eq!(other.join().unwrap(), Ok(2));
        })
    });
}

/// A select inside an expiring `timeout` scope unwinds out and leaves no
/// entries behind.
#[test]
fn timeout_scope_around_select() {
    within(|| {
        yieldloop::run(|| {
            let (_tx, rx) = channel::<u8>();
            let r =
                yieldloop::timeout(Duration::from_millis(10), || Select::new().recv(&rx).wait());
            assert!(r.is_err());
            assert!(format!("{rx:?}").contains("waiting_receivers: 0"));
        })
    });
}

/// A closed channel is a ready case; its receive reports the close.
#[test]
fn closed_channel_is_ready() {
    within(|| {
        yieldloop::run(|| {
            let (tx, rx) = channel::<u8>();
            let (_keep, other) = channel::<u8>();
            drop(tx);
            assert_eq!(Select::new().recv(&other).recv(&rx).wait(), 1);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            let (tx, once) = oneshot::<u8>();
            spawn(move || {
                sleep(Duration::from_millis(5));
                drop(tx);
            });
            assert_eq!(Select::new().recv(&other).recv(&once).wait(), 1);
        })
    });
}

/// A select on a cross-thread receiver wakes when a plain thread sends.
#[test]
fn cross_thread_receiver_case() {
    within(|| {
        let (tx, rx) = mpsc::channel();
        yieldloop::run(move || {
            let (_ltx, local) = channel::<u8>();
            let t = thread::spawn(move || {
                thread::sleep(Duration::from_millis(10));
                tx.send(5u8).unwrap();
            });
            let mut sel = Select::new()
                .recv(&local)
                .recv(&rx)
                .timeout(Duration::from_secs(10));
            assert_eq!(sel.wait(), 1);
            assert_eq!(rx.try_recv(), Ok(5));
            t.join().unwrap();
        });
    });
}

/// A thousand tasks each select on their own channel and a shared deadline;
/// each gets its message, in whatever order they are sent.
#[test]
fn a_thousand_selects() {
    within(|| {
        yieldloop::run(|| {
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut senders = Vec::new();
            let mut tasks = Vec::new();
            for i in 0..1_000u32 {
                let (tx, rx) = channel();
                senders.push(tx);
                tasks.push(spawn(move || {
                    let idx = Select::new().deadline(deadline).recv(&rx).wait();
                    (idx, rx.try_recv().ok(), i)
                }));
            }
            yield_now();
            // Send in a scrambled order.
            for k in 0..1_000u32 {
                let i = (k * 7919) % 1_000;
                senders[i as usize].send(i).unwrap();
            }
            for t in tasks {
                let (idx, got, i) = t.join().unwrap();
                assert_eq!((idx, got), (1, Some(i)));
            }
        })
    });
}

/// A select with no cases is a mistake, reported by a panic.
#[test]
#[should_panic(expected = "no cases")]
fn empty_select_panics() {
    within(|| yieldloop::run(|| Select::new().wait()));
}
