//! [`Exit`]: a child's process id and, once the child has been reaped, its
//! exit status, behind one lock, so that reaping and signalling never race.
//!
//! Once a child is reaped (`waitpid` returned its status), the system may
//! hand its process id to a new, unrelated process. A signal sent to the id
//! after that would hit the stranger. So the child is reaped only with the
//! lock held, its status stored before the lock is let go, and a signal is
//! sent only with the lock held and no status stored.
//!
//! Waiting threads (the blocking pool, the reaper) first wait *without*
//! reaping (`waitid` with `WNOWAIT`, which leaves the child a zombie), and
//! then reap under the lock.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Mutex, MutexGuard};

/// A child process, as shared by the handle that owns it and whatever
/// waits for it on other threads.
#[derive(Debug)]
pub(crate) struct Exit {
    pid: libc::pid_t,
    /// The exit status, once the child has been reaped.
    ///
    /// # Invariant
    ///
    /// `pid` is reaped only while this lock is held, and the status is
    /// stored before it is let go; signals are sent only while it is held
    /// and empty.
    status: Mutex<Option<ExitStatus>>,
}

impl Exit {
    /// The record of the running child `pid`.
    pub(crate) fn new(pid: u32) -> Exit {
        Exit {
            // Process ids are positive `pid_t`s; std hands them out as u32.
            pid: pid as libc::pid_t,
            status: Mutex::new(None),
        }
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid as u32
    }

    fn lock(&self) -> MutexGuard<'_, Option<ExitStatus>> {
        // Nothing panics while the lock is held; a poisoned lock still
        // holds a consistent value.
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The exit status, if the child has been reaped.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        *self.lock()
    }

    /// Reaps the child if it has exited, and returns its status; `None`
    /// while it runs. Never blocks.
    ///
    /// # Errors
    ///
    /// When the child was reaped by someone else (`ECHILD`: `SIGCHLD` set
    /// to be ignored, or a `waitpid(-1, ..)` elsewhere in the process).
    pub(crate) fn try_reap(&self) -> io::Result<Option<ExitStatus>> {
        let mut status = self.lock();
        if let Some(s) = *status {
            return Ok(Some(s));
        }
        loop {
            let mut raw = 0;
            // SAFETY: waitpid writes only to `raw`, a live c_int.
            let r = unsafe { libc::waitpid(self.pid, &mut raw, libc::WNOHANG) };
            if r == 0 {
                return Ok(None);
            }
            if r == self.pid {
                let s = ExitStatus::from_raw(raw);
                *status = Some(s);
                return Ok(Some(s));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(reap_error(e));
            }
        }
    }

    /// Sends `signal` to the child, unless it has been reaped already (then
    /// there is nothing to signal, and this is a success).
    ///
    /// # Errors
    ///
    /// The system's error.
    pub(crate) fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        let status = self.lock();
        if status.is_some() {
            return Ok(());
        }
        // SAFETY: kill takes plain integers. The lock held and no status
        // stored mean `pid` is still our child, running or a zombie.
        if unsafe { libc::kill(self.pid, signal) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks the calling thread until the child exits, then reaps it and
    /// returns its status. For the blocking pool, the reaper, and callers
    /// outside any task.
    ///
    /// # Errors
    ///
    /// As [`try_reap`](Self::try_reap).
    pub(crate) fn wait_blocking(&self) -> io::Result<ExitStatus> {
        if let Some(s) = self.try_reap()? {
            return Ok(s);
        }
        match block_until_exited(self.pid) {
            // ECHILD: another waiter reaped it meanwhile (its status is
            // stored), or someone outside did (`try_reap` says so).
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return self.reap_blocking(),
            Err(e) => return Err(e),
        }
        self.try_reap()?.ok_or_else(|| {
            io::Error::other("yieldloop: the child process exited but could not be reaped")
        })
    }

    /// Where `waitid(.., WNOWAIT)` is refused: reaps with a blocking
    /// `waitpid`, outside the lock. This leaves a window, between the reap
    /// and the storing of the status, in which a signal could reach a
    /// recycled process id; the system would have to reuse the id within
    /// it, which takes a full cycle of process ids.
    fn reap_blocking(&self) -> io::Result<ExitStatus> {
        loop {
            let mut raw = 0;
            // SAFETY: waitpid writes only to `raw`, a live c_int.
            let r = unsafe { libc::waitpid(self.pid, &mut raw, 0) };
            if r == self.pid {
                let s = ExitStatus::from_raw(raw);
                *self.lock() = Some(s);
                return Ok(s);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                // Reaped by another waiter of ours: its status is stored.
                return self.status().ok_or_else(|| reap_error(e));
            }
        }
    }
}

/// Blocks until the child `pid` has exited, leaving it to be reaped.
fn block_until_exited(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain data, for which all zeros is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only into `info`, a live siginfo_t.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The error of a reap that found no child to reap.
fn reap_error(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ECHILD) {
        io::Error::other(
            "yieldloop: the child process was reaped elsewhere (is SIGCHLD ignored, \
             or does other code call waitpid(-1, ..)?)",
        )
    } else {
        e
    }
}
