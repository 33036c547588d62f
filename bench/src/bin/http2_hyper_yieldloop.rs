//! HTTP/2 (and HTTP/1.1) server: hyper 1.x on yieldloop, no tokio
//! runtime: one scheduler thread, `yieldloop_http::with_hyper::serve_auto`
//! (hyper-util's `auto` server; each connection and each HTTP/2 stream a
//! yieldloop task), `GET /` answered with the `http_server` recipe's
//! greeting, 404 elsewhere. The peer of `http2_hyper` in run.sh's `http2`
//! stage.
//!
//! ```text
//! http2_hyper_yieldloop --addr 127.0.0.1:PORT
//! h2load -c 4 -m 64 -n 200000 http://127.0.0.1:PORT/
//! ```

use std::convert::Infallible;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use yieldloop::net::TcpListener;
use yieldloop_http::with_hyper::serve_auto;

fn main() {
    let addr = yieldloop_bench::addr_arg("http2_hyper_yieldloop");
    let served = yieldloop::run(move || -> std::io::Result<()> {
        let listener = TcpListener::bind(addr.as_str())?;
        serve_auto(listener, service_fn(hello));
        Ok(())
    });
    if let Err(e) = served {
        eprintln!("http2_hyper_yieldloop: {e}");
        std::process::exit(1);
    }
}

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut resp = Response::new(Full::new(Bytes::from_static(b"Hello from yieldloop!\n")));
    if req.uri().path() != "/" {
        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
        *resp.body_mut() = Full::new(Bytes::from_static(b"404 Not Found\n"));
    }
    Ok(resp)
}
