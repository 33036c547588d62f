//! Parking and unparking: the primitive under channels and mutexes.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::raw::{park, park_token, Resume};

/// A token from another thread wakes a parked task through the waker.
#[test]
fn remote_unpark_wakes_a_parked_task() {
    let woke = yieldloop::run(|| {
        let token = park_token();
        let remote = token.remote();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            remote.unpark();
        });
        let start = Instant::now();
        let r = park(token, Some(Instant::now() + Duration::from_secs(10)));
        t.join().unwrap();
        (matches!(r, Resume::Ready), start.elapsed())
    });
    assert!(woke.0, "parked task was not woken by the remote unparker");
    assert!(woke.1 < Duration::from_secs(5));
}

/// A park with a deadline and no unpark times out; the stale token then
/// reports false.
#[test]
fn park_times_out_and_token_goes_stale() {
    yieldloop::run(|| {
        let token = park_token();
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(matches!(park(token, Some(deadline)), Resume::TimedOut));
        assert!(Instant::now() >= deadline);
        assert!(!token.unpark());
        assert!(!token.is_parked());
    });
}

/// A token taken for one pause does not wake a later, different pause.
#[test]
fn stale_token_does_not_wake_a_later_pause() {
    yieldloop::run(|| {
        let old = Rc::new(Cell::new(None));
        let o = old.clone();
        let waker = yieldloop::spawn(move || {
            yieldloop::sleep(Duration::from_millis(20));
            // The old pause is over; this must not cut the sleep short.
            let t: yieldloop::raw::ParkToken = o.get().unwrap();
            assert!(!t.unpark());
        });
        let token = park_token();
        old.set(Some(token));
        assert!(matches!(
            park(token, Some(Instant::now() + Duration::from_millis(1))),
            Resume::TimedOut
        ));
        let start = Instant::now();
        yieldloop::sleep(Duration::from_millis(60));
        assert!(start.elapsed() >= Duration::from_millis(60));
        waker.join().unwrap();
    });
}

/// While a remote unparker exists, a main task parked forever is not a
/// deadlock; with none, run reports the deadlock.
#[test]
fn deadlock_is_reported_without_wakers() {
    let r = std::panic::catch_unwind(|| {
        yieldloop::run(|| {
            let token = park_token();
            let _ = park(token, None);
        })
    });
    let err = r.expect_err("a main task parked with no waker must be reported");
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("deadlock"), "unexpected message: {msg}");
}
