//! Helpers shared by the integration tests. Each section is independent;
//! a test file includes this module with `mod util;` and uses what it needs.
#![allow(dead_code)]

// ---------------------------------------------------------------------------
// Example programs: building, finding and running the binaries of
// `examples/` from a test.
// ---------------------------------------------------------------------------

/// Running the programs in `examples/` as child processes, each bounded in
/// time and killed if it outlives its test.
#[allow(dead_code)]
pub mod example {
    use std::collections::HashSet;
    use std::io::{BufRead, BufReader, Read};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
    use std::sync::{Mutex, OnceLock};
    use std::thread::{self, JoinHandle};
    use std::time::{Duration, Instant};

    /// How long any example may run before the test kills it and fails.
    /// Generous: the examples run for well under a second with test
    /// parameters, but the machines running the tests are shared and noisy.
    pub const TIMEOUT: Duration = Duration::from_secs(30);

    /// The path of example `name`'s binary, built for the same profile as
    /// the running test.
    ///
    /// `cargo test` builds the examples before it runs the tests, but
    /// `cargo test --test NAME` does not, so the first call for each example
    /// runs `cargo build --example NAME` (a quick no-op when it is up to
    /// date). Only the examples a test uses are built, so one example that
    /// does not compile fails only the tests that run it.
    ///
    /// # Panics
    ///
    /// If the build fails or the binary is not where it should be.
    pub fn path(name: &str) -> PathBuf {
        let build = BUILD.get_or_init(Build::for_this_test);
        build.ensure(name);
        let bin = build
            .profile_dir
            .join("examples")
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "example binary {} not found", bin.display());
        bin
    }

    /// How to build examples into the directories this test binary came
    /// from.
    struct Build {
        /// `target/<profile>` or `target/<triple>/<profile>`.
        profile_dir: PathBuf,
        /// The target directory to pass as `CARGO_TARGET_DIR`.
        target_dir: PathBuf,
        /// `cargo build` options selecting the profile (and target triple).
        options: Vec<String>,
        /// The examples built so far. Locked for the whole of a build, so
        /// that two tests wanting the same example build it once.
        built: Mutex<HashSet<String>>,
    }

    static BUILD: OnceLock<Build> = OnceLock::new();

    impl Build {
        fn for_this_test() -> Build {
            // The test runs as `<profile_dir>/deps/<test>-<hash>`.
            let exe = std::env::current_exe().expect("the test binary's path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("the test binary lives in <target>/<profile>/deps")
                .to_path_buf();
            let mut target_dir = profile_dir.parent().expect("a target dir").to_path_buf();
            let mut options = Vec::new();
            match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") => {}
                Some("release") => options.push("--release".to_string()),
                Some(other) => options.extend(["--profile".to_string(), other.to_string()]),
                None => panic!("odd profile directory {}", profile_dir.display()),
            }
            // A cross build nests the profile under the target triple; the
            // real target directory (the one with CACHEDIR.TAG) is one up.
            if !target_dir.join("CACHEDIR.TAG").exists() {
                if let (Some(triple), Some(parent)) = (
                    target_dir.file_name().and_then(|n| n.to_str()),
                    target_dir.parent(),
                ) {
                    if parent.join("CACHEDIR.TAG").exists() {
                        options.extend(["--target".to_string(), triple.to_string()]);
                        target_dir = parent.to_path_buf();
                    }
                }
            }
            // The examples get the features this test was built with, so
            // that `cargo test --features portable` runs portable examples.
            for (on, feature) in [
                (cfg!(feature = "portable"), "portable"),
                (cfg!(feature = "bench-hooks"), "bench-hooks"),
            ] {
                if on {
                    options.extend(["--features".to_string(), feature.to_string()]);
                }
            }
            Build {
                profile_dir,
                target_dir,
                options,
                built: Mutex::new(HashSet::new()),
            }
        }

        /// Builds example `name` unless this test binary did already.
        fn ensure(&self, name: &str) {
            let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
            if built.contains(name) {
                return;
            }
            let out = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", name])
                .args(&self.options)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .env("CARGO_TARGET_DIR", &self.target_dir)
                .output()
                .expect("running cargo build");
            assert!(
                out.status.success(),
                "cargo build --example {name} failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            built.insert(name.to_string());
        }
    }

    /// What a finished example printed.
    #[derive(Debug)]
    pub struct Output {
        /// How it exited.
        pub status: ExitStatus,
        /// Everything it wrote to stdout.
        pub stdout: String,
        /// Everything it wrote to stderr.
        pub stderr: String,
    }

    impl Output {
        /// The stdout lines.
        pub fn lines(&self) -> Vec<&str> {
            self.stdout.lines().collect()
        }

        /// The last stdout line.
        ///
        /// # Panics
        ///
        /// If stdout is empty.
        pub fn last_line(&self) -> &str {
            self.stdout
                .lines()
                .last()
                .unwrap_or_else(|| panic!("no output at all; stderr:\n{}", self.stderr))
        }

        /// Panics, showing all the output, unless the program exited with 0.
        pub fn assert_success(&self) -> &Output {
            assert!(self.status.success(), "example failed: {self}");
            self
        }
    }

    impl std::fmt::Display for Output {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "{}\n--- stdout:\n{}--- stderr:\n{}",
                self.status, self.stdout, self.stderr
            )
        }
    }

    /// Runs example `name` with `args` to completion and returns its output.
    ///
    /// # Panics
    ///
    /// If it cannot be started, or runs longer than [`TIMEOUT`] (it is
    /// killed first, and the panic shows what it printed so far).
    pub fn run(name: &str, args: &[&str]) -> Output {
        let child = Command::new(path(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start example {name}: {e}"));
        let mut child = KillOnDrop(child);
        let stdout = read_all(child.0.stdout.take());
        let stderr = read_all(child.0.stderr.take());
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = child.0.try_wait().expect("waiting for the example") {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            thread::sleep(Duration::from_millis(10));
        };
        let status = status.unwrap_or_else(|| {
            child.kill();
            child.0.wait().expect("reaping the killed example")
        });
        let output = Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        drop(child);
        assert!(
            Instant::now() < deadline,
            "example {name} {args:?} ran over {TIMEOUT:?} and was killed: {output}"
        );
        output
    }

    /// Reads a pipe to its end on a thread of its own, so that a child
    /// filling one pipe never blocks on it while we wait on the other.
    fn read_all(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
        thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                text = String::from_utf8_lossy(&bytes).into_owned();
            }
            text
        })
    }

    /// A child process that is killed (and reaped) when this is dropped,
    /// so a failing test never leaves it behind.
    #[derive(Debug)]
    pub struct KillOnDrop(pub Child);

    impl KillOnDrop {
        /// Kills the child; it is fine if it has exited already.
        pub fn kill(&mut self) {
            let _ = self.0.kill();
        }
    }

    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            self.kill();
            let _ = self.0.wait();
        }
    }

    /// An example left running (a server), its stderr readable line by line.
    #[derive(Debug)]
    pub struct Running {
        /// The process; killed when this is dropped.
        pub child: KillOnDrop,
        /// Its stderr, one line per message, read by a background thread.
        stderr: Receiver<String>,
    }

    impl Running {
        /// Starts example `name` with `args`, stdout discarded and stderr
        /// captured.
        ///
        /// # Panics
        ///
        /// If it cannot be started.
        pub fn start(name: &str, args: &[&str]) -> Running {
            let mut child = Command::new(path(name))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start example {name}: {e}"));
            let pipe = child.stderr.take().expect("stderr is piped");
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            Running {
                child: KillOnDrop(child),
                stderr: rx,
            }
        }

        /// Waits up to [`TIMEOUT`] for a stderr line starting with
        /// `prefix` and returns the rest of it; lines before it are skipped.
        ///
        /// # Panics
        ///
        /// If no such line comes in time or stderr closes first.
        pub fn stderr_line(&self, prefix: &str) -> String {
            let deadline = Instant::now() + TIMEOUT;
            let mut seen = Vec::new();
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.stderr.recv_timeout(left) {
                    Ok(line) => match line.strip_prefix(prefix) {
                        Some(rest) => return rest.to_string(),
                        None => seen.push(line),
                    },
                    Err(RecvTimeoutError::Timeout) => {
                        panic!("no stderr line {prefix:?} within {TIMEOUT:?}; got {seen:?}")
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        panic!("stderr closed before a line {prefix:?}; got {seen:?}")
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Runtime tests: descriptors, CPU time, random data, quiet panics.
// ---------------------------------------------------------------------------

/// How many descriptors this process has open (entries of `/proc/self/fd`).
///
/// The directory handle used to list them is counted too, the same way on
/// every call, so two counts compare fairly.
#[cfg(target_os = "linux")]
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("listing /proc/self/fd")
        .count()
}

/// How many descriptors this process has open: each number below the
/// descriptor limit (at most 65,536) that `fcntl(F_GETFD)` accepts. Systems
/// other than Linux have no `/proc/self/fd` (FreeBSD's `/dev/fd` shows only
/// 0 to 2 unless fdescfs is mounted).
#[cfg(not(target_os = "linux"))]
pub fn open_fds() -> usize {
    // SAFETY: an all-zero `rlimit` is a valid value of this plain C struct.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `limit` is a valid, writable `rlimit` for the call to fill.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(r, 0, "getrlimit: {}", std::io::Error::last_os_error());
    let top = limit.rlim_cur.min(65_536) as libc::c_int;
    (0..top)
        // SAFETY: F_GETFD only reads the flags of a descriptor number, open
        // or not; a closed one gives EBADF.
        .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
        .count()
}

/// CPU time (user + system) the calling thread has used so far.
#[cfg(not(target_vendor = "apple"))]
pub fn thread_cpu_time() -> std::time::Duration {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the call to fill.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(r, 0, "getrusage: {}", std::io::Error::last_os_error());
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time (user + system) the calling thread has used so far: macOS has
/// no `RUSAGE_THREAD`, but has the thread's CPU clock.
#[cfg(target_vendor = "apple")]
pub fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A peer thread that accepts one connection on `l` and writes `data` to
/// it in random chunks (1 to 3,000 bytes, from `seed`), sleeping up to 2 ms
/// before one chunk in eight, then closes it: a stream that arrives in
/// pieces of every size, for the readers' tests.
pub fn send_in_random_chunks(
    l: std::net::TcpListener,
    seed: u64,
    data: Vec<u8>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::Write;
        let (mut s, _) = l.accept().unwrap();
        let mut rng = XorShift::new(seed ^ 0xabcd);
        let mut at = 0;
        while at < data.len() {
            let n = (rng.range(1, 3000) as usize).min(data.len() - at);
            s.write_all(&data[at..at + n]).unwrap();
            at += n;
            if rng.below(8) == 0 {
                std::thread::sleep(std::time::Duration::from_micros(rng.below(2000)));
            }
        }
    })
}

/// A peer thread that accepts one connection on `l`, writes `data` and
/// shuts its write side at once (so that the data and the end of the
/// stream tend to arrive together), then keeps the socket open until the
/// reader closes its end.
pub fn send_and_shut(l: std::net::TcpListener, data: &'static [u8]) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut s, _) = l.accept().unwrap();
        s.write_all(data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    })
}

/// A tiny xorshift64* generator: reproducible test data without a crate.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (any value, zero included).
    pub fn new(seed: u64) -> XorShift {
        XorShift((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// `len` random bytes from `seed`.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    XorShift::new(seed).bytes(len)
}

/// Panics whose message contains this are expected by the test that causes
/// them; [`quiet_panics`] keeps their reports off stderr.
pub const EXPECTED_PANIC: &str = "deliberate test panic";

/// Serialises the swapping of the process-wide panic hook.
static HOOK_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` with a panic hook that drops the report of every panic whose
/// message contains [`EXPECTED_PANIC`] and passes every other panic on to
/// the hook installed before; restores that hook afterwards. A panic of `f`
/// itself propagates once the hook is restored.
///
/// Do not nest calls, or call it from two tasks of one thread at once.
pub fn quiet_panics<R>(f: impl FnOnce() -> R) -> R {
    use std::panic;
    let _lock = HOOK_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let previous = std::sync::Arc::new(panic::take_hook());
    let forward = previous.clone();
    panic::set_hook(Box::new(move |info| {
        if !panic_message(info.payload()).is_some_and(|m| m.contains(EXPECTED_PANIC)) {
            forward(info);
        }
    }));
    let result = panic::catch_unwind(panic::AssertUnwindSafe(f));
    // Dropping our hook drops its clone of `previous`.
    drop(panic::take_hook());
    match std::sync::Arc::try_unwrap(previous) {
        Ok(hook) => panic::set_hook(hook),
        Err(shared) => panic::set_hook(Box::new(move |info| shared(info))),
    }
    match result {
        Ok(v) => v,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// The message of a panic payload, when it is a string.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Runs `f`, expects it to panic, and returns the panic's message.
pub fn panic_message_of<R>(f: impl FnOnce() -> R) -> String {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic, but the call returned"),
        Err(payload) => panic_message(&*payload)
            .expect("the panic payload is a string")
            .to_string(),
    }
}

/// Reads from a blocking std socket until end-of-file, an error or `limit`
/// passes; returns the bytes and how the reading ended.
pub fn read_to_end_std(
    stream: &mut std::net::TcpStream,
    limit: std::time::Duration,
) -> (Vec<u8>, std::io::Result<()>) {
    use std::io::{ErrorKind, Read};
    let start = std::time::Instant::now();
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return (data, Err(ErrorKind::TimedOut.into()));
        }
        if let Err(e) = stream.set_read_timeout(Some(left)) {
            return (data, Err(e));
        }
        match stream.read(&mut buf) {
            Ok(0) => return (data, Ok(())),
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (data, Err(e)),
        }
    }
}

/// Polls `cond`, sleeping 1 ms between tries (the task inside a task, the
/// thread outside one), until it holds or `limit` passes; returns whether
/// it held.
pub fn wait_until(limit: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    let in_task = yieldloop::current_id().is_some();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        if in_task {
            yieldloop::sleep(std::time::Duration::from_millis(1));
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Environment variable naming the test a child process of
/// [`in_child_process`] is to run.
const CHILD_TEST_VAR: &str = "YIELDLOOP_TEST_CHILD";

/// Runs `body` in a child process: the test binary again, running only the
/// test `name` (which must be the calling test's name). For checks whose
/// failure may abort the whole process, so that an abort fails this one
/// test instead of every test in the binary.
///
/// # Panics
///
/// If the child fails, aborts or runs over 30 s; the panic shows its
/// output.
pub fn in_child_process(name: &str, body: impl FnOnce()) {
    if std::env::var(CHILD_TEST_VAR).as_deref() == Ok(name) {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_TEST_VAR, name)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting the child test process");
    let pipe = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let out = pipe(child.stdout.take().map(|p| Box::new(p) as _));
    let err = pipe(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        // Exactly one test must have run: a wrong name would run none.
        Some(s) if s.success() => assert!(
            out.contains("test result: ok. 1 passed"),
            "the child process did not run test {name}:\n{out}"
        ),
        Some(s) => panic!(
            "the test failed in its child process ({s})\n--- stdout:\n{out}--- stderr:\n{err}"
        ),
        None => panic!("the child process ran over 30 s\n--- stdout:\n{out}--- stderr:\n{err}"),
    }
}

// ---------------------------------------------------------------------------
// End of the runtime-test helpers.
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// A ticker: a task beside blocking-style calls that shows whether they
// held the thread.
// ---------------------------------------------------------------------------

/// A task that sleeps 1 ms at a time, on yieldloop's own timer, and
/// returns its longest gap between ticks once `stop` is set (or 20 s
/// pass). A call that held the thread shows as a gap at least as long.
pub fn ticker(
    stop: std::rc::Rc<std::cell::Cell<bool>>,
) -> yieldloop::JoinHandle<std::time::Duration> {
    yieldloop::spawn(move || {
        let mut longest = std::time::Duration::ZERO;
        let mut last = std::time::Instant::now();
        let end = last + std::time::Duration::from_secs(20);
        while !stop.get() && std::time::Instant::now() < end {
            yieldloop::sleep(std::time::Duration::from_millis(1));
            let now = std::time::Instant::now();
            longest = longest.max(now - last);
            last = now;
        }
        longest
    })
}

/// Runs `f` in a task beside a [`ticker`] (started 5 ms before `f`);
/// returns `f`'s value and the ticker's longest gap.
pub fn with_ticker<T: 'static>(f: impl FnOnce() -> T + 'static) -> (T, std::time::Duration) {
    yieldloop::run(move || {
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        let tick = ticker(stop.clone());
        yieldloop::sleep(std::time::Duration::from_millis(5));
        let v = f();
        stop.set(true);
        (v, tick.join().unwrap())
    })
}

// ---------------------------------------------------------------------------
// A time limit for tests that could hang: the body runs on a thread of its
// own, so a deadlock fails the test instead of stalling the suite.
// ---------------------------------------------------------------------------

/// The most a test run through [`within`] may take.
pub const WITHIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `f` on a thread of its own and fails if it takes longer than
/// [`WITHIN_LIMIT`]; a panic in `f` comes out as the test's panic.
pub fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(WITHIN_LIMIT) {
        Ok(v) => {
            h.join().unwrap();
            v
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(h.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("test took more than {WITHIN_LIMIT:?}")
        }
    }
}

// ---------------------------------------------------------------------------
// Temporary directories for Unix socket paths.
// ---------------------------------------------------------------------------

/// A directory of its own under the system's temp dir, removed on drop.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "yieldloop-{tag}-{}-{nanos}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------
// Real database servers (redis-server, PostgreSQL) from the OS packages.
// ---------------------------------------------------------------------------

pub mod servers;
