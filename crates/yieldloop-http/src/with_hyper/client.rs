//! hyper's HTTP/1.1 client on yieldloop, blocking-style for tasks: the
//! connection's future runs in a task of its own, and each request pauses
//! only the calling task until its answer's body is all in.

use std::error::Error as StdError;
use std::fmt;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderValue, HOST};
use hyper::{Request, Response, Uri};
use yieldloop::net::TcpStream;
use yieldloop::JoinHandle;

use super::rt::io as hyper_io;

/// What can go wrong with a request.
#[derive(Debug)]
pub enum Error {
    /// The URL is not one this client can fetch: not `http://`, or no
    /// host.
    Url(String),
    /// Connecting (name lookup, refused connection).
    Connect(std::io::Error),
    /// hyper's: the connection failed or closed, a malformed answer.
    Http(hyper::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(why) => write!(f, "bad URL: {why}"),
            Error::Connect(e) => write!(f, "cannot connect: {e}"),
            Error::Http(e) => write!(f, "HTTP: {e}"),
        }
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Url(_) => None,
            Error::Connect(e) => Some(e),
            Error::Http(e) => Some(e),
        }
    }
}

impl From<hyper::Error> for Error {
    fn from(e: hyper::Error) -> Error {
        Error::Http(e)
    }
}

/// One HTTP/1.1 connection, kept alive across requests: hyper's
/// `SendRequest`, with the connection's future driven by a task of the
/// same thread ([`yieldloop::spawn_future`]). Requests are sent one after
/// another; dropping the client ends the connection.
#[derive(Debug)]
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    /// `host[:port]`, for requests without a `Host` header.
    host: HeaderValue,
    /// The task driving the connection.
    conn: JoinHandle<()>,
}

impl Client {
    /// Connects to the host and port of `url` (`http://host[:port]/…`;
    /// the path is not used) and performs hyper's handshake.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for a URL that is not `http://`, [`Error::Connect`]
    /// if the connection fails, [`Error::Http`] for hyper's handshake.
    ///
    /// # Panics
    ///
    /// Outside a yieldloop run (it spawns a task).
    pub fn connect(url: &str) -> Result<Client, Error> {
        let uri: Uri = url.parse().map_err(|e| Error::Url(format!("{url}: {e}")))?;
        Client::connect_uri(&uri)
    }

    fn connect_uri(uri: &Uri) -> Result<Client, Error> {
        if uri.scheme_str() != Some("http") {
            return Err(Error::Url(format!("{uri}: only http:// is supported")));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| Error::Url(format!("{uri}: no host")))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
        let stream = TcpStream::connect((host, port)).map_err(Error::Connect)?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = yieldloop::block_on(http1::handshake(hyper_io(stream)))?;
        let conn = yieldloop::spawn_future(async move {
            // Its error reaches the caller through the next request.
            let _ = conn.await;
        });
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|e| Error::Url(format!("{uri}: {e}")))?;
        Ok(Client { sender, host, conn })
    }

    /// Sends `req` on this connection and returns the answer with its body
    /// collected. The URI may be absolute (`http://host/path`) or a path;
    /// it is sent as a path, and a `Host` header is added if missing.
    ///
    /// # Errors
    ///
    /// [`Error::Http`] when the connection fails or the answer is
    /// malformed; the connection is then no longer usable.
    pub fn request<B: Into<Bytes>>(&mut self, req: Request<B>) -> Result<Response<Bytes>, Error> {
        let (mut parts, body) = req.into_parts();
        if let Some(pq) = parts.uri.path_and_query() {
            if parts.uri.scheme().is_some() {
                parts.uri = Uri::from(pq.clone());
            }
        }
        if !parts.headers.contains_key(HOST) {
            parts.headers.insert(HOST, self.host.clone());
        }
        let req = Request::from_parts(parts, Full::new(body.into()));
        let sender = &mut self.sender;
        yieldloop::block_on(async move {
            // Ready once the previous exchange is over.
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
    pub fn get(&mut self, path: &str) -> Result<Response<Bytes>, Error> {
        let req = Request::get(path)
            .body(Bytes::new())
            .map_err(|e| Error::Url(format!("{path}: {e}")))?;
        self.request(req)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The connection's task would end once it saw the sender gone;
        // ending it now closes the socket at once.
        self.conn.cancel();
    }
}

/// `GET url` on a fresh connection, from a task: pauses the calling task
/// (only) until the answer's body is all in. The connection closes after.
///
/// ```no_run
/// yieldloop::run(|| {
///     let resp = yieldloop_http::with_hyper::get("http://127.0.0.1:8080/").unwrap();
///     println!("{} {:?}", resp.status(), resp.body());
/// });
/// ```
///
/// # Errors
///
/// As for [`Client::connect`] and [`Client::request`].
///
/// # Panics
///
/// Outside a yieldloop run.
pub fn get(url: &str) -> Result<Response<Bytes>, Error> {
    let req = Request::get(url)
        .body(Bytes::new())
        .map_err(|e| Error::Url(format!("{url}: {e}")))?;
    request(req)
}

/// Sends `req`, whose URI must be absolute (`http://host[:port]/path`), on
/// a fresh connection, and returns the answer with its body collected; see
/// [`get`].
///
/// # Errors
///
/// As for [`Client::connect`] and [`Client::request`].
///
/// # Panics
///
/// Outside a yieldloop run.
pub fn request<B: Into<Bytes>>(req: Request<B>) -> Result<Response<Bytes>, Error> {
    let mut client = Client::connect_uri(req.uri())?;
    client.request(req)
}
