//! The server side: the handshake on a stream, and an accept loop.

use std::io::{Read, Write};

use tungstenite::WebSocket;
use yieldloop::net::{TcpListener, TcpStream};

/// Runs the server's opening handshake on `stream` (reads the client's
/// upgrade request, answers `101`), pausing the calling task only.
///
/// # Errors
///
/// tungstenite's, for a request that is not a WebSocket upgrade (the
/// connection is then closed without an answer) or a failing stream.
pub fn accept<S: Read + Write>(stream: S) -> Result<WebSocket<S>, tungstenite::Error> {
    tungstenite::accept(stream).map_err(super::handshake_error)
}

/// Accepts connections on `listener` for ever and, in a task per
/// connection, runs the handshake and then `handler` with the socket. A
/// failed handshake closes that connection only; a failed accept is
/// retried after 100 ms.
pub fn serve<H>(listener: TcpListener, handler: H)
where
    H: Fn(WebSocket<TcpStream>) + Clone + 'static,
{
    crate::with_hyper::accept_loop(&listener, |stream: TcpStream| {
        let handler = handler.clone();
        yieldloop::spawn(move || {
            if let Ok(socket) = accept(stream) {
                handler(socket);
            }
        });
    });
}
