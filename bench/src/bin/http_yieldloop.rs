//! HTTP/1.1 server on yieldloop: one scheduler thread, one task per
//! connection, serving the `http_server` recipe's routes through its
//! handler-based server (`recipes/src/http/`: keep-alive, pipelining,
//! `GET /`, `/sleep`) with `ServeConfig`'s defaults, and two routes of the
//! `attack` stage: `GET /page` (4 KiB) and `POST /upload` (the body is
//! read whole, up to `max_body`, and its length answered).
//!
//! ```text
//! http_yieldloop --addr 127.0.0.1:PORT
//! ```

use yieldloop_http::{Request, Response, ServeConfig};
use yieldloop_recipes::demo::http::demo;

fn main() {
    let addr = yieldloop_bench::addr_arg("http_yieldloop");
    // One worker: the benchmarks compare one scheduler thread with one
    // thread of each other runtime.
    let served = ServeConfig::default()
        .bind(addr.as_str(), 1)
        .and_then(|server| server.run(routes));
    if let Err(e) = served {
        eprintln!("http_yieldloop: {e}");
        std::process::exit(1);
    }
}

/// The demonstration routes, and the attack stage's two.
fn routes(req: &Request<'_>) -> Response {
    match (req.method(), req.path()) {
        ("GET" | "HEAD", "/page") => Response::new(200).body(&yieldloop_bench::PAGE[..]),
        // The server has read the whole body before the handler runs.
        ("POST", "/upload") => {
            Response::text(200, format!("received {} bytes\n", req.body().len()))
        }
        _ => demo(req),
    }
}
