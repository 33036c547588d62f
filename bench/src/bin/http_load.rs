//! Bounded closed-loop HTTP/1.1 load: C keep-alive connections, each sends
//! `GET /` and waits for the whole answer before sending the next.
//!
//! ```text
//! http_load --addr 127.0.0.1:PORT --conns C --duration SECS [--warmup SECS] [--path /]
//! ```
//!
//! One thread, raw mio (edge-triggered), like `loadgen`. Connections are
//! opened (the server's listener waited for, up to 5 s) before the clock
//! starts. Requests answered in the first `--warmup` seconds are counted
//! but not timed. The run ends after `--duration` seconds of measurement,
//! plus at most 5 s for answers still in flight.
//!
//! Prints one line of `key=value` fields on stdout:
//!
//! ```text
//! http_load conns=64 secs=3.000 requests_total=150000 requests=120000 rps=40000 p50_us=1500.0 p99_us=2500.0 p999_us=3100.0 max_us=9000.0 errors=0
//! ```
//!
//! - `requests_total`: every answer received, warm-up included (for dividing
//!   the server's CPU time over the whole run).
//! - `requests`, `rps`, percentiles: the measured window only.
//! - `errors`: connections that failed, got an answer other than 200 or a
//!   malformed one, or still waited for an answer at the hard deadline.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

/// Largest answer head taken.
const MAX_HEAD: usize = 16 * 1024;

struct Conn {
    stream: TcpStream,
    /// Bytes of the current request written so far.
    sent: usize,
    /// Bytes of answers received and not yet consumed.
    buf: Vec<u8>,
    started: Instant,
    done: bool,
}

struct Args {
    addr: SocketAddr,
    conns: usize,
    duration: f64,
    warmup: f64,
    path: String,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:8080".parse().unwrap(),
        conns: 64,
        duration: 3.0,
        warmup: 0.5,
        path: "/".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--addr" => a.addr = v.parse().map_err(|e| bad(&e))?,
            "--conns" => a.conns = v.parse().map_err(|e| bad(&e))?,
            "--duration" => a.duration = v.parse().map_err(|e| bad(&e))?,
            "--warmup" => a.warmup = v.parse().map_err(|e| bad(&e))?,
            "--path" => a.path = v,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    // Bounded load only.
    if !(1..=10_000).contains(&a.conns) {
        return Err("--conns must be in 1..=10000".into());
    }
    if !(a.duration > 0.0 && a.duration <= 600.0 && (0.0..=60.0).contains(&a.warmup)) {
        return Err("--duration must be in (0, 600], --warmup in [0, 60]".into());
    }
    if !a.path.starts_with('/') || a.path.bytes().any(|b| b <= b' ') {
        return Err("--path must start with / and have no spaces".into());
    }
    Ok(a)
}

fn connect(addr: SocketAddr, wait_until: Instant) -> io::Result<StdStream> {
    loop {
        match StdStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(s) => return Ok(s),
            Err(_) if Instant::now() < wait_until => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("http_load: {e}\nusage: http_load --addr HOST:PORT --conns C --duration SECS [--warmup SECS] [--path /]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("http_load: {e}");
        std::process::exit(1);
    }
}

/// What reading a connection's buffer found.
enum Parsed {
    /// A whole 200 answer of this many bytes.
    Answer(usize),
    /// Not complete yet.
    Partial,
    /// Anything else: a failure of this connection.
    Bad,
}

/// Looks for one complete answer at the start of `buf`.
fn parse_answer(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(buf) {
        Ok(httparse::Status::Complete(head)) => {
            if resp.code != Some(200) {
                return Parsed::Bad;
            }
            let len = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok())
                .and_then(|v| v.trim().parse::<usize>().ok());
            match len {
                Some(len) if buf.len() >= head + len => Parsed::Answer(head + len),
                Some(_) => Parsed::Partial,
                None => Parsed::Bad,
            }
        }
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => Parsed::Partial,
        _ => Parsed::Bad,
    }
}

fn run(a: &Args) -> io::Result<()> {
    let host = a.addr.to_string();
    let request = format!("GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n", a.path).into_bytes();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(a.conns);
    let listener_wait = Instant::now() + Duration::from_secs(5);
    for i in 0..a.conns {
        let s = connect(a.addr, listener_wait)?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let mut stream = TcpStream::from_std(s);
        poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        conns.push(Conn {
            stream,
            sent: 0,
            buf: Vec::with_capacity(1024),
            started: Instant::now(),
            done: false,
        });
    }

    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(a.warmup);
    let end = measure_from + Duration::from_secs_f64(a.duration);
    let hard_end = end + Duration::from_secs(5);
    let mut lat_ns: Vec<u64> = Vec::with_capacity(1 << 20);
    let (mut total, mut measured) = (0u64, 0u64);
    let mut errors = 0usize;
    let mut live = a.conns;

    for c in conns.iter_mut() {
        c.started = Instant::now();
        if !pump_write(c, &request) {
            c.done = true;
            live -= 1;
            errors += 1;
        }
    }

    let mut events = Events::with_capacity(1024);
    while live > 0 {
        let now = Instant::now();
        if now >= hard_end {
            errors += live;
            break;
        }
        match poll.poll(&mut events, Some(hard_end - now)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            let c = &mut conns[ev.token().0];
            if c.done {
                continue;
            }
            let mut failed = c.sent < request.len() && !pump_write(c, &request);
            // Read all that arrived; each complete answer starts the next
            // request.
            while !failed && !c.done {
                match c.stream.read(&mut chunk) {
                    Ok(0) => failed = true,
                    Ok(n) => {
                        c.buf.extend_from_slice(&chunk[..n]);
                        match parse_answer(&c.buf) {
                            Parsed::Partial => continue,
                            Parsed::Bad => failed = true,
                            Parsed::Answer(len) => {
                                // One request in flight: nothing may follow.
                                if c.buf.len() != len {
                                    failed = true;
                                    continue;
                                }
                                c.buf.clear();
                                let now = Instant::now();
                                total += 1;
                                if c.started >= measure_from && now <= end {
                                    measured += 1;
                                    lat_ns.push((now - c.started).as_nanos() as u64);
                                }
                                if now >= end {
                                    c.done = true;
                                    live -= 1;
                                    break;
                                }
                                c.sent = 0;
                                c.started = now;
                                failed = !pump_write(c, &request);
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => failed = true,
                }
            }
            if failed && !c.done {
                c.done = true;
                live -= 1;
                errors += 1;
            }
        }
    }

    lat_ns.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat_ns.is_empty() {
            return 0.0;
        }
        let i = ((p * lat_ns.len() as f64).ceil() as usize).clamp(1, lat_ns.len()) - 1;
        lat_ns[i] as f64 / 1000.0
    };
    println!(
        "http_load conns={} secs={:.3} requests_total={} requests={} rps={:.0} p50_us={:.1} p99_us={:.1} p999_us={:.1} max_us={:.1} errors={}",
        a.conns,
        a.duration,
        total,
        measured,
        measured as f64 / a.duration,
        pct(0.50),
        pct(0.99),
        pct(0.999),
        lat_ns.last().map_or(0.0, |&v| v as f64 / 1000.0),
        errors,
    );
    Ok(())
}

/// Writes the rest of the current request as far as the socket takes it.
/// Returns `false` if the connection failed.
fn pump_write(c: &mut Conn, req: &[u8]) -> bool {
    while c.sent < req.len() {
        match c.stream.write(&req[c.sent..]) {
            Ok(0) => return false,
            Ok(n) => c.sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
