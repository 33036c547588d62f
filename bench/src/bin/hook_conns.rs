//! Many tasks, each holding one connection: memory per task and client CPU
//! per round trip, with yieldloop's own `net::TcpStream` (`--mode native`)
//! or with `std::net::TcpStream` in a task under feature `hook`
//! (`--mode hook`, only in a build with the feature).
//!
//! The echo server is this program again (`--serve`, a child process on
//! 127.0.0.1:0, one scheduler, a task per connection), so that the
//! client's memory and CPU are its own. The client:
//!
//! 1. starts its scheduler and measures its resident memory (`VmRSS`);
//! 2. spawns `--n` tasks, in batches of 256 so the server's accept queue
//!    never overflows; each connects, makes one round trip and waits;
//! 3. measures `VmRSS` again: the difference over `n` is the memory per
//!    task (stack pages touched, socket state of the runtime or the hook);
//! 4. lets every task make `--rounds` round trips of `--size` bytes (write,
//!    then read the echo) and measures the process's CPU time (user +
//!    system, `getrusage`) and wall time for them.
//!
//! ```text
//! hook_conns --mode native|hook [--n 10000] [--rounds 20] [--size 64]
//! ```
//!
//! Prints `hook_conns mode=.. n=.. rounds=.. size=.. rss_base_kb=.. rss_kb=..
//! bytes_per_task=.. round_trips=.. wall_s=.. cpu_ns_per_rt=.. user_ns_per_rt=..
//! sys_ns_per_rt=..`.

use std::cell::Cell;
use std::io::{self, BufRead, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::sync::local::Event;

struct Args {
    mode: String,
    n: usize,
    rounds: usize,
    size: usize,
    serve: bool,
}

fn args() -> Args {
    let mut a = Args {
        mode: String::new(),
        n: 10_000,
        rounds: 20,
        size: 64,
        serve: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        if k == "--serve" {
            a.serve = true;
            continue;
        }
        let v = it.next().unwrap_or_default();
        let num = v.parse::<usize>().ok().filter(|&x| x > 0);
        match (k.as_str(), num) {
            ("--mode", _) => a.mode = v,
            ("--n", Some(x)) => a.n = x,
            ("--rounds", Some(x)) => a.rounds = x,
            ("--size", Some(x)) => a.size = x.min(yieldloop_bench::BUF),
            _ => usage(),
        }
    }
    a
}

fn usage() -> ! {
    eprintln!("usage: hook_conns --mode native|hook [--n N] [--rounds R] [--size BYTES]");
    std::process::exit(2);
}

fn main() {
    let a = args();
    raise_fd_limit();
    if a.serve {
        if let Err(e) = yieldloop::run(serve) {
            eprintln!("hook_conns --serve: {e}");
            std::process::exit(1);
        }
        return;
    }
    match a.mode.as_str() {
        "native" => {}
        "hook" if cfg!(feature = "hook") => {}
        "hook" => {
            eprintln!("hook_conns: --mode hook needs a build with --features hook");
            std::process::exit(2);
        }
        _ => usage(),
    }
    let (mut server, addr) = start_server();
    let result = client(&a, addr);
    let _ = server.kill();
    let _ = server.wait();
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("hook_conns: {e}");
            std::process::exit(1);
        }
    }
}

/// One connection, either kind, as the client uses it.
enum Conn {
    Native(yieldloop::net::TcpStream),
    Std(std::net::TcpStream),
}

impl Conn {
    fn connect(mode: &str, addr: SocketAddr) -> io::Result<Conn> {
        Ok(if mode == "native" {
            let s = yieldloop::net::TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            Conn::Native(s)
        } else {
            // A plain blocking std socket: under the hook, its calls pause
            // this task only.
            let s = std::net::TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            Conn::Std(s)
        })
    }

    /// Writes `msg` and reads its echo into `buf`.
    fn round_trip(&mut self, msg: &[u8], buf: &mut [u8]) -> io::Result<()> {
        match self {
            Conn::Native(s) => {
                let mut s: &yieldloop::net::TcpStream = s;
                s.write_all(msg)?;
                s.read_exact(&mut buf[..msg.len()])
            }
            Conn::Std(s) => {
                s.write_all(msg)?;
                s.read_exact(&mut buf[..msg.len()])
            }
        }
    }
}

fn client(a: &Args, addr: SocketAddr) -> io::Result<String> {
    let (mode, n, rounds, size) = (a.mode.clone(), a.n, a.rounds, a.size);
    yieldloop::run(move || {
        // The scheduler and its stack pool are up: the baseline.
        yieldloop::spawn(|| ()).join().unwrap();
        let rss_base = vm_rss_kb();
        let connected = Rc::new(Cell::new(0usize));
        let failed = Rc::new(Cell::new(None::<String>));
        let go = Rc::new(Event::new());
        let mut tasks = Vec::with_capacity(n);
        let deadline = Instant::now() + Duration::from_secs(120);
        for batch in (0..n).step_by(256) {
            for _ in batch..(batch + 256).min(n) {
                let (mode, connected, failed, go) =
                    (mode.clone(), connected.clone(), failed.clone(), go.clone());
                tasks.push(yieldloop::spawn(move || -> io::Result<()> {
                    let msg = vec![b'x'; size];
                    let mut buf = [0u8; yieldloop_bench::BUF];
                    let setup = Conn::connect(&mode, addr).and_then(|mut c| {
                        c.round_trip(&msg, &mut buf)?;
                        Ok(c)
                    });
                    let mut conn = match setup {
                        Ok(c) => c,
                        Err(e) => {
                            failed.set(Some(e.to_string()));
                            connected.set(connected.get() + 1);
                            return Err(e);
                        }
                    };
                    connected.set(connected.get() + 1);
                    go.wait();
                    for _ in 0..rounds {
                        conn.round_trip(&msg, &mut buf)?;
                    }
                    Ok(())
                }));
            }
            let target = tasks.len();
            while connected.get() < target {
                if Instant::now() > deadline {
                    return Err(io::Error::other(format!(
                        "only {} of {target} connected in 120 s",
                        connected.get()
                    )));
                }
                yieldloop::sleep(Duration::from_millis(1));
            }
            if let Some(e) = failed.take() {
                return Err(io::Error::other(format!("a connection failed: {e}")));
            }
        }
        let rss = vm_rss_kb();
        let (u0, s0) = cpu_ns();
        let start = Instant::now();
        go.set();
        for t in tasks {
            t.join().map_err(|e| io::Error::other(format!("{e:?}")))??;
        }
        let wall = start.elapsed();
        let (u1, s1) = cpu_ns();
        let rts = (n * rounds) as f64;
        Ok(format!(
            "hook_conns mode={mode} n={n} rounds={rounds} size={size} rss_base_kb={rss_base} rss_kb={rss} \
             bytes_per_task={:.0} round_trips={} wall_s={:.3} cpu_ns_per_rt={:.0} user_ns_per_rt={:.0} sys_ns_per_rt={:.0}",
            (rss.saturating_sub(rss_base) * 1024) as f64 / n as f64,
            n * rounds,
            wall.as_secs_f64(),
            ((u1 - u0) + (s1 - s0)) as f64 / rts,
            (u1 - u0) as f64 / rts,
            (s1 - s0) as f64 / rts,
        ))
    })
}

/// Starts `--serve` as a child and reads its address from its first line.
fn start_server() -> (Child, SocketAddr) {
    let exe = std::env::current_exe().expect("the program's path");
    let mut child = Command::new(exe)
        .arg("--serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the echo server");
    let mut line = String::new();
    let out = child.stdout.take().expect("piped stdout");
    io::BufReader::new(out)
        .read_line(&mut line)
        .expect("the server's address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("the server said {line:?}"));
    (child, addr)
}

/// The echo server: one task per connection, yieldloop's own sockets.
fn serve() -> io::Result<()> {
    let listener = yieldloop::net::TcpListener::bind("127.0.0.1:0")?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    loop {
        let (stream, _) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("hook_conns --serve: accept: {e}");
                yieldloop::sleep(Duration::from_millis(10));
                continue;
            }
        };
        yieldloop::spawn(move || -> io::Result<()> {
            stream.set_nodelay(true)?;
            let mut buf = [0u8; yieldloop_bench::BUF];
            let (mut r, mut w) = (&stream, &stream);
            loop {
                let n = r.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                w.write_all(&buf[..n])?;
            }
        });
    }
}

/// The soft descriptor limit raised to the hard one: 10,000 connections
/// need more than the usual 1,024.
fn raise_fd_limit() {
    // SAFETY: an all-zero rlimit is a valid value to fill.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 && lim.rlim_cur < lim.rlim_max
    {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: a valid rlimit, within the hard limit.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

/// This process's resident memory, from /proc/self/status.
fn vm_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// User and system CPU time of the whole process, in nanoseconds.
fn cpu_ns() -> (u64, u64) {
    // SAFETY: an all-zero rusage is a valid value to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}
