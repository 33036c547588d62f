//! The parent's ends of a child's standard streams: [`ChildStdin`],
//! [`ChildStdout`] and [`ChildStderr`], non-blocking pipes registered with
//! the scheduler, whose `Read`/`Write` calls pause only the calling task.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::process::Stdio;

use mio::unix::pipe::{Receiver, Sender};

use crate::io::PausingIo;
use crate::protocol::IoId;

/// The writing end of a child's standard input.
///
/// Writes pause the calling task while the pipe is full. Dropping it closes
/// the pipe, so the child reads end-of-file; [`Child::wait`](super::Child::wait)
/// closes it first for that reason.
///
/// `Write` is implemented for `&ChildStdin` too.
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use yieldloop::process::{Command, Stdio};
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let mut child = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
///     let mut stdin = child.stdin.take().unwrap();
///     stdin.write_all(b"meow")?;
///     drop(stdin); // end of file for cat
///     let mut text = String::new();
///     child.stdout.take().unwrap().read_to_string(&mut text)?;
///     assert_eq!(text, "meow");
///     assert!(child.wait()?.success());
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct ChildStdin {
    inner: PausingIo<Sender>,
}

/// The reading end of a child's standard output.
///
/// Reads pause the calling task until the child writes or closes its end;
/// a read returns 0 (end of file) once the child, and any process it passed
/// the stream on to, has exited or closed it.
///
/// `Read` is implemented for `&ChildStdout` too. It converts into a
/// [`Stdio`] to feed another child (a pipeline).
///
/// # Examples
///
/// ```
/// use std::io::{BufRead, BufReader};
/// use yieldloop::process::{Command, Stdio};
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let mut child = Command::new("sh")
///         .args(["-c", "echo one; echo two"])
///         .stdout(Stdio::piped())
///         .spawn()?;
///     let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
///         .lines()
///         .collect::<Result<_, _>>()?;
///     assert_eq!(lines, ["one", "two"]);
///     child.wait()?;
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct ChildStdout {
    inner: PausingIo<Receiver>,
}

/// The reading end of a child's standard error; like [`ChildStdout`].
pub struct ChildStderr {
    inner: PausingIo<Receiver>,
}

/// A blocking duplicate of the pipe end `fd`, for a child to inherit (a
/// child that finds its standard stream non-blocking would fail where it
/// expects to wait). The description is shared, so the original must be
/// closed, which the callers do by consuming it.
fn blocking_dup(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let dup = fd.try_clone_to_owned()?;
    crate::io::set_nonblocking(dup.as_fd(), false)?;
    Ok(dup)
}

impl ChildStdin {
    /// Takes over std's pipe end.
    pub(crate) fn new(std: std::process::ChildStdin) -> io::Result<ChildStdin> {
        Ok(ChildStdin {
            inner: PausingIo::new(Sender::from(std))?,
        })
    }

    /// The id the pipe is registered under, for
    /// [`ParkToken::watch_io`](crate::raw::ParkToken::watch_io) and
    /// [`Select`](crate::sync::Select).
    pub fn io_id(&self) -> IoId {
        self.inner.io_id()
    }

    /// Turns the pipe end back into a plain, blocking descriptor, no longer
    /// registered with the scheduler: to hand it to another child, say.
    ///
    /// # Errors
    ///
    /// If it cannot be duplicated or switched to blocking mode.
    pub fn into_owned_fd(self) -> io::Result<OwnedFd> {
        blocking_dup(self.as_fd())
    }
}

/// The reading ends share everything but their name.
macro_rules! receiver {
    ($ty:ident, $std:ty) => {
        impl $ty {
            /// Takes over std's pipe end.
            pub(crate) fn new(std: $std) -> io::Result<$ty> {
                Ok($ty {
                    inner: PausingIo::new(Receiver::from(std))?,
                })
            }

            /// The id the pipe is registered under, for
            /// [`ParkToken::watch_io`](crate::raw::ParkToken::watch_io) and
            /// [`Select`](crate::sync::Select).
            pub fn io_id(&self) -> IoId {
                self.inner.io_id()
            }

            /// Turns the pipe end back into a plain, blocking descriptor, no
            /// longer registered with the scheduler: to hand it to another
            /// child, say (see also the `TryFrom` conversion into
            /// [`Stdio`]).
            ///
            /// # Errors
            ///
            /// If it cannot be duplicated or switched to blocking mode.
            pub fn into_owned_fd(self) -> io::Result<OwnedFd> {
                blocking_dup(self.as_fd())
            }

            /// One read that never pauses: `WouldBlock` when the pipe is
            /// empty.
            pub(crate) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                self.inner.get_ref().read(buf)
            }
        }

        impl Read for &$ty {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.inner.read_with(|mut r| r.read(buf))
            }

            fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                self.inner.read_with(|mut r| r.read_vectored(bufs))
            }
        }

        impl Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                (&*self).read(buf)
            }

            fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                (&*self).read_vectored(bufs)
            }
        }

        /// The pipe end as a blocking descriptor, for another child's
        /// standard stream: `cmd.stdin(Stdio::try_from(stdout)?)`.
        impl TryFrom<$ty> for Stdio {
            type Error = io::Error;

            fn try_from(pipe: $ty) -> io::Result<Stdio> {
                pipe.into_owned_fd().map(Stdio::from)
            }
        }

        pipe_traits!($ty);
    };
}

/// `AsFd`, `AsRawFd` and `Debug` for a pipe end.
macro_rules! pipe_traits {
    ($ty:ident) => {
        impl AsRawFd for $ty {
            fn as_raw_fd(&self) -> RawFd {
                self.inner.get_ref().as_raw_fd()
            }
        }

        impl AsFd for $ty {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.inner.get_ref().as_fd()
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("fd", &self.as_raw_fd())
                    .finish()
            }
        }
    };
}

receiver!(ChildStdout, std::process::ChildStdout);
receiver!(ChildStderr, std::process::ChildStderr);
pipe_traits!(ChildStdin);

impl Write for &ChildStdin {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_with(|mut w| w.write(buf))
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.inner.write_with(|mut w| w.write_vectored(bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        // Nothing is buffered here; written data is in the kernel.
        Ok(())
    }
}

impl Write for ChildStdin {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The pipe end as a blocking descriptor, for another child's standard
/// stream.
impl TryFrom<ChildStdin> for Stdio {
    type Error = io::Error;

    fn try_from(pipe: ChildStdin) -> io::Result<Stdio> {
        pipe.into_owned_fd().map(Stdio::from)
    }
}
