//! Networking: sockets whose calls look blocking but pause only the calling
//! task.
//!
//! Every socket is non-blocking underneath. A call that would block yields
//! [`Op::ReadReady`](crate::raw::Op::ReadReady) or
//! [`Op::WriteReady`](crate::raw::Op::WriteReady) and retries once the scheduler
//! reports readiness, so `std::io::Read`/`Write` and everything built on
//! them (`BufReader`, `read_line`, `io::copy`) work unchanged inside a task.

/// Implements `Read`/`Write` for a stream type, both on `&T` (so one task
/// can read while another writes through shared references) and on `T`,
/// by running the std call in the `Registered` retry loop of its `inner`
/// field. The stream types differ only in their mio type, so one body
/// serves them all.
macro_rules! blocking_style_io {
    ($ty:ty) => {
        impl std::io::Read for &$ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner
                    .do_stream_read(buf.len(), |mut s| std::io::Read::read(&mut s, buf))
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                let len = bufs.iter().map(|b| b.len()).sum();
                self.inner
                    .do_stream_read(len, |mut s| std::io::Read::read_vectored(&mut s, bufs))
            }
        }

        impl std::io::Write for &$ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner
                    .do_write(|mut s| std::io::Write::write(&mut s, buf))
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                self.inner
                    .do_write(|mut s| std::io::Write::write_vectored(&mut s, bufs))
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

mod registered;
mod reuseport;
mod tcp_listener;
mod tcp_stream;
mod udp;
mod unix;
mod unix_datagram;

pub use reuseport::{bind_reuseport_std, reuseport_listeners};
pub use tcp_listener::{Incoming, TcpListener};
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
pub use unix::{UnixIncoming, UnixListener, UnixStream};
pub use unix_datagram::UnixDatagram;
