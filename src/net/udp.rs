//! `UdpSocket`: datagrams with blocking-style calls.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use super::addr::{each_addr, first_addr, ToSocketAddrs};
use crate::io::PausingIo;

/// A UDP socket whose sends and receives pause only the calling task.
///
/// The calls mirror [`std::net::UdpSocket`]: a receive waits for a datagram
/// (up to the [read timeout](Self::set_read_timeout), if one is set), a send
/// waits while the socket's send buffer is full. It takes `&self`, so one
/// task may receive while another sends on the same socket (share it with
/// an `Rc`).
///
/// # Examples
///
/// ```
/// use yieldloop::net::UdpSocket;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let server = UdpSocket::bind("127.0.0.1:0")?;
///     let addr = server.local_addr()?;
///     let echo = yieldloop::spawn(move || -> std::io::Result<()> {
///         let mut buf = [0u8; 1500];
///         let (n, from) = server.recv_from(&mut buf)?;
///         server.send_to(&buf[..n], from)?;
///         Ok(())
///     });
///     let client = UdpSocket::bind("127.0.0.1:0")?;
///     client.connect(addr)?;
///     client.send(b"ping")?;
///     let mut buf = [0u8; 16];
///     let n = client.recv(&mut buf)?;
///     assert_eq!(&buf[..n], b"ping");
///     echo.join().unwrap()
/// })
/// .unwrap();
/// ```
pub struct UdpSocket {
    inner: PausingIo<mio::net::UdpSocket>,
}

socket_traits!(UdpSocket { "local": local_addr, "peer": peer_addr });

impl UdpSocket {
    /// Binds a socket to `addr`, trying each address it resolves to in
    /// turn. Port 0 picks a free port; see [`local_addr`](Self::local_addr).
    ///
    /// # Errors
    ///
    /// The system's error, e.g. [`io::ErrorKind::AddrInUse`], or
    /// [`io::ErrorKind::Unsupported`] outside a task.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        each_addr(addr, |a| {
            Ok(UdpSocket {
                inner: PausingIo::from_nonblocking(mio::net::UdpSocket::bind(a)?)?,
            })
        })
    }

    /// Wraps a bound std socket, switching it to non-blocking mode.
    ///
    /// # Errors
    ///
    /// If it cannot be made non-blocking or registered.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            inner: PausingIo::from_nonblocking(mio::net::UdpSocket::from_std(socket))?,
        })
    }

    socket_methods! {
        /// The id the socket is registered under, for hand-written readiness
        /// waits.
        pub fn io_id;
    }

    /// Sends `buf` as one datagram to `target` (the first address it
    /// resolves to, as in std) and returns the bytes sent. A host name is
    /// looked up on the blocking pool while only this task pauses; a
    /// program sending many datagrams to one host looks it up once, with
    /// [`lookup_host`](super::lookup_host), and sends to the address.
    ///
    /// # Errors
    ///
    /// The name lookup's error; [`io::ErrorKind::InvalidInput`] when the
    /// name resolves to no address; the system's error, e.g. `EMSGSIZE` for
    /// a datagram too large;
    /// [`io::ErrorKind::TimedOut`] after the write timeout.
    pub fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let target = first_addr(target)?;
        self.inner.write_with(|s| s.send_to(buf, target))
    }

    /// Receives one datagram into `buf` and returns its length and sender.
    /// A datagram longer than `buf` is cut to fit; the rest is lost.
    ///
    /// # Errors
    ///
    /// The system's error; [`io::ErrorKind::TimedOut`] when no datagram
    /// came within the [read timeout](Self::set_read_timeout).
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.read_with(|s| s.recv_from(buf))
    }

    /// Like [`recv_from`](Self::recv_from), leaving the datagram queued.
    ///
    /// # Errors
    ///
    /// As for `recv_from`.
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.read_with(|s| s.peek_from(buf))
    }

    /// Sets the default peer: [`send`](Self::send) goes there and
    /// [`recv`](Self::recv) accepts datagrams from there only. Tries each
    /// address `addr` resolves to until one works. Nothing is sent: UDP has
    /// no handshake, so it pauses only to look up a host name.
    ///
    /// # Errors
    ///
    /// The system's error for the last address tried.
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        each_addr(addr, |a| self.inner.get_ref().connect(a))
    }

    /// Sends `buf` as one datagram to the [connected](Self::connect) peer.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::NotConnected`] without a peer; the system's error
    /// (a `ConnectionRefused` may report an ICMP error from an earlier
    /// datagram); [`io::ErrorKind::TimedOut`] after the write timeout.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_with(|s| s.send(buf))
    }

    /// Receives one datagram from the [connected](Self::connect) peer.
    ///
    /// # Errors
    ///
    /// As for [`recv_from`](Self::recv_from); on Linux also
    /// [`io::ErrorKind::ConnectionRefused`] when an earlier datagram found
    /// no one listening at the peer.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_with(|s| s.recv(buf))
    }

    /// Like [`recv`](Self::recv), leaving the datagram queued.
    ///
    /// # Errors
    ///
    /// As for `recv`.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_with(|s| s.peek(buf))
    }

    socket_methods! {
        /// The local address, with the port the system picked for port 0.
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
            /// use yieldloop::net::UdpSocket;
            ///
            /// yieldloop::run(|| {
            ///     let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            ///     socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            ///     let err = socket.recv_from(&mut [0u8; 8]).unwrap_err();
            ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
            /// });
            /// ```
        };

        /// Makes sends fail with [`io::ErrorKind::TimedOut`] when the send
        /// buffer stays full for `timeout` (`None`: wait forever), like std.
        pub fn set_write_timeout;

        /// Sets `SO_BROADCAST`: whether datagrams may go to a broadcast
        /// address.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_broadcast(&self, on: bool) -> io::Result<()>;

        /// Reads `SO_BROADCAST`.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn broadcast(&self) -> io::Result<bool>;

        /// Sets the IP time-to-live of outgoing datagrams.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_ttl(&self, ttl: u32) -> io::Result<()>;

        /// Reads the IP time-to-live of outgoing datagrams.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn ttl(&self) -> io::Result<u32>;

        /// Joins an IPv4 multicast group on the interface with address
        /// `interface` (`0.0.0.0`: the system's choice).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn join_multicast_v4(&self, group: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()>;

        /// Leaves an IPv4 multicast group.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn leave_multicast_v4(&self, group: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()>;

        /// Joins an IPv6 multicast group on the interface with index
        /// `interface` (0: the system's choice).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn join_multicast_v6(&self, group: &Ipv6Addr, interface: u32) -> io::Result<()>;

        /// Leaves an IPv6 multicast group.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn leave_multicast_v6(&self, group: &Ipv6Addr, interface: u32) -> io::Result<()>;

        /// Sets whether multicast datagrams sent here loop back to local
        /// receivers (IPv4).
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()>;

        /// Sets the time-to-live of outgoing IPv4 multicast datagrams.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()>;

        pub fn take_error;
    }
}
