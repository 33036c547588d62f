//! Unix domain stream sockets: `UnixListener` and `UnixStream`.
//!
//! They work like their TCP counterparts. Accepting is the plain "try, and
//! on `WouldBlock` wait for read readiness" loop: [`Op::Accept`] is for TCP
//! only, since the scheduler's accept produces TCP sockets.
//!
//! [`Op::Accept`]: crate::raw::Op::Accept

use std::io;
use std::net::Shutdown;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::tcp_stream::connect_state;
use crate::io::{outside_run, PausingIo};

/// A listening Unix domain socket whose `accept` pauses only the calling
/// task.
///
/// Binding creates the socket file; like std, dropping the listener does
/// not remove it: remove it yourself (a `bind` to an existing file fails
/// with [`io::ErrorKind::AddrInUse`]).
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use yieldloop::net::{UnixListener, UnixStream};
///
/// let dir = std::env::temp_dir().join(format!("yieldloop-doc-unix-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("echo.sock");
/// let p = path.clone();
/// yieldloop::run(move || -> std::io::Result<()> {
///     let listener = UnixListener::bind(&p)?;
///     let server = yieldloop::spawn(move || -> std::io::Result<()> {
///         let (stream, _) = listener.accept()?;
///         let (mut r, mut w) = (&stream, &stream);
///         std::io::copy(&mut r, &mut w)?;
///         Ok(())
///     });
///     let mut client = UnixStream::connect(&p)?;
///     client.write_all(b"hi")?;
///     client.shutdown(std::net::Shutdown::Write)?;
///     let mut back = String::new();
///     client.read_to_string(&mut back)?;
///     assert_eq!(back, "hi");
///     server.join().unwrap()
/// })
/// .unwrap();
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct UnixListener {
    inner: PausingIo<mio::net::UnixListener>,
}

socket_traits!(UnixListener { "local": local_addr });

impl UnixListener {
    /// Creates the socket file at `path` and listens on it.
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::AddrInUse`] when the file
    /// exists, or [`io::ErrorKind::Unsupported`] outside a task.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        Ok(UnixListener {
            inner: PausingIo::from_nonblocking(mio::net::UnixListener::bind(path)?)?,
        })
    }

    /// Wraps a listening std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered.
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener {
            inner: PausingIo::from_nonblocking(mio::net::UnixListener::from_std(listener))?,
        })
    }

    /// Waits for a connection and returns it with the peer's address
    /// (usually unnamed).
    ///
    /// # Errors
    ///
    /// The system's error; for example `EMFILE` ("too many open files"),
    /// after which the listener still works once descriptors free up.
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, addr) = self.inner.read_with(|l| l.accept())?;
        Ok((
            UnixStream {
                inner: PausingIo::from_nonblocking(stream)?,
            },
            addr,
        ))
    }

    /// An endless iterator of accepted connections, for `for` loops.
    pub fn incoming(&self) -> UnixIncoming<'_> {
        UnixIncoming { listener: self }
    }

    socket_methods! {
        /// The address the listener is bound to.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;

        /// The id the socket is registered under.
        pub fn io_id;

        pub fn take_error;
    }
}

/// The iterator of [`UnixListener::incoming`]: never ends; each item is one
/// [`accept`](UnixListener::accept).
#[derive(Debug)]
pub struct UnixIncoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for UnixIncoming<'_> {
    type Item = io::Result<UnixStream>;

    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}

/// A Unix domain stream connection whose reads and writes pause only the
/// calling task.
///
/// Like [`TcpStream`](super::TcpStream), it implements [`Read`](io::Read) and
/// [`Write`](io::Write) also for `&UnixStream`, so one task can read while another
/// writes.
///
/// # Examples
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
/// use yieldloop::net::UnixStream;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let (a, b) = UnixStream::pair()?;
///     let reader = yieldloop::spawn(move || {
///         let mut line = String::new();
///         BufReader::new(&b).read_line(&mut line).map(|_| line)
///     });
///     (&a).write_all(b"over the pair\n")?;
///     assert_eq!(reader.join().unwrap()?, "over the pair\n");
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct UnixStream {
    inner: PausingIo<mio::net::UnixStream>,
}

socket_traits!(UnixStream { "local": local_addr, "peer": peer_addr });

/// The longest pause between two connection attempts while the listener's
/// backlog is full.
const MAX_CONNECT_BACKOFF: Duration = Duration::from_millis(50);

impl UnixStream {
    /// Connects to the socket at `path`.
    ///
    /// When the listener's backlog is full the kernel refuses a
    /// non-blocking connect with `EAGAIN` rather than queueing it, so this
    /// retries, pausing the task 1 ms at first and up to 50 ms between
    /// attempts, until the listener makes room (a blocking connect would
    /// wait just as long).
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::NotFound`] when no file is
    /// there or [`io::ErrorKind::ConnectionRefused`] when nothing listens
    /// on it; [`io::ErrorKind::Unsupported`] outside a task.
    pub fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let path = path.as_ref();
        let mut backoff = Duration::from_millis(1);
        let stream = loop {
            match crate::scheduler::coroutine::own_io(|| mio::net::UnixStream::connect(path)) {
                Ok(s) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // `sleep` is a pause, so this fails outside a task;
                    // check first for a clear error instead of a panic.
                    if crate::task::spawn::current_id().is_none() {
                        return Err(outside_run());
                    }
                    crate::time::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_CONNECT_BACKOFF);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let stream = UnixStream {
            inner: PausingIo::from_nonblocking(stream)?,
        };
        // Should the connect still be in progress, it is done once the
        // socket is writable; the socket error tells how it went.
        stream
            .inner
            .write_with(|s| connect_state(s.take_error(), || s.peer_addr()))?;
        Ok(stream)
    }

    /// A connected pair of sockets, like a bidirectional pipe.
    ///
    /// # Errors
    ///
    /// The system's error, or [`io::ErrorKind::Unsupported`] outside a
    /// task.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            UnixStream {
                inner: PausingIo::from_nonblocking(a)?,
            },
            UnixStream {
                inner: PausingIo::from_nonblocking(b)?,
            },
        ))
    }

    /// Wraps a connected std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        Ok(UnixStream {
            inner: PausingIo::from_nonblocking(mio::net::UnixStream::from_std(stream))?,
        })
    }

    socket_methods! {
        /// The id the socket is registered under, for hand-written readiness
        /// waits.
        pub fn io_id;

        /// The local address (unnamed unless the socket was bound).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;

        /// The peer's address: the listener's path for a connected client.
        ///
        /// # Errors
        ///
        /// [`io::ErrorKind::NotConnected`] once the connection is gone.
        pub fn peer_addr(&self) -> io::Result<SocketAddr>;

        /// Shuts down the read side, write side or both. After a write
        /// shutdown the peer reads end-of-file.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn shutdown(&self, how: Shutdown) -> io::Result<()>;

        /// Makes reads fail with [`io::ErrorKind::TimedOut`] when no data comes
        /// within `timeout` (`None`: wait forever), like std.
        pub fn set_read_timeout;

        /// Makes writes fail with [`io::ErrorKind::TimedOut`] when the socket
        /// stays full for `timeout` (`None`: wait forever), like std.
        pub fn set_write_timeout;

        pub fn take_error;
    }
}

blocking_style_io!(UnixStream);
async_stream_io!(UnixStream);
