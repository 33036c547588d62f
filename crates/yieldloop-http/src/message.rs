//! What a handler sees and what it gives back: [`Request`] borrows from the
//! connection's read buffer (nothing is copied), [`Response`] owns or
//! borrows its body (a `'static` body costs no allocation).

use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;

/// One request, as a handler sees it: method, path, query, host, headers
/// and the whole body, all borrowed from the connection's buffer.
///
/// The server has checked the framing already (a valid head, one valid
/// `Host`, a body within `max_body` read in full, chunked bodies decoded);
/// what is left to the handler is the meaning. Nothing is percent-decoded.
///
/// The body is handed over whole, as `http_body_util::Limited` and
/// `collect` give it to a hyper service, or `http.MaxBytesReader` and
/// `io.ReadAll` to a Go handler: [`ServeConfig::max_body`] bounds it (a
/// larger one gets 413 before the handler is called), and the server's
/// buffer grows only as the bytes arrive, never to a length the client
/// merely declares.
///
/// [`ServeConfig::max_body`]: crate::ServeConfig#structfield.max_body
///
/// # Examples
///
/// ```
/// use yieldloop_http::{Request, Response};
///
/// fn greet(req: &Request<'_>) -> Response {
///     match (req.method(), req.path()) {
///         ("GET", "/hello") => {
///             let name = req.query_param("name").unwrap_or("world");
///             Response::text(200, format!("hello, {name}\n"))
///         }
///         ("POST", "/echo") => Response::new(200).body(req.body().to_vec()),
///         _ => Response::error(404),
///     }
/// }
/// ```
pub struct Request<'a> {
    /// `GET`, `POST`, … as sent (methods are case-sensitive).
    pub(crate) method: &'a str,
    /// The request target up to `?` (of an absolute-form target, the part
    /// after the authority).
    pub(crate) path: &'a str,
    /// After `?`, or empty.
    pub(crate) query: &'a str,
    /// The authority of an absolute-form target, else the `Host` header,
    /// else empty (HTTP/1.0 without one).
    /// Checked to be a valid host (so ASCII) when the head was parsed.
    pub(crate) host: &'a [u8],
    /// The minor version: 1 for HTTP/1.1 (and later 1.x), 0 for HTTP/1.0.
    pub(crate) version: u8,
    /// The headers in the order sent.
    pub(crate) headers: &'a [httparse::Header<'a>],
    /// The whole body (`Content-Length` bytes), empty without one.
    pub(crate) body: &'a [u8],
    /// The client's address.
    pub(crate) peer: Option<SocketAddr>,
}

impl<'a> Request<'a> {
    /// The method, as sent: `GET`, `HEAD`, `POST`, …
    ///
    /// For `HEAD` the server sends the head of the handler's answer and
    /// drops its body, so a handler may treat `HEAD` like `GET`.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The path: the request target up to `?` (`/users/7`). For a target
    /// in absolute form (`GET http://example.com/users/7 HTTP/1.1`, as sent
    /// to proxies) the path after the authority, `/` if there is none; the
    /// authority is [`host`](Self::host).
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// The query: what follows `?` in the target, empty without one; not
    /// decoded.
    pub fn query(&self) -> &'a str {
        self.query
    }

    /// The first value of query parameter `name` (`ms` in `?ms=20&x=1`),
    /// not decoded; `Some("")` for `?name` or `?name=`.
    pub fn query_param(&self, name: &str) -> Option<&'a str> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }

    /// The host the request is for (`example.com:8080`): the authority of
    /// an absolute-form target, which RFC 9112 §3.2.2 puts before the
    /// `Host` header, else the `Host` header; empty for an HTTP/1.0 request
    /// without either. The server has checked it is a valid host and port
    /// and that there was one `Host` header at most.
    pub fn host(&self) -> &'a str {
        // Valid hosts are ASCII: this never gives the empty fallback.
        std::str::from_utf8(self.host).unwrap_or("")
    }

    /// The minor HTTP version: 1 for HTTP/1.1, 0 for HTTP/1.0. A request
    /// sent as `HTTP/1.2` or any later 1.x is served as 1.1 and says 1.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The first header named `name` (compared without regard to case), if
    /// it is there and its value is UTF-8; see [`headers`](Self::headers)
    /// for raw values and repeated headers.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    }

    /// Every header as (name, raw value), in the order sent.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + '_ {
        self.headers.iter().map(|h| (h.name, h.value))
    }

    /// The body: all `Content-Length` bytes of it, or the decoded chunks of
    /// a chunked one (trailers dropped); empty without one.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The client's address, if the system still knew it when the
    /// connection was accepted.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("host", &self.host())
            .field("version", &self.version)
            .field("headers", &self.headers.len())
            .field("body", &self.body.len())
            .finish()
    }
}

/// A handler's answer: a status, headers of its own, a body.
///
/// The server adds what frames the message itself: `Date`,
/// `Content-Length` and `Connection`, and `Content-Type: text/plain;
/// charset=utf-8` when the handler sets no `Content-Type`. Headers of the
/// handler's named `Content-Length`, `Transfer-Encoding` or `Connection`
/// are not sent, except that `Connection: close` makes the server close the
/// connection after this answer. A header name or value with a CR or LF in
/// it would split the answer: such an answer is replaced by a 500.
///
/// # Examples
///
/// ```
/// use yieldloop_http::Response;
///
/// let hello = Response::text(200, "hi\n"); // a &'static str: no allocation
/// let json = Response::new(201)
///     .header("Content-Type", "application/json")
///     .header("Location", format!("/items/{}", 7))
///     .body(r#"{"id":7}"#);
/// assert_eq!(json.status, 201);
/// assert_eq!(Response::error(404).body.as_ref(), b"404 Not Found\n");
/// # let _ = hello;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code, 100 to 999.
    pub status: u16,
    /// Headers of the handler's own, sent in this order after the server's.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    /// The body; not sent for `HEAD` requests, nor with a status that has
    /// none (1xx, 204, 304).
    pub body: Cow<'static, [u8]>,
}

impl Response {
    /// An answer with `status`, no headers of its own and an empty body.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Cow::Borrowed(&[]),
        }
    }

    /// A plain-text answer (the server's default `Content-Type`).
    pub fn text(status: u16, body: impl Into<Cow<'static, str>>) -> Response {
        let body = match body.into() {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        };
        Response {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// An answer whose body is its status line, `"404 Not Found\n"`: what
    /// the server itself sends for the requests it refuses.
    pub fn error(status: u16) -> Response {
        Response::text(status, format!("{status} {}\n", reason(status)))
    }

    /// Adds a header (builder style).
    pub fn header(
        mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<Cow<'static, str>>,
    ) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body (builder style).
    pub fn body(mut self, body: impl Into<Body>) -> Response {
        self.body = body.into().0;
        self
    }
}

/// Anything [`Response::body`] takes: `&'static str`, `&'static [u8]`,
/// `String`, `Vec<u8>`.
#[derive(Debug)]
pub struct Body(Cow<'static, [u8]>);

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Body(Cow::Borrowed(s.as_bytes()))
    }
}

impl From<&'static [u8]> for Body {
    fn from(b: &'static [u8]) -> Body {
        Body(Cow::Borrowed(b))
    }
}

impl From<String> for Body {
    fn from(s: String) -> Body {
        Body(Cow::Owned(s.into_bytes()))
    }
}

impl From<Vec<u8>> for Body {
    fn from(b: Vec<u8>) -> Body {
        Body(Cow::Owned(b))
    }
}

/// The reason phrase of `status`, empty for codes without a common one
/// (RFC 9112 allows an empty phrase).
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        414 => "URI Too Long",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}
