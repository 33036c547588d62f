//! How long a slow name lookup stops the other tasks: with the lookup made
//! on the scheduler's thread, and through `yieldloop::net::lookup_host`.
//!
//! ```text
//! cargo run --release --example resolve_stall
//! cargo run --release --example resolve_stall -- --delay-ms 200 --runs 5
//! ```
//!
//! A resolver installed with `net::set_resolver` takes `--delay-ms`
//! (200 by default) to answer, like a DNS server far away. Beside the task
//! that looks a name up, a ticker task sleeps 1 ms at a time and notes the
//! longest gap between two of its ticks. Each way is run `--runs` times
//! (3 by default) and the worst gap is printed:
//!
//! ```text
//! resolver delay: 200 ms, ticker: 1 ms sleeps, 3 runs each
//! baseline: longest tick gap 1.1 ms
//! inline: longest tick gap 200.3 ms
//! pool: longest tick gap 1.2 ms
//! ```
//!
//! "baseline" has no lookup at all (the task sleeps as long instead): the
//! gaps the machine itself makes. "inline" calls the resolver inside the
//! task, on the scheduler's thread, which is what a lookup through std's
//! `ToSocketAddrs` does: the ticker stops for the whole lookup (and the
//! slow-task watch says so on stderr). "pool" looks the name up with
//! `net::lookup_host`, which runs the resolver on the blocking pool while
//! only the asking task pauses: the ticker keeps its rhythm.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::net::{self, Resolve};

mod args;
use args::Args;

/// A resolver that answers every name with the loopback address, late.
struct Slow(Duration);

impl Resolve for Slow {
    fn resolve(&self, _host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        std::thread::sleep(self.0);
        Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
    }
}

fn main() {
    let mut args = Args::new("resolve_stall [--delay-ms N] [--runs N]");
    let delay = Duration::from_millis(args.value_in("--delay-ms", 200, ..=60_000));
    let runs: u32 = args.value_in("--runs", 3, 1..=100);
    args.finish();
    let resolver = Arc::new(Slow(delay));
    net::set_resolver(resolver.clone());
    println!(
        "resolver delay: {} ms, ticker: 1 ms sleeps, {runs} runs each",
        delay.as_millis()
    );

    let baseline = worst_gap(runs, move || {
        yieldloop::sleep(delay);
        Ok(vec![SocketAddr::from(([127, 0, 0, 1], 80))])
    });
    println!("baseline: longest tick gap {:.1} ms", millis(baseline));

    let inline = worst_gap(runs, move || {
        // What a blocking lookup does: the resolver runs right here.
        resolver.resolve("slow.example", 80)
    });
    println!("inline: longest tick gap {:.1} ms", millis(inline));

    let pool = worst_gap(runs, || {
        net::lookup_host("slow.example:80").map(Iterator::collect)
    });
    println!("pool: longest tick gap {:.1} ms", millis(pool));
}

/// Runs `lookup` `runs` times beside a ticking task; returns the longest
/// gap between two ticks seen in any run.
fn worst_gap(
    runs: u32,
    lookup: impl Fn() -> io::Result<Vec<SocketAddr>> + Clone + 'static,
) -> Duration {
    (0..runs)
        .map(|_| {
            let lookup = lookup.clone();
            yieldloop::run(move || {
                let done = Rc::new(Cell::new(false));
                let d = done.clone();
                let ticker = yieldloop::spawn(move || {
                    let mut worst = Duration::ZERO;
                    let mut last = Instant::now();
                    // Bounded: 10,000 ticks of 1 ms is far past any lookup.
                    for _ in 0..10_000 {
                        if d.get() {
                            break;
                        }
                        yieldloop::sleep(Duration::from_millis(1));
                        let now = Instant::now();
                        worst = worst.max(now - last);
                        last = now;
                    }
                    worst
                });
                // Let the ticker settle into its rhythm first.
                yieldloop::sleep(Duration::from_millis(20));
                let addrs = lookup().expect("the slow resolver answers");
                assert_eq!(addrs.len(), 1);
                done.set(true);
                ticker.join().expect("the ticker does not panic")
            })
        })
        .max()
        .unwrap_or_default()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
