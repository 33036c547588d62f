//! hyper 1.x serving HTTP/1.1 on yieldloop, with no tokio runtime: the
//! `http_server` recipe's routes (`GET /`, `GET /sleep?ms=N`), one
//! connection task per connection, keep-alive, one scheduler per worker.
//!
//! ```text
//! cargo run --release --example hyper_server                       # 127.0.0.1:8081, one worker per core
//! cargo run --release --example hyper_server -- --addr 127.0.0.1:9000 --workers 2
//! curl -i http://127.0.0.1:8081/
//! curl -i 'http://127.0.0.1:8081/sleep?ms=300'
//! wrk -t2 -c64 -d10s http://127.0.0.1:8081/
//! ```
//!
//! It serves until stopped (Ctrl-C).

use yieldloop_http::hyper;
use yieldloop_http::with_hyper::Server;
use yieldloop_recipes::demo::hyper::demo;

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

fn main() {
    let mut args = Args::new("hyper_server [--addr HOST:PORT] [--workers N]");
    let addr: String = args.value_or("--addr", "127.0.0.1:8081".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = args.value_in("--workers", cores, 1..);
    args.finish();
    let server = match Server::bind(addr.as_str(), workers) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hyper_server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    // On stderr, like the other servers' start-up line.
    eprintln!(
        "hyper on yieldloop: listening on {} ({workers} worker{})",
        server.local_addr(),
        if workers == 1 { "" } else { "s" }
    );
    if let Err(e) = server.run(|| hyper::service::service_fn(demo)) {
        eprintln!("hyper_server: {e}");
        std::process::exit(1);
    }
}
