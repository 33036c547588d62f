//! The fairness benchmark's client, the same for every runtime: a flood
//! sender and a pinger, plain OS threads with blocking std sockets, against
//! a fairness server (`bench/src/bin/fairness.rs`, `gobench fairness`).
//!
//! ```text
//! fairness_client --addr 127.0.0.1:PORT --stats 127.0.0.1:SPORT --flood lines|chunks|chan|none
//!                 [--secs 2] [--interval-ms 5] [--settle 0.2] [--grace 1]
//! ```
//!
//! 1. Opens the ping connection (role byte `P`) and makes one round trip on
//!    it, so that the server's echo task runs before any flood (which,
//!    where it starves the scheduler, would starve the accept loop too).
//! 2. For `lines` and `chunks`, opens the flood connection (role byte `F`)
//!    and starts a thread writing to it as fast as it can: 64-byte lines
//!    (63 bytes and a newline), 64 KiB per write; it blocks whenever the
//!    server falls behind, so it sends as fast as the server consumes. For
//!    `chan` the flood runs inside the server; for `none` there is none.
//! 3. Waits `--settle` seconds, reads the flood's count from the server's
//!    stats port, then sends a 16-byte ping (a sequence number and the
//!    send time) every `--interval-ms` for `--secs` seconds, on a fixed
//!    schedule whatever the answers do, while a second thread reads the
//!    echoes and takes each one's round trip; at the end of that window it
//!    reads the count again.
//! 4. Waits at most `--grace` seconds more for late answers; a ping not
//!    answered by then counts as unanswered. Then it stops the flood and
//!    prints one line:
//!
//! ```text
//! fairness_client flood=lines secs=2.000 interval_ms=5 pings=400 answered=400 p50_us=41.2 p99_us=95.0 max_us=180.3 max_answered_us=180.3 hello=1 items=21000000 window_s=2.001 items_per_s=10494753
//! ```
//!
//! The percentiles and `max_us` are over all pings, an unanswered one
//! counting as infinitely late (`inf`); `max_answered_us` is the worst of
//! those answered. `items_per_s` is the flood's items consumed between the
//! two reads of the count, by the server's clock (`nan` without them). Every
//! wait is bounded: the connections and reads have timeouts, so a server
//! that never answers makes the run report no answers, not hang.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Bytes of a ping (and of its echo): sequence number, send time in ns.
const PING: usize = 16;
/// The sequence number of the round trip made before the flood.
const HELLO: u64 = u64::MAX;
/// Bytes of a flood line, newline included.
const LINE: usize = 64;
/// Bytes per write of the flood sender.
const FLOOD_WRITE: usize = 64 * 1024;

struct Args {
    addr: String,
    stats: String,
    flood: String,
    secs: f64,
    interval_ms: u64,
    settle: f64,
    grace: f64,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "fairness_client: {why}\nusage: fairness_client --addr HOST:PORT --stats HOST:PORT \
         --flood lines|chunks|chan|none [--secs S] [--interval-ms MS] [--settle S] [--grace S]"
    );
    std::process::exit(2);
}

fn args() -> Args {
    let mut a = Args {
        addr: String::new(),
        stats: String::new(),
        flood: String::new(),
        secs: 2.0,
        interval_ms: 5,
        settle: 0.2,
        grace: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{k} needs a value")));
        let num = |v: &str| -> f64 {
            v.parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .unwrap_or_else(|| usage(&format!("{k}: not a number: {v}")))
        };
        match k.as_str() {
            "--addr" => a.addr = v,
            "--stats" => a.stats = v,
            "--flood" => a.flood = v,
            "--secs" => a.secs = num(&v),
            "--interval-ms" => a.interval_ms = num(&v).max(1.0) as u64,
            "--settle" => a.settle = num(&v),
            "--grace" => a.grace = num(&v),
            _ => usage(&format!("unknown argument {k}")),
        }
    }
    if a.addr.is_empty() || a.stats.is_empty() {
        usage("--addr and --stats are required");
    }
    if !["lines", "chunks", "chan", "none"].contains(&a.flood.as_str()) {
        usage("--flood must be lines, chunks, chan or none");
    }
    a
}

fn main() {
    let a = args();
    match run(&a) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("fairness_client: {e}");
            std::process::exit(1);
        }
    }
}

/// How long connecting, and reading the stats, may take.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

fn connect(addr: &str) -> io::Result<TcpStream> {
    let sa: SocketAddr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other(format!("no address for {addr}")))?;
    let s = TcpStream::connect_timeout(&sa, IO_TIMEOUT)?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// The server's flood count and clock, from its stats port.
struct Stats {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Stats {
    fn open(addr: &str) -> io::Result<Stats> {
        let w = connect(addr)?;
        w.set_read_timeout(Some(IO_TIMEOUT))?;
        Ok(Stats {
            r: BufReader::new(w.try_clone()?),
            w,
        })
    }

    /// (items, server ns), or None when the server did not answer in time.
    fn read(&mut self) -> Option<(u64, u64)> {
        self.w.write_all(b"m\n").ok()?;
        let mut line = String::new();
        self.r.read_line(&mut line).ok()?;
        let field = |k: &str| -> Option<u64> {
            line.split_whitespace()
                .find_map(|t| t.strip_prefix(k))
                .and_then(|v| v.parse().ok())
        };
        Some((field("count=")?, field("ns=")?))
    }
}

/// The flood sender: writes 64-byte lines as fast as the server takes them
/// until `stop` is set (and the socket is shut down, which ends a blocked
/// write).
fn flood_sender(mut s: TcpStream, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    let mut block = Vec::with_capacity(FLOOD_WRITE);
    let mut i = 0u64;
    while block.len() < FLOOD_WRITE {
        // Lines that differ, so that the work per line is not one cached
        // answer: a number and filler up to 63 bytes.
        let mut line = format!("item {i:012} ");
        while line.len() < LINE - 1 {
            line.push((b'a' + (line.len() as u8 + i as u8) % 26) as char);
        }
        line.push('\n');
        block.extend_from_slice(line.as_bytes());
        i += 1;
    }
    thread::Builder::new()
        .name("flood".into())
        .spawn(move || {
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if s.write_all(&block).is_err() {
                    break;
                }
                sent += block.len() as u64;
            }
            sent
        })
        .expect("flood thread")
}

/// What the reader of the echoes saw: the round trip of each ping by
/// sequence number (None: unanswered).
fn echo_reader(
    mut s: TcpStream,
    epoch: Instant,
    pings: usize,
    deadline: Arc<std::sync::Mutex<Option<Instant>>>,
) -> thread::JoinHandle<Vec<Option<Duration>>> {
    thread::Builder::new()
        .name("echoes".into())
        .spawn(move || {
            let mut rtt = vec![None; pings];
            let mut answered = 0;
            let mut buf = [0u8; PING];
            // Bytes of the current message read so far: a read that times
            // out keeps what it had, so the stream stays in step.
            let mut got = 0;
            while answered < pings {
                // Until the sender has set the deadline, wait in short steps.
                let wait = match *deadline.lock().unwrap() {
                    Some(d) => match d.checked_duration_since(Instant::now()) {
                        Some(w) if !w.is_zero() => w,
                        _ => break,
                    },
                    None => Duration::from_millis(100),
                };
                if s.set_read_timeout(Some(wait)).is_err() {
                    break;
                }
                match s.read(&mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock
                                | io::ErrorKind::TimedOut
                                | io::ErrorKind::Interrupted
                        ) =>
                    {
                        continue
                    }
                    Err(_) => break,
                }
                if got < PING {
                    continue;
                }
                got = 0;
                let now = epoch.elapsed();
                let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
                let sent = Duration::from_nanos(u64::from_le_bytes(buf[8..].try_into().unwrap()));
                if let Some(slot) = rtt.get_mut(seq as usize) {
                    if slot.is_none() {
                        *slot = Some(now.saturating_sub(sent));
                        answered += 1;
                    }
                }
            }
            rtt
        })
        .expect("echo reader thread")
}

fn ping_msg(seq: u64, sent: Duration) -> [u8; PING] {
    let mut m = [0u8; PING];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m[8..].copy_from_slice(&(sent.as_nanos() as u64).to_le_bytes());
    m
}

fn run(a: &Args) -> io::Result<String> {
    let epoch = Instant::now();
    let mut stats = Stats::open(&a.stats)?;
    let mut ping = connect(&a.addr)?;
    ping.write_all(b"P")?;
    // The round trip before the flood: the echo task is up and running.
    ping.write_all(&ping_msg(HELLO, epoch.elapsed()))?;
    ping.set_read_timeout(Some(Duration::from_secs_f64(a.grace.max(0.1))))?;
    let mut hello_buf = [0u8; PING];
    let hello = ping.read_exact(&mut hello_buf).is_ok();

    let stop = Arc::new(AtomicBool::new(false));
    let mut flood = None;
    if a.flood == "lines" || a.flood == "chunks" {
        let s = connect(&a.addr)?;
        let mut w = s.try_clone()?;
        w.write_all(b"F")?;
        flood = Some((s, flood_sender(w, stop.clone())));
    }
    thread::sleep(Duration::from_secs_f64(a.settle));

    let pings = ((a.secs * 1000.0) / a.interval_ms as f64).round().max(1.0) as usize;
    let interval = Duration::from_millis(a.interval_ms);
    let deadline = Arc::new(std::sync::Mutex::new(None));
    let reader = echo_reader(ping.try_clone()?, epoch, pings, deadline.clone());
    let mark0 = stats.read();
    let start = Instant::now();
    for seq in 0..pings {
        let due = start + interval * seq as u32;
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            thread::sleep(d);
        }
        if ping
            .write_all(&ping_msg(seq as u64, epoch.elapsed()))
            .is_err()
        {
            break;
        }
    }
    let end = start + interval * pings as u32;
    if let Some(d) = end.checked_duration_since(Instant::now()) {
        thread::sleep(d);
    }
    let mark1 = stats.read();
    *deadline.lock().unwrap() = Some(end + Duration::from_secs_f64(a.grace));
    let rtt = reader
        .join()
        .map_err(|_| io::Error::other("echo reader panicked"))?;

    stop.store(true, Ordering::Relaxed);
    if let Some((s, sender)) = flood {
        let _ = s.shutdown(Shutdown::Both);
        let _ = sender.join();
    }
    let _ = ping.shutdown(Shutdown::Both);

    // Percentiles over every ping, an unanswered one as infinitely late.
    let mut us: Vec<f64> = rtt
        .iter()
        .map(|r| r.map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e6))
        .collect();
    us.sort_by(|x, y| x.total_cmp(y));
    let answered = rtt.iter().filter(|r| r.is_some()).count();
    let pct = |q: f64| us[((q * us.len() as f64).ceil() as usize).clamp(1, us.len()) - 1];
    let max_answered = us
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .reduce(f64::max);
    let (items, window, rate) = match (mark0, mark1) {
        (Some((c0, t0)), Some((c1, t1))) if t1 > t0 => {
            let s = (t1 - t0) as f64 / 1e9;
            (
                format!("{}", c1 - c0),
                format!("{s:.3}"),
                format!("{:.0}", (c1 - c0) as f64 / s),
            )
        }
        _ => ("nan".into(), "nan".into(), "nan".into()),
    };
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x:.1}")
        } else {
            "inf".into()
        }
    };
    Ok(format!(
        "fairness_client flood={} secs={:.3} interval_ms={} pings={} answered={} p50_us={} p99_us={} max_us={} max_answered_us={} hello={} items={} window_s={} items_per_s={}",
        a.flood,
        a.secs,
        a.interval_ms,
        pings,
        answered,
        f(pct(0.5)),
        f(pct(0.99)),
        f(us[us.len() - 1]),
        max_answered.map_or("nan".into(), f),
        u8::from(hello),
        items,
        window,
        rate,
    ))
}
