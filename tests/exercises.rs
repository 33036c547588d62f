//! The solutions to the book's exercises (`examples/exercise_ch*.rs`), run
//! as child processes with small parameters and checked for what each
//! exercise asks: exact output where the program is deterministic, real
//! clients against the servers, and one-sided timing checks (a wait may end
//! late on a loaded machine, never early) with generous upper bounds.

mod util;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use util::example::{self, KillOnDrop};

/// How long a test client waits on a socket before it fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A server example left running, its stdout and stderr lines merged into
/// one channel, killed when dropped.
struct Server {
    child: KillOnDrop,
    lines: Receiver<String>,
}

impl Server {
    /// Starts example `name` with `args`, both output streams captured.
    fn start(name: &str, args: &[&str]) -> Server {
        let mut child = Command::new(example::path(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start example {name}: {e}"));
        let (tx, lines) = mpsc::channel();
        let out: Box<dyn Read + Send> = Box::new(child.stdout.take().expect("piped"));
        let err: Box<dyn Read + Send> = Box::new(child.stderr.take().expect("piped"));
        for pipe in [out, err] {
            let tx = tx.clone();
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Server {
            child: KillOnDrop(child),
            lines,
        }
    }

    /// Waits for a line starting with `prefix` and returns it whole; lines
    /// before it are skipped.
    fn line(&self, prefix: &str) -> String {
        let deadline = Instant::now() + example::TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(line) => seen.push(line),
                Err(e) => panic!("no line {prefix:?} ({e}); got {seen:?}"),
            }
        }
    }

    /// The address of the `listening on ADDR` line.
    fn addr(&self) -> SocketAddr {
        let line = self.line("listening on ");
        line["listening on ".len()..]
            .parse()
            .unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Waits for the program to exit by itself; returns its status.
    fn wait(mut self) -> ExitStatus {
        let deadline = Instant::now() + example::TIMEOUT;
        loop {
            if let Some(status) = self.child.0.try_wait().expect("waiting for the example") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {:?}",
                example::TIMEOUT
            );
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A client socket with timeouts both ways, so no test can hang on it.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    stream
}

/// Sends `line` and returns the one-line answer.
fn ask(stream: &TcpStream, reader: &mut impl BufRead, line: &str) -> String {
    (&*stream).write_all(line.as_bytes()).unwrap();
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    answer
}

/// Chapter 1: the counter hands numbers out and obeys what is sent in.
#[test]
fn ch01_counter_follows_the_commands_sent_in() {
    let out = example::run("exercise_ch01_counter", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "sent Next, got 1",
            "sent Next, got 2",
            "sent Next, got 3",
            "sent Jump(100), got 100",
            "sent Next, got 101",
            "sent Jump(7), got 7",
            "sent Stop, it returned after 6 numbers",
        ]
    );
}

/// Chapter 2: each task runs as many steps in a row as its weight.
#[test]
fn ch02_weighted_round_robin_gives_steps_by_weight() {
    let out = example::run("exercise_ch02_weighted", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "A1 A2 A3 B1 C1 C2 A4 A5 A6 B2 C3 C4 B3 B4",
            "17 resumes for 14 steps and 3 endings",
        ]
    );
}

/// Chapter 3: the ticker beats on a fixed schedule: tick k never before k
/// periods, and a late tick does not push the later ones back.
#[test]
fn ch03_ticker_keeps_a_fixed_beat() {
    let out = example::run(
        "exercise_ch03_ticker",
        &["--period-ms", "20", "--ticks", "10"],
    );
    out.assert_success();
    let ticks: Vec<&str> = out
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tick "))
        .collect();
    assert_eq!(ticks.len(), 10, "{out}");
    for (k, line) in (1..).zip(&ticks) {
        assert!(line.starts_with(&format!("tick {k} at ")), "{line}");
        let at: f64 = line
            .split(" at ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(at >= 20.0 * k as f64, "tick {k} came early: {line}");
    }
    assert!(out.stdout.contains("worker done\n"), "{out}");
    let total: f64 = out
        .last_line()
        .split(" in ")
        .nth(1)
        .unwrap()
        .trim_end_matches(" ms")
        .parse()
        .unwrap();
    // Ten beats of 20 ms: 200 ms, plus at most one late wake-up, not ten.
    assert!((200.0..2_000.0).contains(&total), "{out}");
}

/// Chapter 4: a worker's panic reaches its supervisor through `join`; the
/// other shards and the heartbeat carry on, and the poisoned items are
/// skipped.
#[test]
fn ch04_supervisor_survives_panicking_workers() {
    let out = example::run("exercise_ch04_supervisor", &[]);
    out.assert_success();
    let lines = out.lines();
    for expected in [
        "shard A: worker panicked at item 2 (attempt to divide by zero)",
        "shard A: done, sum 950, 1 restart(s)",
        "shard B: done, sum 1225, 0 restart(s)",
        "shard C: worker panicked at item 0 (attempt to divide by zero)",
        "shard C: worker panicked at item 2 (attempt to divide by zero)",
        "shard C: worker panicked at item 3 (attempt to divide by zero)",
        "shard C: gave up after 2 restarts, sum so far 125",
        "heartbeat: 10 of 10 beats",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?}: {out}");
    }
    assert_eq!(out.stderr.matches("panic in a worker").count(), 4, "{out}");
}

/// Chapter 5: lines that arrive in pieces, or several in one read, are
/// each answered upper-cased.
#[test]
fn ch05_line_protocol_handles_partial_and_joined_lines() {
    let out = example::run("exercise_ch05_upper", &["--clients", "4"]);
    out.assert_success();
    let expected: Vec<String> = (1..=4)
        .map(|id| format!("client {id}: 4 of 4 lines came back upper-cased"))
        .collect();
    assert_eq!(out.lines(), expected);
}

/// Chapter 6: the key-value server shares one table across connections,
/// answers pipelined commands in order, survives bad ones and stops after
/// its clients.
#[test]
fn ch06_kv_server_shares_one_table() {
    let server = Server::start(
        "exercise_ch06_kv",
        &["--addr", "127.0.0.1:0", "--max-clients", "2"],
    );
    let addr = server.addr();
    let first = connect(addr);
    let mut r1 = BufReader::new(first.try_clone().unwrap());
    let second = connect(addr);
    let mut r2 = BufReader::new(second.try_clone().unwrap());
    assert_eq!(ask(&first, &mut r1, "SET colour dark blue\n"), "OK\n");
    assert_eq!(ask(&second, &mut r2, "GET colour\n"), "VALUE dark blue\n");
    assert_eq!(
        ask(&second, &mut r2, "FROB x\n"),
        "ERR unknown command \"FROB x\"\n"
    );
    // Three commands in one write: three answers, in order.
    (&first)
        .write_all(b"DEL colour\nGET colour\nDEL colour\n")
        .unwrap();
    for expected in ["OK\n", "NONE\n", "NONE\n"] {
        let mut answer = String::new();
        r1.read_line(&mut answer).unwrap();
        assert_eq!(answer, expected);
    }
    (&first).write_all(b"QUIT\n").unwrap();
    let mut rest = Vec::new();
    r1.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "QUIT closes the connection");
    second.shutdown(Shutdown::Write).unwrap();
    assert!(server.line("served 2 clients").contains("0 keys stored"));
    assert!(server.wait().success());
}

/// Chapter 7: the sweep prints one CSV row per N, each about one nap long.
#[test]
fn ch07_sweep_prints_csv_rows() {
    let out = example::run(
        "exercise_ch07_sweep",
        &["--list", "1,10,100,1000", "--secs", "0.2"],
    );
    out.assert_success();
    let lines = out.lines();
    assert_eq!(lines[0], "n,seconds");
    let rows: Vec<(u64, f64)> = lines[1..]
        .iter()
        .map(|l| {
            let (n, s) = l.split_once(',').unwrap_or_else(|| panic!("{l:?}"));
            (n.parse().unwrap(), s.parse().unwrap())
        })
        .collect();
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 10, 100, 1000]
    );
    for (n, secs) in rows {
        // Concurrent naps: one nap's time, never less, whatever N is.
        assert!((0.2..5.0).contains(&secs), "n = {n}: {secs} s");
    }
    let bad = example::run("exercise_ch07_sweep", &["--list", "0"]);
    assert_eq!(bad.status.code(), Some(2), "{bad}");
}

/// Chapter 8: stacks are reused, blocking jobs are counted, and the hog is
/// named by the slow-task watch.
#[test]
fn ch08_diag_shows_reuse_jobs_and_the_hog() {
    let out = example::run("exercise_ch08_stats", &[]);
    out.assert_success();
    let stacks = out.lines()[0];
    let carved: usize = stacks
        .split("carved ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..1000).contains(&carved), "stacks were reused: {stacks}");
    assert!(
        out.stdout
            .contains("blocking pool: 8 jobs submitted (sum of squares 140)"),
        "{out}"
    );
    assert!(
        out.stderr
            .lines()
            .any(|l| l.contains("'hog' (id ") && l.contains("ran for at least")),
        "no warning about the hog: {out}"
    );
}

/// Chapter 9: a silent client is disconnected after the idle time, not
/// before, while a client that keeps talking stays connected past it.
#[test]
fn ch09_capstone_disconnects_silent_clients() {
    let server = Server::start(
        "exercise_ch09_idle_timeout",
        &[
            "--addr",
            "127.0.0.1:0",
            "--idle-ms",
            "300",
            "--max-clients",
            "2",
        ],
    );
    let addr = server.addr();
    let start = Instant::now();
    let mut silent = connect(addr);
    let chatty = connect(addr);
    let mut reader = BufReader::new(chatty.try_clone().unwrap());
    let talker = thread::spawn(move || {
        // 900 ms of talk, a line every 100 ms: never 300 ms of silence.
        for n in 0..9 {
            let line = format!("line {n}\n");
            assert_eq!(ask(&chatty, &mut reader, &line), line);
            thread::sleep(Duration::from_millis(100));
        }
        chatty.shutdown(Shutdown::Write).unwrap();
    });
    let mut buf = [0u8; 16];
    let n = silent.read(&mut buf).expect("end of stream, not an error");
    let silent_for = start.elapsed();
    assert_eq!(n, 0, "the silent client is disconnected");
    assert!(
        silent_for >= Duration::from_millis(300),
        "too early: {silent_for:?}"
    );
    assert!(
        silent_for < Duration::from_secs(5),
        "too late: {silent_for:?}"
    );
    talker
        .join()
        .expect("the talking client was served throughout");
    assert!(server
        .line("client 1 disconnected")
        .contains("after 300 ms of silence"));
    server.line("client 2 left after");
    server.line("served 2 clients, stopping");
    assert!(server.wait().success());
}

/// Chapter 10: the first good answer wins and the other requests are
/// cancelled; failures are skipped; the budget cancels everything.
#[test]
fn ch10_hedged_request_cancels_the_losers() {
    let out = example::run("exercise_ch10_hedged", &[]);
    out.assert_success();
    assert_eq!(
        out.lines(),
        [
            "all healthy: user:42=7 from west; 2 request(s) cancelled",
            "fastest fails: user:42=7 from north; 1 request(s) cancelled",
            "all too slow: gave up after 100 ms; 2 request(s) cancelled",
            "all fail: no answer: east failed, west failed; 0 request(s) cancelled",
        ]
    );
}

/// Chapter 11: on SIGTERM the server refuses new clients at once, lets an
/// open connection finish within the grace period, cancels the one left
/// after it, and exits cleanly.
#[test]
fn ch11_sigterm_drains_then_cancels() {
    let server = Server::start(
        "exercise_ch11_graceful",
        &["--addr", "127.0.0.1:0", "--grace-ms", "400"],
    );
    let addr = server.addr();
    let busy = connect(addr);
    let mut reader = BufReader::new(busy.try_clone().unwrap());
    let mut idle = connect(addr);
    assert_eq!(ask(&busy, &mut reader, "before\n"), "before\n");
    server.line("client ");
    server.line("client ");

    let pid = libc::pid_t::try_from(server.child.0.id()).unwrap();
    // SAFETY: kill with a valid signal number only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let signalled = Instant::now();
    assert!(server.line("SIGTERM: ").contains("2 connection(s) open"));

    match TcpStream::connect(addr) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionRefused),
        Ok(_) => panic!("a new client was accepted after SIGTERM"),
    }
    // The open connection is still served during the grace period.
    assert_eq!(ask(&busy, &mut reader, "during\n"), "during\n");
    busy.shutdown(Shutdown::Write).unwrap();
    // The idle one is cut off at the end of it: end of stream, not before.
    let mut buf = [0u8; 8];
    assert_eq!(idle.read(&mut buf).unwrap(), 0);
    let waited = signalled.elapsed();
    assert!(
        waited >= Duration::from_millis(400),
        "cut off early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(5), "cut off late: {waited:?}");
    let last = server.line("stopped after ");
    assert!(
        last.ends_with("1 connection(s) finished in time, 1 cancelled"),
        "{last}"
    );
    assert!(server.wait().success());
}

/// Chapter 11: a task as the middle stage of `seq | filter | sort -rn`
/// passes exactly the multiples through, the children exit cleanly, and a
/// ticker runs meanwhile.
#[test]
fn ch11_pipeline_filters_between_two_children() {
    if Command::new("seq").arg("1").output().is_err()
        || Command::new("sort").arg("--version").output().is_err()
    {
        eprintln!("skipped: no seq or sort on this machine");
        return;
    }
    let (n, d) = (100_000u64, 7u64);
    let out = example::run(
        "exercise_ch11_pipeline",
        &["--n", &n.to_string(), "--divisor", &d.to_string()],
    );
    out.assert_success();
    let multiples: Vec<u64> = (1..=n).rev().filter(|x| x % d == 0).collect();
    let top: Vec<String> = multiples[..3].iter().map(u64::to_string).collect();
    let lines = out.lines();
    assert_eq!(
        lines[..3],
        [
            format!(
                "filter: read {n} numbers from seq, passed {} multiples of {d} to sort",
                multiples.len()
            ),
            format!(
                "sort gave back {} lines, largest first: {}; their sum {}",
                multiples.len(),
                top.join(", "),
                multiples.iter().sum::<u64>()
            ),
            "seq exited with 0, sort with 0".to_string(),
        ]
    );
    let ticks: u32 = lines[3]
        .strip_prefix("the ticker ticked ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(ticks >= 1, "the ticker ran while the pipeline did: {out}");
}

/// Chapter 12: a pipe rung by another thread, waited on through
/// `PausingIo`, pauses only the waiting task (the ticker ticks through
/// the wait); read in blocking mode, the same pipe stops the whole thread
/// (the ticker never runs while the bell is awaited).
#[test]
fn ch12_doorbell_pauses_only_its_task() {
    /// The number after `prefix` on the line that starts with it.
    fn figure(out: &example::Output, prefix: &str) -> u64 {
        out.lines()
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no line {prefix:?}: {out}"))
    }
    let args = ["--rings", "6", "--interval-ms", "25"];
    let out = example::run("exercise_ch12_doorbell", &args);
    out.assert_success();
    let rings: Vec<&str> = out
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("ring "))
        .collect();
    assert_eq!(rings.len(), 6, "{out}");
    assert_eq!(figure(&out, "rings: "), 6, "{out}");
    // The wait lasts at least 6 × 25 ms; a 1 ms ticker that is not held up
    // ticks dozens of times in it, even on a loaded machine.
    let ticks = figure(&out, "ticker while waiting: ");
    assert!(ticks >= 10, "the ticker was held up: {out}");

    let out = example::run(
        "exercise_ch12_doorbell",
        &[&args[..], &["--blocking"]].concat(),
    );
    out.assert_success();
    assert_eq!(figure(&out, "rings: "), 6, "{out}");
    assert_eq!(
        figure(&out, "ticker while waiting: "),
        0,
        "a blocking read let the ticker run: {out}"
    );
}
