//! An echo server: one task per connection, bytes sent back exactly as they
//! arrive, hardened against bad clients and bad moments.
//!
//! ```text
//! cargo run --release --example echo_server            # 127.0.0.1:1235
//! cargo run --release --example echo_server -- --addr 0.0.0.0:7000 --workers 1
//! nc 127.0.0.1 1235                                    # then type lines
//! ```
//!
//! Options:
//!
//! - `--addr HOST:PORT` (default 127.0.0.1:1235);
//! - `--workers N`: schedulers, one per thread, each accepting on its own
//!   `SO_REUSEPORT` listener (default: the number of cores);
//! - `--idle-timeout SECS`: close a connection that neither sends nor takes
//!   data for that long (default 300; 0 = never);
//! - `--max-conns N`: connections beyond N are closed at once (default
//!   10000);
//! - `--grace SECS`: on SIGINT/SIGTERM, how long live connections may take to
//!   finish before they are closed (default 5);
//! - `--quiet`: no per-connection log lines.
//!
//! Each connection's open and close, with the number of live connections,
//! is logged to stderr. When the client half-closes (shuts down its writing
//! side), the server finishes echoing what it got and closes. A client that
//! sends but never reads cannot grow the server's memory: each connection
//! holds one 16 KiB buffer (taken when its first byte arrives), and the
//! server stops reading while its write waits. A failed `accept` (for example "too many open files") is logged;
//! the loop pauses briefly and goes on. SIGINT or SIGTERM stops accepting,
//! lets live connections finish up to the grace period, and prints a
//! summary. SIGQUIT (Ctrl-\\ in a terminal) prints every task of every
//! worker to stderr, with what it waits on and where it is paused, and the
//! server goes on: `kill -QUIT <pid>`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::signal::{Signals, SIGINT, SIGQUIT, SIGTERM};
use yieldloop::{JoinHandle, Runtime};

mod args;
use args::Args;

/// Command-line settings.
#[derive(Clone, Debug)]
struct Config {
    addr: String,
    workers: usize,
    idle: Option<Duration>,
    max_conns: usize,
    grace: Duration,
    quiet: bool,
}

/// Counters shared by all workers, for the live count and the summary.
#[derive(Debug, Default)]
struct Stats {
    live: AtomicUsize,
    accepted: AtomicU64,
    rejected: AtomicU64,
    idle_closed: AtomicU64,
    errors: AtomicU64,
    cut_at_shutdown: AtomicU64,
    bytes: AtomicU64,
    accept_failures: AtomicU64,
}

fn main() {
    let mut args = Args::new(
        "echo_server [--addr HOST:PORT] [--workers N] [--idle-timeout SECS] [--max-conns N] \
         [--grace SECS] [--quiet]",
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = Config {
        addr: args.value_or("--addr", "127.0.0.1:1235".into()),
        workers: args.value_in("--workers", cores, 1..),
        // 0 seconds: no limit.
        idle: Some(Duration::from_secs(args.value_or("--idle-timeout", 300)))
            .filter(|idle| !idle.is_zero()),
        max_conns: args.value_or("--max-conns", 10_000),
        grace: Duration::from_secs(args.value_or("--grace", 5)),
        quiet: args.flag("--quiet"),
    };
    args.finish();
    if let Err(e) = serve(config) {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}

/// Starts the workers and waits for them to finish after a signal.
fn serve(config: Config) -> io::Result<()> {
    let listeners = yieldloop::net::reuseport_listeners(config.addr.as_str(), config.workers)?;
    eprintln!(
        "echo_server: listening on {} with {} worker(s)",
        listeners[0].local_addr()?,
        config.workers
    );
    let stats = Arc::new(Stats::default());
    let rt = Runtime::builder().workers(config.workers).build()?;
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(w, listener)| {
            let (config, stats) = (config.clone(), stats.clone());
            rt.spawn_on(w, move || worker(w, listener, &config, &stats))
        })
        .collect();
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("echo_server: worker failed: {e}"),
            Err(e) => eprintln!("echo_server: worker failed: {e}"),
        }
    }
    rt.shutdown();
    eprintln!(
        "echo_server: stopped. connections: {} accepted, {} rejected (over --max-conns), \
         {} closed idle, {} ended with errors, {} cut at shutdown; {} bytes echoed; \
         {} failed accepts",
        stats.accepted.load(Ordering::Relaxed),
        stats.rejected.load(Ordering::Relaxed),
        stats.idle_closed.load(Ordering::Relaxed),
        stats.errors.load(Ordering::Relaxed),
        stats.cut_at_shutdown.load(Ordering::Relaxed),
        stats.bytes.load(Ordering::Relaxed),
        stats.accept_failures.load(Ordering::Relaxed),
    );
    Ok(())
}

/// One worker: accepts until SIGINT/SIGTERM, then drains its connections.
/// Worker 0 also answers SIGQUIT with a task dump.
fn worker(
    w: usize,
    listener: std::net::TcpListener,
    config: &Config,
    stats: &Arc<Stats>,
) -> io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    // Each worker listens for itself: every listener sees every signal.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let dumper = if w == 0 {
        let mut quit = Signals::new([SIGQUIT])?;
        Some(yieldloop::Builder::new().name("sigquit").spawn(move || {
            while quit.recv().is_ok() {
                // Every worker's tasks, as Go prints its goroutines.
                eprintln!("{}", yieldloop::diag::dump());
            }
        })?)
    } else {
        None
    };
    let conns: Rc<RefCell<HashMap<u64, JoinHandle<()>>>> = Rc::default();

    let acceptor = {
        let (config, stats, conns) = (config.clone(), stats.clone(), conns.clone());
        yieldloop::spawn(move || accept_loop(&listener, &config, &stats, &conns))
    };

    // Pauses this task only; the acceptor and the connections go on.
    signals.recv()?;
    // Stop accepting: cancelling the acceptor drops (closes) the listener.
    acceptor.cancel();
    if let Some(d) = dumper {
        d.cancel();
    }
    let deadline = Instant::now() + config.grace;
    while !conns.borrow().is_empty() && Instant::now() < deadline {
        yieldloop::sleep(Duration::from_millis(20));
    }
    let left: Vec<_> = conns.borrow_mut().drain().map(|(_, h)| h).collect();
    stats
        .cut_at_shutdown
        .fetch_add(left.len() as u64, Ordering::Relaxed);
    for h in left {
        h.cancel();
    }
    Ok(())
}

fn accept_loop(
    listener: &TcpListener,
    config: &Config,
    stats: &Arc<Stats>,
    conns: &Rc<RefCell<HashMap<u64, JoinHandle<()>>>>,
) {
    let mut next_id = 0u64;
    let mut last_failure_log: Option<Instant> = None;
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, or a connection aborted before we got
                // it: nothing to do for that client. Log at most once a
                // second, wait a moment (descriptors may free up) and go on.
                stats.accept_failures.fetch_add(1, Ordering::Relaxed);
                if last_failure_log.map_or(true, |t| t.elapsed() >= Duration::from_secs(1)) {
                    eprintln!("echo_server: accept failed: {e}; retrying in 100 ms");
                    last_failure_log = Some(Instant::now());
                }
                yieldloop::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let live = stats.live.fetch_add(1, Ordering::Relaxed) + 1;
        if live > config.max_conns {
            // Over the limit: close at once, so the client sees EOF instead
            // of hanging.
            stats.live.fetch_sub(1, Ordering::Relaxed);
            stats.rejected.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        if !config.quiet {
            eprintln!("open  {peer} (live: {live})");
        }
        next_id += 1;
        let id = next_id;
        let (stats2, conns2, quiet, idle) =
            (stats.clone(), conns.clone(), config.quiet, config.idle);
        let handle = yieldloop::spawn(move || {
            /// Keeps the live count and the table right however the task
            /// ends, cancellation included.
            struct Done(Arc<Stats>, Rc<RefCell<HashMap<u64, JoinHandle<()>>>>, u64);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.live.fetch_sub(1, Ordering::Relaxed);
                    self.1.borrow_mut().remove(&self.2);
                }
            }
            let _done = Done(stats2.clone(), conns2, id);
            let result = echo(&stream, idle);
            drop(stream);
            let live = stats2.live.load(Ordering::Relaxed) - 1;
            match result {
                Ok(n) => {
                    stats2.bytes.fetch_add(n, Ordering::Relaxed);
                    if !quiet {
                        eprintln!("close {peer} after {n} bytes (live: {live})");
                    }
                }
                Err(e) => {
                    if e.kind() == io::ErrorKind::TimedOut {
                        stats2.idle_closed.fetch_add(1, Ordering::Relaxed);
                    } else {
                        stats2.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    if !quiet {
                        eprintln!("close {peer}: {e} (live: {live})");
                    }
                }
            }
        });
        // A connection that already ended has removed itself; don't keep
        // its handle.
        if !handle.is_finished() {
            conns.borrow_mut().insert(id, handle);
        }
    }
}

/// The read buffer of a connection that sends: 16 KiB, a few reads of a
/// large message but a small bill for ten thousand connections.
const BUF_SIZE: usize = 16 * 1024;

/// Echoes until the client stops sending; returns the bytes echoed.
fn echo(stream: &TcpStream, idle: Option<Duration>) -> io::Result<u64> {
    stream.set_read_timeout(idle)?;
    // A client that stops reading stalls our write; the same limit applies.
    stream.set_write_timeout(idle)?;
    // Wait for the first byte before taking a buffer: an idle connection
    // then costs its task's stack page and nothing more.
    if stream.peek(&mut [0u8; 1])? == 0 {
        let _ = stream.shutdown(Shutdown::Write);
        return Ok(0);
    }
    let mut buf = vec![0u8; BUF_SIZE];
    let mut total = 0u64;
    let (mut r, mut w) = (stream, stream);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            // Half-close from the client: everything read was written back.
            let _ = stream.shutdown(Shutdown::Write);
            return Ok(total);
        }
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
}
