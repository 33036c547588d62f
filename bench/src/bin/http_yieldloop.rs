//! HTTP/1.1 server on yieldloop: one scheduler thread, one task per
//! connection, serving the `http_server` recipe's routes through its
//! handler-based server (`recipes/src/http/`: keep-alive, pipelining,
//! `GET /`, `/sleep`).
//!
//! ```text
//! http_yieldloop --addr 127.0.0.1:PORT
//! ```

use yieldloop_http::ServeConfig;
use yieldloop_recipes::demo::http::demo;

fn main() {
    let addr = yieldloop_bench::addr_arg("http_yieldloop");
    // One worker: the benchmarks compare one scheduler thread with one
    // thread of each other runtime.
    let served = ServeConfig::default()
        .bind(addr.as_str(), 1)
        .and_then(|server| server.run(demo));
    if let Err(e) = served {
        eprintln!("http_yieldloop: {e}");
        std::process::exit(1);
    }
}
