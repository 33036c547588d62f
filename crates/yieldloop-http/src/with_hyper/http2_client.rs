//! hyper's HTTP/2 client on yieldloop: one connection shared by many
//! tasks, each request a stream of its own, each caller paused (only it)
//! until its answer is in.

use std::fmt;
use std::rc::Rc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http2::{self, SendRequest};
use hyper::rt::{Read, Write};
use hyper::{Request, Response, Uri};
use yieldloop::net::TcpStream;
use yieldloop::JoinHandle;

use super::client::Error;
use super::rt::{io as hyper_io, spawn_hyper_task, YieldloopExecutor, YieldloopTimer};

/// One HTTP/2 connection, shared: clones send on the same connection, and
/// requests from several tasks at once travel as concurrent streams. The
/// connection's future runs in a task of its own; it ends when the last
/// clone is dropped (or the server closes it).
///
/// Made with [`connect`](Self::connect) (cleartext, HTTP/2 with prior
/// knowledge: the server must speak HTTP/2 at once, as
/// [`serve_auto`](super::serve_auto) does) or, with feature `tls`,
/// `connect_tls` (HTTP/2 agreed by ALPN).
///
/// # Examples
///
/// ```no_run
/// use yieldloop_http::with_hyper::Http2Client;
///
/// yieldloop::run(|| {
///     let client = Http2Client::connect("http://127.0.0.1:8080").unwrap();
///     // Ten requests at once, ten streams on one connection.
///     let tasks: Vec<_> = (0..10)
///         .map(|i| {
///             let client = client.clone();
///             yieldloop::spawn(move || client.get(&format!("/item/{i}")).unwrap().status())
///         })
///         .collect();
///     for t in tasks {
///         assert_eq!(t.join().unwrap(), 200);
///     }
/// });
/// ```
#[derive(Clone)]
pub struct Http2Client {
    sender: SendRequest<Full<Bytes>>,
    /// `http://host[:port]` or `https://…`: what relative request URIs are
    /// completed with, since HTTP/2 sends the scheme and authority as
    /// pseudo-headers.
    base: Rc<str>,
    /// The task driving the connection, cancelled with the last clone.
    conn: Rc<ConnTask>,
}

/// Cancels the connection's task when dropped.
struct ConnTask(JoinHandle<()>);

impl Drop for ConnTask {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl fmt::Debug for Http2Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http2Client")
            .field("base", &self.base)
            .field("closed", &self.sender.is_closed())
            .field("conn", &self.conn)
            .finish()
    }
}

/// hyper's HTTP/2 client builder for yieldloop: [`YieldloopExecutor`] for
/// the connection's background work, [`YieldloopTimer`] for its timers.
pub fn http2_client_builder() -> http2::Builder<YieldloopExecutor> {
    let mut b = http2::Builder::new(YieldloopExecutor);
    b.timer(YieldloopTimer);
    b
}

/// `scheme://authority` of `url`, and the host and port to connect to.
fn split_url(url: &str, scheme: &str, default_port: u16) -> Result<(String, String, u16), Error> {
    let uri: Uri = url.parse().map_err(|e| Error::Url(format!("{url}: {e}")))?;
    if uri.scheme_str() != Some(scheme) {
        return Err(Error::Url(format!("{url}: expected {scheme}://")));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| Error::Url(format!("{url}: no host")))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = authority.port_u16().unwrap_or(default_port);
    Ok((format!("{scheme}://{authority}"), host, port))
}

impl Http2Client {
    /// Connects to the host and port of `url` (`http://host[:port]`; a
    /// path is not used) and opens an HTTP/2 connection with prior
    /// knowledge (h2c).
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for a URL that is not `http://`, [`Error::Connect`]
    /// if the connection fails, [`Error::Http`] for hyper's handshake.
    ///
    /// # Panics
    ///
    /// Outside a yieldloop run (it spawns a task).
    pub fn connect(url: &str) -> Result<Http2Client, Error> {
        let (base, host, port) = split_url(url, "http", 80)?;
        let stream = TcpStream::connect((host.as_str(), port)).map_err(Error::Connect)?;
        let _ = stream.set_nodelay(true);
        Http2Client::handshake(hyper_io(stream), base)
    }

    /// Connects to the host and port of `url` (`https://host[:port]`)
    /// over TLS with `connector` (its roots; SNI is the URL's host), asks
    /// for `h2` by ALPN, and opens an HTTP/2 connection.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for a URL that is not `https://`; [`Error::Connect`]
    /// if the connection or the handshake fails, or the server does not
    /// agree to `h2`; [`Error::Http`] for hyper's handshake.
    ///
    /// # Panics
    ///
    /// Outside a yieldloop run.
    #[cfg(feature = "tls")]
    pub fn connect_tls(
        url: &str,
        connector: &yieldloop_rustls::TlsConnector,
    ) -> Result<Http2Client, Error> {
        let (base, host, port) = split_url(url, "https", 443)?;
        let stream = TcpStream::connect((host.as_str(), port)).map_err(Error::Connect)?;
        let _ = stream.set_nodelay(true);
        let connector = connector.clone().alpn(&[b"h2"]);
        let tls =
            yieldloop::block_on(connector.connect_async(&host, stream)).map_err(Error::Connect)?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(Error::Connect(std::io::Error::other(format!(
                "{base} did not agree to HTTP/2 (ALPN h2)"
            ))));
        }
        Http2Client::handshake(hyper_util::rt::TokioIo::new(tls), base)
    }

    fn handshake<I>(io: I, base: String) -> Result<Http2Client, Error>
    where
        I: Read + Write + Unpin + 'static,
    {
        let (sender, conn) = yieldloop::block_on(http2_client_builder().handshake(io))?;
        let conn = spawn_hyper_task(move || async move {
            // Its error reaches the callers through their requests.
            let _ = conn.await;
        });
        Ok(Http2Client {
            sender,
            base: base.into(),
            conn: Rc::new(ConnTask(conn)),
        })
    }

    /// Sends `req` as a stream of this connection and returns the answer
    /// with its body collected, pausing the calling task only. A URI that
    /// is only a path is completed with the connection's scheme and
    /// authority.
    ///
    /// # Errors
    ///
    /// [`Error::Http`] when the stream or the connection fails or the
    /// answer is malformed.
    pub fn request<B: Into<Bytes>>(&self, req: Request<B>) -> Result<Response<Bytes>, Error> {
        let (mut parts, body) = req.into_parts();
        if parts.uri.scheme().is_none() {
            let pq = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
            parts.uri = format!("{}{pq}", self.base)
                .parse()
                .map_err(|e| Error::Url(format!("{pq}: {e}")))?;
        }
        let req = Request::from_parts(parts, Full::new(body.into()));
        let mut sender = self.sender.clone();
        yieldloop::block_on(async move {
            // Ready while the server accepts more concurrent streams.
            sender.ready().await?;
            let resp = sender.send_request(req).await?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Response::from_parts(parts, body))
        })
    }

    /// `GET path` on this connection; see [`request`](Self::request).
    ///
    /// # Errors
    ///
    /// As for [`request`](Self::request).
    pub fn get(&self, path: &str) -> Result<Response<Bytes>, Error> {
        let req = Request::get(path)
            .body(Bytes::new())
            .map_err(|e| Error::Url(format!("{path}: {e}")))?;
        self.request(req)
    }

    /// Whether the connection has closed (the server went away, or a
    /// connection error): every request then fails.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

impl fmt::Debug for ConnTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConnTask").field(&self.0.id()).finish()
    }
}
