//! Real database servers for tests: `redis-server`, PostgreSQL and MariaDB
//! from the OS packages, each started on a free 127.0.0.1 port in a fresh
//! temporary directory and stopped by its pid when the handle is dropped.
//!
//! Where a server's binaries are missing, [`redis`], [`postgres`] and
//! [`mariadb`] return `None` after printing a line naming the package to
//! install, so a plain
//! `cargo test` passes on a machine without them. With the environment
//! variable `YIELDLOOP_REQUIRE_SERVERS=1` (CI sets it after installing the
//! packages) a missing binary fails the test instead of skipping it.
//!
//! Only the standard library is used (no `libc`), so that the recipes'
//! tests can include this file too:
//! `#[path = "../../tests/util/servers.rs"] mod servers;`.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a server may take to accept connections. Generous: PostgreSQL's
/// start-up on a busy shared machine takes seconds.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server may take to exit after each stop signal before the
/// next, firmer one (SIGKILL last).
pub const STOP_TIMEOUT: Duration = Duration::from_secs(8);

/// How many times a start is retried when another process took the free
/// port between our probe and the server's own bind.
const PORT_ATTEMPTS: u32 = 5;

/// Reports that a server test is skipped, or fails when the environment
/// asks for the servers to be there. Written straight to the process's
/// stderr rather than through `eprintln!`, so that the test harness's output
/// capture does not hide it.
fn skip(what: &str, package: &str) {
    let line = format!("skipping: {what} not found (apt-get install {package})");
    if std::env::var_os("YIELDLOOP_REQUIRE_SERVERS").is_some_and(|v| v == "1") {
        panic!("{line}; YIELDLOOP_REQUIRE_SERVERS=1 asks for it to be installed");
    }
    let _ = writeln!(std::io::stderr(), "{line}");
}

// ---------------------------------------------------------------------------
// Temporary directory and the child process, shared by all the servers.
// ---------------------------------------------------------------------------

/// A fresh directory under the system's temp dir, removed on drop.
#[derive(Debug)]
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(tag: &str) -> ScratchDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        // `create_dir` (not `_all`) fails on a name already taken, so two
        // test processes never share a directory.
        for _ in 0..100 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = std::env::temp_dir().join(format!(
                "yieldloop-{tag}-{}-{}-{nanos}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            match fs::create_dir(&dir) {
                Ok(()) => return ScratchDir(dir),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("creating {}: {e}", dir.display()),
            }
        }
        panic!("no free temporary directory name for {tag}");
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A port on 127.0.0.1 that nobody was listening on a moment ago. Another
/// process may take it before the server binds it: callers retry.
fn free_port() -> u16 {
    let probe = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    probe.local_addr().expect("local_addr").port()
}

/// Sends `signal` (a name such as `TERM`) to `pid` with the `kill` program:
/// the standard library can only send SIGKILL, and this file does without
/// `libc`.
fn send_signal(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The processes whose parent is `pid`, from `/proc` (none where there is
/// no `/proc`).
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| proc_stat(p).is_some_and(|(_, ppid)| ppid == pid))
        .collect()
}

/// Whether process `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// The state letter and the parent's pid of process `pid`, from
/// `/proc/PID/stat`.
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: the fields after
    // its closing parenthesis are the state and the parent's pid.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether a process with this pid exists (signal 0 checks without
/// sending anything).
pub fn pid_alive(pid: u32) -> bool {
    send_signal(pid, "0")
}

/// A running server process: stopped on drop with each of `stop_signals` in
/// turn, each given [`STOP_TIMEOUT`] to work, then SIGKILL; always reaped.
#[derive(Debug)]
struct Process {
    child: Option<Child>,
    stop_signals: &'static [&'static str],
    log: PathBuf,
}

impl Process {
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_else(|e| format!("(no log: {e})"))
    }

    /// Whether the process has exited (and was reaped by this call).
    fn exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => !matches!(c.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Stops the server by its pid. Idempotent.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        for signal in self.stop_signals {
            send_signal(child.id(), signal);
            let deadline = Instant::now() + STOP_TIMEOUT;
            while Instant::now() < deadline {
                match child.try_wait() {
                    Ok(Some(_)) => return,
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                    Err(_) => break,
                }
            }
            let _ = writeln!(
                std::io::stderr(),
                "server {} still running {STOP_TIMEOUT:?} after SIG{signal}\n--- log:\n{}",
                child.id(),
                self.log_text()
            );
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills the server at once with SIGKILL and reaps it: a server that
    /// goes away without a goodbye, for fault tests.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Why a start attempt failed.
enum StartError {
    /// Another process holds the port: try another.
    PortTaken,
    /// Anything else, with the explanation and the server's log.
    Failed(String),
}

/// Waits until `proc` accepts TCP connections on `addr` and `ready` says
/// its log shows it is ready; fails early if it exits.
fn wait_ready(
    proc: &mut Process,
    addr: SocketAddr,
    name: &str,
    ready: impl Fn(&str) -> bool,
) -> Result<(), StartError> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if proc.exited() {
            let log = proc.log_text();
            return Err(if log.contains("Address already in use") {
                StartError::PortTaken
            } else {
                StartError::Failed(format!("{name} exited during start-up\n--- log:\n{log}"))
            });
        }
        if ready(&proc.log_text())
            && TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let log = proc.log_text();
            proc.stop();
            return Err(StartError::Failed(format!(
                "{name} did not accept connections on {addr} within {START_TIMEOUT:?}\n--- log:\n{log}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Finds `name` in `PATH` or the usual system directories.
fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(
            [
                "/usr/sbin",
                "/usr/bin",
                "/usr/local/bin",
                "/opt/homebrew/bin",
            ]
            .map(PathBuf::from),
        )
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

// ---------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------

/// A `redis-server` of the test's own, on a free port of 127.0.0.1, with no
/// persistence. Stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct RedisServer {
    // Field order: the process stops before its directory is removed.
    proc: Process,
    addr: SocketAddr,
    dir: ScratchDir,
}

/// Starts a `redis-server`, or returns `None` (after saying so) when the
/// binary is not installed.
pub fn redis() -> Option<RedisServer> {
    redis_with(&[])
}

/// Like [`redis`], with extra command-line options for the server, for
/// example `&["--requirepass", "secret"]`.
pub fn redis_with(args: &[&str]) -> Option<RedisServer> {
    let Some(bin) = find_binary("redis-server") else {
        skip("redis-server", "redis-server");
        return None;
    };
    let dir = ScratchDir::new("redis");
    let log = dir.path().join("redis.log");
    let mut last = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let out = File::create(&log).expect("creating the redis log");
        let err = out.try_clone().expect("cloning the log handle");
        let child = Command::new(&bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--logfile", ""])
            .arg("--dir")
            .arg(dir.path())
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut proc = Process {
            child: Some(child),
            stop_signals: &["TERM"],
            log: log.clone(),
        };
        match wait_ready(&mut proc, addr, "redis-server", |_| true) {
            Ok(()) => return Some(RedisServer { proc, addr, dir }),
            Err(StartError::PortTaken) => last = proc.log_text(),
            Err(StartError::Failed(why)) => panic!("{why}"),
        }
    }
    panic!("redis-server found no free port in {PORT_ATTEMPTS} attempts\n--- last log:\n{last}");
}

impl RedisServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://127.0.0.1:PORT/`, for clients that take a URL.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        self.proc.log_text()
    }

    /// Stops the server now (SIGTERM, then SIGKILL), as dropping it would.
    pub fn stop(&mut self) {
        self.proc.stop();
    }

    /// Kills the server with SIGKILL, for tests of a server that vanishes.
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Starts the server again (stopping it first if it still runs) on the
    /// same port and in the same directory, with `args` as [`redis_with`]
    /// takes them: the first start's are not kept. Without persistence the
    /// restarted server starts empty. Its log goes on in the same file.
    ///
    /// # Panics
    ///
    /// When it does not accept connections within [`START_TIMEOUT`].
    pub fn restart(&mut self, args: &[&str]) {
        let bin = find_binary("redis-server").expect("redis-server is no longer installed");
        let port = self.addr.port().to_string();
        let dir = self.dir.path().to_path_buf();
        restart_process(
            &mut self.proc,
            self.addr,
            "redis-server",
            "Ready to accept connections",
            |out, err| {
                Command::new(&bin)
                    .args(["--port", &port, "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                    .args(["--logfile", ""])
                    .arg("--dir")
                    .arg(&dir)
                    .args(args)
                    .current_dir(&dir)
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .spawn()
            },
        );
    }

    /// The server's temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Starts a server process again in place of `proc` (stopped first), on
/// the same address, its output appended to the same log: `spawn` starts
/// it with the log's two handles. It is up once `addr` accepts and the log
/// holds one more `ready_line` than before. A start that fails is tried
/// again for [`START_TIMEOUT`]: a killed server's port, or a killed
/// PostgreSQL's shared memory still held by its exiting backends, may take
/// a moment to be free.
fn restart_process(
    proc: &mut Process,
    addr: SocketAddr,
    name: &str,
    ready_line: &str,
    spawn: impl Fn(File, File) -> std::io::Result<Child>,
) {
    proc.stop();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let before = proc.log_text().matches(ready_line).count();
        let out = File::options()
            .create(true)
            .append(true)
            .open(&proc.log)
            .expect("opening the server log");
        let err = out.try_clone().expect("cloning the log handle");
        let child = spawn(out, err).unwrap_or_else(|e| panic!("restarting {name}: {e}"));
        proc.child = Some(child);
        let why = match wait_ready(proc, addr, name, |log| {
            log.matches(ready_line).count() > before
        }) {
            Ok(()) => return,
            Err(StartError::PortTaken) => format!("{addr} still taken"),
            Err(StartError::Failed(why)) => why,
        };
        proc.stop();
        if Instant::now() >= deadline {
            panic!("{name} did not restart within {START_TIMEOUT:?}: {why}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------

/// A PostgreSQL cluster of the test's own (`initdb` into a temporary
/// directory, then `postgres` on a free port of 127.0.0.1, fsync off).
/// When the tests run as root, both run as the `postgres` system user (or
/// `nobody`), since PostgreSQL refuses root. Stopped when dropped.
#[derive(Debug)]
pub struct PgServer {
    proc: Process,
    addr: SocketAddr,
    password: Option<String>,
    dir: ScratchDir,
}

/// The superuser that `initdb` creates, and the database that always exists.
const PG_USER: &str = "postgres";
const PG_DB: &str = "postgres";

/// Starts a PostgreSQL server with trust authentication on 127.0.0.1, or
/// returns `None` (after saying so) when it is not installed.
pub fn postgres() -> Option<PgServer> {
    start_postgres(None)
}

/// Like [`postgres`], but TCP logins need `password` (SCRAM-SHA-256).
pub fn postgres_with_password(password: &str) -> Option<PgServer> {
    start_postgres(Some(password))
}

/// The `bin` directory of the newest PostgreSQL under
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout), else the
/// directory holding `postgres` and `initdb` in `PATH`.
fn pg_bin_dir() -> Option<PathBuf> {
    let newest = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version: Vec<u32> = e
                .file_name()
                .to_str()?
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<_>>()?;
            let bin = e.path().join("bin");
            (bin.join("postgres").is_file() && bin.join("initdb").is_file())
                .then_some((version, bin))
        })
        .max();
    if let Some((_, bin)) = newest {
        return Some(bin);
    }
    let postgres = find_binary("postgres")?;
    let dir = postgres.parent()?.to_path_buf();
    dir.join("initdb").is_file().then_some(dir)
}

/// The output of a short command, trimmed, if it succeeded.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The unprivileged user to run PostgreSQL as, when we are root: its name,
/// uid and gid. `None` when we are not root.
fn pg_run_as() -> Option<(String, u32, u32)> {
    if command_output("id", &["-u"]).as_deref() != Some("0") {
        return None;
    }
    for user in ["postgres", "nobody"] {
        let uid = command_output("id", &["-u", user]).and_then(|s| s.parse().ok());
        let gid = command_output("id", &["-g", user]).and_then(|s| s.parse().ok());
        if let (Some(uid), Some(gid)) = (uid, gid) {
            return Some((user.to_string(), uid, gid));
        }
    }
    panic!(
        "running as root, and neither the postgres nor the nobody user exists to run PostgreSQL as"
    );
}

/// A command for `program`, run as `user` when one is given: `setpriv`
/// replaces itself with the program, so the child's pid is the server's;
/// `runuser` is the fallback.
fn command_as(user: Option<&(String, u32, u32)>, program: &Path) -> Command {
    match user {
        None => Command::new(program),
        Some((name, uid, gid)) => {
            if find_binary("setpriv").is_some() {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(program);
                c
            } else {
                let mut c = Command::new("runuser");
                c.args(["-u", name, "--"]).arg(program);
                c
            }
        }
    }
}

fn start_postgres(password: Option<&str>) -> Option<PgServer> {
    let Some(bin) = pg_bin_dir() else {
        skip(
            "PostgreSQL (initdb and postgres under /usr/lib/postgresql/*/bin)",
            "postgresql",
        );
        return None;
    };
    let user = pg_run_as();
    let dir = ScratchDir::new("postgres");
    if let Some((_, uid, gid)) = &user {
        std::os::unix::fs::chown(dir.path(), Some(*uid), Some(*gid))
            .unwrap_or_else(|e| panic!("chown {}: {e}", dir.path().display()));
    }
    let data = dir.path().join("data");

    // initdb: the cluster, its superuser, and the authentication rules.
    let init_log = dir.path().join("initdb.log");
    let mut initdb = command_as(user.as_ref(), &bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", PG_USER, "-E", "UTF8", "--locale=C", "--no-sync"])
        .args(["--auth-local=trust"])
        .env("LC_ALL", "C")
        .current_dir(dir.path())
        .stdin(Stdio::null());
    if let Some(password) = password {
        let pwfile = dir.path().join("pwfile");
        fs::write(&pwfile, password).expect("writing the password file");
        if let Some((_, uid, gid)) = &user {
            let _ = std::os::unix::fs::chown(&pwfile, Some(*uid), Some(*gid));
        }
        initdb
            .arg(format!("--pwfile={}", pwfile.display()))
            .arg("--auth-host=scram-sha-256");
    } else {
        initdb.arg("--auth-host=trust");
    }
    let out = initdb
        .output()
        .unwrap_or_else(|e| panic!("starting initdb: {e}"));
    let _ = fs::write(&init_log, [&out.stdout[..], &out.stderr[..]].concat());
    if !out.status.success() {
        panic!(
            "initdb failed ({})\n--- stdout:\n{}--- stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let log = dir.path().join("postgres.log");
    let mut last = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let out = File::create(&log).expect("creating the postgres log");
        let err = out.try_clone().expect("cloning the log handle");
        let child = command_as(user.as_ref(), &bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .arg("-k")
            .arg(dir.path())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off"])
            .args(["-c", "dynamic_shared_memory_type=mmap"])
            .args(["-c", "logging_collector=off", "-c", "lc_messages=C"])
            .args(["-c", "authentication_timeout=5s"])
            .env("LC_ALL", "C")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting postgres: {e}"));
        // SIGINT is PostgreSQL's "fast shutdown": it ends open sessions and
        // exits; SIGTERM ("smart") would wait for every client to leave.
        // SIGQUIT ("immediate") and SIGKILL follow if it hangs on.
        //
        // A connection that has not sent its start-up packet when the stop
        // comes keeps the postmaster waiting (seen with PostgreSQL 15, even
        // through SIGQUIT) until `authentication_timeout` ends that backend:
        // 60 s by default, 5 s here, which bounds such a stop and still
        // leaves a loaded machine time to log in.
        let mut proc = Process {
            child: Some(child),
            stop_signals: &["INT", "QUIT"],
            log: log.clone(),
        };
        let ready = |log: &str| log.contains("database system is ready to accept connections");
        match wait_ready(&mut proc, addr, "postgres", ready) {
            Ok(()) => {
                return Some(PgServer {
                    proc,
                    addr,
                    password: password.map(str::to_string),
                    dir,
                })
            }
            Err(StartError::PortTaken) => last = proc.log_text(),
            Err(StartError::Failed(why)) => panic!("{why}"),
        }
    }
    panic!("postgres found no free port in {PORT_ATTEMPTS} attempts\n--- last log:\n{last}");
}

impl PgServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The superuser to log in as.
    pub fn user(&self) -> &str {
        PG_USER
    }

    /// A database that exists.
    pub fn dbname(&self) -> &str {
        PG_DB
    }

    /// The password TCP logins need, or `None` for trust authentication.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// A libpq-style connection string (`host=... port=... user=...
    /// dbname=...`, and `password=...` when one is set), as
    /// `tokio_postgres::Config` parses it.
    pub fn connection_string(&self) -> String {
        let mut s = format!(
            "host={} port={} user={} dbname={}",
            self.addr.ip(),
            self.addr.port(),
            PG_USER,
            PG_DB
        );
        if let Some(p) = &self.password {
            s.push_str(&format!(" password={p}"));
        }
        s
    }

    /// The directory holding the server's Unix socket (`-k`).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's (postmaster's) process id.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        self.proc.log_text()
    }

    /// Stops the server now (fast shutdown, then SIGKILL), as dropping it
    /// would.
    pub fn stop(&mut self) {
        self.proc.stop();
    }

    /// Kills the server with SIGKILL, its backends with it, for tests of a
    /// server that vanishes: once this returns, no process of the server is
    /// left to answer on a connection. (Killed alone, the postmaster leaves
    /// its backends serving their sessions until each notices its death.)
    pub fn kill(&mut self) {
        let pid = self.pid();
        // Stopped, it forks no new backend while its children are listed.
        send_signal(pid, "STOP");
        for child in children_of(pid) {
            send_signal(child, "KILL");
        }
        self.proc.kill();
        // A killed backend is reaped by the postmaster, which is dead, so
        // it is gone once it is a zombie (or reaped by init).
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline && children_of(pid).iter().any(|&c| running(c)) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Starts the server again (stopping it first if it still runs) on the
    /// same port, over the same data directory: the tables and the
    /// password survive, sessions do not. Its log goes on in the same
    /// file.
    ///
    /// # Panics
    ///
    /// When it does not accept connections within [`START_TIMEOUT`].
    pub fn restart(&mut self) {
        let bin = pg_bin_dir().expect("PostgreSQL is no longer installed");
        let user = pg_run_as();
        let port = self.addr.port().to_string();
        let dir = self.dir.path().to_path_buf();
        let ready = "database system is ready to accept connections";
        restart_process(&mut self.proc, self.addr, "postgres", ready, |out, err| {
            // The same settings as the first start (see `start_postgres`).
            command_as(user.as_ref(), &bin.join("postgres"))
                .arg("-D")
                .arg(dir.join("data"))
                .args(["-p", &port])
                .arg("-k")
                .arg(&dir)
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
                .args(["-c", "full_page_writes=off"])
                .args(["-c", "dynamic_shared_memory_type=mmap"])
                .args(["-c", "logging_collector=off", "-c", "lc_messages=C"])
                .args(["-c", "authentication_timeout=5s"])
                .env("LC_ALL", "C")
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
        });
    }
}

// ---------------------------------------------------------------------------
// MariaDB
// ---------------------------------------------------------------------------

/// A MariaDB server of the test's own: a data directory made with
/// `mariadb-install-db` in a temporary directory, then `mariadbd` on a
/// free port of 127.0.0.1, its Unix socket in the same directory. It runs
/// with `--skip-grant-tables`: any user name logs in, without a password
/// (the quickest start that works as root in a container, where the
/// server runs as root too, with `--user=root`). Stopped (SIGTERM, then
/// SIGKILL) when dropped.
#[derive(Debug)]
pub struct MariaDbServer {
    proc: Process,
    addr: SocketAddr,
    dir: ScratchDir,
}

/// Starts a MariaDB server, or returns `None` (after saying so) when it
/// is not installed.
pub fn mariadb() -> Option<MariaDbServer> {
    let server = find_binary("mariadbd").or_else(|| find_binary("mysqld"));
    let install = find_binary("mariadb-install-db").or_else(|| find_binary("mysql_install_db"));
    let (Some(server), Some(install)) = (server, install) else {
        skip(
            "MariaDB (mariadbd and mariadb-install-db)",
            "mariadb-server",
        );
        return None;
    };
    // The server refuses to run as root unless told to.
    let root = command_output("id", &["-u"]).as_deref() == Some("0");
    let dir = ScratchDir::new("mariadb");
    let data = dir.path().join("data");
    // Temporary tables go to the server's own directory: two servers
    // made at once in the shared /tmp collide there.
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).expect("creating the mariadb tmpdir");

    // The system tables, without the test database.
    let out = Command::new(&install)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .args(["--skip-test-db", "--skip-name-resolve"])
        .args(root.then_some("--user=root"))
        .env("LC_ALL", "C")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("starting {}: {e}", install.display()));
    let _ = fs::write(
        dir.path().join("install.log"),
        [&out.stdout[..], &out.stderr[..]].concat(),
    );
    if !out.status.success() {
        panic!(
            "{} failed ({})\n--- stdout:\n{}--- stderr:\n{}",
            install.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let log = dir.path().join("mariadb.log");
    let mut last = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        // The server appends to its error log: start each attempt afresh.
        let out = File::create(&log).expect("creating the mariadb log");
        let err = out.try_clone().expect("cloning the log handle");
        let child = Command::new(&server)
            .arg("--no-defaults")
            .args(root.then_some("--user=root"))
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!(
                "--socket={}",
                dir.path().join("mysql.sock").display()
            ))
            .arg(format!(
                "--pid-file={}",
                dir.path().join("mariadb.pid").display()
            ))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
            .args(["--skip-grant-tables", "--skip-performance-schema"])
            .args([
                "--innodb-buffer-pool-size=16M",
                "--innodb-flush-log-at-trx-commit=0",
            ])
            .env("LC_ALL", "C")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", server.display()));
        let mut proc = Process {
            child: Some(child),
            stop_signals: &["TERM"],
            log: log.clone(),
        };
        let ready = |log: &str| log.contains("ready for connections");
        match wait_ready(&mut proc, addr, "mariadbd", ready) {
            Ok(()) => return Some(MariaDbServer { proc, addr, dir }),
            Err(StartError::PortTaken) => last = proc.log_text(),
            Err(StartError::Failed(why)) => panic!("{why}"),
        }
    }
    panic!("mariadbd found no free port in {PORT_ATTEMPTS} attempts\n--- last log:\n{last}");
}

impl MariaDbServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `mysql://root@127.0.0.1:PORT/mysql`, for clients that take a URL
    /// (any user name would do: the server checks none).
    pub fn url(&self) -> String {
        format!("mysql://root@{}/mysql", self.addr)
    }

    /// The server's Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("mysql.sock")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        self.proc.log_text()
    }

    /// Stops the server now (SIGTERM, then SIGKILL), as dropping it would.
    pub fn stop(&mut self) {
        self.proc.stop();
    }

    /// Kills the server with SIGKILL, for tests of a server that vanishes.
    pub fn kill(&mut self) {
        self.proc.kill();
    }
}
