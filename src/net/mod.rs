//! Networking: sockets whose calls look blocking but pause only the calling
//! task.
//!
//! Every socket is non-blocking underneath. A call that would block yields
//! [`Op::ReadReady`](crate::raw::Op::ReadReady) or
//! [`Op::WriteReady`](crate::raw::Op::WriteReady) and retries once the scheduler
//! reports readiness, so `std::io::Read`/`Write` and everything built on
//! them (`BufReader`, `read_line`, `io::copy`) work unchanged inside a task.
//!
//! # Name resolution
//!
//! The calls that take an address (`connect`, `bind`, `send_to`, …) take
//! any [`ToSocketAddrs`]: the types std's sockets take, from a
//! `SocketAddr` to `"example.com:443"`. What happens to it depends on what
//! it is:
//!
//! - **A literal address** (`SocketAddr`, `(IpAddr, u16)`,
//!   `"127.0.0.1:80"`, `"[::1]:80"`, `("10.0.0.1", 80)`) is parsed on the
//!   spot: no pause, no thread hop.
//! - **A host name** is looked up by the process's [resolver](Resolve)
//!   on the [blocking pool](crate::spawn_blocking), while the calling task
//!   pauses and every other task runs on. A name that takes seconds to
//!   resolve costs its own task those seconds, and no one else anything.
//!   Outside any task it is looked up on the calling thread.
//!
//! [`lookup_host`] looks a name up without connecting. The wait for a
//! lookup is a pause like any other: a [`timeout`](crate::timeout()) around
//! `connect("host:port")` covers the lookup too, and a cancelled task stops
//! waiting at once. The lookup itself cannot be interrupted: it finishes on
//! its pool thread, whose answer is then dropped. Each lookup under way
//! holds a pool thread, so many slow ones at once queue behind the
//! [pool's limit](crate::diag::set_blocking_max_threads).
//!
//! The resolver is the system's ([`SystemResolver`], `getaddrinfo`) unless
//! [`set_resolver`] installs another for the whole process: a table for
//! service discovery, a DNS client of your choice, or a slow or failing one
//! in tests.
//!
//! ```
//! use std::io::{Read, Write};
//! use yieldloop::net::{TcpListener, TcpStream};
//!
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let port = listener.local_addr()?.port();
//!     let server = yieldloop::spawn(move || -> std::io::Result<()> {
//!         let (mut s, _) = listener.accept()?;
//!         s.write_all(b"hi")?;
//!         Ok(())
//!     });
//!     // "localhost" is looked up on the pool; this task pauses meanwhile.
//!     let mut client = TcpStream::connect(("localhost", port))?;
//!     let mut buf = [0u8; 2];
//!     client.read_exact(&mut buf)?;
//!     assert_eq!(&buf, b"hi");
//!     server.join().unwrap()
//! })
//! .unwrap();
//! ```

/// Implements `Read`/`Write` for a stream type, both on `&T` (so one task
/// can read while another writes through shared references) and on `T`,
/// by running the std call in the [`PausingIo`](crate::io::PausingIo) retry loop of its `inner`
/// field. The stream types differ only in their mio type, so one body
/// serves them all.
macro_rules! blocking_style_io {
    ($ty:ty) => {
        impl std::io::Read for &$ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner
                    .read_stream_with(buf.len(), |mut s| std::io::Read::read(&mut s, buf))
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                let len = bufs.iter().map(|b| b.len()).sum();
                self.inner
                    .read_stream_with(len, |mut s| std::io::Read::read_vectored(&mut s, bufs))
            }
        }

        impl std::io::Write for &$ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner
                    .write_with(|mut s| std::io::Write::write(&mut s, buf))
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                self.inner
                    .write_with(|mut s| std::io::Write::write_vectored(&mut s, bufs))
            }

            fn flush(&mut self) -> std::io::Result<()> {
                // Nothing is buffered here; data is in the kernel once written.
                Ok(())
            }
        }

        impl std::io::Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::io::Read::read(&mut &*self, buf)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                std::io::Read::read_vectored(&mut &*self, bufs)
            }
        }

        impl std::io::Write for $ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::io::Write::write(&mut &*self, buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                std::io::Write::write_vectored(&mut &*self, bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
    };
}

/// Implements the async I/O traits of the enabled features, `futures-io`'s
/// and tokio's `AsyncRead`/`AsyncWrite`, for a stream type and a shared
/// reference to it (so that one future can read while another writes), by
/// passing each call to the `&PausingIo` impls of its `inner` field (but
/// tokio's reads to `PausingIo::poll_recv_buf`, which need not zero the
/// buffer first);
/// closing (`poll_close`, `poll_shutdown`) shuts down the write side,
/// which sends the peer an end of stream.
macro_rules! async_stream_io {
    ($ty:ident) => {
        async_stream_io!(@futures $ty);
        async_stream_io!(@futures &$ty);
        async_stream_io!(@tokio $ty);
        async_stream_io!(@tokio &$ty);
    };
    (@futures $($ty:tt)+) => {
        #[cfg(feature = "futures-io")]
        impl futures_io::AsyncRead for $($ty)+ {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures_io::AsyncRead::poll_read(std::pin::Pin::new(&mut &self.inner), cx, buf)
            }

            fn poll_read_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures_io::AsyncRead::poll_read_vectored(std::pin::Pin::new(&mut &self.inner), cx, bufs)
            }
        }

        #[cfg(feature = "futures-io")]
        impl futures_io::AsyncWrite for $($ty)+ {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures_io::AsyncWrite::poll_write(std::pin::Pin::new(&mut &self.inner), cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures_io::AsyncWrite::poll_write_vectored(std::pin::Pin::new(&mut &self.inner), cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Nothing is buffered here; data is in the kernel once written.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(self.inner.get_ref().shutdown(std::net::Shutdown::Write))
            }
        }
    };
    (@tokio $($ty:tt)+) => {
        #[cfg(feature = "tokio")]
        impl tokio::io::AsyncRead for $($ty)+ {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Into the buffer as it is: no zeroing for a system call.
                self.inner.poll_recv_buf(cx, buf)
            }
        }

        #[cfg(feature = "tokio")]
        impl tokio::io::AsyncWrite for $($ty)+ {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                tokio::io::AsyncWrite::poll_write(std::pin::Pin::new(&mut &self.inner), cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                tokio::io::AsyncWrite::poll_write_vectored(std::pin::Pin::new(&mut &self.inner), cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(self.inner.get_ref().shutdown(std::net::Shutdown::Write))
            }
        }
    };
}

/// Writes, inside a socket type's `impl` block, the methods that only pass
/// a call on. Each is declared with its docs, in the order the methods are
/// to appear:
///
/// - `pub fn name(&self, arg: T, ..) -> R;` calls the same method of the mio
///   socket in the `inner` registration (`local_addr`, `set_ttl`,
///   `shutdown`, ..);
/// - `pub fn set_read_timeout; pub fn set_write_timeout;`, each with the
///   opening of its docs and optionally `{ more docs }` to follow its
///   `# Errors` section, writes the two setters, which keep the timeouts in
///   the registration, and then the `read_timeout` and `write_timeout`
///   getters. What every socket's timeouts say alike, the setters'
///   `# Errors` and the getters' docs, is written here once;
/// - `pub fn io_id;`, with its docs, writes `io_id`, the id the socket is
///   registered under;
/// - `pub fn take_error;` writes `take_error`, docs and all.
macro_rules! socket_methods {
    () => {};
    (
        $(#[$read:meta])*
        pub fn set_read_timeout $({ $(#[$read_more:meta])* })?;
        $(#[$write:meta])*
        pub fn set_write_timeout $({ $(#[$write_more:meta])* })?;
        $($rest:tt)*
    ) => {
        // More docs, if any, follow the `# Errors` section after a blank line.
        socket_methods!(@set set_read_timeout [$(#[$read])*] [$(#[doc = ""] $(#[$read_more])*)?]);
        socket_methods!(@set set_write_timeout [$(#[$write])*] [$(#[doc = ""] $(#[$write_more])*)?]);
        socket_methods!(@get read_timeout "read");
        socket_methods!(@get write_timeout "write");
        socket_methods!($($rest)*);
    };
    (@set $set:ident [$(#[$doc:meta])*] [$(#[$more:meta])*]) => {
        $(#[$doc])*
        ///
        /// # Errors
        ///
        /// [`io::ErrorKind::InvalidInput`] for a zero duration, as in std.
        $(#[$more])*
        pub fn $set(&self, timeout: Option<std::time::Duration>) -> std::io::Result<()> {
            self.inner.$set(timeout)
        }
    };
    (@get $get:ident $what:literal) => {
        #[doc = concat!("The ", $what, " timeout.")]
        ///
        /// # Errors
        ///
        /// Never; `io::Result` for symmetry with std.
        pub fn $get(&self) -> std::io::Result<Option<std::time::Duration>> {
            Ok(self.inner.$get())
        }
    };
    ($(#[$doc:meta])* pub fn io_id; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn io_id(&self) -> $crate::protocol::IoId {
            self.inner.io_id()
        }

        socket_methods!($($rest)*);
    };
    (pub fn take_error; $($rest:tt)*) => {
        /// Takes the pending socket error (`SO_ERROR`), if any.
        ///
        /// # Errors
        ///
        /// The system's error.
        pub fn take_error(&self) -> std::io::Result<Option<std::io::Error>> {
            self.inner.get_ref().take_error()
        }

        socket_methods!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        pub fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        pub fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.inner.get_ref().$name($($arg),*)
        }

        socket_methods!($($rest)*);
    };
}

/// Implements `AsRawFd` for a socket type, from the mio socket in its
/// `inner` registration, and `Debug`, which shows the descriptor and the
/// addresses named: `socket_traits!(TcpStream { "local": local_addr })`.
macro_rules! socket_traits {
    ($ty:ident { $($field:literal: $addr:ident),* }) => {
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(self.inner.get_ref())
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("fd", &std::os::fd::AsRawFd::as_raw_fd(self))
                    $(.field($field, &self.$addr().ok()))*
                    .finish()
            }
        }
    };
}

mod addr;
mod resolve;
mod reuseport;
mod tcp_listener;
mod tcp_stream;
mod udp;
mod unix;
mod unix_datagram;

pub use addr::{lookup_host, ToSocketAddrs};
pub use resolve::{set_resolver, Resolve, SystemResolver};
pub use reuseport::{bind_reuseport_std, reuseport_listeners};
pub use tcp_listener::{Incoming, TcpListener};
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
pub use unix::{UnixIncoming, UnixListener, UnixStream};
pub use unix_datagram::UnixDatagram;
