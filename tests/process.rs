//! Child processes: pipes read and written from tasks, waits that pause
//! only their task, exit codes and signals, kills, and no zombie left
//! behind by a dropped or cancelled `Child`.
//!
//! Only POSIX tools are used: `/bin/sh`, `cat`, `sleep`, `true`, `false`.

mod util;

use std::cell::Cell;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::within;
use yieldloop::process::{Command, Stdio};

/// How long a dropped child may take to be reaped after it exits.
const REAP_LIMIT: Duration = Duration::from_secs(10);

/// Whether `pid` is no longer a child of this process waiting to be
/// reaped: it was reaped. The check itself reaps nothing (`WNOWAIT`).
fn is_reaped(pid: u32) -> bool {
    // SAFETY: siginfo_t is plain data, for which all zeros is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`, a live siginfo_t.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
}

/// Waits (bounded) for `pid` to be reaped by someone else, and checks on
/// Linux that it is not a zombie in `/proc` either.
fn assert_reaped_soon(pid: u32) {
    assert!(
        util::wait_until(REAP_LIMIT, || is_reaped(pid)),
        "child {pid} was not reaped within {REAP_LIMIT:?}"
    );
    #[cfg(target_os = "linux")]
    {
        // Gone from /proc, or (the id reused already) not a zombie there.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
        assert_ne!(state, Some('Z'), "child {pid} is a zombie: {stat}");
    }
}

/// `cat` gives back what one task writes to it while another task reads.
#[test]
fn cat_echoes_what_a_task_writes_while_another_reads() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let stdout = child.stdout.take().unwrap();
            // More than a pipe holds, so the writer must pause while the
            // reader catches up.
            let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            let expected = data.clone();
            let writer = yieldloop::spawn(move || {
                for chunk in data.chunks(10_000) {
                    stdin.write_all(chunk).unwrap();
                }
                // stdin drops here: cat sees the end.
            });
            let reader = yieldloop::spawn(move || {
                let mut back = Vec::new();
                (&stdout).read_to_end(&mut back).unwrap();
                back
            });
            writer.join().unwrap();
            assert_eq!(reader.join().unwrap(), expected);
            assert!(child.wait().unwrap().success());
        });
    });
}

/// A line protocol with a child: write a line, read its echo, in turns.
#[test]
fn request_and_reply_lines_through_cat() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap());
            for i in 0..20 {
                writeln!(stdin, "line {i}").unwrap();
                let mut line = String::new();
                lines.read_line(&mut line).unwrap();
                assert_eq!(line, format!("line {i}\n"));
            }
            drop(stdin);
            let mut rest = String::new();
            lines.read_to_string(&mut rest).unwrap();
            assert_eq!(rest, "");
            assert!(child.wait().unwrap().success());
        });
    });
}

/// Output written before the child exits can be read after `wait`
/// returned, to the end.
#[test]
fn stdout_reads_to_its_end_after_the_child_exited() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("sh")
                .args(["-c", "echo first; echo second"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            assert!(child.wait().unwrap().success());
            let mut text = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "first\nsecond\n");
        });
    });
}

/// Another task ticks on while this one waits for `sleep 0.3`: waiting
/// pauses only the waiting task.
#[test]
fn a_ticking_task_keeps_ticking_while_a_child_is_waited_for() {
    within(|| {
        yieldloop::run(|| {
            let ticks = Rc::new(Cell::new(0u32));
            let t = ticks.clone();
            let ticker = yieldloop::spawn(move || loop {
                yieldloop::sleep(Duration::from_millis(20));
                t.set(t.get() + 1);
            });
            let start = Instant::now();
            let status = Command::new("sleep").arg("0.3").status().unwrap();
            let waited = start.elapsed();
            assert!(status.success());
            assert!(waited >= Duration::from_millis(300), "{waited:?}");
            // About 15 ticks; a blocked thread would give none.
            assert!(ticks.get() >= 3, "only {} ticks in {waited:?}", ticks.get());
            ticker.cancel();
        });
    });
}

/// `output` reads stdout and stderr at once: a child writing 200 KB to
/// stderr before anything to stdout (either alone overflows a pipe) does
/// not stall, and both come back whole.
#[test]
fn output_collects_large_stdout_and_stderr_without_stalling() {
    within(|| {
        yieldloop::run(|| {
            let line = "x".repeat(99);
            let script = format!(
                "i=0; while [ $i -lt 2000 ]; do echo {line} >&2; i=$((i+1)); done; \
                 i=0; while [ $i -lt 3000 ]; do echo {line}; i=$((i+1)); done; exit 4"
            );
            let out = Command::new("sh").args(["-c", &script]).output().unwrap();
            assert_eq!(out.status.code(), Some(4));
            assert_eq!(out.stderr.len(), 2000 * 100);
            assert_eq!(out.stdout.len(), 3000 * 100);
            assert!(out
                .stdout
                .split(|&b| b == b'\n')
                .all(|l| l.is_empty() || l == line.as_bytes()));
        });
    });
}

/// Interleaved writes to both streams, each beyond a pipe's size.
#[test]
fn output_with_interleaved_streams() {
    within(|| {
        yieldloop::run(|| {
            let script =
                "i=0; while [ $i -lt 3000 ]; do echo out-$i; echo err-$i >&2; i=$((i+1)); done";
            let out = Command::new("sh").args(["-c", script]).output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let errs = String::from_utf8(out.stderr).unwrap();
            assert_eq!(text.lines().count(), 3000);
            assert_eq!(errs.lines().count(), 3000);
            assert_eq!(text.lines().last(), Some("out-2999"));
            assert_eq!(errs.lines().last(), Some("err-2999"));
        });
    });
}

/// Exit codes come back, and a death by signal shows as the signal.
#[test]
fn exit_codes_and_signals() {
    within(|| {
        yieldloop::run(|| {
            assert!(Command::new("true").status().unwrap().success());
            assert_eq!(Command::new("false").status().unwrap().code(), Some(1));
            let seven = Command::new("sh").args(["-c", "exit 7"]).status().unwrap();
            assert_eq!(seven.code(), Some(7));
            let term = Command::new("sh")
                .args(["-c", "kill -TERM $$"])
                .status()
                .unwrap();
            assert_eq!(term.code(), None);
            assert_eq!(term.signal(), Some(libc::SIGTERM));
        });
    });
}

/// `kill` ends a long child and reaps it; killing it again, or with
/// `start_kill`, is harmless.
#[test]
fn kill_ends_and_reaps_the_child() {
    let pid = within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("sleep").arg("60").spawn().unwrap();
            assert!(child.try_wait().unwrap().is_none());
            let start = Instant::now();
            child.kill().unwrap();
            assert!(start.elapsed() < Duration::from_secs(10));
            let status = child.try_wait().unwrap().expect("reaped by kill");
            assert_eq!(status.signal(), Some(libc::SIGKILL));
            assert_eq!(child.wait().unwrap(), status, "wait again: same status");
            child.kill().unwrap();
            child.start_kill().unwrap();
            child.id()
        })
    });
    assert!(is_reaped(pid));
}

/// `start_kill` only signals; the wait that follows sees the signal.
#[test]
fn start_kill_then_wait() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("sleep").arg("60").spawn().unwrap();
            child.start_kill().unwrap();
            assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        });
    });
}

/// `try_wait` says `None` while the child runs and its status after.
#[test]
fn try_wait_before_and_after_the_exit() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("sleep").arg("0.1").spawn().unwrap();
            assert!(child.try_wait().unwrap().is_none());
            let got = util::wait_until(Duration::from_secs(10), || {
                child.try_wait().unwrap().is_some()
            });
            assert!(got);
            assert!(child.try_wait().unwrap().unwrap().success());
        });
    });
}

/// A program that does not exist is `NotFound`, as with std.
#[test]
fn spawning_a_missing_program_is_not_found() {
    yieldloop::run(|| {
        let err = Command::new("/nonexistent/yieldloop-no-such-program")
            .spawn()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        let err = Command::new("yieldloop-no-such-program-on-path")
            .output()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    });
}

/// Outside `run` there is no scheduler: spawning says so and starts
/// nothing.
#[test]
fn spawning_outside_run_is_unsupported() {
    let err = Command::new("true").spawn().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
}

/// Environment, working directory and arguments reach the child.
#[test]
fn environment_directory_and_arguments() {
    within(|| {
        yieldloop::run(|| {
            let out = Command::new("/bin/sh")
                .args(["-c", "echo \"$A|$B|$HOME|$(pwd)|$0\"", "zero"])
                .env_clear()
                .envs([("A", "1"), ("B", "2")])
                .env("HOME", "h")
                .env_remove("B")
                .current_dir("/")
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), "1||h|/|zero\n");
        });
    });
}

/// One child's stdout becomes the next one's stdin: a pipeline.
#[test]
fn a_pipeline_of_two_children() {
    within(|| {
        yieldloop::run(|| {
            let mut first = Command::new("sh")
                .args(["-c", "echo a; echo b"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let pipe = Stdio::try_from(first.stdout.take().unwrap()).unwrap();
            let out = Command::new("cat").stdin(pipe).output().unwrap();
            assert_eq!(out.stdout, b"a\nb\n");
            assert!(first.wait().unwrap().success());
        });
    });
}

/// Many children waited for at once, each by its own task.
#[test]
fn many_children_at_once() {
    within(|| {
        yieldloop::run(|| {
            let start = Instant::now();
            let waits: Vec<_> = (0..20)
                .map(|i| {
                    yieldloop::spawn(move || {
                        Command::new("sh")
                            .args(["-c", &format!("sleep 0.2; exit {i}")])
                            .status()
                            .unwrap()
                            .code()
                    })
                })
                .collect();
            for (i, w) in waits.into_iter().enumerate() {
                assert_eq!(w.join().unwrap(), Some(i as i32));
            }
            // Overlapped: about 0.2 s, not 4 s.
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "{:?}",
                start.elapsed()
            );
        });
    });
}

/// A `Child` dropped while its process runs, never waited for, is reaped
/// once the process exits.
#[test]
fn a_dropped_child_is_reaped_once_it_exits() {
    let pid = within(|| {
        yieldloop::run(|| {
            let child = Command::new("sleep").arg("0.2").spawn().unwrap();
            let pid = child.id();
            drop(child);
            pid
        })
    });
    assert_reaped_soon(pid);
}

/// A `Child` dropped after its process exited is reaped on the spot.
#[test]
fn a_child_dropped_after_it_exited_is_reaped() {
    let pid = within(|| {
        yieldloop::run(|| {
            let child = Command::new("true").spawn().unwrap();
            let pid = child.id();
            yieldloop::sleep(Duration::from_millis(100));
            drop(child);
            pid
        })
    });
    assert_reaped_soon(pid);
}

/// With `kill_on_drop`, dropping the `Child` kills the process, which is
/// then reaped long before it would have ended.
#[test]
fn kill_on_drop_kills_and_reaps() {
    let start = Instant::now();
    let pid = within(|| {
        yieldloop::run(|| {
            let child = Command::new("sleep")
                .arg("60")
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            child.id()
        })
    });
    assert_reaped_soon(pid);
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// A `timeout` around a wait unwinds it; the `Child` dropped by the
/// unwinding is still reaped.
#[test]
fn a_wait_cut_short_by_a_timeout_leaves_no_zombie() {
    let pid = within(|| {
        yieldloop::run(|| {
            let pid = Rc::new(Cell::new(0));
            let p = pid.clone();
            let r = yieldloop::timeout(Duration::from_millis(50), move || {
                let mut child = Command::new("sleep").arg("0.3").spawn().unwrap();
                p.set(child.id());
                child.wait()
            });
            assert!(r.is_err(), "the wait ended first: {r:?}");
            pid.get()
        })
    });
    assert_reaped_soon(pid);
}

/// A wait cut short leaves the `Child` usable: the next wait gets the
/// status.
#[test]
fn a_wait_cut_short_can_be_taken_up_again() {
    within(|| {
        yieldloop::run(|| {
            let mut child = Command::new("sh")
                .args(["-c", "sleep 0.2; exit 5"])
                .spawn()
                .unwrap();
            let r = yieldloop::timeout(Duration::from_millis(20), || child.wait());
            assert!(r.is_err());
            assert_eq!(child.wait().unwrap().code(), Some(5));
        });
    });
}

/// `output` cut short by a timeout, with `kill_on_drop`: the child is
/// killed, its pipes closed, and the timeout returns at once, not when
/// the child would have ended.
#[test]
fn output_cut_short_kills_with_kill_on_drop() {
    let start = Instant::now();
    within(|| {
        yieldloop::run(|| {
            let r = yieldloop::timeout(Duration::from_millis(50), || {
                // `exec`: the shell becomes the `sleep`, so the kill
                // reaches the process holding the pipes.
                Command::new("sh")
                    .args(["-c", "echo started; exec sleep 60"])
                    .kill_on_drop(true)
                    .output()
            });
            assert!(r.is_err());
        });
    });
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// A task cancelled while it waits drops its `Child`, which is reaped.
#[test]
fn a_cancelled_waiting_task_leaves_no_zombie() {
    let pid = within(|| {
        yieldloop::run(|| {
            let pid = Rc::new(Cell::new(0));
            let p = pid.clone();
            let waiter = yieldloop::spawn(move || {
                let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
                p.set(child.id());
                child.wait().unwrap();
            });
            yieldloop::sleep(Duration::from_millis(30));
            waiter.cancel();
            assert!(waiter.join().unwrap_err().is_cancelled());
            pid.get()
        })
    });
    assert!(pid > 0);
    assert_reaped_soon(pid);
}

/// Children started and waited for on `Runtime` workers.
#[test]
fn children_on_runtime_workers() {
    within(|| {
        let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
        let handles = rt.spawn_each(|worker| {
            let out = Command::new("sh")
                .args(["-c", &format!("echo worker {worker}")])
                .output()
                .unwrap();
            (worker, String::from_utf8(out.stdout).unwrap())
        });
        for h in handles {
            let (worker, text) = h.join().unwrap();
            assert_eq!(text, format!("worker {worker}\n"));
        }
        rt.shutdown();
    });
}

/// With `SIGCHLD` ignored the kernel reaps children itself; a wait then
/// ends in an error that says so instead of hanging. (In a process of its
/// own: the setting is process-wide.)
#[test]
fn children_taken_by_an_ignored_sigchld_give_a_clear_error() {
    util::in_child_process(
        "children_taken_by_an_ignored_sigchld_give_a_clear_error",
        || {
            // SAFETY: setting a signal's disposition to SIG_IGN installs no
            // handler code; this process runs only this test.
            unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
            within(|| {
                yieldloop::run(|| {
                    let mut child = Command::new("sleep").arg("0.1").spawn().unwrap();
                    let err = child.wait().unwrap_err();
                    assert!(err.to_string().contains("reaped elsewhere"), "{err}");
                });
            });
        },
    );
}
