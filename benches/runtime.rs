//! Micro-benchmarks of the runtime's core paths.
//!
//! ```text
//! cargo bench --bench runtime
//! ```
//!
//! - `yield_handover`: one task yields, the scheduler resumes the other;
//!   reported per hand-over.
//! - `switch_floor`: the floor under `yield_handover`: two bare corosensei
//!   coroutines passing the same `Op::Yield`/`Resume::Ready` values, resumed
//!   in turn by a plain loop with no scheduler; per resume.
//! - `spawn_join`: spawn a task returning a value and join it, with a warm
//!   stack pool.
//! - `block_on_handover`: a task waits in `block_on` for a
//!   `futures::channel::oneshot` that another task of the same thread
//!   fills; per value (a new channel, a poll, a park, the send and its wake,
//!   the switches there and back, the poll that finds the value).
//! - `sleep_zero`: a timer insert and fire through the heap (a deadline
//!   already due).
//! - `timers_10k`: 10,000 tasks sleeping on distinct deadlines, per timer.
//! - `stack_pool`: take a stack from the pool and put it back.

// `criterion_group!` defines a public function without docs.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

fn yield_handover(c: &mut Criterion) {
    c.bench_function("yield_handover", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let other = yieldloop::spawn(move || {
                    for _ in 0..iters {
                        yieldloop::yield_now();
                    }
                });
                let start = Instant::now();
                for _ in 0..iters {
                    yieldloop::yield_now();
                }
                let took = start.elapsed();
                other.join().unwrap();
                // Each round has two hand-overs: to the other task and back.
                took / 2
            })
        })
    });
}

fn switch_floor(c: &mut Criterion) {
    use corosensei::{Coroutine, CoroutineResult, Yielder};
    use yieldloop::raw::{Op, Resume};
    c.bench_function("switch_floor", |b| {
        b.iter_custom(|iters| {
            let mut pair: Vec<Coroutine<Resume, Op, ()>> = (0..2)
                .map(|_| {
                    Coroutine::new(move |y: &Yielder<Resume, Op>, _first: Resume| {
                        for _ in 0..iters {
                            std::hint::black_box(y.suspend(Op::Yield));
                        }
                    })
                })
                .collect();
            let start = Instant::now();
            let mut resumes = 0u64;
            while resumes < 2 * iters {
                for co in &mut pair {
                    if let CoroutineResult::Yield(op) = co.resume(Resume::Ready) {
                        std::hint::black_box(op);
                    }
                    resumes += 1;
                }
            }
            start.elapsed() / 2
        })
    });
}

fn spawn_join(c: &mut Criterion) {
    c.bench_function("spawn_join", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                // Warm the pool.
                yieldloop::spawn(|| 0u64).join().unwrap();
                let start = Instant::now();
                for i in 0..iters {
                    let h = yieldloop::spawn(move || i);
                    std::hint::black_box(h.join().unwrap());
                }
                start.elapsed()
            })
        })
    });
}

fn block_on_handover(c: &mut Criterion) {
    use std::cell::Cell;
    use std::rc::Rc;

    use futures::channel::oneshot;
    c.bench_function("block_on_handover", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                // Where the waiting task leaves each channel's sender.
                let slot: Rc<Cell<Option<oneshot::Sender<u64>>>> = Rc::new(Cell::new(None));
                let theirs = slot.clone();
                let sender = yieldloop::spawn(move || {
                    let mut sent = 0;
                    while sent < iters {
                        if let Some(tx) = theirs.take() {
                            let _ = tx.send(sent);
                            sent += 1;
                        }
                        // Hands the thread to the receiver, which the send
                        // woke (or which has not parked yet).
                        yieldloop::yield_now();
                    }
                });
                let start = Instant::now();
                for _ in 0..iters {
                    let (tx, rx) = oneshot::channel();
                    slot.set(Some(tx));
                    std::hint::black_box(yieldloop::block_on(rx).unwrap());
                }
                let took = start.elapsed();
                sender.join().unwrap();
                took
            })
        })
    });
}

fn sleep_zero(c: &mut Criterion) {
    c.bench_function("sleep_zero", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let start = Instant::now();
                for _ in 0..iters {
                    yieldloop::sleep_until(Instant::now());
                }
                start.elapsed()
            })
        })
    });
}

fn timers_10k(c: &mut Criterion) {
    let mut group = c.benchmark_group("timers");
    group.sample_size(10);
    group.bench_function("timers_10k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += yieldloop::run(|| {
                    let base = Instant::now() + Duration::from_millis(2);
                    let start = Instant::now();
                    let hs: Vec<_> = (0..10_000u32)
                        .map(|i| {
                            yieldloop::spawn(move || {
                                yieldloop::sleep_until(base + Duration::from_nanos(i as u64 * 97));
                            })
                        })
                        .collect();
                    for h in hs {
                        h.join().unwrap();
                    }
                    // Subtract the deadline itself: what is left is overhead.
                    start.elapsed().saturating_sub(Duration::from_millis(2)) / 10_000
                });
            }
            total
        })
    });
    group.finish();
}

/// A warm round trip through the stack pool (needs the `bench-hooks`
/// feature: `cargo bench --features bench-hooks`).
#[cfg(feature = "bench-hooks")]
fn stack_pool(c: &mut Criterion) {
    c.bench_function("stack_pool", |b| {
        yieldloop::diag::bench_pool_cycle(yieldloop::DEFAULT_STACK_SIZE).unwrap();
        b.iter(|| yieldloop::diag::bench_pool_cycle(yieldloop::DEFAULT_STACK_SIZE).unwrap())
    });
}

criterion_group!(
    benches,
    yield_handover,
    switch_floor,
    spawn_join,
    block_on_handover,
    sleep_zero,
    timers_10k
);
#[cfg(feature = "bench-hooks")]
criterion_group!(hooks, stack_pool);
#[cfg(feature = "bench-hooks")]
criterion_main!(benches, hooks);
#[cfg(not(feature = "bench-hooks"))]
criterion_main!(benches);
