//! HTTP/1.1 server on hyper 1.x and tokio `current_thread`: one thread, one
//! tokio task per connection, keep-alive, the same routes and bodies as the
//! `http_server` recipe (`GET /`, `GET /sleep?ms=N`, 404, 405), and the same
//! two routes of the `attack` stage as `http_yieldloop`: `GET /page` (4 KiB)
//! and `POST /upload` (the body collected through `Limited` to 1 MiB, its
//! length answered; 413 past it).
//!
//! ```text
//! http_hyper --addr 127.0.0.1:PORT [--documented-limits] [--tls CERT.pem KEY.pem]
//! ```
//!
//! `--documented-limits` (the `attack` stage) gives the connection builder
//! a timer (`hyper_util::rt::TokioTimer`), without which hyper does not
//! enforce `header_read_timeout`, and sets the limits hyper documents as
//! its defaults explicitly: `header_read_timeout` 30 s, `max_buf_size`
//! 8192 + 4096 × 100 bytes (`DEFAULT_MAX_BUFFER_SIZE`, "~400kb"). Without
//! it (the `http` stage, as before) no timer is set.
//!
//! `--tls` serves HTTP/1.1 over TLS (ALPN `http/1.1`) through tokio-rustls,
//! with the same rustls configuration as yieldloop's TLS server
//! (`yieldloop_rustls::server_config`: ring, TLS 1.2 and 1.3). Like
//! tokio-rustls's own examples, it puts no deadline on the handshake:
//! hyper's `header_read_timeout` starts once the handshake is done.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use yieldloop_rustls::tokio_rustls::TlsAcceptor;

/// hyper's documented default `max_buf_size` ("~400kb"; its
/// `DEFAULT_MAX_BUFFER_SIZE`).
const HYPER_MAX_BUF: usize = 8192 + 4096 * 100;

/// hyper's documented default `header_read_timeout`.
const HYPER_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut limits = false;
    let mut tls = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--documented-limits" => limits = true,
            "--addr" => addr = args.next().unwrap_or_else(|| usage()),
            "--tls" => {
                let cert = args.next().unwrap_or_else(|| usage());
                let key = args.next().unwrap_or_else(|| usage());
                match tls_acceptor(&cert, &key) {
                    Ok(acceptor) => tls = Some(acceptor),
                    Err(e) => {
                        eprintln!("http_hyper: {e}");
                        std::process::exit(1);
                    }
                }
            }
            _ => usage(),
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(e) = rt.block_on(serve(&addr, limits, tls)) {
        eprintln!("http_hyper: {e}");
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!("usage: http_hyper --addr HOST:PORT [--documented-limits] [--tls CERT.pem KEY.pem]");
    std::process::exit(2);
}

/// A tokio-rustls acceptor for the certificate chain and key in these PEM
/// files, offering HTTP/1.1 by ALPN.
fn tls_acceptor(cert: &str, key: &str) -> io::Result<TlsAcceptor> {
    let mut config = yieldloop_rustls::server_config(
        yieldloop_rustls::load_certs(cert)?,
        yieldloop_rustls::load_key(key)?,
    )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

async fn serve(addr: &str, limits: bool, tls: Option<TlsAcceptor>) -> io::Result<()> {
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
        let tls = tls.clone();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder.keep_alive(true);
            if limits {
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(HYPER_HEADER_READ_TIMEOUT)
                    .max_buf_size(HYPER_MAX_BUF);
            }
            match tls {
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service_fn(handle))
                        .await;
                }
                Some(tls) => {
                    let Ok(stream) = tls.accept(stream).await else {
                        return;
                    };
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service_fn(handle))
                        .await;
                }
            }
        });
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() == Method::POST && req.uri().path() == "/upload" {
        return Ok(
            match Limited::new(req.into_body(), yieldloop_bench::UPLOAD_MAX)
                .collect()
                .await
            {
                Ok(body) => text(
                    StatusCode::OK,
                    format!("received {} bytes\n", body.to_bytes().len()),
                ),
                Err(_) => text(StatusCode::PAYLOAD_TOO_LARGE, "413 Payload Too Large\n"),
            },
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut resp = text(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed\n");
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(resp);
    }
    Ok(match req.uri().path() {
        "/" => text(StatusCode::OK, yieldloop_recipes::demo::http::HELLO),
        "/page" => text(StatusCode::OK, &yieldloop_bench::PAGE[..]),
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
