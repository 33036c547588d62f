//! Diagnostics: the slow-task warning and the scheduler trace.

use std::process::Command;
use std::time::{Duration, Instant};

/// Spins for `d` without pausing: exactly what the watch is for.
fn hog(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The child half of the slow-task tests; does nothing unless asked.
#[test]
fn slow_child() {
    let Ok(mode) = std::env::var("YIELDLOOP_SLOW_CHILD") else {
        return;
    };
    let mut hog_for = Duration::from_millis(300);
    match mode.as_str() {
        "off" => yieldloop::diag::set_slow_task_threshold(None),
        // Ten thresholds are 500 ms: the monitor reports the task while it
        // still runs.
        "stuck" => {
            yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(50)));
            hog_for = Duration::from_millis(900);
        }
        _ => {}
    }
    yieldloop::run(move || {
        let h = yieldloop::Builder::new()
            .name("number-cruncher")
            .spawn(move || hog(hog_for))
            .unwrap();
        h.join().unwrap();
    });
}

fn run_slow_child(mode: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "slow_child", "--nocapture", "--test-threads=1"])
        .env("YIELDLOOP_SLOW_CHILD", mode)
        .env_remove("YIELDLOOP_SLOW_TASK_MS")
        .output()
        .unwrap();
    assert!(out.status.success(), "child failed: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A task that holds the thread for 300 ms is named in a warning that
/// says how long and what to do.
#[test]
fn slow_task_is_named() {
    let stderr = run_slow_child("on");
    assert!(
        stderr.contains("task 'number-cruncher' (id 2) ran for"),
        "no warning in: {stderr}"
    );
    assert!(stderr.contains("yield_now"), "no advice in: {stderr}");
}

/// A task that runs past ten thresholds is reported while it still runs
/// (by number: the monitor thread cannot reach the name), and named once it
/// ends; a 300 ms hog under the default 100 ms threshold gets only the
/// second message.
#[test]
fn stuck_task_is_reported_while_it_runs() {
    let stderr = run_slow_child("stuck");
    assert!(
        stderr.contains("task 2 has been running for") && stderr.contains("still is"),
        "no report while running in: {stderr}"
    );
    assert!(
        stderr.contains("task 'number-cruncher' (id 2) ran for"),
        "no warning after the resume in: {stderr}"
    );
    let stderr = run_slow_child("on");
    assert!(!stderr.contains("still is"), "reported as stuck: {stderr}");
}

/// With the watch off, the same task passes without a word.
#[test]
fn slow_task_watch_can_be_turned_off() {
    let stderr = run_slow_child("off");
    assert!(
        !stderr.contains("without pausing"),
        "warned anyway: {stderr}"
    );
}

/// The trace written to a file has one line per decision: spawn, resume,
/// yield with the op, the poll, the wake-up with its cause, and the end.
#[test]
fn trace_file_tells_the_story() {
    let path =
        std::env::temp_dir().join(format!("yieldloop-trace-test-{}.txt", std::process::id()));
    yieldloop::diag::trace_to_file(&path).unwrap();
    yieldloop::run(|| {
        let sleeper = yieldloop::Builder::new()
            .name("sleeper")
            .spawn(|| yieldloop::sleep(Duration::from_millis(5)))
            .unwrap();
        sleeper.join().unwrap();
    });
    yieldloop::diag::trace_off();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    for needle in [
        "spawn  task 1 \"main\" by run",
        "spawn  task 2 \"sleeper\" by task 1",
        "yield  task 1 \"main\" -> Join(task 2)",
        "yield  task 2 \"sleeper\" -> Wait(in 0.00",
        // The poll line names its step; for a 5 ms sleep the deadline
        // is near (`precise` on Linux, `direct` on the portable path).
        ", deadline in 0.00",
        "polled slept",
        "wake   task 2 \"sleeper\" by timer",
        "end    task 2 \"sleeper\"",
        "wake   task 1 \"main\" by task-end",
        "end    task 1 \"main\"",
    ] {
        assert!(text.contains(needle), "no {needle:?} in trace:\n{text}");
    }
    // Every line starts with a bracketed timestamp.
    assert!(text.lines().all(|l| l.starts_with('[') && l.contains("] ")));
}
