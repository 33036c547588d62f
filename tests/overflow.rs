//! Stack overflow in a task: a clear report naming the task, checked in a
//! child process (the overflow ends the process, as it should).

use std::process::Command;

/// Recurses without bound; `black_box` keeps the frames real.
fn recurse(depth: u64) -> u64 {
    let pad = std::hint::black_box([depth; 64]);
    if depth == u64::MAX {
        return pad[0];
    }
    recurse(depth + 1) + std::hint::black_box(pad[1])
}

/// The child half: only does something when the parent asks for it.
#[test]
fn overflow_child() {
    if std::env::var_os("YIELDLOOP_OVERFLOW_CHILD").is_none() {
        return;
    }
    yieldloop::run(|| {
        let h = yieldloop::Builder::new()
            .name("deep-diver")
            .stack_size(64 * 1024)
            .spawn(|| recurse(0))
            .unwrap();
        let _ = h.join();
    });
}

/// The overflowing task is named, with its stack size and the fix, and the
/// process dies of the fault's signal (SIGSEGV; SIGBUS on macOS) rather
/// than running on with a corrupt stack.
#[test]
fn overflow_is_reported_with_the_task_name() {
    let (out, stderr) = run_self("overflow_child", &[("YIELDLOOP_OVERFLOW_CHILD", "1")]);
    assert!(
        !out.status.success(),
        "child survived an overflow: {stderr}"
    );
    assert!(
        stderr.contains("task 'deep-diver' (id 2) overflowed its stack of 65536 bytes"),
        "no clear report in: {stderr}"
    );
    assert!(stderr.contains("stack_size"), "no advice in: {stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(guard_fault_signal()),
        "status: {:?}",
        out.status
    );
}

/// The signal a touch of a guard page raises: macOS reports an access to a
/// protected page as SIGBUS, the others as SIGSEGV.
fn guard_fault_signal() -> i32 {
    if cfg!(target_vendor = "apple") {
        libc::SIGBUS
    } else {
        libc::SIGSEGV
    }
}

/// Runs one test of this binary in a child process with `envs` set (each
/// child test does its work only when its variable is there) and returns
/// the exit status and stderr. An overflow ends the child, hence a process.
fn run_self(test: &str, envs: &[(&str, &str)]) -> (std::process::Output, String) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stderr)
}

/// A fault that is not a guard-page hit keeps its default behaviour (here:
/// Rust's own report of a main-thread overflow is not swallowed).
#[test]
fn ordinary_thread_overflow_is_left_alone() {
    if std::env::var_os("YIELDLOOP_THREAD_OVERFLOW_CHILD").is_some() {
        // Install our handler first, then overflow a plain thread.
        yieldloop::run(|| ());
        let t = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(|| recurse(0))
            .unwrap();
        let _ = t.join();
        return;
    }
    let (out, stderr) = run_self(
        "ordinary_thread_overflow_is_left_alone",
        &[("YIELDLOOP_THREAD_OVERFLOW_CHILD", "1")],
    );
    assert!(!out.status.success());
    assert!(!stderr.contains("yieldloop: task"), "misreported: {stderr}");
    assert!(
        stderr.contains("has overflowed its stack"),
        "std's report lost: {stderr}"
    );
}

/// The child half of the trimmed-stack test.
#[test]
fn trimmed_overflow_child() {
    if std::env::var_os("YIELDLOOP_TRIMMED_OVERFLOW_CHILD").is_none() {
        return;
    }
    const SIZE: usize = 64 * 1024;
    yieldloop::run(|| {
        let spawn_sleepers = |n: usize, ms: u64| -> Vec<_> {
            (0..n)
                .map(|_| {
                    yieldloop::Builder::new()
                        .stack_size(SIZE)
                        .spawn(move || yieldloop::sleep(std::time::Duration::from_millis(ms)))
                        .unwrap()
                })
                .collect()
        };
        // Fill the pool well past its warm watermark, then let the loop go
        // idle so the excess is handed back to the kernel.
        for h in spawn_sleepers(2_500, 1) {
            h.join().unwrap();
        }
        yieldloop::sleep(std::time::Duration::from_millis(20));
        assert!(
            yieldloop::diag::pool_stats().trimmed > 0,
            "nothing was trimmed"
        );
        // Use up the warm stacks, so the next task runs on a trimmed one.
        let _held = spawn_sleepers(1_200, 10_000);
        yieldloop::yield_now();
        let h = yieldloop::Builder::new()
            .name("cold-diver")
            .stack_size(SIZE)
            .spawn(|| recurse(0))
            .unwrap();
        let _ = h.join();
    });
}

/// A stack whose memory went back to the kernel keeps its guard page: an
/// overflow on it is still caught and reported.
#[test]
fn guard_survives_trimming() {
    let (out, stderr) = run_self(
        "trimmed_overflow_child",
        &[("YIELDLOOP_TRIMMED_OVERFLOW_CHILD", "1")],
    );
    assert!(
        !out.status.success(),
        "child survived an overflow: {stderr}"
    );
    assert!(
        stderr.contains("'cold-diver' (id ")
            && stderr.contains(") overflowed its stack of 65536 bytes"),
        "no clear report in: {stderr}"
    );
}

/// The child half of the fallback test: reports the guard mode and the
/// mapping count after carving 1,000 stacks (on Linux; other systems have
/// no `/proc/self/maps`, and report `unknown`).
#[test]
fn fallback_guard_child() {
    if std::env::var_os("YIELDLOOP_FALLBACK_CHILD").is_none() {
        return;
    }
    yieldloop::run(|| {
        let maps = || {
            std::fs::read_to_string("/proc/self/maps")
                .ok()
                .map(|m| m.lines().count())
        };
        let before = maps();
        let hs: Vec<_> = (0..1_000)
            .map(|_| yieldloop::spawn(|| yieldloop::sleep(std::time::Duration::from_millis(5))))
            .collect();
        let during = maps();
        for h in hs {
            h.join().unwrap();
        }
        let added = match (before, during) {
            (Some(b), Some(d)) => (d - b).to_string(),
            _ => "unknown".to_string(),
        };
        eprintln!(
            "guards_use_madvise={} mappings_added={added}",
            yieldloop::diag::guards_use_madvise(),
        );
        let h = yieldloop::Builder::new()
            .name("fallback-diver")
            .stack_size(64 * 1024)
            .spawn(|| recurse(0))
            .unwrap();
        let _ = h.join();
    });
}

/// With `YIELDLOOP_STACK_GUARD=mprotect` the pool uses the `mprotect`
/// fallback (the only way on other systems and with the `portable`
/// feature): each guard splits its mapping (about two mappings per stack,
/// counted on Linux), and an overflow is still caught and reported.
#[test]
fn mprotect_fallback_guards_and_reports() {
    let (_, stderr) = run_self(
        "fallback_guard_child",
        &[
            ("YIELDLOOP_FALLBACK_CHILD", "1"),
            ("YIELDLOOP_STACK_GUARD", "mprotect"),
        ],
    );
    assert!(
        stderr.contains("guards_use_madvise=false"),
        "not the fallback: {stderr}"
    );
    let added = stderr
        .split("mappings_added=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no mapping count in: {stderr}"));
    if cfg!(target_os = "linux") {
        let added: usize = added
            .parse()
            .unwrap_or_else(|_| panic!("no mapping count in: {stderr}"));
        assert!(
            added >= 1_500,
            "mprotect guards should split mappings, added {added}"
        );
    }
    assert!(
        stderr.contains("'fallback-diver' (id ")
            && stderr.contains(") overflowed its stack of 65536 bytes"),
        "no clear report in: {stderr}"
    );
}
