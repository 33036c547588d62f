//! `UnixDatagram`: Unix domain datagrams with blocking-style calls.
//!
//! Receives and connected sends are the plain "try, and on `WouldBlock`
//! wait for readiness" loop. A [`send_to`](UnixDatagram::send_to) needs
//! more: when the receiver's queue is full, Linux refuses a datagram from
//! a socket not connected to that receiver with `EAGAIN`, yet the sending
//! socket stays writable, and the refusal itself raises a write event. So
//! waiting for write readiness would only try again at once, over and
//! over. A `send_to` therefore waits for write readiness first (which is
//! right when the socket's own send buffer is full), and once a write
//! event has been followed by another refusal it tries again on a timer,
//! at growing intervals.
//!
//! After a read shutdown a non-blocking receive on an empty socket still
//! says `WouldBlock` where a blocking one returns 0, so the socket
//! remembers its own [`shutdown`](UnixDatagram::shutdown) and answers 0
//! instead of waiting.

use std::cell::Cell;
use std::io;
use std::net::Shutdown;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::io::PausingIo;
use crate::protocol::{Op, Resume};

/// The longest pause between two attempts of a [`UnixDatagram::send_to`]
/// while the receiver's queue stays full.
const MAX_SEND_TO_BACKOFF: Duration = Duration::from_millis(50);

/// A Unix domain datagram socket whose sends and receives pause only the
/// calling task.
///
/// The calls mirror [`std::os::unix::net::UnixDatagram`]: a receive waits
/// for a datagram (up to the [read timeout](Self::set_read_timeout), if
/// one is set), a send waits while the receiver's queue or the socket's
/// send buffer is full. Datagrams keep their boundaries: each receive
/// returns exactly one. All calls take `&self`, so one task may receive
/// while another sends on the same socket (share it with an `Rc`).
///
/// Binding creates the socket file; like std, dropping the socket does not
/// remove it: remove it yourself (a `bind` to an existing file fails with
/// [`io::ErrorKind::AddrInUse`]).
///
/// # Examples
///
/// ```
/// use yieldloop::net::UnixDatagram;
///
/// let dir = std::env::temp_dir().join(format!("yieldloop-doc-udg-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let (server_path, client_path) = (dir.join("server.sock"), dir.join("client.sock"));
/// let sp = server_path.clone();
/// yieldloop::run(move || -> std::io::Result<()> {
///     let server = UnixDatagram::bind(&sp)?;
///     let echo = yieldloop::spawn(move || -> std::io::Result<()> {
///         let mut buf = [0u8; 1024];
///         let (n, from) = server.recv_from(&mut buf)?;
///         let back = from.as_pathname().expect("the client is bound");
///         server.send_to(&buf[..n], back)?;
///         Ok(())
///     });
///     let client = UnixDatagram::bind(&client_path)?;
///     client.send_to(b"ping", &sp)?;
///     let mut buf = [0u8; 16];
///     let (n, from) = client.recv_from(&mut buf)?;
///     assert_eq!(&buf[..n], b"ping");
///     assert_eq!(from.as_pathname(), Some(sp.as_path()));
///     echo.join().unwrap()
/// })
/// .unwrap();
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct UnixDatagram {
    inner: PausingIo<mio::net::UnixDatagram>,
    /// Whether [`shutdown`](Self::shutdown) has shut the read side.
    read_shut: Cell<bool>,
}

socket_traits!(UnixDatagram { "local": local_addr, "peer": peer_addr });

impl UnixDatagram {
    /// Creates the socket file at `path` and binds a socket to it.
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::AddrInUse`] when the file
    /// exists, or [`io::ErrorKind::Unsupported`] outside a task.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            inner: PausingIo::from_nonblocking(mio::net::UnixDatagram::bind(path)?)?,
            read_shut: Cell::new(false),
        })
    }

    /// Binds a socket to `addr`: a path, or on Linux an abstract name
    /// (see `std::os::linux::net::SocketAddrExt`).
    ///
    /// # Errors
    ///
    /// As for [`bind`](Self::bind).
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            inner: PausingIo::from_nonblocking(mio::net::UnixDatagram::bind_addr(addr)?)?,
            read_shut: Cell::new(false),
        })
    }

    /// A socket bound to no address. It can send, and after
    /// [`connect`](Self::connect) receive from its peer, but nobody can
    /// send to it by address.
    ///
    /// # Errors
    ///
    /// The system's error, or [`io::ErrorKind::Unsupported`] outside a
    /// task.
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            inner: PausingIo::from_nonblocking(mio::net::UnixDatagram::unbound()?)?,
            read_shut: Cell::new(false),
        })
    }

    /// A pair of unnamed sockets connected to each other.
    ///
    /// # Errors
    ///
    /// The system's error, or [`io::ErrorKind::Unsupported`] outside a
    /// task.
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::net::UnixDatagram;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let (a, b) = UnixDatagram::pair()?;
    ///     let reader = yieldloop::spawn(move || {
    ///         let mut buf = [0u8; 16];
    ///         b.recv(&mut buf).map(|n| buf[..n].to_vec())
    ///     });
    ///     a.send(b"one datagram")?;
    ///     assert_eq!(reader.join().unwrap()?, b"one datagram");
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = mio::net::UnixDatagram::pair()?;
        Ok((
            UnixDatagram {
                inner: PausingIo::from_nonblocking(a)?,
                read_shut: Cell::new(false),
            },
            UnixDatagram {
                inner: PausingIo::from_nonblocking(b)?,
                read_shut: Cell::new(false),
            },
        ))
    }

    /// Wraps a std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered.
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(true)?;
        Ok(UnixDatagram {
            inner: PausingIo::from_nonblocking(mio::net::UnixDatagram::from_std(socket))?,
            read_shut: Cell::new(false),
        })
    }

    socket_methods! {
        /// The id the socket is registered under, for hand-written readiness
        /// waits.
        pub fn io_id;

        /// Sets the default peer to the socket at `path`: [`send`](Self::send)
        /// goes there and [`recv`](Self::recv) accepts datagrams from there
        /// only. Nothing is sent, and it never pauses.
        ///
        /// # Errors
        ///
        /// The system's error, e.g. [`io::ErrorKind::NotFound`] when no file
        /// is there or [`io::ErrorKind::ConnectionRefused`] when no socket is
        /// bound to it.
        pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()>;
    }

    /// Sends `buf` as one datagram to the socket at `path` and returns the
    /// bytes sent.
    ///
    /// While the receiver's queue is full this waits. The system does not
    /// signal when a receiver that this socket is not
    /// [connected](Self::connect) to has room again, so then it tries again
    /// after 1 ms at first and up to 50 ms between attempts (a blocking
    /// send would be woken at once).
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::NotFound`] when no file is
    /// there, [`io::ErrorKind::ConnectionRefused`] when no socket is bound
    /// to it, `EMSGSIZE` for a datagram too large;
    /// [`io::ErrorKind::TimedOut`] after the
    /// [write timeout](Self::set_write_timeout).
    pub fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        let path = path.as_ref();
        let deadline = crate::io::deadline_in(self.inner.write_timeout());
        let mut backoff = Duration::from_millis(1);
        // Whether the last wait ended with a write readiness event.
        let mut woke_writable = false;
        // Whether a write readiness event was followed by a refusal: then
        // readiness says nothing about the receiver, and the rest of this
        // call waits on the clock alone.
        let mut poll_on_timer = false;
        crate::task::coop::proceed();
        loop {
            match self.inner.get_ref().send_to(buf, path) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    poll_on_timer |= woke_writable;
                    let now = crate::scheduler::timers::now();
                    if deadline.is_some_and(|d| now >= d) {
                        Resume::TimedOut.into_io()?;
                    }
                    let retry_at = now + backoff;
                    let wake = deadline.map_or(retry_at, |d| d.min(retry_at));
                    woke_writable = false;
                    if poll_on_timer {
                        crate::task::suspend::suspend(Op::Wait(wake)).into_io()?;
                        backoff = (backoff * 2).min(MAX_SEND_TO_BACKOFF);
                    } else {
                        match crate::task::suspend::suspend(Op::WriteReady(
                            self.inner.io_id(),
                            Some(wake),
                        )) {
                            Resume::TimedOut => {
                                backoff = (backoff * 2).min(MAX_SEND_TO_BACKOFF);
                            }
                            other => {
                                other.into_io()?;
                                woke_writable = true;
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Receives one datagram into `buf` and returns its length and sender
    /// (unnamed when the sender is not bound). A datagram longer than
    /// `buf` is cut to fit; the rest is lost.
    ///
    /// # Errors
    ///
    /// The system's error; [`io::ErrorKind::TimedOut`] when no datagram
    /// came within the [read timeout](Self::set_read_timeout).
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.read_with(|s| match s.recv_from(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.read_shut.get() => {
                Ok((0, SocketAddr::from_pathname("")?))
            }
            r => r,
        })
    }

    /// Sends `buf` as one datagram to the [connected](Self::connect) peer
    /// (or the other socket of a [`pair`](Self::pair)), waiting while the
    /// peer's queue is full.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::NotConnected`] without a peer; the system's error,
    /// e.g. [`io::ErrorKind::ConnectionRefused`] once the peer is gone;
    /// [`io::ErrorKind::TimedOut`] after the
    /// [write timeout](Self::set_write_timeout).
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_with(|s| s.send(buf))
    }

    /// Receives one datagram, like [`recv_from`](Self::recv_from) without
    /// the sender. On a [connected](Self::connect) socket only the peer's
    /// datagrams arrive.
    ///
    /// # Errors
    ///
    /// As for `recv_from`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_with(|s| match s.recv(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.read_shut.get() => Ok(0),
            r => r,
        })
    }

    socket_methods! {
        /// The address the socket is bound to (unnamed if it is not).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;

        /// The [connected](Self::connect) peer's address.
        ///
        /// # Errors
        ///
        /// [`io::ErrorKind::NotConnected`] without a peer.
        pub fn peer_addr(&self) -> io::Result<SocketAddr>;

        /// Makes receives fail with [`io::ErrorKind::TimedOut`] when no
        /// datagram comes within `timeout` (`None`: wait forever), like std.
        pub fn set_read_timeout {
            /// # Examples
            ///
            /// ```
            /// use std::time::Duration;
            /// use yieldloop::net::UnixDatagram;
            ///
            /// yieldloop::run(|| {
            ///     let (a, _b) = UnixDatagram::pair().unwrap();
            ///     a.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            ///     let err = a.recv(&mut [0u8; 8]).unwrap_err();
            ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
            /// });
            /// ```
        };

        /// Makes sends fail with [`io::ErrorKind::TimedOut`] when they cannot
        /// go out within `timeout` (`None`: wait forever), like std.
        pub fn set_write_timeout;
    }

    /// Shuts down the read side, write side or both, like std. After a
    /// read shutdown, receives return the datagrams already queued and
    /// then 0 (an unnamed sender for [`recv_from`](Self::recv_from))
    /// without waiting, a task waiting in a receive included, and senders
    /// get [`io::ErrorKind::BrokenPipe`]. After a write shutdown, sends
    /// fail with `BrokenPipe`.
    ///
    /// # Errors
    ///
    /// The system's error.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.get_ref().shutdown(how)?;
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            self.read_shut.set(true);
        }
        Ok(())
    }

    socket_methods! {
        pub fn take_error;
    }
}
