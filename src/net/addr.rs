//! [`ToSocketAddrs`]: what the socket calls accept as an address, and how
//! each kind becomes socket addresses: literal addresses at once, host
//! names through the [resolver](super::Resolve) on the blocking pool.
//!
//! ```text
//!   SocketAddr, (IpAddr, u16), "1.2.3.4:80", "[::1]:80"  ──▶ parsed here, no pause
//!   "example.com:80", ("example.com", 80)               ──▶ lookup_name: the task
//!                                                             pauses, a pool thread
//!                                                             asks the resolver
//! ```

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::resolve::lookup_name;

/// Values that name one or more socket addresses: what
/// [`TcpStream::connect`](super::TcpStream::connect),
/// [`TcpListener::bind`](super::TcpListener::bind),
/// [`UdpSocket::send_to`](super::UdpSocket::send_to), [`lookup_host`](super::lookup_host)
/// and the other socket calls take.
///
/// It is implemented for the same types as [`std::net::ToSocketAddrs`], so
/// whatever you pass to std's sockets you can pass here:
///
/// | type | resolved |
/// |---|---|
/// | [`SocketAddr`], [`SocketAddrV4`], [`SocketAddrV6`] | as it is |
/// | `(IpAddr, u16)`, `(Ipv4Addr, u16)`, `(Ipv6Addr, u16)` | as it is |
/// | `&str`, `String`: `"1.2.3.4:80"`, `"[::1]:80"` | parsed, at once |
/// | `&str`, `String`: `"example.com:80"` | looked up (see below) |
/// | `(&str, u16)`, `(String, u16)` | parsed if the host is an IP address, else looked up |
/// | `&[SocketAddr]` | as it is, in order |
/// | `&T` for any of these | as `T` |
///
/// Unlike std's trait, which resolves on the calling thread, a host name is
/// looked up on the [blocking pool](crate::spawn_blocking) while only the
/// calling task pauses, through the process's [resolver](super::set_resolver).
/// Literal addresses never leave the task and never pause. Outside any task
/// a name is looked up on the calling thread.
///
/// The trait is sealed: its method is private, and only this crate
/// implements it. A value known only as some `impl std::net::ToSocketAddrs`
/// can be resolved by std and passed as a slice of the addresses,
/// `&addrs[..]` (std's lookup then blocks the thread, as it always did).
///
/// # Examples
///
/// ```
/// use std::net::{Ipv4Addr, SocketAddr};
/// use yieldloop::net::{TcpListener, TcpStream};
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
///     let addr: SocketAddr = listener.local_addr()?;
///     TcpStream::connect(addr)?; // a SocketAddr
///     TcpStream::connect(&addr)?; // a reference to one
///     TcpStream::connect(addr.to_string())?; // a String, parsed
///     TcpStream::connect(("127.0.0.1", addr.port()))?; // a host and a port
///     Ok(())
/// })
/// .unwrap();
/// ```
pub trait ToSocketAddrs: sealed::ToSocketAddrsPriv {}

pub(crate) mod sealed {
    use std::io;

    use super::Addrs;

    /// The private half of [`ToSocketAddrs`](super::ToSocketAddrs): the one
    /// method, out of reach of other crates so that the trait can grow
    /// without breaking them.
    pub trait ToSocketAddrsPriv {
        /// The addresses this value names; a host name is looked up, which
        /// pauses the calling task.
        fn resolve(&self) -> io::Result<Addrs>;
    }
}

use sealed::ToSocketAddrsPriv;

/// The addresses a [`ToSocketAddrs`] value resolved to, in order.
#[derive(Debug)]
pub struct Addrs(AddrsInner);

/// A literal is one address and needs no allocation; a lookup gives a list.
#[derive(Debug)]
enum AddrsInner {
    One(Option<SocketAddr>),
    Many(std::vec::IntoIter<SocketAddr>),
}

impl Addrs {
    pub(crate) fn one(addr: SocketAddr) -> Addrs {
        Addrs(AddrsInner::One(Some(addr)))
    }

    pub(crate) fn many(addrs: Vec<SocketAddr>) -> Addrs {
        Addrs(AddrsInner::Many(addrs.into_iter()))
    }
}

impl Iterator for Addrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        match &mut self.0 {
            AddrsInner::One(a) => a.take(),
            AddrsInner::Many(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            AddrsInner::One(a) => {
                let n = usize::from(a.is_some());
                (n, Some(n))
            }
            AddrsInner::Many(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for Addrs {}

/// Implements the trait for types that are an address already, each turned
/// into a `SocketAddr` by the given expression of `$v` (the value).
macro_rules! literal_addrs {
    ($($ty:ty => |$v:ident| $make:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}

        impl ToSocketAddrsPriv for $ty {
            fn resolve(&self) -> io::Result<Addrs> {
                let $v = self;
                Ok(Addrs::one($make))
            }
        }
    )*};
}

literal_addrs! {
    SocketAddr => |a| *a;
    SocketAddrV4 => |a| SocketAddr::V4(*a);
    SocketAddrV6 => |a| SocketAddr::V6(*a);
    (IpAddr, u16) => |a| SocketAddr::new(a.0, a.1);
    (Ipv4Addr, u16) => |a| SocketAddr::new(IpAddr::V4(a.0), a.1);
    (Ipv6Addr, u16) => |a| SocketAddr::new(IpAddr::V6(a.0), a.1);
}

impl ToSocketAddrs for str {}

impl ToSocketAddrsPriv for str {
    fn resolve(&self) -> io::Result<Addrs> {
        // "1.2.3.4:80" and "[::1]:80" need no resolver.
        if let Ok(addr) = self.parse::<SocketAddr>() {
            return Ok(Addrs::one(addr));
        }
        // Otherwise "host:port", split at the last colon as std does.
        let (host, port) = self
            .rsplit_once(':')
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "invalid socket address"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "invalid port value"))?;
        host_and_port(host, port)
    }
}

impl ToSocketAddrs for String {}

impl ToSocketAddrsPriv for String {
    fn resolve(&self) -> io::Result<Addrs> {
        self.as_str().resolve()
    }
}

impl ToSocketAddrs for (&str, u16) {}

impl ToSocketAddrsPriv for (&str, u16) {
    fn resolve(&self) -> io::Result<Addrs> {
        host_and_port(self.0, self.1)
    }
}

impl ToSocketAddrs for (String, u16) {}

impl ToSocketAddrsPriv for (String, u16) {
    fn resolve(&self) -> io::Result<Addrs> {
        host_and_port(&self.0, self.1)
    }
}

impl ToSocketAddrs for &[SocketAddr] {}

impl ToSocketAddrsPriv for &[SocketAddr] {
    fn resolve(&self) -> io::Result<Addrs> {
        Ok(Addrs::many(self.to_vec()))
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrsPriv for &T {
    fn resolve(&self) -> io::Result<Addrs> {
        (**self).resolve()
    }
}

/// A host (an IP address, or a name to look up) and a port.
fn host_and_port(host: &str, port: u16) -> io::Result<Addrs> {
    // An address written as the host ("::1" in "::1:80", or the host of a
    // tuple) is what the system resolver would return as it is: skip it.
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Addrs::one(SocketAddr::new(ip, port)));
    }
    lookup_name(host.to_owned(), port).map(Addrs::many)
}

/// Tries `f` on each address `addr` resolves to; returns the first success
/// or the last error.
pub(crate) fn each_addr<T>(
    addr: impl ToSocketAddrs,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for a in addr.resolve()? {
        match f(a) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(no_addresses))
}

/// The first address `addr` resolves to, as a `send_to` uses it.
pub(crate) fn first_addr(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
    addr.resolve()?.next().ok_or_else(no_addresses)
}

/// The error of a name that resolved to no address at all.
fn no_addresses() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "could not resolve to any addresses",
    )
}

/// Resolves `host` to its socket addresses, pausing only the calling task,
/// like [`std::net::ToSocketAddrs::to_socket_addrs`] and
/// `tokio::net::lookup_host`.
///
/// `host` is anything [`ToSocketAddrs`] takes: `"example.com:443"`,
/// `("example.com", 443)`, or a literal address, which comes back at once
/// without a pause. A name is looked up by the process's
/// [resolver](super::set_resolver) on the [blocking pool](crate::spawn_blocking)
/// while the other tasks run on. A [`timeout`](crate::timeout()) or a
/// cancellation ends the wait on time; the lookup itself finishes on its
/// pool thread and its answer is dropped.
///
/// Outside any task there is no loop to keep running: the name is looked
/// up on the calling thread, which blocks meanwhile.
///
/// # Errors
///
/// The resolver's error (with the system resolver, e.g. "failed to lookup
/// address information: Name or service not known");
/// [`io::ErrorKind::InvalidInput`] for a string that is no `host:port`;
/// an [`io::Error`] naming the host when the resolver panicked, when no
/// pool thread could be started, or when the task is being torn down.
///
/// # Examples
///
/// ```
/// use std::net::SocketAddr;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     for addr in yieldloop::net::lookup_host("localhost:8080")? {
///         assert!(addr.ip().is_loopback());
///     }
///     // A literal address needs no lookup.
///     let literal: Vec<_> = yieldloop::net::lookup_host("[::1]:53")?.collect();
///     assert_eq!(literal, ["[::1]:53".parse::<SocketAddr>().unwrap()]);
///     Ok(())
/// })
/// .unwrap();
/// ```
pub fn lookup_host(host: impl ToSocketAddrs) -> io::Result<impl Iterator<Item = SocketAddr>> {
    host.resolve()
}
