//! The client side: [`TlsConnector`].

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use yieldloop::net::TcpStream;

use crate::stream::{handshake, TlsStream};

/// Starts TLS sessions to servers: a client configuration (trusted roots,
/// ALPN) and a handshake deadline. Cheap to clone.
///
/// The name given to [`connect`](Self::connect) is sent as SNI and checked
/// against the server's certificate.
///
/// # Examples
///
/// ```no_run
/// use std::io::{Read, Write};
/// use yieldloop_rustls::TlsConnector;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let connector = TlsConnector::from_pem_file("ca.pem")?;
///     let mut tls = connector.connect_to("localhost", 8443)?;
///     tls.write_all(b"hello\n")?;
///     let mut answer = Vec::new();
///     tls.read_to_end(&mut answer)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct TlsConnector {
    /// Shared by every session it starts.
    config: Arc<ClientConfig>,
    /// The limit on the whole handshake, `None` for none.
    handshake_timeout: Option<Duration>,
}

impl TlsConnector {
    /// A connector for `config`, with the
    /// [`DEFAULT_HANDSHAKE_TIMEOUT`](crate::DEFAULT_HANDSHAKE_TIMEOUT).
    pub fn new(config: Arc<ClientConfig>) -> TlsConnector {
        TlsConnector {
            config,
            handshake_timeout: Some(crate::DEFAULT_HANDSHAKE_TIMEOUT),
        }
    }

    /// A connector trusting the authorities in `roots`; see
    /// [`client_config`](crate::client_config).
    pub fn with_roots(roots: RootCertStore) -> TlsConnector {
        TlsConnector::new(Arc::new(crate::client_config(roots)))
    }

    /// A connector trusting the certificates of a PEM file (a private CA,
    /// or a self-signed server's own certificate).
    ///
    /// Unlike the blocking-style call, the handshake runs on the stack of the
    /// task polling the future: give that task
    /// [`HANDSHAKE_STACK_SIZE`](crate::HANDSHAKE_STACK_SIZE) (a debug
    /// build needs more than the default 64 KiB).
    ///
    /// # Errors
    ///
    /// As for [`load_roots`](crate::load_roots).
    pub fn from_pem_file(path: impl AsRef<Path>) -> io::Result<TlsConnector> {
        Ok(TlsConnector::with_roots(crate::load_roots(path)?))
    }

    /// The protocols asked for by ALPN, most preferred first
    /// (`&[b"h2", b"http/1.1"]`). Changes this connector's own copy of
    /// the configuration.
    pub fn alpn(mut self, protocols: &[&[u8]]) -> TlsConnector {
        Arc::make_mut(&mut self.config).alpn_protocols =
            protocols.iter().map(|p| p.to_vec()).collect();
        self
    }

    /// The limit on a handshake; `None` for none.
    pub fn handshake_timeout(mut self, timeout: Option<Duration>) -> TlsConnector {
        self.handshake_timeout = timeout;
        self
    }

    /// The configuration sessions start from.
    pub fn config(&self) -> &Arc<ClientConfig> {
        &self.config
    }

    /// Runs the client's handshake on `stream` for the server `name` (a
    /// DNS name or an IP address, sent as SNI when a name), pausing the
    /// calling task only.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a name that is neither; `TimedOut` past the
    /// deadline; `InvalidData` for a certificate not trusted or not for
    /// `name` (rustls's error inside); the socket's own errors.
    pub fn connect(
        &self,
        name: &str,
        stream: TcpStream,
    ) -> io::Result<TlsStream<ClientConnection>> {
        let session = ClientConnection::new(self.config.clone(), server_name(name)?)
            .map_err(io::Error::other)?;
        handshake(session, stream, self.handshake_timeout)
    }

    /// Connects to `host:port` over TCP (`TCP_NODELAY` on), then
    /// [`connect`](Self::connect)s with `host` as the server's name.
    ///
    /// # Errors
    ///
    /// Resolving or connecting; then as for [`connect`](Self::connect).
    pub fn connect_to(&self, host: &str, port: u16) -> io::Result<TlsStream<ClientConnection>> {
        let stream = TcpStream::connect((host, port))?;
        stream.set_nodelay(true)?;
        self.connect(host, stream)
    }

    /// The handshake as a future, for async code (hyper's client on
    /// yieldloop): tokio-rustls's client stream over yieldloop's socket.
    /// Poll it on a yieldloop thread.
    ///
    /// Unlike the blocking-style call, the handshake runs on the stack of the
    /// task polling the future: give that task
    /// [`HANDSHAKE_STACK_SIZE`](crate::HANDSHAKE_STACK_SIZE) (a debug
    /// build needs more than the default 64 KiB).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    #[cfg(feature = "tokio")]
    pub async fn connect_async(
        &self,
        name: &str,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let connect = tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(server_name(name)?, stream);
        crate::async_io::within(self.handshake_timeout, connect).await
    }
}

/// `name` as rustls's server name: an IP address, or a DNS name (from
/// which an IPv6 literal's brackets are taken off).
fn server_name(name: &str) -> io::Result<ServerName<'static>> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a server name: {e}"),
        )
    })
}
