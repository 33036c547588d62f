//! What a task dump costs: `diag::dump()` over many paused tasks, each
//! with its backtrace, and the text of it.
//!
//! `--n` tasks (default 100,000) each call down `--depth` frames of a
//! recursive function (default 8) and pause there: a third on a timer an
//! hour away, a third on a channel, a third in a join of a task of their
//! own. The main task then takes a dump and times two steps:
//!
//! - `capture_ms`: `diag::dump()` itself: the scheduler lists every task
//!   and resumes each just long enough to walk its own stack (return
//!   addresses only);
//! - `text_ms`: writing it out (`to_string()`), where each return address
//!   is resolved to a name, file and line once per dump, and each task's
//!   line and backtrace (or a reference to an identical earlier one) is
//!   written.
//!
//! ```text
//! dump_time [--n 100000] [--depth 8]
//! ```
//!
//! Prints one line: `dump_time n=.. depth=.. tasks=.. capture_ms=..
//! capture_us_per_task=.. text_ms=.. text_bytes=.. frames=..`. Exits
//! non-zero if the dump misses a task or a backtrace.

use std::time::{Duration, Instant};

use yieldloop::diag::{self, TaskState, WaitingOn};
use yieldloop::sync::local::channel;

/// Calls itself `depth` times, then pauses in `wait`.
#[inline(never)]
fn descend(depth: u32, wait: &dyn Fn()) -> u32 {
    if depth == 0 {
        wait();
        return 0;
    }
    std::hint::black_box(descend(depth - 1, wait)) + 1
}

fn main() {
    let mut n = 100_000usize;
    let mut depth = 8u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&a));
        match a.as_str() {
            "--n" => n = value().parse().unwrap_or_else(|_| usage("--n")),
            "--depth" => depth = value().parse().unwrap_or_else(|_| usage("--depth")),
            _ => usage(&a),
        }
    }
    // Spawning 100,000 tasks and writing out their dump hold the main
    // task for a while, by design: no warnings about it.
    yieldloop::diag::set_slow_task_threshold(None);
    let ok = yieldloop::run(move || {
        let (tx, rx) = channel::<()>();
        let rx = std::rc::Rc::new(rx);
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let rx = rx.clone();
            handles.push(yieldloop::spawn(move || {
                let wait: Box<dyn Fn()> = match i % 3 {
                    0 => Box::new(|| yieldloop::sleep(Duration::from_secs(3600))),
                    1 => Box::new(move || {
                        let _ = rx.recv();
                    }),
                    _ => Box::new(|| {
                        let inner =
                            yieldloop::spawn(|| yieldloop::sleep(Duration::from_secs(3600)));
                        let _ = inner.join();
                    }),
                };
                descend(depth, &*wait);
            }));
        }
        // Let every task start and pause.
        yieldloop::sleep(Duration::from_millis(50));
        let start = Instant::now();
        let dump = diag::dump_within(Duration::from_secs(600));
        let capture = start.elapsed();
        let start = Instant::now();
        let text = dump.to_string();
        let text_time = start.elapsed();
        let ours: Vec<_> = dump
            .tasks()
            .filter(|t| {
                matches!(
                    t.state,
                    TaskState::Waiting(
                        WaitingOn::Timer | WaitingOn::Channel | WaitingOn::Join { .. }
                    )
                )
            })
            .collect();
        // The tasks, their inner tasks (a third of n) and the main task.
        let expected = n + n / 3;
        let with_backtrace = ours
            .iter()
            .filter(|t| t.backtrace.as_ref().is_some_and(|b| !b.is_empty()))
            .count();
        let frames = ours
            .first()
            .and_then(|t| t.backtrace.as_ref())
            .map_or(0, |b| b.len());
        println!(
            "dump_time n={n} depth={depth} tasks={} capture_ms={:.1} capture_us_per_task={:.2} text_ms={:.1} text_bytes={} frames={frames}",
            ours.len(),
            capture.as_secs_f64() * 1e3,
            capture.as_secs_f64() * 1e6 / dump.tasks().count().max(1) as f64,
            text_time.as_secs_f64() * 1e3,
            text.len(),
        );
        drop(tx);
        for h in handles {
            h.cancel();
        }
        ours.len() >= expected && with_backtrace == ours.len()
    });
    if !ok {
        eprintln!("dump_time: the dump missed tasks or backtraces");
        std::process::exit(1);
    }
}

fn usage(bad: &str) -> ! {
    eprintln!("dump_time: bad argument {bad:?}\nusage: dump_time [--n 100000] [--depth 8]");
    std::process::exit(2)
}
