//! The `accept` the reactor performs for a task waiting in
//! [`Op::Accept`](crate::raw::Op::Accept).

use std::io;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, RawFd};

/// Accepts one connection on the listening socket `fd`; the stream comes
/// back in non-blocking mode.
pub(super) fn accept_on(fd: RawFd) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    // SAFETY: `fd` comes from the reactor's table, whose entry is removed
    // (when the listener's registration drops) before the listener's
    // descriptor is closed, so it is open here. `ManuallyDrop` keeps this
    // temporary from closing it.
    let listener = ManuallyDrop::new(unsafe { mio::net::TcpListener::from_raw_fd(fd) });
    let (stream, addr) = listener.accept()?;
    Ok((stream.into(), addr))
}
