//! The Databases section: Redis and PostgreSQL round trips from a task by
//! each route, and a ticker's gaps while tasks wait on the database; and
//! their rows of the Targets table.

use std::fmt::Write as _;

use crate::bound::{row, Bound};
use crate::data::{cell, num, stat, Rec, Stat};

/// The databases, as `db=` names them, with their titles.
pub const DBS: [(&str, &str); 2] = [
    ("redis", "Redis `GET`"),
    ("postgres", "PostgreSQL `SELECT 1`"),
];
/// The databases' names in the ticker's table and targets.
fn short(db: &str) -> &'static str {
    match db {
        "redis" => "Redis `BLPOP`",
        _ => "PostgreSQL `pg_sleep`",
    }
}

/// The routes both benchmarks run, as `route=` names them, with what each
/// is.
pub const ROUTES: [(&str, &str); 5] = [
    ("native", "native recipe, in the task"),
    ("on_tokio", "tokio client through `on_tokio`"),
    (
        "on_tokio_mt",
        "the same, `on_tokio`'s runtime sized to 1 worker per CPU",
    ),
    ("blocking", "sync client through `spawn_blocking`"),
    ("tokio", "tokio client on plain tokio (yardstick)"),
];
/// The on_tokio hop's yardstick, a route of the round trips only: tokio's
/// own hop from one runtime to another.
const HOP_YARDSTICK: (&str, &str) = (
    "tokio_hop",
    "tokio client on a second tokio runtime, from plain tokio (the hop's yardstick)",
);
/// The most an on_tokio hop may cost per query (µs of CPU).
pub const HOP_LIMIT_US: f64 = 15.0;
/// The longest gap the ticker may see (ms).
pub const GAP_LIMIT_MS: f64 = 5.0;

/// The ticker's priorities (`variant=`), with their titles.
pub const VARIANTS: [(&str, &str); 2] = [("normal", "normal"), ("rt", "realtime (`chrt -f 50`)")];

/// The successful records of one cell (at normal priority unless
/// `variant` says otherwise), and the reason of its first failure.
fn pick<'a>(
    recs: &'a [Rec],
    kind: &str,
    db: &str,
    route: &str,
    variant: &str,
) -> (Vec<&'a Rec>, Option<String>) {
    let variant_of = |r: &Rec| match r.s("variant") {
        "" => "normal".to_string(),
        v => v.to_string(),
    };
    let mine: Vec<&Rec> = recs
        .iter()
        .filter(|r| {
            r.s("kind") == kind
                && r.s("db") == db
                && r.s("route") == route
                && variant_of(r) == variant
        })
        .collect();
    let failure = mine
        .iter()
        .find(|r| !r.ok())
        .map(|r| r.reason.clone().unwrap_or_else(|| "failed".into()));
    (mine.into_iter().filter(|r| r.ok()).collect(), failure)
}

fn col(ok: &[&Rec], k: &str) -> Option<Stat> {
    stat(ok.iter().map(|r| r.f(k)).collect())
}

/// The median of field `k` over the successful runs of a cell.
fn med(recs: &[Rec], kind: &str, db: &str, route: &str, k: &str) -> Option<f64> {
    col(&pick(recs, kind, db, route, "normal").0, k).map(|s| s.med)
}

/// What a hop costs per query: the median of `route` (on_tokio, or
/// tokio_hop for tokio's own) minus the plain tokio route's, for field
/// `k`.
fn hop(recs: &[Rec], db: &str, route: &str, k: &str) -> Option<f64> {
    Some(med(recs, "roundtrip", db, route, k)? - med(recs, "roundtrip", db, "tokio", k)?)
}

/// The interleaved comparison of `route` with its yardstick for `db`, with
/// the server placed as `place` says (`one`: on the client's core;
/// `split`: on another): its record, or why it failed.
fn pairs<'a>(
    recs: &'a [Rec],
    db: &str,
    route: &str,
    place: &str,
) -> Option<Result<&'a Rec, String>> {
    match pick(recs, "pairs", db, route, place) {
        (ok, _) if !ok.is_empty() => Some(Ok(ok[0])),
        (_, failure) => failure.map(Err),
    }
}

/// The server placements of the interleaved comparison, with their titles.
const PLACES: [(&str, &str); 2] = [("one", "the client's core"), ("split", "the other core")];

/// A table's failed cells, a line each, then a blank line (nothing when
/// none failed).
fn failed(w: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(w, "- failed: {n}");
    }
    if !notes.is_empty() {
        let _ = writeln!(w);
    }
}

/// Why a database was skipped, if it was.
fn skipped(recs: &[Rec], db: &str) -> Option<String> {
    recs.iter()
        .find(|r| r.s("db") == db && r.s("skipped") == "1")
        .map(|r| r.reason.clone().unwrap_or_else(|| "skipped".into()))
}

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Databases from a task\n");
    if !m("stages").split_whitespace().any(|s| s == "db") {
        let _ = writeln!(w, "Not run in this run (stage `db`).\n");
        return;
    }
    let _ = writeln!(
        w,
        "A task's routes to a database, against a redis-server ({}) and a \
         PostgreSQL ({}) of the run's own, each on 127.0.0.1 beside the client \
         (nothing pinned). **native**: the recipes' clients on yieldloop's own \
         sockets, in the task (`yieldloop_redis`, `yieldloop_postgres`). \
         **on_tokio**: redis's tokio client (`MultiplexedConnection`) and tokio-postgres's \
         own `connect`, each query one `yieldloop::on_tokio` call onto the shared \
         tokio runtime ({}), so that the client's connection task and the callers' \
         futures share one tokio thread; **on_tokio_mt**: the same with that runtime \
         sized to one worker per CPU (`yieldloop::tokio_runtime`), tokio's own default. \
         **blocking**: the synchronous \
         clients (`redis::Connection`, the `postgres` crate), each query one \
         `yieldloop::spawn_blocking` call. **tokio**: the same tokio clients on a plain \
         tokio `current_thread` runtime, without yieldloop: the yardstick. \
         redis-server runs with `--hz 100`, so that it notices a blocked client's \
         timeout within 10 ms (at its default 10 Hz, a 200 ms `BLPOP` returns after up to 300 ms).\n",
        m("db_redis"),
        m("db_postgres"),
        match m("db_tokio_workers").as_str() {
            "default" | "?" | "" => "its default: one worker".to_string(),
            "1" => "1 worker, `DB_TOKIO_WORKERS=1`".to_string(),
            n => format!("{n} workers, `DB_TOKIO_WORKERS={n}`"),
        },
    );
    for (db, _) in DBS {
        if let Some(why) = skipped(recs, db) {
            let _ = writeln!(w, "{db}: skipped, {why}.\n");
        }
    }

    let _ = writeln!(
        w,
        "### Round trips: per query, median (min–max) over runs\n"
    );
    let _ = writeln!(
        w,
        "One connection, one query after another: Redis `GET` of a 16-byte value, \
         PostgreSQL a `SELECT 1` prepared once. {} warm-up queries, then {} timed one by \
         one; CPU is the client process's user + system time over the timed queries \
         (`getrusage`, every thread: the scheduler, tokio's workers, the blocking pool), \
         divided by their number. The servers' own CPU is not counted. {} runs per cell, \
         the routes taken in turn in one order and then in the opposite one. Nothing is \
         pinned, and where the kernel puts the client relative to the server moves a \
         run's CPU per query by up to half (see the interleaved comparison below).\n",
        m("db_warmup"),
        m("db_n"),
        m("db_rt_reps"),
    );
    let _ = writeln!(
        w,
        "| database | route | wall (µs) | CPU (µs) | user (µs) | system (µs) | p50 (µs) | p99 (µs) | runs |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut notes = Vec::new();
    for (db, title) in DBS {
        if skipped(recs, db).is_some() {
            continue;
        }
        for (route, what) in ROUTES.into_iter().chain([HOP_YARDSTICK]) {
            let (ok, failure) = pick(recs, "roundtrip", db, route, "normal");
            if let Some(f) = &failure {
                notes.push(format!("{db} {route}: {f}"));
            }
            let c = |k| cell(col(&ok, k));
            let _ = writeln!(
                w,
                "| {title} | {route}: {what} | {} | {} | {} | {} | {} | {} | {} |",
                c("wall_us"),
                c("cpu_us"),
                c("user_us"),
                c("sys_us"),
                c("p50_us"),
                c("p99_us"),
                ok.len()
            );
        }
    }
    let _ = writeln!(w);
    for (db, title) in DBS {
        for route in ["on_tokio", "on_tokio_mt", HOP_YARDSTICK.0] {
            if let (Some(cpu), Some(wall)) = (
                hop(recs, db, route, "cpu_us"),
                hop(recs, db, route, "wall_us"),
            ) {
                let _ = writeln!(
                    w,
                    "{title}: the `{route}` hop ({route} minus plain tokio, medians) costs \
                     {} µs of CPU and {} µs of wall time per query.\n",
                    num(cpu),
                    num(wall)
                );
            }
        }
    }
    let _ = writeln!(
        w,
        "The hop is two thread wake-ups per query: the tokio worker that runs the future \
         and the caller's scheduler. With a worker per CPU (`on_tokio_mt`) it costs more: \
         the client's connection task and the caller's future may sit on different \
         workers, and tokio wakes idle workers to look for work, so each query wakes \
         more threads. **tokio_hop** is the same hop without yieldloop, tokio's own: a \
         task of a plain tokio `current_thread` runtime spawns each query onto a second \
         runtime, multi-thread with one worker (as `on_tokio`'s), where the client's \
         connection task also runs, and awaits the join handle. It makes the same \
         system calls per query as `on_tokio` (`strace -c`), so what is left between \
         the two is user-space work and where the kernel happens to put the threads.\n"
    );
    failed(w, &notes);
    interleaved(w, recs, m);

    let _ = writeln!(
        w,
        "### A 1 ms ticker while {} tasks wait on the database\n",
        m("db_tasks")
    );
    let _ = writeln!(
        w,
        "{} tasks, each on a connection of its own, send at once one query that the \
         server answers after {} ms: Redis `BLPOP` of an empty list with that timeout, \
         PostgreSQL `SELECT pg_sleep(..)`. Beside them a ticker sleeps 1 ms in a loop \
         (on the tokio route: a tokio task on `tokio::time::interval(1 ms)`, missed ticks \
         delayed), and records the time between its wake-ups from just before the \
         waits start until the last one is done. An untimed round of the same waits \
         runs first. Gaps in ms, median (min–max) over {} runs; a route keeps the \
         thread free when its longest gap stays within {} ms. On a shared machine \
         other processes' load alone makes gaps of several ms, so the runs are also made \
         at realtime priority (`chrt -f 50`, `SCHED_FIFO`, inherited by every thread of \
         the process) where that works: {}. The servers share the cores with the \
         client, and PostgreSQL runs a process per connection: when 50 of them wake at \
         once, a client thread at normal priority waits its turn among them \
         (`max_gap_end_ms` in the raw results says when the longest gap ended).\n",
        m("db_tasks"),
        m("db_wait_ms"),
        m("db_reps"),
        num(GAP_LIMIT_MS),
        if m("lateness_rt") == "yes" {
            "it did on this run".to_string()
        } else {
            format!("not on this run, {}", m("lateness_rt"))
        },
    );
    let _ = writeln!(
        w,
        "| database | route | priority | longest gap | p99 gap | p50 gap | waits (ms) | runs |\n\
         |---|---|---|---:|---:|---:|---:|---:|"
    );
    let mut notes = Vec::new();
    for (db, _) in DBS {
        if skipped(recs, db).is_some() {
            continue;
        }
        let title = short(db);
        for (variant, prio) in VARIANTS {
            for (route, _) in ROUTES {
                let (ok, failure) = pick(recs, "ticker", db, route, variant);
                if variant != "normal" && ok.is_empty() && failure.is_none() {
                    continue;
                }
                if let Some(f) = &failure {
                    notes.push(format!("{db} {route} ({variant}): {f}"));
                }
                let waits = match (col(&ok, "wait_min_ms"), col(&ok, "wait_max_ms")) {
                    (Some(lo), Some(hi)) => format!("{}–{}", num(lo.min), num(hi.max)),
                    _ => "—".into(),
                };
                let c = |k| cell(col(&ok, k));
                let _ = writeln!(
                    w,
                    "| {title} | {route} | {prio} | {} | {} | {} | {waits} | {} |",
                    c("max_gap_ms"),
                    c("p99_gap_ms"),
                    c("p50_gap_ms"),
                    ok.len()
                );
            }
        }
    }
    let _ = writeln!(w);
    failed(w, &notes);
}

/// The interleaved comparisons: the native route with tokio's own client,
/// and on_tokio with tokio's own hop.
fn interleaved(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(
        w,
        "### Interleaved: the native route against tokio's own client, on_tokio against tokio's own hop\n"
    );
    let _ = writeln!(
        w,
        "Run by run, the figures above move with where the kernel puts the client: \
         on the server's core, each wake-up is a plain switch on that core; on the \
         other, it is a wake-up across cores, which on this machine costs the client \
         about twice the CPU per query. Which one a run gets is chance, so a route's \
         median over a few runs can land in either. Here both clients run in one \
         process (`db_roundtrip --vs`), each connected and warm on a thread of its \
         own, the process pinned to the first core, and take turns: a batch of {} \
         queries by one, then a batch by the other, the order swapped every pair, \
         {} pairs. The server is pinned as well (`taskset`; PostgreSQL's backend is \
         forked from the pinned postmaster): to the client's core, or to the other \
         one. CPU per query is the process's CPU time over a batch (`getrusage`) \
         divided by its queries; the ratio is native / tokio pair by pair, of which \
         the table gives the median and the middle half.\n",
        m("db_batch"),
        m("db_pairs"),
    );
    pair_table(w, recs, "native", "tokio");
    let _ = writeln!(
        w,
        "The `on_tokio` route against tokio's own hop between two runtimes (`tokio_hop`, \
         see above) is compared the same way: each hands every query to a multi-thread tokio \
         runtime of its own, sized alike, and waits for it, so this sets what yieldloop \
         does around the hop against what tokio does, in the same placement (every \
         client thread on the first core, where each hand-over is a switch on that \
         core).\n"
    );
    pair_table(w, recs, "on_tokio", "tokio_hop");
}

/// The table of one interleaved comparison, `route` against `vs`: a row
/// per database and server placement, and the failed cells.
fn pair_table(w: &mut String, recs: &[Rec], route: &str, vs: &str) {
    let _ = writeln!(
        w,
        "| database | server on | {route} (µs) | {vs} (µs) | {route} / {vs} | middle half | pairs with {route} cheaper |\n\
         |---|---|---:|---:|---:|---:|---:|"
    );
    let mut notes = Vec::new();
    for (db, title) in DBS {
        for (place, on) in PLACES {
            match pairs(recs, db, route, place) {
                None => {}
                Some(Err(why)) => notes.push(format!("{db} {route}, server on {on}: {why}")),
                Some(Ok(r)) => {
                    let _ = writeln!(
                        w,
                        "| {title} | {on} | {} | {} | {:.3} | {:.3}–{:.3} | {} of {} |",
                        num(r.f("cpu_us")),
                        num(r.f("vs_cpu_us")),
                        r.f("ratio"),
                        r.f("ratio_p25"),
                        r.f("ratio_p75"),
                        r.s("below"),
                        r.s("pairs"),
                    );
                }
            }
        }
    }
    let _ = writeln!(w);
    failed(w, &notes);
}

/// The rows this section adds to the Targets table: per database, client
/// CPU per query of the native route against tokio's own client (from
/// the interleaved comparison with the server on the client's core, or,
/// without it, the round trips' medians), the on_tokio hop, and the
/// ticker's longest gap on the worst route (at normal priority, like every
/// other target).
pub fn target_rows(w: &mut String, recs: &[Rec]) {
    for (db, title) in DBS {
        let cpu = |route| med(recs, "roundtrip", db, route, "cpu_us");
        match pairs(recs, db, "native", "one") {
            Some(Ok(r)) => row(
                w,
                &format!(
                    "{title}: client CPU per query, native recipe (interleaved, server on the client's core)"
                ),
                Some(r.f("cpu_us")),
                "µs",
                Bound::Paired {
                    name: "tokio's own client",
                    theirs: r.f("vs_cpu_us"),
                    ratio: r.f("ratio"),
                    max: 1.0,
                },
            ),
            _ => row(
                w,
                &format!("{title}: client CPU per query, native recipe"),
                cpu("native"),
                "µs",
                Bound::Ratio("tokio's own client", cpu("tokio"), 1.0),
            ),
        }
        row(
            w,
            &format!("{title}: the `on_tokio` hop, CPU per query (on_tokio − tokio)"),
            hop(recs, db, "on_tokio", "cpu_us"),
            "µs",
            Bound::Limit {
                limit: HOP_LIMIT_US,
                name: "tokio's own hop (tokio_hop − tokio)",
                theirs: hop(recs, db, HOP_YARDSTICK.0, "cpu_us"),
            },
        );
        // The worst route's median; "not measured" unless every route ran.
        let gaps: Vec<(&str, Option<f64>)> = ROUTES
            .iter()
            .map(|(route, _)| (*route, med(recs, "ticker", db, route, "max_gap_ms")))
            .collect();
        let worst = gaps
            .iter()
            .map(|(r, g)| g.map(|g| (*r, g)))
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)));
        let what = format!(
            "{}: a 1 ms ticker's longest gap while tasks wait, every route{}",
            short(db),
            worst.map_or(String::new(), |(route, _)| format!(" (worst: {route})"))
        );
        row(
            w,
            &what,
            worst.map(|(_, g)| g),
            "ms",
            Bound::fixed(GAP_LIMIT_MS),
        );
    }
}
