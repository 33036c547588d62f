//! `Sleep`: the scheduler's timers as a future. It completes at its
//! deadline and never before, only the task awaiting it pauses, reset and
//! drop disarm its timer, and it is the one thing a main task may wait for
//! without the run being reported as stuck.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures::future::{self, Either};
use yieldloop::{block_on, sleep_future, sleep_until_future, spawn, spawn_future};

/// Completes no earlier than its deadline, while a ticker task on the same
/// thread keeps running.
#[test]
fn completes_at_its_deadline_while_other_tasks_run() {
    yieldloop::run(|| {
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let ticker = spawn(move || {
            for _ in 0..200 {
                yieldloop::sleep(Duration::from_millis(1));
                t.set(t.get() + 1);
            }
        });
        let start = Instant::now();
        block_on(sleep_future(Duration::from_millis(60)));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(60), "woke after {took:?}");
        assert!(took < Duration::from_secs(5), "woke after {took:?}");
        // A 1 ms ticker over at least 60 ms: generous, for a busy machine.
        assert!(ticks.get() >= 5, "ticker ticked {} times", ticks.get());
        ticker.cancel();
    });
}

/// Sleeps with deadlines given out of order complete in deadline order.
#[test]
fn many_sleeps_complete_in_deadline_order() {
    let order = yieldloop::run(|| {
        let done = Rc::new(std::cell::RefCell::new(Vec::new()));
        let base = Instant::now();
        let handles: Vec<_> = [7u64, 3, 9, 1, 5, 2, 8, 4, 6, 0]
            .into_iter()
            .map(|n| {
                let done = done.clone();
                spawn_future(async move {
                    sleep_until_future(base + Duration::from_millis(10 + 15 * n)).await;
                    done.borrow_mut().push(n);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let v = done.borrow().clone();
        v
    });
    assert_eq!(order, (0..10).collect::<Vec<_>>());
}

/// A past deadline is ready on the first poll, without a scheduler.
#[test]
fn a_past_deadline_is_ready_at_once() {
    let mut s = pin!(sleep_until_future(Instant::now()));
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    assert_eq!(s.as_mut().poll(&mut cx), Poll::Ready(()));
    assert!(s.is_elapsed());
}

/// Polled pending outside any scheduler, it says so rather than hanging.
#[test]
#[should_panic(expected = "no yieldloop scheduler")]
fn polling_outside_a_scheduler_panics() {
    let mut s = pin!(sleep_future(Duration::from_secs(5)));
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let _ = s.as_mut().poll(&mut cx);
}

/// Counts wakes.
#[derive(Default)]
struct Count(std::sync::atomic::AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Dropping a pending sleep disarms its timer: its waker is never woken;
/// resetting moves the wake to the new deadline and wakes once.
#[test]
fn drop_and_reset_disarm_the_old_timer() {
    yieldloop::run(|| {
        let dropped = Arc::new(Count::default());
        {
            let mut s = pin!(sleep_future(Duration::from_millis(10)));
            let w = Waker::from(dropped.clone());
            assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
        }
        let reset = Arc::new(Count::default());
        let w = Waker::from(reset.clone());
        let mut s = Box::pin(sleep_future(Duration::from_millis(10)));
        assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
        let later = Instant::now() + Duration::from_millis(80);
        s.reset(later);
        assert_eq!(s.deadline(), later);
        assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
        // Past the first two deadlines: neither old timer woke anybody.
        yieldloop::sleep(Duration::from_millis(40));
        assert_eq!(dropped.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(reset.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        // Past the new deadline (bounded wait): one wake, then ready.
        let give_up = Instant::now() + Duration::from_secs(5);
        while reset.0.load(std::sync::atomic::Ordering::SeqCst) == 0 && Instant::now() < give_up {
            yieldloop::sleep(Duration::from_millis(5));
        }
        assert_eq!(reset.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(Instant::now() >= later);
        assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_ready());
    });
}

/// The first of two sleeps wins a race; the loser is dropped, disarmed, and
/// the run ends without waiting for it.
#[test]
fn the_loser_of_a_race_does_not_hold_the_run() {
    let start = Instant::now();
    yieldloop::run(|| {
        let short = sleep_future(Duration::from_millis(10));
        let long = sleep_future(Duration::from_secs(30));
        match block_on(future::select(short, long)) {
            Either::Left(_) => {}
            Either::Right(_) => panic!("the 30 s sleep won"),
        }
    });
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// A main task whose only wait is a `Sleep` is not stuck: the scheduler
/// sleeps until the timer's deadline.
#[test]
fn a_sleep_is_a_wait_the_scheduler_counts_on() {
    let start = Instant::now();
    yieldloop::run(|| block_on(sleep_future(Duration::from_millis(30))));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(30) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
