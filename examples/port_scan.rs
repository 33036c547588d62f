//! A TCP port scanner: tries a range of ports concurrently, each connect
//! bounded by a timeout, and prints the open ones.
//!
//! ```text
//! cargo run --example port_scan                        # 127.0.0.1, ports 1-1024
//! cargo run --example port_scan -- --host 127.0.0.1 --ports 8000-9000 \
//!     --timeout-ms 200 --concurrency 100
//! ```
//!
//! A fixed number of tasks (`--concurrency`) share one counter of the next
//! port to try, so at most that many connects are in flight however long
//! the range is. Each open port is printed as `open PORT`, in increasing
//! order, once the scan is over; the last line is a summary,
//! `scanned N ports on HOST in X.XXs: K open, F filtered` (filtered: the
//! connect timed out instead of being refused).

use std::cell::{Cell, RefCell};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::TcpStream;

mod args;
use args::Args;

/// What to scan, and how.
struct Scan {
    host: IpAddr,
    first: u16,
    last: u16,
    timeout: Duration,
    concurrency: usize,
}

fn main() {
    let mut args =
        Args::new("port_scan [--host IP] [--ports FIRST-LAST] [--timeout-ms MS] [--concurrency N]");
    let ports: String = args.value_or("--ports", "1-1024".into());
    // FIRST-LAST, or one port.
    let (first, last) = ports.split_once('-').unwrap_or((&ports, &ports));
    let (first, last) = match (first.parse(), last.parse()) {
        (Ok(first), Ok(last)) if 1 <= first && first <= last => (first, last),
        _ => args.fail(format!("--ports {ports}: need 1 <= FIRST <= LAST")),
    };
    let job = Scan {
        host: args.value_or("--host", IpAddr::from([127, 0, 0, 1])),
        first,
        last,
        timeout: Duration::from_millis(args.value_in("--timeout-ms", 200, 1..)),
        concurrency: args.value_in("--concurrency", 100, 1..),
    };
    args.finish();
    let (host, count) = (job.host, u32::from(last) - u32::from(first) + 1);
    let start = Instant::now();
    let report = yieldloop::run(move || scan(&job));
    for port in &report.open {
        println!("open {port}");
    }
    println!(
        "scanned {count} ports on {host} in {:.2}s: {} open, {} filtered",
        start.elapsed().as_secs_f64(),
        report.open.len(),
        report.filtered
    );
}

/// What the scan found.
#[derive(Default)]
struct Report {
    /// Ports that accepted a connection, in increasing order.
    open: Vec<u16>,
    /// Ports whose connect timed out.
    filtered: usize,
}

fn scan(args: &Scan) -> Report {
    // The next port to try; u32 so that counting past 65535 cannot wrap.
    let next = Rc::new(Cell::new(u32::from(args.first)));
    let report = Rc::new(RefCell::new(Report::default()));
    let probers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (next, report) = (next.clone(), report.clone());
            let (host, last, timeout) = (args.host, u32::from(args.last), args.timeout);
            yieldloop::spawn(move || loop {
                let port = next.get();
                if port > last {
                    return;
                }
                next.set(port + 1);
                let Ok(port) = u16::try_from(port) else {
                    return;
                };
                match probe(SocketAddr::new(host, port), timeout) {
                    Ok(()) => report.borrow_mut().open.push(port),
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        report.borrow_mut().filtered += 1;
                    }
                    // Refused, unreachable, …: closed.
                    Err(_) => {}
                }
                // On loopback a refused connect fails at once, without a
                // pause; yield so one prober cannot hold the thread for the
                // whole range.
                yieldloop::yield_now();
            })
        })
        .collect();
    for p in probers {
        // A prober cannot panic short of a bug; a bug should be loud.
        if let Err(e) = p.join() {
            panic!("port_scan: a prober failed: {e}");
        }
    }
    let mut report = report.take();
    report.open.sort_unstable();
    report
}

/// Connects, then closes again at once.
fn probe(addr: SocketAddr, timeout: Duration) -> io::Result<()> {
    TcpStream::connect_timeout(&addr, timeout).map(drop)
}
