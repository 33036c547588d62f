//! [`Child`]: a running child process, its pipes, and waiting for it.
//!
//! How a task waits for the exit:
//!
//! ```text
//!   Linux (pidfd)                       elsewhere, or `portable`
//!   ─────────────                       ────────────────────────
//!   pidfd registered with the reactor   a blocking-pool job:
//!   try to reap (waitpid WNOHANG)         waitid(WEXITED | WNOWAIT)
//!   not yet: pause for "readable" ◀─┐     then reap under the lock
//!   the exit makes it readable ─────┘   the task parks on the job's slot
//! ```
//!
//! A `Child` dropped before its process was reaped (never waited for, or
//! its task cancelled mid-wait) hands the process to the
//! [reaper](super::reaper), so no zombie is left behind.

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;

use super::exit::Exit;
use super::pipes::{ChildStderr, ChildStdin, ChildStdout};
use super::reaper::{self, PoolWait};
use crate::io::PausingIo;
use crate::sys::PidFd;

/// A child process started by [`Command::spawn`](super::Command::spawn).
///
/// Waiting for it ([`wait`](Self::wait), [`kill`](Self::kill)) pauses only
/// the calling task. Its pipes, when [piped](super::Stdio::piped), are in
/// the public fields; take them out (`child.stdout.take()`) to use them in
/// other tasks.
///
/// Unlike std's, dropping a `Child` that has not been waited for never
/// leaves a zombie: the process is reaped in the background once it exits.
/// It keeps running unless the command was built with
/// [`kill_on_drop(true)`](super::Command::kill_on_drop).
///
/// `!Send`: its pipes are registered with this thread's scheduler.
///
/// ```compile_fail,E0277
/// fn must_be_send<T: Send>(_: T) {}
/// yieldloop::run(|| {
///     let child = yieldloop::process::Command::new("true").spawn().unwrap();
///     must_be_send(child);
/// });
/// ```
///
/// # Examples
///
/// ```
/// use yieldloop::process::Command;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn()?;
///     let status = child.wait()?;
///     assert_eq!(status.code(), Some(3));
///     Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
pub struct Child {
    /// The writing end of the child's standard input, if piped.
    pub stdin: Option<ChildStdin>,
    /// The reading end of the child's standard output, if piped.
    pub stdout: Option<ChildStdout>,
    /// The reading end of the child's standard error, if piped.
    pub stderr: Option<ChildStderr>,
    /// The process id and, once reaped, the exit status; shared with the
    /// threads that may wait for the process.
    exit: Arc<Exit>,
    /// How a task waits for the exit.
    waiter: Waiter,
    /// Whether dropping this handle before the exit kills the process.
    kill_on_drop: bool,
}

/// How a task waits for its child's exit.
#[derive(Debug)]
enum Waiter {
    /// A pidfd registered with the scheduler, readable once the child has
    /// exited (never off Linux: see `sys`).
    PidFd(PausingIo<PidFd>),
    /// A blocking-pool job waiting for the exit, once a wait started one.
    /// Kept across a wait that was cut short (a timeout), so the next wait
    /// takes the same job's outcome.
    Pool(Option<PoolWait>),
}

impl Waiter {
    /// The best way to wait for `pid` here: a pidfd where the kernel has
    /// them, else the pool.
    fn for_pid(pid: u32) -> io::Result<Waiter> {
        if let Ok(fd) = PidFd::open(pid) {
            return Ok(Waiter::PidFd(PausingIo::from_nonblocking(fd)?));
        }
        Ok(Waiter::Pool(None))
    }
}

impl Child {
    /// Takes over a child std just started: registers its pipes and the
    /// means to wait for it with the current scheduler.
    ///
    /// # Errors
    ///
    /// If a registration fails; the process is then killed and reaped.
    pub(crate) fn new(mut std: std::process::Child, kill_on_drop: bool) -> io::Result<Child> {
        let pid = std.id();
        // Built up field by field with `kill_on_drop` set, so that a
        // failure halfway drops a `Child` that kills and reaps the process.
        let mut child = Child {
            stdin: None,
            stdout: None,
            stderr: None,
            exit: Arc::new(Exit::new(pid)),
            waiter: Waiter::Pool(None),
            kill_on_drop: true,
        };
        child.waiter = Waiter::for_pid(pid)?;
        child.stdin = std.stdin.take().map(ChildStdin::new).transpose()?;
        child.stdout = std.stdout.take().map(ChildStdout::new).transpose()?;
        child.stderr = std.stderr.take().map(ChildStderr::new).transpose()?;
        child.kill_on_drop = kill_on_drop;
        // What is left of std's handle holds nothing that needs closing or
        // waiting for: the process is ours to reap now.
        drop(std);
        Ok(child)
    }

    /// The child's process id.
    ///
    /// Once the child has been reaped, the system may give the id to
    /// another process.
    pub fn id(&self) -> u32 {
        self.exit.pid()
    }

    /// Waits for the child to exit and returns its status, pausing only the
    /// calling task (outside any task, it blocks the thread).
    ///
    /// The child's standard input, if piped and still here, is closed
    /// first, so a child reading it to the end does not wait for input that
    /// will never come. Calling `wait` again returns the same status.
    ///
    /// Cut short (by a [`timeout`](crate::timeout()), say), it leaves the
    /// child running; a later `wait` picks up where this one stopped, and a
    /// `Child` dropped instead is still reaped.
    ///
    /// # Errors
    ///
    /// When something else reaped the child (`SIGCHLD` set to be
    /// ignored, or a `waitpid(-1, ..)` elsewhere in the process), or, on the
    /// portable path, when no blocking-pool thread could wait for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let start = Instant::now();
    ///     let ticker = yieldloop::spawn(|| {
    ///         let mut ticks = 0;
    ///         while ticks < 5 {
    ///             yieldloop::sleep(Duration::from_millis(10));
    ///             ticks += 1;
    ///         }
    ///         ticks
    ///     });
    ///     // The ticker keeps ticking while this task waits.
    ///     let status = Command::new("sleep").arg("0.1").spawn()?.wait()?;
    ///     assert!(status.success());
    ///     assert!(start.elapsed() >= Duration::from_millis(100));
    ///     assert_eq!(ticker.join().unwrap(), 5);
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(s) = self.exit.try_reap()? {
            return Ok(s);
        }
        if !crate::scheduler::coroutine::in_task() {
            return self.exit.wait_blocking();
        }
        match &mut self.waiter {
            Waiter::PidFd(pidfd) => {
                let exit = &self.exit;
                pidfd.read_with(|_| {
                    exit.try_reap()?
                        .ok_or_else(|| io::ErrorKind::WouldBlock.into())
                })
            }
            Waiter::Pool(job) => {
                let slot = job
                    .get_or_insert_with(|| reaper::wait_on_pool(self.exit.clone()))
                    .clone();
                // A panic in the job is impossible (it only makes system
                // calls); the error is a job that never ran, or this task
                // being torn down. Either way the job stays on record.
                let outcome = slot.wait().map_err(|e| {
                    io::Error::other(format!("yieldloop: waiting for the child process: {e}"))
                })?;
                *job = None;
                outcome
            }
        }
    }

    /// Returns the exit status if the child has exited (reaping it), or
    /// `None` if it is still running. Never pauses.
    ///
    /// # Errors
    ///
    /// When something else reaped the child; see [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let mut child = Command::new("sleep").arg("5").kill_on_drop(true).spawn()?;
    ///     assert!(child.try_wait()?.is_none());
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.exit.try_reap()
    }

    /// Sends `SIGKILL` to the child and returns at once, without waiting.
    /// A child that has exited and been reaped already is left alone, and
    /// that is a success, as with std's `kill` in recent Rust.
    ///
    /// # Errors
    ///
    /// The system's error for the signal.
    pub fn start_kill(&mut self) -> io::Result<()> {
        self.exit.signal(libc::SIGKILL)
    }

    /// Sends `SIGKILL` to the child and waits for it to exit, pausing only
    /// the calling task, so that the process is gone when this returns.
    ///
    /// Unlike std's `kill`, which only sends the signal (that is
    /// [`start_kill`](Self::start_kill) here), this also reaps the child.
    /// A child that has exited already is a success.
    ///
    /// # Errors
    ///
    /// As [`start_kill`](Self::start_kill) and [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::unix::process::ExitStatusExt;
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let mut child = Command::new("sleep").arg("60").spawn()?;
    ///     child.kill()?;
    ///     assert_eq!(child.wait()?.signal(), Some(9)); // SIGKILL
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn kill(&mut self) -> io::Result<()> {
        self.start_kill()?;
        self.wait().map(drop)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.exit.status().is_some() {
            return;
        }
        if self.kill_on_drop {
            let _ = self.exit.signal(libc::SIGKILL);
        }
        // Already exited: reaped here and now. (An error means someone
        // else reaped it: nothing left to do.)
        if !matches!(self.exit.try_reap(), Ok(None)) {
            return;
        }
        match &self.waiter {
            Waiter::PidFd(pidfd) => {
                reaper::orphan(self.exit.clone(), pidfd.get_ref().try_clone().ok())
            }
            // The job started by a wait reaps it.
            Waiter::Pool(Some(_)) => {}
            Waiter::Pool(None) => reaper::orphan(self.exit.clone(), None),
        }
    }
}
