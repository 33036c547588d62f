//! Chapter 8 exercise: looking inside with `yieldloop::diag`.
//!
//! ```text
//! cargo run --example exercise_ch08_stats
//! ```
//!
//! Three things a runtime does behind the scenes, made visible with the
//! counters and warnings of `yieldloop::diag`:
//!
//! 1. stacks are pooled: 1,000 tasks run in waves of 100, and the pool
//!    carves only about one wave's worth of stacks, reusing them after;
//! 2. blocking work goes to a pool of threads: eight `spawn_blocking` jobs
//!    show up in `blocking_pool_stats().submitted`, and the threads stay
//!    within the pool's limit;
//! 3. the slow-task watch: with the threshold at 50 ms, a task that computes
//!    for 150 ms without pausing is named in a warning on stderr, while a
//!    task that does the same work with a `yield_now` every millisecond is
//!    not (unless the machine is so loaded that the kernel takes the thread
//!    away for 50 ms in the middle of a slice: the watch measures wall time).

use std::time::{Duration, Instant};

use yieldloop::diag;

/// Spins for `total` without pausing, or pausing every `slice` if given.
fn busy(total: Duration, slice: Option<Duration>) {
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < total {
        if slice.is_some_and(|s| last.elapsed() >= s) {
            yieldloop::yield_now();
            last = Instant::now();
        }
        std::hint::spin_loop();
    }
}

fn main() {
    diag::set_slow_task_threshold(Some(Duration::from_millis(50)));
    yieldloop::run(|| {
        let before = diag::pool_stats();
        for _wave in 0..10 {
            let wave: Vec<_> = (0..100)
                .map(|_| yieldloop::spawn(|| yieldloop::sleep(Duration::from_millis(1))))
                .collect();
            wave.into_iter().for_each(|t| t.join().unwrap());
        }
        let after = diag::pool_stats();
        println!(
            "stacks: 1000 tasks in waves of 100 carved {} stacks; {} free in the pool now",
            after.carved - before.carved,
            after.free
        );

        let before = diag::blocking_pool_stats();
        let jobs: Vec<_> = (0..8u64)
            .map(|i| yieldloop::spawn_blocking(move || i * i))
            .collect();
        let sum: u64 = jobs.into_iter().map(|j| j.join().unwrap()).sum();
        let after = diag::blocking_pool_stats();
        println!(
            "blocking pool: {} jobs submitted (sum of squares {sum}), {} of at most {} threads",
            after.submitted - before.submitted,
            after.threads,
            after.max_threads
        );

        let polite = yieldloop::Builder::new()
            .name("polite")
            .spawn(|| busy(Duration::from_millis(150), Some(Duration::from_millis(1))))
            .unwrap();
        polite.join().unwrap();
        println!("polite: 150 ms of work, pausing every 1 ms");
        let hog = yieldloop::Builder::new()
            .name("hog")
            .spawn(|| busy(Duration::from_millis(150), None))
            .unwrap();
        hog.join().unwrap();
        println!("hog: 150 ms of work without a pause (see the warning on stderr)");
    });
}
