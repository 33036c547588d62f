//! The smallest service worth running: three routes on every core, one
//! task per connection, stopped with Ctrl-C (the server drains first).
//!
//! ```text
//! cargo run --release --example hello_http            # 127.0.0.1:8080
//! cargo run --release --example hello_http -- 0.0.0.0:9000
//! curl http://127.0.0.1:8080/  'http://127.0.0.1:8080/wait?ms=250'
//! ```
//!
//! `/wait?ms=N` sleeps N milliseconds in the handler: only that
//! connection's task pauses, and every other request is answered meanwhile.

use std::time::Duration;

use yieldloop_http::{serve, Request, Response};

/// The service: a plain function from a request to a response.
fn hello(req: &Request<'_>) -> Response {
    match (req.method(), req.path()) {
        ("GET", "/") => Response::text(200, "hello from yieldloop\n"),
        ("GET", "/wait") => {
            let ms = req.query_param("ms").and_then(|n| n.parse::<u64>().ok());
            match ms {
                Some(ms) if ms <= 10_000 => {
                    yieldloop::sleep(Duration::from_millis(ms));
                    Response::text(200, format!("waited {ms} ms\n"))
                }
                _ => Response::text(400, "use /wait?ms=N with N up to 10000\n"),
            }
        }
        ("POST", "/echo") => Response::new(200).body(req.body().to_vec()),
        _ => Response::error(404),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("serving on http://{addr} with {workers} workers; Ctrl-C stops");
    let summary = serve(addr.as_str(), workers, hello)?;
    println!("served {} requests", summary.requests);
    Ok(())
}
