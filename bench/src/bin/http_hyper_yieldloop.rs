//! HTTP/1.1 server: hyper 1.x on yieldloop, no tokio runtime: one
//! scheduler thread, one yieldloop task per connection driving hyper's
//! connection future (`recipes/src/hyper/`: yieldloop's sockets as hyper's
//! I/O, its timers as hyper's timer), keep-alive, the same routes and
//! bodies as the `http_server` recipe (`GET /`, `GET /sleep?ms=N`, 404, 405).
//!
//! ```text
//! http_hyper_yieldloop --addr 127.0.0.1:PORT
//! ```

use hyper::service::service_fn;
use yieldloop_http::with_hyper::Server;
use yieldloop_recipes::demo::hyper::demo;

fn main() {
    let addr = yieldloop_bench::addr_arg("http_hyper_yieldloop");
    // One worker: the benchmarks compare one scheduler thread with one
    // thread of each other runtime.
    let served = Server::bind(addr.as_str(), 1).and_then(|server| server.run(|| service_fn(demo)));
    if let Err(e) = served {
        eprintln!("http_hyper_yieldloop: {e}");
        std::process::exit(1);
    }
}
