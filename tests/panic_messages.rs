//! The message of a panic inside a task names the task (its name, else its
//! number) instead of the thread; a panic outside any task reads as it
//! always did. Each case runs in a child process, whose stderr is checked.

use std::process::Command;

/// Where the child is about to panic, printed on stdout before it does, so
/// that the parent can check the location in the message.
fn announce(case: &str, line: u32) {
    println!("\n{case} panics at {}:{line}", file!());
}

/// The child half of the tests; does nothing unless asked.
#[test]
fn panic_child() {
    let Ok(mode) = std::env::var("YIELDLOOP_PANIC_CHILD") else {
        return;
    };
    match mode.as_str() {
        "main" => {
            let out = std::panic::catch_unwind(|| {
                yieldloop::run(|| {
                    announce("main", line!() + 1);
                    panic!("the main task gives up");
                })
            });
            assert!(out.is_err(), "run should pass the main task's panic on");
        }
        "named" => yieldloop::run(|| {
            let h = yieldloop::Builder::new()
                .name("conn-7")
                .spawn(|| {
                    announce("named", line!() + 1);
                    panic!("a named task gives up")
                })
                .unwrap();
            println!("named id {}", h.id());
            assert!(h.join().unwrap_err().is_panic());
        }),
        "unnamed" => yieldloop::run(|| {
            let h = yieldloop::spawn(|| {
                announce("unnamed", line!() + 1);
                panic!("an unnamed task gives up")
            });
            println!("unnamed id {}", h.id());
            assert!(h.join().unwrap_err().is_panic());
        }),
        "thread" => {
            // A scheduler has run, so the hook is in place.
            yieldloop::run(|| yieldloop::spawn(|| 1).join().unwrap());
            let t = std::thread::Builder::new()
                .name("plain-worker".into())
                .spawn(|| {
                    announce("thread", line!() + 1);
                    panic!("a plain thread gives up")
                })
                .unwrap();
            assert!(t.join().is_err());
        }
        "hook_later" => yieldloop::run(|| {
            std::panic::set_hook(Box::new(|info| {
                eprintln!(
                    "the program's own hook: {}",
                    info.payload().downcast_ref::<&str>().unwrap()
                );
            }));
            let h = yieldloop::spawn(|| panic!("seen by the program's hook"));
            assert!(h.join().is_err());
            let _ = std::panic::take_hook();
        }),
        "hook_before" => {
            std::panic::set_hook(Box::new(|info| {
                eprintln!(
                    "the program's own hook: {}",
                    info.payload().downcast_ref::<&str>().unwrap()
                );
            }));
            yieldloop::run(|| {
                let h = yieldloop::spawn(|| panic!("seen by the earlier hook"));
                assert!(h.join().is_err());
            });
            let _ = std::panic::take_hook();
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// The child's stdout and stderr.
struct Child {
    stdout: String,
    stderr: String,
}

impl Child {
    /// The location the child announced for `case`.
    fn location(&self, case: &str) -> &str {
        let prefix = format!("{case} panics at ");
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no location for {case} in: {}", self.stdout))
            .trim()
    }

    /// The task id the child printed for `case`.
    fn id(&self, case: &str) -> u64 {
        let prefix = format!("{case} id ");
        self.stdout
            .lines()
            .find_map(|l| l.split_once(&prefix).map(|(_, n)| n))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no id for {case} in: {}", self.stdout))
    }
}

fn run_child(mode: &str, backtrace: &str) -> Child {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "panic_child", "--nocapture", "--test-threads=1"])
        .env("YIELDLOOP_PANIC_CHILD", mode)
        .env("RUST_BACKTRACE", backtrace)
        .output()
        .unwrap();
    let child = Child {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        out.status.success(),
        "child {mode} failed: {}\n{}",
        child.stdout,
        child.stderr
    );
    child
}

/// Asserts that `stderr` holds `head` (which ends with a line number), a
/// column, then `:` and the `message` on a line of its own.
fn assert_message(stderr: &str, head: &str, message: &str) {
    let found = stderr.match_indices(head).any(|(i, _)| {
        let rest = &stderr[i + head.len()..];
        let Some(rest) = rest.strip_prefix(':') else {
            return false;
        };
        let col = rest.chars().take_while(char::is_ascii_digit).count();
        col > 0 && rest[col..].starts_with(&format!(":\n{message}\n"))
    });
    assert!(
        found,
        "expected {head:?}, a column and {message:?} in:\n{stderr}"
    );
}

/// libtest runs the child's test on a thread named after the test, which
/// the message names after the task.
const ON_THREAD: &str = "on thread 'panic_child'";

/// The main task of `run` is named "main" and has id 1.
#[test]
fn main_task_panic_names_the_task() {
    let child = run_child("main", "0");
    let at = child.location("main");
    let head = format!("\ntask 'main' (id 1) {ON_THREAD} panicked at {at}");
    assert_message(&child.stderr, &head, "the main task gives up");
    assert!(
        !child.stderr.contains("thread 'panic_child' ("),
        "{}",
        child.stderr
    );
    assert!(
        !child.stderr.contains("stack backtrace:"),
        "{}",
        child.stderr
    );
    assert!(
        child.stderr.contains("RUST_BACKTRACE=1"),
        "no hint in:\n{}",
        child.stderr
    );
}

/// A task given a name with `Builder::name` is named, with its id.
#[test]
fn named_task_panic_names_the_task() {
    let child = run_child("named", "0");
    let at = child.location("named");
    let id = child.id("named");
    let head = format!("\ntask 'conn-7' (id {id}) {ON_THREAD} panicked at {at}");
    assert_message(&child.stderr, &head, "a named task gives up");
    assert!(
        !child.stderr.contains("thread 'panic_child' ("),
        "{}",
        child.stderr
    );
}

/// A task without a name is named by its id.
#[test]
fn unnamed_task_panic_gives_the_id() {
    let child = run_child("unnamed", "0");
    let at = child.location("unnamed");
    let id = child.id("unnamed");
    assert!(id > 1, "the spawned task is not the main one");
    let head = format!("\ntask {id} {ON_THREAD} panicked at {at}");
    assert_message(&child.stderr, &head, "an unnamed task gives up");
}

/// A panic on a plain thread, outside any task, reads as the standard
/// library writes it, even after a scheduler has run.
#[test]
fn plain_thread_panic_is_unchanged() {
    let child = run_child("thread", "0");
    let at = child.location("thread");
    assert!(
        child.stderr.contains("\nthread 'plain-worker' ("),
        "no thread name in:\n{}",
        child.stderr
    );
    assert_message(
        &child.stderr,
        &format!(") panicked at {at}"),
        "a plain thread gives up",
    );
    assert!(!child.stderr.contains("task "), "{}", child.stderr);
}

/// With `RUST_BACKTRACE=1` the message of a task's panic carries a
/// backtrace, and the hint to ask for a full one.
#[test]
fn task_panic_respects_rust_backtrace() {
    let child = run_child("named", "1");
    let at = child.location("named");
    let id = child.id("named");
    let head = format!("\ntask 'conn-7' (id {id}) {ON_THREAD} panicked at {at}");
    assert_message(
        &child.stderr,
        &head,
        "a named task gives up\nstack backtrace:",
    );
    assert!(
        child.stderr.contains("RUST_BACKTRACE=full"),
        "{}",
        child.stderr
    );
}

/// A hook the program installs after the runtime's replaces it; one it
/// installed before keeps seeing task panics as before.
#[test]
fn the_programs_own_hooks_keep_working() {
    for (mode, message) in [
        ("hook_later", "seen by the program's hook"),
        ("hook_before", "seen by the earlier hook"),
    ] {
        let child = run_child(mode, "0");
        let expected = format!("the program's own hook: {message}\n");
        assert!(
            child.stderr.contains(&expected),
            "{mode}: expected {expected:?} in:\n{}",
            child.stderr
        );
        assert!(
            !child.stderr.contains("panicked at"),
            "{mode}: {}",
            child.stderr
        );
    }
}
