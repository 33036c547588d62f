//! The example service's Redis endpoints (`GET`/`POST /hits/{key}`, the
//! same JSON answers and errors as `yieldloop_recipes::service`) on hyper
//! 1.x and tokio `current_thread`, over redis's own tokio client: one
//! `MultiplexedConnection`, cloned into every request, which pipelines the
//! commands of all tasks over one socket (the crate's recommended use).
//!
//! ```text
//! service_tokio --addr 127.0.0.1:PORT --redis 127.0.0.1:REDIS_PORT
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
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use serde_json::{json, Value};

/// The prefix of the service's Redis keys (as `ServiceConfig`'s default).
const PREFIX: &str = "service:";

fn main() {
    let (addr, redis, pool) = yieldloop_bench::service_args("service_tokio");
    if pool {
        eprintln!("service_tokio: --pool is service_yieldloop's");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(e) = rt.block_on(serve(&addr, &redis)) {
        eprintln!("service_tokio: {e}");
        std::process::exit(1);
    }
}

async fn serve(addr: &str, redis_addr: &str) -> io::Result<()> {
    let client = redis::Client::open(format!("redis://{redis_addr}/")).map_err(io::Error::other)?;
    let conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(io::Error::other)?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("service_tokio: accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = conn.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, conn.clone()));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    req: Request<Incoming>,
    mut conn: MultiplexedConnection,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path();
    let Some(key) = path.strip_prefix("/hits/") else {
        return Ok(error(StatusCode::NOT_FOUND, format!("no route for {path}")));
    };
    let fine = !key.is_empty()
        && key.len() <= 128
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !fine {
        return Ok(error(
            StatusCode::BAD_REQUEST,
            "a key is 1 to 128 letters, digits, '-', '_' or '.'".into(),
        ));
    }
    let redis_key = format!("{PREFIX}hits:{key}");
    let hits: redis::RedisResult<i64> = match *req.method() {
        Method::POST => conn.incr(redis_key, 1).await,
        Method::GET | Method::HEAD => conn
            .get::<_, Option<i64>>(redis_key)
            .await
            .map(|h| h.unwrap_or(0)),
        _ => {
            let mut resp = error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed".into());
            resp.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
            return Ok(resp);
        }
    };
    Ok(match hits {
        Ok(hits) => json_response(StatusCode::OK, &json!({ "key": key, "hits": hits })),
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("redis unavailable: {e}"),
        ),
    })
}

fn error(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    json_response(status, &json!({ "error": message }))
}

fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut text = body.to_string();
    text.push('\n');
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}
