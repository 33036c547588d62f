//! HTTP/1.1 server: hyper 1.x on yieldloop, no tokio runtime: one
//! scheduler thread, one yieldloop task per connection driving hyper's
//! connection future (`recipes/src/hyper/`: yieldloop's sockets as hyper's
//! I/O, its timers as hyper's timer), keep-alive, the same routes and
//! bodies as the `http_server` recipe (`GET /`, `GET /sleep?ms=N`, 404, 405).
//!
//! ```text
//! http_hyper_yieldloop --addr 127.0.0.1:PORT [--tls CERT.pem KEY.pem]
//! ```
//!
//! With `--tls` (the `attack` stage), the same routes over TLS through
//! `with_hyper::serve_tls` on one scheduler thread: yieldloop-rustls's
//! acceptor with its default handshake deadline
//! (`yieldloop_rustls::DEFAULT_HANDSHAKE_TIMEOUT`), then HTTP/1.1 or
//! HTTP/2 as ALPN agrees.

use hyper::service::service_fn;
use yieldloop::net::TcpListener;
use yieldloop_http::with_hyper::{serve_tls, Server};
use yieldloop_recipes::demo::hyper::demo;
use yieldloop_rustls::TlsAcceptor;

fn main() {
    let (addr, tls) = args();
    let served = match tls {
        // One worker: the benchmarks compare one scheduler thread with one
        // thread of each other runtime.
        None => Server::bind(addr.as_str(), 1).and_then(|server| server.run(|| service_fn(demo))),
        Some((cert, key)) => yieldloop::run(move || -> std::io::Result<()> {
            let acceptor = TlsAcceptor::from_pem_files(&cert, &key)?;
            let listener = TcpListener::bind(addr.as_str())?;
            serve_tls(listener, acceptor, service_fn(demo));
            Ok(())
        }),
    };
    if let Err(e) = served {
        eprintln!("http_hyper_yieldloop: {e}");
        std::process::exit(1);
    }
}

/// `--addr HOST:PORT [--tls CERT KEY]`.
fn args() -> (String, Option<(String, String)>) {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut tls = None;
    let mut args = std::env::args().skip(1);
    let usage = || -> ! {
        eprintln!("usage: http_hyper_yieldloop --addr HOST:PORT [--tls CERT.pem KEY.pem]");
        std::process::exit(2);
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => addr = args.next().unwrap_or_else(|| usage()),
            "--tls" => {
                let cert = args.next().unwrap_or_else(|| usage());
                let key = args.next().unwrap_or_else(|| usage());
                tls = Some((cert, key));
            }
            _ => usage(),
        }
    }
    (addr, tls)
}
