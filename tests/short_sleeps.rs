//! Short sleeps on whichever timer the platform has (a `timerfd` on Linux;
//! the poll's own timeout on macOS, FreeBSD and with the `portable`
//! feature): none ends early, each ends promptly, and the loop waits in the
//! kernel instead of going round until the deadline. Alone in its file
//! because it turns on the trace, which is process-wide, to count the
//! loop's polls.

use std::time::{Duration, Instant};

use yieldloop::sleep_until;

/// How late a wake-up may be before the test calls it a failure. Generous:
/// the machines running the tests are shared and noisy.
const LATE: Duration = Duration::from_millis(200);

/// Sleeps of 0.2 ms to 1.7 ms, one task alone: never early, never much
/// late, and a handful of polls each (a timeout rounded down would make
/// the loop poll again and again until the deadline).
#[test]
fn short_sleeps_are_never_early_and_do_not_spin() {
    const ROUNDS: u32 = 60;
    let path =
        std::env::temp_dir().join(format!("yieldloop-short-sleeps-{}.txt", std::process::id()));
    yieldloop::diag::trace_to_file(&path).unwrap();
    let (wall, worst) = yieldloop::run(|| {
        let start = Instant::now();
        let mut worst = Duration::ZERO;
        for round in 0..ROUNDS {
            // 0.2 ms to 1.7 ms in steps of 0.3 ms.
            let d = Duration::from_micros(200 + 300 * u64::from(round % 6));
            let deadline = Instant::now() + d;
            sleep_until(deadline);
            let now = Instant::now();
            assert!(now >= deadline, "woke {:?} early", deadline - now);
            worst = worst.max(now - deadline);
        }
        (start.elapsed(), worst)
    });
    yieldloop::diag::trace_off();
    let trace = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let polls = trace.lines().filter(|l| l.contains("] poll ")).count();
    println!("{ROUNDS} short sleeps: {wall:?} in all, worst {worst:?} late, {polls} polls");
    assert!(worst < LATE, "a sleeper woke {worst:?} late");
    assert!(
        polls <= 4 * ROUNDS as usize,
        "{polls} polls for {ROUNDS} sleeps: the loop went round instead of waiting"
    );
}
