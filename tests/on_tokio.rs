//! `on_tokio`: futures that need tokio's reactor and timers, run on the
//! shared tokio runtime while only the calling task waits. Tokio timers
//! from tasks that keep their thread free, values and panics coming back,
//! cancellation and `timeout` aborting the tokio side, plain threads, many
//! calls at once, and two tokio-only clients (redis's async client,
//! tokio-postgres's own `connect`) against real servers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::on_tokio;

/// Sets its flag when dropped: tells whether tokio really dropped a future.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Waits, from a task, until `flag` is set or `limit` passes; returns
/// whether it was set.
fn wait_for(flag: &AtomicBool, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while !flag.load(Ordering::SeqCst) {
        if Instant::now() > end {
            return false;
        }
        yieldloop::sleep(Duration::from_millis(2));
    }
    true
}

/// A ticker task: sleeps 1 ms at a time until `stop` is set (at most
/// `max_ticks` times) and returns how many ticks it made and its longest
/// gap between two ticks.
fn ticker(stop: Arc<AtomicBool>, max_ticks: usize) -> yieldloop::JoinHandle<(usize, Duration)> {
    yieldloop::spawn(move || {
        let mut ticks = 0;
        let mut longest = Duration::ZERO;
        let mut last = Instant::now();
        while !stop.load(Ordering::SeqCst) && ticks < max_ticks {
            yieldloop::sleep(Duration::from_millis(1));
            let now = Instant::now();
            longest = longest.max(now - last);
            last = now;
            ticks += 1;
        }
        (ticks, longest)
    })
}

/// A tokio timer awaited from a task pauses only that task: a ticker on
/// the same thread keeps ticking through it.
#[test]
fn tokio_sleep_leaves_the_other_tasks_running() {
    let (elapsed, ticks, longest) = yieldloop::run(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let tick = ticker(stop.clone(), 10_000);
        let start = Instant::now();
        on_tokio(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        let elapsed = start.elapsed();
        stop.store(true, Ordering::SeqCst);
        let (ticks, longest) = tick.join().unwrap();
        (elapsed, ticks, longest)
    });
    assert!(
        elapsed >= Duration::from_millis(200),
        "woke early: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "woke late: {elapsed:?}");
    // 200 ticks if every 1 ms sleep took 1 ms; a frozen thread gives 1.
    assert!(ticks >= 20, "the ticker ticked only {ticks} times");
    assert!(
        longest < Duration::from_millis(100),
        "longest gap {longest:?}"
    );
}

/// The future's value comes back, including one computed by a task the
/// future spawned on tokio.
#[test]
fn the_value_comes_back() {
    let got = yieldloop::run(|| {
        let word = String::from("tokio");
        on_tokio(async move {
            let spawned = tokio::spawn(async move { word.len() });
            format!("{} letters", spawned.await.unwrap())
        })
    });
    assert_eq!(got, "5 letters");
}

/// A panic in the future panics the calling task with the same message.
#[test]
fn a_panic_comes_out_in_the_calling_task() {
    let err = yieldloop::run(|| {
        let t = yieldloop::spawn(|| {
            on_tokio(async {
                tokio::task::yield_now().await;
                let n = 7;
                if n == 7 {
                    panic!("broken at step {n}");
                }
                n
            })
        });
        t.join().unwrap_err()
    });
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("broken at step 7"));
    // The runtime survives it.
    assert_eq!(on_tokio(async { 1 + 1 }), 2);
}

/// Cancelling the calling task aborts the tokio task: its future is
/// dropped (its drop guard runs) and never finishes.
#[test]
fn cancelling_the_task_aborts_the_tokio_task() {
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (s, d, f) = (started.clone(), dropped.clone(), finished.clone());
    let (cancelled, was_dropped) = yieldloop::run(move || {
        let t = yieldloop::spawn(move || {
            on_tokio(async move {
                let _guard = DropFlag(d);
                s.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                f.store(true, Ordering::SeqCst);
            })
        });
        assert!(wait_for(&started, Duration::from_secs(10)), "never started");
        t.cancel();
        let cancelled = t.join().unwrap_err().is_cancelled();
        (cancelled, wait_for(&dropped, Duration::from_secs(10)))
    });
    assert!(cancelled);
    assert!(was_dropped, "the tokio task still runs");
    assert!(!finished.load(Ordering::SeqCst));
}

/// A `timeout` around the call ends it on time and aborts the tokio task.
#[test]
fn a_timeout_aborts_the_tokio_task() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (d, f) = (dropped.clone(), finished.clone());
    let (timed_out, elapsed, was_dropped) = yieldloop::run(move || {
        let start = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(50), || {
            on_tokio(async move {
                let _guard = DropFlag(d);
                tokio::time::sleep(Duration::from_secs(60)).await;
                f.store(true, Ordering::SeqCst);
            })
        });
        let elapsed = start.elapsed();
        (
            r.is_err(),
            elapsed,
            wait_for(&dropped, Duration::from_secs(10)),
        )
    });
    assert!(timed_out);
    assert!(elapsed >= Duration::from_millis(50), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(was_dropped, "the tokio task still runs");
    assert!(!finished.load(Ordering::SeqCst));
}

/// Outside any task, the call blocks the calling thread, from any thread.
#[test]
fn from_plain_threads() {
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            std::thread::spawn(move || {
                on_tokio(async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    i * 10
                })
            })
        })
        .collect();
    let got: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, [0, 10, 20, 30]);
}

/// On a thread driving a tokio runtime, outside a task, the call refuses
/// with tokio's message instead of blocking that thread.
#[test]
fn refused_inside_a_tokio_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = std::thread::spawn(move || rt.block_on(async { on_tokio(async { 1 }) }))
        .join()
        .unwrap_err();
    let msg = (err.downcast_ref::<String>().map(String::as_str))
        .or_else(|| err.downcast_ref::<&str>().copied());
    assert!(
        msg.is_some_and(|m| m.contains("from within a runtime")),
        "{msg:?}"
    );
    // A tokio blocking thread may wait, like any plain thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        tokio::task::spawn_blocking(|| on_tokio(async { 5 }))
            .await
            .unwrap()
    });
    assert_eq!(got, 5);
}

/// Many tasks on two scheduler threads call at once; every value comes
/// back to its own caller, and the calls overlap rather than queue.
#[test]
fn many_concurrent_calls() {
    const TASKS: u64 = 200;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let handles: Vec<_> = (0..2u64)
        .map(|w| {
            let (in_flight, peak) = (in_flight.clone(), peak.clone());
            rt.spawn_on(w as usize, move || {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|i| {
                        let (in_flight, peak) = (in_flight.clone(), peak.clone());
                        yieldloop::spawn(move || {
                            let n = w * TASKS + i;
                            on_tokio(async move {
                                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                                peak.fetch_max(now, Ordering::SeqCst);
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                in_flight.fetch_sub(1, Ordering::SeqCst);
                                n * 2
                            }) == n * 2
                        })
                    })
                    .collect();
                tasks
                    .into_iter()
                    .filter_map(|t| t.join().ok())
                    .filter(|ok| *ok)
                    .count()
            })
        })
        .collect();
    let right: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    rt.shutdown();
    assert_eq!(right, [TASKS as usize, TASKS as usize]);
    // 400 sleeps of 20 ms one after the other would take 8 s.
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(
        peak.load(Ordering::SeqCst) > 10,
        "the calls did not overlap"
    );
}

/// The runtime's settings are fixed once it runs.
#[test]
fn configuring_after_first_use_is_refused() {
    let handle = yieldloop::tokio_handle();
    assert!(handle.metrics().num_workers() >= 1);
    let err = yieldloop::tokio_runtime(|b| {
        b.worker_threads(3);
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    // The handle spawns on the same runtime `on_tokio` uses.
    let bg = handle.spawn(async { 40 });
    assert_eq!(on_tokio(async move { bg.await.unwrap() + 2 }), 42);
}
