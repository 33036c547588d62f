//! `AsyncRead`/`AsyncWrite` of `futures-io` (feature `futures-io`) and of
//! tokio (feature `tokio`) for [`PausingIo`], on the reactor's wakers: the
//! poll-style calls [`PausingIo::poll_read_with`] and its twins, written
//! once per trait family. The sockets of [`net`](crate::net) pass theirs on
//! to these, but for tokio's reads, which go to a `recv` into the
//! uninitialised buffer (`poll_recv_buf`).
//!
//! As for `Read` and `Write`: the owned type where `T` reads (writes)
//! through `&mut`, and a shared reference where `&T` does, so that one
//! future can read while another writes.

use std::io::{self, IoSlice, Read, Write};
#[cfg(feature = "tokio")]
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::PausingIo;

/// The `AsyncWrite` impls of one trait family (its path, and the name of
/// its call that ends the stream): writes pause the future while `T`
/// cannot take more, for the owned type where `T` writes through `&mut`,
/// and for a shared reference where `&T` writes. Both families' traits
/// have the same calls but that last one.
#[cfg(any(feature = "futures-io", feature = "tokio"))]
macro_rules! write_impls {
    ($trait:path, $end:ident) => {
        impl<T: Write + Unpin> $trait for PausingIo<T> {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.get_mut().poll_write_with_mut(cx, |io| io.write(buf))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.get_mut()
                    .poll_write_with_mut(cx, |io| io.write_vectored(bufs))
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.get_mut().poll_write_with_mut(cx, |io| io.flush())
            }

            fn $end(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.poll_flush(cx)
            }
        }

        impl<T> $trait for &PausingIo<T>
        where
            for<'a> &'a T: Write,
        {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.poll_write_with(cx, |mut io| io.write(buf))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.poll_write_with(cx, |mut io| io.write_vectored(bufs))
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.poll_write_with(cx, |mut io| io.flush())
            }

            fn $end(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.poll_flush(cx)
            }
        }
    };
}

#[cfg(feature = "futures-io")]
mod futures_impls {
    use super::*;

    /// Reads pause the future (not the task) while `T` has nothing to read.
    impl<T: Read + Unpin> futures_io::AsyncRead for PausingIo<T> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            let len = buf.len();
            self.get_mut()
                .poll_read_stream_with_mut(cx, len, |io| io.read(buf))
        }

        fn poll_read_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &mut [io::IoSliceMut<'_>],
        ) -> Poll<io::Result<usize>> {
            let len = bufs.iter().map(|b| b.len()).sum();
            self.get_mut()
                .poll_read_stream_with_mut(cx, len, |io| io.read_vectored(bufs))
        }
    }

    /// Reads through a shared reference, where `&T` reads.
    impl<T> futures_io::AsyncRead for &PausingIo<T>
    where
        for<'a> &'a T: Read,
    {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            let len = buf.len();
            self.poll_read_stream_with(cx, len, |mut io| io.read(buf))
        }

        fn poll_read_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &mut [io::IoSliceMut<'_>],
        ) -> Poll<io::Result<usize>> {
            let len = bufs.iter().map(|b| b.len()).sum();
            self.poll_read_stream_with(cx, len, |mut io| io.read_vectored(bufs))
        }
    }

    // Closing flushes: `T` alone knows how to end its stream (see the
    // sockets' own impls, which shut down the write side).
    write_impls!(futures_io::AsyncWrite, poll_close);
}

#[cfg(feature = "tokio")]
mod tokio_impls {
    use std::task::ready;

    use tokio::io::ReadBuf;

    use super::*;

    /// Ends a read into the unfilled part of `buf`: the bytes it read,
    /// initialised by then, become filled.
    ///
    /// The part handed to the read is zeroed (`initialize_unfilled`) in
    /// the read call itself, run only once the source is worth trying: a
    /// poll that files the waker instead leaves the buffer alone. That
    /// matters because callers such as `tokio_util`'s `Framed` make a
    /// fresh `ReadBuf` over their whole spare capacity (kilobytes) on each
    /// poll, and poll once more after every message to find the socket
    /// empty.
    fn filled(buf: &mut ReadBuf<'_>, polled: Poll<io::Result<usize>>) -> Poll<io::Result<()>> {
        let n = ready!(polled)?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }

    /// Reads pause the future (not the task) while `T` has nothing to read.
    impl<T: Read + Unpin> tokio::io::AsyncRead for PausingIo<T> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let len = buf.remaining();
            let polled = self
                .get_mut()
                .poll_read_stream_with_mut(cx, len, |io| io.read(buf.initialize_unfilled()));
            filled(buf, polled)
        }
    }

    /// Reads through a shared reference, where `&T` reads.
    impl<T> tokio::io::AsyncRead for &PausingIo<T>
    where
        for<'a> &'a T: Read,
    {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let len = buf.remaining();
            let polled =
                self.poll_read_stream_with(cx, len, |mut io| io.read(buf.initialize_unfilled()));
            filled(buf, polled)
        }
    }

    impl<T: AsRawFd> PausingIo<T> {
        /// tokio's `poll_read` for a socket of [`net`](crate::net): `recv`
        /// straight into the unfilled part of `buf`, uninitialised as it
        /// may be, as tokio's own sockets read. A `T: Read` may look at
        /// the buffer it is handed, so the generic impls above zero it
        /// first; the system call only writes. (It runs marked as
        /// yieldloop's own, like every try, so the `hook` feature lets it
        /// through.)
        pub(crate) fn poll_recv_buf(
            &self,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let len = buf.remaining();
            let n = ready!(self.poll_read_stream_with(cx, len, |io| {
                // SAFETY: nothing here de-initialises any of it: `recv`
                // only writes bytes.
                let dst = unsafe { buf.unfilled_mut() };
                // SAFETY: `dst` is valid for writes of `dst.len()` bytes,
                // which `recv` writes at most and never reads; `io` keeps
                // the descriptor open for the call.
                let n =
                    unsafe { libc::recv(io.as_raw_fd(), dst.as_mut_ptr().cast(), dst.len(), 0) };
                // A negative count is the failure, and only that.
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            }))?;
            // SAFETY: `recv` wrote the first `n` bytes of the unfilled part.
            unsafe { buf.assume_init(n) };
            buf.advance(n);
            Poll::Ready(Ok(()))
        }
    }

    // Shutting down flushes, as closing does for `futures-io`.
    write_impls!(tokio::io::AsyncWrite, poll_shutdown);
}
