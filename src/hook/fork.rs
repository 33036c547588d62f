//! `fork` from a process whose threads run schedulers: the child gets one
//! thread and a copy of every scheduler's memory, including the tasks of
//! the thread that forked and the reactor, whose poller (an `epoll`
//! descriptor) it shares with the parent. It must never run that copy:
//! its tasks would run twice, and its poller calls would take the
//! parent's events and registrations. So the hook's `fork` marks the
//! child, and from then on every intercepted call in the child is the
//! plain one, and a `close` there leaves the reactor alone.
//!
//! The mark is set in the child by the hook's own `fork`, the one the
//! caller reaches as it reaches the other intercepted calls (Rust code
//! always; a shared library when the executable exports the hook's
//! symbols). A child made otherwise (a raw `clone`, `vfork`, the C
//! library's `posix_spawn`) is not marked; those are followed by `exec`
//! at once.

use std::sync::atomic::{AtomicBool, Ordering};

use libc::pid_t;

use super::real;

/// True in a child process made by `fork` (and in its own children).
static FORKED: AtomicBool = AtomicBool::new(false);

/// True in a child process made by `fork` from this program: intercepted
/// calls are then the plain ones. One load of a process-wide word.
#[inline(always)]
pub(super) fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// `fork(2)`: the C library's, and in the child the mark that makes every
/// intercepted call from then on the plain one (see the [module
/// docs](self)). The parent is untouched.
///
/// # Safety
///
/// As for `fork(2)`.
#[no_mangle]
pub unsafe extern "C" fn fork() -> pid_t {
    // SAFETY: the caller's contract, passed on.
    let pid = unsafe { real::fork() };
    if pid == 0 {
        FORKED.store(true, Ordering::Relaxed);
    }
    pid
}
