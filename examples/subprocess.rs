//! Child processes from tasks: three shell jobs run at once, each one's
//! output streamed line by line by its own task as it comes; then a job
//! that overruns its timeout is killed, and one job's output is collected
//! whole.
//!
//! ```text
//! cargo run --example subprocess
//! cargo run --example subprocess -- --scale 0.2
//! ```
//!
//! Each job is `sh -c` printing a step after each `sleep`. Reading a
//! child's stdout or waiting for its exit pauses only the task that does
//! it, so the three jobs' lines interleave by time, and the three finish
//! in about the time of the longest, not of all three in a row.
//!
//! `--scale F` multiplies the sleeps.

use std::io::{BufRead, BufReader};
use std::process;
use std::time::{Duration, Instant};

use yieldloop::process::{Command, Stdio};

mod args;
use args::Args;

/// (job, steps, seconds per step).
const JOBS: [(&str, u32, f64); 3] = [("build", 3, 0.35), ("test", 2, 0.5), ("lint", 4, 0.1)];

fn main() {
    let mut args = Args::new("subprocess [--scale F]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    args.finish();
    if let Err(e) = yieldloop::run(move || demo(scale)) {
        eprintln!("subprocess: {e}");
        process::exit(1);
    }
}

fn demo(scale: f64) -> std::io::Result<()> {
    // 1. Three jobs at once, each streamed by a task of its own.
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (name, steps, secs) in JOBS {
        let pause = secs * scale;
        let script = format!(
            "i=1; while [ $i -le {steps} ]; do sleep {pause:.3}; echo step $i; i=$((i+1)); done"
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        tasks.push(yieldloop::spawn(move || -> std::io::Result<()> {
            for line in BufReader::new(stdout).lines() {
                let at = start.elapsed().as_secs_f64() / scale;
                println!("[{name}] {at:.2}s {}", line?);
            }
            let status = child.wait()?;
            println!("[{name}] exited with {}", status.code().unwrap_or(-1));
            Ok(())
        }));
    }
    for t in tasks {
        t.join().expect("a job task panicked")?;
    }
    println!(
        "{} jobs finished in {:.2}s",
        JOBS.len(),
        start.elapsed().as_secs_f64() / scale
    );

    // 2. A job that takes too long: the timeout unwinds the wait, and the
    //    dropped child is killed (and reaped) on the way out.
    let start = Instant::now();
    let slow = yieldloop::timeout(Duration::from_secs_f64(0.5 * scale), || {
        Command::new("sleep").arg("60").kill_on_drop(true).status()
    });
    println!(
        "slow job: {} after {:.2}s",
        if slow.is_err() { "killed" } else { "finished" },
        start.elapsed().as_secs_f64() / scale
    );

    // 3. One job's output collected whole: both streams at once.
    let out = Command::new("sh")
        .args(["-c", "echo to stdout; echo to stderr >&2; exit 3"])
        .output()?;
    println!(
        "collected: exit {:?}, stdout {:?}, stderr {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
