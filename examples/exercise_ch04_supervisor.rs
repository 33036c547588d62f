//! Chapter 4 exercise: surviving a panicking task with a supervisor.
//!
//! ```text
//! cargo run --example exercise_ch04_supervisor
//! ```
//!
//! Three shards of numbers are each worked through by a worker task that
//! divides 1000 by every number, pausing 5 ms per item as if for I/O. A zero
//! makes the worker panic. The panic stays in that task: its supervisor gets
//! it from `join` as an error, says so, skips the poisoned item and starts a
//! fresh worker where the last one stopped (the progress lives outside the
//! worker, in a `Progress` the two share). Meanwhile the other shards and a
//! heartbeat task go on as if nothing had happened. A shard that fails more
//! than `MAX_RESTARTS` times is given up.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// Restarts a supervisor allows before it gives up on its shard.
const MAX_RESTARTS: u32 = 2;

/// What a shard's workers share with their supervisor. It lives outside
/// the workers, so it survives a worker's panic.
#[derive(Default)]
struct Progress {
    /// The index of the next item to work on.
    next: Cell<usize>,
    /// The sum so far.
    sum: Cell<u64>,
}

/// Works through `items` from `progress.next` on, adding 1000 / item to the
/// sum; panics on a zero, leaving `progress.next` at the bad item.
fn worker(items: &[u64], progress: &Progress) {
    while let Some(&item) = items.get(progress.next.get()) {
        yieldloop::sleep(Duration::from_millis(5)); // the "I/O" for this item
        let share = 1000 / item; // a zero panics: "attempt to divide by zero"
        progress.sum.set(progress.sum.get() + share);
        progress.next.set(progress.next.get() + 1);
    }
}

/// Runs workers for one shard until one finishes, restarting after panics;
/// returns the sum, or `None` if the shard was given up.
fn supervise(name: &'static str, items: &'static [u64]) -> Option<u64> {
    let progress = Rc::new(Progress::default());
    let mut restarts = 0;
    loop {
        let p = progress.clone();
        let outcome = yieldloop::spawn(move || worker(items, &p)).join();
        let (at, sum) = (progress.next.get(), progress.sum.get());
        match outcome {
            Ok(()) => {
                println!("shard {name}: done, sum {sum}, {restarts} restart(s)");
                return Some(sum);
            }
            Err(e) => {
                let why = e.panic_message().unwrap_or("?");
                println!("shard {name}: worker panicked at item {at} ({why})");
                if restarts == MAX_RESTARTS {
                    println!("shard {name}: gave up after {restarts} restarts, sum so far {sum}");
                    return None;
                }
                restarts += 1;
                progress.next.set(at + 1); // skip the poisoned item
            }
        }
    }
}

fn main() {
    // One line on stderr per panic instead of the default report.
    std::panic::set_hook(Box::new(|info| eprintln!("panic in a worker: {info}")));
    yieldloop::run(|| {
        let beats = Rc::new(Cell::new(0u32));
        let b = beats.clone();
        let heartbeat = yieldloop::spawn(move || {
            for _ in 0..10 {
                yieldloop::sleep(Duration::from_millis(4));
                b.set(b.get() + 1);
            }
        });
        let shards: [(&'static str, &'static [u64]); 3] = [
            ("A", &[4, 2, 0, 5]),
            ("B", &[1, 8, 10]),
            ("C", &[0, 8, 0, 0, 4]),
        ];
        let supervisors: Vec<_> = shards
            .into_iter()
            .map(|(name, items)| yieldloop::spawn(move || supervise(name, items)))
            .collect();
        for s in supervisors {
            s.join().expect("supervisors do not panic");
        }
        heartbeat.join().expect("the heartbeat does not panic");
        println!("heartbeat: {} of 10 beats", beats.get());
    });
}
