//! The routes of the `http_server` recipe as a hyper service: the
//! `hyper_server` example and the benchmarks serve them, so that hyper on
//! yieldloop answers exactly what the httparse server and hyper on tokio
//! answer.

use std::convert::Infallible;
use std::time::Duration;

use yieldloop_http::http_body_util::Full;
use yieldloop_http::hyper::body::{Bytes, Incoming};
use yieldloop_http::hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use yieldloop_http::hyper::{Method, Request, Response, StatusCode};

use super::http::{HELLO, MAX_SLEEP};

/// `GET /` answers [`HELLO`]; `GET /sleep?ms=N` waits N ms on a
/// [`yieldloop::Sleep`] (pausing only its connection) and says so; other
/// paths are 404, other methods than GET and HEAD 405.
///
/// # Errors
///
/// None: the error type is [`Infallible`], as hyper's `service_fn` wants
/// one.
pub async fn demo(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut resp = text(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed\n");
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(resp);
    }
    Ok(match req.uri().path() {
        "/" => text(StatusCode::OK, HELLO),
        "/sleep" => {
            let ms = req
                .uri()
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&ms| u128::from(ms) <= MAX_SLEEP.as_millis());
            match ms {
                Some(ms) => {
                    yieldloop::sleep_future(Duration::from_millis(ms)).await;
                    text(StatusCode::OK, format!("slept {ms} ms\n"))
                }
                None => text(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "ms must be a whole number of milliseconds up to {}\n",
                        MAX_SLEEP.as_millis()
                    ),
                ),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "404 Not Found\n"),
    })
}

/// A `text/plain` answer.
fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
