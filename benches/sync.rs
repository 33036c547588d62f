//! Micro-benchmarks of `yieldloop::sync`.
//!
//! ```text
//! cargo bench --bench sync
//! cargo bench --bench sync -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! - `channel_handover`: two tasks play ping-pong through two unbounded
//!   channels; reported per hand-over (a round trip is two).
//! - `rendezvous_handover`: the same through two `sync_channel(0)`s.
//! - `bounded_throughput`: a producer task pushes through a
//!   `sync_channel(64)` to a consumer task; reported per message.
//! - `mutex_handover`: two tasks take turns on one `Mutex`, each unlock
//!   handing the lock to the other; reported per hand-over.
//! - `select_two_channels`: a task selects over two channels that another
//!   task feeds alternately; reported per select and receive.
//! - `mpsc_roundtrip_threads`: ping-pong between tasks on two threads
//!   through two cross-thread channels; reported per round trip.

use std::rc::Rc;
use std::thread;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use yieldloop::sync::local::Mutex;
use yieldloop::sync::local::{channel, sync_channel};
use yieldloop::sync::{mpsc, Select};

fn channel_handover(c: &mut Criterion) {
    c.bench_function("channel_handover", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let (ping_tx, ping_rx) = channel::<u64>();
                let (pong_tx, pong_rx) = channel::<u64>();
                let echo = yieldloop::spawn(move || {
                    for v in ping_rx.iter() {
                        pong_tx.send(v).unwrap();
                    }
                });
                let start = Instant::now();
                for i in 0..iters {
                    ping_tx.send(i).unwrap();
                    std::hint::black_box(pong_rx.recv().unwrap());
                }
                let took = start.elapsed();
                drop(ping_tx);
                echo.join().unwrap();
                // Each round trip is two hand-overs.
                took / 2
            })
        })
    });
}

fn rendezvous_handover(c: &mut Criterion) {
    c.bench_function("rendezvous_handover", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let (ping_tx, ping_rx) = sync_channel::<u64>(0);
                let (pong_tx, pong_rx) = sync_channel::<u64>(0);
                let echo = yieldloop::spawn(move || {
                    for v in ping_rx.iter() {
                        pong_tx.send(v).unwrap();
                    }
                });
                let start = Instant::now();
                for i in 0..iters {
                    ping_tx.send(i).unwrap();
                    std::hint::black_box(pong_rx.recv().unwrap());
                }
                let took = start.elapsed();
                drop(ping_tx);
                echo.join().unwrap();
                took / 2
            })
        })
    });
}

fn bounded_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("bounded");
    group.throughput(Throughput::Elements(1));
    group.bench_function("bounded_throughput", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let (tx, rx) = sync_channel::<u64>(64);
                let start = Instant::now();
                let producer = yieldloop::spawn(move || {
                    for i in 0..iters {
                        tx.send(i).unwrap();
                    }
                });
                let mut sum = 0u64;
                for v in rx.iter() {
                    sum = sum.wrapping_add(v);
                }
                let took = start.elapsed();
                producer.join().unwrap();
                std::hint::black_box(sum);
                took
            })
        })
    });
    group.finish();
}

fn mutex_handover(c: &mut Criterion) {
    c.bench_function("mutex_handover", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let m = Rc::new(Mutex::new(0u64));
                let held = m.lock();
                let m2 = m.clone();
                let other = yieldloop::spawn(move || {
                    for _ in 0..iters {
                        *m2.lock() += 1;
                    }
                });
                yieldloop::yield_now(); // the other task queues for the lock
                let start = Instant::now();
                drop(held);
                for _ in 0..iters {
                    // The other task is queued: each lock parks until it
                    // hands the lock back, and each unlock hands it over.
                    *m.lock() += 1;
                }
                let took = start.elapsed();
                other.join().unwrap();
                assert_eq!(*m.lock(), 2 * iters);
                took / 2
            })
        })
    });
}

fn select_two_channels(c: &mut Criterion) {
    c.bench_function("select_two_channels", |b| {
        b.iter_custom(|iters| {
            yieldloop::run(move || {
                let (atx, a) = channel::<u64>();
                let (btx, b) = channel::<u64>();
                let feeder = yieldloop::spawn(move || {
                    for i in 0..iters {
                        if i % 2 == 0 { &atx } else { &btx }.send(i).unwrap();
                        yieldloop::yield_now();
                    }
                });
                let mut sel = Select::new().recv(&a).recv(&b);
                let start = Instant::now();
                for _ in 0..iters {
                    let v = match sel.wait() {
                        0 => a.try_recv(),
                        _ => b.try_recv(),
                    };
                    std::hint::black_box(v.unwrap());
                }
                let took = start.elapsed();
                feeder.join().unwrap();
                took
            })
        })
    });
}

fn mpsc_roundtrip_threads(c: &mut Criterion) {
    c.bench_function("mpsc_roundtrip_threads", |b| {
        b.iter_custom(|iters| {
            let (ping_tx, ping_rx) = mpsc::channel::<u64>();
            let (pong_tx, pong_rx) = mpsc::channel::<u64>();
            let echo = thread::spawn(move || {
                yieldloop::run(move || {
                    for v in ping_rx.iter() {
                        pong_tx.send(v).unwrap();
                    }
                })
            });
            let took = yieldloop::run(move || {
                let start = Instant::now();
                for i in 0..iters {
                    ping_tx.send(i).unwrap();
                    std::hint::black_box(pong_rx.recv().unwrap());
                }
                start.elapsed()
            });
            echo.join().unwrap();
            took
        })
    });
}

/// In a private module because `criterion_group!` defines a public
/// function that cannot carry a doc comment (the crate denies missing docs).
mod group {
    use super::*;

    criterion_group!(
        benches,
        channel_handover,
        rendezvous_handover,
        bounded_throughput,
        mutex_handover,
        select_two_channels,
        mpsc_roundtrip_threads
    );
}

criterion_main!(group::benches);
