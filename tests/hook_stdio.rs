//! Feature `hook`: standard output and standard error from tasks, with
//! the descriptors a pipe or a socket (as under systemd, journald, Docker
//! or any log collector), never the test harness's capture. Each check
//! runs in a child process (this test binary again) whose stdout or
//! stderr is the pipe or socket, so that an abort fails one test.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that tells the child which body to run.
const CHILD: &str = "YIELDLOOP_STDIO_CHILD";

/// What a child's stdout or stderr is.
#[derive(Clone, Copy, Debug)]
enum Sink {
    Pipe,
    Socket,
}

/// Runs test `name` of this binary in a child whose stdout (`on_stdout`)
/// or stderr is a `sink`, the other one a pipe; reads that sink only
/// after `read_after` (so that writes to it fill it first); returns the
/// exit status's success and what the sink and the other stream got.
fn run_child(
    name: &str,
    sink: Sink,
    on_stdout: bool,
    read_after: Duration,
) -> (bool, String, String) {
    let exe = std::env::current_exe().unwrap();
    let (ours, theirs): (Box<dyn Read + Send>, Stdio) = match sink {
        Sink::Pipe => {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors `pipe2` writes.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: `pipe2` just opened them, and nothing else owns them.
            let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            (Box::new(std::fs::File::from(r)), Stdio::from(w))
        }
        Sink::Socket => {
            let (a, b) = UnixStream::pair().unwrap();
            (Box::new(a), Stdio::from(OwnedFd::from(b)))
        }
    };
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .stdin(Stdio::null());
    if on_stdout {
        cmd.stdout(theirs).stderr(Stdio::piped());
    } else {
        cmd.stderr(theirs).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let other: Box<dyn Read + Send> = if on_stdout {
        Box::new(child.stderr.take().unwrap())
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let read_all = |mut r: Box<dyn Read + Send>, after: Duration| {
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let sink_text = read_all(ours, read_after);
    let other_text = read_all(other, Duration::ZERO);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let ok = status.is_some_and(|s| s.success());
    (ok, sink_text.join().unwrap(), other_text.join().unwrap())
}

/// True in the child process that runs `name`.
fn in_child(name: &str) -> bool {
    std::env::var(CHILD).as_deref() == Ok(name)
}

/// The child's body for the cancelled-task cases: a task paused in a
/// blocking std read, cancelled, then prints its error to stderr and
/// panics on it (the panic hook writes to stderr too).
fn cancelled_task_speaks() {
    yieldloop::run(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = yieldloop::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 16];
            // Nobody writes: the hook pauses the task here.
            let r = s.read(&mut buf);
            if let Err(e) = &r {
                eprintln!("read failed: {e}");
            }
            r.unwrap();
        });
        let (_peer, _) = listener.accept().unwrap();
        yieldloop::sleep(Duration::from_millis(20));
        reader.cancel();
        assert!(reader.join().is_err());
        println!("main: done");
    });
}

/// Checks the cancelled task's words reached stderr, a `sink`, and the
/// process ended normally.
fn check_cancelled_task_speaks(name: &str, sink: Sink) {
    if in_child(name) {
        cancelled_task_speaks();
        return;
    }
    let (ok, err, out) = run_child(name, sink, false, Duration::ZERO);
    assert!(
        ok,
        "the child failed or aborted\n--- stderr:\n{err}--- stdout:\n{out}"
    );
    assert!(err.contains("read failed"), "stderr:\n{err}");
    assert!(out.contains("main: done"), "stdout:\n{out}");
}

/// A cancelled task's `eprintln!` and panic message, stderr a pipe.
#[test]
fn a_cancelled_task_writes_to_stderr_as_a_pipe() {
    check_cancelled_task_speaks("a_cancelled_task_writes_to_stderr_as_a_pipe", Sink::Pipe);
}

/// The same, stderr a socket.
#[test]
fn a_cancelled_task_writes_to_stderr_as_a_socket() {
    check_cancelled_task_speaks(
        "a_cancelled_task_writes_to_stderr_as_a_socket",
        Sink::Socket,
    );
}

/// Lines each of two tasks prints.
const LINES: usize = 2_000;

/// The child's body for the slow-stdout cases: two tasks print into a
/// stdout that nobody reads for a while (it fills), yielding between
/// lines, so that one prints while the other's write would wait.
fn two_tasks_print() {
    yieldloop::run(|| {
        let printers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                yieldloop::spawn(move || {
                    let pad = "x".repeat(90);
                    for i in 0..LINES {
                        println!("{who} {i:05} {pad}");
                        yieldloop::yield_now();
                    }
                })
            })
            .collect();
        for p in printers {
            p.join().unwrap();
        }
    });
    std::io::stdout().flush().unwrap();
}

/// Checks every line of both tasks arrived through a slow stdout `sink`.
fn check_two_tasks_print(name: &str, sink: Sink) {
    if in_child(name) {
        two_tasks_print();
        return;
    }
    let (ok, out, err) = run_child(name, sink, true, Duration::from_millis(300));
    assert!(ok, "the child failed or aborted\n--- stderr:\n{err}");
    for who in ["a", "b"] {
        // (The harness's "test … " may precede the first line.)
        let mark = format!("{who} ");
        let n = out
            .lines()
            .filter(|l| l.contains(&mark) && l.ends_with("xxxxxxxxxx"))
            .count();
        assert_eq!(n, LINES, "lines of task {who}\n--- stderr:\n{err}");
    }
}

/// Two tasks print into a slow stdout pipe: no "already borrowed".
#[test]
fn two_tasks_print_into_a_slow_stdout_pipe() {
    check_two_tasks_print("two_tasks_print_into_a_slow_stdout_pipe", Sink::Pipe);
}

/// The same into a slow stdout socket.
#[test]
fn two_tasks_print_into_a_slow_stdout_socket() {
    check_two_tasks_print("two_tasks_print_into_a_slow_stdout_socket", Sink::Socket);
}

/// The slow-task warning about a task cancelled inside an intercepted call
/// that then holds the thread says that it was cancelled and runs on.
#[test]
fn the_slow_task_warning_names_a_cancelled_task() {
    let name = "the_slow_task_warning_names_a_cancelled_task";
    if in_child(name) {
        yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(100)));
        yieldloop::run(|| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let worker = yieldloop::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                // Paused here by the hook, then cancelled: the read fails.
                let _ = s.read(&mut [0u8; 16]);
                // Computes for 300 ms without pausing, then ends.
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
            });
            let (_peer, _) = listener.accept().unwrap();
            yieldloop::sleep(Duration::from_millis(20));
            worker.cancel();
            let _ = worker.join();
        });
        return;
    }
    let (ok, err, out) = run_child(name, Sink::Pipe, false, Duration::ZERO);
    assert!(ok, "the child failed\n--- stderr:\n{err}--- stdout:\n{out}");
    assert!(
        err.contains("ran for at least") && err.contains("cancelled inside an intercepted call"),
        "stderr:\n{err}"
    );
}
