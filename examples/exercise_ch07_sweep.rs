//! Chapter 7 exercise: the articles' sweep of N, as CSV.
//!
//! ```text
//! cargo run --release --example exercise_ch07_sweep > sweep.csv
//! cargo run --release --example exercise_ch07_sweep -- --list 1,10,100 --secs 0.2
//! ```
//!
//! The Python article in the appendix times N coroutines that each sleep a
//! second, for N in 1, 10, 50, 100, 500, 1000, 5000, 10000, 20000, and plots
//! the time against N. This does the same with yieldloop tasks: for each N
//! of `--list` (that list by default) it runs a fresh `yieldloop::run` with
//! N tasks that sleep `--secs` seconds (1) and return a number, joins them
//! all, and prints a CSV line `n,seconds`: the wall time from the first
//! spawn to the last join. A flat line is the point: concurrent waits take
//! one wait's time, whatever N is, until spawning itself starts to show.

use std::time::{Duration, Instant};

mod args;
use args::Args;

/// The N the article's benchmark uses.
const ARTICLE_LIST: [u64; 9] = [1, 10, 50, 100, 500, 1000, 5000, 10000, 20000];

/// Runs `n` sleepers of `nap` each on one scheduler; returns the wall time.
fn sweep_point(n: u64, nap: Duration) -> Duration {
    let start = Instant::now();
    let sum: u64 = yieldloop::run(move || {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                if i % 1000 == 999 {
                    yieldloop::yield_now(); // let the new tasks start sleeping
                }
                yieldloop::spawn(move || {
                    yieldloop::sleep(nap); // the "database call"
                    i % 101
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let wall = start.elapsed();
    assert_eq!(
        sum,
        (0..n).map(|i| i % 101).sum(),
        "every task's number came back"
    );
    wall
}

/// The N of `--list`, separated by commas; `None` unless each is a number
/// from 1 to 1000000.
fn parse_list(text: &str) -> Option<Vec<u64>> {
    text.split(',')
        .map(|n| {
            n.trim()
                .parse()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
        })
        .collect()
}

fn main() {
    let mut args = Args::new("exercise_ch07_sweep [--list N,N,...] [--secs S]");
    let list = match args.value::<String>("--list") {
        None => ARTICLE_LIST.to_vec(),
        Some(text) => parse_list(&text)
            .unwrap_or_else(|| args.fail(format!("--list {text:?}: each N from 1 to 1000000"))),
    };
    let nap = Duration::from_secs_f64(args.value_in("--secs", 1.0, 0.0..=60.0));
    args.finish();
    println!("n,seconds");
    for n in list {
        let wall = sweep_point(n, nap);
        println!("{n},{:.4}", wall.as_secs_f64());
    }
}
