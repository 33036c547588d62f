//! The programs of the "What goes wrong" chapter (`examples/wrong_*.rs`),
//! each run as a child process: the mistake must show what the chapter
//! says it shows, and each corrected version must not.
//!
//! The children run with the default slow-task threshold (100 ms) and
//! without backtraces, so that stderr holds what the chapter quotes. Every
//! child is bounded: `example::run` kills it after 30 s, and the deadlock
//! example ends itself through its own watchdog thread well before that.
//! Timing bounds are loose: sleeps and blocked calls may run long on a
//! busy machine, never short, so the bounds that prove a stall are lower
//! bounds, and the bounds that prove its absence leave wide room.

mod util;

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use util::example::{self, KillOnDrop, Output};

/// Runs example `name` with `args` to its end (killed after
/// [`example::TIMEOUT`]), with a clean environment for the slow-task watch
/// and panics.
fn run(name: &str, args: &[&str]) -> Output {
    let mut child = Command::new(example::path(name));
    child
        .args(args)
        .env_remove("YIELDLOOP_SLOW_TASK_MS")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = KillOnDrop(
        child
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start example {name}: {e}")),
    );
    let stdout = read_all(child.0.stdout.take());
    let stderr = read_all(child.0.stderr.take());
    let deadline = Instant::now() + example::TIMEOUT;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("waiting for the example") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let timed_out = status.is_none();
    let status = status.unwrap_or_else(|| {
        child.kill();
        child.0.wait().expect("reaping the killed example")
    });
    let out = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    assert!(
        !timed_out,
        "{name} {args:?} was killed after {:?}: {out}",
        example::TIMEOUT
    );
    out
}

/// Reads a pipe to its end on a thread of its own.
fn read_all(pipe: Option<impl std::io::Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The number in a line ending with `<number> ms`.
fn millis(line: &str) -> u64 {
    line.strip_suffix(" ms")
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line:?} does not end in '<number> ms'"))
}

/// The one stdout line starting with `prefix`.
fn line<'a>(out: &'a Output, prefix: &str) -> &'a str {
    let found: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "one line {prefix:?} expected: {out}");
    found[0]
}

// ---------------------------------------------------------------------------
// A RefCell borrow held across a pause.
// ---------------------------------------------------------------------------

/// The writer keeps its borrow across a sleep: the *reader* panics, the
/// writer finishes, and the program itself goes on.
#[test]
fn refcell_borrow_across_a_pause_panics_another_task() {
    let out = run("wrong_refcell_borrow", &["wrong"]);
    out.assert_success();
    assert_eq!(line(&out, "writer: "), "writer: finished", "{out}");
    let reader = line(&out, "reader: ");
    assert!(
        reader.starts_with("reader: task ") && reader.contains(" panicked: "),
        "{out}"
    );
    // "RefCell already borrowed" today, "already borrowed: BorrowMutError"
    // in older Rust.
    assert!(reader.contains("already borrowed"), "{out}");
    assert!(out.stderr.contains("already borrowed"), "{out}");
    assert_eq!(
        line(&out, "log: "),
        r#"log: ["writer: begin", "writer: end"]"#,
        "{out}"
    );
}

/// Borrows that end before the pause: both tasks finish, the reader's
/// entry between the writer's two.
#[test]
fn refcell_borrows_ended_before_the_pause_do_not_clash() {
    let out = run("wrong_refcell_borrow", &["short"]);
    out.assert_success();
    assert_eq!(line(&out, "writer: "), "writer: finished", "{out}");
    assert_eq!(line(&out, "reader: "), "reader: finished", "{out}");
    assert_eq!(
        line(&out, "log: "),
        r#"log: ["writer: begin", "reader", "writer: end"]"#,
        "{out}"
    );
}

/// A yieldloop mutex held across the pause: the reader waits its turn.
#[test]
fn yieldloop_mutex_held_across_the_pause_makes_the_other_task_wait() {
    let out = run("wrong_refcell_borrow", &["mutex"]);
    out.assert_success();
    assert_eq!(line(&out, "reader: "), "reader: finished", "{out}");
    assert_eq!(
        line(&out, "log: "),
        r#"log: ["writer: begin", "writer: end", "reader"]"#,
        "{out}"
    );
}

// ---------------------------------------------------------------------------
// A std Mutex held across a pause.
// ---------------------------------------------------------------------------

/// The waiter's std `lock` blocks the thread the holder needs: neither
/// finishes, the slow-task watch reports a task stuck while it is stuck,
/// and only the program's watchdog thread ends it.
#[test]
fn std_mutex_held_across_a_pause_deadlocks_the_thread() {
    let start = Instant::now();
    let out = run("wrong_std_mutex", &["wrong", "--give-up-after", "5"]);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "the watchdog ends it: {out}");
    assert!(
        took >= Duration::from_secs(5),
        "ended after {took:?}: {out}"
    );
    let lines = out.lines();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0], "holder: locked, sleeping 50 ms", "{out}");
    let waiter = lines[1]
        .strip_prefix("waiter (task ")
        .and_then(|l| l.strip_suffix("): locking"))
        .unwrap_or_else(|| panic!("no 'waiter (task N): locking' line: {out}"));
    assert!(!out.stdout.contains("done"), "nobody may finish: {out}");
    assert!(
        lines[2].starts_with("watchdog: still stuck after "),
        "{out}"
    );
    // The monitor's report of a resume still running after ten
    // thresholds (1 s), made while the thread is stuck.
    // It names the waiter: the task blocked in std's `lock`.
    let stuck = format!("yieldloop: task {waiter} has been running for ");
    let report = out.stderr.lines().find(|l| l.starts_with(&stuck));
    assert!(
        report.is_some_and(|l| l.contains("without pausing and still is")),
        "no stuck-task report naming the waiter: {out}"
    );
}

/// Unlocking before the pause, or a yieldloop mutex held across it: both
/// tasks finish, both increments count.
#[test]
fn std_mutex_fixes_let_both_tasks_finish() {
    for mode in ["drop", "mutex"] {
        let out = run("wrong_std_mutex", &[mode, "--give-up-after", "25"]);
        out.assert_success();
        assert!(out.stdout.contains("holder: done\n"), "{mode}: {out}");
        assert!(out.stdout.contains("waiter: done\n"), "{mode}: {out}");
        assert_eq!(out.last_line(), "total: 2", "{mode}: {out}");
        assert!(!out.stdout.contains("watchdog"), "{mode}: {out}");
    }
    // With the yieldloop mutex, the waiter gets the lock only once the
    // holder is done with it.
    let out = run("wrong_std_mutex", &["mutex", "--give-up-after", "25"]);
    let lines = out.lines();
    let holder = lines.iter().position(|l| *l == "holder: done");
    let waiter = lines.iter().position(|l| *l == "waiter: done");
    assert!(holder < waiter, "{out}");
}

// ---------------------------------------------------------------------------
// A blocking call in a task.
// ---------------------------------------------------------------------------

/// How long the client thread of `wrong_blocking_accept` waits before it
/// connects, in milliseconds.
const CLIENT_AFTER_MS: u64 = 1500;

/// The tick times printed between the acceptor's "waiting" and "accepted"
/// lines, and the longest gap between two ticks the program reported.
fn ticks_while_accepting(out: &Output) -> (usize, u64) {
    let lines = out.lines();
    let waiting = lines
        .iter()
        .position(|l| l.starts_with("acceptor: waiting"))
        .unwrap_or_else(|| panic!("no 'waiting' line: {out}"));
    let accepted = lines
        .iter()
        .position(|l| l.starts_with("acceptor: accepted"))
        .unwrap_or_else(|| panic!("no 'accepted' line: {out}"));
    assert!(waiting < accepted, "{out}");
    let accepted_at = millis(lines[accepted]);
    assert!(
        accepted_at >= millis(lines[waiting]) + CLIENT_AFTER_MS,
        "accepted before the client came: {out}"
    );
    let ticks = lines[waiting..accepted]
        .iter()
        .filter(|l| l.starts_with("tick at "))
        .count();
    (ticks, millis(line(out, "longest gap between ticks: ")))
}

/// std's blocking accept: no tick while it waits, a gap as long as the
/// client's delay, and the slow-task warning naming the acceptor.
#[test]
fn blocking_accept_stops_the_ticker() {
    let out = run(
        "wrong_blocking_accept",
        &["wrong", "--client-after-ms", &CLIENT_AFTER_MS.to_string()],
    );
    out.assert_success();
    let (ticks, gap) = ticks_while_accepting(&out);
    assert_eq!(ticks, 0, "the ticker ran during a blocking accept: {out}");
    assert!(gap >= CLIENT_AFTER_MS - 100, "longest gap {gap} ms: {out}");
    assert!(
        out.stderr.contains("task 'acceptor' (id ") && out.stderr.contains(") ran for at least "),
        "no slow-task warning for the acceptor: {out}"
    );
}

/// yieldloop's accept, or std's on the blocking pool: the ticker keeps
/// ticking while the acceptor waits.
#[test]
fn pausing_accepts_keep_the_ticker_going() {
    for mode in ["net", "blocking"] {
        let out = run(
            "wrong_blocking_accept",
            &[mode, "--client-after-ms", &CLIENT_AFTER_MS.to_string()],
        );
        out.assert_success();
        let (ticks, gap) = ticks_while_accepting(&out);
        // About 15 ticks of 100 ms fit in the wait; even a machine busy
        // enough to stretch them threefold shows several.
        assert!(
            ticks >= 4,
            "{mode}: only {ticks} ticks during the wait: {out}"
        );
        assert!(
            gap < CLIENT_AFTER_MS / 2,
            "{mode}: longest gap {gap} ms: {out}"
        );
    }
}

// ---------------------------------------------------------------------------
// A timeout around code that never pauses.
// ---------------------------------------------------------------------------

/// The `timeout(..)` lines of a `wrong_timeout` run: what it returned and
/// after how many milliseconds.
fn timeouts(out: &Output) -> Vec<(String, u64)> {
    let found: Vec<(String, u64)> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("timeout(100 ms) around "))
        .map(|l| {
            let result = l
                .split_once(": ")
                .and_then(|(_, r)| r.rsplit_once(" after "))
                .map(|(r, _)| r.to_string())
                .unwrap_or_else(|| panic!("odd line {l:?}"));
            (result, millis(l))
        })
        .collect();
    assert!(!found.is_empty(), "no timeout lines: {out}");
    found
}

/// Around a loop that never pauses, or a blocking sleep, `timeout` returns
/// `Ok` once the work is done, long after its 100 ms.
#[test]
fn timeout_around_code_that_never_pauses_returns_ok_late() {
    let work = 600;
    let out = run("wrong_timeout", &["wrong", "--work-ms", &work.to_string()]);
    out.assert_success();
    let results = timeouts(&out);
    assert_eq!(results.len(), 2, "{out}");
    for (result, after) in results {
        assert!(result.starts_with("Ok("), "{out}");
        assert!(after >= work, "returned after {after} ms: {out}");
    }
    assert!(
        out.stderr.contains("task 'main' (id 1) ran for at least "),
        "no slow-task warning: {out}"
    );
}

/// With a pause in the loop, or the work on the blocking pool, the timeout
/// fires about on time: well before the work would have ended.
#[test]
fn timeout_fires_at_a_pause() {
    let work = 1500;
    for (mode, cases) in [("yield", 1), ("blocking", 2)] {
        let out = run("wrong_timeout", &[mode, "--work-ms", &work.to_string()]);
        out.assert_success();
        let results = timeouts(&out);
        assert_eq!(results.len(), cases, "{mode}: {out}");
        for (result, after) in results {
            assert_eq!(result, "Err(deadline has elapsed)", "{mode}: {out}");
            assert!(after >= 100, "{mode}: fired after {after} ms: {out}");
            assert!(after < work / 2, "{mode}: fired after {after} ms: {out}");
        }
    }
}

// ---------------------------------------------------------------------------
// A flooding client.
// ---------------------------------------------------------------------------

/// One `wrong_flood` run at a time: two floods at once on a small machine
/// would measure the machine, not the scheduler.
fn one_flood_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the ping client of a `wrong_flood` run saw: pings sent and
/// answered, and the median and worst answer in milliseconds.
struct Pings {
    sent: usize,
    answered: usize,
    median: f64,
    worst: f64,
}

/// Runs `wrong_flood` in `mode` and reads its report.
fn flood(mode: &str) -> (Pings, Output) {
    let _turn = one_flood_at_a_time();
    let out = run("wrong_flood", &[mode]);
    out.assert_success();
    let counts = line(&out, "pings: ")
        .strip_prefix("pings: ")
        .and_then(|l| l.strip_suffix(" answered"))
        .and_then(|l| l.split_once(" sent, "))
        .and_then(|(s, a)| Some((s.parse().ok()?, a.parse().ok()?)))
        .unwrap_or_else(|| panic!("no 'pings: N sent, M answered' line: {out}"));
    let ms = |prefix: &str| -> f64 {
        line(&out, prefix)
            .strip_prefix(prefix)
            .and_then(|l| l.strip_suffix(" ms"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no '{prefix}X ms' line: {out}"))
    };
    let pings = Pings {
        sent: counts.0,
        answered: counts.1,
        median: ms("median answer: "),
        worst: ms("worst answer: "),
    };
    (pings, out)
}

/// Plain reads, or lines each counted with `consume_budget`: the flood
/// task gives the thread back every 128 items, and every ping is answered
/// within milliseconds (the bounds leave wide room for a busy machine).
#[test]
fn a_flooding_client_leaves_room_for_pings() {
    for mode in ["reads", "counted"] {
        let (p, out) = flood(mode);
        assert_eq!(p.answered, p.sent, "{mode}: {out}");
        // About 50 pings fit in the run's half second.
        assert!(p.sent >= 20, "{mode}: only {} pings: {out}", p.sent);
        assert!(p.median < 50.0, "{mode}: median {} ms: {out}", p.median);
        assert!(p.worst < 250.0, "{mode}: worst {} ms: {out}", p.worst);
        let items = line(&out, "flood: ");
        assert!(!items.starts_with("flood: 0 "), "{mode}: {out}");
    }
}

/// The same reads with the budget lifted: the flood holds the thread for
/// its whole half second, the pings wait for it, and the slow-task
/// warning names the flood task.
#[test]
fn a_flood_without_a_budget_holds_the_thread() {
    let (p, out) = flood("unconstrained");
    assert!(p.worst >= 250.0, "worst {} ms: {out}", p.worst);
    assert!(
        out.stderr.contains("task 'flood' (id ") && out.stderr.contains(") ran for at least "),
        "no slow-task warning for the flood: {out}"
    );
}

/// Lines from an 8 KiB `BufReader`, each with its work, and nothing
/// counting them: the budget sees one read per 256 lines, the turns last
/// well over the slow-task threshold, and so do the pings' waits.
#[test]
fn per_line_work_the_budget_does_not_see_makes_long_turns() {
    let (p, out) = flood("wrong");
    assert!(p.worst >= 100.0, "worst {} ms: {out}", p.worst);
    assert!(
        out.stderr.contains("task 'flood' (id ") && out.stderr.contains(") ran for at least "),
        "no slow-task warning for the flood: {out}"
    );
}
