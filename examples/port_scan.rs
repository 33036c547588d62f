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

struct Args {
    host: IpAddr,
    first: u16,
    last: u16,
    timeout: Duration,
    concurrency: usize,
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!(
                "port_scan: {msg}\nusage: port_scan [--host IP] [--ports FIRST-LAST] \
                 [--timeout-ms MS] [--concurrency N]"
            );
            std::process::exit(2);
        }
    };
    let (host, count) = (args.host, u32::from(args.last) - u32::from(args.first) + 1);
    let start = Instant::now();
    let report = yieldloop::run(move || scan(&args));
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

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        host: IpAddr::from([127, 0, 0, 1]),
        first: 1,
        last: 1024,
        timeout: Duration::from_millis(200),
        concurrency: 100,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--host" => a.host = value()?.parse().map_err(|e| format!("--host: {e}"))?,
            "--ports" => {
                let v = value()?;
                let (first, last) = v.split_once('-').unwrap_or((&v, &v));
                a.first = first.parse().map_err(|e| format!("--ports: {e}"))?;
                a.last = last.parse().map_err(|e| format!("--ports: {e}"))?;
                if a.first == 0 || a.first > a.last {
                    return Err(format!("--ports {v}: need 1 <= FIRST <= LAST"));
                }
            }
            "--timeout-ms" => {
                let ms: u64 = value()?.parse().map_err(|e| format!("--timeout-ms: {e}"))?;
                if ms == 0 {
                    return Err("--timeout-ms must be at least 1".into());
                }
                a.timeout = Duration::from_millis(ms);
            }
            "--concurrency" => {
                a.concurrency = value()?
                    .parse()
                    .map_err(|e| format!("--concurrency: {e}"))?;
                if a.concurrency == 0 {
                    return Err("--concurrency must be at least 1".into());
                }
            }
            "-h" | "--help" => return Err("scans TCP ports".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// What the scan found.
#[derive(Default)]
struct Report {
    /// Ports that accepted a connection, in increasing order.
    open: Vec<u16>,
    /// Ports whose connect timed out.
    filtered: usize,
}

fn scan(args: &Args) -> Report {
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
