//! The programs in `examples/`, run as child processes with short
//! parameters, and their output checked.
//!
//! Timing bounds are loose on purpose: sleeps may run long on a busy
//! machine, never short, so lower bounds are tight and upper bounds are
//! only there to catch a run that is wildly off.

mod util;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread;
use std::time::Duration;

use util::example::{self, Running};

/// How long a test client waits for the echo server before giving up.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Parses a duration printed as `X.XXs` (two decimals), in seconds.
fn seconds(text: &str) -> f64 {
    let number = text
        .strip_suffix('s')
        .unwrap_or_else(|| panic!("{text:?} does not end in 's'"));
    let decimals = number.split_once('.').map(|(_, d)| d.len());
    assert_eq!(decimals, Some(2), "{text:?} is not X.XXs");
    number
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} is not a number: {e}"))
}

/// Three jobs of 2, 1 and 3 units start in order A, B, C, finish in order
/// B, A, C, and take about 3 units in all, not 6.
#[test]
fn toy_loop_jobs_finish_in_order_of_their_waits() {
    let out = example::run("toy_loop", &["--scale", "0.05"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(
        lines[..6],
        [
            "A started, waiting 0.10s",
            "B started, waiting 0.05s",
            "C started, waiting 0.15s",
            "B done",
            "A done",
            "C done",
        ],
        "{out}"
    );
    assert_eq!(lines.len(), 7, "{out}");
    let total = seconds(
        out.last_line()
            .strip_prefix("total: ")
            .expect("total: X.XXs"),
    );
    // The longest wait is 0.15 s, and sleeps never end early.
    assert!(total >= 0.15, "{out}");
    assert!(total < 0.30 * 10.0, "the waits did not overlap: {out}");
}

/// Two hundred rockets, each a task, all launch; only the summary is
/// printed, and the last line has the exact `launched N rockets in X.XXs`
/// form.
#[test]
fn rockets_launch_and_report_the_time() {
    let out = example::run(
        "rockets",
        &[
            "--count",
            "200",
            "--max-delay",
            "0.2",
            "--step-ms",
            "10",
            "--seed",
            "42",
        ],
    );
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines.len(), 3, "no per-rocket lines for 200 rockets: {out}");
    assert_eq!(lines[0], "rockets: 200, seed 42");
    assert!(lines[1].starts_with("latest wake-up: "), "{out}");
    let took = seconds(
        out.last_line()
            .strip_prefix("launched 200 rockets in ")
            .unwrap_or_else(|| panic!("unexpected last line: {out}")),
    );
    // Every schedule fits in 0.2 s + 4 × 10 ms; run in sequence, the 200
    // schedules would take far longer than this bound.
    assert!(took < 10.0, "{out}");
}

/// With few rockets every countdown is printed, T-n down to T-1 and then
/// liftoff, and the same `--seed` gives the same flight plans.
#[test]
fn rockets_countdowns_are_printed_and_repeatable() {
    let args = [
        "--count",
        "8",
        "--max-delay",
        "0.1",
        "--step-ms",
        "10",
        "--seed",
        "7",
    ];
    // Events per rocket, in the order each rocket printed them.
    let flights = |out: &example::Output| {
        let mut flights: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for line in out.lines() {
            // "[ 0.12s] rocket 3: T-2"
            if let Some((_, event)) = line.split_once("] rocket ") {
                let (number, what) = event.split_once(": ").expect("rocket N: event");
                flights
                    .entry(number.parse().expect("a rocket number"))
                    .or_default()
                    .push(what.to_string());
            }
        }
        flights
    };

    let first = example::run("rockets", &args);
    first.assert_success();
    assert_eq!(
        first.last_line().split(" in ").next(),
        Some("launched 8 rockets")
    );
    seconds(first.last_line().rsplit(' ').next().unwrap());
    let plans = flights(&first);
    assert_eq!(
        plans.keys().copied().collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    for (number, events) in &plans {
        let steps = events.len() - 1;
        assert!(steps <= 4, "rocket {number}: {events:?}");
        let mut expected: Vec<String> = (1..=steps).rev().map(|k| format!("T-{k}")).collect();
        expected.push("liftoff".into());
        assert_eq!(*events, expected, "rocket {number}");
    }

    let second = example::run("rockets", &args);
    second.assert_success();
    assert_eq!(flights(&second), plans, "the same seed gave other plans");
}

/// While ping naps, pong keeps practising; then they alternate strictly,
/// ping 1, pong 1, ping 2, ..., for the number of rounds asked.
#[test]
fn ping_pong_pong_plays_while_ping_naps_then_they_alternate() {
    let out = example::run("ping_pong", &["--scale", "0.05", "--rounds", "3"]);
    out.assert_success();
    // Drop the "[0.12s] " timestamps.
    let events: Vec<&str> = out
        .lines()
        .iter()
        .filter_map(|l| l.split_once("] ").map(|(_, e)| e))
        .collect();
    assert_eq!(events[0], "ping: napping for 0.25s before serving", "{out}");
    let practice = events[1..]
        .iter()
        .take_while(|e| e.starts_with("pong: practice swing"))
        .count();
    // One swing per 0.05 s beat during the 0.25 s nap.
    assert!(
        practice >= 5,
        "pong did not keep going while ping napped: {out}"
    );
    assert_eq!(
        events[1 + practice..],
        ["ping 1", "pong 1", "ping 2", "pong 2", "ping 3", "pong 3"],
        "{out}"
    );
    let took = seconds(
        out.last_line()
            .strip_prefix("rally over: 3 rounds in ")
            .unwrap_or_else(|| panic!("unexpected last line: {out}")),
    );
    assert!(
        took >= 0.25,
        "the rally started before the nap ended: {out}"
    );
}

/// Both results are collected after the longer wait, not the sum; a task's
/// panic and a cancellation come back from `join` as errors the program
/// handles.
#[test]
fn join_tasks_collects_results_and_handles_errors() {
    let out = example::run("join_tasks", &["--scale", "0.1"]);
    out.assert_success();
    let lines = out.lines();
    assert!(lines[0].starts_with("spawned compute (task "), "{out}");
    assert!(
        lines[1].starts_with("compute: 1229 primes below 10000"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("fetch: latest version v2.7.1"),
        "{out}"
    );
    let both = lines[3]
        .strip_prefix("both joined after ")
        .and_then(|l| l.strip_suffix(": the waits overlapped"))
        .unwrap_or_else(|| panic!("{out}"));
    // 0.05 s is the longer wait; 0.08 s would be both in sequence, so
    // only the lower bound can be checked on a noisy machine.
    assert!(seconds(both) >= 0.05, "{out}");
    assert!(
        lines[4].starts_with("sensor failed, handled: task ")
            && lines[4].ends_with(" panicked: sensor offline"),
        "{out}"
    );
    assert!(
        lines[5].starts_with("watchdog stopped, handled: task ")
            && lines[5].ends_with(" was cancelled"),
        "{out}"
    );
    assert_eq!(lines.len(), 6, "{out}");
    // The panic's report goes to stderr through the standard hook.
    assert!(out.stderr.contains("sensor offline"), "{out}");
}

/// The echo server, on a port the system picks, sends back what two
/// clients write, serving the second while the first is still connected,
/// and finishes a half-closed connection by echoing the rest and closing.
#[test]
fn echo_server_echoes_over_tcp() {
    let server = Running::start("echo_server", &["--addr", "127.0.0.1:0"]);
    // "echo_server: listening on ADDR", perhaps with more words after it.
    let listening = server.stderr_line("echo_server: listening on ");
    let addr: SocketAddr = listening
        .split_whitespace()
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {listening:?}"));

    let connect = || {
        let s = TcpStream::connect(addr).expect("connecting to the echo server");
        s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        s
    };
    let echo = |s: &mut TcpStream, msg: &[u8]| {
        s.write_all(msg).unwrap();
        let mut back = vec![0; msg.len()];
        s.read_exact(&mut back).expect("reading the echo");
        assert_eq!(back, msg);
        msg.len()
    };
    let mut first = connect();
    let mut second = connect();
    let mut first_bytes = echo(&mut first, b"hello\n");
    echo(&mut second, b"the second client is served too\n");
    first_bytes += echo(&mut first, b"and the first one still is\n");

    // A payload larger than the socket buffers, written by a thread while
    // this one reads, then a half-close: the server echoes it all and
    // closes its side.
    let payload: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut writer = first.try_clone().unwrap();
    let sent = payload.clone();
    let writing = thread::spawn(move || {
        writer.write_all(&sent).unwrap();
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    first
        .read_to_end(&mut back)
        .expect("reading the echo to its end");
    writing.join().unwrap();
    assert!(
        back == payload,
        "echoed {} of {} bytes",
        back.len(),
        payload.len()
    );

    let total = first_bytes + payload.len();
    let closed = server.stderr_line("close ");
    assert!(
        closed.contains(&format!(" after {total} bytes")),
        "unexpected log line: close {closed}"
    );
    echo(&mut second, b"still here\n");
    // `server` is killed when it goes out of scope.
}

/// Every example refuses an unknown argument with exit code 2 and a usage
/// line.
#[test]
fn examples_reject_unknown_arguments() {
    for name in [
        "rockets",
        "toy_loop",
        "ping_pong",
        "join_tasks",
        "two_tasks",
        "echo_server",
        "walkthrough_08_capstone",
        "fan_out",
        "resolve_stall",
        "subprocess",
    ] {
        let out = example::run(name, &["--no-such-option"]);
        assert_eq!(out.status.code(), Some(2), "{name}: {out}");
        assert!(out.stderr.contains("usage:"), "{name}: {out}");
    }
}

/// The examples' shared command line (`examples/args/mod.rs`): `--help`
/// prints the usage line on stdout and succeeds; a value that does not
/// parse, or is out of range, is refused with the option named and exit
/// code 2.
#[test]
fn examples_answer_help_and_refuse_bad_values() {
    for name in ["toy_loop", "echo_server", "wrong_timeout"] {
        let out = example::run(name, &["--help"]);
        out.assert_success();
        assert!(out.stdout.starts_with(&format!("usage: {name} ")), "{out}");
    }
    for (args, problem) in [
        (["--scale", "fast"], "toy_loop: --scale \"fast\": "),
        (["--scale", "0"], "toy_loop: --scale must be in "),
    ] {
        let out = example::run("toy_loop", &args);
        assert_eq!(out.status.code(), Some(2), "{out}");
        assert!(out.stderr.starts_with(problem), "{out}");
        assert!(
            out.stderr.contains("\nusage: toy_loop [--scale F]"),
            "{out}"
        );
    }
}

/// `fan_out`: a scope waits for every check, `join_any` + `cancel_all` keep
/// the fastest, and a panicking check cancels the rest and leaves the scope.
/// At 0.3 the mirrors answer 30 ms apart: a loaded machine that delays a
/// spawn by a few milliseconds cannot reorder them.
#[test]
fn fan_out_shows_the_three_ends_of_a_scope() {
    let out = example::run("fan_out", &["--scale", "0.3"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with(r#"all answered in order ["us", "sa", "eu", "asia"] after "#),
        "{out}"
    );
    assert!(lines[1].starts_with("fastest: us after "), "{out}");
    assert!(
        lines[2].starts_with(r#"failed: "mirror sa sent garbage" after "#)
            && lines[2].ends_with("1 check(s) had finished"),
        "{out}"
    );
    assert!(out.stderr.contains("mirror sa sent garbage"), "{out}");
}

/// `resolve_stall`: a 300 ms lookup made on the scheduler's thread stops
/// the ticker for all of it; through `lookup_host` the ticker keeps going.
#[test]
fn resolve_stall_shows_the_lookup_off_the_loop() {
    let out = example::run("resolve_stall", &["--delay-ms", "300", "--runs", "1"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        lines[0], "resolver delay: 300 ms, ticker: 1 ms sleeps, 1 runs each",
        "{out}"
    );
    let gap = |line: &str, way: &str| -> f64 {
        line.strip_prefix(way)
            .and_then(|l| l.strip_prefix(": longest tick gap "))
            .and_then(|l| l.strip_suffix(" ms"))
            .unwrap_or_else(|| panic!("no {way} line: {out}"))
            .parse()
            .unwrap_or_else(|e| panic!("{way}: {e}: {out}"))
    };
    gap(lines[1], "baseline");
    // The inline lookup holds the thread for the whole delay, or more.
    assert!(gap(lines[2], "inline") >= 300.0, "{out}");
    // Loose: a busy machine delays ticks, but not by a whole lookup.
    assert!(gap(lines[3], "pool") < 200.0, "{out}");
}

/// `subprocess`: three shell jobs streamed by their own tasks overlap (each
/// job's steps in order, all done in about the longest job's time), a job
/// over its timeout is killed, and `output` collects both streams.
#[test]
fn subprocess_streams_three_jobs_at_once() {
    let out = example::run("subprocess", &["--scale", "0.2"]);
    out.assert_success();
    let lines = out.lines();
    for (job, steps) in [("build", 3), ("test", 2), ("lint", 4)] {
        let prefix = format!("[{job}] ");
        let own: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(&prefix))
            .collect();
        assert_eq!(own.len(), steps + 1, "{job}: {out}");
        for (i, line) in own[..steps].iter().enumerate() {
            assert!(line.ends_with(&format!("s step {}", i + 1)), "{job}: {out}");
        }
        assert_eq!(own[steps], "exited with 0", "{job}: {out}");
    }
    let total = lines
        .iter()
        .find_map(|l| l.strip_prefix("3 jobs finished in "))
        .map(seconds)
        .unwrap_or_else(|| panic!("no total: {out}"));
    // The longest job sleeps 1.05 units (sleeps never end early); the
    // upper bound only catches a run that is wildly off (in a row the jobs
    // would take 2.45 units).
    assert!(total >= 1.05, "{out}");
    assert!(total < 2.45 * 5.0, "{out}");
    let slow = lines
        .iter()
        .find_map(|l| l.strip_prefix("slow job: killed after "))
        .map(seconds)
        .unwrap_or_else(|| panic!("the slow job was not killed: {out}"));
    assert!((0.5..30.0).contains(&slow), "{out}");
    assert_eq!(
        out.last_line(),
        r#"collected: exit Some(3), stdout "to stdout\n", stderr "to stderr\n""#,
        "{out}"
    );
}

/// The waker contract: each flag's future is polled once (Pending, waker
/// kept), woken by its setter (a task, then a plain thread) through the
/// waker it kept, and polled once more (Ready), in that order each time.
#[test]
fn waker_contract_polls_wakes_and_polls_again() {
    let out = example::run("waker_contract", &[]);
    out.assert_success();
    let steps: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.split_once("] ").map_or(l, |(_, rest)| rest).trim())
        .collect();
    let round = |who: &str| {
        vec![
            "poll 1: not set; waker kept, Pending".to_string(),
            format!("{who}: flag set, calling wake()"),
            "wake(): the runtime's waker unparks the task in block_on".to_string(),
            "poll 2: the flag is set: Ready".to_string(),
            "block_on returned after 2 polls".to_string(),
        ]
    };
    let mut want = round("setter task");
    want.extend(round("plain thread"));
    assert_eq!(steps, want, "{out}");
    // The setters' lines say who ran them: a task, then the plain thread.
    assert!(out.stdout.contains("[task 2] setter task"), "{out}");
    assert!(out.stdout.contains("[plain thread] plain thread"), "{out}");
}
