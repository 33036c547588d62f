//! HTTP/2 (and HTTP/1.1) server on hyper 1.x and tokio `current_thread`:
//! one thread, hyper-util's `auto` server (HTTP/2 with prior knowledge by
//! its preface, else HTTP/1.1), each HTTP/2 stream a tokio task, `GET /`
//! answered with the `http_server` recipe's greeting, 404 elsewhere. The
//! peer of `http2_hyper_yieldloop` in run.sh's `http2` stage.
//!
//! ```text
//! http2_hyper --addr 127.0.0.1:PORT
//! h2load -c 4 -m 64 -n 200000 http://127.0.0.1:PORT/
//! ```

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;

fn main() {
    let addr = yieldloop_bench::addr_arg("http2_hyper");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr.as_str())
            .await
            .unwrap_or_else(|e| {
                eprintln!("http2_hyper: {e}");
                std::process::exit(1);
            });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().keep_alive(true).timer(TokioTimer::new());
        builder.http2().timer(TokioTimer::new());
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    eprintln!("http2_hyper: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let builder = builder.clone();
            tokio::spawn(async move {
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await;
            });
        }
    });
}

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut resp = Response::new(Full::new(Bytes::from_static(b"Hello from yieldloop!\n")));
    if req.uri().path() != "/" {
        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
        *resp.body_mut() = Full::new(Bytes::from_static(b"404 Not Found\n"));
    }
    Ok(resp)
}
