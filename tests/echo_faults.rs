//! The `echo_server` example under faults, run as a child process on
//! `127.0.0.1:0` and driven from the outside with plain blocking std
//! sockets: misbehaving clients next to a well-behaved one, ten thousand
//! idle connections, descriptor exhaustion, SIGINT while clients are live,
//! `--max-conns` and `--idle-timeout`.
//!
//! Every wait is bounded, and the time limits are generous: the machines
//! running the tests are shared and noisy. The tests take a lock so that
//! they run one at a time: several of them load the machine (thousands of
//! connections, dozens of client threads) and others measure latencies or
//! timeouts, which such load would distort. Each test prints what it
//! measured (`--nocapture` shows it).
//!
//! The tests that watch the server's descriptors and memory read them from
//! `/proc`, and run on Linux only; elsewhere the helpers only they use
//! stay unused.

#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

mod util;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use util::example::KillOnDrop;
use util::XorShift;

/// How long a client waits for any one answer before the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the server gets to start, or to exit after it was told to.
const SERVER_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// The server as a child process.
// ---------------------------------------------------------------------------

/// Runs the tests of this file one at a time (see the module docs).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running `echo_server`, killed when dropped.
struct Server {
    child: KillOnDrop,
    pid: i32,
    addr: SocketAddr,
    /// Its stderr, a line at a time, read by a background thread.
    stderr: Receiver<String>,
}

impl Server {
    /// Starts the server on `127.0.0.1:0` with one worker and `args`.
    fn start(args: &[&str]) -> Server {
        let mut cmd = Command::new(util::example::path("echo_server"));
        cmd.args(["--addr", "127.0.0.1:0", "--workers", "1"])
            .args(args);
        Server::spawn(cmd)
    }

    /// Starts the server like [`Server::start`], under a descriptor limit
    /// of `limit` (set by a shell that then execs the server, so the pid is
    /// the server's).
    fn start_with_fd_limit(limit: u32, args: &[&str]) -> Server {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
            .arg(util::example::path("echo_server"))
            .args(["--addr", "127.0.0.1:0", "--workers", "1"])
            .args(args);
        Server::spawn(cmd)
    }

    /// Spawns `cmd` and waits for its `listening on ADDR with N worker(s)`
    /// line.
    fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the echo server");
        let pipe = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let pid = child.id() as i32;
        let mut server = Server {
            child: KillOnDrop(child),
            pid,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr: rx,
        };
        let rest = server.line("echo_server: listening on ", SERVER_TIMEOUT);
        // "127.0.0.1:PORT with 1 worker(s)"
        server.addr = rest
            .split_whitespace()
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {rest:?}"));
        assert!(
            rest.ends_with(" with 1 worker(s)"),
            "unexpected listening line: {rest:?}"
        );
        server
    }

    /// Waits up to `limit` for a stderr line starting with `prefix` and
    /// returns the rest of it; lines before it are skipped.
    fn line(&self, prefix: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => match line.strip_prefix(prefix) {
                    Some(rest) => return rest.to_string(),
                    None => {
                        if seen.len() < 50 {
                            seen.push(line);
                        }
                    }
                },
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no stderr line {prefix:?} within {limit:?}; got {seen:?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stderr closed before a line {prefix:?}; got {seen:?}")
                }
            }
        }
    }

    /// How many descriptors the server has open.
    #[cfg(target_os = "linux")]
    fn fds(&self) -> usize {
        self.fd_numbers().len()
    }

    /// The numbers of the descriptors the server has open.
    #[cfg(target_os = "linux")]
    fn fd_numbers(&self) -> Vec<i32> {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .expect("listing the server's descriptors")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// How many descriptors the server has open when it is up and idle.
    ///
    /// It prints its `listening on` line before it sets up its workers, so
    /// a count taken right then can be short. One connection, echoed, shows
    /// it is all set up; the count once that connection is closed again is
    /// the base. (The server counts that connection as accepted.)
    #[cfg(target_os = "linux")]
    fn base_fds(&self) -> usize {
        let mut probe = connect(self.addr);
        round_trip(&mut probe, b"probe");
        let with_probe = self.fds();
        drop(probe);
        eventually(SERVER_TIMEOUT, Duration::from_millis(10), || {
            self.fds() < with_probe
        })
        .expect("the server did not close the probe connection");
        self.fds()
    }

    /// The server's resident set size in KiB (`VmRSS`).
    #[cfg(target_os = "linux")]
    fn rss_kib(&self) -> u64 {
        rss_kib(self.pid).expect("reading the server's VmRSS")
    }

    /// Sends `signal` to the server.
    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our
        // own child, not reaped yet (it is reaped only by `wait_exit` or
        // on drop).
        let r = unsafe { libc::kill(self.pid, signal) };
        assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Panics if the server has exited.
    fn assert_running(&mut self) {
        let status = self.child.0.try_wait().expect("polling the server");
        assert!(status.is_none(), "the server exited: {status:?}");
    }

    /// Waits up to `limit` for the server to exit.
    fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.0.try_wait().expect("waiting for the server") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {limit:?}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM, expects a clean exit and returns the summary line.
    fn stop(&mut self) -> Summary {
        self.signal(libc::SIGTERM);
        let status = self.wait_exit(SERVER_TIMEOUT);
        assert!(status.success(), "the server exited with {status}");
        self.summary()
    }

    /// The `echo_server: stopped.` line, parsed.
    fn summary(&self) -> Summary {
        Summary::parse(&self.line("echo_server: stopped.", SERVER_TIMEOUT))
    }
}

/// `VmRSS` of process `pid` in KiB, if it still runs.
#[cfg(target_os = "linux")]
fn rss_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The counters of the server's `echo_server: stopped.` line.
#[derive(Debug, Default)]
struct Summary {
    text: String,
    accepted: u64,
    rejected: u64,
    idle_closed: u64,
    errors: u64,
    cut: u64,
    bytes: u64,
    failed_accepts: u64,
}

impl Summary {
    /// Reads the numbers of " connections: 1 accepted, 0 rejected (over
    /// --max-conns), 0 closed idle, 0 ended with errors, 0 cut at shutdown;
    /// 12 bytes echoed; 0 failed accepts": each number names what follows.
    fn parse(text: &str) -> Summary {
        let mut s = Summary {
            text: text.to_string(),
            ..Summary::default()
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut found = 0;
        for pair in words.windows(2) {
            let Ok(n) = pair[0].parse::<u64>() else {
                continue;
            };
            let field = match pair[1].trim_end_matches([',', ';']) {
                "accepted" => &mut s.accepted,
                "rejected" => &mut s.rejected,
                "closed" => &mut s.idle_closed,
                "ended" => &mut s.errors,
                "cut" => &mut s.cut,
                "bytes" => &mut s.bytes,
                "failed" => &mut s.failed_accepts,
                _ => continue,
            };
            *field = n;
            found += 1;
        }
        assert_eq!(found, 7, "unexpected summary line: {text:?}");
        s
    }
}

// ---------------------------------------------------------------------------
// Clients.
// ---------------------------------------------------------------------------

/// Connects with [`CLIENT_TIMEOUT`] on the connect, reads and writes.
fn connect(addr: SocketAddr) -> TcpStream {
    let s =
        TcpStream::connect_timeout(&addr, CLIENT_TIMEOUT).expect("connecting to the echo server");
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

/// Sends `msg` and expects it back byte for byte.
fn round_trip(s: &mut TcpStream, msg: &[u8]) {
    s.write_all(msg).expect("sending");
    let mut back = vec![0; msg.len()];
    s.read_exact(&mut back).expect("reading the echo");
    assert!(back == msg, "the echo differs from what was sent");
}

/// Closes `s` with a reset (RST) instead of an orderly FIN: `SO_LINGER`
/// on with a zero timeout, then close.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is open (owned by `s`), and the option value
    // points to a live `linger` of the length passed.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
    drop(s);
}

/// Reads until EOF or an error; returns how long it took and how it ended
/// (`Ok(n)` with the bytes read, or the error).
fn time_to_close(s: &mut TcpStream, limit: Duration) -> (Duration, std::io::Result<usize>) {
    let start = Instant::now();
    let (data, end) = util::read_to_end_std(s, limit);
    (start.elapsed(), end.map(|()| data.len()))
}

/// Whether `e` is how a socket closed by the peer (FIN or RST) shows up.
fn is_closed_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe
    )
}

/// Polls `cond` every `every` until it holds or `limit` passes; returns
/// how long it took, or `None` on timeout.
fn eventually(
    limit: Duration,
    every: Duration,
    mut cond: impl FnMut() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if cond() {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        thread::sleep(every);
    }
}

/// The `q` quantile (0..=1) of `samples`, sorted in place.
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i]
}

/// Raises this process's soft descriptor limit to the hard limit (children
/// inherit it); returns the new soft limit.
fn raise_fd_limit() -> libc::rlim_t {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable `rlimit` for the call to fill.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    assert_eq!(r, 0, "getrlimit: {}", std::io::Error::last_os_error());
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid `rlimit`; raising the soft limit up to
        // the hard one needs no privilege.
        let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
        assert_eq!(r, 0, "setrlimit: {}", std::io::Error::last_os_error());
    }
    lim.rlim_cur
}

// ---------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------

/// Resetting, half-closing, trickling and never-reading clients do not slow a well-behaved client, corrupt its echoes or grow the server's memory.
#[cfg(target_os = "linux")]
#[test]
fn misbehaving_clients_do_not_hurt_a_well_behaved_one() {
    let _serial = one_at_a_time();
    const RESETTERS: usize = 20;
    const HALF_CLOSERS: usize = 20;
    // Resetters and half-closers go round after round until the
    // well-behaved client is done, at most this many rounds each.
    const MAX_ROUNDS: usize = 100;
    const TRICKLERS: usize = 10;
    const TRICKLE_BYTES: usize = 15; // one every 200 ms: 3 s
    const NON_READERS: usize = 10;
    const ROUND_TRIPS: usize = 300;

    let mut server = Server::start(&[]);
    let addr = server.addr;
    let fds_before = server.base_fds();
    let rss_before = server.rss_kib();

    // Sample the server's RSS all along.
    let stop_sampling = Arc::new(AtomicBool::new(false));
    let rss_peak = Arc::new(AtomicU64::new(rss_before));
    let sampler = {
        let (stop, peak, pid) = (stop_sampling.clone(), rss_peak.clone(), server.pid);
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                if let Some(kib) = rss_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_millis(20));
            }
        })
    };

    // Set when the well-behaved client is done: the misbehaving ones stop
    // (at the latest after a minute).
    let good_done = Arc::new(AtomicBool::new(false));
    let keep_going = {
        let (done, until) = (good_done.clone(), Instant::now() + Duration::from_secs(60));
        move || !done.load(Ordering::Relaxed) && Instant::now() < until
    };
    // Connections made by the resetters and half-closers, and resets.
    let made = Arc::new(AtomicU64::new(0));
    let resets = Arc::new(AtomicU64::new(0));

    let mut bad = Vec::new();
    // Part of a message, then a reset.
    for t in 0..RESETTERS {
        let (keep_going, made, resets) = (keep_going.clone(), made.clone(), resets.clone());
        bad.push(thread::spawn(move || {
            let mut rng = XorShift::new(100 + t as u64);
            for _ in 0..MAX_ROUNDS {
                if !keep_going() {
                    break;
                }
                let mut s = connect(addr);
                made.fetch_add(1, Ordering::Relaxed);
                let len = rng.range(1, 2000) as usize;
                let part = rng.bytes(len);
                s.write_all(&part).expect("resetter sending");
                thread::sleep(Duration::from_millis(rng.below(30)));
                reset(s);
                resets.fetch_add(1, Ordering::Relaxed);
                thread::sleep(Duration::from_millis(rng.below(100)));
            }
        }));
    }
    // A whole message, a half-close, the echo read to EOF.
    for t in 0..HALF_CLOSERS {
        let (keep_going, made) = (keep_going.clone(), made.clone());
        bad.push(thread::spawn(move || {
            let mut rng = XorShift::new(200 + t as u64);
            for _ in 0..MAX_ROUNDS {
                if !keep_going() {
                    break;
                }
                let mut s = connect(addr);
                made.fetch_add(1, Ordering::Relaxed);
                let len = rng.range(1, 32 * 1024) as usize;
                let msg = rng.bytes(len);
                s.write_all(&msg).expect("half-closer sending");
                s.shutdown(Shutdown::Write).expect("half-closing");
                let (back, end) = util::read_to_end_std(&mut s, CLIENT_TIMEOUT);
                end.expect("reading the echo to EOF after a half-close");
                assert!(
                    back == msg,
                    "half-closer: echoed {} of {}",
                    back.len(),
                    msg.len()
                );
                thread::sleep(Duration::from_millis(rng.below(200)));
            }
        }));
    }
    // One byte every 200 ms, each echoed.
    for t in 0..TRICKLERS {
        bad.push(thread::spawn(move || {
            let mut s = connect(addr);
            for i in 0..TRICKLE_BYTES {
                round_trip(&mut s, &[(t * 16 + i) as u8]);
                thread::sleep(Duration::from_millis(200));
            }
            s.shutdown(Shutdown::Write).unwrap();
            let (rest, end) = util::read_to_end_std(&mut s, CLIENT_TIMEOUT);
            end.expect("trickler reading EOF");
            assert!(rest.is_empty(), "trickler got {} extra bytes", rest.len());
        }));
    }
    // Send, never read, until the writes stall; hold the connection until
    // the well-behaved client is done.
    let mut non_readers = Vec::new();
    for t in 0..NON_READERS {
        let keep_going = keep_going.clone();
        non_readers.push(thread::spawn(move || {
            let s = connect(addr);
            s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
            let chunk = XorShift::new(300 + t as u64).bytes(64 * 1024);
            let (mut sent, cap, deadline) =
                (0u64, 256u64 << 20, Instant::now() + Duration::from_secs(60));
            let stalled = loop {
                if sent >= cap || Instant::now() > deadline {
                    break false;
                }
                match (&s).write(&chunk) {
                    Ok(n) => sent += n as u64,
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        break true
                    }
                    Err(e) => panic!("non-reader: write failed after {sent} bytes: {e}"),
                }
            };
            while keep_going() {
                thread::sleep(Duration::from_millis(10));
            }
            drop(s);
            (stalled, sent)
        }));
    }

    // The well-behaved client, while all of that goes on.
    thread::sleep(Duration::from_millis(300));
    let mut good = connect(addr);
    good.set_nodelay(true).unwrap();
    let mut rng = XorShift::new(7);
    let mut latencies = Vec::with_capacity(ROUND_TRIPS);
    let started = Instant::now();
    for _ in 0..ROUND_TRIPS {
        let msg = rng.bytes(64);
        let t = Instant::now();
        round_trip(&mut good, &msg);
        latencies.push(t.elapsed());
        thread::sleep(Duration::from_millis(5));
    }
    let good_time = started.elapsed();
    let rss_during = server.rss_kib();
    let fds_during = server.fds();

    good_done.store(true, Ordering::Relaxed);
    let non_reader_results: Vec<(bool, u64)> = non_readers
        .into_iter()
        .map(|h| h.join().expect("a non-reader failed"))
        .collect();
    for h in bad {
        h.join().expect("a misbehaving client failed");
    }
    drop(good);

    // Every connection's descriptor is closed again.
    let fds_back = eventually(Duration::from_secs(15), Duration::from_millis(20), || {
        server.fds() <= fds_before
    });
    let fds_left = server.fds();
    stop_sampling.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let rss_after = server.rss_kib();
    let rss_peak = rss_peak.load(Ordering::Relaxed);
    server.assert_running();
    let summary = server.stop();

    let p50 = quantile(&mut latencies, 0.50);
    let p99 = quantile(&mut latencies, 0.99);
    let max = *latencies.last().unwrap();
    let stuffed: Vec<u64> = non_reader_results.iter().map(|r| r.1 / 1024).collect();
    println!(
        "misbehaving clients: {ROUND_TRIPS} round trips of 64 bytes in {good_time:?}: \
         p50 {p50:?}, p99 {p99:?}, max {max:?}; server VmRSS {rss_before} KiB at start, \
         {rss_during} KiB under load, peak {rss_peak} KiB, {rss_after} KiB after; \
         fds {fds_before} before, {fds_during} under load, back in {fds_back:?}; \
         {} resets, {} half-closes; non-readers stalled after KiB {stuffed:?};{}",
        resets.load(Ordering::Relaxed),
        made.load(Ordering::Relaxed) - resets.load(Ordering::Relaxed),
        summary.text
    );
    assert!(p99 < Duration::from_millis(250), "p99 latency {p99:?}");
    assert!(
        rss_peak < 100 * 1024,
        "server VmRSS peaked at {rss_peak} KiB"
    );
    assert!(
        non_reader_results.iter().all(|r| r.0),
        "a non-reader was never stalled: {non_reader_results:?}"
    );
    assert!(
        fds_back.is_some(),
        "the server kept descriptors: {fds_left} > {fds_before}"
    );
    // Theirs, the tricklers', the non-readers', the good one and the probe.
    let connections = made.load(Ordering::Relaxed) + (TRICKLERS + NON_READERS + 2) as u64;
    assert_eq!(summary.accepted, connections, "{}", summary.text);
    assert_eq!(summary.rejected, 0, "{}", summary.text);
    assert_eq!(summary.cut, 0, "{}", summary.text);
    // The resets and the non-readers (closed with unread data, which is a
    // reset too) end with errors on the server's side.
    assert!(
        summary.errors >= resets.load(Ordering::Relaxed),
        "{}",
        summary.text
    );
}

/// Ten thousand idle connections are all held at once, and every descriptor is released once they close.
#[cfg(target_os = "linux")]
#[test]
fn ten_thousand_idle_connections_are_held_and_released() {
    let _serial = one_at_a_time();
    const CONNS: usize = 10_000;
    let limit = raise_fd_limit();
    assert!(
        limit >= CONNS as libc::rlim_t + 100,
        "RLIMIT_NOFILE hard limit {limit} is too low for {CONNS} connections"
    );
    let mut server = Server::start(&["--max-conns", "20000", "--quiet"]);
    let base = server.base_fds();
    let rss_before = server.rss_kib();

    let start = Instant::now();
    let mut conns = Vec::with_capacity(CONNS);
    for i in 0..CONNS {
        match TcpStream::connect_timeout(&server.addr, CLIENT_TIMEOUT) {
            Ok(s) => conns.push(s),
            Err(e) => panic!("connection {i} failed: {e}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "only {i} connections in 25 s"
        );
    }
    let opened = start.elapsed();
    let held = eventually(Duration::from_secs(20), Duration::from_millis(20), || {
        server.fds() >= base + CONNS
    });
    let fds_held = server.fds();
    let rss_held = server.rss_kib();
    assert!(
        held.is_some(),
        "the server holds {fds_held} descriptors, expected {base} + {CONNS}"
    );
    // Still serving while holding them all.
    round_trip(&mut conns[CONNS / 2], b"still there?");

    let close_start = Instant::now();
    drop(conns);
    let released = eventually(Duration::from_secs(20), Duration::from_millis(20), || {
        server.fds() <= base
    });
    let fds_after = server.fds();
    let closed = close_start.elapsed();
    let rss_after = server.rss_kib();
    println!(
        "{CONNS} idle connections: opened in {opened:?}, held by the server {held:?} later; \
         server fds {base} before, {fds_held} holding them, {fds_after} {closed:?} after \
         closing them all (released in {released:?}); VmRSS {rss_before} KiB before, \
         {rss_held} KiB holding them, {rss_after} KiB after"
    );
    assert!(
        released.is_some(),
        "the server still holds {fds_after} descriptors, {base} before"
    );
    assert_eq!(fds_held, base + CONNS, "descriptors while holding them");
    let mut c = connect(server.addr);
    round_trip(&mut c, b"and after");
    drop(c);
    let summary = server.stop();
    assert_eq!(summary.accepted, CONNS as u64 + 2, "{}", summary.text);
    assert_eq!(summary.rejected, 0, "{}", summary.text);
}

/// Out of descriptors the server logs failed accepts and keeps going, and serves new clients once descriptors free up.
#[cfg(target_os = "linux")]
#[test]
fn descriptor_exhaustion_is_survived() {
    let _serial = one_at_a_time();
    const LIMIT: u32 = 48;
    const CONNS: usize = 80;
    let mut server = Server::start_with_fd_limit(LIMIT, &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid)).unwrap();
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or("")
        .to_string();
    assert!(
        open_files.split_whitespace().nth(3) == Some("48"),
        "the limit did not apply: {open_files:?}"
    );
    let base = server.base_fds();

    // More connections than the server has descriptors for: the rest wait
    // in the listen backlog.
    let mut conns: Vec<TcpStream> = (0..CONNS).map(|_| connect(server.addr)).collect();
    let failure = server.line("echo_server: accept failed: ", CLIENT_TIMEOUT);
    assert!(
        failure.contains("Too many open files") || failure.contains("os error 24"),
        "accept failed for another reason: {failure}"
    );
    // Every descriptor number below the limit is taken. (Descriptors
    // inherited above it, if any, are not counted.)
    let fds_at_limit = server.fds();
    let below_limit = server
        .fd_numbers()
        .iter()
        .filter(|&&fd| fd < LIMIT as i32)
        .count();
    assert_eq!(below_limit, LIMIT as usize, "not out of descriptors");
    // The first connections were accepted and are served even now.
    round_trip(&mut conns[0], b"served at the limit");
    server.assert_running();

    let close_start = Instant::now();
    drop(conns);
    // The server accepts the ones from the backlog as descriptors free up
    // (each is at EOF already) and closes them all.
    let released = eventually(Duration::from_secs(20), Duration::from_millis(20), || {
        server.fds() <= base
    });
    let released_in = close_start.elapsed();
    let fds_after = server.fds();
    let new_start = Instant::now();
    let mut c = connect(server.addr);
    round_trip(&mut c, b"a new client after the storm");
    let served_in = new_start.elapsed();
    drop(c);
    server.assert_running();
    let summary = server.stop();
    println!(
        "descriptor exhaustion: limit {LIMIT}, server fds {base} at start, {fds_at_limit} at \
         the limit with {CONNS} clients, {fds_after} after they closed (in {released_in:?}, \
         released {released:?}); a new client served in {served_in:?};{}",
        summary.text
    );
    assert!(
        released.is_some(),
        "the server holds {fds_after} descriptors, {base} at start"
    );
    assert_eq!(summary.accepted, CONNS as u64 + 2, "{}", summary.text);
    assert!(summary.failed_accepts >= 1, "{}", summary.text);
}

/// SIGQUIT prints a dump of every task, the connection's among them
/// waiting on its socket with a backtrace through the server's code, and
/// the server goes on serving.
#[test]
fn sigquit_prints_a_task_dump_and_the_server_goes_on() {
    let _serial = one_at_a_time();
    let mut server = Server::start(&[]);
    let mut client = connect(server.addr);
    // Served once: the workers (and their SIGQUIT listener) are up.
    round_trip(&mut client, b"before the dump");
    server.signal(libc::SIGQUIT);
    let head = server.line("yieldloop task dump: ", SERVER_TIMEOUT);
    assert!(head.contains("task(s)"), "{head}");
    // The connection task waits for its socket; the acceptor for a
    // connection; both backtraces run through the example's functions.
    let waiting = server.line("task ", SERVER_TIMEOUT);
    let mut lines = vec![waiting];
    // Until every expected line came: resolving the backtraces' names can
    // leave long gaps between lines on a loaded machine.
    let needles = [
        "waiting on fd",
        "waiting on a connection on fd",
        "echo_server::",
    ];
    let deadline = Instant::now() + SERVER_TIMEOUT;
    while Instant::now() < deadline {
        let text = lines.join("\n");
        if needles.iter().all(|n| text.contains(n)) {
            break;
        }
        if let Ok(l) = server.stderr.recv_timeout(Duration::from_millis(300)) {
            lines.push(l);
        }
    }
    let text = lines.join("\n");
    assert!(text.contains("waiting on fd"), "{text}");
    assert!(text.contains("waiting on a connection on fd"), "{text}");
    assert!(text.contains("echo_server::"), "{text}");
    round_trip(&mut client, b"after the dump");
    server.assert_running();
    drop(client);
    let summary = server.stop();
    assert_eq!(summary.accepted, 1, "{}", summary.text);
}

/// After SIGINT a live client can finish its conversation, new connections are refused, and the server exits 0 once it is done.
#[test]
fn sigint_drains_a_live_client_and_refuses_new_ones() {
    let _serial = one_at_a_time();
    let mut server = Server::start(&["--grace", "10"]);
    let mut client = connect(server.addr);
    let mut sent = 0;
    for msg in [&b"before the signal"[..], b"and more"] {
        round_trip(&mut client, msg);
        sent += msg.len();
    }

    server.signal(libc::SIGINT);
    let signalled = Instant::now();
    // Mid-conversation: still echoed after the signal.
    round_trip(&mut client, b"after the signal");
    sent += b"after the signal".len();

    // The listener is closed: new connections are refused (probing from
    // 1 s after the signal, long after the server handled it).
    thread::sleep(Duration::from_secs(1).saturating_sub(signalled.elapsed()));
    for _ in 0..3 {
        match TcpStream::connect_timeout(&server.addr, CLIENT_TIMEOUT) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}"),
            Ok(mut late) => {
                // Only a reset or EOF may come: nobody serves it.
                late.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let _ = late.write_all(b"x");
                let mut b = [0u8; 1];
                match late.read(&mut b) {
                    Ok(0) => {}
                    Ok(_) => panic!("a connection made after the signal was echoed"),
                    Err(e) => assert!(is_closed_error(&e), "{e}"),
                }
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
    server.assert_running();

    // The client finishes: one more message, a half-close, EOF.
    client.write_all(b"last words").unwrap();
    sent += b"last words".len();
    client.shutdown(Shutdown::Write).unwrap();
    let (back, end) = util::read_to_end_std(&mut client, CLIENT_TIMEOUT);
    end.expect("reading to EOF after the half-close");
    assert_eq!(back, b"last words");
    let finished = Instant::now();
    let status = server.wait_exit(SERVER_TIMEOUT);
    let exit_after = finished.elapsed();
    let summary = server.summary();
    println!(
        "SIGINT drain: client finished {:?} after the signal, server exited {exit_after:?} \
         after that with {status};{}",
        finished - signalled,
        summary.text
    );
    assert!(status.success(), "exit status {status}");
    // Well before the 10 s grace ran out: it waited for the client only.
    assert!(
        exit_after < Duration::from_secs(5),
        "exited {exit_after:?} after the client"
    );
    assert_eq!(summary.accepted, 1, "{}", summary.text);
    assert_eq!(summary.cut, 0, "{}", summary.text);
    assert_eq!(summary.errors, 0, "{}", summary.text);
    assert_eq!(summary.bytes, sent as u64, "{}", summary.text);
}

/// With `--grace 1`, a client that never finishes after SIGINT is cut about a second later and counted.
#[test]
fn sigint_cuts_a_client_that_never_finishes_after_the_grace() {
    let _serial = one_at_a_time();
    let mut server = Server::start(&["--grace", "1"]);
    let mut lingerer = connect(server.addr);
    round_trip(&mut lingerer, b"I will not leave");

    server.signal(libc::SIGINT);
    let signalled = Instant::now();
    let (cut_after, end) = time_to_close(&mut lingerer, CLIENT_TIMEOUT);
    let status = server.wait_exit(SERVER_TIMEOUT);
    let exit_after = signalled.elapsed();
    let summary = server.summary();
    println!(
        "SIGINT with --grace 1: the idle client was cut {cut_after:?} after the signal \
         ({end:?}); the server exited {exit_after:?} after it with {status};{}",
        summary.text
    );
    match end {
        Ok(n) => assert_eq!(n, 0, "unexpected data"),
        Err(e) => assert!(is_closed_error(&e), "the cut client saw {e}"),
    }
    assert!(
        cut_after >= Duration::from_millis(800) && cut_after < Duration::from_secs(6),
        "cut {cut_after:?} after the signal, with a 1 s grace"
    );
    assert!(status.success(), "exit status {status}");
    assert!(
        summary.text.contains(" 1 cut at shutdown"),
        "{}",
        summary.text
    );
    assert_eq!(summary.accepted, 1, "{}", summary.text);
}

/// With `--max-conns 2` a third connection is closed at once while the first two keep being served.
#[test]
fn connections_over_max_conns_are_closed_at_once() {
    let _serial = one_at_a_time();
    let mut server = Server::start(&["--max-conns", "2"]);
    let mut first = connect(server.addr);
    let mut second = connect(server.addr);
    // Echoed: both are accepted and counted live.
    round_trip(&mut first, b"one");
    round_trip(&mut second, b"two");

    let mut third = connect(server.addr);
    let (closed_after, end) = time_to_close(&mut third, Duration::from_secs(5));
    match &end {
        Ok(n) => assert_eq!(*n, 0, "the third connection got data"),
        Err(e) => assert!(is_closed_error(e), "the third connection saw {e}"),
    }
    assert!(
        closed_after < Duration::from_secs(2),
        "closed only after {closed_after:?}"
    );
    round_trip(&mut first, b"one still");
    round_trip(&mut second, b"two still");

    // Once one leaves, a new connection takes its place.
    drop(first);
    let mut replaced = None;
    let took = eventually(Duration::from_secs(10), Duration::from_millis(50), || {
        let mut s = connect(server.addr);
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        if s.write_all(b"me now?").is_err() {
            return false;
        }
        let mut back = [0u8; 7];
        if s.read_exact(&mut back).is_ok() && &back == b"me now?" {
            replaced = Some(s);
            return true;
        }
        false
    });
    round_trip(&mut second, b"two again");
    drop((second, replaced));
    let summary = server.stop();
    println!(
        "--max-conns 2: the third connection was closed {closed_after:?} after connecting \
         ({end:?}); a replacement was served {took:?} after the first left;{}",
        summary.text
    );
    assert!(
        took.is_some(),
        "no new connection was served after the first left"
    );
    assert!(summary.rejected >= 1, "{}", summary.text);
}

/// With `--idle-timeout 1` an idle connection is closed within a few seconds while an active one stays open.
#[test]
fn idle_connections_are_closed_and_active_ones_are_not() {
    let _serial = one_at_a_time();
    let mut server = Server::start(&["--idle-timeout", "1"]);
    let mut idle = connect(server.addr);
    round_trip(&mut idle, b"then silence");
    let idle_since = Instant::now();
    let addr = server.addr;
    let active = thread::spawn(move || {
        let mut s = connect(addr);
        // 3 s of a message every 200 ms, well inside the 1 s limit.
        for i in 0..15u8 {
            round_trip(&mut s, &[b'a', i]);
            thread::sleep(Duration::from_millis(200));
        }
        round_trip(&mut s, b"still open after 3 s");
        s.shutdown(Shutdown::Write).unwrap();
        let (rest, end) = util::read_to_end_std(&mut s, CLIENT_TIMEOUT);
        end.expect("the active client reading EOF");
        assert!(rest.is_empty());
    });
    let (_, end) = time_to_close(&mut idle, CLIENT_TIMEOUT);
    let closed_after = idle_since.elapsed();
    active.join().expect("the active client was disturbed");
    let summary = server.stop();
    println!(
        "--idle-timeout 1: the idle connection was closed {closed_after:?} after its last \
         echo ({end:?}); the active one lasted 3 s;{}",
        summary.text
    );
    match end {
        Ok(n) => assert_eq!(n, 0, "unexpected data"),
        Err(e) => assert!(is_closed_error(&e), "the idle client saw {e}"),
    }
    assert!(
        closed_after >= Duration::from_millis(900) && closed_after < Duration::from_secs(5),
        "closed {closed_after:?} after going idle, with a 1 s limit"
    );
    assert_eq!(summary.idle_closed, 1, "{}", summary.text);
    assert_eq!(summary.accepted, 2, "{}", summary.text);
}
