//! Walkthrough step 3: waiting without blocking, two ways.
//!
//! ```text
//! cargo run --example walkthrough_03_timer_heap
//! cargo run --example walkthrough_03_timer_heap -- --scale 1 --sleepers 1000
//! ```
//!
//! Tasks now pause with an instruction, `Op::Wait(deadline)`: "resume me at
//! or after this instant". Two loops run the same tasks:
//!
//! - the **toy loop** keeps every task in one FIFO queue; a task whose
//!   deadline has not come is put back and the loop sleeps 1 ms before
//!   looking at the next one;
//! - the **heap loop** keeps waiting tasks in a min-heap keyed by deadline
//!   and blocks in the kernel (`mio::Poll::poll` with a timeout) until the
//!   earliest one is due.
//!
//! Each runs three jobs that wait 2, 1 and 3 units (a unit is `--scale`
//! seconds, 0.05 by default), then `--sleepers` tasks (200 by default) that
//! each wait a different time up to 2 units. After each run a line reports
//! the wall time, the loop's turns (a turn ends in one sleep: 1 ms for the
//! toy loop, one kernel wait for the heap loop) and the latest wake-up, how
//! long after its deadline a task was actually resumed.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::process;
use std::rc::Rc;
use std::thread;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};

mod args;
use args::Args;

// ANCHOR: op
/// What a task asks for when it pauses.
enum Op {
    /// Resume me at or after this instant.
    Wait(Instant),
}

/// A task: resumed with nothing, pauses with an `Op`.
type Task = Coroutine<(), Op, ()>;

/// Pauses the calling task for `duration`. An ordinary function: it can be
/// called at any depth of the task's own calls.
fn sleep(yielder: &Yielder<(), Op>, duration: Duration) {
    yielder.suspend(Op::Wait(Instant::now() + duration));
}
// ANCHOR_END: op

/// What a run measured.
#[derive(Default)]
struct Stats {
    /// Times the loop slept: a 1 ms nap (toy loop) or a kernel wait (heap).
    turns: u64,
    /// The longest time from a deadline to the resume it was due for.
    latest: Duration,
}

impl Stats {
    /// Notes a resume of a task whose deadline was `due`.
    fn resumed(&mut self, due: Instant) {
        self.latest = self.latest.max(due.elapsed());
    }
}

// ANCHOR: toy
/// The toy loop: one queue of (task, deadline). A task not yet due goes to
/// the back, and the loop sleeps 1 ms so as not to spin.
fn toy_loop(tasks: Vec<Task>) -> Stats {
    let mut stats = Stats::default();
    let mut queue: VecDeque<(Task, Option<Instant>)> =
        tasks.into_iter().map(|t| (t, None)).collect();
    while let Some((mut task, due)) = queue.pop_front() {
        if let Some(due) = due {
            if Instant::now() < due {
                queue.push_back((task, Some(due)));
                thread::sleep(Duration::from_millis(1));
                stats.turns += 1;
                continue;
            }
            stats.resumed(due);
        }
        match task.resume(()) {
            CoroutineResult::Yield(Op::Wait(at)) => queue.push_back((task, Some(at))),
            CoroutineResult::Return(()) => {}
        }
    }
    stats
}
// ANCHOR_END: toy

// ANCHOR: heap
/// The heap loop: ready tasks in a FIFO run queue, waiting tasks in a
/// min-heap of (deadline, insertion number, task), and a kernel wait until
/// the earliest deadline whenever nothing is ready.
fn heap_loop(tasks: Vec<Task>) -> io::Result<Stats> {
    let mut stats = Stats::default();
    let mut poll = mio::Poll::new()?;
    let mut events = mio::Events::with_capacity(16);
    // Task table: a task's index is its key; `None` once it has finished.
    let mut table: Vec<Option<Task>> = tasks.into_iter().map(Some).collect();
    let mut ready: VecDeque<(usize, Option<Instant>)> =
        (0..table.len()).map(|k| (k, None)).collect();
    // `Reverse` turns std's max-heap into a min-heap. The insertion number
    // breaks ties: equal deadlines wake in the order they were set.
    let mut timers: BinaryHeap<Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
    let mut inserted = 0u64;
    loop {
        // 1. Run every ready task until it pauses or ends.
        while let Some((key, due)) = ready.pop_front() {
            if let Some(due) = due {
                stats.resumed(due);
            }
            let task = table[key].as_mut().expect("a queued task is alive");
            match task.resume(()) {
                CoroutineResult::Yield(Op::Wait(at)) => {
                    timers.push(Reverse((at, inserted, key)));
                    inserted += 1;
                }
                CoroutineResult::Return(()) => table[key] = None,
            }
        }
        // 2. Nothing is ready: block in the kernel until the earliest
        //    deadline. No deadline left means no task left.
        let Some(&Reverse((next, _, _))) = timers.peek() else {
            return Ok(stats);
        };
        poll.poll(
            &mut events,
            Some(next.saturating_duration_since(Instant::now())),
        )?;
        stats.turns += 1;
        // 3. Move every task that is due (deadline <= now) to the run queue.
        let now = Instant::now();
        while let Some(&Reverse((at, _, key))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            ready.push_back((key, Some(at)));
        }
    }
}
// ANCHOR_END: heap

// ANCHOR: jobs
/// A job that announces itself, waits `units` units and says it is done.
fn job(name: &'static str, units: f64, unit: Duration) -> Task {
    Coroutine::new(move |yielder, ()| {
        let wait = unit.mul_f64(units);
        println!("  {name} started, waiting {:.2}s", wait.as_secs_f64());
        sleep(yielder, wait);
        println!("  {name} done");
    })
}
// ANCHOR_END: jobs

/// A quiet task that waits `wait`, then counts itself done.
fn sleeper(wait: Duration, done: Rc<Cell<usize>>) -> Task {
    Coroutine::new(move |yielder, ()| {
        sleep(yielder, wait);
        done.set(done.get() + 1);
    })
}

/// Which loop to run.
#[derive(Clone, Copy)]
enum Loop {
    Toy,
    Heap,
}

fn run(which: Loop, tasks: Vec<Task>) -> io::Result<(Duration, Stats)> {
    let start = Instant::now();
    let stats = match which {
        Loop::Toy => toy_loop(tasks),
        Loop::Heap => heap_loop(tasks)?,
    };
    Ok((start.elapsed(), stats))
}

fn report(what: &str, wall: Duration, stats: &Stats) {
    println!(
        "  {what} in {:.2}s, {} loop turns, latest wake-up {:.1} ms late",
        wall.as_secs_f64(),
        stats.turns,
        stats.latest.as_secs_f64() * 1e3
    );
}

fn main() {
    let mut args = Args::new("walkthrough_03_timer_heap [--scale SECS] [--sleepers N]");
    let unit = Duration::from_secs_f64(args.value_in("--scale", 0.05, 0.001..=60.0));
    let sleepers = args.value_in("--sleepers", 200, 1..=100_000);
    args.finish();
    for (which, title) in [
        (Loop::Toy, "toy loop (poll every 1 ms)"),
        (Loop::Heap, "heap loop (block until the next deadline)"),
    ] {
        println!("{title}:");
        let jobs = vec![
            job("A", 2.0, unit),
            job("B", 1.0, unit),
            job("C", 3.0, unit),
        ];
        let (wall, stats) = run(which, jobs).unwrap_or_else(|e| fail(e));
        report("3 jobs", wall, &stats);

        // Waits spread evenly over (0, 2] units, in a shuffled order.
        let done = Rc::new(Cell::new(0));
        let tasks = (0..sleepers)
            .map(|i| {
                let slot = (i * 7919) % sleepers + 1;
                let wait = unit.mul_f64(2.0 * slot as f64 / sleepers as f64);
                sleeper(wait, done.clone())
            })
            .collect();
        let (wall, stats) = run(which, tasks).unwrap_or_else(|e| fail(e));
        assert_eq!(done.get(), sleepers, "every sleeper finishes");
        report(&format!("{sleepers} sleepers"), wall, &stats);
    }
}

fn fail(e: io::Error) -> ! {
    eprintln!("walkthrough_03_timer_heap: {e}");
    process::exit(1);
}
