//! TLS for yieldloop tasks: rustls sessions over yieldloop's
//! [`TcpStream`](yieldloop::net::TcpStream), read and written with plain
//! `std::io` calls that pause only the calling task.
//!
//! A server turns each accepted connection into a session with a
//! [`TlsAcceptor`] (its certificate, its ALPN protocols, a deadline on the
//! handshake so that a silent client cannot hold a task for ever); a
//! client starts one with a [`TlsConnector`] (its trusted roots, the
//! server's name sent as SNI, ALPN). Both hand back a [`TlsStream`], which
//! implements [`Read`](std::io::Read) and [`Write`](std::io::Write): a
//! line protocol, tungstenite's WebSocket or a copy loop runs over it as
//! over a plain socket.
//!
//! With feature `tokio`, `TlsAcceptor::accept_async` and
//! `TlsConnector::connect_async` run the handshake as a future and hand
//! back tokio-rustls's streams over yieldloop's socket, which implement
//! tokio's `AsyncRead`/`AsyncWrite` with no tokio runtime: the face hyper
//! reads and writes through (`yieldloop-http` serves HTTP/2 over it).
//!
//! Every configuration built here uses rustls's ring provider ([`provider`]);
//! build a [`rustls::ServerConfig`] or [`rustls::ClientConfig`] of your own
//! for anything else (client certificates, another provider) and pass it to
//! [`TlsAcceptor::new`] or [`TlsConnector::new`]. rustls is re-exported as
//! [`rustls`], so that its version always matches this crate's.
//!
//! # Layout
//!
//! - `config`: configurations on the ring provider, and PEM files read
//!   into certificates, keys and root stores.
//! - `acceptor`: [`TlsAcceptor`], the server side.
//! - `connector`: [`TlsConnector`], the client side.
//! - `stream`: [`TlsStream`], the session and its socket, and the
//!   handshake with its deadline.
//! - `async_io` (feature `tokio`): the deadline of the async handshakes.
//!
//! # Examples
//!
//! A server and a client in one run, with a certificate made for the
//! occasion:
//!
//! ```
//! use std::io::{Read, Write};
//! use yieldloop::net::{TcpListener, TcpStream};
//! use yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
//! use yieldloop_rustls::rustls::RootCertStore;
//! use yieldloop_rustls::{TlsAcceptor, TlsConnector};
//!
//! let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
//! let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
//! let acceptor = TlsAcceptor::from_single_cert(vec![made.cert.der().clone()], key.into())?;
//! let mut roots = RootCertStore::empty();
//! roots.add(made.cert.der().clone()).unwrap();
//! let connector = TlsConnector::with_roots(roots);
//!
//! yieldloop::run(move || -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     let server = yieldloop::spawn(move || -> std::io::Result<()> {
//!         let (stream, _) = listener.accept()?;
//!         let mut tls = acceptor.accept(stream)?;
//!         let mut line = [0u8; 6];
//!         tls.read_exact(&mut line)?;
//!         tls.write_all(&line)?;
//!         tls.shutdown()
//!     });
//!     let mut tls = connector.connect("localhost", TcpStream::connect(addr)?)?;
//!     tls.write_all(b"hello\n")?;
//!     let mut echo = Vec::new();
//!     tls.read_to_end(&mut echo)?;
//!     assert_eq!(echo, b"hello\n");
//!     server.join().unwrap()
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod acceptor;
#[cfg(feature = "tokio")]
mod async_io;
mod config;
mod connector;
mod stream;

pub use rustls;
#[cfg(feature = "tokio")]
pub use tokio_rustls;

pub use acceptor::{TlsAcceptor, DEFAULT_HANDSHAKE_TIMEOUT};
pub use config::{client_config, load_certs, load_key, load_roots, provider, server_config};
pub use connector::TlsConnector;
pub use stream::{TlsStream, HANDSHAKE_STACK_SIZE};

/// A server's session over a yieldloop socket, from [`TlsAcceptor::accept`].
pub type ServerTlsStream = TlsStream<rustls::ServerConnection>;

/// A client's session over a yieldloop socket, from [`TlsConnector::connect`].
pub type ClientTlsStream = TlsStream<rustls::ClientConnection>;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
