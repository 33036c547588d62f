//! Host-name lookups that pause only the calling task: the process's
//! [`Resolve`] implementation runs on the blocking pool. What takes a name
//! or an address, [`ToSocketAddrs`](super::ToSocketAddrs) and
//! [`lookup_host`](super::lookup_host), is in `addr`, which uses this
//! file, not the other way round.
//!
//! The resolver is process-wide, like the blocking pool it runs on: one
//! `RwLock` holds it, every lookup takes a clone of the `Arc` (a read lock
//! held for a moment) and carries it to the pool thread, so replacing it
//! never waits for lookups under way; they finish with the old one.

use std::io;
use std::net::SocketAddr;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, PoisonError, RwLock};

use crate::protocol::join_failure::payload_text;

/// Turns a host name and a port into socket addresses: the system's
/// resolver ([`SystemResolver`], the default) or one of your own, installed
/// for the whole process with [`set_resolver`].
///
/// Every name lookup of [`net`](super) goes through it: `connect`,
/// `bind`, `send_to` and the other calls given a name, and
/// [`lookup_host`](super::lookup_host). It is called with names only;
/// literal addresses (`"127.0.0.1:80"`, `"[::1]:80"`, `("10.0.0.1", 80)`)
/// are parsed without asking it.
///
/// Inside a task it runs on a [blocking-pool](crate::spawn_blocking)
/// thread, so it may block for as long as it needs (a DNS query, a file,
/// a service-discovery request) while only the asking task waits; outside
/// any task it runs on the calling thread. Its port argument is the port
/// asked for; a resolver may answer with other ports (say, the ports a
/// service-discovery record names).
///
/// Any `Fn(&str, u16) -> io::Result<Vec<SocketAddr>>` closure that is
/// `Send + Sync + 'static` is a resolver.
///
/// # Errors
///
/// Whatever the resolver returns comes back to the caller as it is. A
/// resolver that panics fails the lookup with an [`io::Error`] carrying the
/// panic's message; the pool thread and the task live on.
///
/// # Examples
///
/// Service discovery: names under `.svc` come from a table, everything else
/// from the system.
///
/// ```
/// use std::io;
/// use std::net::SocketAddr;
/// use yieldloop::net::{self, Resolve, SystemResolver};
///
/// struct Services;
///
/// impl Resolve for Services {
///     fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
///         match host {
///             "db.svc" => Ok(vec![SocketAddr::from(([127, 0, 0, 1], 5432))]),
///             h if h.ends_with(".svc") => Err(io::Error::new(
///                 io::ErrorKind::NotFound,
///                 format!("no service {h}"),
///             )),
///             _ => SystemResolver.resolve(host, port),
///         }
///     }
/// }
///
/// let previous = net::set_resolver(Services);
/// yieldloop::run(|| {
///     let db: Vec<_> = net::lookup_host("db.svc:0").unwrap().collect();
///     assert_eq!(db, [SocketAddr::from(([127, 0, 0, 1], 5432))]);
///     let err = net::lookup_host("cache.svc:80").err().unwrap();
///     assert_eq!(err.kind(), io::ErrorKind::NotFound);
/// });
/// net::set_resolver(previous);
/// ```
pub trait Resolve: Send + Sync + 'static {
    /// The socket addresses of `host`, for `port`, in the order they should
    /// be tried. May block.
    ///
    /// # Errors
    ///
    /// When the name cannot be resolved; the error is passed on to the
    /// caller of `connect`, `lookup_host`, … unchanged.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

impl<F> Resolve for F
where
    F: Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
{
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self(host, port)
    }
}

/// A shared resolver, such as the one [`set_resolver`] hands back, can be
/// installed again.
impl<R: Resolve + ?Sized> Resolve for Arc<R> {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        (**self).resolve(host, port)
    }
}

/// The system's resolver: `getaddrinfo`, through
/// [`std::net::ToSocketAddrs`]. It reads `/etc/hosts`, asks DNS as the
/// system is configured to, and blocks meanwhile (which is why it runs on
/// the blocking pool). The default; custom resolvers can fall back on it.
///
/// # Examples
///
/// ```
/// use yieldloop::net::{Resolve, SystemResolver};
///
/// let addrs = SystemResolver.resolve("localhost", 80).unwrap();
/// assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 80));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        std::net::ToSocketAddrs::to_socket_addrs(&(host, port)).map(Iterator::collect)
    }
}

/// The resolver installed with [`set_resolver`]; `None`: the system's.
static RESOLVER: RwLock<Option<Arc<dyn Resolve>>> = RwLock::new(None);

/// Installs `resolver` for every name lookup in the process from now on,
/// and returns the one it replaces (a [`SystemResolver`] if none was set).
///
/// The setting is per process, not per thread or per scheduler: every
/// thread, every [`Runtime`](crate::Runtime) worker and every plain thread
/// outside tasks shares it. Lookups already under way finish with the
/// resolver they started with. Pass [`SystemResolver`] (or the value
/// returned here) to go back.
///
/// # Examples
///
/// A resolver for tests: every name is the loopback address.
///
/// ```
/// use std::net::SocketAddr;
/// use yieldloop::net;
///
/// let previous = net::set_resolver(|_host: &str, port: u16| {
///     Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
/// });
/// let addrs: Vec<_> = yieldloop::run(|| net::lookup_host("anything.example:7").unwrap().collect());
/// assert_eq!(addrs, [SocketAddr::from(([127, 0, 0, 1], 7))]);
/// net::set_resolver(previous);
/// ```
pub fn set_resolver(resolver: impl Resolve) -> Arc<dyn Resolve> {
    let new: Arc<dyn Resolve> = Arc::new(resolver);
    // Only a clone or a swap happens under the lock, neither of which
    // panics, so a poisoned lock still holds a valid value.
    let old = RESOLVER
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .replace(new);
    old.unwrap_or_else(|| Arc::new(SystemResolver))
}

/// The resolver lookups use now.
fn current() -> Option<Arc<dyn Resolve>> {
    RESOLVER
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Looks the name `host` up with the process's resolver: on the blocking
/// pool while the calling task pauses, or on this thread outside any task.
pub(super) fn lookup_name(host: String, port: u16) -> io::Result<Vec<SocketAddr>> {
    let resolver = current();
    if crate::task::spawn::current_id().is_none() {
        // No task to pause and no loop to keep running: a hop to the pool
        // would only block this thread on the join instead.
        return ask(resolver.as_deref(), &host, port);
    }
    let asked = host.clone();
    let job =
        crate::interop::blocking::spawn_blocking(move || ask(resolver.as_deref(), &host, port));
    // The join parks the task; a timeout or a cancellation unwinds it from
    // there, dropping the handle, and the answer, when it comes, is dropped
    // with the pool's end of the handle.
    job.join().unwrap_or_else(|e| {
        // Not a panic (`ask` catches those): no thread could run the job,
        // or this task is being torn down.
        Err(io::Error::other(format!("looking up {asked}:{port}: {e}")))
    })
}

/// Asks `resolver`, or the system's when none is installed, turning a
/// panic into an error so that it fails only this lookup.
fn ask(resolver: Option<&dyn Resolve>, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let call = || match resolver {
        Some(r) => r.resolve(host, port),
        None => SystemResolver.resolve(host, port),
    };
    panic::catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|payload| {
        Err(io::Error::other(format!(
            "looking up {host}:{port}: the resolver panicked: {}",
            payload_text(&*payload).unwrap_or("(a payload that is not a string)")
        )))
    })
}
