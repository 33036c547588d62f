//! Unix signals as something a task can wait for.
//!
//! A signal handler may do almost nothing safely, least of all touch a
//! scheduler. So the handlers here (installed by the `signal-hook` crate)
//! only set a flag and write one byte to a socket pair, a *self-pipe*, that
//! belongs to one listener. The read end of that pipe is registered with
//! the scheduler's reactor like any socket, and a task waiting in
//! [`Signals::recv`] pauses until a byte arrives, then reads the flags.
//! Only the calling task pauses; the thread goes on running the others.
//!
//! ```text
//!  kernel ─ SIGTERM ─▶ handler: set flag[SIGTERM], write 1 byte ─▶ self-pipe
//!                                                                    │ readable
//!  task: recv() ─ Op::ReadReady ─▶ scheduler ◀───── epoll/kqueue ────┘
//!        ◀──────── Resume::Ready ─ drain pipe, read flags → SIGTERM
//! ```
//!
//! Every [`Signals`] value has its own pipe and its own flags, so each one
//! listening for a signal sees each arrival of it: two tasks, or tasks on
//! two [`Runtime`](crate::Runtime) workers, can all wait for `SIGTERM` and
//! all be told.
//!
//! Signal numbers are plain `i32`s, as the system has them; the usual
//! ones are here as constants ([`SIGINT`], [`SIGTERM`], [`SIGHUP`],
//! [`SIGUSR1`], [`SIGUSR2`], [`SIGQUIT`], [`SIGCHLD`], [`SIGWINCH`]), and
//! any other number the system knows (`libc::SIGALRM`, a real-time signal)
//! works too.
//!
//! # Examples
//!
//! Wait for `SIGUSR1` in one task while another goes on working (here a
//! thread sends the signal; in real life it is `kill -USR1 <pid>`):
//!
//! ```
//! use std::time::Duration;
//! use yieldloop::signal::{Signals, SIGUSR1};
//!
//! yieldloop::run(|| -> std::io::Result<()> {
//!     let mut signals = Signals::new([SIGUSR1])?;
//!     let worker = yieldloop::spawn(|| {
//!         for _ in 0..3 {
//!             yieldloop::sleep(Duration::from_millis(5)); // keeps running
//!         }
//!     });
//!     std::thread::spawn(|| {
//!         std::thread::sleep(Duration::from_millis(30));
//!         signal_hook::low_level::raise(SIGUSR1).unwrap();
//!     });
//!     assert_eq!(signals.recv()?, SIGUSR1); // pauses this task only
//!     worker.join().unwrap();
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! # Caveats
//!
//! - **A signal once listened for keeps its handler.** The system's default
//!   action (ending the process, for `SIGINT` and `SIGTERM`) is not put back
//!   when the last listener is dropped: from then on the signal is simply
//!   ignored while nobody listens. A program that waits for one `SIGINT`
//!   with [`ctrl_c`] and then goes on running no longer stops at the next
//!   Ctrl-C unless it listens again (or exits).
//! - Arrivals are counted per listener, not queued: two `SIGHUP`s that
//!   arrive before the listener looks are reported once. Signals that come
//!   before a listener exists are not reported to it.
//! - Signals whose handling cannot be taken over or would break the
//!   process (`SIGKILL`, `SIGSTOP`, `SIGILL`, `SIGFPE`, `SIGSEGV`) are
//!   refused with an error.

use std::collections::VecDeque;
use std::fmt;
use std::io;

use signal_hook_mio::v1_0::Signals as SelfPipe;

use crate::io::{outside_run, PausingIo};
use crate::scheduler;

/// Interrupt from the keyboard (Ctrl-C). Ends the process by default.
pub const SIGINT: i32 = libc::SIGINT;
/// A polite request to end (the default of `kill`). Ends the process by
/// default.
pub const SIGTERM: i32 = libc::SIGTERM;
/// The terminal hung up; daemons take it as "reload your configuration".
/// Ends the process by default.
pub const SIGHUP: i32 = libc::SIGHUP;
/// For the program's own use. Ends the process by default.
pub const SIGUSR1: i32 = libc::SIGUSR1;
/// For the program's own use. Ends the process by default.
pub const SIGUSR2: i32 = libc::SIGUSR2;
/// Quit from the keyboard (Ctrl-\\). Ends the process with a core dump by
/// default.
pub const SIGQUIT: i32 = libc::SIGQUIT;
/// A child process stopped or ended. Ignored by default.
pub const SIGCHLD: i32 = libc::SIGCHLD;
/// The terminal changed size. Ignored by default.
pub const SIGWINCH: i32 = libc::SIGWINCH;

/// Signal numbers from here up are refused: no system has them, and the
/// table of flags behind each listener stops below this.
const SIGNAL_LIMIT: i32 = 128;

/// A listener for a set of Unix signals, whose [`recv`](Self::recv) pauses
/// only the calling task until one of them arrives.
///
/// Each `Signals` value sees every arrival of the signals it listens for,
/// whatever other listeners exist in the process. It belongs to the
/// scheduler of the thread that created it (it is not `Send`), and
/// dropping it removes its handlers' work: nothing more is written to its
/// pipe (but see the [module caveats](self#caveats)).
///
/// It is also an endless [`Iterator`] of signal numbers, each `next` pausing
/// like `recv`.
///
/// # Examples
///
/// ```
/// use yieldloop::signal::{Signals, SIGHUP, SIGUSR2};
///
/// yieldloop::run(|| -> std::io::Result<()> {
///     let mut signals = Signals::new([SIGHUP, SIGUSR2])?;
///     signal_hook::low_level::raise(SIGUSR2)?;
///     for sig in &mut signals {
///         match sig {
///             SIGHUP => println!("reloading"),
///             _ => break, // SIGUSR2: stop listening
///         }
///     }
///     Ok(())
/// })
/// .unwrap();
/// ```
///
/// A `Signals` stays on its thread:
///
/// ```compile_fail,E0277
/// use yieldloop::signal::{Signals, SIGUSR1};
///
/// let signals = yieldloop::run(|| Signals::new([SIGUSR1]));
/// std::thread::spawn(move || drop(signals));
/// ```
pub struct Signals {
    /// signal-hook's handlers and the self-pipe they write to, registered
    /// with the scheduler of the thread that made the listener, the only
    /// one whose tasks may wait on it (which also keeps `Signals` on that
    /// thread).
    pipe: PausingIo<SelfPipe>,
    /// Signals that arrived and have not been handed out yet. One look at
    /// the flags may find several; they are handed out in turn, so a signal
    /// with a low number arriving over and over cannot hide the others.
    arrived: VecDeque<i32>,
    /// The signals listened for, for `Debug`.
    listening: Vec<i32>,
}

impl Signals {
    /// Starts listening for each signal in `signals`.
    ///
    /// Only arrivals from now on are reported. A signal number listed
    /// twice counts once; an empty list gives a listener that never hears
    /// anything until [`add_signal`](Self::add_signal).
    ///
    /// # Errors
    ///
    /// - [`io::ErrorKind::Unsupported`] outside [`run`](crate::run) (or a
    ///   [`Runtime`](crate::Runtime) worker): there is no scheduler to
    ///   register with.
    /// - [`io::ErrorKind::InvalidInput`] for a signal that cannot be
    ///   listened for (`SIGKILL`, `SIGSTOP`, `SIGILL`, `SIGFPE`, `SIGSEGV`)
    ///   or a number that is no signal; nothing is registered then.
    /// - The system's error if the self-pipe cannot be made (out of
    ///   descriptors).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use yieldloop::signal::{Signals, SIGTERM};
    ///
    /// // Outside `run`: an error, not a panic.
    /// assert_eq!(Signals::new([SIGTERM]).unwrap_err().kind(), ErrorKind::Unsupported);
    ///
    /// yieldloop::run(|| {
    ///     let refused = Signals::new([SIGTERM, libc::SIGKILL]).unwrap_err();
    ///     assert_eq!(refused.kind(), ErrorKind::InvalidInput);
    ///     println!("{refused}"); // yieldloop: signal 9 (SIGKILL) cannot be listened for ...
    /// });
    /// ```
    pub fn new(signals: impl IntoIterator<Item = i32>) -> io::Result<Signals> {
        let listening: Vec<i32> = signals.into_iter().collect();
        listening.iter().try_for_each(|&sig| check_signal(sig))?;
        // Look for the scheduler before installing any handler, so that a
        // call outside `run` changes nothing in the process.
        if !scheduler::has_scheduler() {
            return Err(outside_run());
        }
        // signal-hook-mio does not show the pipe's descriptor (nor would
        // the reactor need it: it keeps one only to accept connections).
        let pipe = PausingIo::without_fd(SelfPipe::new(&listening)?)?;
        let mut listening = listening;
        listening.sort_unstable();
        listening.dedup();
        Ok(Signals {
            pipe,
            arrived: VecDeque::new(),
            listening,
        })
    }

    /// Starts listening for one more signal.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a signal that cannot be listened
    /// for, as in [`new`](Self::new); the system's error if the handler
    /// cannot be installed.
    pub fn add_signal(&mut self, signal: i32) -> io::Result<()> {
        check_signal(signal)?;
        self.pipe.get_ref().add_signal(signal)?;
        if let Err(at) = self.listening.binary_search(&signal) {
            self.listening.insert(at, signal);
        }
        Ok(())
    }

    /// Pauses the calling task until one of the signals arrives, and
    /// returns its number. A signal that arrived since the last call is
    /// returned at once.
    ///
    /// Inside a [`timeout`](crate::timeout) scope the wait ends with the
    /// scope; the listener stays usable.
    ///
    /// # Errors
    ///
    /// - [`io::ErrorKind::Unsupported`] when called outside a task of the
    ///   scheduler the listener was created in (for example after the
    ///   [`run`](crate::run) that made it has returned).
    /// - [`io::ErrorKind::Interrupted`] if the task is being cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use yieldloop::signal::{Signals, SIGWINCH};
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let mut resized = Signals::new([SIGWINCH])?;
    ///     // Nothing comes: give up after 20 ms.
    ///     let quiet = yieldloop::timeout(Duration::from_millis(20), || resized.recv());
    ///     assert!(quiet.is_err());
    ///     signal_hook::low_level::raise(SIGWINCH)?;
    ///     assert_eq!(resized.recv()?, SIGWINCH);
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn recv(&mut self) -> io::Result<i32> {
        crate::task::coop::proceed();
        loop {
            if let Some(sig) = self.try_recv() {
                return Ok(sig);
            }
            // The pipe was emptied by `try_recv` before it read the flags
            // (the handler sets a flag before it writes its byte), so any
            // signal it missed writes a byte after that, and the
            // edge-triggered registration reports it: no arrival is lost
            // between the look and the pause. (Outside a task of the
            // listener's scheduler this is the `Unsupported` error.)
            self.pipe.readable()?;
        }
    }

    /// The number of a signal that has arrived since it was last handed
    /// out, if any; never pauses (and works outside a task too).
    ///
    /// # Examples
    ///
    /// ```
    /// use yieldloop::signal::{Signals, SIGUSR1};
    ///
    /// yieldloop::run(|| -> std::io::Result<()> {
    ///     let mut signals = Signals::new([SIGUSR1])?;
    ///     assert_eq!(signals.try_recv(), None);
    ///     signal_hook::low_level::raise(SIGUSR1)?;
    ///     assert_eq!(signals.try_recv(), Some(SIGUSR1));
    ///     assert_eq!(signals.try_recv(), None); // two raises would also give one
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn try_recv(&mut self) -> Option<i32> {
        if self.arrived.is_empty() {
            self.arrived.extend(self.pipe.get_mut().pending());
        }
        self.arrived.pop_front()
    }

    /// The signals that have arrived and not been handed out yet, each
    /// once; never pauses.
    pub fn pending(&mut self) -> impl Iterator<Item = i32> + '_ {
        std::iter::from_fn(move || self.try_recv())
    }
}

impl Iterator for Signals {
    type Item = i32;

    /// Pauses like [`recv`](Signals::recv); `None` only where `recv` fails
    /// (outside a task of its scheduler, or while the task is cancelled).
    fn next(&mut self) -> Option<i32> {
        self.recv().ok()
    }
}

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signals")
            .field("listening", &self.listening)
            .field("io", &self.pipe.io_id().key)
            .field("arrived", &self.arrived)
            .finish()
    }
}

/// Pauses the calling task until the next `SIGINT` (Ctrl-C in a terminal).
///
/// Only a `SIGINT` that arrives after the call counts. The listener lives
/// for the call only: to catch every Ctrl-C, keep a [`Signals`] instead.
/// Once this has been called, a `SIGINT` no longer ends the process by
/// itself (see the [module caveats](self#caveats)).
///
/// # Errors
///
/// As for [`Signals::new`] and [`Signals::recv`]: outside a task,
/// [`io::ErrorKind::Unsupported`].
///
/// # Examples
///
/// ```no_run
/// yieldloop::run(|| {
///     let server = yieldloop::spawn(|| { /* serve */ });
///     yieldloop::signal::ctrl_c().unwrap();
///     eprintln!("shutting down");
///     server.cancel();
/// });
/// ```
pub fn ctrl_c() -> io::Result<()> {
    Signals::new([SIGINT])?.recv().map(drop)
}

/// Refuses what signal-hook would panic at: the signals it will not take
/// over, and numbers out of its table's range.
fn check_signal(sig: i32) -> io::Result<()> {
    let name = match sig {
        libc::SIGKILL => Some("SIGKILL"),
        libc::SIGSTOP => Some("SIGSTOP"),
        libc::SIGILL => Some("SIGILL"),
        libc::SIGFPE => Some("SIGFPE"),
        libc::SIGSEGV => Some("SIGSEGV"),
        _ => None,
    };
    if let Some(name) = name {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "yieldloop: signal {sig} ({name}) cannot be listened for: the system does not \
                 let it be caught, or catching it would leave the process in an undefined state"
            ),
        ));
    }
    // The same list as signal-hook's, so nothing reaches its assertions.
    debug_assert!(!signal_hook::consts::FORBIDDEN.contains(&sig));
    if !(1..SIGNAL_LIMIT).contains(&sig) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("yieldloop: {sig} is not a signal number"),
        ));
    }
    Ok(())
}
