//! The bridge to the async ecosystem: `block_on` driving `futures`
//! channels, combinators and hand-made futures inside tasks (and outside),
//! and yieldloop's handles awaited from a tokio runtime.

mod util;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use futures::channel::{mpsc, oneshot};
use futures::future::{self, Either};
use futures::{SinkExt, StreamExt};
use yieldloop::{block_on, sleep, spawn, timeout};

/// A timer future driven by a thread of its own: the first poll starts a
/// thread that sleeps, marks the timer done and wakes the last waker left.
struct ThreadTimer {
    duration: Duration,
    shared: Arc<TimerShared>,
    started: bool,
}

#[derive(Default)]
struct TimerShared {
    done: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl ThreadTimer {
    fn new(duration: Duration) -> ThreadTimer {
        ThreadTimer {
            duration,
            shared: Arc::default(),
            started: false,
        }
    }
}

impl Future for ThreadTimer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // The waker is left before `done` is read, so a wake between the two
        // is not lost.
        *self.shared.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.shared.done.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if !self.started {
            self.started = true;
            let (shared, duration) = (self.shared.clone(), self.duration);
            thread::spawn(move || {
                thread::sleep(duration);
                shared.done.store(true, Ordering::Release);
                if let Some(w) = shared.waker.lock().unwrap().take() {
                    w.wake();
                }
            });
        }
        Poll::Pending
    }
}

/// Sets its flag when dropped, and records the thread it was dropped on.
struct DropFlag(Arc<Mutex<Option<thread::ThreadId>>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(thread::current().id());
    }
}

/// A future that never completes and flags its drop.
fn pending_with_flag() -> (
    impl Future<Output = ()>,
    Arc<Mutex<Option<thread::ThreadId>>>,
) {
    let flag = Arc::new(Mutex::new(None));
    let guard = DropFlag(flag.clone());
    let fut = async move {
        let _guard = guard;
        future::pending::<()>().await;
    };
    (fut, flag)
}

/// A `futures` oneshot sent by one task is received by another's `block_on`.
#[test]
fn oneshot_between_tasks() {
    let got = yieldloop::run(|| {
        let (tx, rx) = oneshot::channel();
        let sender = spawn(move || {
            sleep(Duration::from_millis(5));
            tx.send(7u32).unwrap();
        });
        let v = block_on(rx).unwrap();
        sender.join().unwrap();
        v
    });
    assert_eq!(got, 7);
}

/// A bounded `futures` mpsc stream carries values between two tasks, both
/// sides pausing in `block_on` (the sender when the channel is full).
#[test]
fn mpsc_stream_between_tasks() {
    let sum = yieldloop::run(|| {
        let (mut tx, rx) = mpsc::channel::<u64>(2);
        let producer = spawn(move || {
            for i in 1..=100 {
                block_on(tx.send(i)).unwrap();
            }
        });
        let sum = block_on(rx.fold(0, |acc, v| async move { acc + v }));
        producer.join().unwrap();
        sum
    });
    assert_eq!(sum, 5050);
}

/// `join!` waits for two channels fed by two tasks; `select` returns the
/// first of two and leaves the other pending.
#[test]
fn join_and_select_combinators() {
    yieldloop::run(|| {
        let (tx_a, rx_a) = oneshot::channel();
        let (tx_b, rx_b) = oneshot::channel();
        spawn(move || {
            sleep(Duration::from_millis(10));
            tx_a.send("a").unwrap();
        });
        spawn(move || {
            sleep(Duration::from_millis(2));
            tx_b.send("b").unwrap();
        });
        let (a, b) = block_on(async { futures::join!(rx_a, rx_b) });
        assert_eq!((a.unwrap(), b.unwrap()), ("a", "b"));

        let (tx_slow, rx_slow) = oneshot::channel::<&str>();
        let (tx_fast, rx_fast) = oneshot::channel();
        spawn(move || {
            sleep(Duration::from_millis(2));
            tx_fast.send("fast").unwrap();
        });
        match block_on(future::select(rx_slow, rx_fast)) {
            Either::Right((fast, _slow)) => assert_eq!(fast.unwrap(), "fast"),
            Either::Left(_) => panic!("the slow channel won"),
        }
        drop(tx_slow);
    });
}

/// A timer future woken from its own thread completes inside a task, not
/// before its time.
#[test]
fn timer_future_woken_from_its_own_thread() {
    let took = yieldloop::run(|| {
        let start = Instant::now();
        block_on(ThreadTimer::new(Duration::from_millis(30)));
        start.elapsed()
    });
    assert!(took >= Duration::from_millis(30), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A future completed by work on the blocking pool wakes its task: a
/// oneshot sent from `spawn_blocking`, and the pool's handle itself awaited.
#[test]
fn woken_from_the_blocking_pool() {
    yieldloop::run(|| {
        let (tx, rx) = oneshot::channel();
        let _work = yieldloop::spawn_blocking(move || {
            thread::sleep(Duration::from_millis(10));
            tx.send(thread::current().name().map(str::to_owned))
                .unwrap();
        });
        let name = block_on(rx).unwrap();
        assert_eq!(name.as_deref(), Some("yieldloop-blocking"));

        let handle = yieldloop::spawn_blocking(|| {
            thread::sleep(Duration::from_millis(5));
            99
        });
        assert_eq!(block_on(handle).unwrap(), 99);
    });
}

/// While one task waits in `block_on`, another keeps ticking on the same
/// thread.
#[test]
fn other_tasks_run_while_block_on_waits() {
    let ticks = yieldloop::run(|| {
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let ticker = spawn(move || loop {
            sleep(Duration::from_millis(2));
            t.set(t.get() + 1);
        });
        block_on(ThreadTimer::new(Duration::from_millis(60)));
        ticker.cancel();
        ticks.get()
    });
    // Up to 30 ticks fit in the wait; a loaded machine gets fewer.
    assert!(ticks >= 3, "the ticker ran {ticks} times");
}

/// Cancelling a task paused in `block_on` drops the future during the
/// task's unwind, on its thread.
#[test]
fn cancelling_the_task_drops_the_future_on_it() {
    yieldloop::run(|| {
        let (fut, flag) = pending_with_flag();
        let started = Rc::new(Cell::new(false));
        let s = started.clone();
        let waiter = spawn(move || {
            s.set(true);
            block_on(fut)
        });
        while !started.get() {
            yieldloop::yield_now();
        }
        assert!(flag.lock().unwrap().is_none(), "dropped too early");
        waiter.cancel();
        assert!(waiter.join().unwrap_err().is_cancelled());
        assert_eq!(*flag.lock().unwrap(), Some(thread::current().id()));
    });
}

/// A `timeout` scope around `block_on` expires while the future is pending:
/// the call unwinds, the future is dropped, and the task goes on.
#[test]
fn timeout_around_block_on() {
    yieldloop::run(|| {
        let (fut, flag) = pending_with_flag();
        let start = Instant::now();
        let r = timeout(Duration::from_millis(20), || block_on(fut));
        assert!(r.is_err());
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(flag.lock().unwrap().is_some(), "the future was not dropped");

        // A future that is ready in time passes through.
        let r = timeout(Duration::from_secs(5), || {
            block_on(ThreadTimer::new(Duration::from_millis(5)))
        });
        assert_eq!(r, Ok(()));
    });
}

/// A waker kept after its `block_on` returned and its task ended can be
/// woken, on the thread and from another, without effect; later waits on
/// the same scheduler are undisturbed, and so is a wake after `run` ended.
#[test]
fn a_waker_outliving_its_task_is_harmless() {
    let kept: Arc<Mutex<Option<Waker>>> = Arc::default();
    let k = kept.clone();
    yieldloop::run(move || {
        let k2 = k.clone();
        let t = spawn(move || {
            block_on(future::poll_fn(|cx| {
                *k2.lock().unwrap() = Some(cx.waker().clone());
                Poll::Ready(())
            }))
        });
        t.join().unwrap();
        let waker = k.lock().unwrap().clone().unwrap();
        waker.wake_by_ref();
        let w = waker.clone();
        thread::spawn(move || w.wake()).join().unwrap();
        // Another task's pause is not ended by the stale wakes.
        let start = Instant::now();
        sleep(Duration::from_millis(10));
        assert!(start.elapsed() >= Duration::from_millis(10));
        let (tx, rx) = oneshot::channel();
        spawn(move || tx.send(1).unwrap());
        waker.wake();
        assert_eq!(block_on(rx), Ok(1));
    });
    // The scheduler is gone; the wake still does nothing.
    kept.lock().unwrap().take().unwrap().wake();
}

/// Many wakes from another thread, some between polls and some while the
/// task is parked, each leading to another poll: none is lost.
#[test]
fn repeated_wakes_from_another_thread_are_not_lost() {
    const N: usize = 2_000;
    yieldloop::run(|| {
        let count = Arc::new(AtomicUsize::new(0));
        let waker: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (c, w) = (count.clone(), waker.clone());
        let bumper = thread::spawn(move || {
            for i in 0..N {
                c.fetch_add(1, Ordering::SeqCst);
                if let Some(w) = w.lock().unwrap().as_ref() {
                    w.wake_by_ref();
                }
                if i % 100 == 0 {
                    thread::sleep(Duration::from_micros(200));
                }
            }
        });
        let polls = Cell::new(0usize);
        block_on(future::poll_fn(|cx| {
            polls.set(polls.get() + 1);
            *waker.lock().unwrap() = Some(cx.waker().clone());
            if count.load(Ordering::SeqCst) == N {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        bumper.join().unwrap();
        assert!(polls.get() <= N + 1);
    });
}

/// A panic in `poll` comes out of `block_on`, dropping the future.
#[test]
fn a_panicking_future_passes_its_panic_through() {
    let flag = Arc::new(Mutex::new(None));
    let guard = DropFlag(flag.clone());
    let msg = util::quiet_panics(|| {
        util::panic_message_of(move || {
            yieldloop::run(move || {
                block_on(async move {
                    let _guard = guard;
                    panic!("{}: poll failed", util::EXPECTED_PANIC);
                })
            })
        })
    });
    assert!(msg.ends_with("poll failed"), "{msg}");
    assert!(flag.lock().unwrap().is_some());
}

/// Outside any task `block_on` parks the thread: a ready future, a timer
/// woken from another thread, and a blocking-pool handle.
#[test]
fn block_on_outside_a_task() {
    assert_eq!(block_on(async { 1 + 1 }), 2);
    let start = Instant::now();
    block_on(ThreadTimer::new(Duration::from_millis(20)));
    assert!(start.elapsed() >= Duration::from_millis(20));
    let h = yieldloop::spawn_blocking(|| "pool");
    assert_eq!(block_on(h).unwrap(), "pool");
}

/// A tokio current-thread runtime awaits work on a yieldloop runtime's
/// workers and on the blocking pool, and sees a panic as an error.
#[test]
fn tokio_awaits_yieldloop_handles() {
    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (a, b, c, bad) = util::quiet_panics(|| {
        tokio_rt.block_on(async {
            let a = rt.spawn_on(0, || {
                sleep(Duration::from_millis(10));
                yieldloop::Runtime::current_worker()
            });
            let b = rt.spawn_on(1, || {
                // A yieldloop task can itself wait for a future.
                let (tx, rx) = oneshot::channel();
                spawn(move || tx.send(5).unwrap());
                block_on(rx).unwrap() * 2
            });
            let c = yieldloop::spawn_blocking(|| {
                thread::sleep(Duration::from_millis(5));
                "pool"
            });
            let bad = rt.spawn_on(0, || -> u8 { panic!("{}", util::EXPECTED_PANIC) });
            tokio::join!(a, b, c, bad)
        })
    });
    assert_eq!(a.unwrap(), Some(0));
    assert_eq!(b.unwrap(), 10);
    assert_eq!(c.unwrap(), "pool");
    assert_eq!(bad.unwrap_err().panic_message(), Some(util::EXPECTED_PANIC));
    rt.shutdown();
}

/// The handles work under `#[tokio::test]` too, and a handle whose runtime
/// shuts down before the work ran reports a cancellation.
#[tokio::test]
async fn tokio_test_awaits_a_handle_and_sees_a_shutdown() {
    let rt = yieldloop::Runtime::builder().workers(1).build().unwrap();
    assert_eq!(rt.spawn_on(0, || 3).await.unwrap(), 3);
    let blocked = rt.spawn_on(0, || sleep(Duration::from_secs(60)));
    rt.shutdown();
    assert!(blocked.await.unwrap_err().is_cancelled());
}

/// The `async_interop` example runs and prints what it should.
#[test]
fn async_interop_example_runs() {
    let out = util::example::run("async_interop", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "block_on: hello from a task, then a thread timer",
            "the ticker ticked while we waited: yes",
            "tokio awaited: worker Some(0)",
            "tokio awaited the pool: 5050",
            "done",
        ],
        "{out}"
    );
}

/// `spawn_future`: a task driving a future, whose output its handle joins.
#[test]
fn spawn_future_runs_a_future_in_a_task_of_its_own() {
    util::within(|| {
        yieldloop::run(|| {
            let (tx, rx) = oneshot::channel::<u32>();
            let handle = yieldloop::spawn_future(async move { rx.await.unwrap() * 2 });
            // The future waits in its own task while this one goes on.
            sleep(Duration::from_millis(10));
            assert!(!handle.is_finished());
            tx.send(21).unwrap();
            assert_eq!(handle.join().unwrap(), 42);
        });
    });
}

/// Cancelling the handle drops the future on its task; a panic in the
/// future is the task's panic.
#[test]
fn spawn_future_cancels_by_dropping_and_reports_panics() {
    struct Dropped(Rc<Cell<bool>>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    util::within(|| {
        yieldloop::run(|| {
            let dropped = Rc::new(Cell::new(false));
            let guard = Dropped(dropped.clone());
            let forever = yieldloop::spawn_future(async move {
                let _guard = guard;
                future::pending::<()>().await;
            });
            sleep(Duration::from_millis(5));
            assert!(!dropped.get(), "dropped before the cancel");
            forever.cancel();
            assert!(dropped.get(), "the future was not dropped by the cancel");
            assert!(forever.join().unwrap_err().is_cancelled());

            let err = util::quiet_panics(|| {
                let failing = yieldloop::spawn_future(async {
                    yieldloop::sleep(Duration::from_millis(1));
                    panic!("{}", util::EXPECTED_PANIC);
                });
                failing.join().unwrap_err()
            });
            assert!(err.is_panic());
            let payload = err.into_panic();
            assert!(
                util::panic_message(&*payload).is_some_and(|m| m.contains(util::EXPECTED_PANIC))
            );
        });
    });
}
