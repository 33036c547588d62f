//! The section on a mutex shared between two worker threads
//! (`xmutex.txt`, from bench/src/bin/xmutex.rs and `gobench xmutex`).

use std::fmt::Write as _;

use crate::data::{num, stat, Rec};
use crate::handover::table;

pub const XMUTEX_RUNTIMES: [&str; 3] = ["yieldloop", "tokio", "go"];
/// (bench key, row title, what one op is).
pub const XMUTEX_BENCHES: [(&str, &str, &str); 3] = [
    (
        "contended",
        "contended mutex, 4 tasks on 2 workers",
        "one acquisition",
    ),
    (
        "uncontended",
        "uncontended lock + unlock, cross-thread mutex",
        "one lock and unlock",
    ),
    (
        "uncontended_local",
        "uncontended lock + unlock, single-thread mutex",
        "one lock and unlock",
    ),
];

pub fn section(w: &mut String, recs: &[Rec], m: &dyn Fn(&str) -> String) {
    let _ = writeln!(w, "## Mutex across threads\n");
    let _ = writeln!(
        w,
        "A lock shared between two worker threads. Every measurement is a separate \
         process (`xmutex --runtime RT --bench B`; Go: `gobench xmutex` with \
         `GOMAXPROCS=2`) that runs a warm-up round of a tenth of the ops and then the \
         measured round; {} runs per cell, interleaved.\n\n\
         - **contended**: four tasks, two on each of two worker threads, each loop: \
         take the lock, add one, yield while holding it (so the other task of its \
         worker queues on it), release it; per acquisition. yieldloop `sync::Mutex` on a \
         `Runtime` of two workers (`spawn_on`, two tasks each), whose FIFO hand-over \
         wakes the queued task, often on the other worker; tokio `sync::Mutex` (also \
         FIFO) on a multi-thread runtime of two workers; Go `sync.Mutex` with \
         `runtime.Gosched` (a running goroutine may take a just-released lock ahead of \
         queued ones). The share of acquisitions that found the lock taken is below \
         the table.\n\
         - **uncontended, cross-thread mutex**: one task takes and releases a lock \
         nobody else uses; per lock and unlock. yieldloop `sync::Mutex` (one \
         compare-and-swap each way), tokio `sync::Mutex`, Go `sync.Mutex`.\n\
         - **uncontended, single-thread mutex**: the same with yieldloop's \
         `sync::local::Mutex`: the difference to the row above is the price of a lock \
         that can cross threads.\n",
        m("handover_reps"),
    );
    table(w, recs, &XMUTEX_RUNTIMES, &XMUTEX_BENCHES, m);
    let waited: Vec<String> = XMUTEX_RUNTIMES
        .iter()
        .filter_map(|rt| {
            let shares = recs
                .iter()
                .filter(|r| r.ok() && r.s("runtime") == *rt && r.s("bench") == "contended")
                .map(|r| r.f("waited"))
                .filter(|v| v.is_finite())
                .collect();
            stat(shares).map(|s| format!("{rt} {}", num(s.med)))
        })
        .collect();
    if !waited.is_empty() {
        let _ = writeln!(
            w,
            "Share of contended acquisitions that waited (median): {}.\n",
            waited.join(", ")
        );
    }
}
