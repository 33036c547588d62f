//! The Go and the stackful floor section: how the two yardsticks of the
//! stackful design were run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What a cell says for Go when the go tool was missing (or its build failed).
pub const NOT_MEASURED_GO: &str = "not measured: go missing";

/// Why Go was not measured, if it was not: the `go=` line of meta.txt is
/// `missing (reason)`, or absent for results from before Go was added.
pub fn go_missing(meta: &BTreeMap<String, String>) -> Option<String> {
    match meta.get("go") {
        Some(v) => v.strip_prefix("missing").map(|why| {
            why.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string()
        }),
        None => Some("the results have no Go line".into()),
    }
}

/// How Go was run, and what the stackful floor is.
pub fn section(w: &mut String, meta: &BTreeMap<String, String>) {
    let _ = writeln!(w, "## Go and the stackful floor\n");
    match go_missing(meta) {
        None => {
            let _ = writeln!(
                w,
                "**Go** ({}) is the stackful peer: goroutines are small growable stacks \
                 scheduled by Go's runtime. `bench/go/` holds one program, standard library \
                 only, built with `go build` and run with `GOMAXPROCS=1` (one P, for parity \
                 with the one scheduler thread of the others; the Go runtime still keeps \
                 threads of its own for timers, the garbage collector and blocking system \
                 calls, and their CPU time is counted). It does the same workloads with the \
                 same output: the sleepers (`time.Sleep`, joined with a `sync.WaitGroup`, the \
                 numbers in a slice), the echo server (a goroutine per connection, driven by \
                 the same `loadgen`) and the hand-over benchmarks (channels, `sync.Mutex`, \
                 `runtime.Gosched`, `go` statements).\n",
                meta.get("go").map_or("?", String::as_str),
            );
        }
        Some(why) => {
            let _ = writeln!(
                w,
                "**Go**, the stackful peer, was not measured in this run: {why}. \
                 `bench/run.sh` builds `bench/go/` with `go build` when the go tool is \
                 installed (`apt-get install golang-go`) and runs it with `GOMAXPROCS=1`; \
                 its cells say \"{NOT_MEASURED_GO}\".\n"
            );
        }
    }
    let _ = writeln!(
        w,
        "**floor** (`bench/src/bin/sleepers_floor.rs`, sleepers only) is the least any \
         design that gives each task a stack of its own pays on this machine: no runtime, \
         just `corosensei` coroutines in a slab, a binary heap of deadlines and a loop \
         that sleeps with `thread::sleep` until the earliest one. Each coroutine has a \
         guarded stack of yieldloop's default size (64 KiB) from a pool carved like \
         yieldloop's (16 MiB `MAP_NORESERVE` chunks, a guard page below each stack, \
         stacks reused), sleeps by yielding its deadline to the loop, then returns its \
         number. What it costs is mostly the stack: the first touch of its top page (the \
         coroutine's first frame) is a page fault, at least 4 KiB resident per task. The \
         distance from yieldloop to the floor is what yieldloop's runtime adds.\n"
    );
}
