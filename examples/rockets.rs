//! Rockets: ten thousand tasks that spend nearly all their life asleep.
//!
//! ```text
//! cargo run --release --example rockets                        # 10,000 rockets, about 9 s
//! cargo run --release --example rockets -- --count 30000
//! cargo run --release --example rockets -- --count 5 --seed 7  # few: every countdown shown
//! cargo run --release --example rockets -- --count 200 --max-delay 0.2 --step-ms 10
//! ```
//!
//! Each rocket is a task. It waits a random delay (0 to `--max-delay`
//! seconds, 5 by default), counts down 0 to 4 steps of `--step-ms`
//! milliseconds (1000 by default: "T-3", "T-2", "T-1") and lifts off. The
//! waits overlap: the scheduler keeps every sleeper in one deadline heap and
//! wakes each when its time comes, so the whole launch lasts as long as the
//! slowest rocket's own schedule (at most 5 + 4 × 1 = 9 s), however many
//! rockets there are.
//!
//! A rocket's schedule is a list of instants counted from one common start,
//! and it waits for each with `sleep_until`, not `sleep`: a wake-up that comes
//! late (timers may fire late, never early) does not push back the steps after
//! it. The latest wake-up of the whole run, how long after its deadline a
//! task got going again, is printed at the end: the scheduler's own timer
//! lateness plus whatever the operating system adds on a busy machine.
//!
//! With at most 20 rockets every step is printed; with more, only the first
//! line (count and seed) and the summary. The last line is always
//! `launched N rockets in X.XXs`. Random numbers come from a small splitmix64
//! generator seeded from the clock, or from `--seed S` to repeat a run.

use std::process;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod args;
use args::Args;

/// The longest countdown, in steps.
const MAX_STEPS: u64 = 4;

/// Up to this many rockets, each one's countdown is printed.
const VERBOSE_UP_TO: usize = 20;

/// The main task lets the new rockets run after spawning this many.
const SPAWN_BATCH: usize = 500;

/// The command line, parsed.
struct Options {
    count: usize,
    seed: u64,
    /// Upper bound (exclusive) of the random delay before the countdown.
    max_delay: Duration,
    /// Length of one countdown step.
    step: Duration,
}

/// What one rocket flies: drawn before launch, so that a seed fixes every
/// schedule whatever order the tasks run in.
#[derive(Clone, Copy)]
struct FlightPlan {
    number: usize,
    delay: Duration,
    steps: u32,
    step: Duration,
}

fn main() {
    let mut args = Args::new("rockets [--count N] [--seed S] [--max-delay SECS] [--step-ms MS]");
    let opts = Options {
        count: args.value_or("--count", 10_000),
        seed: args.value("--seed").unwrap_or_else(clock_seed),
        max_delay: Duration::from_secs_f64(args.value_in("--max-delay", 5.0, 0.0..=3600.0)),
        step: Duration::from_millis(args.value_or("--step-ms", 1000)),
    };
    args.finish();
    println!("rockets: {}, seed {}", opts.count, opts.seed);

    let count = opts.count;
    let start = Instant::now();
    let latest = yieldloop::run(move || launch_all(&opts, start));
    let elapsed = start.elapsed();

    println!(
        "latest wake-up: {:.1} ms after its deadline",
        latest.as_secs_f64() * 1e3
    );
    println!("launched {count} rockets in {:.2}s", elapsed.as_secs_f64());
}

/// Spawns one task per rocket, waits for all of them, and returns the
/// latest wake-up of them all.
fn launch_all(opts: &Options, start: Instant) -> Duration {
    let mut rng = SplitMix64(opts.seed);
    let verbose = opts.count <= VERBOSE_UP_TO;
    let rockets: Vec<_> = (1..=opts.count)
        .map(|number| {
            let plan = FlightPlan {
                number,
                delay: opts.max_delay.mul_f64(rng.next_f64()),
                steps: rng.below(MAX_STEPS + 1) as u32,
                step: opts.step,
            };
            // Spawning is quick but not free (each task touches a fresh
            // stack), and tens of thousands add up to a noticeable fraction
            // of a second. Let the rockets spawned so far run up to their
            // first wait now and then, so the earliest ones are not held on
            // the pad until the whole fleet exists, and the main task never
            // keeps the thread to itself for long.
            if number % SPAWN_BATCH == 0 {
                yieldloop::yield_now();
            }
            yieldloop::spawn(move || fly(plan, start, verbose))
        })
        .collect();
    rockets
        .into_iter()
        .map(|rocket| rocket.join().expect("a rocket's flight cannot fail"))
        .max()
        .unwrap_or_default()
}

/// Flies one rocket; returns the latest of its wake-ups (see [`wait_for`]).
fn fly(plan: FlightPlan, start: Instant, verbose: bool) -> Duration {
    let log = |what: &str| {
        if verbose {
            let t = start.elapsed().as_secs_f64();
            println!("[{t:5.2}s] rocket {}: {what}", plan.number);
        }
    };
    let mut at = start + plan.delay;
    let mut latest = wait_for(at);
    for left in (1..=plan.steps).rev() {
        log(&format!("T-{left}"));
        at += plan.step;
        latest = latest.max(wait_for(at));
    }
    log("liftoff");
    latest
}

/// Sleeps until `at` and returns how long after `at` the task woke up: the
/// scheduler's timer lateness. An `at` already past when the task gets here
/// (a rocket whose launch time came before all the fleet was spawned) is
/// not a timer's fault and counts as zero.
fn wait_for(at: Instant) -> Duration {
    let in_future = Instant::now() < at;
    yieldloop::sleep_until(at);
    if in_future {
        at.elapsed()
    } else {
        Duration::ZERO
    }
}

/// A seed that differs from run to run: the clock's nanoseconds mixed with
/// the process id.
fn clock_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(process::id()) << 32)
}

/// The splitmix64 generator: a 64-bit counter pushed through a mixing
/// function. Tiny, fast and plenty random for launch schedules; not for
/// anything secret.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`: the top 53 bits, as many as an `f64` holds.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` for small `n` (the modulo bias is about n / 2^64).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
