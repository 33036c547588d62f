//! Timer lateness: how long after its deadline a sleeping task runs again.
//!
//! ```text
//! lateness --runtime yieldloop|tokio|may [--tasks 1000] [--max-ms 50]
//! ```
//!
//! N tasks are spawned at once. Each picks its own delay, uniform in
//! 0..=max-ms at microsecond resolution (xorshift64 seeded from a fixed seed
//! and the task's index, so every run and every runtime draws the same
//! delays), computes `deadline = Instant::now() + delay` inside the task,
//! sleeps until the deadline and records `Instant::now() - deadline` as soon
//! as it runs again:
//!
//! - yieldloop: `sleep_until(deadline)`;
//! - tokio (`current_thread`, `enable_time`): `time::sleep_until(deadline)`;
//! - may (`set_workers(1)`, everything spawned from inside one coroutine):
//!   `coroutine::sleep(deadline - now)`. may keeps its timers on a timer
//!   thread of its own, which hands an expired coroutine back to the worker.
//!
//! A correct runtime never wakes a task before its deadline; a wake-up that
//! does is counted in `early` (its lateness counts as 0 in the percentiles,
//! and the largest amount is `max_early_us`). One line of `key=value` fields
//! on stdout:
//!
//! ```text
//! lateness runtime=tokio tasks=1000 max_ms=50 p50_us=612.3 p90_us=951.0 p99_us=1012.7 p999_us=1100.2 max_us=1180.4 mean_us=600.1 early=0 max_early_us=0.0
//! ```
//!
//! Percentiles are nearest-rank over the N samples. Failures end the process
//! with a non-zero status and a message on stderr; bench/run.sh records them.

use std::time::{Duration, Instant};

const SEED: u64 = 0x2545_F491_4F6C_DD1D;

/// The delay of task `i`: xorshift64 from a per-task state derived from the
/// fixed seed, uniform in 0..=max_us microseconds.
fn delay(i: u64, max_us: u64) -> Duration {
    let mut x = SEED ^ (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    if x == 0 {
        x = SEED;
    }
    for _ in 0..4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    Duration::from_micros(x % (max_us + 1))
}

/// Signed lateness in nanoseconds: now − deadline (negative: woke early).
fn lateness_ns(deadline: Instant) -> i64 {
    let now = Instant::now();
    match now.checked_duration_since(deadline) {
        Some(late) => late.as_nanos() as i64,
        None => -(deadline.duration_since(now).as_nanos() as i64),
    }
}

/// What a runtime does: the signed lateness of every task.
type Measure = fn(tasks: u64, max_us: u64) -> Result<Vec<i64>, String>;

fn run_yieldloop(tasks: u64, max_us: u64) -> Result<Vec<i64>, String> {
    yieldloop::run(move || {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                yieldloop::spawn(move || {
                    let deadline = Instant::now() + delay(i, max_us);
                    yieldloop::sleep_until(deadline);
                    lateness_ns(deadline)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "yieldloop: task failed".to_string()))
            .collect()
    })
}

fn run_tokio(tasks: u64, max_us: u64) -> Result<Vec<i64>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                tokio::spawn(async move {
                    let deadline = Instant::now() + delay(i, max_us);
                    tokio::time::sleep_until(deadline.into()).await;
                    lateness_ns(deadline)
                })
            })
            .collect();
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            out.push(h.await.map_err(|e| format!("tokio: task failed: {e}"))?);
        }
        Ok(out)
    })
}

fn run_may(tasks: u64, max_us: u64) -> Result<Vec<i64>, String> {
    may::config().set_workers(1);
    // Placement is left to the OS, as for the others.
    may::config().set_worker_pin(false);
    // Spawn and join from inside a coroutine, so that everything runs on
    // the one worker.
    let main = may::go!(move || {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                may::go!(move || {
                    let deadline = Instant::now() + delay(i, max_us);
                    may::coroutine::sleep(deadline.saturating_duration_since(Instant::now()));
                    lateness_ns(deadline)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("coroutine failed"))
            .collect::<Vec<i64>>()
    });
    main.join().map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        format!("may: main coroutine failed: {msg}")
    })
}

/// Nearest-rank percentile of sorted values: the smallest value with at
/// least `per_mille` / 1000 of the samples at or below it (integer
/// arithmetic, so that p99.9 of 1000 samples is the 999th, not the 1000th).
fn percentile(sorted: &[i64], per_mille: usize) -> i64 {
    let n = sorted.len();
    let rank = (per_mille * n).div_ceil(1000);
    sorted[rank.clamp(1, n) - 1]
}

fn usage() -> ! {
    eprintln!("usage: lateness --runtime yieldloop|tokio|may [--tasks 1000] [--max-ms 50]");
    std::process::exit(2);
}

fn main() {
    let (mut runtime, mut tasks, mut max_ms) = (String::new(), 1000u64, 50u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--runtime" => runtime = args.next().unwrap_or_else(|| usage()),
            "--tasks" => tasks = num(),
            "--max-ms" => max_ms = num(),
            _ => usage(),
        }
    }
    if tasks == 0 {
        eprintln!("lateness: --tasks must be at least 1");
        std::process::exit(2);
    }
    let measure: Measure = match runtime.as_str() {
        "yieldloop" => run_yieldloop,
        "tokio" => run_tokio,
        "may" => run_may,
        _ => usage(),
    };
    let signed = match measure(tasks, max_ms.saturating_mul(1000)) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("lateness: {e}");
            std::process::exit(3);
        }
    };
    if signed.len() as u64 != tasks {
        eprintln!("lateness: {} results for {tasks} tasks", signed.len());
        std::process::exit(3);
    }
    let early = signed.iter().filter(|&&ns| ns < 0).count();
    let max_early = signed.iter().map(|&ns| (-ns).max(0)).max().unwrap_or(0);
    let mut late: Vec<i64> = signed.iter().map(|&ns| ns.max(0)).collect();
    late.sort_unstable();
    let us = |ns: i64| ns as f64 / 1e3;
    let mean = late.iter().map(|&ns| ns as f64).sum::<f64>() / late.len() as f64 / 1e3;
    println!(
        "lateness runtime={runtime} tasks={tasks} max_ms={max_ms} p50_us={:.1} p90_us={:.1} \
         p99_us={:.1} p999_us={:.1} max_us={:.1} mean_us={mean:.1} early={early} max_early_us={:.1}",
        us(percentile(&late, 500)),
        us(percentile(&late, 900)),
        us(percentile(&late, 990)),
        us(percentile(&late, 999)),
        us(*late.last().unwrap()),
        us(max_early),
    );
}
