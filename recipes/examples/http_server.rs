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
//! - `--idle-timeout SECS`: close a connection silent between requests for
//!   that long (default 75; 0 = never);
//! - `--max-body BYTES`: largest request body taken (read and thrown away;
//!   default 1 MiB, more gets 413);
//! - `--max-connections N`: connections open at once, over all workers
//!   (default: from the descriptor limit, see `ServeConfig`);
//! - `--metrics`: answer `GET /metrics` with the runtime's counters (off
//!   by default: the page is unauthenticated);
//! - `--log`: one line per request.
//!
//! - `--grace-ms MS`: on SIGTERM or SIGINT, how long requests under way
//!   may take to finish before they are cut (default 10000);
//!
//! Routes (`yieldloop_recipes::demo::http::demo`): `GET /`, `GET /sleep?ms=N`
//! (sleeps with `yieldloop::sleep`, so the thread serves other connections
//! meanwhile), 404 for other paths, 405 for methods other than `GET`/`HEAD`.
//! Malformed requests get 400, heads over 8 KiB 431 (414 for a request
//! line that long); each closes that connection only. Everything else (workers, limits, keep-alive, the drain
//! on SIGTERM) is `yieldloop_http` (`crates/yieldloop-http`), shared
//! with the benchmarks; this file is the command line.
//!
//! On SIGTERM or SIGINT the server stops accepting, lets requests under way
//! finish within the grace period and prints what it did:
//! `http_server: stopped: C connection(s), R request(s), P panic(s), K cut`.

use std::time::Duration;

use yieldloop_http::{Request, Response, ServeConfig};
use yieldloop_recipes::demo::http::demo;

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

/// Command-line settings.
#[derive(Clone, Debug)]
struct Config {
    addr: String,
    workers: usize,
    serve: ServeConfig,
    log: bool,
}

fn main() {
    let mut args = Args::new(
        "http_server [--addr HOST:PORT] [--workers N] [--idle-timeout SECS] [--max-body BYTES] \
         [--max-connections N] [--metrics] [--grace-ms MS] [--log]",
    );
    let mut serve = ServeConfig::default();
    if let Some(secs) = args.value("--idle-timeout") {
        // 0 seconds: no limit.
        serve.idle_timeout = Some(Duration::from_secs(secs)).filter(|idle| !idle.is_zero());
    }
    serve.max_body = args.value_or("--max-body", serve.max_body);
    serve.max_connections = args.value_in("--max-connections", serve.max_connections, 1..);
    if args.flag("--metrics") {
        serve.metrics_path = Some("/metrics".into());
    }
    if let Some(ms) = args.value("--grace-ms") {
        serve.grace = Duration::from_millis(ms);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = Config {
        addr: args.value_or("--addr", "127.0.0.1:8080".into()),
        workers: args.value_in("--workers", cores, 1..),
        serve,
        log: args.flag("--log"),
    };
    args.finish();
    if let Err(e) = run(config) {
        eprintln!("http_server: {e}");
        std::process::exit(1);
    }
}

/// Binds, serves until SIGTERM/SIGINT, drains, reports.
fn run(config: Config) -> std::io::Result<()> {
    let server = config.serve.bind(config.addr.as_str(), config.workers)?;
    eprintln!(
        "http_server: listening on {} with {} worker(s)",
        server.local_addr(),
        config.workers
    );
    let log = config.log;
    let summary = server.run(move |req: &Request<'_>| {
        let resp: Response = demo(req);
        if log {
            eprintln!("{} {} -> {}", req.method(), req.path(), resp.status);
        }
        resp
    })?;
    eprintln!(
        "http_server: stopped: {} connection(s), {} request(s), {} panic(s), {} cut",
        summary.connections, summary.requests, summary.panics, summary.cut
    );
    Ok(())
}
