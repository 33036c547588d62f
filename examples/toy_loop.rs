//! The toy loop: three jobs that wait 2 s, 1 s and 3 s, started together,
//! are all done after 3 s, not 6.
//!
//! ```text
//! cargo run --example toy_loop
//! cargo run --example toy_loop -- --scale 0.05   # the same run, 20 times faster
//! ```
//!
//! Each job is a task that says it has started, sleeps, and says it is done.
//! The jobs finish in the order of their waits, B, A, C, and the last line is
//! the time it all took:
//!
//! ```text
//! A started, waiting 2.00s
//! B started, waiting 1.00s
//! C started, waiting 3.00s
//! B done
//! A done
//! C done
//! total: 3.00s
//! ```
//!
//! A hand-written toy loop would check the clock over and over to see whose
//! wait is over. Here the scheduler files each sleeping task under its
//! deadline and sleeps in the kernel until the earliest one, so the process
//! uses no CPU while the jobs wait. `--scale F` multiplies every wait (the
//! output format stays the same).

use std::time::{Duration, Instant};

mod args;
use args::Args;

/// The jobs: a name and how long each waits, in seconds before scaling.
const JOBS: [(&str, f64); 3] = [("A", 2.0), ("B", 1.0), ("C", 3.0)];

fn main() {
    let mut args = Args::new("toy_loop [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    let start = Instant::now();
    yieldloop::run(move || {
        let jobs: Vec<_> = JOBS
            .iter()
            .map(|&(name, secs)| {
                let wait = Duration::from_secs_f64(secs * scale);
                yieldloop::spawn(move || job(name, wait))
            })
            .collect();
        // The order of the joins does not matter: all jobs run meanwhile.
        for job in jobs {
            job.join().expect("a job cannot fail");
        }
    });
    println!("total: {:.2}s", start.elapsed().as_secs_f64());
}

/// One job: announce, wait, announce.
fn job(name: &str, wait: Duration) {
    println!("{name} started, waiting {:.2}s", wait.as_secs_f64());
    yieldloop::sleep(wait);
    println!("{name} done");
}
