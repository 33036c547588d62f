//! The platform, chosen once: every call that differs between Linux and
//! the other systems (macOS, FreeBSD), and every way Linux does a job
//! better, lives here behind one small API; the rest of the crate calls it
//! and never names an operating system.
//!
//! Two choices are made, each once:
//!
//! - **The fast paths or the portable ones.** On Linux (unless the
//!   `portable` feature asks for the portable paths, to test them there)
//!   [`linux`] gives the precise timer (`timerfd`), child exits as
//!   readiness (`pidfd`), guard pages that do not split mappings
//!   (`MADV_GUARD_INSTALL`) and the coarse clock; elsewhere `portable`
//!   gives the same names with what every Unix has (or nothing: a timer
//!   and a pidfd that cannot be made, so the callers take their other
//!   way).
//! - **Facts of the system** that hold whatever the feature: how a
//!   chunk of stacks is mapped and its memory given back (`memory`), the
//!   clock cheapest to read (`clock`), CPU pinning (`affinity`), the
//!   load-balancing `SO_REUSEPORT`, and the unit of the poll's timeout.
//!
//! Beside them, one more choice made once, by the build rather than the
//! system: the types threads share (`threads`), std's, or the `loom`
//! model checker's under `--cfg loom`.
//!
//! And one thing only Linux has: the feature `hook`, which defines the GNU
//! C library's entry points. Elsewhere the build stops with a message
//! naming the feature, and [`linux_only!`] leaves the hook's items out, so
//! that message is all the build reports.

use std::io;

#[cfg(not(unix))]
compile_error!(
    "yieldloop supports Unix-like systems (Linux, macOS, FreeBSD); Windows is not supported"
);

#[cfg(all(feature = "hook", not(target_os = "linux")))]
compile_error!(
    "yieldloop's feature `hook` (blocking socket and sleep calls made cooperative inside \
     tasks) is Linux only: it defines the GNU C library's entry points; turn the feature \
     off on this target"
);

/// The items given, on Linux only: the hook's modules (see the module
/// docs), which have no portable form.
#[cfg(feature = "hook")]
macro_rules! linux_only {
    ($($item:item)*) => {$(
        #[cfg(target_os = "linux")]
        $item
    )*};
}
#[cfg(feature = "hook")]
pub(crate) use linux_only;

mod affinity;
mod clock;
mod memory;
#[allow(unused_imports)]
pub(crate) mod threads;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use linux as chosen;

#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
mod portable;
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
use portable as chosen;

pub(crate) use affinity::{allowed_cpus, pin_current_thread};
pub(crate) use chosen::{guards_use_madvise, install_guards, PidFd, PreciseTimer};
pub(crate) use clock::WATCH_CLOCK;
pub(crate) use memory::{CHUNK_FLAGS, COUNTS_MAPPINGS, TRIM_ACROSS_GUARDS, TRIM_ADVICE};

/// Whether the poll takes its timeout in whole milliseconds (`epoll_wait`,
/// which mio rounds up to), rather than as given (`kevent`).
pub(crate) const POLL_TIMEOUT_IN_MILLIS: bool =
    cfg!(any(target_os = "linux", target_os = "android"));

/// Lets several sockets listen on one address, the kernel spreading the
/// connections among them: `SO_REUSEPORT`, or on FreeBSD its
/// load-balancing kind (the plain one there gives every connection to one
/// of the sockets).
///
/// # Errors
///
/// The system's error.
pub(crate) fn set_reuse_port(socket: &socket2::Socket) -> io::Result<()> {
    #[cfg(target_os = "freebsd")]
    return socket.set_reuse_port_lb(true);
    #[cfg(not(target_os = "freebsd"))]
    socket.set_reuse_port(true)
}
