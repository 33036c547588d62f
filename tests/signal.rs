//! `yieldloop::signal`: tasks waiting for Unix signals raised to this
//! process.
//!
//! Signals are process-wide and the tests of one binary run in parallel
//! threads, so every test that raises a signal holds [`serial`] for its
//! whole length, and raises a signal only once a listener for it exists
//! (a signal with no handler would end the test process). Every wait is
//! bounded by a `timeout`, so a lost signal fails a test instead of
//! hanging it.

use std::cell::Cell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use signal_hook::low_level::raise;
use yieldloop::signal::{Signals, SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH};
use yieldloop::sync::local;
use yieldloop::{sleep, spawn, timeout, yield_now, Runtime};

/// Longest any test waits for a signal it raised.
const PATIENCE: Duration = Duration::from_secs(10);

/// Held by each test for its whole length: one test's signals must not
/// reach another's listeners.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for a signal on `signals`, failing the test after [`PATIENCE`].
fn recv(signals: &mut Signals) -> i32 {
    timeout(PATIENCE, || signals.recv())
        .expect("the signal never arrived")
        .expect("recv failed")
}

/// A task waiting for a signal pauses only itself: a ticking task keeps
/// ticking until the signal (sent from another thread) arrives.
#[test]
fn waiting_task_receives_the_signal_while_another_ticks() {
    let _serial = serial();
    yieldloop::run(|| {
        let mut signals = Signals::new([SIGUSR1]).unwrap();
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let ticks = ticks.clone();
            spawn(move || {
                for _ in 0..10_000 {
                    sleep(Duration::from_millis(2));
                    ticks.set(ticks.get() + 1);
                }
            })
        };
        let sender = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(60));
            raise(SIGUSR1).unwrap();
        });
        let start = Instant::now();
        assert_eq!(recv(&mut signals), SIGUSR1);
        let waited = start.elapsed();
        // About 30 ticks of 2 ms fit in 60 ms; a loaded machine gives fewer.
        assert!(
            ticks.get() >= 3,
            "only {} ticks in the {waited:?} the signal took",
            ticks.get()
        );
        assert!(waited >= Duration::from_millis(50), "too early: {waited:?}");
        ticker.cancel();
        sender.join().unwrap();
    });
}

/// Several listeners for one signal, in several tasks, each see every
/// arrival of it.
#[test]
fn every_listener_sees_every_signal() {
    let _serial = serial();
    yieldloop::run(|| {
        const LISTENERS: usize = 4;
        const ROUNDS: usize = 3;
        // Each task says when it listens and what it heard, so that each
        // signal is raised only once all have had the one before (two
        // arrivals a listener has not looked at yet are reported once).
        let (heard_tx, heard_rx) = local::channel();
        let tasks: Vec<_> = (0..LISTENERS)
            .map(|_| {
                let heard = heard_tx.clone();
                spawn(move || {
                    let mut signals = Signals::new([SIGUSR2]).unwrap();
                    heard.send(0).unwrap();
                    for _ in 0..ROUNDS {
                        heard.send(recv(&mut signals)).unwrap();
                    }
                })
            })
            .collect();
        let next = || timeout(PATIENCE, || heard_rx.recv().unwrap()).unwrap();
        for _ in 0..LISTENERS {
            assert_eq!(next(), 0);
        }
        for _ in 0..ROUNDS {
            raise(SIGUSR2).unwrap();
            for _ in 0..LISTENERS {
                assert_eq!(next(), SIGUSR2);
            }
        }
        for t in tasks {
            t.join().unwrap();
        }
    });
}

/// Listeners on different `Runtime` workers (different schedulers and
/// threads) are all told of one signal.
#[test]
fn every_runtime_worker_sees_the_signal() {
    let _serial = serial();
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let ready_tx = Mutex::new(ready_tx);
    let handles = rt.spawn_each(move |_| {
        let mut signals = Signals::new([SIGHUP]).unwrap();
        ready_tx.lock().unwrap().send(()).unwrap();
        timeout(PATIENCE, || signals.recv()).map(|r| r.unwrap())
    });
    for _ in 0..2 {
        ready_rx.recv_timeout(PATIENCE).unwrap();
    }
    raise(SIGHUP).unwrap();
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(SIGHUP));
    }
    rt.shutdown();
}

/// `ctrl_c` returns at the next SIGINT.
#[test]
fn ctrl_c_returns_at_the_next_sigint() {
    let _serial = serial();
    yieldloop::run(|| {
        // Listening here first means SIGINT has a handler before it is
        // raised, whatever happens to the task under test.
        let mut keep = Signals::new([SIGINT]).unwrap();
        let waiter = spawn(|| timeout(PATIENCE, yieldloop::signal::ctrl_c));
        yield_now(); // the waiter starts listening and pauses
        assert!(!waiter.is_finished());
        raise(SIGINT).unwrap();
        waiter.join().unwrap().unwrap().unwrap();
        assert_eq!(keep.try_recv(), Some(SIGINT));
    });
}

/// A `Signals` is an iterator of signal numbers; `next` pauses for the
/// next one, and signals that already arrived come at once.
#[test]
fn signals_iterate() {
    let _serial = serial();
    yieldloop::run(|| {
        let mut signals = Signals::new([SIGUSR1, SIGUSR2]).unwrap();
        raise(SIGUSR1).unwrap();
        raise(SIGUSR2).unwrap();
        let mut both: Vec<i32> = signals.pending().collect();
        both.sort_unstable();
        assert_eq!(both, [SIGUSR1, SIGUSR2]);
        assert_eq!(signals.try_recv(), None);

        let raiser = spawn(|| {
            for sig in [SIGUSR2, SIGUSR1] {
                sleep(Duration::from_millis(5));
                raise(sig).unwrap();
            }
        });
        // Usually one at a time; on a slow turn both at once (in order of
        // number), so the order is not checked.
        let mut got: Vec<i32> = timeout(PATIENCE, || signals.by_ref().take(2).collect())
            .expect("the signals never arrived");
        got.sort_unstable();
        assert_eq!(got, [SIGUSR1, SIGUSR2]);
        raiser.join().unwrap();
    });
}

/// A wait cut short by a `timeout` leaves the listener usable.
#[test]
fn a_timed_out_wait_leaves_the_listener_usable() {
    let _serial = serial();
    yieldloop::run(|| {
        let mut signals = Signals::new([SIGWINCH]).unwrap();
        let quiet = timeout(Duration::from_millis(20), || signals.recv());
        assert!(quiet.is_err());
        raise(SIGWINCH).unwrap();
        assert_eq!(recv(&mut signals), SIGWINCH);
    });
}

/// Signals that cannot be listened for, and numbers that are no signal,
/// give `InvalidInput` errors naming them, never a panic.
#[test]
fn forbidden_signals_are_errors() {
    yieldloop::run(|| {
        for (sig, name) in [
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGSTOP, "SIGSTOP"),
            (libc::SIGSEGV, "SIGSEGV"),
            (libc::SIGILL, "SIGILL"),
            (libc::SIGFPE, "SIGFPE"),
        ] {
            let e = Signals::new([SIGTERM, sig]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{name}");
            assert!(e.to_string().contains(name), "{e}");
        }
        for sig in [0, -1, 128, 1000] {
            let e = Signals::new([sig]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{sig}: {e}");
        }
        let mut signals = Signals::new([]).unwrap();
        let e = signals.add_signal(libc::SIGKILL).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        // A number below the limit that this system has no signal for.
        #[cfg(target_os = "linux")]
        assert!(Signals::new([100]).is_err());
    });
}

/// Outside `run` there is nothing to wait with: `new`, and `recv` on a
/// listener that outlived its `run`, say so with an error.
#[test]
fn outside_run_is_an_error() {
    let _serial = serial();
    let e = Signals::new([SIGUSR1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().contains("yieldloop::run"), "{e}");

    let mut kept = yieldloop::run(|| Signals::new([SIGUSR1]).unwrap());
    assert_eq!(kept.recv().unwrap_err().kind(), ErrorKind::Unsupported);
    assert_eq!(kept.next(), None);
    // Not waiting works anywhere.
    raise(SIGUSR1).unwrap();
    assert_eq!(kept.try_recv(), Some(SIGUSR1));
    // And a listener from an earlier run cannot wait in a later one.
    yieldloop::run(move || {
        assert_eq!(kept.recv().unwrap_err().kind(), ErrorKind::Unsupported);
    });
}

/// A dropped listener, or one whose waiting task was cancelled, is
/// unregistered: the signal still reaches the others, nothing crashes, and
/// a new listener hears only what comes after it.
#[test]
fn dropped_listeners_unregister() {
    let _serial = serial();
    yieldloop::run(|| {
        let mut kept = Signals::new([SIGUSR2]).unwrap();
        drop(Signals::new([SIGUSR2]).unwrap());
        let waiter = spawn(|| {
            let mut signals = Signals::new([SIGUSR2]).unwrap();
            signals.recv()
        });
        yield_now(); // the waiter pauses in recv
        waiter.cancel();
        assert!(waiter.join().unwrap_err().is_cancelled());

        raise(SIGUSR2).unwrap();
        assert_eq!(recv(&mut kept), SIGUSR2);
        let mut late = Signals::new([SIGUSR2]).unwrap();
        assert_eq!(late.try_recv(), None);
        raise(SIGUSR2).unwrap();
        assert_eq!(recv(&mut late), SIGUSR2);
        assert_eq!(recv(&mut kept), SIGUSR2);
    });
}

/// Set in the child process of [`sigterm_after_the_last_listener_is_ignored`].
const CHILD_ENV: &str = "YIELDLOOP_SIGNAL_TEST_CHILD";

/// Once SIGTERM has had a listener, the process keeps the handler: a
/// SIGTERM after the last listener is dropped is ignored, not fatal (the
/// documented caveat). Run in a child process, which a mistake would kill.
#[test]
fn sigterm_after_the_last_listener_is_ignored() {
    if std::env::var_os(CHILD_ENV).is_some() {
        yieldloop::run(|| {
            drop(Signals::new([SIGTERM]).unwrap());
            raise(SIGTERM).unwrap();
            // A default SIGTERM would have ended the process by now.
            sleep(Duration::from_millis(20));
            println!("survived SIGTERM");
        });
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigterm_after_the_last_listener_is_ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("survived SIGTERM"),
        "child: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
