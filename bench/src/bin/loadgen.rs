//! Bounded closed-loop echo load: C connections, each sends one message and
//! waits for its full echo before sending the next.
//!
//! ```text
//! loadgen --addr 127.0.0.1:PORT --conns C --size BYTES --duration SECS [--warmup SECS]
//! ```
//!
//! One thread, raw mio (edge-triggered), so the client adds as little
//! overhead as it can. Connections are opened (and the server's listener
//! waited for, up to 5 s) before the clock starts. Round trips in the first
//! `--warmup` seconds are done but not timed. The run ends after `--duration`
//! seconds of measurement, plus at most 5 s for replies still in flight.
//!
//! Prints one line of `key=value` fields on stdout:
//!
//! ```text
//! loadgen conns=64 size=64 secs=3.000 rt_total=123456 rt=100000 rps=33333 p50_us=1890 p99_us=2500 p999_us=3100 max_us=9000 errors=0
//! ```
//!
//! - `rt_total`: every round trip completed, warm-up included (for dividing
//!   the server's CPU time over the whole run).
//! - `rt`, `rps`, percentiles: the measured window only.
//! - `errors`: connections that failed, sent back wrong bytes, or still had
//!   a reply outstanding at the hard deadline.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

struct Conn {
    stream: TcpStream,
    /// Bytes of the current message written so far.
    sent: usize,
    /// Bytes of its echo received so far.
    got: usize,
    started: Instant,
    done: bool,
}

struct Args {
    addr: SocketAddr,
    conns: usize,
    size: usize,
    duration: f64,
    warmup: f64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:1235".parse().unwrap(),
        conns: 1,
        size: 64,
        duration: 3.0,
        warmup: 0.5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--addr" => a.addr = v.parse().map_err(|e| bad(&e))?,
            "--conns" => a.conns = v.parse().map_err(|e| bad(&e))?,
            "--size" => a.size = v.parse().map_err(|e| bad(&e))?,
            "--duration" => a.duration = v.parse().map_err(|e| bad(&e))?,
            "--warmup" => a.warmup = v.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    // Bounded load only.
    if !(1..=10_000).contains(&a.conns) {
        return Err("--conns must be in 1..=10000".into());
    }
    if !(1..=1 << 20).contains(&a.size) {
        return Err("--size must be in 1..=1048576".into());
    }
    if !(a.duration > 0.0 && a.duration <= 600.0 && (0.0..=60.0).contains(&a.warmup)) {
        return Err("--duration must be in (0, 600], --warmup in [0, 60]".into());
    }
    Ok(a)
}

fn connect(addr: SocketAddr, wait_until: Instant) -> io::Result<StdStream> {
    loop {
        match StdStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() < wait_until => {
                let _ = e;
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
            eprintln!("loadgen: {e}\nusage: loadgen --addr HOST:PORT --conns C --size BYTES --duration SECS [--warmup SECS]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("loadgen: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> io::Result<()> {
    let msg: Vec<u8> = (0..a.size).map(|i| b'a' + (i % 26) as u8).collect();
    let mut buf = vec![0u8; a.size.max(4096)];
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
            got: 0,
            started: Instant::now(),
            done: false,
        });
    }

    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(a.warmup);
    let end = measure_from + Duration::from_secs_f64(a.duration);
    let hard_end = end + Duration::from_secs(5);
    let mut lat_ns: Vec<u64> = Vec::with_capacity(1 << 20);
    let (mut rt_total, mut rt) = (0u64, 0u64);
    let mut errors = 0usize;
    let mut live = a.conns;

    for c in conns.iter_mut() {
        c.started = Instant::now();
        if !pump_write(c, &msg) {
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
            // Finish writing the current message if it was cut short.
            if c.sent < msg.len() && !pump_write(c, &msg) {
                c.done = true;
                live -= 1;
                errors += 1;
                continue;
            }
            // Read whatever echo has arrived; start the next message each
            // time one is complete.
            loop {
                let want = msg.len() - c.got;
                match c.stream.read(&mut buf[..want]) {
                    Ok(0) => {
                        c.done = true;
                        live -= 1;
                        errors += 1;
                        break;
                    }
                    Ok(n) => {
                        if buf[..n] != msg[c.got..c.got + n] {
                            c.done = true;
                            live -= 1;
                            errors += 1;
                            break;
                        }
                        c.got += n;
                        if c.got < msg.len() {
                            continue;
                        }
                        let now = Instant::now();
                        rt_total += 1;
                        if c.started >= measure_from && now <= end {
                            rt += 1;
                            lat_ns.push((now - c.started).as_nanos() as u64);
                        }
                        if now >= end {
                            c.done = true;
                            live -= 1;
                            break;
                        }
                        c.got = 0;
                        c.sent = 0;
                        c.started = now;
                        if !pump_write(c, &msg) {
                            c.done = true;
                            live -= 1;
                            errors += 1;
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        c.done = true;
                        live -= 1;
                        errors += 1;
                        break;
                    }
                }
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
        "loadgen conns={} size={} secs={:.3} rt_total={} rt={} rps={:.0} p50_us={:.1} p99_us={:.1} p999_us={:.1} max_us={:.1} errors={}",
        a.conns,
        a.size,
        a.duration,
        rt_total,
        rt,
        rt as f64 / a.duration,
        pct(0.50),
        pct(0.99),
        pct(0.999),
        lat_ns.last().map_or(0.0, |&v| v as f64 / 1000.0),
        errors,
    );
    Ok(())
}

/// Writes the rest of the current message as far as the socket takes it.
/// Returns `false` if the connection failed.
fn pump_write(c: &mut Conn, msg: &[u8]) -> bool {
    while c.sent < msg.len() {
        match c.stream.write(&msg[c.sent..]) {
            Ok(0) => return false,
            Ok(n) => c.sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
