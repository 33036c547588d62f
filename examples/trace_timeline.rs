//! Turns a scheduler trace into an SVG timeline: one lane per task, time
//! left to right.
//!
//! ```text
//! YIELDLOOP_TRACE=toy.trace cargo run --example toy_loop -- --scale 0.05
//! cargo run --example trace_timeline -- toy.trace toy.svg
//! cargo run --example trace_timeline -- toy.trace toy.svg --title "toy loop" --from 0.05 --to 0.06
//! ```
//!
//! The trace is the text `YIELDLOOP_TRACE` or `yieldloop::diag::trace_to_file`
//! writes (see `src/scheduler/trace.rs` for its format). Each task's lane shows what
//! it was doing at each moment:
//!
//! - **running**: between `resume` and its next `yield` or `end`;
//! - **ready, queued**: spawned or woken, waiting for its turn;
//! - **waiting on a timer**: after yielding `Wait(..)`;
//! - **waiting on a socket**: after `ReadReady`, `WriteReady` or `Accept`;
//! - **waiting on a task or a park**: after `Join(..)` or `Park(..)`.
//!
//! A top lane shows when the loop itself slept in the kernel (from `poll` to
//! `polled`), in a darker grey for the precise step of a two-step wait (a
//! `poll   precise` line: the timerfd ends the sleep) than for the others
//! (`coarse`, `direct`, `event`; see `src/reactor/wait.rs`). Running stretches are often a few microseconds, far less than
//! a pixel; they are drawn at least one pixel wide so that none disappears.
//! Hovering a segment in a browser shows its exact times.
//!
//! `--from S` and `--to S` cut the time axis to a window (seconds since the
//! trace started). The program prints one line per lane with the time spent
//! in each state. Traces of several schedulers (a multi-threaded
//! `Runtime`) mix their task numbers and are not supported.
//!
//! The SVG is written by hand: a few rectangles and lines need no plotting
//! library.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::process;

mod args;
use args::Args;

// ANCHOR: states
/// What a task is doing over a stretch of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum State {
    Running,
    Queued,
    Timer,
    Socket,
    JoinPark,
    /// The loop lane: blocked in the kernel, on the poll's own timeout
    /// (or none).
    Polling,
    /// The loop lane: blocked in the kernel until the precise timer fires.
    PollingPrecise,
}

impl State {
    /// All states, in legend order.
    const ALL: [State; 7] = [
        State::Running,
        State::Queued,
        State::Timer,
        State::Socket,
        State::JoinPark,
        State::Polling,
        State::PollingPrecise,
    ];

    fn label(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Queued => "ready, queued",
            State::Timer => "waiting on a timer",
            State::Socket => "waiting on a socket",
            State::JoinPark => "waiting on a task or a park",
            State::Polling => "loop asleep in the kernel",
            State::PollingPrecise => "loop asleep on the precise timer",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            State::Running => "#d1495b",
            State::Queued => "#edae49",
            State::Timer => "#66a182",
            State::Socket => "#00798c",
            State::JoinPark => "#8e7dbe",
            State::Polling => "#9aa5b1",
            State::PollingPrecise => "#4f5d6b",
        }
    }

    /// The state a task enters when it yields `op` (the text after `->`).
    fn after_yield(op: &str) -> State {
        if op.starts_with("Wait(") {
            State::Timer
        } else if op.starts_with("ReadReady(")
            || op.starts_with("WriteReady(")
            || op.starts_with("Accept(")
        {
            State::Socket
        } else if op.starts_with("Join(") || op.starts_with("Park(") {
            State::JoinPark
        } else {
            // `Yield`, and anything newer than this program: back in line.
            State::Queued
        }
    }

    /// The state the loop enters with `poll   STEP ...` (`rest` starts at
    /// the step). Older traces (`poll   sleep up to ...`) have no step.
    fn after_poll(rest: &str) -> State {
        match rest.split_whitespace().next() {
            Some("precise") => State::PollingPrecise,
            _ => State::Polling,
        }
    }
}
// ANCHOR_END: states

/// One stretch of one lane.
#[derive(Clone, Copy, Debug)]
struct Segment {
    from: f64,
    to: f64,
    state: State,
}

/// A lane: a task, or the loop itself.
#[derive(Debug, Default)]
struct Lane {
    label: String,
    /// The closed stretches, in time order.
    segments: Vec<Segment>,
    /// The state since `since`, while the lane is open.
    current: Option<(State, f64)>,
}

impl Lane {
    /// Closes the current stretch at `t` and opens `next` (or none).
    fn switch(&mut self, t: f64, next: Option<State>) {
        if let Some((state, since)) = self.current.take() {
            if t > since || state == State::Running {
                self.segments.push(Segment {
                    from: since,
                    to: t.max(since),
                    state,
                });
            }
        }
        self.current = next.map(|s| (s, t));
    }
}

/// Everything read from a trace.
#[derive(Debug, Default)]
struct Timeline {
    /// The loop lane.
    kernel: Lane,
    /// Task lanes by task number.
    tasks: BTreeMap<u64, Lane>,
    /// The time of the last line.
    end: f64,
    /// How many trace lines were understood.
    lines: usize,
}

// ANCHOR: parse
/// Parses `[   0.000123] event rest`, returning (time, event, rest).
fn split_line(line: &str) -> Option<(f64, &str, &str)> {
    let rest = line.strip_prefix('[')?;
    let (time, rest) = rest.split_once(']')?;
    let t = time.trim().parse().ok()?;
    let rest = rest.trim_start();
    let (event, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    Some((t, event, rest.trim_start()))
}

/// Parses `task 3 "name" …`: the number, the name if any, and what follows.
fn task_ref(text: &str) -> Option<(u64, Option<String>, &str)> {
    let rest = text.strip_prefix("task ")?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let id = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    let Some(quoted) = rest.strip_prefix(" \"") else {
        return Some((id, None, rest.trim_start()));
    };
    // The name is printed with Rust's `{:?}`: undo \" and \\ escapes.
    let mut name = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    name.push(e);
                }
            }
            '"' => return Some((id, Some(name), quoted[i + 1..].trim_start())),
            c => name.push(c),
        }
    }
    None
}

impl Timeline {
    fn parse(text: &str) -> Timeline {
        let mut tl = Timeline {
            kernel: Lane {
                label: "loop".to_string(),
                ..Lane::default()
            },
            ..Timeline::default()
        };
        for line in text.lines() {
            let Some((t, event, rest)) = split_line(line) else {
                continue;
            };
            tl.lines += 1;
            tl.end = tl.end.max(t);
            match event {
                // `poll   STEP ...`: the step says what ends the sleep.
                "poll" => tl.kernel.switch(t, Some(State::after_poll(rest))),
                "polled" => tl.kernel.switch(t, None),
                _ => tl.task_event(t, event, rest),
            }
        }
        let end = tl.end;
        tl.kernel.switch(end, None);
        for lane in tl.tasks.values_mut() {
            lane.switch(end, None);
        }
        tl
    }

    /// Applies one task event (spawn, resume, yield, wake, end, cancel).
    fn task_event(&mut self, t: f64, event: &str, rest: &str) {
        let Some((id, name, after)) = task_ref(rest) else {
            return;
        };
        let lane = self.tasks.entry(id).or_default();
        if lane.label.is_empty() || name.is_some() {
            lane.label = match name {
                Some(n) => format!("task {id} {n}"),
                None => format!("task {id}"),
            };
        }
        match event {
            "spawn" | "wake" => lane.switch(t, Some(State::Queued)),
            "resume" => lane.switch(t, Some(State::Running)),
            "yield" => {
                let op = after.trim_start_matches("->").trim_start();
                lane.switch(t, Some(State::after_yield(op)));
            }
            "end" | "cancel" => lane.switch(t, None),
            _ => {}
        }
    }
}
// ANCHOR_END: parse

/// Drawing settings.
struct Picture {
    title: String,
    /// The window of the time axis, in seconds since the trace started;
    /// `to` is NaN until it defaults to the trace's end.
    from: f64,
    to: f64,
    /// Width of the whole picture in pixels.
    width: f64,
}

const LABEL_W: f64 = 150.0;
const LANE_H: f64 = 20.0;
const LANE_GAP: f64 = 6.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 20.0;

/// Escapes text for SVG.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 times a power of ten giving about `want` ticks.
fn tick_step(span: f64, want: f64) -> f64 {
    let raw = span / want;
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow)
}

/// Formats a tick at `t` seconds for an axis with ticks `step` apart: in
/// microseconds, milliseconds or seconds, with as many decimals as the step
/// needs.
fn axis_label(t: f64, step: f64) -> String {
    let (scale, unit) = if step < 1e-4 {
        (1e6, "µs")
    } else if step < 0.1 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    };
    let decimals = (-(step * scale).log10().floor()).max(0.0) as usize;
    format!("{:.*} {unit}", decimals, t * scale)
}

// ANCHOR: render
fn render(tl: &Timeline, pic: &Picture) -> String {
    let lanes: Vec<&Lane> = std::iter::once(&tl.kernel)
        .chain(tl.tasks.values())
        .collect();
    let span = (pic.to - pic.from).max(1e-9);
    let plot_w = pic.width - LABEL_W - RIGHT;
    let x = |t: f64| LABEL_W + (t - pic.from) / span * plot_w;
    let lanes_h = lanes.len() as f64 * (LANE_H + LANE_GAP);
    let axis_y = TOP + lanes_h + 4.0;
    // The legend wraps onto as many rows as the width needs.
    let legend_w = |state: State| 18.0 + 6.8 * state.label().len() as f64 + 18.0;
    let mut legend_rows = 1.0;
    let mut row_w = 0.0;
    for state in State::ALL {
        if row_w + legend_w(state) > plot_w && row_w > 0.0 {
            legend_rows += 1.0;
            row_w = 0.0;
        }
        row_w += legend_w(state);
    }
    let legend_y = axis_y + 56.0;
    let height = legend_y + legend_rows * 20.0 + 4.0;

    let mut svg = String::new();
    let w = pic.width;
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{height:.0}" viewBox="0 0 {w:.0} {height:.0}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(
        svg,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="24" font-size="15" font-weight="bold">{}</text>"##,
        LABEL_W,
        xml(&pic.title)
    );

    // Grid and axis.
    let step = tick_step(span, 8.0);
    let mut tick = (pic.from / step).ceil() * step;
    while tick <= pic.to + step * 1e-6 {
        let tx = x(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{tx:.1}" y1="{TOP:.1}" x2="{tx:.1}" y2="{axis_y:.1}" stroke="#e3e3e3"/>"##
        );
        let _ = writeln!(
            svg,
            r##"<text x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            axis_y + 16.0,
            axis_label(tick, step)
        );
        tick += step;
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LABEL_W:.1}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#333333"/>"##,
        LABEL_W + plot_w
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555555">time since the trace started</text>"##,
        LABEL_W + plot_w,
        axis_y + 32.0
    );

    // Lanes.
    for (i, lane) in lanes.iter().enumerate() {
        let y = TOP + i as f64 * (LANE_H + LANE_GAP);
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LABEL_W - 8.0,
            y + LANE_H * 0.7,
            xml(&lane.label)
        );
        let _ = writeln!(
            svg,
            r##"<rect x="{LABEL_W:.1}" y="{y:.1}" width="{plot_w:.1}" height="{LANE_H:.1}" fill="#f7f7f7"/>"##
        );
        // Waits first, running on top, so a 1-pixel run is never covered.
        let mut segments: Vec<&Segment> = lane
            .segments
            .iter()
            .filter(|s| s.to >= pic.from && s.from <= pic.to)
            .collect();
        segments.sort_by_key(|s| s.state == State::Running);
        for s in segments {
            let (x0, x1) = (x(s.from.max(pic.from)), x(s.to.min(pic.to)));
            let width = (x1 - x0).max(1.0);
            let _ = writeln!(
                svg,
                r##"<rect x="{x0:.2}" y="{y:.1}" width="{width:.2}" height="{LANE_H:.1}" fill="{}"><title>{}: {} {:.6}–{:.6} s</title></rect>"##,
                s.state.colour(),
                xml(&lane.label),
                s.state.label(),
                s.from,
                s.to
            );
        }
    }

    // Legend.
    let (mut lx, mut ly) = (LABEL_W, legend_y);
    for state in State::ALL {
        if lx + legend_w(state) > LABEL_W + plot_w && lx > LABEL_W {
            lx = LABEL_W;
            ly += 20.0;
        }
        let _ = writeln!(
            svg,
            r##"<rect x="{lx:.1}" y="{:.1}" width="14" height="14" fill="{}"/>"##,
            ly - 11.0,
            state.colour()
        );
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{ly:.1}">{}</text>"##,
            lx + 18.0,
            state.label()
        );
        lx += legend_w(state);
    }
    svg.push_str("</svg>\n");
    svg
}
// ANCHOR_END: render

/// The time a lane spent in each state, for the text summary.
fn totals(lane: &Lane) -> String {
    let mut sums: BTreeMap<State, f64> = BTreeMap::new();
    for s in &lane.segments {
        *sums.entry(s.state).or_default() += s.to - s.from;
    }
    sums.iter()
        .map(|(state, secs)| format!("{} {:.3} ms", state.label(), secs * 1e3))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let mut args = Args::new(
        "trace_timeline TRACE OUT.svg [--title TEXT] [--from SECS] [--to SECS] [--width PX]",
    );
    let mut pic = Picture {
        title: args.value_or("--title", String::new()),
        from: args.value_in("--from", 0.0, 0.0..=1e6),
        to: args.value("--to").unwrap_or(f64::NAN),
        width: args.value_in("--width", 1000.0, 400.0..=10_000.0),
    };
    let (Some(input), Some(output)) = (
        args.positional::<String>("TRACE"),
        args.positional::<String>("OUT.svg"),
    ) else {
        args.fail("give a trace file and an output file");
    };
    args.finish();
    let text = fs::read_to_string(&input).unwrap_or_else(|e| {
        eprintln!("trace_timeline: {input}: {e}");
        process::exit(1);
    });
    let tl = Timeline::parse(&text);
    if tl.lines == 0 {
        eprintln!("trace_timeline: {input}: no trace lines");
        process::exit(1);
    }
    if pic.to.is_nan() {
        pic.to = tl.end;
    }
    if pic.to <= pic.from {
        args.fail("the window is empty");
    }
    if pic.title.is_empty() {
        pic.title = format!("Scheduler timeline: {input}");
    }
    if let Err(e) = fs::write(&output, render(&tl, &pic)) {
        eprintln!("trace_timeline: {output}: {e}");
        process::exit(1);
    }
    println!(
        "{} trace lines, {} tasks, {:.6} s -> {output}",
        tl.lines,
        tl.tasks.len(),
        tl.end
    );
    println!("loop: {}", totals(&tl.kernel));
    for lane in tl.tasks.values() {
        println!("{}: {}", lane.label, totals(lane));
    }
}
