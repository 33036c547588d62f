//! The server side: [`TlsAcceptor`].

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use yieldloop::net::TcpStream;

use crate::stream::{handshake, timed_out, TlsStream};

/// How long a handshake may take unless told otherwise: a client that
/// connects and says nothing holds a task and a descriptor that long.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Turns accepted connections into TLS sessions: a server configuration
/// (certificate, key, ALPN) and a handshake deadline. Cheap to clone; one
/// per server, shared by its connection tasks and workers.
///
/// # Examples
///
/// ```no_run
/// use std::io::{Read, Write};
/// use yieldloop::net::TcpListener;
/// use yieldloop_rustls::TlsAcceptor;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let acceptor = TlsAcceptor::from_pem_files("cert.pem", "key.pem")?;
///     let listener = TcpListener::bind("127.0.0.1:8443")?;
///     loop {
///         let (stream, _) = listener.accept()?;
///         let acceptor = acceptor.clone();
///         yieldloop::spawn(move || -> std::io::Result<()> {
///             // The handshake pauses this task only.
///             let mut tls = acceptor.accept(stream)?;
///             let mut buf = [0u8; 1024];
///             let n = tls.read(&mut buf)?;
///             tls.write_all(&buf[..n])?;
///             tls.shutdown()
///         });
///     }
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct TlsAcceptor {
    /// Shared by every session it starts.
    config: Arc<ServerConfig>,
    /// The limit on the whole handshake, `None` for none.
    handshake_timeout: Option<Duration>,
}

impl TlsAcceptor {
    /// An acceptor for `config`, with the [`DEFAULT_HANDSHAKE_TIMEOUT`].
    pub fn new(config: Arc<ServerConfig>) -> TlsAcceptor {
        TlsAcceptor {
            config,
            handshake_timeout: Some(DEFAULT_HANDSHAKE_TIMEOUT),
        }
    }

    /// An acceptor presenting `chain` signed by `key`; see
    /// [`server_config`](crate::server_config).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the key does not suit the certificate.
    pub fn from_single_cert(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> io::Result<TlsAcceptor> {
        Ok(TlsAcceptor::new(Arc::new(crate::server_config(
            chain, key,
        )?)))
    }

    /// An acceptor presenting the certificate chain and key of two PEM
    /// files.
    ///
    /// # Errors
    ///
    /// Reading or parsing either file (the error names it), or a key that
    /// does not suit the certificate.
    pub fn from_pem_files(
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> io::Result<TlsAcceptor> {
        TlsAcceptor::from_single_cert(crate::load_certs(cert)?, crate::load_key(key)?)
    }

    /// The protocols offered to clients by ALPN, most preferred first
    /// (`&[b"h2", b"http/1.1"]`); a client naming none of them is refused.
    /// Changes this acceptor's own copy of the configuration.
    pub fn alpn(mut self, protocols: &[&[u8]]) -> TlsAcceptor {
        Arc::make_mut(&mut self.config).alpn_protocols =
            protocols.iter().map(|p| p.to_vec()).collect();
        self
    }

    /// The limit on a handshake, from the client's first byte awaited to
    /// the server's last flight sent; `None` for none.
    pub fn handshake_timeout(mut self, timeout: Option<Duration>) -> TlsAcceptor {
        self.handshake_timeout = timeout;
        self
    }

    /// The configuration sessions start from.
    pub fn config(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    /// Runs the server's handshake on `stream`, pausing the calling task
    /// only, and returns the session ready for reads and writes.
    ///
    /// # Errors
    ///
    /// `TimedOut` past the handshake deadline; `InvalidData` for a client
    /// that does not speak TLS or offers nothing acceptable (rustls's
    /// error inside); the socket's own errors. The connection is closed.
    ///
    /// The session and the handshake's task (with its deep stack) start
    /// only once the client's first record has arrived whole (see
    /// [`await_hello`](Self::await_hello)): a client that sends part of a
    /// ClientHello and stalls holds this task and its socket, nothing more.
    pub fn accept(&self, stream: TcpStream) -> io::Result<TlsStream<ServerConnection>> {
        let rest = self.await_hello(&stream)?;
        let session = ServerConnection::new(self.config.clone()).map_err(io::Error::other)?;
        handshake(session, stream, rest.handshake_timeout)
    }

    /// Pauses the calling task until the client's first TLS record (the
    /// record its ClientHello comes in) is queued on `stream` whole, or
    /// the stream ends, or its first bytes show it is not a TLS handshake;
    /// nothing is read from the stream (the bytes are only
    /// [peeked](TcpStream::peek) at). Returns the acceptor to run the
    /// handshake with: this one, its deadline shortened by the time this
    /// wait took.
    ///
    /// [`accept`](Self::accept) does this first. Call it before
    /// `accept_async` (feature `tokio`), on the task that will poll the
    /// handshake, so that a client that sends part of a ClientHello and
    /// stalls (a half-open handshake, held open by the thousand) costs a
    /// shallow paused task and its socket, not a session and the pages of
    /// a stack the handshake has been deep into.
    ///
    /// # Errors
    ///
    /// `TimedOut` past the handshake deadline; the socket's own errors.
    pub fn await_hello(&self, stream: &TcpStream) -> io::Result<TlsAcceptor> {
        let started = Instant::now();
        // The deadline as the socket's read timeout, put back afterwards
        // (a timeout scope would cost this wait a timer and its frames).
        let before = stream.read_timeout()?;
        let waited = (|| -> io::Result<()> {
            loop {
                let left = match self.handshake_timeout {
                    None => None,
                    Some(d) => match d.checked_sub(started.elapsed()) {
                        Some(left) if !left.is_zero() => Some(left),
                        _ => return Err(timed_out(d)),
                    },
                };
                stream.set_read_timeout(left)?;
                if first_record_queued(stream)? {
                    return Ok(());
                }
                stream.readable()?;
            }
        })();
        stream.set_read_timeout(before)?;
        match (waited, self.handshake_timeout) {
            (Err(e), Some(d)) if e.kind() == io::ErrorKind::TimedOut => return Err(timed_out(d)),
            (r, _) => r?,
        }
        Ok(TlsAcceptor {
            config: self.config.clone(),
            handshake_timeout: self
                .handshake_timeout
                .map(|d| d.saturating_sub(started.elapsed())),
        })
    }

    /// The handshake as a future, for async code (hyper's connections on
    /// yieldloop): tokio-rustls's server stream over yieldloop's socket,
    /// which implements tokio's `AsyncRead` and `AsyncWrite`. The deadline
    /// is a yieldloop timer. Poll it on a yieldloop thread
    /// ([`yieldloop::block_on`], [`yieldloop::spawn_future`]).
    ///
    /// Unlike the blocking-style call, the handshake runs on the stack of the
    /// task polling the future: give that task
    /// [`HANDSHAKE_STACK_SIZE`](crate::HANDSHAKE_STACK_SIZE) (a debug
    /// build needs more than the default 64 KiB). Nor does it wait for the
    /// client's hello first: call [`await_hello`](Self::await_hello) on
    /// that task before the future starts, and use the acceptor it returns.
    ///
    /// # Errors
    ///
    /// As for [`accept`](Self::accept).
    #[cfg(feature = "tokio")]
    pub async fn accept_async(
        &self,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        let accept = tokio_rustls::TlsAcceptor::from(self.config.clone()).accept(stream);
        crate::async_io::within(self.handshake_timeout, accept).await
    }
}

/// A TLS record's header: content type, protocol version, length.
const RECORD_HEADER: usize = 5;
/// The content type of handshake records, which a ClientHello comes in.
const HANDSHAKE_RECORD: u8 = 22;
/// The longest record a peer may send: 2^14 bytes of plaintext, plus the
/// 2,048 bytes of expansion TLS 1.2 allows (RFC 5246 §6.2.3). A longer
/// declared length is left to rustls to refuse.
const MAX_RECORD: usize = (1 << 14) + 2048;

/// True once the client's first record is queued on `stream` whole, or
/// there is no point in waiting for it: the stream ended, or its first
/// bytes are not a TLS handshake record of an acceptable length (rustls
/// then refuses it). Peeks only; pauses while nothing at all is queued.
fn first_record_queued(stream: &TcpStream) -> io::Result<bool> {
    let mut head = [0u8; RECORD_HEADER];
    let n = stream.peek(&mut head)?;
    if n == 0 || head[0] != HANDSHAKE_RECORD {
        return Ok(true);
    }
    if n < RECORD_HEADER {
        return Ok(false);
    }
    let len = usize::from(u16::from_be_bytes([head[3], head[4]]));
    if len > MAX_RECORD {
        return Ok(true);
    }
    // Only for the peek: freed before the task pauses again, so a
    // stalled client holds none of it.
    let mut record = vec![0u8; RECORD_HEADER + len];
    Ok(stream.peek(&mut record)? == record.len())
}
