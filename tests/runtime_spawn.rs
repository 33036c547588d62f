//! `Runtime::spawn`: balanced placement on the least-loaded worker, and
//! handles joined from anywhere.

mod util;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use util::within;
use yieldloop::Runtime;

fn spin(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Worker 0 is held by a task that spins without pausing; the tasks
/// spawned meanwhile start on worker 1.
#[test]
fn busy_worker_gets_fewer_tasks() {
    within(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let busy = rt.spawn_on(0, move || {
            started_tx.send(()).unwrap();
            spin(Duration::from_millis(300));
        });
        started_rx.recv().unwrap();
        let handles: Vec<_> = (0..20)
            .map(|_| {
                rt.spawn(|| {
                    spin(Duration::from_millis(1));
                    Runtime::current_worker().unwrap()
                })
            })
            .collect();
        let placed: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        busy.join().unwrap();
        let on_busy = placed.iter().filter(|&&w| w == 0).count();
        assert!(
            on_busy <= 5,
            "{on_busy} of 20 went to the busy worker: {placed:?}"
        );
    });
}

/// Uneven work spread by `spawn`: the worker that runs the one long job
/// starts fewer of the short ones than the other, which keeps taking them
/// while the long one runs. (Placing by count alone would give each half.)
#[test]
fn uneven_work_is_spread() {
    within(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        // Both workers are held (their threads blocked) until every job is
        // queued, so that on a loaded machine the spawning thread is not
        // starved by the jobs it has already spawned.
        let (ready_tx, ready_rx) = mpsc::channel();
        let gates: Vec<_> = (0..2)
            .map(|w| {
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let ready = ready_tx.clone();
                let h = rt.spawn_on(w, move || {
                    ready.send(()).unwrap();
                    go_rx.recv().unwrap();
                });
                (go_tx, h)
            })
            .collect();
        for _ in 0..2 {
            ready_rx.recv().unwrap();
        }
        let costs: Vec<u64> = std::iter::once(200)
            .chain(std::iter::repeat_n(4, 50))
            .collect();
        let handles: Vec<_> = costs
            .iter()
            .map(|&ms| {
                rt.spawn(move || {
                    spin(Duration::from_millis(ms));
                    Runtime::current_worker().unwrap()
                })
            })
            .collect();
        for (go, h) in gates {
            go.send(()).unwrap();
            h.join().unwrap();
        }
        let placed: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let long_on = placed[0];
        let short_with_long = placed[1..].iter().filter(|&&w| w == long_on).count();
        assert!(
            short_with_long < 25,
            "{short_with_long} of 50 short jobs ran beside the long one: {placed:?}"
        );
    });
}

/// A handle is joined from a task on another worker, from a plain thread,
/// and awaited; a panic comes back as an error.
#[test]
fn joins_from_anywhere() {
    within(|| {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let h = rt.spawn(|| {
            yieldloop::sleep(Duration::from_millis(5));
            Runtime::current_worker().unwrap()
        });
        let ran_on = {
            // Joined from a task on worker 0 and worker 1 alike.
            let h2 = rt.spawn(|| 7);
            let a = rt.spawn_on(0, move || h.join().unwrap());
            let b = rt.spawn_on(1, move || h2.join().unwrap());
            assert_eq!(b.join().unwrap(), 7);
            a.join().unwrap()
        };
        assert!(ran_on < 2);
        // From a plain thread.
        let h = rt.spawn(|| "plain");
        assert_eq!(
            std::thread::spawn(move || h.join().unwrap())
                .join()
                .unwrap(),
            "plain"
        );
        // Awaited.
        let h = rt.spawn(|| 42);
        assert_eq!(yieldloop::block_on(h).unwrap(), 42);
        // A panic.
        let h = rt.spawn(|| -> u8 { panic!("boom") });
        assert!(h.join().unwrap_err().is_panic());
        let late = rt.spawn(|| 1);
        rt.shutdown();
        // It either ran before the shutdown or reports the cancellation.
        match late.join() {
            Ok(v) => assert_eq!(v, 1),
            Err(e) => assert!(e.is_cancelled(), "{e}"),
        }
    });
}
