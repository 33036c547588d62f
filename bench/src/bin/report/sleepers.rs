//! The Sleepers section: N tasks each sleep one second, all joined.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::data::{cell, num, stat, thousands, Rec, Stat};
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

pub struct SleeperCell {
    pub wall: Option<Stat>,
    pub over_ms: Option<Stat>,
    pub spawn_ms: Option<Stat>,
    pub hwm_mib: Option<Stat>,
    pub maps: Option<Stat>,
    pub failure: Option<String>,
    pub tried: bool,
}

pub fn sleeper_cell(recs: &[Rec], rt: &str, n: u64) -> SleeperCell {
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.s("runtime") == rt && r.s("n") == n.to_string())
        .collect();
    let ok: Vec<&&Rec> = mine.iter().filter(|r| r.ok()).collect();
    let col = |f: &dyn Fn(&Rec) -> f64| stat(ok.iter().map(|r| f(r)).collect());
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

/// The Sleepers section: the tables of every runtime at every N.
pub fn section(
    w: &mut String,
    sleepers: &[Rec],
    meta: &BTreeMap<String, String>,
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
         the slowest there); a cell that fails once is not repeated.\n",
        m("reps"),
        m("reps_100k"),
        m("reps_1m"),
        m("reps_1m_asyncio"),
    );
    let _ = writeln!(w, "![time vs N]({svg_rel})\n");

    let mut footnotes: Vec<String> = Vec::new();
    let table = |w: &mut String,
                 title: &str,
                 what: &dyn Fn(&SleeperCell) -> Option<Stat>,
                 footnotes: &mut Vec<String>| {
        let _ = writeln!(w, "### {title}\n");
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
                    cell(Some(s))
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
        &mut footnotes,
    );
    table(
        w,
        "Wall time, first spawn to last join (s): median (min–max)",
        &|c| c.wall,
        &mut footnotes,
    );
    table(
        w,
        "Time spent spawning the N tasks (ms): median (min–max)",
        &|c| c.spawn_ms,
        &mut footnotes,
    );
    table(
        w,
        "Peak resident memory, VmHWM (MiB): median (min–max)",
        &|c| c.hwm_mib,
        &mut footnotes,
    );
    table(
        w,
        "Memory mappings at the peak (lines of /proc/self/maps): median (min–max)",
        &|c| c.maps,
        &mut footnotes,
    );

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
