//! Walkthrough step 7: many sleepers, tasks against threads.
//!
//! ```text
//! cargo run --release --example walkthrough_07_sleepers
//! cargo run --release --example walkthrough_07_sleepers -- --n 100000 --secs 1
//! cargo run --release --example walkthrough_07_sleepers -- --threads --n 10000 --secs 1
//! cargo run --release --example walkthrough_07_sleepers -- --processes --n 1000 --secs 1
//! ```
//!
//! The workload of the benchmark in `docs/benchmarks.md`, small enough to
//! try by hand: `--n` workers (10,000 by default) each sleep `--secs`
//! seconds (0.2) and then return a pseudo-random number; all are joined and
//! the numbers summed. With yieldloop each worker is a task on one thread;
//! with `--threads` each is an OS thread (at most 20,000 of them); with
//! `--processes` each is a child process, this program run again (at most
//! 2,000), which prints its number on stdout. The report gives the wall
//! time from the first spawn to the last join, how much of it went into
//! spawning, and the peak resident memory of this process (`VmHWM`; for
//! `--processes` the children's memory is not counted).

use std::io::Read;
use std::process::{self, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

mod args;
use args::Args;

/// The "result" each worker returns: a splitmix64 step from its index.
fn pseudo_random(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % 100
}

// ANCHOR: tasks
/// N tasks on one scheduler; returns (sum, time spent spawning).
fn with_tasks(n: u64, nap: Duration) -> (u64, Duration) {
    yieldloop::run(move || {
        let start = Instant::now();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                if i % 1000 == 999 {
                    // Let the new tasks start their sleeps, and don't hold
                    // the thread for the whole spawning loop.
                    yieldloop::yield_now();
                }
                yieldloop::spawn(move || {
                    yieldloop::sleep(nap);
                    pseudo_random(i)
                })
            })
            .collect();
        let spawning = start.elapsed();
        let sum = handles.into_iter().map(|h| h.join().unwrap()).sum();
        (sum, spawning)
    })
}
// ANCHOR_END: tasks

/// N OS threads; returns (sum, time spent spawning).
fn with_threads(n: u64, nap: Duration) -> (u64, Duration) {
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    thread::sleep(nap);
                    pseudo_random(i)
                })
                .unwrap_or_else(|e| {
                    eprintln!("walkthrough_07_sleepers: thread {i}: {e}");
                    process::exit(1);
                })
        })
        .collect();
    let spawning = start.elapsed();
    let sum = handles.into_iter().map(|h| h.join().unwrap()).sum();
    (sum, spawning)
}

/// N child processes; returns (sum, time spent spawning).
fn with_processes(n: u64, nap: Duration) -> (u64, Duration) {
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        eprintln!("walkthrough_07_sleepers: cannot find this program: {e}");
        process::exit(1);
    });
    let start = Instant::now();
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(&exe)
                .args(["--child", &i.to_string(), &nap.as_secs_f64().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| {
                    eprintln!("walkthrough_07_sleepers: process {i}: {e}");
                    process::exit(1);
                })
        })
        .collect();
    let spawning = start.elapsed();
    let sum = children
        .into_iter()
        .map(|mut child| {
            let mut out = String::new();
            if let Some(mut pipe) = child.stdout.take() {
                let _ = pipe.read_to_string(&mut out);
            }
            let status = child.wait().expect("waiting for a child");
            assert!(status.success(), "a child failed: {status}");
            out.trim()
                .parse::<u64>()
                .expect("a child prints its number")
        })
        .sum();
    (sum, spawning)
}

/// Peak resident memory of this process in MiB, from `/proc/self/status`.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// How the sleepers run.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Tasks,
    Threads,
    Processes,
}

fn main() {
    let mut args =
        Args::new("walkthrough_07_sleepers [--n N] [--secs S] [--threads | --processes]");
    if args.flag("--child") {
        // A child of `--processes`: sleep, print the number, exit.
        let i: u64 = args.positional("I").unwrap_or(0);
        let secs: f64 = args.positional("SECS").unwrap_or(0.0);
        thread::sleep(Duration::from_secs_f64(secs));
        println!("{}", pseudo_random(i));
        return;
    }
    let n: u64 = args.value_or("--n", 10_000);
    let nap = Duration::from_secs_f64(args.value_in("--secs", 0.2, 0.0..=60.0));
    let (threads, processes) = (args.flag("--threads"), args.flag("--processes"));
    args.finish();
    let (mode, max) = match (threads, processes) {
        (false, false) => (Mode::Tasks, 1_000_000),
        (true, false) => (Mode::Threads, 20_000),
        (false, true) => (Mode::Processes, 2_000),
        (true, true) => args.fail("--threads or --processes, not both"),
    };
    if !(1..=max).contains(&n) {
        args.fail(format!("--n {n}: 1 to {max} in this mode"));
    }
    let start = Instant::now();
    let (sum, spawning) = match mode {
        Mode::Tasks => with_tasks(n, nap),
        Mode::Threads => with_threads(n, nap),
        Mode::Processes => with_processes(n, nap),
    };
    let wall = start.elapsed();
    let expected: u64 = (0..n).map(pseudo_random).sum();
    assert_eq!(sum, expected, "every worker's number was collected");
    println!(
        "{n} {} slept {:.2}s each: all joined after {:.2}s (spawning took {:.2}s)",
        match mode {
            Mode::Tasks => "tasks",
            Mode::Threads => "threads",
            Mode::Processes => "processes",
        },
        nap.as_secs_f64(),
        wall.as_secs_f64(),
        spawning.as_secs_f64()
    );
    match peak_rss_mib() {
        Some(mib) => println!("peak resident memory: {mib:.1} MiB"),
        None => println!("peak resident memory: unknown"),
    }
}
