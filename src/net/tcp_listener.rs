//! `TcpListener`: accepting connections through [`Op::Accept`].

use std::io;
use std::net::SocketAddr;

use super::addr::{each_addr, ToSocketAddrs};
use super::tcp_stream::TcpStream;
use crate::io::PausingIo;
use crate::protocol::{Op, Resume};

/// A listening TCP socket whose `accept` pauses only the calling task.
///
/// # Examples
///
/// ```no_run
/// use std::io;
/// use yieldloop::net::TcpListener;
///
/// yieldloop::run(|| -> io::Result<()> {
///     let listener = TcpListener::bind("127.0.0.1:1235")?;
///     for stream in listener.incoming() {
///         let mut stream = stream?;
///         yieldloop::spawn(move || {
///             let (mut r, mut w) = (&stream, &stream);
///             let _ = io::copy(&mut r, &mut w);
///         });
///     }
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct TcpListener {
    inner: PausingIo<mio::net::TcpListener>,
}

socket_traits!(TcpListener { "local": local_addr });

impl TcpListener {
    /// Binds to `addr` (with `SO_REUSEADDR`) and listens, trying each
    /// address it resolves to in turn. Port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr).
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::AddrInUse`], or
    /// [`io::ErrorKind::Unsupported`] outside a task.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, |a| {
            Ok(TcpListener {
                inner: PausingIo::from_nonblocking(mio::net::TcpListener::bind(a)?)?,
            })
        })
    }

    /// Wraps a listening std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            inner: PausingIo::from_nonblocking(mio::net::TcpListener::from_std(listener))?,
        })
    }

    socket_methods! {
        /// The local address, with the port the system picked for port 0.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;

        /// The id the socket is registered under.
        pub fn io_id;
    }

    /// Waits for a connection and returns it with the peer's address.
    ///
    /// It first tries to accept at once; if none is pending, it yields
    /// [`Op::Accept`] and the scheduler performs the accept when the
    /// listener becomes readable.
    ///
    /// # Errors
    ///
    /// The system's error; for example `EMFILE` ("too many open files"),
    /// after which the listener still works once descriptors free up.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        // A listener whose backlog never empties takes its turn too.
        crate::task::coop::proceed();
        loop {
            match self.inner.get_ref().accept() {
                Ok((s, addr)) => return Ok((TcpStream::from_std(s.into())?, addr)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            match crate::task::suspend::suspend(Op::Accept(self.inner.io_id(), None)) {
                Resume::Accepted(s, addr) => return Ok((TcpStream::from_std(s)?, addr)),
                other => other.into_io()?,
            }
        }
    }

    /// An endless iterator of accepted connections, for `for` loops.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    socket_methods! {
        /// Sets the IP time-to-live of accepted connections' packets.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_ttl(&self, ttl: u32) -> io::Result<()>;

        pub fn take_error;
    }
}

/// The iterator of [`TcpListener::incoming`]: never ends; each item is one
/// [`accept`](TcpListener::accept).
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}
