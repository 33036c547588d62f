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

/// `--list` and `--secs`, checked.
fn parse_args() -> Result<(Vec<u64>, Duration), String> {
    let (mut list, mut secs) = (ARTICLE_LIST.to_vec(), 1.0f64);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--list" => {
                list = value
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<u64>()
                            .map_err(|e| format!("--list {s:?}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if list.iter().any(|&n| n == 0 || n > 1_000_000) {
                    return Err("--list: each N from 1 to 1000000".into());
                }
            }
            "--secs" => {
                secs = value
                    .parse()
                    .map_err(|e| format!("--secs {value:?}: {e}"))?;
                if !(0.0..=60.0).contains(&secs) {
                    return Err("--secs: 0 to 60".into());
                }
            }
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    Ok((list, Duration::from_secs_f64(secs)))
}

fn main() {
    let (list, nap) = parse_args().unwrap_or_else(|msg| {
        eprintln!(
            "exercise_ch07_sweep: {msg}\nusage: exercise_ch07_sweep [--list N,N,...] [--secs S]"
        );
        std::process::exit(2);
    });
    println!("n,seconds");
    for n in list {
        let wall = sweep_point(n, nap);
        println!("{n},{:.4}", wall.as_secs_f64());
    }
}
