//! Chapter 3 exercise: a periodic ticker on the deadline heap.
//!
//! ```text
//! cargo run --example exercise_ch03_ticker
//! cargo run --example exercise_ch03_ticker -- --period-ms 100 --ticks 5
//! ```
//!
//! The heap loop of chapter 3, with a ticker task that wakes every
//! `--period-ms` (20) for `--ticks` beats (10), next to a worker that
//! sleeps in uneven steps. The ticker computes each deadline from the one
//! before (`next += period`), not from the time it woke, so a late wake-up
//! does not push the later beats back: tick k is due at k periods, however
//! late tick k-1 was. Each tick prints how long after its due time it came.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};

mod args;
use args::Args;

/// What a task asks for when it pauses: resume me at or after this instant.
struct Wait(Instant);

type Task = Coroutine<(), Wait, ()>;

/// The heap loop: a FIFO of ready tasks, a min-heap of (deadline, seq,
/// task), and one kernel wait until the earliest deadline.
fn heap_loop(tasks: Vec<Task>) -> std::io::Result<()> {
    let mut poll = mio::Poll::new()?;
    let mut events = mio::Events::with_capacity(1);
    let mut table: Vec<Option<Task>> = tasks.into_iter().map(Some).collect();
    let mut ready: VecDeque<usize> = (0..table.len()).collect();
    let mut timers: BinaryHeap<Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
    let mut seq = 0;
    loop {
        while let Some(key) = ready.pop_front() {
            let task = table[key].as_mut().expect("a queued task is alive");
            match task.resume(()) {
                CoroutineResult::Yield(Wait(at)) => {
                    timers.push(Reverse((at, seq, key)));
                    seq += 1;
                }
                CoroutineResult::Return(()) => table[key] = None,
            }
        }
        let Some(&Reverse((next, _, _))) = timers.peek() else {
            return Ok(());
        };
        poll.poll(
            &mut events,
            Some(next.saturating_duration_since(Instant::now())),
        )?;
        let now = Instant::now();
        // Due means deadline <= now.
        while let Some(&Reverse((at, _, key))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            ready.push_back(key);
        }
    }
}

/// Beats `ticks` times, `period` apart, on a schedule fixed at the start.
fn ticker(period: Duration, ticks: u32) -> Task {
    Coroutine::new(move |y: &Yielder<(), Wait>, ()| {
        let start = Instant::now();
        let mut next = start;
        for k in 1..=ticks {
            next += period; // from the last deadline, not from now: no drift
            y.suspend(Wait(next));
            let late = next.elapsed();
            println!(
                "tick {k} at {:.1} ms, {:.2} ms after its due time",
                start.elapsed().as_secs_f64() * 1e3,
                late.as_secs_f64() * 1e3
            );
        }
    })
}

/// Sleeps in uneven steps meanwhile, so the heap holds more than the ticker.
fn worker(period: Duration) -> Task {
    Coroutine::new(move |y: &Yielder<(), Wait>, ()| {
        for step in [3u32, 7, 5] {
            y.suspend(Wait(Instant::now() + period * step / 4));
        }
        println!("worker done");
    })
}

fn main() {
    let mut args = Args::new("exercise_ch03_ticker [--period-ms 1..10000] [--ticks 1..1000]");
    let period_ms: u64 = args.value_in("--period-ms", 20, 1..=10_000);
    let ticks: u32 = args.value_in("--ticks", 10, 1..=1_000);
    args.finish();
    let period = Duration::from_millis(period_ms);
    let start = Instant::now();
    heap_loop(vec![ticker(period, ticks), worker(period)]).expect("the poll works");
    println!(
        "{ticks} ticks of {period_ms} ms in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
}
