//! hyper's HTTP/1.1 server on yieldloop: an accept loop that hands each
//! connection to a task driving hyper's connection future, and the same on
//! several worker threads.

use std::error::Error as StdError;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use yieldloop::net::{TcpListener, TcpStream, ToSocketAddrs};
use yieldloop::Runtime;

use super::rt::{io as hyper_io, YieldloopTimer};

/// A hyper HTTP/1.1 server builder for yieldloop: keep-alive on, and
/// [`YieldloopTimer`] as its timer (which turns on hyper's 30 s header read
/// timeout). Change what you like and pass it to [`serve_with`].
pub fn http1_builder() -> http1::Builder {
    let mut b = http1::Builder::new();
    b.keep_alive(true).timer(YieldloopTimer);
    b
}

/// Serves one connection with hyper, blocking-style: the calling task
/// pauses until the connection ends (the client closes it, or an error),
/// while the other tasks of its thread run.
///
/// # Errors
///
/// hyper's, for a connection that ended badly (a malformed request, a
/// timeout, a reset).
pub fn serve_connection<S, B>(stream: TcpStream, service: S) -> Result<(), hyper::Error>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    yieldloop::block_on(http1_builder().serve_connection(hyper_io(stream), service))
}

/// Accepts connections on `listener` and serves each with hyper's
/// HTTP/1.1 server ([`http1_builder`]), in a task of its own driving the
/// connection's future ([`yieldloop::spawn_future`]): a slow request
/// pauses its connection only.
///
/// Runs until the task running it is cancelled or its run ends (the
/// listener then closes; the connection tasks are the run's to end). A
/// failed accept (out of descriptors, a connection aborted before it was
/// accepted) concerns no connection served: it is reported at most once a
/// second and retried after 100 ms.
pub fn serve<S, B>(listener: TcpListener, service: S)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    serve_with(listener, http1_builder(), service)
}

/// [`serve`] with a builder of one's own (limits, timeouts, keep-alive);
/// start from [`http1_builder`] to keep yieldloop's timer.
pub fn serve_with<S, B>(listener: TcpListener, builder: http1::Builder, service: S)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    accept_loop(&listener, |stream| {
        let conn = builder.serve_connection(hyper_io(stream), service.clone());
        // Detached: the connection's task ends with the connection. Its
        // error (a client gone mid-request) concerns that client only.
        drop(yieldloop::spawn_future(async move {
            let _ = conn.await;
        }));
    });
}

/// Accepts on `listener` for ever, handing each connection (`TCP_NODELAY`
/// on) to `serve`. A failed accept (out of descriptors, a connection
/// aborted before it was accepted) concerns no connection served: it is
/// reported at most once a second and retried after 100 ms.
pub(crate) fn accept_loop(listener: &TcpListener, mut serve: impl FnMut(TcpStream)) {
    let mut last_report: Option<Instant> = None;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                if last_report.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    eprintln!("hyper: accept failed: {e}; retrying in 100 ms");
                    last_report = Some(Instant::now());
                }
                yieldloop::sleep(Duration::from_millis(100));
                continue;
            }
        };
        // Small answers go out at once rather than waiting for an ACK.
        let _ = stream.set_nodelay(true);
        serve(stream);
    }
}

/// [`serve`] on several worker threads: one yieldloop scheduler per worker
/// (a [`Runtime`]), each accepting on its own `SO_REUSEPORT` listener, so
/// the kernel spreads connections across them.
///
/// ```no_run
/// use std::convert::Infallible;
/// use http_body_util::Full;
/// use hyper::body::{Bytes, Incoming};
/// use hyper::{Request, Response};
///
/// async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
///     Ok(Response::new(Full::new(Bytes::from("hello\n"))))
/// }
///
/// let server = yieldloop_http::with_hyper::Server::bind("127.0.0.1:8080", 4)?;
/// server.run(|| hyper::service::service_fn(hello))?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Server {
    listeners: Vec<std::net::TcpListener>,
    addr: SocketAddr,
}

impl Server {
    /// Binds `workers` listeners (at least one) to `addr` with
    /// `SO_REUSEPORT`. Binding comes first so that a program learns the
    /// port (with port 0) before serving.
    ///
    /// # Errors
    ///
    /// The system's, from resolving or binding `addr`.
    pub fn bind(addr: impl ToSocketAddrs, workers: usize) -> io::Result<Server> {
        let listeners = yieldloop::net::reuseport_listeners(addr, workers.max(1))?;
        let addr = listeners[0].local_addr()?;
        Ok(Server { listeners, addr })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves on every worker, with a service made by `make_service` on
    /// each worker's thread (so the service need not be `Send`), for as
    /// long as the process runs.
    ///
    /// # Errors
    ///
    /// The worker threads failing to start, or a worker failing to set up
    /// its listener (or panicking).
    pub fn run<F, S, B>(self, make_service: F) -> io::Result<()>
    where
        F: Fn() -> S + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Future: 'static,
        S::Error: Into<Box<dyn StdError + Send + Sync>>,
        B: Body + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let rt = Runtime::builder().workers(self.listeners.len()).build()?;
        let make_service = Arc::new(make_service);
        let handles: Vec<_> = self
            .listeners
            .into_iter()
            .enumerate()
            .map(|(w, listener)| {
                let make_service = make_service.clone();
                rt.spawn_on(w, move || -> io::Result<()> {
                    let listener = TcpListener::from_std(listener)?;
                    serve(listener, make_service());
                    Ok(())
                })
            })
            .collect();
        let mut first_error = None;
        for h in handles {
            let result = h
                .join()
                .unwrap_or_else(|e| Err(io::Error::other(format!("a worker failed: {e}"))));
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        rt.shutdown();
        first_error.map_or(Ok(()), Err)
    }
}
