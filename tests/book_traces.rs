//! The traces the book shows, held to what the book says about them.
//!
//! The chapters quote numbers from the traces in `docs/src/traces/` (how
//! many times the loop polled, in which steps, which task ended when). Next
//! to each such sentence, an HTML comment states the numbers for this test:
//!
//! ```text
//! <!-- trace-check: toy_loop polls=6 coarse=3 precise=3 -->
//! <!-- trace-check: toy_loop portable polls=3 direct=3 -->
//! ```
//!
//! The first checks the committed `toy_loop.trace`; the second, marked
//! `portable`, checks a fresh run under `--features portable`. Values are
//! an exact number, `A±B` (a number within B of A) or `<X`. The tests here
//! check the committed traces against those comments, check that every
//! poll in them follows the rules of the two-step wait the book describes,
//! and run the programs afresh to check that today's code still produces
//! traces of the committed shape (the timings may differ).
//!
//! `scripts/timelines.sh` runs the `committed_*` tests after regenerating
//! each trace, and runs the program again while they fail (a busy machine
//! can wake the loop late enough to change the shape).

mod util;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use util::example;

/// Deadlines further off than this take the coarse step first (the book
/// says 5 ms, in chapter 3 and "Reading the trace").
const PRECISE_WITHIN_S: f64 = 0.005;
/// The coarse step's timeout ends this much before the deadline (2 ms).
const MARGIN_S: f64 = 0.002;
/// Slack for the six decimals of the trace's numbers.
const ROUNDING_S: f64 = 0.000_002;
/// Fresh runs tried before a shape difference counts as a failure: a busy
/// machine can wake the loop late, which changes a run's shape.
const FRESH_TRIES: usize = 5;

// ---------------------------------------------------------------------------
// Reading a trace.
// ---------------------------------------------------------------------------

/// One line of a trace.
#[derive(Clone, Debug, PartialEq)]
enum Line {
    /// `spawn`, `resume`, `yield`, `wake`, `end`, `cancel`: `event`, the
    /// task number, and the rest with numbers taken out (`Wait(in 0.05s)`
    /// becomes `Wait`, a peer address goes).
    Task {
        t: f64,
        event: String,
        task: u64,
        what: String,
    },
    /// `poll STEP ...`.
    Poll {
        t: f64,
        step: String,
        timeout: Option<f64>,
        epoll_ms: Option<u64>,
        timerfd: Option<f64>,
        /// `timerfd set` (armed by this poll), not `timerfd left`.
        timerfd_set: bool,
        deadline_in: Option<f64>,
    },
    /// `polled slept D, K event(s)[, how]`.
    Polled {
        t: f64,
        slept: f64,
        events: usize,
        ended: String,
    },
}

impl Line {
    fn time(&self) -> f64 {
        match self {
            Line::Task { t, .. } | Line::Poll { t, .. } | Line::Polled { t, .. } => *t,
        }
    }
}

/// `0.049990s` → 0.04999.
fn seconds(text: &str) -> Option<f64> {
    text.trim().strip_suffix('s')?.parse().ok()
}

/// The number after `key ` in a comma-separated clause list.
fn clause<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    rest.split(", ")
        .find_map(|c| c.trim().strip_prefix(key))
        .map(str::trim)
}

/// What a task line says, with its numbers taken out.
fn task_detail(event: &str, after: &str) -> String {
    let after = after.trim();
    match event {
        "yield" => {
            let op = after.trim_start_matches("->").trim();
            op.split('(').next().unwrap_or(op).to_string()
        }
        "resume" => {
            let v = after.trim_start_matches("with").trim();
            v.split('(').next().unwrap_or(v).to_string()
        }
        // `by timer`, `by task 1`: the cause.
        _ => after.to_string(),
    }
}

fn parse_line(line: &str) -> Option<Line> {
    let rest = line.strip_prefix('[')?;
    let (time, rest) = rest.split_once(']')?;
    let t: f64 = time.trim().parse().ok()?;
    let rest = rest.trim_start();
    let (event, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let rest = rest.trim_start();
    match event {
        "poll" => {
            let (step, rest) = rest.split_once(' ').unwrap_or((rest, ""));
            let timeout = clause(rest, "timeout ").map(|v| {
                let v = v.split(" (").next().unwrap_or(v);
                seconds(v).unwrap_or_else(|| panic!("odd timeout in {line:?}"))
            });
            let epoll_ms = rest
                .split_once("(epoll ")
                .and_then(|(_, ms)| ms.split(' ').next())
                .and_then(|ms| ms.parse().ok());
            let timerfd = clause(rest, "timerfd ").map(|v| {
                let v = v.split_once(' ').map_or(v, |(_, v)| v);
                seconds(v).unwrap_or_else(|| panic!("odd timerfd in {line:?}"))
            });
            let timerfd_set = clause(rest, "timerfd ").is_some_and(|v| v.starts_with("set "));
            let deadline_in = clause(rest, "deadline in ")
                .map(|v| seconds(v).unwrap_or_else(|| panic!("odd deadline in {line:?}")));
            Some(Line::Poll {
                t,
                step: step.to_string(),
                timeout,
                epoll_ms,
                timerfd,
                timerfd_set,
                deadline_in,
            })
        }
        "polled" => {
            let slept = clause(rest, "slept ").and_then(seconds)?;
            let events = rest
                .split(", ")
                .nth(1)?
                .strip_suffix(" event(s)")?
                .parse()
                .ok()?;
            let ended = rest.split(", ").nth(2).unwrap_or("").to_string();
            Some(Line::Polled {
                t,
                slept,
                events,
                ended,
            })
        }
        _ => {
            let after = rest.strip_prefix("task ")?;
            let digits = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            let task = after[..digits].parse().ok()?;
            let mut after = after[digits..].trim_start();
            // Skip the quoted name, if any (`{:?}`: \" inside).
            if let Some(q) = after.strip_prefix('"') {
                let mut escaped = false;
                let end = q
                    .char_indices()
                    .find(|&(_, c)| {
                        let close = c == '"' && !escaped;
                        escaped = c == '\\' && !escaped;
                        close
                    })
                    .map(|(i, _)| i)?;
                after = q[end + 1..].trim_start();
            }
            Some(Line::Task {
                t,
                event: event.to_string(),
                task,
                what: task_detail(event, after),
            })
        }
    }
}

/// A parsed trace.
#[derive(Debug)]
struct Trace {
    lines: Vec<Line>,
    /// The text, for failure messages.
    text: String,
}

impl Trace {
    fn parse(text: &str) -> Trace {
        Trace {
            lines: text.lines().filter_map(parse_line).collect(),
            text: text.to_string(),
        }
    }

    fn read(path: &Path) -> Trace {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let trace = Trace::parse(&text);
        assert!(
            !trace.lines.is_empty(),
            "{}: no trace lines",
            path.display()
        );
        trace
    }

    fn polls(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| matches!(l, Line::Poll { .. }))
    }

    /// The numbers a `trace-check` comment can state.
    fn measure(&self, key: &str) -> Option<Measure> {
        let count = |f: &dyn Fn(&Line) -> bool| {
            Measure::Number(self.lines.iter().filter(|l| f(l)).count() as f64)
        };
        let task_event = |ev: &'static str, w: &'static str| move |l: &Line| matches!(l, Line::Task { event, what, .. } if event == ev && (w.is_empty() || what == w));
        Some(match key {
            "polls" => count(&|l| matches!(l, Line::Poll { .. })),
            "coarse" | "precise" | "direct" | "now" | "event" => {
                count(&|l| matches!(l, Line::Poll { step, .. } if step == key))
            }
            "timer-wakes" => count(&task_event("wake", "by timer")),
            "socket-wakes" => count(&task_event("wake", "by socket")),
            "tasks" => count(&task_event("spawn", "")),
            "yields" => count(&task_event("yield", "Yield")),
            "ends" => Measure::Text(
                self.lines
                    .iter()
                    .filter_map(|l| match l {
                        Line::Task { event, task, .. } if event == "end" => Some(task.to_string()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            "span-ms" => {
                let first = self.lines.first()?.time();
                let last = self.lines.last()?.time();
                Measure::Number((last - first) * 1e3)
            }
            "running-ms" => {
                let mut since: BTreeMap<u64, f64> = BTreeMap::new();
                let mut total = 0.0;
                for l in &self.lines {
                    if let Line::Task { t, event, task, .. } = l {
                        match event.as_str() {
                            "resume" => {
                                since.insert(*task, *t);
                            }
                            "yield" | "end" => {
                                if let Some(s) = since.remove(task) {
                                    total += t - s;
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Measure::Number(total * 1e3)
            }
            "timerfd-sets" => count(&|l| {
                matches!(
                    l,
                    Line::Poll {
                        timerfd_set: true,
                        ..
                    }
                )
            }),
            "first-epoll-ms" => Measure::Number(self.polls().find_map(|l| match l {
                Line::Poll { epoll_ms, .. } => *epoll_ms,
                _ => None,
            })? as f64),
            "first-deadline-ms" => Measure::Number(
                self.polls().find_map(|l| match l {
                    Line::Poll { deadline_in, .. } => *deadline_in,
                    _ => None,
                })? * 1e3,
            ),
            // The longest time from the end of a coarse step to the next
            // poll: the turn the extra wake-up costs.
            "between-steps-ms" => {
                let mut most: f64 = 0.0;
                for (i, l) in self.lines.iter().enumerate() {
                    if !matches!(l, Line::Poll { step, .. } if step == "coarse") {
                        continue;
                    }
                    let end = self.lines.get(i + 1).map(Line::time);
                    let next = self.lines[i + 1..].iter().skip(1).find_map(|l| match l {
                        Line::Poll { t, .. } => Some(*t),
                        _ => None,
                    });
                    if let (Some(end), Some(next)) = (end, next) {
                        most = most.max(next - end);
                    }
                }
                Measure::Number(most * 1e3)
            }
            // From the first hand-over (`-> Yield`) to the end.
            "rally-polls" | "rally-ms" => {
                let from = self.lines.iter().position(
                    |l| matches!(l, Line::Task { event, what, .. } if event == "yield" && what == "Yield"),
                )?;
                if key == "rally-polls" {
                    let n = self.lines[from..]
                        .iter()
                        .filter(|l| matches!(l, Line::Poll { .. }))
                        .count();
                    Measure::Number(n as f64)
                } else {
                    let last = self.lines.last()?.time();
                    Measure::Number((last - self.lines[from].time()) * 1e3)
                }
            }
            "precise-max-ms" => Measure::Number(
                self.polls()
                    .filter_map(|l| match l {
                        Line::Poll {
                            step,
                            timerfd: Some(fd),
                            ..
                        } if step == "precise" => Some(fd * 1e3),
                        _ => None,
                    })
                    .fold(0.0, f64::max),
            ),
            _ => return None,
        })
    }

    /// The shape of the run: the task events in order (numbers taken out)
    /// and the step of each poll. A coarse step that a late wake-up carried
    /// past its deadline stands for both steps, coarse and precise, as it
    /// would have been on an idle machine; `late` counts those.
    fn shape(&self, with_polls: bool) -> (Vec<String>, usize) {
        let mut out = Vec::new();
        let mut late = 0;
        for (i, l) in self.lines.iter().enumerate() {
            match l {
                Line::Task {
                    event, task, what, ..
                } => out.push(format!("{event} task {task} {what}")),
                Line::Poll {
                    step, deadline_in, ..
                } if with_polls => {
                    out.push(format!("poll {step}"));
                    if step == "coarse" && self.next_poll_step(i).as_deref() != Some("precise") {
                        if let (Some(Line::Polled { slept, .. }), Some(d)) =
                            (self.lines.get(i + 1), deadline_in)
                        {
                            if *slept + ROUNDING_S >= *d {
                                out.push("poll precise".to_string());
                                late += 1;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        (out, late)
    }

    /// The step of the first poll after line `i`, if no task event comes
    /// between.
    fn next_poll_step(&self, i: usize) -> Option<String> {
        self.lines[i + 1..].iter().find_map(|l| match l {
            Line::Poll { step, .. } => Some(Some(step.clone())),
            Line::Task { .. } => Some(None),
            Line::Polled { .. } => None,
        })?
    }
}

/// A number or a text measured in a trace.
#[derive(Debug, PartialEq)]
enum Measure {
    Number(f64),
    Text(String),
}

/// Checks every poll against the rules of the wait (see `src/reactor/wait.rs`
/// and chapter 3): what the loop asked of the kernel, not when the kernel
/// answered. Returns the broken rules. With `portable` (a fresh run of a
/// portable build), the two Linux steps are broken rules too.
fn wait_rules(trace: &Trace, portable: bool) -> Vec<String> {
    let mut broken = Vec::new();
    let lines = &trace.lines;
    for (i, l) in lines.iter().enumerate() {
        let Line::Poll {
            step,
            timeout,
            epoll_ms,
            timerfd,
            deadline_in,
            ..
        } = l
        else {
            continue;
        };
        let mut bad = |why: &str| broken.push(format!("line {} ({l:?}): {why}", i + 1));
        let Some(Line::Polled { .. }) = lines.get(i + 1) else {
            bad("no `polled` line right after it");
            continue;
        };
        if let (Some(t), Some(ms)) = (timeout, epoll_ms) {
            if (*ms as f64) < t * 1e3 - 1e-3 || (*ms as f64) > t * 1e3 + 1.0 + 1e-3 {
                bad("epoll's milliseconds are not the timeout rounded up");
            }
        }
        match (step.as_str(), *deadline_in) {
            ("now", None) if *timeout == Some(0.0) => {}
            ("event", None) if timeout.is_none() => {}
            ("coarse", Some(d)) if !portable => {
                if d <= PRECISE_WITHIN_S {
                    bad("coarse step for a near deadline");
                }
                match timeout {
                    Some(t) if (d - MARGIN_S - t).abs() <= ROUNDING_S => {}
                    _ => bad("coarse timeout is not the deadline less the margin"),
                }
            }
            ("precise", Some(d)) if !portable => {
                if d > PRECISE_WITHIN_S + ROUNDING_S {
                    bad("precise step for a far deadline");
                }
                if timeout.is_some() {
                    bad("precise step with a poll timeout");
                }
                match timerfd {
                    Some(fd) if *fd <= d + ROUNDING_S => {}
                    _ => bad("timer missing or set past the deadline"),
                }
            }
            ("direct", Some(d)) => match timeout {
                Some(t) if *t + ROUNDING_S >= d => {}
                _ => bad("direct timeout shorter than the time left"),
            },
            _ => bad("unknown step, or step and deadline do not go together here"),
        }
    }
    broken
}

// ---------------------------------------------------------------------------
// Reading what the book claims.
// ---------------------------------------------------------------------------

/// One `<!-- trace-check: ... -->` comment.
#[derive(Debug)]
struct Claim {
    /// Where it is, for messages.
    place: String,
    /// For a fresh run with `--features portable`, not the committed trace.
    portable: bool,
    /// `key`, and the expected value as written.
    checks: Vec<(String, String)>,
}

fn book_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src")
}

fn committed(name: &str) -> PathBuf {
    book_dir().join("traces").join(format!("{name}.trace"))
}

/// Every claim the book makes about trace `name`.
fn claims(name: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(book_dir())
        .expect("docs/src")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a chapter");
        for (no, line) in text.lines().enumerate() {
            // Only a comment that starts its line: one quoted in the text
            // (in backticks) is an example, not a claim.
            let Some(rest) = line.trim_start().strip_prefix("<!-- trace-check:") else {
                continue;
            };
            let body = rest.split("-->").next().unwrap_or(rest);
            let mut words = body.split_whitespace();
            if words.next() != Some(name) {
                continue;
            }
            let mut portable = false;
            let mut checks = Vec::new();
            for w in words {
                if w == "portable" {
                    portable = true;
                } else if let Some((k, v)) = w.split_once('=') {
                    checks.push((k.to_string(), v.to_string()));
                } else if let Some((k, v)) = w.split_once('<') {
                    checks.push((k.to_string(), format!("<{v}")));
                } else {
                    panic!("{}:{}: cannot read {w:?}", file.display(), no + 1);
                }
            }
            out.push(Claim {
                place: format!("{}:{}", file.display(), no + 1),
                portable,
                checks,
            });
        }
    }
    out
}

/// Does `got` satisfy `want` (`N`, `A±B`, `<X`, or a text)?
fn satisfies(got: &Measure, want: &str) -> bool {
    match got {
        Measure::Text(t) => t == want,
        Measure::Number(n) => {
            if let Some(x) = want.strip_prefix('<') {
                return x.parse().is_ok_and(|x: f64| *n < x);
            }
            if let Some((a, b)) = want.split_once('±') {
                return match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(a), Ok(b)) => (n - a).abs() <= b,
                    _ => false,
                };
            }
            want.parse::<f64>().is_ok_and(|w| (n - w).abs() < 1e-9)
        }
    }
}

/// Checks `trace` against the claims (portable ones or not) about `name`;
/// returns what does not hold.
fn check_claims(name: &str, trace: &Trace, portable: bool) -> Vec<String> {
    let claims: Vec<_> = claims(name)
        .into_iter()
        .filter(|c| c.portable == portable)
        .collect();
    let mut wrong = Vec::new();
    for claim in &claims {
        for (key, want) in &claim.checks {
            match trace.measure(key) {
                None => wrong.push(format!("{}: unknown key {key:?}", claim.place)),
                Some(got) if !satisfies(&got, want) => wrong.push(format!(
                    "{}: {key} should be {want}, is {got:?}",
                    claim.place
                )),
                Some(_) => {}
            }
        }
    }
    wrong
}

/// The claims about the committed trace `name` hold, and its polls follow
/// the rules.
fn check_committed(name: &str) {
    let trace = Trace::read(&committed(name));
    let stated = claims(name).into_iter().filter(|c| !c.portable).count();
    assert!(
        stated > 0,
        "the book states nothing about {name}.trace: no `trace-check` comment"
    );
    let mut wrong = check_claims(name, &trace, false);
    wrong.extend(wait_rules(&trace, false));
    assert!(
        wrong.is_empty(),
        "docs/src/traces/{name}.trace does not show what the book says:\n  {}\n\
         (run scripts/timelines.sh, and if it keeps failing, update the text and its \
         trace-check comment)",
        wrong.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// Running the programs afresh.
// ---------------------------------------------------------------------------

/// Do the programs run here take the portable path (one `direct` wait per
/// deadline) rather than the two Linux steps?
fn portable_build() -> bool {
    cfg!(feature = "portable") || !cfg!(target_os = "linux")
}

/// Runs example `name` with `args`, its trace in a temporary file; `via_env`
/// passes the file in `YIELDLOOP_TRACE`, else `--trace FILE` is added.
fn fresh_trace(name: &str, args: &[&str], via_env: bool) -> Trace {
    let path = std::env::temp_dir().join(format!(
        "yieldloop-book-{name}-{}-{:?}.trace",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut cmd = Command::new(example::path(name));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if via_env {
        cmd.env("YIELDLOOP_TRACE", &path);
    } else {
        cmd.arg("--trace").arg(&path);
    }
    let mut child = example::KillOnDrop(cmd.spawn().expect("starting the example"));
    let deadline = Instant::now() + example::TIMEOUT;
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("waiting for the example") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "{name} ran over {:?}",
            example::TIMEOUT
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success(), "{name} {args:?} failed: {status}");
    let trace = Trace::read(&path);
    let _ = std::fs::remove_file(&path);
    trace
}

/// The first line where two shapes part, with a little context.
fn first_difference(a: &[String], b: &[String]) -> String {
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let mut s = String::new();
    let _ = writeln!(s, "they part at item {i}:");
    for (side, v) in [("committed", a), ("fresh", b)] {
        let from = i.saturating_sub(2);
        let to = (i + 3).min(v.len());
        let _ = writeln!(s, "  {side}: {:?}", &v[from..to]);
    }
    s
}

/// Runs a program afresh (a few times if need be) and compares its shape,
/// polls included, with the committed trace's. With `--features portable`
/// the polls differ by design: then the task events must match, every poll
/// must follow the rules, and the claims marked `portable` must hold.
fn check_fresh(name: &str, args: &[&str], via_env: bool) {
    let committed = Trace::read(&committed(name));
    let portable = portable_build();
    let (want, committed_late) = committed.shape(!portable);
    assert_eq!(
        committed_late, 0,
        "the committed {name}.trace has a late coarse step; regenerate it"
    );
    let mut last = String::new();
    for attempt in 1..=FRESH_TRIES {
        let fresh = fresh_trace(name, args, via_env);
        let broken = wait_rules(&fresh, portable);
        assert!(
            broken.is_empty(),
            "fresh {name}: {}\n{}",
            broken.join("\n"),
            fresh.text
        );
        let (got, late) = fresh.shape(!portable);
        let mut wrong = Vec::new();
        if got != want {
            wrong.push(first_difference(&want, &got));
        }
        if portable {
            wrong.extend(check_claims(name, &fresh, true));
        }
        if wrong.is_empty() {
            if late > 0 {
                eprintln!(
                    "{name}: {late} coarse step(s) woken past the deadline, counted as both steps"
                );
            }
            return;
        }
        last = format!("attempt {attempt}: {}\n{}", wrong.join("\n"), fresh.text);
        eprintln!("{name}: fresh run {attempt} differs from the committed trace, trying again");
    }
    panic!(
        "{name}: no fresh run had the committed shape in {FRESH_TRIES} tries; the last:\n{last}"
    );
}

// ---------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------

/// Chapter 3's numbers (polls per step, the jobs' order) hold in
/// `toy_loop.trace`, and its polls follow the rules of the wait.
#[test]
fn committed_toy_loop_matches_ch03() {
    check_committed("toy_loop");
}

/// Chapter 4's numbers hold in `ping_pong.trace`.
#[test]
fn committed_ping_pong_matches_ch04() {
    check_committed("ping_pong");
}

/// Chapter 6's numbers hold in `echo.trace`.
#[test]
fn committed_echo_matches_ch06() {
    check_committed("echo");
}

/// `toy_loop --scale 0.05` run today has the committed trace's shape: the
/// same task events in the same order, the same polls in the same steps
/// (with `portable`: the task events, and the portable claims).
#[test]
fn fresh_toy_loop_has_the_committed_shape() {
    check_fresh("toy_loop", &["--scale", "0.05"], true);
}

/// `ping_pong --scale 0.02 --rounds 3` run today has the committed shape.
#[test]
fn fresh_ping_pong_has_the_committed_shape() {
    check_fresh("ping_pong", &["--scale", "0.02", "--rounds", "3"], true);
}

/// The echo run's interleaving depends on when the kernel delivers each
/// socket event, so only what does not is compared: the same tasks, each
/// ending, the same number of timer wake-ups, and polls that follow the
/// rules.
#[test]
fn fresh_echo_has_the_committed_tasks_and_timers() {
    let committed = Trace::read(&committed("echo"));
    let fresh = fresh_trace("walkthrough_06_echo_three_clients", &[], false);
    let broken = wait_rules(&fresh, portable_build());
    assert!(broken.is_empty(), "{}\n{}", broken.join("\n"), fresh.text);
    let spawns = |t: &Trace| {
        let mut v: Vec<String> = t
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Task {
                    event, task, what, ..
                } if event == "spawn" || event == "end" => Some(format!("{event} {task} {what}")),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(spawns(&fresh), spawns(&committed), "{}", fresh.text);
    for key in ["timer-wakes", "tasks"] {
        assert_eq!(
            fresh.measure(key),
            committed.measure(key),
            "{key}\n{}",
            fresh.text
        );
    }
}

/// The checks can fail: a trace with a poll in the wrong step, a claim
/// that does not hold, and a different shape are all caught.
#[test]
fn the_checks_catch_a_wrong_trace() {
    let good = "[   0.000100] yield  task 2 -> Wait(in 0.050000s)\n\
                [   0.000200] poll   coarse timeout 0.047900s (epoll 48 ms), deadline in 0.049900s\n\
                [   0.048300] polled slept 0.048100s, 0 event(s), timed out\n\
                [   0.048400] poll   precise no timeout, timerfd set 0.001700s, deadline in 0.001700s\n\
                [   0.050200] polled slept 0.001800s, 0 event(s), timerfd fired\n\
                [   0.050300] wake   task 2 by timer\n\
                [   0.050400] end    task 2\n";
    let t = Trace::parse(good);
    assert_eq!(wait_rules(&t, false), Vec::<String>::new());
    assert_eq!(
        wait_rules(&t, true).len(),
        2,
        "the two steps are not portable"
    );
    assert_eq!(t.measure("polls"), Some(Measure::Number(2.0)));
    assert!(satisfies(&t.measure("precise-max-ms").unwrap(), "<2"));
    assert!(!satisfies(&t.measure("polls").unwrap(), "3"));
    assert!(satisfies(&t.measure("span-ms").unwrap(), "50.3±0.1"));
    assert_eq!(t.measure("ends"), Some(Measure::Text("2".into())));
    // A coarse step for a deadline 3 ms off, and a timeout past the margin.
    let bad = good
        .replace("deadline in 0.049900s", "deadline in 0.003000s")
        .replace(
            "timeout 0.047900s (epoll 48 ms)",
            "timeout 0.002900s (epoll 48 ms)",
        );
    assert!(wait_rules(&Trace::parse(&bad), false).len() >= 2);
    // A coarse step carried past its deadline stands for both steps; one
    // that ended early without a precise step does not.
    let late = "[   0.000100] yield  task 2 -> Wait(in 0.050000s)\n\
                [   0.000200] poll   coarse timeout 0.047900s (epoll 48 ms), deadline in 0.049900s\n\
                [   0.050300] polled slept 0.050100s, 0 event(s), timed out\n\
                [   0.050300] wake   task 2 by timer\n\
                [   0.050400] end    task 2\n";
    let early = late.replace("slept 0.050100s", "slept 0.048100s");
    assert_eq!(Trace::parse(late).shape(true), (t.shape(true).0, 1));
    assert_ne!(Trace::parse(&early).shape(true).0, t.shape(true).0);
}
