//! A load generator for the echo servers: C connections each send a
//! message, wait for it to come back, and repeat, for a fixed time; it
//! prints round trips per second and, given the server's pid, the server's
//! CPU time per round trip.
//!
//! ```text
//! cargo run --release --example echo_server -- --workers 2 --quiet &
//! cargo run --release --example echo_load -- --addr 127.0.0.1:1235 \
//!     --connections 64 --size 64 --duration 5 --threads 1 --server-pid $!
//! ```
//!
//! The connections are spread over `--threads` worker threads of a
//! [`Runtime`]. Round trips are counted from 0.3 s after the start (all
//! connections are open by then) for `--duration` seconds; the server's
//! CPU time (`utime + stime` from `/proc/PID/stat`) is read over the same
//! window (on Linux; other systems have no `/proc`, and the CPU figures are
//! left out). The last line has the form
//! `rps N conns C size S server_us_per_rt X` for scripts.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use yieldloop::net::TcpStream;
use yieldloop::Runtime;

mod args;
use args::Args;

/// Connections are made during this time, before the counting starts.
const WARM_UP: Duration = Duration::from_millis(300);

/// The command line's settings.
#[derive(Clone, Copy)]
struct Settings {
    addr: SocketAddr,
    connections: usize,
    size: usize,
    duration: Duration,
    threads: usize,
    server_pid: Option<u32>,
}

fn main() {
    let mut args = Args::new(
        "echo_load [--addr HOST:PORT] [--connections C] [--size BYTES] [--duration SECS] \
         [--threads N] [--server-pid PID]",
    );
    let settings = Settings {
        addr: args.value_or("--addr", SocketAddr::from(([127, 0, 0, 1], 1237))),
        connections: args.value_in("--connections", 64, 1..),
        size: args.value_in("--size", 64, 1..),
        duration: Duration::from_secs_f64(args.value_in("--duration", 5.0, 0.0..=86_400.0)),
        threads: args.value_in("--threads", 1, 1..),
        server_pid: args.value("--server-pid"),
    };
    args.finish();
    if let Err(e) = run(settings) {
        eprintln!("echo_load: {e}");
        std::process::exit(1);
    }
}

fn run(args: Settings) -> io::Result<()> {
    let rt = Runtime::builder()
        .workers(args.threads)
        .name("load")
        .build()?;
    let count_from = Instant::now() + WARM_UP;
    let count_until = count_from + args.duration;
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            // Connection i goes to thread i % threads.
            let mine = (t..args.connections).step_by(args.threads).count();
            rt.spawn_on(t, move || drive(args, mine, count_from, count_until))
        })
        .collect();
    std::thread::sleep(count_from.saturating_duration_since(Instant::now()));
    let server_before = args.server_pid.and_then(|pid| cpu_seconds(pid).ok());
    let self_before = cpu_seconds_self().ok();
    std::thread::sleep(count_until.saturating_duration_since(Instant::now()));
    let server_after = args.server_pid.and_then(|pid| cpu_seconds(pid).ok());
    let self_after = cpu_seconds_self().ok();
    let mut round_trips = 0u64;
    for h in handles {
        round_trips += h.join()??;
    }
    rt.shutdown();

    let secs = args.duration.as_secs_f64();
    let rps = round_trips as f64 / secs;
    println!(
        "{} connections, {}-byte messages, {secs:.1} s: {round_trips} round trips, {rps:.0} per second",
        args.connections, args.size
    );
    if let (Some(before), Some(after)) = (self_before, self_after) {
        let client_cpu = after - before;
        println!(
            "client CPU: {client_cpu:.2} s ({:.0}% of a core)",
            100.0 * client_cpu / secs
        );
    }
    let mut per_rt = f64::NAN;
    if let (Some(before), Some(after)) = (server_before, server_after) {
        let cpu = after - before;
        per_rt = cpu * 1e6 / round_trips.max(1) as f64;
        println!(
            "server CPU: {cpu:.2} s ({:.0}% of a core), {per_rt:.1} us per round trip",
            100.0 * cpu / secs
        );
    }
    println!(
        "rps {rps:.0} conns {} size {} server_us_per_rt {per_rt:.2}",
        args.connections, args.size
    );
    Ok(())
}

/// One thread's share of the connections; returns its counted round trips.
fn drive(args: Settings, connections: usize, from: Instant, until: Instant) -> io::Result<u64> {
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            yieldloop::spawn(move || -> io::Result<u64> {
                let mut s = TcpStream::connect(args.addr)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(Duration::from_secs(10)))?;
                let msg = vec![b'x'; args.size];
                let mut back = vec![0u8; args.size];
                let mut counted = 0u64;
                loop {
                    s.write_all(&msg)?;
                    s.read_exact(&mut back)?;
                    let now = Instant::now();
                    if now >= until {
                        return Ok(counted);
                    }
                    if now >= from {
                        counted += 1;
                    }
                }
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.join()??;
    }
    Ok(total)
}

/// A process's CPU time so far (user + system), in seconds.
fn cpu_seconds(pid: u32) -> io::Result<f64> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat"))?)
}

fn cpu_seconds_self() -> io::Result<f64> {
    parse_stat(&std::fs::read_to_string("/proc/self/stat")?)
}

/// Fields 14 and 15 of `/proc/PID/stat` (utime, stime), counted after the
/// `)` that ends the command name (which may contain spaces). They are in
/// clock ticks of `USER_HZ`, which Linux fixes at 100 for this interface.
fn parse_stat(stat: &str) -> io::Result<f64> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/PID/stat");
    let rest = &stat[stat.rfind(')').ok_or_else(bad)? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let tick = |i: usize| -> io::Result<u64> {
        fields
            .get(i - 3)
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())
    };
    Ok((tick(14)? + tick(15)?) as f64 / 100.0)
}
