//! [`Command`]: std's process builder, whose children are waited for
//! without blocking the thread.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Output, Stdio};

use super::child::Child;
use super::output::read_both;

/// A process builder, shaped like [`std::process::Command`], whose
/// [`spawn`](Self::spawn) returns a [`Child`] that tasks wait for without
/// blocking the thread.
///
/// It wraps a std `Command`; [`as_std_mut`](Self::as_std_mut) reaches the
/// platform extensions (`CommandExt::process_group`, `uid`, `pre_exec`, ..).
///
/// # Examples
///
/// ```
/// use yieldloop::process::Command;
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let out = Command::new("sh").args(["-c", "echo $GREETING"]).env("GREETING", "hi").output()?;
///     assert!(out.status.success());
///     assert_eq!(out.stdout, b"hi\n");
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct Command {
    std: std::process::Command,
    /// Whether children left running when their [`Child`] drops are killed.
    kill_on_drop: bool,
    /// Which of stdin, stdout and stderr were set, so that
    /// [`output`](Self::output) chooses only the others.
    stdio_set: [bool; 3],
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("std", &self.std)
            .field("kill_on_drop", &self.kill_on_drop)
            .finish()
    }
}

impl Command {
    /// A builder for running `program`, found on `PATH` unless it is a
    /// path; see [`std::process::Command::new`].
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command::from(std::process::Command::new(program))
    }

    /// Adds one argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.std.arg(arg);
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(&mut self, key: impl AsRef<OsStr>, val: impl AsRef<OsStr>) -> &mut Command {
        self.std.env(key, val);
        self
    }

    /// Sets several environment variables for the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.envs(vars);
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    /// Starts the child with an empty environment (plus what
    /// [`env`](Self::env) adds after).
    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    /// Sets the child's standard input: [`Stdio::piped`] for a
    /// [`ChildStdin`](super::ChildStdin) in [`Child::stdin`],
    /// [`Stdio::null`], or [`Stdio::inherit`] (the default for
    /// [`spawn`](Self::spawn) and [`status`](Self::status)).
    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdin(cfg);
        self.stdio_set[0] = true;
        self
    }

    /// Sets the child's standard output; as [`stdin`](Self::stdin).
    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdout(cfg);
        self.stdio_set[1] = true;
        self
    }

    /// Sets the child's standard error; as [`stdin`](Self::stdin).
    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stderr(cfg);
        self.stdio_set[2] = true;
        self
    }

    /// Whether a child still running when its [`Child`] is dropped gets
    /// `SIGKILL` (default `false`: it runs on, and is reaped once it
    /// exits). Also applies when the task waiting for it is cancelled, or
    /// [`output`](Self::output) is cut short by a timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| {
    ///     let mut cmd = Command::new("sleep");
    ///     cmd.arg("60").kill_on_drop(true);
    ///     // Cut short: the child is killed and reaped, not left behind.
    ///     let r = yieldloop::timeout(Duration::from_millis(50), || cmd.status());
    ///     assert!(r.is_err());
    /// });
    /// ```
    pub fn kill_on_drop(&mut self, kill: bool) -> &mut Command {
        self.kill_on_drop = kill;
        self
    }

    /// The program this runs.
    pub fn get_program(&self) -> &OsStr {
        self.std.get_program()
    }

    /// The std builder inside.
    pub fn as_std(&self) -> &std::process::Command {
        &self.std
    }

    /// The std builder inside, for the settings this type does not repeat
    /// (`std::os::unix::process::CommandExt`). Streams set through it are
    /// not known to [`output`](Self::output), which then sets its own.
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        &mut self.std
    }

    /// Starts the child.
    ///
    /// Starting a process is a short blocking call (the system's
    /// `posix_spawn` or `fork` and `exec`), made on the calling thread.
    ///
    /// # Errors
    ///
    /// std's error for the start, e.g. [`io::ErrorKind::NotFound`] for a
    /// program that does not exist; [`io::ErrorKind::Unsupported`] outside
    /// [`run`](crate::run), where there is no scheduler to register the
    /// child with (nothing is started then).
    pub fn spawn(&mut self) -> io::Result<Child> {
        if !crate::scheduler::has_scheduler() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "yieldloop: child processes can only be spawned inside yieldloop::run",
            ));
        }
        let std = self.std.spawn()?;
        Child::new(std, self.kill_on_drop)
    }

    /// Runs the child to its end with its standard streams inherited, and
    /// returns its exit status, pausing only the calling task.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn) and [`Child::wait`].
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     assert!(Command::new("true").status()?.success());
    ///     assert_eq!(Command::new("false").status()?.code(), Some(1));
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn status(&mut self) -> io::Result<ExitStatus> {
        let mut child = self.spawn()?;
        child.wait()
    }

    /// Runs the child to its end, collecting its standard output and error,
    /// and returns them with its exit status, pausing only the calling
    /// task.
    ///
    /// The two pipes are read at the same time, so a child that fills one
    /// while nobody reads it does not stall. Streams not set on this
    /// builder are chosen as std's `output` does: standard input from
    /// `/dev/null`, output and error piped. They are set on the builder,
    /// and stay so for later calls.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn) and [`Child::wait`], or an error reading
    /// the pipes.
    ///
    /// # Panics
    ///
    /// When called outside a task.
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::process::Command;
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let out = Command::new("sh").args(["-c", "echo out; echo err >&2; exit 2"]).output()?;
    ///     assert_eq!(out.status.code(), Some(2));
    ///     assert_eq!(out.stdout, b"out\n");
    ///     assert_eq!(out.stderr, b"err\n");
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn output(&mut self) -> io::Result<Output> {
        if !self.stdio_set[0] {
            self.stdin(Stdio::null());
        }
        if !self.stdio_set[1] {
            self.stdout(Stdio::piped());
        }
        if !self.stdio_set[2] {
            self.stderr(Stdio::piped());
        }
        let mut child = self.spawn()?;
        drop(child.stdin.take());
        let (stdout, stderr) = read_both(child.stdout.take(), child.stderr.take())?;
        let status = child.wait()?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }
}

/// Wraps a std builder. What it says of the standard streams is kept, but
/// not known here: [`output`](Command::output) sets its own.
impl From<std::process::Command> for Command {
    fn from(std: std::process::Command) -> Command {
        Command {
            std,
            kill_on_drop: false,
            stdio_set: [false; 3],
        }
    }
}
