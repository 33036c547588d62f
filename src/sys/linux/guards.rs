//! Guard pages with `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+), which
//! marks pages as faulting without splitting the mapping, so a chunk of
//! stacks stays one mapping however many stacks it holds; a chunk's guards
//! go in with one `process_madvise` call where the kernel accepts it. On
//! older kernels the fallback is `mprotect(PROT_NONE)`, which splits the
//! mapping in two per stack. The environment variable
//! `YIELDLOOP_STACK_GUARD=mprotect` forces the fallback, to test or compare
//! it.

use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// `MADV_GUARD_INSTALL`, Linux 6.13+; not yet in every libc release.
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// How guards are installed, decided by the first chunk and then kept.
static GUARD_MODE: AtomicU8 = AtomicU8::new(GUARD_UNKNOWN);
const GUARD_UNKNOWN: u8 = 0;
const GUARD_MADVISE: u8 = 1;
const GUARD_MPROTECT: u8 = 2;

/// Installs the guard page at the bottom of each of `count` slots of `slot`
/// bytes from `start`: in one system call where the kernel allows it (the
/// call costs about as much as the page-table walk each guard needs), one
/// call per guard otherwise.
pub(crate) fn install_guards(
    start: usize,
    slot: usize,
    count: usize,
    page: usize,
) -> io::Result<()> {
    let mut done = 0;
    if GUARD_MODE.load(Ordering::Relaxed) == GUARD_UNKNOWN {
        // The first guard of the process finds out which way works.
        install_guard(start, page)?;
        done = 1;
    }
    if GUARD_MODE.load(Ordering::Relaxed) == GUARD_MADVISE && count - done > 1 {
        done += guards_in_one_call(start + done * slot, slot, count - done, page);
    }
    (done..count).try_for_each(|i| install_guard(start + i * slot, page))
}

/// `process_madvise(2)` on our own process with one range per guard page;
/// returns how many of the `count` guards it installed (0 when the kernel
/// does not offer it, which is then not asked again).
///
/// The process is named by `PIDFD_SELF` (Linux 6.15+), so no descriptor is
/// opened, and a forked child names itself.
fn guards_in_one_call(start: usize, slot: usize, count: usize, page: usize) -> usize {
    use std::sync::atomic::AtomicBool;

    /// `PIDFD_SELF` (`PIDFD_SELF_THREAD`): "the calling thread", whose
    /// memory is the whole process's; not yet in every libc release.
    const PIDFD_SELF: libc::c_int = -10_000;
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return 0;
    }
    let ranges: Vec<libc::iovec> = (0..count)
        .map(|i| libc::iovec {
            iov_base: (start + i * slot) as *mut libc::c_void,
            iov_len: page,
        })
        .collect();
    // SAFETY: every range is a page of the chunk just mapped, which no one
    // uses yet, and `ranges` outlives the call; PIDFD_SELF names this
    // process (older kernels refuse it with EBADF and touch nothing).
    let r = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            PIDFD_SELF,
            ranges.as_ptr(),
            ranges.len(),
            MADV_GUARD_INSTALL,
            0,
        )
    };
    match usize::try_from(r) {
        Ok(bytes) => (bytes / page).min(count),
        Err(_) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            0
        }
    }
}

/// Makes the page at `addr` fault on any access.
fn install_guard(addr: usize, page: usize) -> io::Result<()> {
    let mut mode = GUARD_MODE.load(Ordering::Relaxed);
    if mode == GUARD_UNKNOWN
        && std::env::var_os("YIELDLOOP_STACK_GUARD").is_some_and(|v| v == "mprotect")
    {
        // Lets the fallback be exercised (and compared) on new kernels.
        mode = GUARD_MPROTECT;
        GUARD_MODE.store(GUARD_MPROTECT, Ordering::Relaxed);
    }
    if mode != GUARD_MPROTECT {
        // SAFETY: `addr` is a page of a mapping we own and no one uses yet.
        let r = unsafe { libc::madvise(addr as *mut libc::c_void, page, MADV_GUARD_INSTALL) };
        if r == 0 {
            GUARD_MODE.store(GUARD_MADVISE, Ordering::Relaxed);
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // An unknown advice value means an older kernel: fall back for good.
        if mode == GUARD_MADVISE || err.raw_os_error() != Some(libc::EINVAL) {
            return Err(err);
        }
        GUARD_MODE.store(GUARD_MPROTECT, Ordering::Relaxed);
    }
    // SAFETY: as above; PROT_NONE on our own unused page.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// True if guard pages are installed with `MADV_GUARD_INSTALL` (one mapping
/// per chunk), false if with `mprotect` (two mappings per stack) or not yet
/// known.
pub(crate) fn guards_use_madvise() -> bool {
    GUARD_MODE.load(Ordering::Relaxed) == GUARD_MADVISE
}
