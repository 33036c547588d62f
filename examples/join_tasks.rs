//! Joining tasks: start two pieces of work, collect both results, and handle
//! the tasks that end without one.
//!
//! ```text
//! cargo run --example join_tasks
//! cargo run --example join_tasks -- --scale 0.1
//! ```
//!
//! The main task spawns `compute`, which waits 0.3 s for its input and then
//! counts primes, and `fetch`, which waits 0.5 s for a (pretend) remote
//! answer. It joins both: their waits overlap, so both results are in after
//! 0.5 s, not 0.8 s. `JoinHandle::join` returns `Result<T, JoinError>`, and
//! the last two tasks show the two kinds of error:
//!
//! - `sensor` panics. The panic stops at the task's edge: `join` returns an
//!   error carrying the message, and the rest of the program goes on. (The
//!   standard panic hook still prints its usual message to stderr.)
//! - `watchdog` sleeps for an hour and is cancelled: its stack is unwound
//!   and `join` reports the cancellation.
//!
//! `--scale F` multiplies the waits.

use std::io;
use std::process;
use std::time::{Duration, Instant};

use yieldloop::Builder;

mod args;
use args::Args;

/// Primes are counted below this.
const PRIMES_BELOW: u32 = 10_000;

fn main() {
    let mut args = Args::new("join_tasks [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    if let Err(e) = yieldloop::run(move || demo(scale)) {
        eprintln!("join_tasks: {e}");
        process::exit(1);
    }
}

fn demo(scale: f64) -> io::Result<()> {
    let start = Instant::now();
    let secs = move |s: f64| Duration::from_secs_f64(s * scale);

    // `Builder` names a task (the name shows in diagnostics) and reports a
    // failure to get a stack as an error instead of panicking like `spawn`.
    let compute = Builder::new().name("compute").spawn(move || {
        yieldloop::sleep(secs(0.3));
        count_primes(PRIMES_BELOW)
    })?;
    let fetch = Builder::new().name("fetch").spawn(move || {
        yieldloop::sleep(secs(0.5));
        String::from("v2.7.1")
    })?;
    println!(
        "spawned compute (task {}) and fetch (task {})",
        compute.id(),
        fetch.id()
    );

    // A `JoinError` converts into `io::Error`, so `?` works here too.
    let primes = compute.join()?;
    println!(
        "compute: {primes} primes below {PRIMES_BELOW} (at {:.2}s)",
        start.elapsed().as_secs_f64()
    );
    let version = fetch.join()?;
    println!(
        "fetch: latest version {version} (at {:.2}s)",
        start.elapsed().as_secs_f64()
    );
    println!(
        "both joined after {:.2}s: the waits overlapped",
        start.elapsed().as_secs_f64()
    );

    let sensor = Builder::new().name("sensor").spawn(move || -> f64 {
        yieldloop::sleep(secs(0.1));
        panic!("sensor offline");
    })?;
    match sensor.join() {
        Ok(reading) => println!("sensor: {reading}"),
        Err(e) if e.is_panic() => println!("sensor failed, handled: {e}"),
        Err(e) => return Err(e.into()),
    }

    let watchdog = Builder::new()
        .name("watchdog")
        .spawn(|| yieldloop::sleep(Duration::from_secs(3600)))?;
    // Let it start and go to sleep, then call it off.
    yieldloop::yield_now();
    watchdog.cancel();
    match watchdog.join() {
        Ok(()) => println!("watchdog: woke up after an hour?"),
        Err(e) if e.is_cancelled() => println!("watchdog stopped, handled: {e}"),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Counts the primes below `n` by trial division: a little real work.
fn count_primes(n: u32) -> usize {
    (2..n)
        .filter(|&k| (2..).take_while(|d| d * d <= k).all(|d| k % d != 0))
        .count()
}
