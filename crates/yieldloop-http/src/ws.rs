//! WebSocket (RFC 6455) for tasks: tungstenite's synchronous API over
//! yieldloop's streams, so that a `read` waiting for the next message or
//! a `send` waiting for the peer pauses only its task.
//!
//! tungstenite does the framing, masking, fragmentation, control frames
//! and handshakes; it only needs a `Read + Write` stream, and yieldloop's
//! [`TcpStream`](yieldloop::net::TcpStream) and yieldloop-rustls's
//! `TlsStream` (feature `tls`) are blocking-style streams that pause the
//! task instead of the thread.
//!
//! # Server
//!
//! - [`serve`]: accept on a yieldloop listener, run the handshake and the
//!   handler in a task per connection.
//! - [`accept`]: the server's handshake on a stream of one's own (a
//!   `TcpStream`, or a TLS session from yieldloop-rustls for `wss://`).
//!
//! WebSocket listens on a port of its own. Neither HTTP server of this
//! crate hands a connection over to it yet: the root's server
//! ([`serve`](crate::serve)) owns its connections and has no upgrade hook,
//! and hyper hands an upgraded connection over only as a `Send` value,
//! which yieldloop's sockets (tied to their thread's reactor) are not.
//!
//! # Client
//!
//! - [`connect`]: `ws://` (and, with feature `tls`, `wss://`) URLs.
//! - [`client`]: the client's handshake on a stream of one's own.
//!
//! A `WebSocket` is one value with `&mut` reads and writes: one task reads
//! and writes it. To send from several tasks, hand messages to the owning
//! task through a channel ([`yieldloop::sync`]).
//!
//! # Examples
//!
//! An echo server and a client in one run:
//!
//! ```
//! use yieldloop::net::TcpListener;
//! use yieldloop_http::ws::{self, tungstenite::Message};
//!
//! yieldloop::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     yieldloop::spawn(move || {
//!         ws::serve(listener, |mut socket| {
//!             while let Ok(msg) = socket.read() {
//!                 if msg.is_text() || msg.is_binary() {
//!                     let _ = socket.send(msg);
//!                 }
//!             }
//!         })
//!     });
//!     let (mut socket, _) = ws::connect(&format!("ws://{addr}/echo")).unwrap();
//!     socket.send(Message::text("hello")).unwrap();
//!     assert_eq!(socket.read().unwrap(), Message::text("hello"));
//!     socket.close(None).unwrap();
//! });
//! ```

mod client;
mod server;

pub use tungstenite;
pub use tungstenite::{Message, WebSocket};

#[cfg(feature = "tls")]
pub use client::connect_tls;
pub use client::{client, connect, ClientStream};
pub use server::{accept, serve};

/// tungstenite's error from a handshake on a blocking stream: the only
/// case is a failure (a blocking stream never asks to be resumed).
fn handshake_error<R: tungstenite::handshake::HandshakeRole>(
    e: tungstenite::HandshakeError<R>,
) -> tungstenite::Error {
    match e {
        tungstenite::HandshakeError::Failure(e) => e,
        tungstenite::HandshakeError::Interrupted(_) => tungstenite::Error::Io(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "the handshake was interrupted",
        )),
    }
}
