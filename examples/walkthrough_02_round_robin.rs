//! Walkthrough step 2: taking turns, and why a round-robin loop cannot wait.
//!
//! ```text
//! cargo run --example walkthrough_02_round_robin
//! cargo run --example walkthrough_02_round_robin -- --wait-ms 200
//! ```
//!
//! First, three coroutines on a FIFO run queue: each prints a line and
//! pauses, and the loop resumes them in turn until all have finished. The
//! lines interleave, A1 B1 C1 A2 B2 …, on one thread.
//!
//! Then the flaw: a task that wants to wait `--wait-ms` milliseconds (50 by
//! default) has no way to say so. All it can do is look at the clock and
//! pause, over and over, and the loop resumes it over and over, keeping a
//! core busy for the whole wait. The last lines count those turns and the
//! CPU time they burnt.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};

mod args;
use args::Args;

// ANCHOR: loop
/// A task: a coroutine that is resumed with nothing and pauses with nothing.
type Task = Coroutine<(), (), ()>;

/// Resumes the front task; if it paused, puts it at the back. Returns how
/// many resumes it took until every task had finished.
fn round_robin(tasks: Vec<Task>) -> u64 {
    let mut queue: VecDeque<Task> = tasks.into();
    let mut resumes = 0;
    while let Some(mut task) = queue.pop_front() {
        resumes += 1;
        match task.resume(()) {
            CoroutineResult::Yield(()) => queue.push_back(task),
            CoroutineResult::Return(()) => {} // finished: dropped
        }
    }
    resumes
}
// ANCHOR_END: loop

// ANCHOR: tasks
/// A task that prints `steps` numbered lines, pausing after each.
fn chatty(name: &'static str, steps: u32) -> Task {
    Coroutine::new(move |yielder, ()| {
        for step in 1..=steps {
            println!("{name}{step}");
            yielder.suspend(());
        }
    })
}
// ANCHOR_END: tasks

// ANCHOR: busy_wait
/// The only "sleep" a round-robin loop allows: check the clock, pause,
/// check again. Returns how many times it was resumed for nothing.
fn busy_wait(yielder: &Yielder<(), ()>, wait: Duration) -> u64 {
    let deadline = Instant::now() + wait;
    let mut pointless = 0;
    while Instant::now() < deadline {
        yielder.suspend(());
        pointless += 1;
    }
    pointless
}
// ANCHOR_END: busy_wait

fn main() {
    let mut args = Args::new("walkthrough_02_round_robin [--wait-ms MS]");
    let wait = Duration::from_millis(args.value_in("--wait-ms", 50, ..=60_000));
    args.finish();

    let resumes = round_robin(vec![chatty("A", 3), chatty("B", 2), chatty("C", 3)]);
    println!("{resumes} resumes for 8 steps and 3 endings");

    // ANCHOR: flaw
    let pointless = std::rc::Rc::new(std::cell::Cell::new(0));
    let count = pointless.clone();
    let sleeper = Coroutine::new(move |yielder, ()| {
        println!("sleeper: waiting {} ms", wait.as_millis());
        count.set(busy_wait(yielder, wait));
        println!("sleeper: done");
    });
    let cpu_before = thread_cpu_time();
    let start = Instant::now();
    let resumes = round_robin(vec![sleeper, chatty("D", 2)]);
    let (wall, cpu) = (start.elapsed(), thread_cpu_time() - cpu_before);
    // ANCHOR_END: flaw
    println!(
        "the loop resumed tasks {resumes} times; {} of them only to check the clock",
        pointless.get()
    );
    println!(
        "CPU busy {:.0} ms of the {:.0} ms wall time",
        cpu.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3
    );
}

/// CPU time this thread has used: the first field of
/// `/proc/thread-self/schedstat`, in nanoseconds (zero if unavailable).
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}
