//! Listening sockets bound with `SO_REUSEPORT`, so that each worker of a
//! [`Runtime`](crate::Runtime) can accept on a listener of its own.
//!
//! With `SO_REUSEPORT` several sockets bind the same address and the kernel
//! spreads incoming connections over them by a hash of the connection's
//! addresses. Each worker then accepts only on its own socket: no listener
//! is shared between threads, and no connection ever moves.
//!
//! # Platforms
//!
//! That spreading is Linux's `SO_REUSEPORT`. FreeBSD's `SO_REUSEPORT` only
//! lets the sockets share the address; its `SO_REUSEPORT_LB` spreads
//! connections by a hash as Linux does, and is what these listeners use
//! there. macOS has only the sharing kind: the listeners all bind, but the
//! kernel hands every new connection to one of them, so on macOS one
//! worker accepts them all (hand the connections on yourself, or use one
//! listener, if that matters).
//!
//! The options must be set between `socket` and `bind`, which `std` cannot
//! do. `socket2` does it without any `unsafe` here (it is the thin socket
//! layer much of the Rust networking stack uses); doing it with `libc`
//! directly would mean building `sockaddr_in`/`sockaddr_in6` by hand behind
//! pointer casts.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

use super::addr::{each_addr, ToSocketAddrs};
use super::tcp_listener::TcpListener;

/// The listen backlog of reuse-port listeners: large enough for bursts of
/// connections; the kernel caps it at `net.core.somaxconn`.
const BACKLOG: i32 = 1024;

/// Binds a listening std socket to `addr` with `SO_REUSEADDR` and
/// `SO_REUSEPORT` (`SO_REUSEPORT_LB` on FreeBSD), in non-blocking mode.
/// On macOS the sockets share the address but not its connections: see
/// [`reuseport_listeners`].
///
/// Works on any thread, inside a scheduler or not, so the sockets can be
/// made up front and handed (they are `Send`) to the workers, which wrap
/// them with [`TcpListener::from_std`].
///
/// # Errors
///
/// The system's error; e.g. [`io::ErrorKind::AddrInUse`] when a socket
/// without `SO_REUSEPORT` (or another user's) holds the address.
pub fn bind_reuseport_std(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    // The load-balancing kind where the plain one would not spread the
    // connections (FreeBSD).
    crate::sys::set_reuse_port(&socket)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Makes `n` listening sockets sharing one address through `SO_REUSEPORT`,
/// one per worker.
///
/// The first binds `addr` (the first address it resolves to that works);
/// the others bind the address the first got, so port 0 works: all `n`
/// share the port the system picked.
///
/// # Errors
///
/// The system's error for the first socket that fails; the ones made
/// before it are closed.
///
/// # Platforms
///
/// On Linux (`SO_REUSEPORT`) and FreeBSD (`SO_REUSEPORT_LB`) the kernel
/// spreads new connections over the listeners by a hash of their
/// addresses. macOS's `SO_REUSEPORT` only lets them share the address:
/// every new connection goes to one of them, so one worker accepts them
/// all there.
///
/// # Examples
///
/// ```
/// use yieldloop::net::{reuseport_listeners, TcpListener, TcpStream};
///
/// let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
/// let listeners = reuseport_listeners("127.0.0.1:0", rt.workers()).unwrap();
/// let addr = listeners[0].local_addr().unwrap();
/// for (w, l) in listeners.into_iter().enumerate() {
///     rt.spawn_on(w, move || -> std::io::Result<()> {
///         let listener = TcpListener::from_std(l)?;
///         loop {
///             let (stream, _) = listener.accept()?;
///             yieldloop::spawn(move || {
///                 let (mut r, mut w) = (&stream, &stream);
///                 let _ = std::io::copy(&mut r, &mut w);
///             });
///         }
///     });
/// }
/// // A client on a thread of its own, with its own scheduler.
/// let echoed = yieldloop::run(move || -> std::io::Result<String> {
///     use std::io::{Read, Write};
///     let mut s = TcpStream::connect(addr)?;
///     s.write_all(b"ping")?;
///     let mut buf = [0u8; 4];
///     s.read_exact(&mut buf)?;
///     Ok(String::from_utf8_lossy(&buf).into_owned())
/// });
/// assert_eq!(echoed.unwrap(), "ping");
/// rt.shutdown();
/// ```
pub fn reuseport_listeners(
    addr: impl ToSocketAddrs,
    n: usize,
) -> io::Result<Vec<std::net::TcpListener>> {
    let first = each_addr(addr, bind_reuseport_std)?;
    let bound = first.local_addr()?;
    let mut all = Vec::with_capacity(n.max(1));
    all.push(first);
    for _ in 1..n {
        all.push(bind_reuseport_std(bound)?);
    }
    Ok(all)
}

impl TcpListener {
    /// Like [`bind`](Self::bind), with `SO_REUSEPORT` set as well, so other
    /// sockets (one per worker thread, say) may bind the same address and
    /// share its connections. See [`reuseport_listeners`] to make a set
    /// sharing a port picked by the system.
    ///
    /// # Errors
    ///
    /// As for [`bind_reuseport_std`], plus
    /// [`io::ErrorKind::Unsupported`] outside a task.
    pub fn bind_reuseport(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, |a| TcpListener::from_std(bind_reuseport_std(a)?))
    }
}
