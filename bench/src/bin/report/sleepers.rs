//! The Sleepers section: N tasks each sleep one second, all joined.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::data::{cell, num, stat, thousands, FirstTouch, Rec, Stat};
use crate::peers::NOT_MEASURED_GO;

pub const NS: [u64; 5] = [1, 1_000, 10_000, 100_000, 1_000_000];
pub const RUNTIMES: [&str; 7] = [
    "yieldloop",
    "floor",
    "tokio",
    "may",
    "go",
    "threads",
    "asyncio",
];

/// Runs with fewer minor page faults than this are never called cold: they
/// touch under 200 MiB or so, where cold memory costs a fraction of a second
/// at most and system time is too coarse a measure.
const COLD_MIN_FAULTS: f64 = 50_000.0;

/// The statistics of one runtime at one N. The time and memory figures are
/// over the warm runs (every successful run not marked cold); the system
/// time and fault figures over every successful run, cold ones included.
pub struct SleeperCell {
    pub wall: Option<Stat>,
    pub over_ms: Option<Stat>,
    pub spawn_ms: Option<Stat>,
    pub hwm_mib: Option<Stat>,
    pub maps: Option<Stat>,
    pub failure: Option<String>,
    pub tried: bool,
    /// Successful runs, and how many of them were marked cold.
    pub runs: usize,
    pub cold: usize,
    /// System time per minor page fault (µs), every successful run.
    pub sys_us_per_fault: Option<Stat>,
    /// Minor page faults (thousands), every successful run.
    pub faults_k: Option<Stat>,
    /// System time per fault of the cold runs alone, and the threshold above
    /// which a run of this cell counts as cold.
    pub cold_us: Option<Stat>,
    pub threshold_us: Option<f64>,
}

/// Whether [`mark_cold`] marked the run cold.
fn is_cold(r: &Rec) -> bool {
    r.s("cold") == "1"
}

/// System time per minor page fault of a run (µs), when it has enough
/// faults to tell.
fn sys_us_per_fault(r: &Rec) -> Option<f64> {
    let (faults, sys) = (r.f("minflt"), r.f("stime_s"));
    (faults >= COLD_MIN_FAULTS && sys.is_finite()).then(|| sys * 1e6 / faults)
}

/// Marks the runs that were served cold memory (`cold=1`, and the cell's
/// threshold as `cold_threshold_us`), so that [`sleeper_cell`] leaves them
/// out of the medians.
///
/// What a run costs in system time per page fault is its runtime's own
/// (a warm fault, plus whatever else the runtime asks of the kernel) plus,
/// for every cold fault, what a cold fault costs more on this machine (the
/// first-touch measurement's cold minus warm, `extra`). Each runtime's own
/// figure is taken from its best run at that N (the warm-up run included);
/// a run more than `extra / 4` above it had, by that measure, more than a
/// quarter of its faults cold, enough to lengthen a million-task run by a
/// second or more, and is marked. Nothing is marked without a first-touch
/// measurement, or where it found cold memory less than twice as dear.
pub fn mark_cold(recs: &mut [Rec], warmup: &[Rec], ft: Option<&FirstTouch>) {
    let Some(extra) = ft.and_then(FirstTouch::extra_us) else {
        return;
    };
    let cells: BTreeSet<(String, String)> = recs
        .iter()
        .map(|r| (r.s("runtime").to_string(), r.s("n").to_string()))
        .collect();
    for (rt, n) in cells {
        let same = |r: &Rec| r.ok() && r.s("runtime") == rt && r.s("n") == n;
        let base = recs
            .iter()
            .chain(warmup)
            .filter(|r| same(r))
            .filter_map(sys_us_per_fault)
            .fold(f64::INFINITY, f64::min);
        if !base.is_finite() {
            continue;
        }
        let threshold = base + extra / 4.0;
        for r in recs.iter_mut().filter(|r| same(r)) {
            if sys_us_per_fault(r).is_some_and(|p| p > threshold) {
                r.fields.insert("cold".into(), "1".into());
            }
            r.fields
                .insert("cold_threshold_us".into(), format!("{threshold}"));
        }
    }
}

pub fn sleeper_cell(recs: &[Rec], rt: &str, n: u64) -> SleeperCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("n") == n.to_string())
        .collect();
    let all_ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let cold = all_ok.iter().filter(|r| is_cold(r)).count();
    let ok: Vec<&&Rec> = if cold < all_ok.len() {
        all_ok.iter().copied().filter(|r| !is_cold(r)).collect()
    } else {
        all_ok.clone()
    };
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
    let col_all = |f: &dyn Fn(&Rec) -> f64| stat(all_ok.iter().map(|r| f(r)).collect());
    SleeperCell {
        wall: col(&|r| r.f("wall_s")),
        over_ms: col(&|r| (r.f("wall_s") - 1.0) * 1e3),
        spawn_ms: col(&|r| r.f("spawn_s") * 1e3),
        hwm_mib: col(&|r| r.f("hwm_kb") / 1024.0),
        maps: col(&|r| r.f("maps")),
        failure: mine
            .iter()
            .find(|r| !r.ok())
            .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into())),
        tried: !mine.is_empty(),
        runs: all_ok.len(),
        cold,
        sys_us_per_fault: col_all(&|r| sys_us_per_fault(r).unwrap_or(f64::NAN)),
        faults_k: col_all(&|r| r.f("minflt") / 1e3),
        cold_us: stat(
            all_ok
                .iter()
                .filter(|r| is_cold(r))
                .filter_map(|r| sys_us_per_fault(r))
                .collect(),
        ),
        threshold_us: all_ok
            .iter()
            .find_map(|r| r.s("cold_threshold_us").parse().ok()),
    }
}

pub fn runtimes_present(recs: &[Rec]) -> Vec<&'static str> {
    RUNTIMES
        .iter()
        .copied()
        .filter(|rt| recs.iter().any(|r| r.s("runtime") == *rt))
        .collect()
}

/// (VmHWM(N) − VmHWM(1)) / N at every N, from the medians.
pub fn per_task_at_each_n(w: &mut String, recs: &[Rec], rts: &[&str], go_missing: bool) {
    let _ = writeln!(w, "### Resident memory per task at each N (bytes)\n");
    let _ = writeln!(
        w,
        "(VmHWM at N − VmHWM at N = 1) / N, from the medians; the fixed cost of each \
         runtime weighs on the small N.\n"
    );
    let _ = write!(w, "| runtime |");
    for n in &NS[1..] {
        let _ = write!(w, " N = {} |", thousands(*n));
    }
    let _ = writeln!(w, "\n|---|{}", "---:|".repeat(NS.len() - 1));
    for &rt in rts {
        let base = sleeper_cell(recs, rt, 1).hwm_mib;
        let _ = write!(w, "| {rt} |");
        for &n in &NS[1..] {
            let c = sleeper_cell(recs, rt, n);
            let text = match (base, c.hwm_mib) {
                (Some(b), Some(t)) => num((t.med - b.med) * 1024.0 * 1024.0 / n as f64),
                _ if rt == "go" && go_missing => NOT_MEASURED_GO.into(),
                _ if c.failure.is_some() => "failed".into(),
                _ if c.tried => "—".into(),
                _ => "not run".into(),
            };
            let _ = write!(w, " {text} |");
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
}

/// Cells where some tasks finished before the last one was started (the
/// `early=` field, which only Go reports: its scheduler preempts the
/// spawning goroutine), so the peak memory there is not that of N tasks at
/// once.
pub fn early_finish_notes(w: &mut String, recs: &[Rec], rts: &[&str]) {
    let mut notes = Vec::new();
    for &rt in rts {
        for n in NS {
            let early = stat(
                recs.iter()
                    .filter(|r| r.ok() && r.s("runtime") == rt && r.s("n") == n.to_string())
                    .filter(|r| r.fields.contains_key("early"))
                    .map(|r| r.f("early"))
                    .collect(),
            );
            if let Some(e) = early.filter(|e| e.max > 0.0) {
                notes.push(format!(
                    "{rt} at N = {}: {} of the tasks (median; {}–{}) had already finished",
                    thousands(n),
                    thousands(e.med as u64),
                    thousands(e.min as u64),
                    thousands(e.max as u64),
                ));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "**Not all N at once.** Go preempts the spawning goroutine (about every 10 ms) \
         and runs the new goroutines in between, so where spawning takes longer than \
         the one-second sleep, the first goroutines finish, and their stacks are \
         reused, before the last ones are started: {}. There the peak memory is that of \
         fewer than N goroutines at once, and the bytes per task above are too low by \
         about that share. The other runtimes start no task before the spawning loop \
         ends.\n",
        notes.join("; "),
    );
}

/// How to read the large cells: the runtime's cost against the machine's
/// cost of memory, and what the run did about the latter.
fn reading_note(
    w: &mut String,
    sleepers: &[Rec],
    meta: &BTreeMap<String, String>,
    ft: Option<&FirstTouch>,
) {
    let Some(ft) = ft else {
        return;
    };
    let gib = RUNTIMES
        .iter()
        .filter_map(|rt| sleeper_cell(sleepers, rt, 1_000_000).hwm_mib)
        .map(|s| s.med / 1024.0)
        .fold(0.0, f64::max);
    let _ = write!(
        w,
        "**How to read the large cells.** A run's time is the runtime's own work plus \
         what the machine charges for the memory the run touches. "
    );
    if ft.extra_us().is_some() {
        let _ = write!(
            w,
            "Here the second part is not fixed: the first touch of memory costs {} s per \
             GiB when the host no longer backs it and {} s per GiB when it still does \
             (see Machine). ",
            num(ft.cold_s_per_gib),
            num(ft.warm_s_per_gib),
        );
        if gib > 0.0 {
            let _ = write!(
                w,
                "At N = 1,000,000 the hungriest runtime holds {} GiB, so served cold \
                 memory the same run could take up to about {} s longer, for reasons that \
                 have nothing to do with the runtime. ",
                num(gib),
                num(gib * (ft.cold_s_per_gib - ft.warm_s_per_gib)),
            );
        }
    } else {
        let _ = write!(
            w,
            "On a virtual machine the second part need not be fixed: where the host takes \
             back memory the guest leaves free, touching it again costs several times \
             more (see Machine, whose measurement did not catch it in this run). "
        );
    }
    if meta.get("warmup").is_some_and(|v| v == "1") {
        let _ = write!(
            w,
            "So every N ≥ 100,000 starts with a discarded warm-up run of each runtime \
             (asyncio only up to 100,000){}. ",
            if meta.get("pretouch").is_some_and(|v| v == "1") {
                ", and every measured run there follows a pre-touch of as much memory as \
                 the hungriest warm-up run held, freed just before the run starts"
            } else {
                ""
            }
        );
    }
    match ft.extra_us() {
        Some(extra) => {
            let _ = writeln!(
                w,
                "Each run's system time and minor page faults are recorded (by `rusage`, \
                 from `wait4`); a run whose system time per fault lies more than a quarter \
                 of a cold fault's extra cost ({} µs of the {} measured) above the best run \
                 of its cell (warm-up included) had more than a quarter of its faults \
                 served cold: it is marked †, left out of the medians, the plot and the \
                 targets, and listed under the first table. What remains compares the \
                 runtimes rather than the state of the host's memory; the spread left is \
                 the shared machine's CPU (see the load averages).\n",
                num(extra / 4.0),
                num(extra),
            );
        }
        None => {
            let _ = writeln!(
                w,
                "Each run's system time and minor page faults are recorded, but this run's \
                 first-touch measurement found cold memory less than twice as dear as warm, \
                 too close to tell cold runs from warm ones: no run is marked cold.\n"
            );
        }
    }
}

/// The cells with runs left out as cold, under the first table.
fn cold_notes(w: &mut String, sleepers: &[Rec], rts: &[&str]) {
    let mut notes = Vec::new();
    for &rt in rts {
        for n in NS {
            let c = sleeper_cell(sleepers, rt, n);
            if c.cold == 0 {
                continue;
            }
            let fig = match (c.cold_us, c.threshold_us) {
                (Some(u), Some(t)) => format!(
                    " (system time per fault {} µs, the threshold {} µs)",
                    num(u.med),
                    num(t)
                ),
                _ => String::new(),
            };
            let what = if c.cold < c.runs {
                "excluded"
            } else {
                "kept, no warm run to take instead"
            };
            notes.push(format!(
                "{rt} at N = {}: {} of {} runs cold, {what}{fig}",
                thousands(n),
                c.cold,
                c.runs
            ));
        }
    }
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "† Runs served cold memory (see above), left out of the medians of this \
         section: {}.\n",
        notes.join("; ")
    );
}

/// The Sleepers section: the tables of every runtime at every N.
pub fn section(
    w: &mut String,
    sleepers: &[Rec],
    meta: &BTreeMap<String, String>,
    ft: Option<&FirstTouch>,
    go_missing: Option<&str>,
    svg_rel: &str,
) {
    let m = |k: &str| meta.get(k).map_or("?", String::as_str);
    let mut rts = runtimes_present(sleepers);
    if go_missing.is_some() && !rts.contains(&"go") {
        rts = RUNTIMES
            .iter()
            .copied()
            .filter(|rt| *rt == "go" || rts.contains(rt))
            .collect();
    }
    let _ = writeln!(w, "## Sleepers\n");
    let _ = writeln!(
        w,
        "The workload of the generators article: N tasks each sleep one second and \
         then return a pseudo-random number; all are joined. Each runtime runs on one \
         thread (tokio `current_thread`, may with `set_workers(1)` and everything spawned \
         from inside one coroutine, yieldloop's single scheduler); `threads` is one OS \
         thread per task (only up to N = 10,000); `asyncio` is CPython's event loop with \
         `asyncio.create_task` + `gather`; `floor` and `go` are described above. \
         Every measurement is a separate process. Runs \
         per cell: {} for N ≤ 10,000, {} for 100,000, {} for 1,000,000 ({} for asyncio, \
         the slowest there); a cell that fails once is not repeated. The runtimes take \
         turns within each repetition, and the order rotates by one place from one \
         repetition to the next, so each goes first as often as the others.\n",
        m("reps"),
        m("reps_100k"),
        m("reps_1m"),
        m("reps_1m_asyncio"),
    );
    reading_note(w, sleepers, meta, ft);
    // The two halves around the plot are included by docs/src/benchmarks.md,
    // which shows the plot with the book's own path.
    let _ = writeln!(
        w,
        "<!-- ANCHOR_END: before-plot -->\n![time vs N]({svg_rel})\n<!-- ANCHOR: after-plot -->\n"
    );

    let mut footnotes: Vec<String> = Vec::new();
    // `warm`: the figure is over the warm runs, and a cell with cold runs
    // left out carries the mark †.
    let table = |w: &mut String,
                 title: &str,
                 what: &dyn Fn(&SleeperCell) -> Option<Stat>,
                 warm: bool,
                 footnotes: &mut Vec<String>| {
        if !title.is_empty() {
            let _ = writeln!(w, "### {title}\n");
        }
        let _ = write!(w, "| runtime |");
        for n in NS {
            let _ = write!(w, " N = {} |", thousands(n));
        }
        let _ = writeln!(w, "\n|---|{}", "---:|".repeat(NS.len()));
        for &rt in &rts {
            let _ = write!(w, "| {rt} |");
            for n in NS {
                let c = sleeper_cell(sleepers, rt, n);
                let text = if let Some(s) = what(&c) {
                    if warm && c.cold > 0 && c.cold < c.runs {
                        format!("{} †", cell(Some(s)))
                    } else {
                        cell(Some(s))
                    }
                } else if let Some(reason) = &c.failure {
                    let note = format!("{rt}, N = {}: {reason}", thousands(n));
                    let idx = match footnotes.iter().position(|f| *f == note) {
                        Some(i) => i + 1,
                        None => {
                            footnotes.push(note);
                            footnotes.len()
                        }
                    };
                    format!("failed [{idx}]")
                } else if c.tried {
                    "—".into()
                } else if rt == "go" && go_missing.is_some() {
                    NOT_MEASURED_GO.into()
                } else {
                    "not run".into()
                };
                let _ = write!(w, " {text} |");
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
    };
    table(
        w,
        "Overhead above the 1 s sleep (ms): median (min–max)",
        &|c| c.over_ms,
        true,
        &mut footnotes,
    );
    cold_notes(w, sleepers, &rts);
    table(
        w,
        "Wall time, first spawn to last join (s): median (min–max)",
        &|c| c.wall,
        true,
        &mut footnotes,
    );
    table(
        w,
        "Time spent spawning the N tasks (ms): median (min–max)",
        &|c| c.spawn_ms,
        true,
        &mut footnotes,
    );
    table(
        w,
        "Peak resident memory, VmHWM (MiB): median (min–max)",
        &|c| c.hwm_mib,
        true,
        &mut footnotes,
    );
    table(
        w,
        "Memory mappings at the peak (lines of /proc/self/maps): median (min–max)",
        &|c| c.maps,
        true,
        &mut footnotes,
    );
    if sleepers.iter().any(|r| r.fields.contains_key("minflt")) {
        table(
            w,
            "Minor page faults (thousands), every run: median (min–max)",
            &|c| c.faults_k,
            false,
            &mut footnotes,
        );
        let _ = writeln!(
            w,
            "### System time per minor page fault (µs), every run: median (min–max)\n\n\
             System time (`getrusage` of the process, from `wait4`) over its minor page \
             faults, for runs with at least {} faults; the cold runs are the high ones. \
             Against the first-touch figures of the Machine section, this is where a \
             runtime's cost and the machine's part ways.\n",
            thousands(COLD_MIN_FAULTS as u64),
        );
        table(w, "", &|c| c.sys_us_per_fault, false, &mut footnotes);
    }

    // Bytes per task from the largest N that worked.
    let _ = writeln!(w, "### Resident memory per task\n");
    let _ = writeln!(
        w,
        "(VmHWM at the largest N that completed − VmHWM at N = 1) / N, from the medians.\n"
    );
    let _ = writeln!(
        w,
        "| runtime | largest N | bytes per task |\n|---|---:|---:|"
    );
    for &rt in &rts {
        let base = sleeper_cell(sleepers, rt, 1).hwm_mib;
        let top = NS
            .iter()
            .rev()
            .filter(|&&n| n > 1)
            .find_map(|&n| sleeper_cell(sleepers, rt, n).hwm_mib.map(|s| (n, s)));
        if let (Some(b), Some((n, t))) = (base, top) {
            let per = (t.med - b.med) * 1024.0 * 1024.0 / n as f64;
            let _ = writeln!(w, "| {rt} | {} | {} |", thousands(n), num(per));
        } else if rt == "go" && go_missing.is_some() {
            let _ = writeln!(w, "| go | {NOT_MEASURED_GO} | |");
        }
    }
    let _ = writeln!(w);
    per_task_at_each_n(w, sleepers, &rts, go_missing.is_some());
    early_finish_notes(w, sleepers, &rts);
    if !footnotes.is_empty() {
        let _ = writeln!(w, "Failures (the last line the process printed):\n");
        for (i, f) in footnotes.iter().enumerate() {
            let _ = writeln!(w, "{}. {}", i + 1, f.replace('|', "\\|"));
        }
        let _ = writeln!(w);
        if footnotes
            .iter()
            .any(|f| f.contains("Cannot allocate memory"))
        {
            let _ = writeln!(
                w,
                "An `ENOMEM` from `mmap`/`mprotect` with most of the RAM free usually means the \
                 process reached `vm.max_map_count` ({}) mappings: compare the mapping counts \
                 above (a separately mapped stack with an `mprotect`-ed guard page costs two).\n",
                m("max_map_count"),
            );
        }
    }
}
