//! The step programs of the walkthrough book (`examples/walkthrough_*.rs`),
//! the `two_tasks` example whose output the book shows, and the trace
//! renderer (`examples/trace_timeline.rs`), run as child processes with
//! short parameters, their output checked.
//!
//! Timing checks are one-sided where the machine's load could matter:
//! sleeps may end late, never early, so lower bounds are firm and upper
//! bounds, where there are any, are loose.

mod util;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use util::example::{self, KillOnDrop, Output};

/// A path in the temporary directory, unique to this test process.
fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("yl-walkthrough-{}-{name}", std::process::id()))
}

/// The number that follows `before` in `line` (digits, `.` and `,`).
fn number_after(line: &str, before: &str) -> f64 {
    let rest = line
        .split_once(before)
        .unwrap_or_else(|| panic!("{before:?} not in {line:?}"))
        .1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|e| panic!("no number after {before:?} in {line:?}: {e}"))
}

/// The single stdout line starting with `prefix`.
fn line_starting<'a>(out: &'a Output, prefix: &str) -> &'a str {
    let found: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "lines starting with {prefix:?}: {out}");
    found[0]
}

/// Step 1 prints the pause/resume dialogue, the Collatz generator and the
/// running average exactly.
#[test]
fn step1_pause_prints_the_dialogue() {
    let out = example::run("walkthrough_01_pause", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "-- pause and resume",
            "caller: resume #1",
            "  coroutine: step 1",
            "caller: it paused",
            "caller: resume #2",
            "  coroutine: step 2",
            "caller: it paused",
            "caller: resume #3",
            "  coroutine: step 3",
            "caller: it finished",
            "-- values out",
            "yielded [6, 3, 10, 5, 16, 8, 4, 2, 1], returned 8",
            "-- values in",
            "sent 10, average now 10",
            "sent 20, average now 15",
            "sent 60, average now 30",
            "sent None, it returned after 3 values",
        ],
        "{out}"
    );
}

/// Step 2 interleaves three tasks, then shows the busy wait: the sleeper is
/// resumed over and over, the other task runs meanwhile.
#[test]
fn step2_round_robin_interleaves_and_busy_waits() {
    let out = example::run("walkthrough_02_round_robin", &["--wait-ms", "30"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(
        lines[..13],
        [
            "A1",
            "B1",
            "C1",
            "A2",
            "B2",
            "C2",
            "A3",
            "C3",
            "11 resumes for 8 steps and 3 endings",
            "sleeper: waiting 30 ms",
            "D1",
            "D2",
            "sleeper: done",
        ],
        "{out}"
    );
    let counts = line_starting(&out, "the loop resumed tasks ");
    let resumes = number_after(counts, "resumed tasks ");
    let pointless = number_after(counts, "; ");
    // The sleeper: one resume to start, one per pointless check; D: three.
    assert_eq!(resumes, pointless + 4.0, "{out}");
    assert!(pointless >= 100.0, "a 30 ms busy wait checks often: {out}");
    assert!(line_starting(&out, "CPU busy ").ends_with(" ms wall time"));
}

/// Step 3: both loops finish the jobs in deadline order; the heap loop
/// wakes once per deadline, the toy loop every millisecond, and the toy
/// loop's sleepers wake far later than their deadlines.
#[test]
fn step3_heap_loop_wakes_only_when_due() {
    let out = example::run(
        "walkthrough_03_timer_heap",
        &["--scale", "0.02", "--sleepers", "50"],
    );
    out.assert_success();
    let lines = out.lines();
    let jobs = [
        "  A started, waiting 0.04s",
        "  B started, waiting 0.02s",
        "  C started, waiting 0.06s",
        "  B done",
        "  A done",
        "  C done",
    ];
    assert_eq!(lines.len(), 18, "{out}");
    assert_eq!(lines[0], "toy loop (poll every 1 ms):");
    assert_eq!(lines[1..7], jobs, "{out}");
    assert_eq!(lines[9], "heap loop (block until the next deadline):");
    assert_eq!(lines[10..16], jobs, "{out}");

    let turns = |line: &str| number_after(line, "s, ");
    let late_ms = |line: &str| number_after(line, "latest wake-up ");
    let (toy_jobs, toy_sleepers) = (lines[7], lines[8]);
    let (heap_jobs, heap_sleepers) = (lines[16], lines[17]);
    assert!(toy_jobs.starts_with("  3 jobs in "), "{out}");
    assert!(heap_sleepers.starts_with("  50 sleepers in "), "{out}");
    // Three deadlines: at most three kernel waits.
    assert!((1.0..=3.0).contains(&turns(heap_jobs)), "{out}");
    // 60 ms of 1 ms naps: dozens of turns.
    assert!(turns(toy_jobs) >= 20.0, "{out}");
    // A sleeper queued behind not-yet-due ones waits a 1 ms nap for each.
    assert!(late_ms(toy_sleepers) >= 5.0, "{out}");
    assert!(turns(heap_sleepers) <= 50.0, "{out}");
}

/// Step 4: values come back from joins, the raw `Op::Join` works, a panic
/// is caught at the task's edge, and a task pauses twenty calls deep.
#[test]
fn step4_tasks_join_panic_and_pause_deep() {
    let out = example::run("walkthrough_04_tasks", &["--scale", "0.5"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines.len(), 9, "{out}");
    assert_eq!(
        lines[..3],
        [
            "joined: fetch waited 30 ms",
            "joined: parse waited 10 ms",
            "joined: store waited 20 ms",
        ],
        "{out}"
    );
    assert!(lines[3].ends_with("; the waits add up to 60 ms"), "{out}");
    let joined_after = number_after(lines[3], "all joined after ");
    assert!(joined_after >= 30.0, "the longest wait is 30 ms: {out}");
    assert_eq!(
        lines[4..8],
        [
            "raw Op::Join answered Ready; child finished: true",
            "its value: 42",
            "sensor failed: panic = true, message = \"sensor offline\"",
            "steady is fine",
        ],
        "{out}"
    );
    assert!(
        lines[8].starts_with("paused 20 calls deep; meanwhile the ticker ticked "),
        "{out}"
    );
    let ticks = number_after(lines[8], "ticked ");
    assert!((1.0..=5.0).contains(&ticks), "{out}");
    assert!(out.stderr.contains("sensor offline"), "{out}");
}

/// Step 5: every line comes back in both modes; the blocking poll takes a
/// handful of turns, the peeking poll spins.
/// Step 4 from scratch: the thread-local `suspend`, joins filed on the
/// target's joiner list, and a kill that unwinds the paused task (its
/// cleanup runs) and tells its joiner `None`, in that order.
#[test]
fn step4_from_scratch_joins_and_kills_by_unwinding() {
    let out = example::run("walkthrough_04_from_scratch", &[]);
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().map(str::trim).collect();
    // A line that ends with `needle`, or for a wait's line (its deadline
    // is the clock's reading then, which a loaded machine may have moved
    // past 0 ms, plus the sleep), one that holds it.
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.ends_with(needle) || (needle.ends_with("until") && l.contains(needle)))
            .unwrap_or_else(|| panic!("no line ending {needle:?}: {out}"))
    };
    // How far past its line's time a wait's deadline is, in ms.
    let sleeps = |needle: &str| {
        let line = lines[at(needle)];
        number_after(line, "until ") - number_after(line, "")
    };
    assert_eq!(sleeps("task 1 waits until"), 30.0, "{out}");
    assert_eq!(sleeps("task 2 waits until"), 3_600_000.0, "{out}");
    let order = [
        "task 0 joins task 1",
        "task 1 waits until",
        "task 2 waits until",
        "cleanup of the worker runs",
        "task 1 returns 7",
        "task 0 joins task 2",
        "task 3 kills task 2",
        "cleanup of the stuck task runs",
        "task 3 returns 1",
        "main joined: worker Some(7), stuck None, watchdog Some(1)",
        "task 0 returns 8",
        "main's value: Some(8)",
    ];
    let places: Vec<usize> = order.iter().map(|l| at(l)).collect();
    assert!(
        places.windows(2).all(|w| w[0] < w[1]),
        "out of order: {out}"
    );
    // The kill comes after the watchdog's 50 ms sleep, never before.
    let kill = lines[at("task 3 kills task 2")];
    assert!(number_after(kill, "") >= 50.0, "{kill}");
    // The stuck task's hour-long sleep was cut short: the run took well
    // under a second.
    let last = lines[at("task 0 returns 8")];
    assert!(number_after(last, "") < 1000.0, "{last}");
}

#[test]
fn step5_readiness_blocking_poll_versus_peeking() {
    let out = example::run(
        "walkthrough_05_readiness",
        &["--clients", "2", "--lines", "2", "--gap-ms", "10"],
    );
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(lines[0], "blocking poll (sleep until a socket is ready):");
    assert_eq!(lines[3], "peeking poll (timeout 0 on every turn):");
    // Four lines of "line N from client C\n", 21 bytes each.
    for summary in [lines[1], lines[4]] {
        assert_eq!(
            summary, "  2 clients, 4 of 4 lines echoed back intact, 84 bytes",
            "{out}"
        );
    }
    let turns = |line: &str| number_after(line, "wall, ");
    let (blocking, peeking) = (turns(lines[2]), turns(lines[5]));
    assert!(blocking <= 40.0, "{out}");
    assert!(peeking >= 100.0, "{out}");
}

/// Step 6: the echo server and its clients in one process; every line
/// comes back, and the byte count matches what was sent.
#[test]
fn step6_echo_server_and_clients() {
    let out = example::run("walkthrough_06_echo_three_clients", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "client A: 3 of 3 lines came back intact",
            "client B: 3 of 3 lines came back intact",
            "client C: 3 of 3 lines came back intact",
            "server: 189 bytes echoed on 3 connections",
        ],
        "{out}"
    );
    let out = example::run(
        "walkthrough_06_echo_three_clients",
        &["--clients", "4", "--lines", "2", "--gap-ms", "5"],
    );
    out.assert_success();
    assert_eq!(
        out.last_line(),
        "server: 168 bytes echoed on 4 connections",
        "{out}"
    );
    assert_eq!(out.lines().len(), 5, "{out}");
}

/// Step 7: sleepers as tasks, threads and processes all return every
/// number, and none finishes before its sleep.
#[test]
fn step7_sleepers_as_tasks_threads_and_processes() {
    for (mode, n) in [("", "500"), ("--threads", "100"), ("--processes", "10")] {
        let mut args = vec!["--n", n, "--secs", "0.05"];
        if !mode.is_empty() {
            args.push(mode);
        }
        let out = example::run("walkthrough_07_sleepers", &args);
        out.assert_success();
        let lines = out.lines();
        assert_eq!(lines.len(), 2, "{out}");
        let kind = match mode {
            "" => "tasks",
            "--threads" => "threads",
            _ => "processes",
        };
        let head = format!("{n} {kind} slept 0.05s each: all joined after ");
        assert!(lines[0].starts_with(&head), "{out}");
        assert!(number_after(lines[0], "joined after ") >= 0.05, "{out}");
        assert!(lines[1].starts_with("peak resident memory: "), "{out}");
    }
}

/// A step program left running (a server), its stdout read line by line
/// as it comes.
struct Server {
    /// The process; killed when this is dropped.
    child: KillOnDrop,
    /// Its stdout lines, read by a background thread.
    lines: Receiver<String>,
}

impl Server {
    /// Starts example `name` with `args`, stdout piped, stderr inherited.
    fn start(name: &str, args: &[&str]) -> Server {
        let mut child = Command::new(example::path(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start example {name}: {e}"));
        let pipe = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child: KillOnDrop(child),
            lines,
        }
    }

    /// The next stdout line, waiting up to [`example::TIMEOUT`] for it.
    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(example::TIMEOUT)
            .unwrap_or_else(|e| panic!("no stdout line within {:?}: {e}", example::TIMEOUT))
    }

    /// Waits up to [`example::TIMEOUT`] for the program to exit by itself,
    /// and returns its status and the stdout lines not read yet.
    fn wait(mut self) -> (ExitStatus, Vec<String>) {
        let deadline = Instant::now() + example::TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.0.try_wait().expect("waiting for the example") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the example did not exit within {:?}",
                example::TIMEOUT
            );
            thread::sleep(Duration::from_millis(10));
        };
        let mut rest = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("stdout still open after exit"),
            }
        }
        (status, rest)
    }
}

/// How long a test client waits for an echo before it fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client of the capstone server: connected, with timeouts on both
/// directions so that no read or write can hang the test.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect to the capstone");
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    stream
}

/// Step 8, the capstone: three clients exchanging lines and one sending a
/// message in small pieces are served at once, each gets exactly its bytes
/// back, the ticker ticks meanwhile, and the server stops by itself once the
/// fourth client has left.
#[test]
fn step8_capstone_serves_concurrent_clients_and_stops() {
    const LINES: usize = 5;
    let server = Server::start(
        "walkthrough_08_capstone",
        &[
            "--addr",
            "127.0.0.1:0",
            "--max-clients",
            "4",
            "--tick-secs",
            "0.05",
        ],
    );
    let first = server.next_line();
    let addr: SocketAddr = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line {first:?}"))
        .parse()
        .expect("a socket address after `listening on `");

    // Every client connects before any sends, so all four are open at once.
    let barrier = Arc::new(Barrier::new(4));
    let mut clients = Vec::new();
    for c in 0..3 {
        let barrier = barrier.clone();
        clients.push(thread::spawn(move || {
            let stream = connect(addr);
            barrier.wait();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut writer = stream;
            let mut sent = 0;
            for n in 0..LINES {
                let line = format!("line {n} from client {c}\n");
                writer.write_all(line.as_bytes()).unwrap();
                let mut echo = String::new();
                reader.read_line(&mut echo).unwrap();
                assert_eq!(echo, line, "client {c}");
                sent += line.len();
                thread::sleep(Duration::from_millis(10));
            }
            writer.shutdown(Shutdown::Write).unwrap();
            let mut after = Vec::new();
            reader.read_to_end(&mut after).unwrap();
            assert!(after.is_empty(), "client {c}: extra bytes {after:?}");
            sent
        }));
    }
    // The piecemeal client: 4,095 bytes in pieces of 1, 2, 4, … 2,048 bytes,
    // a pause after each, so the server sees the message arrive in bits.
    let message: Vec<u8> = (0..4095u32).map(|i| (i * 7 % 251) as u8).collect();
    let expected = message.clone();
    clients.push(thread::spawn(move || {
        let mut stream = connect(addr);
        barrier.wait();
        let (mut at, mut piece) = (0, 1);
        while at < message.len() {
            let end = (at + piece).min(message.len());
            stream.write_all(&message[at..end]).unwrap();
            thread::sleep(Duration::from_millis(5));
            (at, piece) = (end, piece * 2);
        }
        stream.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).unwrap();
        assert!(
            back == expected,
            "{} of {} bytes came back",
            back.len(),
            expected.len()
        );
        back.len()
    }));
    let mut sent: Vec<usize> = clients
        .into_iter()
        .map(|c| c.join().expect("a client failed"))
        .collect();

    let (status, lines) = server.wait();
    assert!(status.success(), "{status}: {lines:#?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("served 4 clients, stopping"),
        "{lines:#?}"
    );
    // All four were connected before the first one left.
    let connected = |l: &String| l.starts_with("client ") && l.contains(" connected from ");
    let first_left = lines
        .iter()
        .position(|l| l.contains(" left after "))
        .unwrap();
    assert_eq!(
        lines[..first_left].iter().filter(|l| connected(l)).count(),
        4,
        "{lines:#?}"
    );
    // Each client's byte count, as the server saw it, in any order.
    let mut echoed: Vec<usize> = lines
        .iter()
        .filter(|l| l.contains(" left after "))
        .map(|l| number_after(l, " left after ") as usize)
        .collect();
    echoed.sort_unstable();
    sent.sort_unstable();
    assert_eq!(echoed, sent, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("tick at ")),
        "{lines:#?}"
    );
}

/// The capstone answers `--help` and `-h` with its usage and the meaning of
/// every option, on stdout, with success; a bad option still fails with 2.
#[test]
fn step8_capstone_answers_help() {
    for flag in ["--help", "-h"] {
        let out = example::run("walkthrough_08_capstone", &[flag]);
        out.assert_success();
        let lines = out.lines();
        assert!(
            lines[0].starts_with("usage: walkthrough_08_capstone [--addr HOST:PORT]"),
            "{flag}: {out}"
        );
        for option in ["--addr", "--max-clients", "--tick-secs", "-h, --help"] {
            assert!(
                lines[1..]
                    .iter()
                    .any(|l| l.trim_start().starts_with(option)),
                "{flag}: no line for {option}: {out}"
            );
        }
        assert!(
            !out.stdout.contains("listening on"),
            "{flag}: it must not serve: {out}"
        );
    }
    let bad = example::run("walkthrough_08_capstone", &["--nonsense"]);
    assert_eq!(bad.status.code(), Some(2), "{bad}");
    assert!(bad.stderr.contains("unknown argument"), "{bad}");
}

/// The two-task program: the lines interleave in exactly the order shown in
/// the book, and the run takes at least the longer task's 6 units.
#[test]
fn two_tasks_interleave_and_overlap() {
    let out = example::run("two_tasks", &["--scale", "0.05"]);
    out.assert_success();
    let lines = out.lines();
    assert_eq!(
        lines[..5],
        ["Task 1", "Task 2", "Task 1", "Task 2", "Task 2"],
        "{out}"
    );
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[5].starts_with("done after "), "{out}");
    assert!(number_after(lines[5], "done after ") >= 0.30, "{out}");
    assert!(lines[5].ends_with(" ms of it on the CPU"), "{out}");
}

/// The renderer sums each lane's states exactly on a small hand-written
/// trace, names included, and writes an SVG with a lane per task.
#[test]
fn trace_timeline_sums_states_of_a_known_trace() {
    let trace = temp_path("known.trace");
    let svg = temp_path("known.svg");
    std::fs::write(
        &trace,
        "[   0.000000] spawn  task 1 \"main\" by run\n\
         [   0.001000] resume task 1 \"main\" with Ready\n\
         [   0.002000] spawn  task 2 \"a \\\"quoted\\\" <name>\" by task 1\n\
         [   0.003000] yield  task 1 \"main\" -> Join(task 2)\n\
         [   0.004000] resume task 2 \"a \\\"quoted\\\" <name>\" with Ready\n\
         [   0.005000] yield  task 2 \"a \\\"quoted\\\" <name>\" -> Wait(in 0.010000s)\n\
         [   0.005000] poll   sleep up to 0.010000s\n\
         [   0.015000] polled slept 0.010000s, 0 event(s)\n\
         [   0.015000] wake   task 2 \"a \\\"quoted\\\" <name>\" by timer\n\
         [   0.016000] resume task 2 \"a \\\"quoted\\\" <name>\" with Ready\n\
         [   0.017000] yield  task 2 \"a \\\"quoted\\\" <name>\" -> ReadReady(io 0)\n\
         [   0.019000] wake   task 2 \"a \\\"quoted\\\" <name>\" by socket\n\
         [   0.019000] resume task 2 \"a \\\"quoted\\\" <name>\" with Ready\n\
         [   0.020000] end    task 2 \"a \\\"quoted\\\" <name>\"\n\
         [   0.020000] wake   task 1 \"main\" by task-end\n\
         [   0.021000] resume task 1 \"main\" with Ready\n\
         [   0.022000] end    task 1 \"main\"\n",
    )
    .unwrap();
    let out = example::run(
        "trace_timeline",
        &[
            trace.to_str().unwrap(),
            svg.to_str().unwrap(),
            "--title",
            "known & small",
        ],
    );
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            &format!("17 trace lines, 2 tasks, 0.022000 s -> {}", svg.display()),
            "loop: loop asleep in the kernel 10.000 ms",
            "task 1 main: running 3.000 ms, ready, queued 2.000 ms, \
             waiting on a task or a park 17.000 ms",
            "task 2 a \"quoted\" <name>: running 3.000 ms, ready, queued 3.000 ms, \
             waiting on a timer 10.000 ms, waiting on a socket 2.000 ms",
        ],
        "{out}"
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg "), "{picture}");
    assert!(picture.ends_with("</svg>\n"));
    assert!(picture.contains(">known &amp; small</text>"));
    assert!(picture.contains(">task 2 a &quot;quoted&quot; &lt;name&gt;</text>"));
    for legend in [
        "running",
        "ready, queued",
        "waiting on a timer",
        "waiting on a socket",
    ] {
        assert!(
            picture.contains(&format!(">{legend}</text>")),
            "no {legend:?}"
        );
    }
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&svg);
}

/// A real trace, from step 6 with `--trace`, renders with a lane for each
/// of the eight tasks; bad arguments are refused with exit code 2.
#[test]
fn trace_timeline_draws_a_real_trace() {
    let trace = temp_path("echo.trace");
    let svg = temp_path("echo.svg");
    let run = example::run(
        "walkthrough_06_echo_three_clients",
        &["--trace", trace.to_str().unwrap()],
    );
    run.assert_success();
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        text.contains("yield  task 2 \"server\" -> Accept(io "),
        "{text}"
    );
    assert!(
        text.contains("wake   task 2 \"server\" by socket"),
        "{text}"
    );

    let out = example::run(
        "trace_timeline",
        &[trace.to_str().unwrap(), svg.to_str().unwrap()],
    );
    out.assert_success();
    assert!(out.lines()[0].contains(" trace lines, 8 tasks, "), "{out}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    for lane in [
        "task 1 main",
        "task 2 server",
        "task 3 client A",
        "task 4 client B",
        "task 5 client C",
        "task 6 conn 1",
        "task 7 conn 2",
        "task 8 conn 3",
    ] {
        assert!(
            picture.contains(&format!(">{lane}</text>")),
            "no lane {lane:?}"
        );
        assert!(out.stdout.contains(&format!("{lane}: running ")), "{out}");
    }
    // The server waited on its listening socket; the clients on timers.
    assert!(out.stdout.contains("task 2 server: running "), "{out}");
    assert!(line_starting(&out, "task 2 server: ").contains("waiting on a socket"));
    assert!(line_starting(&out, "task 3 client A: ").contains("waiting on a timer"));

    let bad = example::run("trace_timeline", &[trace.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2), "{bad}");
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&svg);
}
