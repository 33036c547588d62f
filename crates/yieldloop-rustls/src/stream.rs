//! [`TlsStream`]: a rustls session over a yieldloop `TcpStream`, read and
//! written blocking-style.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use rustls::{ConnectionCommon, SideData, StreamOwned};
use yieldloop::net::TcpStream;

/// A TLS session over a yieldloop [`TcpStream`], handshake done.
///
/// It implements [`Read`] and [`Write`]: each call drives the session
/// (decrypting what came in, encrypting what goes out), and a socket read
/// or write that would block pauses only the calling task. Anything that
/// speaks TLS through `std::io` (tungstenite, a line protocol, a copy loop)
/// runs over it unchanged.
///
/// `C` is the session: [`rustls::ServerConnection`] from a
/// [`TlsAcceptor`](crate::TlsAcceptor), [`rustls::ClientConnection`] from a
/// [`TlsConnector`](crate::TlsConnector).
///
/// # Ending
///
/// A peer that closes the TCP connection without TLS's `close_notify`
/// makes a read fail with `UnexpectedEof` (the data may have been cut);
/// after a `close_notify` a read returns `Ok(0)`. [`shutdown`](Self::shutdown)
/// sends this side's `close_notify` and ends the sending half.
pub struct TlsStream<C> {
    /// rustls's pairing of a session and a socket, whose `Read`/`Write`
    /// drive the session with the socket's own (pausing) calls.
    inner: StreamOwned<C, TcpStream>,
}

impl<C, S> TlsStream<C>
where
    C: DerefMut + Deref<Target = ConnectionCommon<S>>,
    S: SideData + 'static,
{
    /// Pairs a session whose handshake is over with its socket.
    pub(crate) fn new(session: C, sock: TcpStream) -> TlsStream<C> {
        TlsStream {
            inner: StreamOwned::new(session, sock),
        }
    }

    /// The rustls session: the negotiated protocol version and cipher
    /// suite, the peer's certificates, ALPN.
    pub fn session(&self) -> &C {
        &self.inner.conn
    }

    /// The rustls session, mutably (to send `close_notify` by hand, or
    /// change its buffer limits).
    pub fn session_mut(&mut self) -> &mut C {
        &mut self.inner.conn
    }

    /// The socket under the session. Reading or writing it directly
    /// breaks the session; its options (timeouts, `TCP_NODELAY`) are
    /// safe to set.
    pub fn get_ref(&self) -> &TcpStream {
        &self.inner.sock
    }

    /// The protocol agreed by ALPN (`b"h2"`, `b"http/1.1"`), if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.inner.conn.alpn_protocol()
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// The system's, for a socket no longer connected.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.sock.peer_addr()
    }

    /// A time limit on each read of the socket (see yieldloop's
    /// `TcpStream::set_read_timeout`); `None` waits for ever.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.sock.set_read_timeout(timeout)
    }

    /// A time limit on each write of the socket; `None` waits for ever.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.sock.set_write_timeout(timeout)
    }

    /// Sends this side's `close_notify`, flushes, and shuts the socket's
    /// sending half: the peer reads a clean end. Reading goes on working
    /// until the peer closes too.
    ///
    /// # Errors
    ///
    /// The socket's, if the alert cannot be sent.
    pub fn shutdown(&mut self) -> io::Result<()> {
        self.inner.conn.send_close_notify();
        self.inner.flush()?;
        self.inner.sock.shutdown(Shutdown::Write)
    }

    /// The session and the socket, apart.
    pub fn into_parts(self) -> (C, TcpStream) {
        self.inner.into_parts()
    }
}

impl<C, S> Read for TlsStream<C>
where
    C: DerefMut + Deref<Target = ConnectionCommon<S>>,
    S: SideData + 'static,
{
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<C, S> Write for TlsStream<C>
where
    C: DerefMut + Deref<Target = ConnectionCommon<S>>,
    S: SideData + 'static,
{
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<C: fmt::Debug> fmt::Debug for TlsStream<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsStream")
            .field("session", &self.inner.conn)
            .field("sock", &self.inner.sock)
            .finish()
    }
}

/// The stack of the task a handshake runs on. rustls's handshake is the
/// deepest code a session runs (a debug build's server side needs more than
/// yieldloop's default 64 KiB), while reads and writes after it fit in the
/// default: running it on a task of its own with this much lets callers keep
/// small stacks.
pub const HANDSHAKE_STACK_SIZE: usize = 256 * 1024;

/// Runs the handshake of `session` over `sock` to its end, within
/// `deadline` if there is one, on a task of its own with a stack of
/// [`HANDSHAKE_STACK_SIZE`]; the calling task pauses until it is over (its
/// reads and writes pause only that task).
pub(crate) fn handshake<C, S>(
    mut session: C,
    mut sock: TcpStream,
    deadline: Option<Duration>,
) -> io::Result<TlsStream<C>>
where
    C: DerefMut + Deref<Target = ConnectionCommon<S>> + 'static,
    S: SideData + 'static,
{
    let task = yieldloop::Builder::new()
        .name("tls-handshake")
        .stack_size(HANDSHAKE_STACK_SIZE)
        .spawn(move || -> io::Result<TlsStream<C>> {
            let mut run = || -> io::Result<()> {
                while session.is_handshaking() {
                    session.complete_io(&mut sock)?;
                }
                // The last flight (a TLS 1.3 server's session tickets) goes
                // out now rather than with the first write.
                while session.wants_write() {
                    session.write_tls(&mut sock)?;
                }
                Ok(())
            };
            match deadline {
                None => run()?,
                // The timeout unwinds the handshake from its pause; the
                // session and the socket are dropped with this task.
                Some(d) => yieldloop::timeout(d, run).unwrap_or_else(|_| Err(timed_out(d)))?,
            }
            Ok(TlsStream::new(session, sock))
        })?;
    task.join()
        .unwrap_or_else(|e| Err(io::Error::other(format!("the TLS handshake failed: {e}"))))
}

/// The error of a handshake that overran its deadline.
pub(crate) fn timed_out(d: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("the TLS handshake took longer than {d:?}"),
    )
}
