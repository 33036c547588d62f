//! `TcpStream`: a connected TCP socket with blocking-style calls.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;

use super::addr::{each_addr, ToSocketAddrs};
use crate::io::{outside_run, PausingIo};

/// A TCP connection whose reads and writes pause only the calling task.
///
/// It implements [`Read`](io::Read) and [`Write`](io::Write), also for `&TcpStream`, so one task
/// can read while another writes through a shared reference, and it works
/// with `BufReader`, `read_line`, `io::copy` and the rest of `std::io`.
///
/// # Examples
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
/// use yieldloop::net::{TcpListener, TcpStream};
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let listener = TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let server = yieldloop::spawn(move || -> std::io::Result<String> {
///         let (stream, _) = listener.accept()?;
///         let mut line = String::new();
///         BufReader::new(&stream).read_line(&mut line)?;
///         Ok(line)
///     });
///     let mut client = TcpStream::connect(addr)?;
///     client.write_all(b"hello\n")?;
///     assert_eq!(server.join().unwrap()?, "hello\n");
///     Ok(())
/// })
/// .unwrap();
/// ```
///
/// A stream belongs to the scheduler of the thread that made it: it is
/// neither `Send` nor `Sync`, and moving it to another thread, a
/// [blocking-pool](crate::spawn_blocking) job included, fails to compile
/// with "`Rc<PinnedToSchedulerThread>` cannot be sent between threads
/// safely" (sharing a `&TcpStream` with one: "cannot be shared"):
///
/// ```compile_fail,E0277
/// fn close_elsewhere(stream: yieldloop::net::TcpStream) {
///     yieldloop::spawn_blocking(move || drop(stream));
/// }
/// ```
///
/// ```compile_fail,E0277
/// fn close_on_a_thread(stream: yieldloop::net::TcpStream) {
///     std::thread::spawn(move || drop(stream));
/// }
/// ```
pub struct TcpStream {
    inner: PausingIo<mio::net::TcpStream>,
}

socket_traits!(TcpStream { "local": local_addr, "peer": peer_addr });

impl TcpStream {
    /// Opens a connection to `addr`, trying each address it resolves to in
    /// turn, like [`std::net::TcpStream::connect`].
    ///
    /// Only this task pauses, for the connect and for the lookup of a host
    /// name (`"example.com:80"`), which runs on the blocking pool; see
    /// [name resolution](super#name-resolution). A
    /// [`timeout`](crate::timeout()) around the call covers both.
    ///
    /// # Errors
    ///
    /// The name lookup's error; else the last address's error, e.g.
    /// [`io::ErrorKind::ConnectionRefused`]. For a time limit, wrap the call
    /// in [`timeout`](crate::timeout()), or use
    /// [`connect_timeout`](Self::connect_timeout) with a socket address.
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::net::{TcpListener, TcpStream};
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let listener = TcpListener::bind("127.0.0.1:0")?;
    ///     let port = listener.local_addr()?.port();
    ///     let stream = TcpStream::connect(format!("localhost:{port}"))?;
    ///     assert_eq!(stream.peer_addr()?.port(), port);
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Panics
    ///
    /// Never; outside a task it fails with [`io::ErrorKind::Unsupported`].
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        each_addr(addr, |a| TcpStream::connect_one(a, None))
    }

    /// Like [`connect`](Self::connect) to one address, giving up with
    /// [`io::ErrorKind::TimedOut`] after `timeout`. It takes a socket
    /// address, as std's does, so there is nothing to look up; to bound a
    /// connect by host name, lookup included, wrap
    /// [`connect`](Self::connect) in [`timeout`](crate::timeout()).
    ///
    /// # Errors
    ///
    /// As for `connect`, plus the timeout.
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        TcpStream::connect_one(*addr, Some(timeout))
    }

    fn connect_one(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        // Refuse before any packet leaves: the peer must not see a
        // connection we are about to drop.
        if timeout == Some(Duration::ZERO) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        if !crate::scheduler::has_scheduler() {
            return Err(outside_run());
        }
        let stream = TcpStream {
            // A non-blocking socket of our own: the hook (feature `hook`)
            // need not look at it.
            inner: PausingIo::from_nonblocking(crate::scheduler::coroutine::own_io(|| {
                mio::net::TcpStream::connect(addr)
            })?)?
            .short_read_drains(),
        };
        stream.inner.set_write_timeout(timeout)?;
        // A non-blocking connect completes when the socket becomes writable;
        // then the socket error (or a peer address) tells how it went.
        stream
            .inner
            .write_with(|s| connect_state(s.take_error(), || s.peer_addr()))?;
        stream.inner.set_write_timeout(None)?;
        Ok(stream)
    }

    /// Wraps a connected std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered (for example outside
    /// a task).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(TcpStream {
            inner: PausingIo::from_nonblocking(mio::net::TcpStream::from_std(stream))?
                .short_read_drains(),
        })
    }

    socket_methods! {
        /// The id the socket is registered under, for hand-written
        /// [`Op::ReadReady`](crate::raw::Op::ReadReady)/[`Op::WriteReady`](crate::raw::Op::WriteReady) waits.
        pub fn io_id;

        /// The remote address.
        ///
        /// # Errors
        ///
        /// [`io::ErrorKind::NotConnected`] once the connection is gone.
        pub fn peer_addr(&self) -> io::Result<SocketAddr>;

        /// The local address.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn local_addr(&self) -> io::Result<SocketAddr>;

        /// Shuts down the read side, write side or both. Shutting down the
        /// write side sends FIN: the peer reads end-of-file (a half-close).
        ///
        /// # Errors
        ///
        /// The system's error, e.g. when the socket is not connected.
        pub fn shutdown(&self, how: Shutdown) -> io::Result<()>;

        /// Sets `TCP_NODELAY` (disables Nagle's algorithm when `true`).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()>;

        /// Reads `TCP_NODELAY`.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn nodelay(&self) -> io::Result<bool>;

        /// Makes reads fail with [`io::ErrorKind::TimedOut`] when no data comes
        /// within `timeout` (`None`: wait forever), like std.
        pub fn set_read_timeout;

        /// Makes writes fail with [`io::ErrorKind::TimedOut`] when the socket
        /// stays full for `timeout` (`None`: wait forever), like std.
        pub fn set_write_timeout;

        pub fn take_error;
    }

    /// Reads into `buf` without removing the data from the socket's queue.
    ///
    /// # Errors
    ///
    /// As for `read`.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_with(|s| s.peek(buf))
    }

    /// Pauses the calling task until more data (or the end of the stream,
    /// or an error) may have arrived, without reading anything, or until
    /// the [read timeout](Self::set_read_timeout) passes: for a protocol
    /// that [`peek`](Self::peek)s until a whole message is queued before it
    /// reads it (as tokio's `TcpStream::readable`).
    ///
    /// Readiness is an edge: call it after a read or peek that found
    /// nothing or not enough, and it waits for what arrives after that
    /// call; called before any, it may wait for data that is already
    /// there.
    ///
    /// # Errors
    ///
    /// `TimedOut` past the read timeout; `Unsupported` outside a task of
    /// the scheduler the stream belongs to; `Interrupted` while the task
    /// is cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// use yieldloop::net::{TcpListener, TcpStream};
    ///
    /// yieldloop::run(|| {
    ///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let client = yieldloop::spawn(move || {
    ///         let mut s = TcpStream::connect(addr).unwrap();
    ///         s.write_all(b"he").unwrap();
    ///         yieldloop::sleep(std::time::Duration::from_millis(20));
    ///         s.write_all(b"llo").unwrap();
    ///     });
    ///     let (server, _) = listener.accept().unwrap();
    ///     // Wait until all five bytes are queued, reading none of them.
    ///     let mut buf = [0u8; 5];
    ///     while server.peek(&mut buf).unwrap() < 5 {
    ///         server.readable().unwrap();
    ///     }
    ///     assert_eq!(&buf, b"hello");
    ///     client.join().unwrap();
    /// });
    /// ```
    pub fn readable(&self) -> io::Result<()> {
        self.inner.readable()
    }
}

blocking_style_io!(TcpStream);
async_stream_io!(TcpStream);

/// How a non-blocking connect stands once its socket is writable, from the
/// socket's pending error and, asked only without one, its peer address:
/// done (`Ok`), failed (the error), or still under way (`WouldBlock`, to
/// wait for writability again).
pub(crate) fn connect_state<A>(
    error: io::Result<Option<io::Error>>,
    peer: impl FnOnce() -> io::Result<A>,
) -> io::Result<()> {
    if let Some(e) = error? {
        return Err(e);
    }
    match peer() {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e),
    }
}
