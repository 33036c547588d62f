//! Waiting on any descriptor: [`PausingIo`], the one mechanism by which a
//! task waits for a socket, a pipe or any other file descriptor.
//!
//! [`PausingIo`] owns a descriptor (or the value that owns it: a
//! `socket2::Socket`, a `File` over a pipe, an `OwnedFd` a C library handed
//! over), switches it to non-blocking mode, registers it with the current
//! scheduler's reactor, and runs calls on it so that a call that would
//! block pauses only the calling task until the descriptor is readable or
//! writable, then tries again. It is the shape of tokio's `AsyncFd`,
//! async-io's `Async<T>` and may's `CoIo`, in blocking style: a closure
//! retried on `WouldBlock` ([`PausingIo::read_with`]), and
//! `std::io::Read`/`Write` where the wrapped value has them.
//!
//! ```text
//!   read()/write()/accept() ──▶ PausingIo::read_with(f) ──▶ f(source)
//!                                     ▲                         │ WouldBlock
//!                                     │ Resume::Ready           ▼
//!                                  scheduler ◀── suspend(Op::ReadReady(id, deadline))
//! ```
//!
//! yieldloop's own sockets ([`net`](crate::net)), a child's pipes and its
//! pidfd ([`process`](crate::process)) and the signal listener
//! ([`signal`](crate::signal)) all wait through it. So a library that
//! hands you a descriptor, or a socket made with options yieldloop has no
//! call for, waits the same way and costs the same as a
//! [`TcpStream`](crate::net::TcpStream).
//!
//! The mechanism has one other entry point, and only one: the Cargo
//! feature `hook` (Linux), which pauses a task inside a C library's
//! `read`, `connect` or `poll`. It registers the C library's descriptor
//! with the same reactor and pauses on the same [`Op`](crate::raw::Op)s,
//! but from a frame of its own, for one reason: it runs under C frames,
//! and unwinding must never cross them. Where `PausingIo`'s pause unwinds
//! a task that is cancelled or whose [`timeout`](crate::timeout()) scope
//! expired, the hook's turns that into an error number for the C caller
//! (`ECANCELED`, `ETIMEDOUT`), and the task unwinds at its next pause of
//! its own. Nothing else registers with the reactor.
//!
//! # Futures
//!
//! The reactor also wakes [`Waker`](std::task::Waker)s: a future polled on
//! the scheduler's thread, by [`block_on`](crate::block_on) in a task,
//! waits on a descriptor with [`PausingIo::poll_read_with`] (or
//! [`poll_read_ready`](PausingIo::poll_read_ready)) and their write twins,
//! and only its task pauses while the others run. With the Cargo feature
//! `futures-io`, `PausingIo`, [`TcpStream`](crate::net::TcpStream) and
//! [`UnixStream`](crate::net::UnixStream) implement
//! `futures_io::AsyncRead`/`AsyncWrite` on them; with the feature `tokio`,
//! `tokio::io::AsyncRead`/`AsyncWrite`. That is how a runtime-agnostic
//! async crate runs on yieldloop's own reactor, with no second runtime and
//! no thread hop. Polled where that reactor cannot serve them (after
//! `run` returned, or in another `run`) they answer with an
//! [`Unsupported`](std::io::ErrorKind) error, never a panic; they cannot
//! reach another thread at all (they are not `Send`).
//!
//! ```
//! use futures::io::{AsyncReadExt, AsyncWriteExt};
//! use yieldloop::net::{TcpListener, TcpStream};
//!
//! # #[cfg(feature = "futures-io")]
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     yieldloop::spawn(move || {
//!         let (mut conn, _) = listener.accept().unwrap();
//!         std::io::copy(&mut &conn, &mut &conn).unwrap();
//!     });
//!     let mut stream = TcpStream::connect(addr)?;
//!     // Async code, as a runtime-agnostic crate would write it.
//!     let reply = yieldloop::block_on(async {
//!         stream.write_all(b"ping").await?;
//!         let mut buf = [0u8; 4];
//!         stream.read_exact(&mut buf).await?;
//!         Ok::<_, std::io::Error>(buf)
//!     })?;
//!     assert_eq!(&reply, b"ping");
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! The sockets keep their blocking-style `std::io::Read`/`Write` beside
//! the async traits, so with both `std::io::Read` and an async extension
//! trait (`futures::io::AsyncReadExt`, `tokio::io::AsyncReadExt`) in scope,
//! a call such as `stream.read_exact(&mut buf)` is ambiguous: import only
//! the one a module uses, or name the trait
//! (`AsyncReadExt::read_exact(&mut stream, &mut buf)`). Likewise the
//! sockets' own `shutdown(how)` comes before tokio's
//! `AsyncWriteExt::shutdown()`, which is then named in full.
//!
//! # Where it stands
//!
//! Just above the scheduler and [`suspend`](crate::raw::suspend) (which
//! narrows each pause to the enclosing timeout), and below every
//! blocking-style type built on it. Here too live the two things every
//! such type shares: the error of an I/O object made outside
//! [`run`](crate::run) and the marker that keeps it on its scheduler's
//! thread.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

#[cfg(any(feature = "futures-io", feature = "tokio"))]
mod async_traits;
mod pausing_io;
mod pinned;

pub(crate) use pausing_io::deadline_in;
pub use pausing_io::PausingIo;
pub(crate) use pinned::PinnedToSchedulerThread;

/// The error of an I/O object made where it cannot work: outside
/// `yieldloop::run` (or a `Runtime` worker), with no scheduler to register
/// it with, or, for a call that must pause, outside a task.
pub(crate) fn outside_run() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "yieldloop: sockets, pipes and signal listeners can only be created and waited on \
         inside yieldloop::run (or a Runtime worker)",
    )
}

/// Switches the descriptor `fd` to non-blocking mode (`on`) or back to
/// blocking mode, leaving its other status flags as they are.
///
/// The mode belongs to the open file description, so it changes for every
/// duplicate of `fd` too.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller has borrowed for the call,
    // with integer arguments only; it touches no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    let wanted = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if wanted == flags {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, wanted) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
