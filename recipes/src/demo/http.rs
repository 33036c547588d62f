//! The routes of the `http_server` recipe and of the benchmarks, as a
//! handler: a greeting and a slow route.

use std::time::Duration;

use yieldloop_http::{Request, Response};

/// The body of `GET /`.
pub const HELLO: &[u8] = b"Hello from yieldloop!\n";

/// The longest `/sleep?ms=N`; a larger N gets `400`.
pub const MAX_SLEEP: Duration = Duration::from_secs(60);

/// The demonstration routes:
///
/// - `GET /`: [`HELLO`], with no allocation;
/// - `GET /sleep?ms=N`: `slept N ms` after `yieldloop::sleep(N ms)`, which
///   pauses this connection's task only (`400` for an N that is not a
///   whole number up to [`MAX_SLEEP`]);
/// - `404` for other paths, `405` (with `Allow`) for methods other than
///   `GET` and `HEAD`.
///
/// # Examples
///
/// ```no_run
/// // What `cargo run --example http_server` runs, minus its options.
/// yieldloop_http::serve("127.0.0.1:8080", 2, yieldloop_recipes::demo::http::demo)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn demo(req: &Request<'_>) -> Response {
    if req.method() != "GET" && req.method() != "HEAD" {
        return Response::error(405).header("Allow", "GET, HEAD");
    }
    match req.path() {
        "/" => Response::new(200).body(HELLO),
        "/sleep" => match req.query_param("ms").and_then(|v| v.parse::<u64>().ok()) {
            Some(ms) if u128::from(ms) <= MAX_SLEEP.as_millis() => {
                yieldloop::sleep(Duration::from_millis(ms));
                Response::text(200, format!("slept {ms} ms\n"))
            }
            _ => Response::text(
                400,
                format!(
                    "ms must be a whole number of milliseconds up to {}\n",
                    MAX_SLEEP.as_millis()
                ),
            ),
        },
        _ => Response::error(404),
    }
}
