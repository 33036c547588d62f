//! Chapter 10 exercise: a hedged request with `scope`, `join_any` and
//! `timeout`.
//!
//! ```text
//! cargo run --example exercise_ch10_hedged
//! ```
//!
//! A lookup asks every replica of a service at once and takes the first
//! good answer. The replicas and the key are borrowed from the caller, not
//! cloned into `'static` tasks: `scope` makes that sound. The first answer
//! cancels the rest (`cancel_all`), a replica that fails is skipped in
//! favour of the next to answer, and a `timeout` around the whole scope
//! gives up when no replica answers within the budget, cancelling every
//! request still out. Each request holds an `InFlight` guard that counts
//! how many requests were torn down unfinished, so the output shows the
//! cancellations actually happening.

use std::cell::Cell;
use std::time::Duration;

/// A replica: its name, how long it takes to answer, whether it fails.
struct Replica {
    name: &'static str,
    latency_ms: u64,
    fails: bool,
}

/// Counts, when dropped before `done` is set, one request torn down
/// unfinished: a cancelled task's stack unwinds, so this runs.
struct InFlight<'a> {
    cancelled: &'a Cell<u32>,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cancelled.set(self.cancelled.get() + 1);
        }
    }
}

/// One request to one replica.
fn ask(replica: &Replica, key: &str, cancelled: &Cell<u32>) -> Result<String, String> {
    let mut guard = InFlight {
        cancelled,
        done: false,
    };
    yieldloop::sleep(Duration::from_millis(replica.latency_ms));
    guard.done = true;
    if replica.fails {
        return Err(format!("{} failed", replica.name));
    }
    Ok(format!("{key}={} from {}", key.len(), replica.name))
}

/// Asks all `replicas` for `key`; the first good answer within `budget`.
fn lookup(key: &str, replicas: &[Replica], budget: Duration, cancelled: &Cell<u32>) -> String {
    let outcome = yieldloop::timeout(budget, || {
        yieldloop::scope(|s| {
            let mut requests: Vec<_> = replicas
                .iter()
                .map(|r| s.spawn(move || ask(r, key, cancelled))) // borrows, no clones
                .collect();
            let mut errors = Vec::new();
            while let Some((_, result)) = yieldloop::join_any(&mut requests) {
                match result.expect("requests do not panic") {
                    Ok(answer) => {
                        s.cancel_all(); // the others are not needed
                        return answer;
                    }
                    Err(e) => errors.push(e),
                }
            }
            format!("no answer: {}", errors.join(", "))
        })
    });
    outcome.unwrap_or_else(|_| format!("gave up after {} ms", budget.as_millis()))
}

fn main() {
    let replica = |name, latency_ms, fails| Replica {
        name,
        latency_ms,
        fails,
    };
    let cases = [
        (
            "all healthy",
            vec![
                replica("east", 40, false),
                replica("west", 10, false),
                replica("north", 30, false),
            ],
        ),
        (
            "fastest fails",
            vec![
                replica("east", 40, false),
                replica("west", 10, true),
                replica("north", 25, false),
            ],
        ),
        (
            "all too slow",
            vec![replica("east", 400, false), replica("west", 300, false)],
        ),
        (
            "all fail",
            vec![replica("east", 5, true), replica("west", 10, true)],
        ),
    ];
    yieldloop::run(move || {
        for (what, replicas) in &cases {
            let cancelled = Cell::new(0);
            let answer = lookup("user:42", replicas, Duration::from_millis(100), &cancelled);
            println!("{what}: {answer}; {} request(s) cancelled", cancelled.get());
        }
    });
}
