//! The message of a panic inside a task names the task:
//!
//! ```text
//! task 'conn-7' (id 12) panicked at src/main.rs:10:5:
//! attempt to divide by zero
//! ```
//!
//! rather than `thread 'main' panicked at …`, which names only the thread
//! that every task of a scheduler shares.
//!
//! A panic hook is process-wide, so this one is installed once, when the
//! first scheduler starts, and wraps the hook that was in place then. It
//! changes the message only where the standard library's own would have
//! printed it, and only for a panic on a thread that is running a task (or
//! tearing one down); every other panic goes to the previous hook as
//! before. A hook the program had installed before the first scheduler
//! started keeps receiving every panic unchanged, and a hook the program
//! installs later replaces this one, as `std::panic::set_hook` always does.

use std::any::Any;
use std::backtrace::Backtrace;
use std::fmt::Write as _;
use std::panic::{self, Location};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use super::with_running_label;
use crate::protocol::TaskLabel;

/// The hook is installed at most once per process.
static INSTALL: Once = Once::new();

/// Set once the hint about `RUST_BACKTRACE` has been shown, which the
/// standard library, too, gives only with the first panic.
static HINT_SHOWN: AtomicBool = AtomicBool::new(false);

/// Installs the hook, once per process; see the module docs.
pub(crate) fn install() {
    // `set_hook` panics on a thread that is unwinding; a scheduler started
    // from a destructor during a panic goes without (a later one installs).
    if std::thread::panicking() {
        return;
    }
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        // With the previous hook taken out, the default one is in place:
        // taking it too yields a box of the standard library's default.
        let default = panic::take_hook();
        // std gives no way to ask whether a hook is the default one. Two
        // boxes of the default are the same zero-sized function behind the
        // same vtable, so their wide pointers are equal, and a hook of the
        // program's own, of another type, never compares equal. Were that
        // ever to change, the comparison would fail and the previous hook
        // would go on printing every message as before.
        let previous_is_default = std::ptr::eq(&*previous, &*default);
        drop(default);
        panic::set_hook(Box::new(move |info| {
            // The `tracing` event comes whatever prints the message.
            #[cfg(feature = "tracing")]
            with_running_label(|label| {
                if let Some(label) = label {
                    crate::scheduler::tracing_events::task_panicked(
                        label.serial,
                        label.name,
                        &info.location().map(|l| l.to_string()).unwrap_or_default(),
                        crate::protocol::join_failure::payload_text(info.payload())
                            .unwrap_or("Box<dyn Any>"),
                    );
                }
            });
            if previous_is_default {
                let done = with_running_label(|label| match label {
                    Some(label) => {
                        report(label, info.location(), info.payload());
                        true
                    }
                    None => false,
                });
                if done {
                    return;
                }
            }
            previous(info)
        }));
    });
}

/// How much backtrace to print, read from `RUST_BACKTRACE` as the standard
/// library reads it: unset or `0` is none, `full` is every frame, anything
/// else is the short form.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BacktraceStyle {
    Off,
    Short,
    Full,
}

fn backtrace_style() -> BacktraceStyle {
    match std::env::var_os("RUST_BACKTRACE") {
        None => BacktraceStyle::Off,
        Some(v) if v == "0" => BacktraceStyle::Off,
        Some(v) if v == "full" => BacktraceStyle::Full,
        Some(_) => BacktraceStyle::Short,
    }
}

/// Prints the message of a panic inside the task `label`, raised `at` with
/// `payload`, in the standard library's layout.
fn report(label: TaskLabel<'_>, at: Option<&Location<'_>>, payload: &(dyn Any + Send)) {
    let mut out = String::new();
    let _ = write!(out, "\n{label}");
    // Tasks of several schedulers share a process, and their ids are only
    // unique on their own scheduler: name the thread too, unless it is the
    // main one.
    if let Some(thread) = std::thread::current().name().filter(|n| *n != "main") {
        let _ = write!(out, " on thread '{thread}'");
    }
    out.push_str(" panicked");
    if let Some(at) = at {
        let _ = write!(out, " at {at}");
    }
    let message = crate::protocol::join_failure::payload_text(payload).unwrap_or("Box<dyn Any>");
    let _ = writeln!(out, ":\n{message}");
    match backtrace_style() {
        BacktraceStyle::Off => {
            if !HINT_SHOWN.swap(true, Ordering::Relaxed) {
                out.push_str(
                    "note: run with `RUST_BACKTRACE=1` environment variable to display a \
                     backtrace\n",
                );
            }
        }
        BacktraceStyle::Short => {
            let _ = writeln!(out, "stack backtrace:\n{}", Backtrace::force_capture());
            out.push_str(
                "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a \
                 verbose backtrace.\n",
            );
        }
        BacktraceStyle::Full => {
            let _ = writeln!(out, "stack backtrace:\n{:#}", Backtrace::force_capture());
        }
    }
    // One write, so that panics on several threads do not interleave; and
    // through `eprint!`, which a test harness capturing output sees.
    eprint!("{out}");
}
