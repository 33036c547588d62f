//! The blocking pool: `spawn_blocking` results, panics as errors, and a
//! scheduler that keeps its timing while pool threads block.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A value computed on the pool comes back to the joining task.
#[test]
fn results_come_back_to_the_task() {
    let got = yieldloop::run(|| {
        let handles: Vec<_> = (0..16u64)
            .map(|i| yieldloop::spawn_blocking(move || i * i))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(got, (0..16u64).map(|i| i * i).sum());
}

/// A panic in the offloaded closure is an error carrying the payload; the
/// pool thread survives it and runs later work.
#[test]
fn a_panic_comes_back_as_an_error() {
    yieldloop::run(|| {
        let sector = std::hint::black_box(7);
        let err = yieldloop::spawn_blocking(move || -> u32 { panic!("bad sector {sector}") })
            .join()
            .unwrap_err();
        assert!(err.is_panic());
        assert!(!err.is_cancelled());
        assert_eq!(err.panic_message(), Some("bad sector 7"));
        let payload = err.into_panic();
        assert_eq!(payload.downcast_ref::<String>().unwrap(), "bad sector 7");
        assert_eq!(yieldloop::spawn_blocking(|| 5).join().unwrap(), 5);
    });
}

/// Outside any task, `join` blocks the thread until the result is in.
#[test]
fn join_outside_a_task_blocks_the_thread() {
    let start = Instant::now();
    let h = yieldloop::spawn_blocking(|| {
        std::thread::sleep(Duration::from_millis(30));
        "done"
    });
    assert_eq!(h.join().unwrap(), "done");
    assert!(start.elapsed() >= Duration::from_millis(30));
}

/// A handle made on one scheduler's thread can be joined by a task on
/// another: it is `Send`.
#[test]
fn a_handle_can_be_joined_on_another_thread() {
    let h = yieldloop::spawn_blocking(|| {
        std::thread::sleep(Duration::from_millis(10));
        String::from("crossed")
    });
    let got = std::thread::spawn(move || yieldloop::run(move || h.join().unwrap()))
        .join()
        .unwrap();
    assert_eq!(got, "crossed");
}

/// While 32 jobs each block a pool thread for 300 ms, a ticking task on the
/// scheduler keeps its 10 ms rhythm, and the jobs overlap (far less than
/// 32 × 300 ms in all).
#[test]
fn blocking_jobs_do_not_stall_the_scheduler() {
    const JOBS: usize = 32;
    const JOB_TIME: Duration = Duration::from_millis(300);
    let (worst_tick, total, ran) = yieldloop::run(|| {
        let ran = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| {
                let ran = ran.clone();
                yieldloop::spawn_blocking(move || {
                    std::thread::sleep(JOB_TIME);
                    ran.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let ticker = yieldloop::spawn(|| {
            let mut worst = Duration::ZERO;
            // 20 ticks of 10 ms: all inside the jobs' 300 ms.
            for _ in 0..20 {
                let t = Instant::now();
                yieldloop::sleep(Duration::from_millis(10));
                worst = worst.max(t.elapsed());
            }
            worst
        });
        let worst = ticker.join().unwrap();
        for j in jobs {
            j.join().unwrap();
        }
        (worst, start.elapsed(), ran.load(Ordering::SeqCst))
    });
    assert_eq!(ran, JOBS);
    assert!(
        worst_tick < Duration::from_millis(200),
        "a 10 ms sleep took {worst_tick:?} while the pool worked"
    );
    assert!(
        total < JOB_TIME * 8,
        "the jobs did not overlap: {total:?} for {JOBS} jobs of {JOB_TIME:?}"
    );
}

/// Many short jobs from many tasks all complete, bounded in count and time.
#[test]
fn many_tasks_offload_concurrently() {
    let start = Instant::now();
    let total = yieldloop::run(|| {
        let tasks: Vec<_> = (0..50u64)
            .map(|t| {
                yieldloop::spawn(move || {
                    (0..20u64)
                        .map(|i| {
                            yieldloop::spawn_blocking(move || t * 100 + i)
                                .join()
                                .unwrap()
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        tasks.into_iter().map(|t| t.join().unwrap()).sum::<u64>()
    });
    let expect: u64 = (0..50u64)
        .flat_map(|t| (0..20u64).map(move |i| t * 100 + i))
        .sum();
    assert_eq!(total, expect);
    assert!(start.elapsed() < Duration::from_secs(20));
}

/// The pool never has more threads than its limit, and reports itself.
#[test]
fn the_pool_respects_its_thread_limit() {
    let handles: Vec<_> = (0..100)
        .map(|_| yieldloop::spawn_blocking(|| std::thread::sleep(Duration::from_millis(2))))
        .collect();
    let stats = yieldloop::diag::blocking_pool_stats();
    assert!(stats.threads <= stats.max_threads, "{stats:?}");
    assert_eq!(
        stats.max_threads,
        yieldloop::diag::DEFAULT_BLOCKING_MAX_THREADS
    );
    for h in handles {
        h.join().unwrap();
    }
}

/// Idle pool threads exit once the idle timeout has passed.
#[test]
fn idle_threads_exit_after_the_timeout() {
    yieldloop::diag::set_blocking_idle_timeout(Duration::from_millis(50));
    yieldloop::spawn_blocking(|| ()).join().unwrap();
    // Other tests of this file may still be using the pool: wait for them
    // too, within a bound.
    let deadline = Instant::now() + Duration::from_secs(15);
    while yieldloop::diag::blocking_pool_stats().threads > 0 {
        assert!(
            Instant::now() < deadline,
            "pool threads stayed: {:?}",
            yieldloop::diag::blocking_pool_stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A task that stops waiting for a pool job (its timeout expired) leaves no
/// wake-up behind: a deadlock right after is reported at once, not only
/// when the job ends.
#[test]
fn a_timed_out_join_leaves_no_waker_behind() {
    const JOB_TIME: Duration = Duration::from_secs(3);
    let start = Instant::now();
    let r = std::panic::catch_unwind(|| {
        yieldloop::run(|| {
            let job = yieldloop::spawn_blocking(|| std::thread::sleep(JOB_TIME));
            let waited = yieldloop::timeout(Duration::from_millis(20), || job.join());
            assert!(waited.is_err(), "the join should have timed out");
            // Nothing can ever unpark this: a deadlock.
            let token = yieldloop::raw::park_token();
            let _ = yieldloop::raw::park(token, None);
        })
    });
    let err = r.expect_err("a main task parked with no waker must be reported");
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("deadlock"), "unexpected message: {msg}");
    assert!(
        start.elapsed() < JOB_TIME / 2,
        "the deadlock was reported only after {:?}",
        start.elapsed()
    );
}
