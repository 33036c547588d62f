//! Cancellation: the tasks left when `run` ends, and `JoinHandle::cancel`.
//! A cancelled task is unwound where it is paused, so its destructors run
//! exactly once and its sockets close.
//!
//! Every test here holds [`SERIAL`]: some count the process's open
//! descriptors, which other tests running at the same time would disturb.

mod util;

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now, JoinHandle};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts its drops in a shared cell.
struct DropCount(Rc<Cell<u32>>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// A connected pair of yieldloop sockets: (client, server side).
fn socket_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

/// When main returns, every task still alive is cancelled whatever it waits
/// on (a timer, a socket read, an accept, a join, the run queue, or nothing
/// yet): each destructor runs exactly once and no task gets past its wait.
#[test]
fn leftover_tasks_are_cancelled_when_main_returns() {
    let _serial = serial();
    let drops: Vec<Rc<Cell<u32>>> = (0..7).map(|_| Rc::new(Cell::new(0))).collect();
    let past_wait = Rc::new(Cell::new(0u32));
    let (d, p) = (drops.clone(), past_wait.clone());
    yieldloop::run(move || {
        let guard = |i: usize| DropCount(d[i].clone());

        // 0: sleeping.
        let (g, p0) = (guard(0), p.clone());
        let sleeper = spawn(move || {
            let _g = g;
            sleep(Duration::from_secs(3600));
            p0.set(p0.get() + 1);
        });

        // 1: reading a socket that never gets data; 2 keeps the peer open.
        let (client, server) = socket_pair();
        let (g, p1) = (guard(1), p.clone());
        spawn(move || {
            let _g = g;
            let mut buf = [0u8; 16];
            let _ = (&client).read(&mut buf);
            p1.set(p1.get() + 1);
        });
        let (g, p2) = (guard(2), p.clone());
        spawn(move || {
            let _g = g;
            let _server = server;
            sleep(Duration::from_secs(3600));
            p2.set(p2.get() + 1);
        });

        // 3: waiting in accept.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (g, p3) = (guard(3), p.clone());
        spawn(move || {
            let _g = g;
            let _ = listener.accept();
            p3.set(p3.get() + 1);
        });

        // 4: waiting to join the sleeper.
        let (g, p4) = (guard(4), p.clone());
        spawn(move || {
            let _g = g;
            let _ = sleeper.join();
            p4.set(p4.get() + 1);
        });

        // 5: runnable, yielding in a loop.
        let (g, p5) = (guard(5), p.clone());
        spawn(move || {
            let _g = g;
            for _ in 0..1_000_000 {
                yield_now();
            }
            p5.set(p5.get() + 1);
        });

        // Let all of the above reach their waits.
        for _ in 0..3 {
            yield_now();
        }

        // 6: never started.
        let (g, p6) = (guard(6), p.clone());
        spawn(move || {
            let _g = g;
            p6.set(p6.get() + 1);
        });
    });
    for (i, d) in drops.iter().enumerate() {
        assert_eq!(d.get(), 1, "task {i}'s destructor ran {} times", d.get());
    }
    assert_eq!(past_wait.get(), 0, "a cancelled task got past its wait");
}

/// Sockets held by tasks cancelled at the end of `run` are closed: the peer
/// reads end-of-file, a listener's port refuses connections, and the process
/// has as many descriptors open as before.
#[test]
fn cancelled_sockets_are_closed() {
    let _serial = serial();
    const CONNS: usize = 10;
    let fds_before = util::open_fds();

    // A plain-threads peer that accepts the connections, then reads each to
    // its end.
    let peer = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let peer_addr = peer.local_addr().unwrap();
    let peer_thread = std::thread::spawn(move || {
        let conns: Vec<_> = (0..CONNS).map(|_| peer.accept().unwrap().0).collect();
        drop(peer);
        conns
            .into_iter()
            .map(|mut c| {
                let start = Instant::now();
                let (data, end) = util::read_to_end_std(&mut c, Duration::from_secs(10));
                (data.len(), end.map_err(|e| e.kind()), start.elapsed())
            })
            .collect::<Vec<_>>()
    });

    let listener_addr: SocketAddr = yieldloop::run(move || {
        let connected = Rc::new(Cell::new(0));
        for _ in 0..CONNS {
            let connected = connected.clone();
            spawn(move || {
                let s = TcpStream::connect(peer_addr).unwrap();
                connected.set(connected.get() + 1);
                // Waits for data that never comes.
                let mut buf = [0u8; 1];
                let _ = (&s).read(&mut buf);
            });
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        spawn(move || {
            let _ = listener.accept();
        });
        assert!(util::wait_until(Duration::from_secs(5), || connected.get() == CONNS));
        yield_now();
        addr
    });

    let results = peer_thread.join().unwrap();
    for (i, (len, end, took)) in results.into_iter().enumerate() {
        assert_eq!(len, 0, "connection {i} got data");
        assert_eq!(end, Ok(()), "connection {i} did not end with EOF");
        assert!(
            took < Duration::from_secs(5),
            "connection {i} took {took:?}"
        );
    }
    let refused = std::net::TcpStream::connect(listener_addr).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    assert_eq!(
        util::open_fds(),
        fds_before,
        "descriptors leaked by cancelled tasks"
    );
}

/// A `JoinHandle` that outlives `run` (kept in a structure main returned)
/// reports its task as cancelled; a finished one keeps its value.
#[test]
fn leftover_join_handle_reports_cancelled() {
    let _serial = serial();
    type Kept = Rc<RefCell<Vec<JoinHandle<u32>>>>;
    let kept: Kept = yieldloop::run(|| {
        let kept: Kept = Rc::new(RefCell::new(Vec::new()));
        let done = spawn(|| 1);
        let sleeping = spawn(|| {
            sleep(Duration::from_secs(3600));
            2
        });
        let inner = spawn(|| {
            sleep(Duration::from_secs(3600));
            3
        });
        let joining = spawn(move || inner.join().unwrap_or(0) + 100);
        yield_now();
        yield_now();
        assert!(done.is_finished());
        let never_started = spawn(|| 4);
        kept.borrow_mut()
            .extend([done, sleeping, joining, never_started]);
        kept
    });
    let handles: Vec<_> = kept.borrow_mut().drain(..).collect();
    assert!(handles.iter().all(JoinHandle::is_finished));
    let results: Vec<_> = handles.into_iter().map(JoinHandle::join).collect();
    assert_eq!(*results[0].as_ref().unwrap(), 1);
    for (i, r) in results.iter().enumerate().skip(1) {
        let err = r.as_ref().expect_err("a leftover task has no value");
        assert!(err.is_cancelled(), "handle {i}: {err:?}");
        assert!(!err.is_panic());
        assert!(err.to_string().contains("cancelled"), "{err}");
    }
}

/// Cancelling a sleeping task unwinds it at once: its destructor runs before
/// `cancel` returns, its code after the sleep never runs, and `join` says
/// it was cancelled. The stale timer wakes nobody later.
#[test]
fn cancel_sleeping_task() {
    let _serial = serial();
    yieldloop::run(|| {
        let dropped = Rc::new(Cell::new(0));
        let woke = Rc::new(Cell::new(false));
        let (d, w) = (dropped.clone(), woke.clone());
        let h = spawn(move || {
            let _g = DropCount(d);
            sleep(Duration::from_millis(20));
            w.set(true);
        });
        yield_now();
        assert_eq!(dropped.get(), 0);
        h.cancel();
        assert_eq!(dropped.get(), 1, "destructor ran inside cancel");
        assert!(h.is_finished());
        h.cancel(); // A second cancel does nothing.
        let start = Instant::now();
        let err = h.join().unwrap_err();
        assert!(err.is_cancelled());
        assert!(start.elapsed() < Duration::from_millis(15), "join waited");

        // A new task, likely in the same table slot, sleeps longer than the
        // cancelled timer: the stale timer must not wake it early.
        let start = Instant::now();
        let late = spawn(move || {
            sleep(Duration::from_millis(60));
            start.elapsed()
        });
        let slept = late.join().unwrap();
        assert!(slept >= Duration::from_millis(60), "woken early: {slept:?}");
        assert!(!woke.get());
        assert_eq!(dropped.get(), 1);
    });
}

/// Cancelling a task that already ended does nothing: its value, or its
/// panic, is still there.
#[test]
fn cancel_finished_task_is_noop() {
    let _serial = serial();
    util::quiet_panics(|| {
        yieldloop::run(|| {
            let h = spawn(|| 7);
            assert!(util::wait_until(Duration::from_secs(5), || h.is_finished()));
            h.cancel();
            h.cancel();
            assert_eq!(h.join().unwrap(), 7);

            let p = spawn(|| -> u8 { panic!("{}", util::EXPECTED_PANIC) });
            assert!(util::wait_until(Duration::from_secs(5), || p.is_finished()));
            p.cancel();
            let err = p.join().unwrap_err();
            assert!(err.is_panic(), "a finished panic stays a panic: {err:?}");
        });
    });
}

/// A task that cancels itself runs on until its next pause and is unwound
/// there instead of pausing.
#[test]
fn self_cancel_takes_effect_at_next_pause() {
    let _serial = serial();
    yieldloop::run(|| {
        let steps = Rc::new(RefCell::new(Vec::new()));
        let slot: Rc<RefCell<Option<JoinHandle<()>>>> = Rc::new(RefCell::new(None));
        let dropped = Rc::new(Cell::new(0));
        let (s, sl, d) = (steps.clone(), slot.clone(), dropped.clone());
        let h = spawn(move || {
            let _g = DropCount(d);
            s.borrow_mut().push("start");
            sl.borrow().as_ref().expect("handle stored").cancel();
            s.borrow_mut().push("after cancel");
            // Plain work, no pause: still runs.
            let sum: u64 = (0..1000u64).sum();
            assert_eq!(sum, 499_500);
            s.borrow_mut().push("before pause");
            yield_now();
            s.borrow_mut().push("after pause");
        });
        *slot.borrow_mut() = Some(h);
        yield_now();
        yield_now();
        assert_eq!(*steps.borrow(), ["start", "after cancel", "before pause"]);
        assert_eq!(dropped.get(), 1);
        let h = slot.borrow_mut().take().unwrap();
        assert!(h.is_finished());
        assert!(h.join().unwrap_err().is_cancelled());

        // The same with a sleep as the next pause: it is not slept.
        let slot: Rc<RefCell<Option<JoinHandle<()>>>> = Rc::new(RefCell::new(None));
        let sl = slot.clone();
        let woke = Rc::new(Cell::new(false));
        let w = woke.clone();
        let h = spawn(move || {
            sl.borrow().as_ref().unwrap().cancel();
            sleep(Duration::from_secs(3600));
            w.set(true);
        });
        *slot.borrow_mut() = Some(h);
        let start = Instant::now();
        assert!(util::wait_until(Duration::from_secs(5), || {
            slot.borrow().as_ref().unwrap().is_finished()
        }));
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(!woke.get());
    });
}

/// Another task can cancel a task that waits on a socket read: the target
/// is unwound, its socket closes (the peer reads end-of-file), and the
/// canceller carries on.
#[test]
fn cancel_task_waiting_on_socket_read() {
    let _serial = serial();
    let fds_before = util::open_fds();
    yieldloop::run(|| {
        let (client, server) = socket_pair();
        let dropped = Rc::new(Cell::new(0));
        let got_data = Rc::new(Cell::new(false));
        let (d, g) = (dropped.clone(), got_data.clone());
        let target = Rc::new(spawn(move || {
            let _g = DropCount(d);
            let mut buf = [0u8; 64];
            let r = (&client).read(&mut buf);
            g.set(true);
            r.map(|_| ())
        }));
        let t = target.clone();
        let canceller = spawn(move || {
            sleep(Duration::from_millis(20));
            assert!(!t.is_finished(), "the target should still be reading");
            t.cancel();
            assert!(t.is_finished());
            // The canceller itself is unaffected.
            sleep(Duration::from_millis(1));
            "canceller done"
        });
        // The peer sees the target's socket close.
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut rest = Vec::new();
        (&server).read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(canceller.join().unwrap(), "canceller done");
        assert_eq!(dropped.get(), 1);
        assert!(!got_data.get(), "the read never returned");
        let target = Rc::try_unwrap(target).expect("only main holds it now");
        assert!(target.join().unwrap_err().is_cancelled());

        // The same for a task waiting in accept: its listener closes.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = spawn(move || listener.accept().map(|_| ()));
        yield_now();
        acceptor.cancel();
        let err = TcpStream::connect(addr).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    });
    assert_eq!(util::open_fds(), fds_before, "descriptors leaked");
}

/// Cancelling a task that waits to join another leaves the other running.
#[test]
fn cancel_joiner_leaves_joined_task_running() {
    let _serial = serial();
    yieldloop::run(|| {
        let inner = spawn(|| {
            sleep(Duration::from_millis(20));
            5
        });
        let inner_id = inner.id();
        let outer = spawn(move || inner.join());
        yield_now();
        outer.cancel();
        assert!(outer.join().unwrap_err().is_cancelled());
        // `inner`'s handle went down with `outer`, so `inner` is detached;
        // it still finishes. Watch it through a second task's join by id.
        let watcher = spawn(move || {
            let r = yieldloop::raw::suspend(yieldloop::raw::Op::Join(inner_id, None));
            matches!(r, yieldloop::raw::Resume::Ready)
        });
        let start = Instant::now();
        assert!(watcher.join().unwrap());
        assert!(
            start.elapsed() >= Duration::from_millis(10),
            "inner ended early: it was cancelled with its joiner"
        );
    });
}

/// Cancelling a task that has not started yet drops its closure without
/// running it.
#[test]
fn cancel_never_started_task() {
    let _serial = serial();
    yieldloop::run(|| {
        let dropped = Rc::new(Cell::new(0));
        let ran = Rc::new(Cell::new(false));
        let (g, r) = (DropCount(dropped.clone()), ran.clone());
        let h = spawn(move || {
            let _g = g;
            r.set(true);
        });
        h.cancel();
        assert_eq!(dropped.get(), 1);
        yield_now();
        yield_now();
        assert!(!ran.get());
        assert!(h.join().unwrap_err().is_cancelled());
    });
}

/// A task cancelled while it sits in the run queue is not run again, and a
/// task spawned after it runs normally.
#[test]
fn cancel_runnable_task() {
    let _serial = serial();
    yieldloop::run(|| {
        let turns = Rc::new(Cell::new(0u32));
        let t = turns.clone();
        let spinner = spawn(move || {
            for _ in 0..10_000_000u64 {
                t.set(t.get() + 1);
                yield_now();
            }
        });
        yield_now();
        yield_now();
        let before = turns.get();
        assert!(before >= 1);
        // The spinner yielded, so it is queued right now.
        spinner.cancel();
        let fresh = spawn(|| 11);
        for _ in 0..5 {
            yield_now();
        }
        assert_eq!(turns.get(), before, "the cancelled task ran again");
        assert_eq!(fresh.join().unwrap(), 11);
        assert!(spinner.join().unwrap_err().is_cancelled());
    });
}

/// Destructors of a cancelled task may use the runtime: a pause returns at
/// once (a task never switches away mid-unwind), a spawn works, and a
/// cancel of another task takes effect.
#[test]
fn destructors_of_cancelled_task_may_use_runtime() {
    let _serial = serial();
    struct OnDrop<F: FnMut()>(F);
    impl<F: FnMut()> Drop for OnDrop<F> {
        fn drop(&mut self) {
            (self.0)();
        }
    }
    yieldloop::run(|| {
        let log = Rc::new(RefCell::new(Vec::<&'static str>::new()));
        let other_dropped = Rc::new(Cell::new(0));
        let d = other_dropped.clone();
        let other = spawn(move || {
            let _g = DropCount(d);
            sleep(Duration::from_secs(3600));
        });
        let l = log.clone();
        let victim = spawn(move || {
            let l2 = l.clone();
            let _g = OnDrop(move || {
                let start = Instant::now();
                sleep(Duration::from_secs(3600));
                yield_now();
                assert!(start.elapsed() < Duration::from_secs(1));
                l2.borrow_mut().push("paused in drop");
                let l3 = l2.clone();
                drop(spawn(move || l3.borrow_mut().push("spawned in drop")));
                other.cancel();
            });
            sleep(Duration::from_secs(3600));
            l.borrow_mut().push("woke");
        });
        yield_now();
        victim.cancel();
        assert_eq!(*log.borrow(), ["paused in drop"]);
        assert_eq!(
            other_dropped.get(),
            1,
            "the cancel from the destructor worked"
        );
        assert!(victim.join().unwrap_err().is_cancelled());
        assert!(util::wait_until(Duration::from_secs(5), || log
            .borrow()
            .len()
            == 2));
        assert_eq!(*log.borrow(), ["paused in drop", "spawned in drop"]);
    });
}

/// Cancelling one of two tasks that share a socket leaves it open and usable
/// by the other: only the last owner's drop closes it.
#[test]
fn cancel_shared_socket_user_keeps_socket_open() {
    let _serial = serial();
    yieldloop::run(|| {
        let (client, server) = socket_pair();
        let client = Rc::new(client);
        let c = client.clone();
        let reader = spawn(move || {
            let mut buf = [0u8; 5];
            (&*c).read_exact(&mut buf).map(|()| buf)
        });
        yield_now();
        // Cancel the reader: it held one Rc of two, so the socket stays.
        reader.cancel();
        assert!(reader.join().unwrap_err().is_cancelled());
        assert_eq!(Rc::strong_count(&client), 1);
        // Main now waits on the same socket (next to the cancelled
        // reader's stale registration) until a writer sends.
        let writer = spawn(move || {
            sleep(Duration::from_millis(10));
            (&server).write_all(b"hello")
        });
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 5];
        (&*client).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        writer.join().unwrap().unwrap();
    });
}

/// Pauses in its destructor, like a connection that says goodbye politely.
struct PausesOnDrop(Rc<Cell<u32>>);

impl Drop for PausesOnDrop {
    fn drop(&mut self) {
        // Inside a task being torn down this must return at once.
        yield_now();
        self.0.set(self.0.get() + 1);
    }
}

/// Cancelling a task that never started drops its closure; a captured value
/// whose destructor pauses is fine there, as it is for a started task: the
/// pause returns at once. (Run in a child process: the failure mode is an
/// abort.)
#[test]
fn cancel_never_started_task_whose_destructor_pauses() {
    let _serial = serial();
    util::in_child_process("cancel_never_started_task_whose_destructor_pauses", || {
        yieldloop::run(|| {
            let dropped = Rc::new(Cell::new(0));
            // First the started case, which works.
            let guard = PausesOnDrop(dropped.clone());
            let started = spawn(move || {
                let _g = guard;
                sleep(Duration::from_secs(3600));
            });
            yield_now();
            started.cancel();
            assert_eq!(dropped.get(), 1);
            // Then the same value captured by a task that never ran.
            let guard = PausesOnDrop(dropped.clone());
            let unstarted = spawn(move || {
                let _g = guard;
            });
            unstarted.cancel();
            assert_eq!(dropped.get(), 2);
            assert!(unstarted.join().unwrap_err().is_cancelled());
        });
    });
}

/// The same at the end of `run`: a leftover task that never started, whose
/// captured value pauses in its destructor, is torn down without harm.
/// (Run in a child process: the failure mode is an abort.)
#[test]
fn leftover_never_started_task_whose_destructor_pauses() {
    let _serial = serial();
    util::in_child_process(
        "leftover_never_started_task_whose_destructor_pauses",
        || {
            let dropped = Rc::new(Cell::new(0));
            let d = dropped.clone();
            yieldloop::run(move || {
                let guard = PausesOnDrop(d.clone());
                drop(spawn(move || {
                    let _g = guard;
                }));
            });
            assert_eq!(dropped.get(), 1);
        },
    );
}
