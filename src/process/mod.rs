//! Child processes: [`Command`] starts them, and waiting for one, or for
//! its output, pauses only the calling task.
//!
//! The API follows `std::process`: [`Command`] builds, [`Child`] is the
//! running process, with its piped standard streams in the fields
//! [`stdin`](Child::stdin), [`stdout`](Child::stdout) and
//! [`stderr`](Child::stderr) ([`ChildStdin`], [`ChildStdout`],
//! [`ChildStderr`]: non-blocking pipes registered with the scheduler,
//! usable through `std::io::Read`/`Write` like a
//! [`TcpStream`](crate::net::TcpStream)).
//!
//! Waiting for the exit uses a pidfd on Linux (5.3 and later): the reactor
//! reports it readable when the process exits, and the task then reaps it.
//! Elsewhere, on older kernels, or with the `portable` feature, a job on
//! the [blocking pool](crate::spawn_blocking) waits for it, and the task
//! parks until the job is done; each child being waited for then holds one
//! pool thread.
//!
//! Two differences from std:
//!
//! - A [`Child`] dropped before it was waited for is still reaped once it
//!   exits, so no zombie is left behind; with
//!   [`Command::kill_on_drop`] it is killed first. This also covers a task
//!   cancelled, or cut short by a [`timeout`](crate::timeout()), while
//!   it waits.
//! - [`Child::kill`] waits for the killed process;
//!   [`Child::start_kill`] only sends the signal.
//!
//! The process reaps its children itself: code that sets `SIGCHLD` to be
//! ignored or calls `waitpid(-1, ..)` takes children away from it, and
//! their waits end in an error.
//!
//! # Examples
//!
//! ```
//! use std::io::{Read, Write};
//! use yieldloop::process::{Command, Stdio};
//!
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let mut child = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
//!     // One task feeds the child while this one reads what it gives back.
//!     let mut stdin = child.stdin.take().unwrap();
//!     let writer = yieldloop::spawn(move || stdin.write_all(&[b'x'; 200_000]));
//!     let mut back = Vec::new();
//!     child.stdout.take().unwrap().read_to_end(&mut back)?;
//!     writer.join().unwrap()?;
//!     assert_eq!(back.len(), 200_000);
//!     assert!(child.wait()?.success());
//!     Ok(())
//! })
//! .unwrap();
//! ```

mod child;
mod command;
mod exit;
mod output;
mod pipes;
mod reaper;

pub use child::Child;
pub use command::Command;
pub use pipes::{ChildStderr, ChildStdin, ChildStdout};
pub use std::process::{ExitStatus, Output, Stdio};
