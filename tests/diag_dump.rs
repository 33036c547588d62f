//! `diag::dump` and `diag::metrics`: every task's state and backtrace,
//! from a task, from a plain thread, across workers, and with a scheduler
//! held by a task that never pauses; the counters and the hold histogram.

use std::io::Read;
use std::time::{Duration, Instant};

use yieldloop::diag::{self, TaskDump, TaskState, WaitingOn};
use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::sync::local::channel;

#[inline(never)]
fn sleeps_an_hour() {
    yieldloop::sleep(Duration::from_secs(3600));
}

#[inline(never)]
fn reads_a_quiet_socket(mut s: TcpStream) {
    let mut buf = [0u8; 16];
    let _ = s.read(&mut buf);
}

#[inline(never)]
fn waits_on_a_channel(rx: yieldloop::sync::local::Receiver<u32>) {
    let _ = rx.recv();
}

/// True when the backtrace's resolved frames name `function`.
fn passes_through(t: &TaskDump, function: &str) -> bool {
    let bt = t.backtrace.as_ref().expect("a paused task has a backtrace");
    bt.frames()
        .iter()
        .any(|f| f.function.as_deref().is_some_and(|n| n.contains(function)))
}

fn named<'a>(d: &'a diag::Dump, name: &str) -> &'a TaskDump {
    d.tasks()
        .find(|t| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no task {name} in the dump:\n{d}"))
}

/// The task named `name` on the same scheduler as the task named
/// `beside`: the dump lists every scheduler of the process, and the other
/// tests of this file run theirs at the same time, each with a "main".
fn named_beside<'a>(d: &'a diag::Dump, name: &str, beside: &str) -> &'a TaskDump {
    d.schedulers
        .iter()
        .find(|s| s.tasks.iter().any(|t| t.name.as_deref() == Some(beside)))
        .and_then(|s| s.tasks.iter().find(|t| t.name.as_deref() == Some(name)))
        .unwrap_or_else(|| panic!("no task {name} beside {beside} in the dump:\n{d}"))
}

#[test]
fn three_tasks_waiting_on_three_things() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).unwrap();
        let (server, _) = listener.accept().unwrap();
        let (tx, rx) = channel::<u32>();
        let spawn = |name: &str, f: Box<dyn FnOnce()>| {
            yieldloop::Builder::new().name(name).spawn(f).unwrap()
        };
        let a = spawn("sleeper", Box::new(sleeps_an_hour));
        let b = spawn("reader", Box::new(move || reads_a_quiet_socket(server)));
        let c = spawn("receiver", Box::new(move || waits_on_a_channel(rx)));
        // Let the three start and pause.
        yieldloop::sleep(Duration::from_millis(30));
        let d = diag::dump();

        let sleeper = named(&d, "sleeper");
        assert_eq!(sleeper.state, TaskState::Waiting(WaitingOn::Timer));
        let left = sleeper.deadline_in.expect("a sleep has a deadline");
        assert!(left > Duration::from_secs(3500) && left <= Duration::from_secs(3600));
        assert!(
            sleeper.since >= Duration::from_millis(10),
            "{:?}",
            sleeper.since
        );
        assert!(passes_through(sleeper, "sleeps_an_hour"), "{d}");

        let reader = named(&d, "reader");
        assert!(
            matches!(reader.state, TaskState::Waiting(WaitingOn::Readable { fd: Some(fd) }) if fd >= 0),
            "{:?}",
            reader.state
        );
        assert_eq!(reader.deadline_in, None);
        assert!(passes_through(reader, "reads_a_quiet_socket"), "{d}");

        let receiver = named(&d, "receiver");
        assert_eq!(receiver.state, TaskState::Waiting(WaitingOn::Channel));
        assert!(passes_through(receiver, "waits_on_a_channel"), "{d}");

        // The task that asked is listed too, inside `dump`.
        let main = named_beside(&d, "main", "sleeper");
        assert!(passes_through(main, "diag::dump"), "{d}");

        // The text form names each, with its state and backtrace.
        let text = d.to_string();
        for needle in [
            "\"sleeper\": waiting on a timer",
            "\"reader\": waiting on fd",
            "\"receiver\": waiting on a channel",
            "sleeps_an_hour",
            "reads_a_quiet_socket",
            "waits_on_a_channel",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }

        // The dump resumed nobody for real: each is still waiting, and
        // goes on when its wait ends.
        tx.send(7).unwrap();
        c.join().unwrap();
        drop(client);
        b.join().unwrap();
        a.cancel();
        assert!(a.join().is_err());
    });
}

#[test]
fn a_join_and_a_ready_task() {
    yieldloop::run(|| {
        let long = yieldloop::Builder::new()
            .name("long")
            .spawn(|| yieldloop::sleep(Duration::from_secs(60)))
            .unwrap();
        let long_id = long.id().as_u64();
        let joiner = yieldloop::Builder::new()
            .name("joiner")
            .spawn(move || {
                let _ = long.join();
            })
            .unwrap();
        // Spawned, never run: ready and without a backtrace.
        let fresh = yieldloop::Builder::new()
            .name("fresh")
            .spawn(|| ())
            .unwrap();
        yieldloop::yield_now();
        let fresh2 = yieldloop::Builder::new()
            .name("fresh2")
            .spawn(|| ())
            .unwrap();
        let d = diag::dump_within(Duration::from_secs(5));
        assert_eq!(
            named(&d, "joiner").state,
            TaskState::Waiting(WaitingOn::Join { task: long_id })
        );
        // `fresh2` was spawned right before the dump; the dump came back
        // after a turn of the loop, which ran it (or not yet).
        if let Some(t) = d.tasks().find(|t| t.name.as_deref() == Some("fresh2")) {
            assert_eq!(t.state, TaskState::Ready { started: false });
            assert!(t.backtrace.is_none());
        }
        fresh.join().unwrap();
        fresh2.join().unwrap();
        joiner.cancel();
    });
}

#[test]
fn a_plain_thread_dumps_every_worker() {
    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = yieldloop::sync::mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(Some(stop_rx)));
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let ready = ready_tx.clone();
            let stop = stop_rx.clone();
            rt.spawn_on(w, move || {
                let name = format!("worker-task-{w}");
                let t = yieldloop::Builder::new()
                    .name(name)
                    .spawn(sleeps_an_hour)
                    .unwrap();
                ready.send(()).unwrap();
                let taken = stop.lock().unwrap().take();
                if let Some(rx) = taken {
                    let _ = rx.recv();
                } else {
                    yieldloop::sleep(Duration::from_millis(300));
                }
                t.cancel();
            })
        })
        .collect();
    for _ in 0..2 {
        ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    let d = diag::dump();
    for w in 0..2 {
        let t = named(&d, &format!("worker-task-{w}"));
        assert_eq!(t.state, TaskState::Waiting(WaitingOn::Timer));
        assert!(passes_through(t, "sleeps_an_hour"), "{d}");
    }
    let workers: Vec<_> = d
        .schedulers
        .iter()
        .filter(|s| {
            s.tasks.iter().any(|t| {
                t.name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("worker-task"))
            })
        })
        .collect();
    assert_eq!(workers.len(), 2, "{d}");
    assert!(workers.iter().all(|s| s.unanswered.is_none()));
    stop_tx.send(()).unwrap();
    for h in handles {
        h.join().unwrap();
    }
    drop(rt);
}

#[test]
fn a_held_scheduler_is_reported_not_waited_for() {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        yieldloop::run(|| {
            let hog = yieldloop::Builder::new()
                .name("hog")
                .spawn(move || {
                    tx.send(yieldloop::current_id().unwrap().as_u64()).unwrap();
                    // Holds the thread without pausing.
                    let until = Instant::now() + Duration::from_millis(800);
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                })
                .unwrap();
            hog.join().unwrap();
        })
    });
    let hog = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let start = Instant::now();
    let d = diag::dump_within(Duration::from_millis(150));
    assert!(
        start.elapsed() < Duration::from_millis(700),
        "{:?}",
        start.elapsed()
    );
    let held = d
        .schedulers
        .iter()
        .find(|s| s.unanswered.is_some())
        .unwrap_or_else(|| panic!("no scheduler reported as not answering:\n{d}"));
    assert_eq!(held.unanswered, Some(hog));
    assert!(d
        .to_string()
        .contains(&format!("task {hog} holds its thread")));
    t.join().unwrap();
}

#[test]
fn counters_move_and_the_hold_histogram_sees_short_blocks() {
    yieldloop::run(|| {
        let before = here();
        // 1,000 resumes that each block the thread for about 1.2 ms: far
        // below the slow-task threshold, which says nothing about them.
        let blocker = yieldloop::spawn(|| {
            for _ in 0..1000 {
                std::thread::sleep(Duration::from_micros(1200));
                yieldloop::yield_now();
            }
        });
        yieldloop::sleep(Duration::from_millis(5));
        blocker.join().unwrap();
        let after = here();
        assert!(after.tasks_spawned > before.tasks_spawned);
        assert!(after.tasks_ended > before.tasks_ended);
        // Resumes are counted at each poll, which a busy loop makes every
        // 256 resumes or so: most of the 1,000 are in by now.
        assert!(after.resumes >= before.resumes + 700, "{after:?}");
        assert!(after.polls > before.polls);
        assert!(after.busy >= Duration::from_millis(1000), "{after:?}");
        assert!(after.holds_timed > before.holds_timed);
        // The blocks land in the (1 ms, 2.5 ms] bucket; the estimate is
        // within a wide margin of the 1,000 there were.
        let bucket = |m: &diag::SchedulerMetrics| {
            m.hold_histogram
                .iter()
                .find(|(b, _)| *b == Some(Duration::from_micros(2500)))
                .unwrap()
                .1
        };
        let seen = bucket(&after) - bucket(&before);
        assert!(
            (200..=5000).contains(&seen),
            "{seen} holds of 1–2.5 ms: {after:?}"
        );
        let held = after.held - before.held;
        assert!(held >= Duration::from_millis(250), "{held:?}");
        // In the Prometheus page too.
        let text = diag::prometheus();
        assert!(text.contains("yieldloop_hold_seconds_bucket{"), "{text}");
        assert!(text.contains("le=\"0.0025\""), "{text}");
        assert!(text.contains("yieldloop_blocking_queued "), "{text}");
    });
}

/// This thread's scheduler's counters.
fn here() -> diag::SchedulerMetrics {
    diag::metrics_here().expect("called inside run")
}
