//! hyper's HTTP/2 on yieldloop: HTTP/2 with prior knowledge (h2c) and
//! HTTP/1.1 on one cleartext port, told apart by their first bytes; with
//! `--tls`, HTTP/2 or HTTP/1.1 over TLS as ALPN agrees, on a certificate
//! made at start. One scheduler; each connection and each HTTP/2 stream a
//! task.
//!
//! ```text
//! cargo run --release --example hello_h2                         # 127.0.0.1:8082, h2c + HTTP/1.1
//! curl --http2-prior-knowledge 'http://127.0.0.1:8082/wait?ms=250'
//! curl http://127.0.0.1:8082/                                    # HTTP/1.1
//! h2load -c 4 -m 64 -n 100000 http://127.0.0.1:8082/
//! cargo run --release --features tls --example hello_h2 -- --tls --write-cert /tmp/h2.pem
//! curl --http2 --cacert /tmp/h2.pem https://localhost:8082/
//! ```
//!
//! `/wait?ms=N` sleeps N milliseconds in the handler: only that stream
//! waits; the connection's other streams are answered meanwhile.

use std::convert::Infallible;
use std::time::Duration;

use yieldloop::net::TcpListener;
use yieldloop_http::http_body_util::Full;
use yieldloop_http::hyper::body::{Bytes, Incoming};
use yieldloop_http::hyper::service::service_fn;
use yieldloop_http::hyper::{Request, Response, StatusCode};

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = |status: StatusCode, body: String| {
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        *resp.status_mut() = status;
        Ok(resp)
    };
    match req.uri().path() {
        "/" => text(StatusCode::OK, format!("hello over {:?}\n", req.version())),
        "/wait" => {
            let ms = req
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("ms="))
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|&ms| ms <= 10_000);
            match ms {
                Some(ms) => {
                    yieldloop::sleep_future(Duration::from_millis(ms)).await;
                    text(StatusCode::OK, format!("waited {ms} ms\n"))
                }
                None => text(
                    StatusCode::BAD_REQUEST,
                    "use /wait?ms=N, N up to 10000\n".into(),
                ),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

fn main() -> std::io::Result<()> {
    let mut addr = "127.0.0.1:8082".to_string();
    let mut tls = false;
    let mut write_cert = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tls" => tls = true,
            "--write-cert" => write_cert = args.next(),
            _ => addr = arg,
        }
    }
    yieldloop::run(move || {
        let listener = TcpListener::bind(addr.as_str())?;
        eprintln!("hello_h2: listening on {}", listener.local_addr()?);
        if tls {
            serve_tls(listener, write_cert)
        } else {
            yieldloop_http::with_hyper::serve_auto(listener, service_fn(hello));
            Ok(())
        }
    })
}

#[cfg(feature = "tls")]
fn serve_tls(listener: TcpListener, write_cert: Option<String>) -> std::io::Result<()> {
    use yieldloop_http::yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .map_err(std::io::Error::other)?;
    if let Some(path) = write_cert {
        std::fs::write(path, made.cert.pem())?;
    }
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let acceptor = yieldloop_http::yieldloop_rustls::TlsAcceptor::from_single_cert(
        vec![made.cert.der().clone()],
        key.into(),
    )?;
    yieldloop_http::with_hyper::serve_tls(listener, acceptor, service_fn(hello));
    Ok(())
}

#[cfg(not(feature = "tls"))]
fn serve_tls(_: TcpListener, _: Option<String>) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "--tls needs feature tls (cargo run --features tls …)",
    ))
}
