//! HTTP/1.1 and HTTP/2 on one listener: hyper-util's `auto` server, which
//! reads a connection's first bytes and serves HTTP/2 to a client that
//! opens with HTTP/2's preface ("prior knowledge", h2c) and HTTP/1.1 to the
//! others.

use std::error::Error as StdError;

use hyper::body::{Body, Incoming};
use hyper::rt::{Read, Write};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use yieldloop::net::TcpListener;

use super::rt::{io as hyper_io, spawn_hyper_task, YieldloopExecutor, YieldloopTimer};
use super::server::accept_loop;

/// hyper-util's HTTP/1.1-or-HTTP/2 server builder for yieldloop: each
/// HTTP/2 stream a task of the connection's thread ([`YieldloopExecutor`]),
/// [`YieldloopTimer`] as both versions' timer (HTTP/1.1's header read
/// timeout, HTTP/2's keep-alive pings when set), HTTP/1.1 keep-alive on.
/// Change what you like and pass it to [`serve_auto_with`].
pub fn auto_builder() -> auto::Builder<YieldloopExecutor> {
    let mut b = auto::Builder::new(YieldloopExecutor);
    b.http1().keep_alive(true).timer(YieldloopTimer);
    b.http2().timer(YieldloopTimer);
    b
}

/// Accepts connections on `listener` and serves each, in a task of its
/// own, with HTTP/2 if the client opens with HTTP/2's preface (h2c with
/// prior knowledge: `curl --http2-prior-knowledge`) and HTTP/1.1 otherwise.
///
/// Each HTTP/2 stream runs as a task of its own
/// ([`YieldloopExecutor`]), so one slow request pauses neither its
/// connection's other streams nor the other connections. Runs until the
/// task running it is cancelled, as [`serve`](super::serve) does.
///
/// HTTP/1.1's `Upgrade: h2c` is not offered: clients that want HTTP/2
/// without TLS send the preface at once.
pub fn serve_auto<S, B>(listener: TcpListener, service: S)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    serve_auto_with(listener, auto_builder(), service)
}

/// [`serve_auto`] with a builder of one's own (HTTP/2 window sizes,
/// concurrent stream limits, `http2_only`); start from [`auto_builder`]
/// to keep yieldloop's executor and timers.
pub fn serve_auto_with<S, B>(
    listener: TcpListener,
    builder: auto::Builder<YieldloopExecutor>,
    service: S,
) where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    accept_loop(&listener, |stream| {
        let (builder, service) = (builder.clone(), service.clone());
        // Detached: the connection's task ends with the connection.
        drop(spawn_hyper_task(move || async move {
            serve_io_auto(&builder, hyper_io(stream), service).await;
        }));
    });
}

/// One connection's future: `io` served by `builder`, its error dropped
/// (a client gone mid-request concerns that client only).
///
/// Without upgrades: hyper hands an upgraded connection over as a `Send`
/// box, and yieldloop's sockets are not `Send` (they belong to their
/// thread's reactor).
pub(crate) fn serve_io_auto<I, S, B>(
    builder: &auto::Builder<YieldloopExecutor>,
    io: I,
    service: S,
) -> impl std::future::Future<Output = ()> + 'static
where
    I: Read + Write + Unpin + 'static,
    S: Service<Request<Incoming>, Response = Response<B>> + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let conn = builder.serve_connection(io, service).into_owned();
    async move {
        let _ = conn.await;
    }
}
