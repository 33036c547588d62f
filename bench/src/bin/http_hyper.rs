//! HTTP/1.1 server on hyper 1.x and tokio `current_thread`: one thread, one
//! tokio task per connection, keep-alive, the same routes and bodies as the
//! `http_server` recipe (`GET /`, `GET /sleep?ms=N`, 404, 405).
//!
//! ```text
//! http_hyper --addr 127.0.0.1:PORT
//! ```

use std::convert::Infallible;
use std::io;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

fn main() {
    let addr = yieldloop_bench::addr_arg("http_hyper");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(e) = rt.block_on(serve(&addr)) {
        eprintln!("http_hyper: {e}");
        std::process::exit(1);
    }
}

async fn serve(addr: &str) -> io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("http_hyper: accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .await;
        });
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut resp = text(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed\n");
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(resp);
    }
    Ok(match req.uri().path() {
        "/" => text(StatusCode::OK, yieldloop_recipes::demo::http::HELLO),
        "/sleep" => {
            let ms = req
                .uri()
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&ms| ms <= 60_000);
            match ms {
                Some(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    text(StatusCode::OK, format!("slept {ms} ms\n"))
                }
                None => text(
                    StatusCode::BAD_REQUEST,
                    "ms must be a whole number of milliseconds up to 60000\n",
                ),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "404 Not Found\n"),
    })
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
