//! Networking: sockets whose calls look blocking but pause only the calling
//! task.
//!
//! Every socket is non-blocking underneath. A call that would block yields
//! [`Op::ReadReady`](crate::Op::ReadReady) or
//! [`Op::WriteReady`](crate::Op::WriteReady) and retries once the scheduler
//! reports readiness, so `std::io::Read`/`Write` and everything built on
//! them (`BufReader`, `read_line`, `io::copy`) work unchanged inside a task.

mod registered;
mod reuseport;
mod tcp_listener;
mod tcp_stream;
mod udp;
mod unix;

pub use reuseport::{bind_reuseport_std, reuseport_listeners};
pub use tcp_listener::{Incoming, TcpListener};
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
pub use unix::{UnixIncoming, UnixListener, UnixStream};

pub(crate) use tcp_listener::accept_raw;
