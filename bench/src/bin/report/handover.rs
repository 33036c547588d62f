//! The Hand-over micro-benchmarks section.

use std::fmt::Write as _;

use crate::data::{cell, stat, thousands, Rec, Stat};
use crate::peers::NOT_MEASURED_GO;

pub const HANDOVER_RUNTIMES: [&str; 4] = ["yieldloop", "tokio", "may", "go"];
/// (bench key, row title, what one op is).
pub const HANDOVER_BENCHES: [(&str, &str, &str); 7] = [
    (
        "pingpong",
        "channel ping-pong (unbounded)",
        "one one-way hand-over",
    ),
    (
        "bounded",
        "bounded channel, capacity 64, 1 → 1",
        "one message",
    ),
    ("mutex", "mutex hand-over", "one hand-over of the lock"),
    ("yield", "yield between two tasks", "one `yield_now`"),
    (
        "spawn",
        "spawn + join a trivial task",
        "one spawn and its join",
    ),
    (
        "scope",
        "scope of 1,000 borrowing tasks",
        "one task of the scope",
    ),
    (
        "blockon",
        "`block_on` a future woken by another task",
        "one hand-over through a waker",
    ),
];

pub struct HandoverCell {
    pub ns: Option<Stat>,
    pub ops: Option<u64>,
    /// Why the runtime cannot do this benchmark.
    pub na: Option<String>,
    pub failure: Option<String>,
    pub tried: bool,
}

pub fn handover_cell(recs: &[Rec], rt: &str, bench: &str) -> HandoverCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("bench") == bench)
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok() && r.s("na") != "1").collect();
    HandoverCell {
        ns: stat(ok.iter().map(|r| r.f("ns_per_op")).collect()),
        ops: ok.iter().find_map(|r| r.s("ops").parse().ok()),
        na: mine
            .iter()
            .find(|r| r.ok() && r.s("na") == "1")
            .map(|r| r.reason.clone().unwrap_or_else(|| "not applicable".into())),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
    }
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Hand-over micro-benchmarks\n");
    let _ = writeln!(
        w,
        "How long each runtime takes to pass control (with a value or a lock) from \
         one task to another, all on one thread: yieldloop's scheduler, tokio \
         `current_thread`, may with `set_workers(1)` and everything spawned from inside \
         one coroutine, Go with `GOMAXPROCS=1` (see above). Every measurement is a separate process (`handover --runtime RT \
         --bench B`) that runs a warm-up round of a tenth of the ops and then the \
         measured round; {} runs per cell, interleaved. The benchmarks:\n",
        m("handover_reps"),
    );
    let _ = writeln!(
        w,
        "- **channel ping-pong**: task A sends `i` on one unbounded channel, task B \
         receives it and sends it back on a second one, A waits for the reply; per \
         one-way hand-over (a round trip is two). yieldloop `sync::local::channel`, tokio \
         `sync::mpsc::unbounded_channel`, may `sync::mpsc::channel`, Go two unbuffered \
         channels (so a send also waits for the receiver).\n\
         - **bounded channel**: a producer task sends 1,000,000 integers through a \
         channel of capacity 64 to a consumer task; per message. yieldloop \
         `sync::local::sync_channel(64)`, tokio `sync::mpsc::channel(64)`, Go \
         `make(chan uint64, 64)`.\n\
         - **mutex hand-over**: two tasks each loop: take the lock, yield while \
         holding it (so the other task queues on it), release it, which hands it to the \
         queued task; per hand-over (the yield is included). yieldloop `sync::local::Mutex`, \
         tokio `sync::Mutex`, may `sync::Mutex`, Go `sync.Mutex` with \
         `runtime.Gosched` (which lets the running goroutine take a just-released lock \
         ahead of the queued one, so not every op there is a hand-over).\n\
         - **yield**: two tasks each call `yield_now` in a loop (yieldloop \
         `yield_now`, tokio `task::yield_now`, may `coroutine::yield_now`, Go \
         `runtime.Gosched`); per yield.\n\
         - **spawn + join**: one task spawns a task that returns its argument and joins \
         it, one after the other; per spawn and join. Go: a `go` statement whose \
         goroutine sends its argument on a channel of its own (capacity 1), and the \
         receive.\n\
         - **scope**: a task runs 1,000 tasks that each add their argument to a counter \
         and waits for them all, over and over; per task. yieldloop `scope` (the tasks \
         borrow the counter), tokio a `JoinSet`, may `coroutine::scope`, Go 1,000 \
         `go` statements and a `sync.WaitGroup`.\n"
    );
    table(w, recs, &HANDOVER_RUNTIMES, &HANDOVER_BENCHES, m);
}

/// The table of nanoseconds per op of `benches` (key, row title, what one
/// op is) by `runtimes`, and its notes: the hand-over section's, and any
/// other stage's whose lines have the same fields.
pub fn table(
    w: &mut String,
    recs: &[Rec],
    runtimes: &[&str],
    benches: &[(&str, &str, &str)],
    m: &dyn Fn(&str) -> String,
) {
    let _ = writeln!(w, "### Nanoseconds per op: median (min–max)\n");
    let _ = write!(w, "| benchmark | one op is | ops per run |");
    for rt in runtimes {
        let _ = write!(w, " {rt} |");
    }
    let _ = writeln!(w, "\n|---|---|---:|{}", "---:|".repeat(runtimes.len()));
    let mut notes: Vec<String> = Vec::new();
    let mut note = |text: String| match notes.iter().position(|n| *n == text) {
        Some(i) => i + 1,
        None => {
            notes.push(text);
            notes.len()
        }
    };
    for &(bench, title, op) in benches {
        let cells: Vec<HandoverCell> = runtimes
            .iter()
            .map(|rt| handover_cell(recs, rt, bench))
            .collect();
        let ops = cells
            .iter()
            .find_map(|c| c.ops)
            .map_or_else(|| "—".to_string(), thousands);
        let _ = write!(w, "| {title} | {op} | {ops} |");
        for (rt, c) in runtimes.iter().zip(&cells) {
            let text = if let Some(s) = c.ns {
                cell(Some(s))
            } else if let Some(reason) = &c.na {
                format!("n/a [{}]", note(format!("{rt}, {title}: {reason}")))
            } else if let Some(reason) = &c.failure {
                format!("failed [{}]", note(format!("{rt}, {title}: {reason}")))
            } else if c.tried {
                "—".into()
            } else if *rt == "go" && m("go").starts_with("missing") {
                let why = m("go");
                let why = why.trim_start_matches("missing").trim();
                format!(
                    "not measured [{}]",
                    note(format!("go: {NOT_MEASURED_GO} {why}"))
                )
            } else {
                "not run".into()
            };
            let _ = write!(w, " {text} |");
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
    // yieldloop built with feature `tracing`, no subscriber installed.
    let traced: Vec<(&str, Stat, Stat)> = [("yield", "yield"), ("spawn", "spawn + join")]
        .into_iter()
        .filter_map(|(bench, title)| {
            let on = handover_cell(recs, "yieldloop-tracing", bench).ns?;
            let off = handover_cell(recs, "yieldloop", bench).ns?;
            Some((title, on, off))
        })
        .collect();
    if !traced.is_empty() {
        let _ = writeln!(
            w,
            "**Feature `tracing`, no subscriber.** The same benchmarks with yieldloop built \
             with `--features tracing` (`handover --runtime yieldloop --label \
             yieldloop-tracing`, from a build of its own), in the same rounds. With a \
             subscriber, a span per task, entered at each resume, and a `TRACE` event per \
             pause and resume; with none, the scheduler skips them all on one check per \
             turn, and what is left is the feature's code around them.\n"
        );
        let _ = writeln!(
            w,
            "| benchmark | without | with `tracing` | with / without |"
        );
        let _ = writeln!(w, "|---|---:|---:|---:|");
        for (title, on, off) in traced {
            let _ = writeln!(
                w,
                "| {title} | {} | {} | {:.3} |",
                cell(Some(off)),
                cell(Some(on)),
                on.med / off.med
            );
        }
        let _ = writeln!(w);
    }
    if !notes.is_empty() {
        let _ = writeln!(w, "Notes and failures:\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, n.replace('|', "\\|"));
        }
        let _ = writeln!(w);
    }
}
