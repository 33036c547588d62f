//! Two tasks and a main task that waits for both: one prints twice, a second
//! apart; the other prints three times, two seconds apart.
//!
//! ```text
//! cargo run --example two_tasks
//! cargo run --example two_tasks -- --scale 0.1   # the same run, 10 times faster
//! ```
//!
//! The main task spawns both, joins the first, then the second, and says
//! `done`. The two tasks' waits overlap, so their lines interleave and the
//! whole run takes 6 s, the longer task's time, not the 8 s their waits add
//! up to:
//!
//! ```text
//! Task 1
//! Task 2
//! Task 1
//! Task 2
//! Task 2
//! done after 6.00s, 3.0 ms of it on the CPU
//! ```
//!
//! The CPU figure is the scheduler thread's own time: while the tasks wait,
//! the loop sleeps in the kernel, so it stays near zero however long the
//! waits are. `--scale F` multiplies every wait.

use std::time::{Duration, Instant};

mod args;
use args::Args;

// ANCHOR: repeat
/// Prints `name` `times` times, pausing `gap` after each line.
fn repeat(name: &'static str, times: u32, gap: Duration) {
    for _ in 0..times {
        println!("{name}");
        yieldloop::sleep(gap);
    }
}
// ANCHOR_END: repeat

fn main() {
    let mut args = Args::new("two_tasks [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    let second = Duration::from_secs(1).mul_f64(scale);
    let (start, cpu_before) = (Instant::now(), thread_cpu_time());
    // ANCHOR: main
    yieldloop::run(move || {
        let one = yieldloop::spawn(move || repeat("Task 1", 2, second));
        let two = yieldloop::spawn(move || repeat("Task 2", 3, 2 * second));
        // Each join pauses only the main task; both tasks run meanwhile.
        one.join().expect("task 1 cannot fail");
        two.join().expect("task 2 cannot fail");
    });
    // ANCHOR_END: main
    println!(
        "done after {:.2}s, {:.1} ms of it on the CPU",
        start.elapsed().as_secs_f64(),
        (thread_cpu_time() - cpu_before).as_secs_f64() * 1e3
    );
}

/// CPU time this thread has used, from `/proc/thread-self/schedstat`
/// (zero if unavailable).
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}
