//! What goes wrong: a `timeout` around code that never pauses.
//!
//! ```text
//! cargo run --example wrong_timeout                    # Ok, but late
//! cargo run --example wrong_timeout -- yield           # yield_now in the loop
//! cargo run --example wrong_timeout -- blocking        # spawn_blocking
//! cargo run --example wrong_timeout -- --work-ms 800
//! ```
//!
//! `timeout` can only end its code at a pause: that is where the task is
//! back in the scheduler's hands. A computation without a pause, or a
//! blocking call, runs to its end however long it takes, and `timeout`
//! then returns `Ok`, well after its deadline. Each case prints what
//! `timeout(100 ms, ..)` returned and when. The fixed versions pause in the
//! loop with `yield_now`, which checks the deadline, or move the work to
//! the blocking pool and wait for it with a pause.

use std::time::{Duration, Instant};

use yieldloop::{timeout, Elapsed};

mod args;
use args::Args;

/// The limit every case gives its work.
const LIMIT: Duration = Duration::from_millis(100);

fn main() {
    let mut args = Args::new("wrong_timeout [wrong|yield|blocking] [--work-ms N]");
    let work = Duration::from_millis(args.value_or("--work-ms", 500));
    let mode = args.choice(&["wrong", "yield", "blocking"]);
    args.finish();
    yieldloop::run(move || match mode {
        "wrong" => wrong(work),
        "yield" => with_yield_now(work),
        _ => on_the_pool(work),
    });
}

/// Prints what a `timeout(LIMIT, ..)` that began at `start` returned.
fn report<T: std::fmt::Debug>(what: &str, start: Instant, result: Result<T, Elapsed>) {
    let result = match result {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e})"),
    };
    println!(
        "timeout({} ms) around {what}: {result} after {} ms",
        LIMIT.as_millis(),
        start.elapsed().as_millis()
    );
}

/// A slice of real computation: some rounds of a 64-bit mix, about a
/// millisecond or less on any machine.
fn crunch(mut x: u64) -> u64 {
    for _ in 0..50_000 {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
    }
    std::hint::black_box(x)
}

// ANCHOR: wrong
/// Wrong: neither the computation nor the blocking sleep ever pauses, so
/// the deadline passes unseen and both come back `Ok`, late.
fn wrong(work: Duration) {
    let start = Instant::now();
    let sum = timeout(LIMIT, || {
        let mut x = 1;
        while start.elapsed() < work {
            x = crunch(x); // no pause anywhere in this loop
        }
        x % 1000
    });
    report("a computing loop", start, sum);
    yieldloop::sleep(Duration::from_millis(1)); // one warning per case

    let start = Instant::now();
    let slept = timeout(LIMIT, || std::thread::sleep(work)); // blocks the thread
    report("std::thread::sleep", start, slept);
}
// ANCHOR_END: wrong

// ANCHOR: yield
/// A pause in the loop: `yield_now` lets the other tasks run and is where
/// the expired deadline unwinds the loop.
fn with_yield_now(work: Duration) {
    let start = Instant::now();
    let sum = timeout(LIMIT, || {
        let mut x = 1;
        while start.elapsed() < work {
            x = crunch(x);
            yieldloop::yield_now(); // a pause: the deadline is checked here
        }
        x % 1000
    });
    report("a computing loop with yield_now", start, sum);
}
// ANCHOR_END: yield

// ANCHOR: blocking
/// The work on a blocking-pool thread; the task pauses in `join`, where the
/// deadline can end the wait. The work itself runs on to its end there.
fn on_the_pool(work: Duration) {
    let start = Instant::now();
    let sum = timeout(LIMIT, || {
        let job = yieldloop::spawn_blocking(move || {
            let mut x = 1;
            while start.elapsed() < work {
                x = crunch(x);
            }
            x % 1000
        });
        job.join().unwrap()
    });
    report("a computing loop on the blocking pool", start, sum);

    let start = Instant::now();
    let slept = timeout(LIMIT, || {
        yieldloop::spawn_blocking(move || std::thread::sleep(work))
            .join()
            .unwrap()
    });
    report("std::thread::sleep on the blocking pool", start, slept);
}
// ANCHOR_END: blocking
