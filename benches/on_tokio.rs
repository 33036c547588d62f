//! The cost of the hop to the shared tokio runtime and back.
//!
//! ```text
//! cargo bench --features tokio --bench on_tokio
//! ```
//!
//! - `on_tokio_ready_from_task`: a task calls `on_tokio` with a future that
//!   is ready at its first poll; per call (a spawn on tokio, a tokio worker
//!   polling it, the wake through the scheduler's cross-thread queue, the
//!   task resumed). Only the task waits, but with no other task to run its
//!   scheduler sleeps in the kernel until the wake, as a busy service's
//!   would not.
//! - `on_tokio_ready_from_thread`: the same from a plain thread, which
//!   blocks in tokio's own `block_on`.
//! - `spawn_blocking_ready`: for scale, the blocking pool's round trip of
//!   a closure that returns at once, from a task.
//! - `tokio_hop_ready`: the yardstick, tokio's own hop without yieldloop: a
//!   task of a `current_thread` runtime spawns the same ready future on a
//!   second runtime, multi-thread with one worker (as `on_tokio`'s), and
//!   awaits its join handle. With both threads idle between calls, each
//!   call wakes both, as `on_tokio` does; on a virtual machine that is
//!   most of the time.

// `criterion_group!` defines a public function without docs.
#![allow(missing_docs)]

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};

fn on_tokio_ready_from_task(c: &mut Criterion) {
    // Built outside the timed loop.
    yieldloop::tokio_handle();
    c.bench_function("on_tokio_ready_from_task", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let start = Instant::now();
                for i in 0..iters {
                    let v = yieldloop::on_tokio(async move { i });
                    assert_eq!(v, i);
                }
                start.elapsed()
            })
        })
    });
}

fn on_tokio_ready_from_thread(c: &mut Criterion) {
    yieldloop::tokio_handle();
    c.bench_function("on_tokio_ready_from_thread", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters {
                let v = yieldloop::on_tokio(async move { i });
                assert_eq!(v, i);
            }
            start.elapsed()
        })
    });
}

fn spawn_blocking_ready(c: &mut Criterion) {
    c.bench_function("spawn_blocking_ready", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let start = Instant::now();
                for i in 0..iters {
                    let v = yieldloop::spawn_blocking(move || i).join().unwrap();
                    assert_eq!(v, i);
                }
                start.elapsed()
            })
        })
    });
}

fn tokio_hop_ready(c: &mut Criterion) {
    let side = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the second runtime");
    let caller = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the caller's runtime");
    let h = side.handle().clone();
    c.bench_function("tokio_hop_ready", |b| {
        b.iter_custom(|iters| {
            caller.block_on(async {
                let start = Instant::now();
                for i in 0..iters {
                    let v = h.spawn(async move { i }).await.unwrap();
                    assert_eq!(v, i);
                }
                start.elapsed()
            })
        })
    });
}

criterion_group!(
    benches,
    on_tokio_ready_from_task,
    on_tokio_ready_from_thread,
    spawn_blocking_ready,
    tokio_hop_ready
);
criterion_main!(benches);
