//! `AsyncRead`/`AsyncWrite` of `futures-io` (feature `futures-io`) and of
//! tokio (feature `tokio`) for [`PausingIo`], on the reactor's wakers: the
//! poll-style calls [`PausingIo::poll_read_with`] and its twins, written
//! once per trait family. The sockets of [`net`](crate::net) pass theirs on
//! to these.
//!
//! As for `Read` and `Write`: the owned type where `T` reads (writes)
//! through `&mut`, and a shared reference where `&T` does, so that one
//! future can read while another writes.

use std::io::{self, IoSlice, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::PausingIo;

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

    /// Writes pause the future while `T` cannot take more; closing flushes
    /// (`T` alone knows how to end its stream: see the sockets' own
    /// impls, which shut down the write side).
    impl<T: Write + Unpin> futures_io::AsyncWrite for PausingIo<T> {
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

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_flush(cx)
        }
    }

    /// Writes through a shared reference, where `&T` writes.
    impl<T> futures_io::AsyncWrite for &PausingIo<T>
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

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_flush(cx)
        }
    }
}

#[cfg(feature = "tokio")]
mod tokio_impls {
    use std::task::ready;

    use tokio::io::ReadBuf;

    use super::*;

    /// A read into the unfilled part of `buf` by `read`, which is handed
    /// that part zeroed where it was not initialised yet.
    fn read_buf(
        buf: &mut ReadBuf<'_>,
        read: impl FnOnce(&mut [u8]) -> Poll<io::Result<usize>>,
    ) -> Poll<io::Result<()>> {
        let n = ready!(read(buf.initialize_unfilled()))?;
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
            let this = self.get_mut();
            read_buf(buf, |b| {
                let len = b.len();
                this.poll_read_stream_with_mut(cx, len, |io| io.read(b))
            })
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
            read_buf(buf, |b| {
                let len = b.len();
                self.poll_read_stream_with(cx, len, |mut io| io.read(b))
            })
        }
    }

    /// Writes pause the future while `T` cannot take more; shutting down
    /// flushes (see the `futures-io` impl).
    impl<T: Write + Unpin> tokio::io::AsyncWrite for PausingIo<T> {
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

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_flush(cx)
        }
    }

    /// Writes through a shared reference, where `&T` writes.
    impl<T> tokio::io::AsyncWrite for &PausingIo<T>
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

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_flush(cx)
        }
    }
}
