//! Fan-out with borrowing tasks: check a list of mirrors at once, each check
//! a task that borrows the list and a shared report from `main`'s stack.
//!
//! ```text
//! cargo run --example fan_out
//! cargo run --example fan_out -- --scale 0.1
//! ```
//!
//! Each mirror "answers" after its own delay (a sleep stands in for the
//! request). The checks run in a `yieldloop::scope`, so they can borrow the
//! mirror list and push to a `RefCell` report that lives in `main`: no
//! `Arc`, no clones. Three rounds show the three ways a scope ends:
//!
//! 1. every check finishes, and the scope returns once the slowest has;
//! 2. `join_any` takes the fastest answer and `cancel_all` drops the rest;
//! 3. one check panics (a broken mirror): the others are cancelled at once
//!    and the panic comes out of the scope, where `main` catches it.
//!
//! `--scale F` multiplies the delays.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

mod args;
use args::Args;

/// (mirror, seconds until it answers).
const MIRRORS: [(&str, f64); 4] = [("eu", 0.30), ("us", 0.10), ("asia", 0.50), ("sa", 0.20)];

fn main() {
    let mut args = Args::new("fan_out [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    yieldloop::run(move || demo(scale));
}

fn demo(scale: f64) {
    let delay = |s: f64| Duration::from_secs_f64(s * scale);
    let mirrors: Vec<(&str, f64)> = MIRRORS.to_vec();
    let report = RefCell::new(Vec::new());

    // 1. All of them: the scope waits for the slowest.
    let start = Instant::now();
    yieldloop::scope(|s| {
        for (name, secs) in &mirrors {
            let report = &report;
            s.spawn(move || {
                yieldloop::sleep(delay(*secs));
                report.borrow_mut().push(*name);
            });
        }
    });
    println!(
        "all answered in order {:?} after {:.2}s",
        report.borrow(),
        start.elapsed().as_secs_f64() / scale
    );

    // 2. The fastest one; the rest are cancelled.
    let start = Instant::now();
    let fastest = yieldloop::scope(|s| {
        let mut checks: Vec<_> = mirrors
            .iter()
            .map(|(name, secs)| {
                s.spawn(move || {
                    yieldloop::sleep(delay(*secs));
                    *name
                })
            })
            .collect();
        let (_, first) = yieldloop::join_any(&mut checks).expect("four checks");
        s.cancel_all();
        first.expect("a check failed")
    });
    println!(
        "fastest: {fastest} after {:.2}s",
        start.elapsed().as_secs_f64() / scale
    );

    // 3. A broken mirror: its panic cancels the others and leaves the scope.
    let start = Instant::now();
    let finished = RefCell::new(0);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        yieldloop::scope(|s| {
            for (name, secs) in &mirrors {
                let finished = &finished;
                s.spawn(move || {
                    yieldloop::sleep(delay(*secs));
                    if *name == "sa" {
                        panic!("mirror {name} sent garbage");
                    }
                    *finished.borrow_mut() += 1;
                });
            }
        })
    }));
    let message = outcome
        .err()
        .and_then(|p| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    println!(
        "failed: {message:?} after {:.2}s, {} check(s) had finished",
        start.elapsed().as_secs_f64() / scale,
        finished.borrow()
    );
}
