//! The client side: `ws://` and `wss://` URLs.

use std::io::{self, Read, Write};

use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::client::Response;
use tungstenite::stream::Mode;
use tungstenite::WebSocket;
use yieldloop::net::TcpStream;

/// The stream under a client's socket: plain TCP for `ws://`, TLS for
/// `wss://` (feature `tls`).
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientStream {
    /// `ws://`.
    Plain(TcpStream),
    /// `wss://`, a yieldloop-rustls session.
    #[cfg(feature = "tls")]
    Tls(Box<yieldloop_rustls::ClientTlsStream>),
}

impl Read for ClientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            ClientStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for ClientStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            ClientStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            ClientStream::Tls(s) => s.flush(),
        }
    }
}

/// Runs the client's opening handshake for `request` (a URL, or an
/// `http::Request` with headers of one's own) on `stream`, pausing the
/// calling task only.
///
/// # Errors
///
/// tungstenite's: a malformed request, a server that refuses the upgrade,
/// a failing stream.
pub fn client<S, R>(request: R, stream: S) -> Result<(WebSocket<S>, Response), tungstenite::Error>
where
    S: Read + Write,
    R: IntoClientRequest,
{
    tungstenite::client::client(request, stream).map_err(super::handshake_error)
}

/// Connects to a `ws://` URL and runs the handshake, pausing the calling
/// task only. For `wss://`, use `connect_tls` (feature `tls`), which
/// takes the roots to trust.
///
/// # Errors
///
/// tungstenite's `Url` error for a URL it cannot use (`wss://` among
/// them); the connection's and the handshake's.
pub fn connect(url: &str) -> Result<(WebSocket<ClientStream>, Response), tungstenite::Error> {
    let (request, host, port, mode) = parse(url)?;
    if matches!(mode, Mode::Tls) {
        return Err(tungstenite::Error::Url(
            tungstenite::error::UrlError::TlsFeatureNotEnabled,
        ));
    }
    let stream = TcpStream::connect((host.as_str(), port))?;
    stream.set_nodelay(true)?;
    client(request, ClientStream::Plain(stream))
}

/// Connects to a `wss://` URL over TLS with `connector` (its roots; SNI
/// and the certificate check use the URL's host), or to a `ws://` one
/// without TLS, and runs the handshake.
///
/// # Errors
///
/// As for [`connect`], and the TLS handshake's (as an I/O error).
#[cfg(feature = "tls")]
pub fn connect_tls(
    url: &str,
    connector: &yieldloop_rustls::TlsConnector,
) -> Result<(WebSocket<ClientStream>, Response), tungstenite::Error> {
    let (request, host, port, mode) = parse(url)?;
    let stream = TcpStream::connect((host.as_str(), port))?;
    stream.set_nodelay(true)?;
    let stream = match mode {
        Mode::Plain => ClientStream::Plain(stream),
        Mode::Tls => ClientStream::Tls(Box::new(connector.connect(&host, stream)?)),
    };
    client(request, stream)
}

/// The request for `url`, and where to connect.
fn parse(
    url: &str,
) -> Result<(tungstenite::handshake::client::Request, String, u16, Mode), tungstenite::Error> {
    let request = url.into_client_request()?;
    let uri = request.uri();
    let mode = tungstenite::client::uri_mode(uri)?;
    let host = uri
        .host()
        .ok_or(tungstenite::Error::Url(
            tungstenite::error::UrlError::NoHostName,
        ))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(match mode {
        Mode::Plain => 80,
        Mode::Tls => 443,
    });
    Ok((request, host, port, mode))
}
