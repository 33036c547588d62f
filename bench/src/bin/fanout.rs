//! Fan-out across two worker threads:
//!
//! fanout --runtime yieldloop|yieldloop-rr|tokio --bench broadcast|skewed [--n N] [--receivers R] [--seed S]
//!
//! - `broadcast`: one sender on the main thread sends `--n` values
//!   (default 100,000) into a broadcast channel that keeps them all; `--receivers`
//!   tasks (default 1,000), spread evenly over two workers, each receive
//!   every value. yieldloop: `sync::broadcast` with tasks placed by
//!   `Runtime::spawn_on` in turn; tokio: a multi-thread runtime of two
//!   workers and `tokio::sync::broadcast`.
//! - `skewed`: `--n` tasks (default 10,000) each burn CPU for a cost drawn
//!   from a Pareto distribution (shape 1.5, so a few tasks cost a hundred
//!   times the median), the same costs for every runtime (`--seed`), all
//!   spawned at once from the main thread and joined there. yieldloop:
//!   `Runtime::spawn` (placed by the least-loaded worker when each starts);
//!   yieldloop-rr: `Runtime::spawn_on(i % 2)`, dealt out in turn; tokio:
//!   its work-stealing multi-thread runtime with two workers.
//!
//! Prints one line: `fanout runtime=.. bench=.. n=.. receivers=.. wall_ms=..`
//! (for `skewed` also `serial_ms=`, the same work done on one thread first),
//! with `ns_per_delivery=` for `broadcast` (wall time over values times
//! receivers). Exits non-zero if a receiver misses a value or a sum is off.

use std::hint::black_box;
use std::time::Instant;

/// Burns CPU for `iters` steps of a multiply-add, the cost unit of the
/// skewed tasks; the Go version does the same steps.
fn burn(iters: u64) -> u64 {
    let mut x = iters;
    for _ in 0..iters {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    black_box(x)
}

/// The skewed tasks' costs: Pareto with shape 1.5 and scale 20,000 steps
/// (some 20 µs), capped at 500 times the scale; xorshift64 from `seed`, as
/// in the Go version.
fn costs(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed.max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // A uniform in (0, 1]: the top 53 bits.
            let u = ((s >> 11) + 1) as f64 / (1u64 << 53) as f64;
            let x = 20_000.0 / u.powf(1.0 / 1.5);
            x.min(20_000.0 * 500.0) as u64
        })
        .collect()
}

fn usage() -> ! {
    eprintln!(
        "usage: fanout --runtime yieldloop|yieldloop-rr|tokio --bench broadcast|skewed \
         [--n N] [--receivers R] [--seed S]"
    );
    std::process::exit(2);
}

fn yl_runtime() -> yieldloop::Runtime {
    yieldloop::Runtime::builder()
        .workers(2)
        .build()
        .expect("runtime")
}

fn tk_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("tokio runtime")
}

/// Waits until every receiver is ready, then sends `n` values through
/// `send`: the sender's side of both broadcast fan-outs.
fn feed(ready: &std::sync::mpsc::Receiver<()>, receivers: usize, n: u64, send: impl Fn(u64)) {
    for _ in 0..receivers {
        ready.recv().unwrap();
    }
    (0..n).for_each(send);
}

fn broadcast_yieldloop(n: u64, receivers: usize) -> Vec<u64> {
    use yieldloop::sync::broadcast;
    let rt = yl_runtime();
    let (tx, rx) = broadcast::channel::<u64>(n as usize);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handles: Vec<_> = (0..receivers)
        .map(|i| {
            let mut rx = rx.resubscribe();
            let ready = ready_tx.clone();
            rt.spawn_on(i % 2, move || {
                ready.send(()).unwrap();
                let mut sum = 0u64;
                loop {
                    match rx.recv() {
                        Ok(v) => sum += v,
                        Err(broadcast::RecvError::Closed) => return sum,
                        Err(broadcast::RecvError::Lagged(k)) => panic!("lagged by {k}"),
                    }
                }
            })
        })
        .collect();
    drop(rx);
    feed(&ready_rx, receivers, n, |v| {
        tx.send(v).unwrap();
    });
    drop(tx);
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn broadcast_tokio(n: u64, receivers: usize) -> Vec<u64> {
    use tokio::sync::broadcast;
    let rt = tk_runtime();
    let (tx, rx) = broadcast::channel::<u64>(n as usize);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handles: Vec<_> = (0..receivers)
        .map(|_| {
            let mut rx = rx.resubscribe();
            let ready = ready_tx.clone();
            rt.spawn(async move {
                ready.send(()).unwrap();
                let mut sum = 0u64;
                loop {
                    match rx.recv().await {
                        Ok(v) => sum += v,
                        Err(broadcast::error::RecvError::Closed) => return sum,
                        Err(broadcast::error::RecvError::Lagged(k)) => panic!("lagged by {k}"),
                    }
                }
            })
        })
        .collect();
    drop(rx);
    feed(&ready_rx, receivers, n, |v| {
        tx.send(v).unwrap();
    });
    drop(tx);
    rt.block_on(async {
        let mut sums = Vec::new();
        for h in handles {
            sums.push(h.await.unwrap());
        }
        sums
    })
}

fn skewed(runtime: &str, costs: &[u64]) -> u64 {
    match runtime {
        "yieldloop" => {
            let rt = yl_runtime();
            let hs: Vec<_> = costs.iter().map(|&c| rt.spawn(move || burn(c))).collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .fold(0, u64::wrapping_add)
        }
        "yieldloop-rr" => {
            let rt = yl_runtime();
            let hs: Vec<_> = costs
                .iter()
                .enumerate()
                .map(|(i, &c)| rt.spawn_on(i % 2, move || burn(c)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .fold(0, u64::wrapping_add)
        }
        "tokio" => {
            let rt = tk_runtime();
            let hs: Vec<_> = costs
                .iter()
                .map(|&c| rt.spawn(async move { burn(c) }))
                .collect();
            rt.block_on(async {
                let mut sum = 0u64;
                for h in hs {
                    sum = sum.wrapping_add(h.await.unwrap());
                }
                sum
            })
        }
        _ => usage(),
    }
}

fn main() {
    let (mut runtime, mut bench) = (String::new(), String::new());
    let (mut n, mut receivers, mut seed) = (None, 1000usize, 21u64);
    let mut args = std::env::args().skip(1);
    let num = |v: Option<String>| {
        v.and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| usage())
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runtime" => runtime = args.next().unwrap_or_else(|| usage()),
            "--bench" => bench = args.next().unwrap_or_else(|| usage()),
            "--n" => n = Some(num(args.next())),
            "--receivers" => receivers = num(args.next()) as usize,
            "--seed" => seed = num(args.next()),
            _ => usage(),
        }
    }
    match bench.as_str() {
        "broadcast" => {
            let n = n.unwrap_or(100_000);
            let t0 = Instant::now();
            let sums = match runtime.as_str() {
                "yieldloop" => broadcast_yieldloop(n, receivers),
                "tokio" => broadcast_tokio(n, receivers),
                _ => usage(),
            };
            let wall = t0.elapsed();
            let want = n * (n.saturating_sub(1)) / 2;
            if sums.len() != receivers || sums.iter().any(|&s| s != want) {
                eprintln!("fanout: a receiver's sum is off");
                std::process::exit(1);
            }
            println!(
                "fanout runtime={runtime} bench=broadcast n={n} receivers={receivers} wall_ms={:.1} ns_per_delivery={:.1}",
                wall.as_secs_f64() * 1e3,
                wall.as_nanos() as f64 / (n as f64 * receivers as f64)
            );
        }
        "skewed" => {
            let n = n.unwrap_or(10_000) as usize;
            let costs = costs(n, seed);
            let t_seq = Instant::now();
            let want = costs.iter().map(|&c| burn(c)).fold(0, u64::wrapping_add);
            let seq = t_seq.elapsed();
            let t0 = Instant::now();
            let got = skewed(&runtime, &costs);
            let wall = t0.elapsed();
            if got != want {
                eprintln!("fanout: the tasks' results are off");
                std::process::exit(1);
            }
            println!(
                "fanout runtime={runtime} bench=skewed n={n} receivers=0 wall_ms={:.1} serial_ms={:.1}",
                wall.as_secs_f64() * 1e3,
                seq.as_secs_f64() * 1e3
            );
        }
        _ => usage(),
    }
}
