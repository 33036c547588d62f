//! [`PidFd`]: a Linux process file descriptor, which becomes readable when
//! its process exits, so the reactor can wake the task waiting for it.
//!
//! `pidfd_open` came with Linux 5.3; on older kernels (`ENOSYS`), or where
//! a sandbox forbids it, the caller falls back to waiting on the blocking
//! pool.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// An open pidfd, registrable with `mio`.
#[derive(Debug)]
pub(crate) struct PidFd(OwnedFd);

impl PidFd {
    /// Opens a pidfd for the child `pid`, which must not have been reaped
    /// (so the id still names it).
    ///
    /// # Errors
    ///
    /// `ENOSYS` on kernels before 5.3; whatever else the system says.
    pub(crate) fn open(pid: u32) -> io::Result<PidFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (close-on-exec) or -1; it touches no memory of ours.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor; nothing else
        // owns it.
        Ok(PidFd(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
    }

    /// A second descriptor for the same pidfd, for the reaper to watch
    /// once this one is closed.
    pub(crate) fn try_clone(&self) -> io::Result<OwnedFd> {
        self.0.try_clone()
    }
}

impl AsRawFd for PidFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl mio::event::Source for PidFd {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).register(registry, token, interests)
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).deregister(registry)
    }
}
