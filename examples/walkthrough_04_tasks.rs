//! Walkthrough step 4: tasks with results, on yieldloop itself.
//!
//! ```text
//! cargo run --example walkthrough_04_tasks
//! cargo run --example walkthrough_04_tasks -- --scale 1
//! YIELDLOOP_TRACE=1 cargo run --example walkthrough_04_tasks   # the scheduler's decisions
//! ```
//!
//! From here on the loop is yieldloop's: `yieldloop::run` starts it with a
//! main task, `spawn` adds tasks, `join` waits for one and returns its value.
//! The program shows four things, each in a few lines of output:
//!
//! 1. three tasks that sleep different times and return values, joined in
//!    spawn order: all three waits overlap;
//! 2. what `join` is underneath: the raw `Op::Join` pause;
//! 3. a task that panics: the panic stops at the task's edge and comes out
//!    of `join` as an error, and the other tasks go on;
//! 4. a pause twenty calls deep in ordinary recursive functions, with no
//!    annotation on any of them, while another task keeps running.
//!
//! `--scale F` multiplies the waits (0.02 s units by default).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::raw::{suspend, Op, Resume};

mod args;
use args::Args;

fn main() {
    let mut args = Args::new("walkthrough_04_tasks [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    let unit = Duration::from_secs_f64(0.02 * scale);
    // Keep the report of the deliberate panic to one line on stderr.
    std::panic::set_hook(Box::new(|info| eprintln!("panic in a task: {info}")));
    yieldloop::run(move || {
        spawn_and_join(unit);
        raw_join();
        panics(unit);
        deep_pause(unit);
    });
}

// ANCHOR: spawn_join
/// Three tasks wait 3, 1 and 2 units and return a value; joined in spawn
/// order, all are done after about 3 units, not 6.
fn spawn_and_join(unit: Duration) {
    let start = Instant::now();
    let handles: Vec<_> = [("fetch", 3), ("parse", 1), ("store", 2)]
        .into_iter()
        .map(|(name, units)| {
            yieldloop::spawn(move || {
                yieldloop::sleep(unit * units);
                format!("{name} waited {} ms", (unit * units).as_millis())
            })
        })
        .collect();
    for handle in handles {
        let value = handle.join().expect("these tasks do not fail");
        println!("joined: {value}");
    }
    println!(
        "all joined after {} ms; the waits add up to {} ms",
        start.elapsed().as_millis(),
        (unit * 6).as_millis()
    );
}
// ANCHOR_END: spawn_join

// ANCHOR: raw_join
/// `join` is a pause like any other: the task asks the scheduler to resume
/// it when the other task has ended.
fn raw_join() {
    let child = yieldloop::spawn(|| 6 * 7);
    let answer = suspend(Op::Join(child.id(), None));
    assert!(matches!(answer, Resume::Ready));
    println!(
        "raw Op::Join answered Ready; child finished: {}",
        child.is_finished()
    );
    println!(
        "its value: {}",
        child.join().expect("the child does not fail")
    );
}
// ANCHOR_END: raw_join

// ANCHOR: panics
/// A panicking task ends alone; its joiner gets the panic as an error.
fn panics(unit: Duration) {
    let sensor = yieldloop::spawn(move || -> f64 {
        yieldloop::sleep(unit);
        panic!("sensor offline");
    });
    let steady = yieldloop::spawn(move || {
        yieldloop::sleep(unit * 2);
        "steady is fine"
    });
    match sensor.join() {
        Ok(v) => println!("sensor read {v}"),
        Err(e) => println!(
            "sensor failed: panic = {}, message = {:?}",
            e.is_panic(),
            e.panic_message().unwrap_or("?")
        ),
    }
    println!("{}", steady.join().expect("steady does not fail"));
}
// ANCHOR_END: panics

// ANCHOR: deep
/// Plain recursion; only the innermost call pauses.
fn descend(depth: u32, unit: Duration) -> u32 {
    if depth == 0 {
        yieldloop::sleep(unit * 3); // the whole stack above stays as it is
        return 0;
    }
    descend(depth - 1, unit) + 1
}

/// A task pauses 20 calls deep while another task ticks.
fn deep_pause(unit: Duration) {
    let ticks = Rc::new(Cell::new(0));
    let t = ticks.clone();
    let ticker = yieldloop::spawn(move || {
        for _ in 0..5 {
            yieldloop::sleep(unit / 2);
            t.set(t.get() + 1);
        }
    });
    let depth = yieldloop::spawn(move || descend(20, unit))
        .join()
        .expect("descend does not fail");
    println!(
        "paused {depth} calls deep; meanwhile the ticker ticked {} times",
        ticks.get()
    );
    ticker.join().expect("the ticker does not fail");
}
// ANCHOR_END: deep
