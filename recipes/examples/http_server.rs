//! An HTTP/1.1 server: one task per connection, keep-alive and pipelining,
//! requests parsed with `httparse`, a slow route that holds up nothing else.
//!
//! ```text
//! cargo run --release --example http_server                 # 127.0.0.1:8080, a scheduler per core
//! cargo run --release --example http_server -- --workers 1  # one thread
//! curl -i http://127.0.0.1:8080/                            # 200, a greeting
//! curl -i 'http://127.0.0.1:8080/sleep?ms=500'              # 200 after half a second
//! ```
//!
//! Options:
//!
//! - `--addr HOST:PORT` (default 127.0.0.1:8080);
//! - `--workers N`: schedulers, one per thread, each accepting on its own
//!   `SO_REUSEPORT` listener (default: the number of cores);
//! - `--idle-timeout SECS`: close a connection silent for that long
//!   (default 60; 0 = never);
//! - `--max-body BYTES`: largest request body taken (read and thrown away;
//!   default 1 MiB, more gets 413);
//! - `--log`: one line per connection when it ends.
//!
//! Routes: `GET /`, `GET /sleep?ms=N` (sleeps with `yieldloop::sleep`, so
//! the thread serves other connections meanwhile), 404 for other paths, 405
//! for methods other than `GET`/`HEAD`. Malformed requests get 400, heads
//! over 8 KiB 431; both close that connection only. The connection handling
//! is `yieldloop_recipes::http::serve_connection` (`recipes/src/http.rs`),
//! shared with the benchmarks; this file is the accept side.

use std::io;
use std::rc::Rc;
use std::time::Duration;

use yieldloop::net::TcpListener;
use yieldloop::Runtime;
use yieldloop_recipes::http::{serve_connection, Limits};

/// Command-line settings.
#[derive(Clone, Debug)]
struct Config {
    addr: String,
    workers: usize,
    limits: Limits,
    log: bool,
}

fn main() {
    let config = match parse_args() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!(
                "http_server: {msg}\nusage: http_server [--addr HOST:PORT] [--workers N] \
                 [--idle-timeout SECS] [--max-body BYTES] [--log]"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = serve(config) {
        eprintln!("http_server: {e}");
        std::process::exit(1);
    }
}

fn parse_args() -> Result<Config, String> {
    let mut c = Config {
        addr: "127.0.0.1:8080".into(),
        workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        limits: Limits::default(),
        log: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--addr" => c.addr = value("--addr")?,
            "--workers" => c.workers = number(&value("--workers")?)?.max(1) as usize,
            "--idle-timeout" => {
                let secs = number(&value("--idle-timeout")?)?;
                c.limits.idle_timeout = (secs > 0).then(|| Duration::from_secs(secs));
            }
            "--max-body" => c.limits.max_body = number(&value("--max-body")?)?,
            "--log" => c.log = true,
            "-h" | "--help" => return Err("serves GET / and GET /sleep?ms=N".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(c)
}

fn number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("not a number: {s:?}"))
}

/// Binds one listener per worker and runs the workers until killed.
fn serve(config: Config) -> io::Result<()> {
    let listeners = yieldloop::net::reuseport_listeners(config.addr.as_str(), config.workers)?;
    eprintln!(
        "http_server: listening on {} with {} worker(s)",
        listeners[0].local_addr()?,
        config.workers
    );
    let rt = Runtime::builder().workers(config.workers).build()?;
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(w, listener)| {
            let config = config.clone();
            rt.spawn_on(w, move || accept_loop(listener, config))
        })
        .collect();
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("http_server: worker failed: {e}"),
            Err(e) => eprintln!("http_server: worker failed: {e}"),
        }
    }
    rt.shutdown();
    Ok(())
}

/// One worker: a task per accepted connection, forever.
fn accept_loop(listener: std::net::TcpListener, config: Config) -> io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    // The connections' tasks all live on this thread: an `Rc` shares the
    // limits without atomics.
    let limits = Rc::new(config.limits);
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, or a connection aborted before we got
                // it: wait a moment (descriptors may free up) and go on.
                eprintln!("http_server: accept failed: {e}; retrying in 100 ms");
                yieldloop::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let limits = limits.clone();
        let log = config.log;
        yieldloop::spawn(move || match serve_connection(&stream, &limits) {
            Ok(n) if log => eprintln!("close {peer} after {n} request(s)"),
            Err(e) if log => eprintln!("close {peer}: {e}"),
            _ => {}
        });
    }
}
