//! Feature `tls`: hyper over TLS on yieldloop, HTTP/2 or HTTP/1.1 as ALPN
//! agrees, with yieldloop-rustls's sessions.

use std::error::Error as StdError;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use yieldloop::net::TcpListener;
use yieldloop_rustls::TlsAcceptor;

use super::auto::{auto_builder, serve_io_auto};
use super::rt::{spawn_hyper_task_after, YieldloopExecutor};
use super::server::accept_loop;

/// The ALPN protocols [`serve_tls`] offers, most preferred first.
pub const ALPN_H2_HTTP1: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Accepts connections on `listener` and serves each over TLS, in a task
/// of its own: the handshake (with the acceptor's deadline), then HTTP/2
/// if ALPN agreed on `h2`, HTTP/1.1 if on `http/1.1`, and for a client
/// that named no protocol whichever its first bytes show.
///
/// The acceptor's certificate and deadline are used; its ALPN list is
/// replaced by [`ALPN_H2_HTTP1`] (on this server's copy). A failed
/// handshake closes that connection only. Runs until the task running it
/// is cancelled, as [`serve`](super::serve) does.
pub fn serve_tls<S, B>(listener: TcpListener, acceptor: TlsAcceptor, service: S)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    serve_tls_with(listener, acceptor, auto_builder(), service)
}

/// [`serve_tls`] with a builder of one's own; start from
/// [`auto_builder`](super::auto_builder) to keep yieldloop's executor and
/// timers.
pub fn serve_tls_with<S, B>(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    builder: auto::Builder<YieldloopExecutor>,
    service: S,
) where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let acceptor = acceptor.alpn(ALPN_H2_HTTP1);
    accept_loop(&listener, |stream| {
        let (builder, service) = (builder.clone(), service.clone());
        // On the connection's task, in a shallow frame before its future
        // exists: a client that sends part of a ClientHello and stalls
        // holds this pause, not a session and a deep handshake stack.
        let wait = {
            let acceptor = acceptor.clone();
            move || {
                let hello = acceptor.await_hello(&stream);
                (hello, stream)
            }
        };
        let conn = move |(hello, stream): (std::io::Result<TlsAcceptor>, _)| async move {
            // A failed handshake (a deadline passed, a client that does
            // not speak TLS) concerns that client only.
            let Ok(acceptor) = hello else {
                return;
            };
            let Ok(tls) = acceptor.accept_async(stream).await else {
                return;
            };
            let builder = match tls.get_ref().1.alpn_protocol() {
                Some(b"h2") => builder.http2_only(),
                Some(_) => builder.http1_only(),
                None => builder,
            };
            serve_io_auto(&builder, TokioIo::new(tls), service).await;
        };
        drop(spawn_hyper_task_after(wait, conn));
    });
}
