//! Mutex micro-benchmarks across threads: what a lock shared between two
//! worker threads costs, contended and not.
//!
//! ```text
//! xmutex --runtime yieldloop|tokio --bench contended|uncontended|uncontended_local [--ops N]
//! ```
//!
//! - `contended`: four tasks, two on each of two worker threads, each
//!   loop: take the lock, add one to the value, yield while holding it (so
//!   the other task of its worker runs and queues on it), release it. One
//!   op is one acquisition; `waited` is the share of acquisitions that
//!   found the lock taken and queued (a `try_lock` first tells). yieldloop
//!   `sync::Mutex` on a `Runtime` of two workers (two tasks placed on each
//!   with `spawn_on`); tokio `sync::Mutex` on a multi-thread runtime of two
//!   workers (four spawned tasks; its scheduler places them).
//! - `uncontended`: one task takes and releases a lock nobody else uses.
//!   One op is one lock and unlock. yieldloop `sync::Mutex`, tokio
//!   `sync::Mutex` (on a current-thread runtime).
//! - `uncontended_local`: the same with yieldloop's single-thread
//!   `sync::local::Mutex`: the difference to `uncontended` is the price of
//!   a lock that can cross threads. Not applicable to tokio.
//!
//! The Go versions are `gobench xmutex` (bench/go/xmutex.go), with
//! `GOMAXPROCS=2`.
//!
//! Each process runs a warm-up round (a tenth of the ops) and a measured
//! round, and prints
//!
//! ```text
//! xmutex runtime=yieldloop bench=contended ops=400000 secs=0.1 ns_per_op=250.0 waited=0.97
//! ```
//!
//! or `na=1 reason=...` for a benchmark the runtime cannot do.

use std::hint::black_box;
use std::time::{Duration, Instant};

const BENCHES: [&str; 3] = ["contended", "uncontended", "uncontended_local"];
/// Tasks of the `contended` bench.
const TASKS: u64 = 4;

/// What a measured round gives: its time, and the share of acquisitions
/// that had to wait (contended bench only).
type Round = (Duration, Option<f64>);

fn default_ops(bench: &str) -> u64 {
    match bench {
        "contended" => 200_000,
        _ => 5_000_000,
    }
}

mod yl {
    use super::*;
    use std::sync::Arc;
    use yieldloop::sync::{local, Mutex};

    pub fn measure(bench: &str, ops: u64) -> Result<Round, String> {
        let one = |n: u64| match bench {
            "contended" => contended(n),
            "uncontended" => (yieldloop::run(move || uncontended(n)), None),
            _ => (yieldloop::run(move || uncontended_local(n)), None),
        };
        one((ops / 10).max(2));
        Ok(one(ops))
    }

    fn contended(ops: u64) -> Round {
        let rt = yieldloop::Runtime::builder()
            .workers(2)
            .build()
            .expect("a runtime of two workers");
        let per_task = ops / TASKS;
        let m = Arc::new(Mutex::new(0u64));
        // The clock starts once every task is up: the last to arrive at
        // the tasks' barrier tells the main thread through a std one.
        let go = Arc::new(std::sync::Barrier::new(2));
        let started = Arc::new(yieldloop::sync::Barrier::new(TASKS as usize));
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let (m, go, started) = (m.clone(), go.clone(), started.clone());
                rt.spawn_on(i as usize % 2, move || {
                    if started.wait().is_leader() {
                        go.wait();
                    }
                    let mut waited = 0u64;
                    for _ in 0..per_task {
                        let mut g = m.try_lock().unwrap_or_else(|| {
                            waited += 1;
                            m.lock()
                        });
                        *g += 1;
                        yieldloop::yield_now();
                        drop(g);
                    }
                    waited
                })
            })
            .collect();
        go.wait();
        let start = Instant::now();
        let waited: u64 = tasks
            .into_iter()
            .map(|t| t.join().expect("task failed"))
            .sum();
        let took = start.elapsed();
        assert_eq!(*m.lock(), TASKS * per_task);
        rt.shutdown();
        (took, Some(waited as f64 / (TASKS * per_task) as f64))
    }

    fn uncontended(ops: u64) -> Duration {
        let m = Mutex::new(0u64);
        let start = Instant::now();
        for _ in 0..ops {
            *black_box(&m).lock() += 1;
        }
        let took = start.elapsed();
        assert_eq!(*m.lock(), ops);
        took
    }

    fn uncontended_local(ops: u64) -> Duration {
        let m = local::Mutex::new(0u64);
        let start = Instant::now();
        for _ in 0..ops {
            *black_box(&m).lock() += 1;
        }
        let took = start.elapsed();
        assert_eq!(*m.lock(), ops);
        took
    }
}

mod tk {
    use super::*;
    use std::sync::Arc;
    use tokio::sync::Mutex;

    pub fn measure(bench: &str, ops: u64) -> Result<Round, String> {
        let rt = match bench {
            "contended" => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build(),
            "uncontended" => tokio::runtime::Builder::new_current_thread().build(),
            _ => return Err("na: tokio has no single-thread mutex".into()),
        }
        .map_err(|e| e.to_string())?;
        let one = |n: u64| match bench {
            "contended" => rt.block_on(contended(n)),
            _ => (rt.block_on(uncontended(n)), None),
        };
        one((ops / 10).max(2));
        Ok(one(ops))
    }

    async fn contended(ops: u64) -> Round {
        let per_task = ops / TASKS;
        let m = Arc::new(Mutex::new(0u64));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move {
                    let mut waited = 0u64;
                    for _ in 0..per_task {
                        let mut g = match m.try_lock() {
                            Ok(g) => g,
                            Err(_) => {
                                waited += 1;
                                m.lock().await
                            }
                        };
                        *g += 1;
                        tokio::task::yield_now().await;
                        drop(g);
                    }
                    waited
                })
            })
            .collect();
        let mut waited = 0;
        for t in tasks {
            waited += t.await.expect("task failed");
        }
        let took = start.elapsed();
        assert_eq!(*m.lock().await, TASKS * per_task);
        (took, Some(waited as f64 / (TASKS * per_task) as f64))
    }

    async fn uncontended(ops: u64) -> Duration {
        let m = Mutex::new(0u64);
        let start = Instant::now();
        for _ in 0..ops {
            *black_box(&m).lock().await += 1;
        }
        let took = start.elapsed();
        assert_eq!(*m.lock().await, ops);
        took
    }
}

fn main() {
    let (runtime, bench, ops, label) =
        yieldloop_bench::micro_args("xmutex", "yieldloop|tokio", &BENCHES, default_ops);
    let result = match runtime.as_str() {
        "yieldloop" => yl::measure(&bench, ops),
        _ => tk::measure(&bench, ops),
    };
    // The contended bench splits the ops between its tasks.
    let done = if bench == "contended" {
        ops / TASKS * TASKS
    } else {
        ops
    };
    let result = result.map(|(took, waited)| {
        let extra = waited
            .map(|w| format!(" waited={w:.3}"))
            .unwrap_or_default();
        (took, done, extra)
    });
    yieldloop_bench::micro_report("xmutex", &label, &bench, result);
}
