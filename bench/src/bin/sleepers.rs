//! The "sleepers" workload: N tasks each sleep one second and then return a
//! pseudo-random number; all of them are joined.
//!
//! ```text
//! sleepers --runtime yieldloop|tokio|may|threads --n N
//! ```
//!
//! One measurement per process, printed as a single line of `key=value`
//! fields on stdout (bench/run.sh collects them):
//!
//! ```text
//! sleepers runtime=tokio n=1000 wall_s=1.001234 spawn_s=0.000321 hwm_kb=5120 maps=60 checksum=49512
//! ```
//!
//! - `wall_s`: from just before the first spawn until the last join returned.
//! - `spawn_s`: the part of that spent creating the N tasks.
//! - `hwm_kb`: `VmHWM` from /proc/self/status (peak resident set) at the end.
//! - `maps`: the largest line count of /proc/self/maps seen, sampled after
//!   all tasks were spawned, in the last task before it sleeps (by then
//!   every earlier task has started), and after the joins.
//!
//! Failures (a panic, an allocation failure) end the process with a
//! non-zero status and a message on stderr; the driver script records them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use yieldloop_bench::sleepers::{max_maps, random, sample_maps, status_kb};

const SLEEP: Duration = Duration::from_secs(1);

struct Outcome {
    wall: Duration,
    spawn: Duration,
    checksum: u64,
}

fn run_yieldloop(n: u64, seed: u64) -> Outcome {
    yieldloop::run(move || {
        let start = Instant::now();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                yieldloop::spawn(move || {
                    if i == n - 1 {
                        sample_maps();
                    }
                    yieldloop::sleep(SLEEP);
                    random(seed, i)
                })
            })
            .collect();
        let spawn = start.elapsed();
        sample_maps();
        let checksum = handles
            .into_iter()
            .map(|h| h.join().expect("task failed"))
            .sum();
        Outcome {
            wall: start.elapsed(),
            spawn,
            checksum,
        }
    })
}

fn run_tokio(n: u64, seed: u64) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let start = Instant::now();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                tokio::spawn(async move {
                    if i == n - 1 {
                        sample_maps();
                    }
                    tokio::time::sleep(SLEEP).await;
                    random(seed, i)
                })
            })
            .collect();
        let spawn = start.elapsed();
        sample_maps();
        let mut checksum = 0;
        for h in handles {
            checksum += h.await.expect("task failed");
        }
        Outcome {
            wall: start.elapsed(),
            spawn,
            checksum,
        }
    })
}

fn run_may(n: u64, seed: u64) -> Outcome {
    may::config().set_workers(1);
    // Placement is left to the OS (and to taskset), as for the others.
    may::config().set_worker_pin(false);
    // Spawn and join from inside a coroutine, so that everything runs on
    // the one worker rather than on the main thread and the worker at once.
    let main = may::go!(move || {
        let start = Instant::now();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                may::go!(move || {
                    if i == n - 1 {
                        sample_maps();
                    }
                    may::coroutine::sleep(SLEEP);
                    random(seed, i)
                })
            })
            .collect();
        let spawn = start.elapsed();
        sample_maps();
        let checksum = handles
            .into_iter()
            .map(|h| h.join().expect("coroutine failed"))
            .sum();
        Outcome {
            wall: start.elapsed(),
            spawn,
            checksum,
        }
    });
    match main.join() {
        Ok(o) => o,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            eprintln!("sleepers: may: main coroutine failed: {msg}");
            std::process::exit(3);
        }
    }
}

fn run_threads(n: u64, seed: u64) -> Outcome {
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            std::thread::Builder::new()
                .spawn(move || {
                    std::thread::sleep(SLEEP);
                    random(seed, i)
                })
                .unwrap_or_else(|e| {
                    eprintln!("sleepers: threads: spawn #{i} failed: {e}");
                    std::process::exit(3);
                })
        })
        .collect();
    let spawn = start.elapsed();
    sample_maps();
    let checksum = handles
        .into_iter()
        .map(|h| h.join().expect("thread failed"))
        .sum();
    Outcome {
        wall: start.elapsed(),
        spawn,
        checksum,
    }
}

fn main() {
    let mut runtime = None;
    let mut n: u64 = 1000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runtime" => runtime = args.next(),
            "--n" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            _ => {
                eprintln!("usage: sleepers --runtime yieldloop|tokio|may|threads --n N");
                std::process::exit(2);
            }
        }
    }
    if n == 0 {
        eprintln!("sleepers: --n must be a positive integer");
        std::process::exit(2);
    }
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let runtime = runtime.unwrap_or_default();
    let outcome = match runtime.as_str() {
        "yieldloop" => run_yieldloop(n, seed),
        "tokio" => run_tokio(n, seed),
        "may" => run_may(n, seed),
        "threads" => run_threads(n, seed),
        other => {
            eprintln!("sleepers: unknown runtime {other:?}");
            std::process::exit(2);
        }
    };
    sample_maps();
    println!(
        "sleepers runtime={runtime} n={n} wall_s={:.6} spawn_s={:.6} hwm_kb={} maps={} checksum={}",
        outcome.wall.as_secs_f64(),
        outcome.spawn.as_secs_f64(),
        status_kb("VmHWM"),
        max_maps(),
        outcome.checksum,
    );
}
