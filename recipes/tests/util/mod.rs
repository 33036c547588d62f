//! Helpers shared by the recipes' tests: building and running the example
//! programs, servers as child processes, a small HTTP/1.1 response reader
//! of the tests' own (independent of the server's parser), and a ticker
//! task that shows whether a wait froze its thread.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a test waits for any one thing (an answer, a program's end)
/// before it fails. Generous: the machines running the tests are shared.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The path of example `name`'s binary, built for this test's profile.
///
/// `cargo test` builds the examples before running the tests, but
/// `cargo test --test NAME` does not: the first call for each example runs
/// `cargo build --workspace --example NAME` (a quick no-op when it is up to
/// date).
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let exe = std::env::current_exe().expect("the test binary's path");
    // The test runs as `<target>/<profile>/deps/<test>-<hash>`.
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test runs from <target>/<profile>/deps");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory name");
    let target_dir = profile_dir.parent().expect("a target directory");
    let mut built = BUILT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|b| b == name) {
        let mut cargo = Command::new(env!("CARGO"));
        // Cargo gives this test the variables describing its own package
        // (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...). ring's build script
        // asks to be rerun when those change, so passing them on would
        // rebuild ring here and again in the next `cargo test`.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
            ]
            .iter()
            .any(|p| key.starts_with(p))
                || key == "CARGO_PRIMARY_PACKAGE"
                || key == "CARGO_TARGET_TMPDIR"
            {
                cargo.env_remove(&*key);
            }
        }
        let out = cargo
            .args(["build", "--quiet", "--profile"])
            .arg(if profile == "debug" { "dev" } else { profile })
            // The examples live in this package and in the crates beside
            // it (`redis_counter` in yieldloop-redis, ...).
            .args(["--workspace", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir)
            .output()
            .expect("running cargo build");
        assert!(
            out.status.success(),
            "building example {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        built.push(name.to_string());
    }
    let bin = profile_dir.join("examples").join(name);
    assert!(bin.is_file(), "{} is missing", bin.display());
    bin
}

/// A path for a scratch file of this test run, unique per call.
pub fn scratch(name: &str) -> PathBuf {
    static N: Mutex<u32> = Mutex::new(0);
    let mut n = N.lock().unwrap_or_else(|e| e.into_inner());
    *n += 1;
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{}-{name}", std::process::id(), *n))
}

/// A server example running as a child process; killed when dropped.
pub struct Server {
    child: Child,
    /// Where it listens, from its `listening on ADDR` line.
    pub addr: SocketAddr,
    /// Its stderr lines after that one.
    log: mpsc::Receiver<String>,
}

impl Server {
    /// Starts example `name` on `127.0.0.1:0` with `extra` arguments and
    /// waits for its `listening on ADDR` line on stderr.
    pub fn start(name: &str, extra: &[&str]) -> Server {
        Server::start_with(name, extra, None)
    }

    /// Like [`start`](Self::start), with the soft limit on open descriptors
    /// (`RLIMIT_NOFILE`) set to `nofile` first (by `sh`'s `ulimit -n`,
    /// which then `exec`s the example: the process id stays the
    /// example's).
    pub fn start_with(name: &str, extra: &[&str], nofile: Option<u64>) -> Server {
        let mut command = match nofile {
            None => Command::new(example(name)),
            Some(n) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(example(name));
                sh
            }
        };
        let mut child = command
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the example");
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let (tx, log) = mpsc::channel();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + TIMEOUT;
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = log
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("{name} never said where it listens ({e})"));
            if let Some(rest) = line.split("listening on ").nth(1) {
                let addr = rest.split_whitespace().next().unwrap_or("");
                break addr
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: no address in {line:?}"));
            }
        };
        Server { child, addr, log }
    }

    /// The example's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stderr lines printed so far (after the listening line).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Sends signal `name` (`TERM`, `INT`, ...) with the system's `kill`.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits up to `timeout` for the process to end; its exit status, or
    /// `None` if it is still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits up to [`TIMEOUT`] for a stderr line containing `part`.
    pub fn wait_for_line(&self, part: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(part) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line with {part:?} ({e})"),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs example `name` with `args` to its end (killed and failed after
/// [`TIMEOUT`]) and returns its output.
pub fn run_example(name: &str, args: &[&str]) -> Output {
    let mut child = Command::new(example(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the example");
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} {args:?} did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("collecting the output")
}

/// One HTTP answer as the tests see it.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Header names in lower case, values as sent.
    pub headers: HashMap<String, String>,
    /// The body (empty for a HEAD request).
    pub body: Vec<u8>,
}

impl Answer {
    /// A header's value, by its lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// Reads one answer with a `Content-Length` body (no body if `head_only`).
///
/// # Panics
///
/// On anything but a well-formed answer, including the connection closing.
pub fn read_answer(r: &mut impl BufRead, head_only: bool) -> Answer {
    let mut line = String::new();
    r.read_line(&mut line).expect("reading the status line");
    let mut parts = line.trim_end().splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {line:?}");
    let status = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = HashMap::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("reading a header line");
        assert!(line.ends_with("\r\n"), "header line {line:?}");
        if line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':').expect("a header's colon");
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .expect("a Content-Length")
        .parse()
        .expect("a numeric Content-Length");
    let mut body = vec![0; if head_only { 0 } else { len }];
    r.read_exact(&mut body).expect("reading the body");
    Answer {
        status,
        headers,
        body,
    }
}

/// Reads until the peer closes; returns what came. A reset counts as a
/// close. Fails the test if nothing closes within [`TIMEOUT`].
pub fn read_to_close(r: &mut impl Read) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return all,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                assert!(Instant::now() < deadline, "the peer never closed");
            }
            Err(_) => return all,
        }
    }
}

/// A task that sleeps 1 ms at a time until `stop` is set (or 30 s pass),
/// and returns how many times it ticked and its longest gap between ticks.
pub fn ticker(stop: std::rc::Rc<std::cell::Cell<bool>>) -> yieldloop::JoinHandle<(u32, Duration)> {
    yieldloop::spawn(move || {
        let start = Instant::now();
        let (mut ticks, mut longest) = (0u32, Duration::ZERO);
        let mut last = Instant::now();
        while !stop.get() && start.elapsed() < Duration::from_secs(30) {
            yieldloop::sleep(Duration::from_millis(1));
            let now = Instant::now();
            longest = longest.max(now - last);
            last = now;
            ticks += 1;
        }
        (ticks, longest)
    })
}
