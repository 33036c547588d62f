//! Hand-over micro-benchmarks: how long it takes one runtime to pass control
//! (and a value, or a lock) from one task to another on a single thread.
//!
//! ```text
//! handover --runtime yieldloop|tokio|may --bench pingpong|bounded|mutex|yield|spawn [--ops N]
//! ```
//!
//! Every runtime runs on one thread: yieldloop's scheduler, tokio
//! `current_thread`, may with `set_workers(1)` (everything spawned from
//! inside one coroutine). The benchmarks:
//!
//! - `pingpong`: task A sends `i` on one unbounded channel, task B receives
//!   it and sends it back on another; A waits for the reply. One op is one
//!   one-way hand-over (a round trip is two). yieldloop
//!   `sync::local::channel`, tokio `sync::mpsc::unbounded_channel`, may
//!   `sync::mpsc::channel`.
//! - `bounded`: a producer task sends N integers through a channel of
//!   capacity 64 to a consumer task. One op is one message. yieldloop
//!   `sync::local::sync_channel(64)`, tokio `sync::mpsc::channel(64)`; may has no
//!   bounded channel (its `mpsc`, `mpmc` and `spsc` channels are all
//!   unbounded), so that cell is reported as not applicable.
//! - `mutex`: two tasks each loop: take the lock, yield while holding it
//!   (so the other task queues on it), release it (which hands it to the
//!   queued task). One op is one hand-over of the lock. yieldloop
//!   `sync::local::Mutex`, tokio `sync::Mutex`, may `sync::Mutex`.
//! - `yield`: two tasks each call the runtime's `yield_now` in a loop. One
//!   op is one yield (a switch to the other task).
//! - `spawn`: one task spawns a task that returns its argument and joins
//!   it, one after the other. One op is one spawn + join.
//! - `scope`: a task opens scopes of 1,000 tasks each, every one borrowing
//!   a counter of the opener and adding its argument to it, and waits for
//!   the scope to end. One op is one task of a scope (its spawn, run and
//!   the scope's wait for it). yieldloop `scope`; tokio a `JoinSet` of
//!   `'static` tasks (tokio tasks cannot borrow), awaited to the last; may
//!   `coroutine::scope`.
//! - `blockon`: a task waits in `yieldloop::block_on` on a hand-written
//!   future that another task completes and wakes. One op is one such
//!   hand-over (a poll that says `Pending`, the park, the wake, the poll
//!   that finds the value). yieldloop only: tokio and may await futures
//!   natively (compare their `spawn` row, a spawn and its `await`/join).
//!
//! Each process runs one warm-up round (a tenth of the ops) and then one
//! measured round, and prints one line of `key=value` fields on stdout:
//!
//! ```text
//! handover runtime=tokio bench=pingpong ops=400000 secs=0.041234 ns_per_op=103.1
//! ```
//!
//! A benchmark a runtime cannot do prints `na=1 reason=...` instead.
//! Failures end the process with a non-zero status and a message on
//! stderr; bench/run.sh records them.

use std::hint::black_box;
use std::time::{Duration, Instant};

const BENCHES: [&str; 7] = [
    "pingpong", "bounded", "mutex", "yield", "spawn", "scope", "blockon",
];
/// Tasks per scope in the `scope` bench.
const SCOPE_CHILDREN: u64 = 1000;
const CAPACITY: usize = 64;

/// Ops per measured round when `--ops` is not given: each round takes well
/// under a second on every runtime here.
fn default_ops(bench: &str) -> u64 {
    match bench {
        "pingpong" => 400_000,
        "bounded" => 1_000_000,
        "mutex" => 400_000,
        "yield" => 1_000_000,
        "spawn" => 200_000,
        "scope" => 200_000,
        "blockon" => 400_000,
        _ => 0,
    }
}

/// What a runtime can do: the measured time of `ops` operations.
type Measure = fn(bench: &str, ops: u64) -> Result<Duration, String>;

// ------------------------------------------------------------- yieldloop

mod yl {
    use super::*;
    use std::rc::Rc;
    use yieldloop::sync::local::Mutex;
    use yieldloop::sync::local::{channel, sync_channel};

    pub fn measure(bench: &str, ops: u64) -> Result<Duration, String> {
        let bench = bench.to_string();
        yieldloop::run(move || {
            let one = |n: u64| match bench.as_str() {
                "pingpong" => pingpong(n),
                "bounded" => bounded(n),
                "mutex" => mutex(n),
                "yield" => yields(n),
                "spawn" => spawns(n),
                "scope" => scopes(n),
                "blockon" => block_ons(n),
                _ => unreachable!(),
            };
            one((ops / 10).max(1));
            Ok(one(ops))
        })
    }

    /// A value one task hands to another through a waker.
    #[derive(Default)]
    struct Slot {
        value: std::cell::Cell<Option<u64>>,
        waker: std::cell::RefCell<Option<std::task::Waker>>,
    }

    /// Ready once the slot holds a value.
    struct Wait<'a>(&'a Slot);

    impl std::future::Future for Wait<'_> {
        type Output = u64;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<u64> {
            match self.0.value.take() {
                Some(v) => std::task::Poll::Ready(v),
                None => {
                    *self.0.waker.borrow_mut() = Some(cx.waker().clone());
                    std::task::Poll::Pending
                }
            }
        }
    }

    fn block_ons(ops: u64) -> Duration {
        let slot = Rc::new(Slot::default());
        let s2 = slot.clone();
        let waker = yieldloop::spawn(move || {
            for i in 0..ops {
                let w = loop {
                    if let Some(w) = s2.waker.borrow_mut().take() {
                        break w;
                    }
                    yieldloop::yield_now();
                };
                s2.value.set(Some(i));
                w.wake();
            }
        });
        let waiter = yieldloop::spawn(move || {
            let start = Instant::now();
            let mut sum = 0u64;
            for _ in 0..ops {
                sum = sum.wrapping_add(yieldloop::block_on(Wait(&slot)));
            }
            let took = start.elapsed();
            assert_eq!(sum, ops * (ops - 1) / 2);
            took
        });
        let took = waiter.join().expect("waiter failed");
        waker.join().expect("waker failed");
        took
    }

    fn scopes(ops: u64) -> Duration {
        let rounds = (ops / SCOPE_CHILDREN).max(1);
        let driver = yieldloop::spawn(move || {
            let start = Instant::now();
            let sum = std::cell::Cell::new(0u64);
            for _ in 0..rounds {
                yieldloop::scope(|s| {
                    for i in 0..SCOPE_CHILDREN {
                        let sum = &sum;
                        s.spawn(move || sum.set(sum.get().wrapping_add(i)));
                    }
                });
            }
            let took = start.elapsed();
            assert_eq!(
                sum.get(),
                rounds * SCOPE_CHILDREN * (SCOPE_CHILDREN - 1) / 2
            );
            took
        });
        driver.join().expect("driver failed")
    }

    fn pingpong(ops: u64) -> Duration {
        let rounds = ops / 2;
        let (ping_tx, ping_rx) = channel::<u64>();
        let (pong_tx, pong_rx) = channel::<u64>();
        let b = yieldloop::spawn(move || {
            for v in ping_rx.iter() {
                pong_tx.send(v).unwrap();
            }
        });
        let a = yieldloop::spawn(move || {
            let start = Instant::now();
            for i in 0..rounds {
                ping_tx.send(i).unwrap();
                black_box(pong_rx.recv().unwrap());
            }
            start.elapsed()
        });
        let took = a.join().expect("task A failed");
        b.join().expect("task B failed");
        took
    }

    fn bounded(ops: u64) -> Duration {
        let (tx, rx) = sync_channel::<u64>(CAPACITY);
        let start = Instant::now();
        let producer = yieldloop::spawn(move || {
            for i in 0..ops {
                tx.send(i).unwrap();
            }
        });
        let consumer = yieldloop::spawn(move || {
            let mut sum = 0u64;
            for v in rx.iter() {
                sum = sum.wrapping_add(v);
            }
            sum
        });
        producer.join().expect("producer failed");
        let sum = consumer.join().expect("consumer failed");
        let took = start.elapsed();
        assert_eq!(sum, ops * (ops - 1) / 2);
        took
    }

    fn mutex(ops: u64) -> Duration {
        let per_task = ops / 2;
        let m = Rc::new(Mutex::new(0u64));
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                yieldloop::spawn(move || {
                    for _ in 0..per_task {
                        let mut g = m.lock();
                        *g += 1;
                        yieldloop::yield_now();
                        drop(g);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.join().expect("task failed");
        }
        let took = start.elapsed();
        assert_eq!(*m.lock(), 2 * per_task);
        took
    }

    fn yields(ops: u64) -> Duration {
        let per_task = ops / 2;
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                yieldloop::spawn(move || {
                    for _ in 0..per_task {
                        yieldloop::yield_now();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.join().expect("task failed");
        }
        start.elapsed()
    }

    fn spawns(ops: u64) -> Duration {
        let driver = yieldloop::spawn(move || {
            let start = Instant::now();
            let mut sum = 0u64;
            for i in 0..ops {
                sum = sum.wrapping_add(yieldloop::spawn(move || i).join().unwrap());
            }
            black_box(sum);
            start.elapsed()
        });
        driver.join().expect("driver failed")
    }
}

// ------------------------------------------------------------- tokio

mod tk {
    use super::*;
    use std::sync::Arc;
    use tokio::sync::{mpsc, Mutex};

    pub fn measure(bench: &str, ops: u64) -> Result<Duration, String> {
        if bench == "blockon" {
            return Err("na: tokio awaits futures natively; see its spawn row".into());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let bench = bench.to_string();
        rt.block_on(async move {
            let one = |n: u64| {
                let b = bench.clone();
                async move {
                    match b.as_str() {
                        "pingpong" => pingpong(n).await,
                        "bounded" => bounded(n).await,
                        "mutex" => mutex(n).await,
                        "yield" => yields(n).await,
                        "spawn" => spawns(n).await,
                        "scope" => scopes(n).await,
                        _ => unreachable!(),
                    }
                }
            };
            one((ops / 10).max(1)).await;
            Ok(one(ops).await)
        })
    }

    async fn pingpong(ops: u64) -> Duration {
        let rounds = ops / 2;
        let (ping_tx, mut ping_rx) = mpsc::unbounded_channel::<u64>();
        let (pong_tx, mut pong_rx) = mpsc::unbounded_channel::<u64>();
        let b = tokio::spawn(async move {
            while let Some(v) = ping_rx.recv().await {
                pong_tx.send(v).unwrap();
            }
        });
        let a = tokio::spawn(async move {
            let start = Instant::now();
            for i in 0..rounds {
                ping_tx.send(i).unwrap();
                black_box(pong_rx.recv().await.unwrap());
            }
            start.elapsed()
        });
        let took = a.await.expect("task A failed");
        b.await.expect("task B failed");
        took
    }

    async fn bounded(ops: u64) -> Duration {
        let (tx, mut rx) = mpsc::channel::<u64>(CAPACITY);
        let start = Instant::now();
        let producer = tokio::spawn(async move {
            for i in 0..ops {
                tx.send(i).await.unwrap();
            }
        });
        let consumer = tokio::spawn(async move {
            let mut sum = 0u64;
            while let Some(v) = rx.recv().await {
                sum = sum.wrapping_add(v);
            }
            sum
        });
        producer.await.expect("producer failed");
        let sum = consumer.await.expect("consumer failed");
        let took = start.elapsed();
        assert_eq!(sum, ops * (ops - 1) / 2);
        took
    }

    async fn mutex(ops: u64) -> Duration {
        let per_task = ops / 2;
        let m = Arc::new(Mutex::new(0u64));
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        let mut g = m.lock().await;
                        *g += 1;
                        tokio::task::yield_now().await;
                        drop(g);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task failed");
        }
        let took = start.elapsed();
        assert_eq!(*m.lock().await, 2 * per_task);
        took
    }

    async fn yields(ops: u64) -> Duration {
        let per_task = ops / 2;
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task failed");
        }
        start.elapsed()
    }

    async fn spawns(ops: u64) -> Duration {
        let driver = tokio::spawn(async move {
            let start = Instant::now();
            let mut sum = 0u64;
            for i in 0..ops {
                sum = sum.wrapping_add(tokio::spawn(async move { i }).await.unwrap());
            }
            black_box(sum);
            start.elapsed()
        });
        driver.await.expect("driver failed")
    }

    async fn scopes(ops: u64) -> Duration {
        let rounds = (ops / SCOPE_CHILDREN).max(1);
        let driver = tokio::spawn(async move {
            let start = Instant::now();
            // tokio tasks are 'static: the counter is shared, not borrowed.
            let sum = Arc::new(std::sync::atomic::AtomicU64::new(0));
            for _ in 0..rounds {
                let mut set = tokio::task::JoinSet::new();
                for i in 0..SCOPE_CHILDREN {
                    let sum = sum.clone();
                    set.spawn(async move {
                        sum.fetch_add(i, std::sync::atomic::Ordering::Relaxed);
                    });
                }
                while let Some(r) = set.join_next().await {
                    r.expect("task failed");
                }
            }
            let took = start.elapsed();
            let sum = sum.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(sum, rounds * SCOPE_CHILDREN * (SCOPE_CHILDREN - 1) / 2);
            took
        });
        driver.await.expect("driver failed")
    }
}

// ------------------------------------------------------------- may

mod my {
    use super::*;
    use may::sync::{mpsc, Mutex};
    use std::sync::Arc;

    pub fn measure(bench: &str, ops: u64) -> Result<Duration, String> {
        if bench == "blockon" {
            return Err("na: may has no Future executor inside coroutines".into());
        }
        if bench == "bounded" {
            return Err(
                "na: may 0.3 has no bounded channel (its mpsc, mpmc and spsc \
                        channels are all unbounded)"
                    .into(),
            );
        }
        may::config().set_workers(1);
        // Placement is left to the OS, as for the others.
        may::config().set_worker_pin(false);
        let bench = bench.to_string();
        // Everything runs inside one coroutine, so on the one worker.
        let main = may::go!(move || {
            let one = |n: u64| match bench.as_str() {
                "pingpong" => pingpong(n),
                "mutex" => mutex(n),
                "yield" => yields(n),
                "spawn" => spawns(n),
                "scope" => scopes(n),
                _ => unreachable!(),
            };
            one((ops / 10).max(1));
            one(ops)
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

    fn pingpong(ops: u64) -> Duration {
        let rounds = ops / 2;
        let (ping_tx, ping_rx) = mpsc::channel::<u64>();
        let (pong_tx, pong_rx) = mpsc::channel::<u64>();
        let b = may::go!(move || {
            for v in ping_rx.iter() {
                pong_tx.send(v).unwrap();
            }
        });
        let a = may::go!(move || {
            let start = Instant::now();
            for i in 0..rounds {
                ping_tx.send(i).unwrap();
                black_box(pong_rx.recv().unwrap());
            }
            start.elapsed()
        });
        let took = a.join().expect("coroutine A failed");
        b.join().expect("coroutine B failed");
        took
    }

    fn mutex(ops: u64) -> Duration {
        let per_task = ops / 2;
        let m = Arc::new(Mutex::new(0u64));
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                may::go!(move || {
                    for _ in 0..per_task {
                        let mut g = m.lock().unwrap();
                        *g += 1;
                        may::coroutine::yield_now();
                        drop(g);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.join().expect("coroutine failed");
        }
        let took = start.elapsed();
        assert_eq!(*m.lock().unwrap(), 2 * per_task);
        took
    }

    fn yields(ops: u64) -> Duration {
        let per_task = ops / 2;
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                may::go!(move || {
                    for _ in 0..per_task {
                        may::coroutine::yield_now();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.join().expect("coroutine failed");
        }
        start.elapsed()
    }

    fn spawns(ops: u64) -> Duration {
        let driver = may::go!(move || {
            let start = Instant::now();
            let mut sum = 0u64;
            for i in 0..ops {
                sum = sum.wrapping_add(may::go!(move || i).join().unwrap());
            }
            black_box(sum);
            start.elapsed()
        });
        driver.join().expect("driver failed")
    }

    fn scopes(ops: u64) -> Duration {
        let rounds = (ops / SCOPE_CHILDREN).max(1);
        let driver = may::go!(move || {
            let start = Instant::now();
            let sum = std::sync::atomic::AtomicU64::new(0);
            for _ in 0..rounds {
                may::coroutine::scope(|s| {
                    for i in 0..SCOPE_CHILDREN {
                        let sum = &sum;
                        // SAFETY: may's scope joins every coroutine it
                        // spawned before it returns, so the borrow of `sum`
                        // ends in time.
                        unsafe {
                            s.spawn(move || {
                                sum.fetch_add(i, std::sync::atomic::Ordering::Relaxed);
                            });
                        }
                    }
                });
            }
            let took = start.elapsed();
            let sum = sum.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(sum, rounds * SCOPE_CHILDREN * (SCOPE_CHILDREN - 1) / 2);
            took
        });
        driver.join().expect("driver failed")
    }
}

fn main() {
    let (runtime, bench, ops, label) =
        yieldloop_bench::micro_args("handover", "yieldloop|tokio|may", &BENCHES, default_ops);
    let measure: Measure = match runtime.as_str() {
        "yieldloop" => yl::measure,
        "tokio" => tk::measure,
        _ => my::measure,
    };
    // Two-task benchmarks round the ops down to an even count.
    let done = match bench.as_str() {
        "pingpong" | "mutex" | "yield" => ops / 2 * 2,
        _ => ops,
    };
    let result = measure(&bench, ops).map(|took| (took, done, String::new()));
    yieldloop_bench::micro_report("handover", &label, &bench, result);
}
