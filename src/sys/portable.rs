//! The paths every Unix has, taken off Linux and with the `portable`
//! feature: no precise timer (the poll's own timeout covers the whole
//! wait), no pidfd (a child's exit is waited for on the blocking pool),
//! and guard pages with `mprotect`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The precise timer there is none of: it cannot be made, so the reactor
/// never holds one.
#[derive(Debug)]
pub(crate) enum PreciseTimer {}

impl PreciseTimer {
    /// Always fails: the poll's own timeout stands in.
    pub(crate) fn new() -> io::Result<PreciseTimer> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no precise timer on this platform",
        ))
    }

    pub(crate) fn arm(&mut self, _after: Duration) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn clear(&mut self) {
        match *self {}
    }

    pub(crate) fn is_armed(&self) -> bool {
        match *self {}
    }
}

impl AsRawFd for PreciseTimer {
    fn as_raw_fd(&self) -> RawFd {
        match *self {}
    }
}

/// The process descriptor there is none of: it cannot be opened, so a
/// child's exit is waited for on the blocking pool.
#[derive(Debug)]
pub(crate) enum PidFd {}

impl PidFd {
    /// Always fails: the caller waits on the blocking pool instead.
    pub(crate) fn open(_pid: u32) -> io::Result<PidFd> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no pidfd on this platform",
        ))
    }

    pub(crate) fn try_clone(&self) -> io::Result<OwnedFd> {
        match *self {}
    }
}

impl AsRawFd for PidFd {
    fn as_raw_fd(&self) -> RawFd {
        match *self {}
    }
}

impl mio::event::Source for PidFd {
    fn register(&mut self, _: &mio::Registry, _: mio::Token, _: mio::Interest) -> io::Result<()> {
        match *self {}
    }

    fn reregister(&mut self, _: &mio::Registry, _: mio::Token, _: mio::Interest) -> io::Result<()> {
        match *self {}
    }

    fn deregister(&mut self, _: &mio::Registry) -> io::Result<()> {
        match *self {}
    }
}

/// Always false: guards are installed with `mprotect` here.
pub(crate) fn guards_use_madvise() -> bool {
    false
}
/// Installs the guard page at the bottom of each of `count` slots of `slot`
/// bytes from `start`, one `mprotect` each.
pub(crate) fn install_guards(
    start: usize,
    slot: usize,
    count: usize,
    page: usize,
) -> io::Result<()> {
    (0..count).try_for_each(|i| install_guard(start + i * slot, page))
}

/// Makes the page at `addr` fault on any access: `mprotect`, the one way
/// off Linux (and with the `portable` feature).
fn install_guard(addr: usize, page: usize) -> io::Result<()> {
    // SAFETY: `addr` is a page of a mapping we own and no one uses yet;
    // PROT_NONE on it.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
