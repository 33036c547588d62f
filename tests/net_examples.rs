//! The networking examples (`chat_server`, `port_scan`, `echo_server --workers 2`) run as
//! child processes and checked from the outside with plain std sockets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a client waits for any one answer before the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The examples this file runs.
const EXAMPLES: [&str; 3] = ["chat_server", "port_scan", "echo_server"];

/// The path of an example's binary, built for this test's profile.
///
/// Examples live in `<target>/<profile>/examples/`, next to the `deps/`
/// directory this test runs from. `cargo test --test net_examples` does not
/// build them, so the first call builds the ones used here (a quick no-op
/// when they are up to date).
fn example(name: &str) -> PathBuf {
    static PROFILE_DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = PROFILE_DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test runs from <target>/<profile>/deps")
            .to_path_buf();
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a profile directory name")
            .to_string();
        let target_dir = profile_dir.parent().expect("a target directory");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "--profile"])
            .arg(if profile == "debug" { "dev" } else { &profile })
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir);
        for e in EXAMPLES {
            cmd.args(["--example", e]);
        }
        let out = cmd.output().expect("running cargo build");
        assert!(
            out.status.success(),
            "building the examples failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        profile_dir
    });
    let bin = dir.join("examples").join(name);
    assert!(bin.is_file(), "{} is missing", bin.display());
    bin
}

/// A server example running as a child process; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    /// Starts example `name` on `127.0.0.1:0` with `extra` arguments and
    /// waits for its `listening on ADDR` line on stderr.
    fn start(name: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(example(name))
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the example");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("reading its first line");
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{name} did not say where it listens: {line:?}"));
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        });
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chat client: a connection with a line reader.
struct ChatClient {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    name: String,
}

impl ChatClient {
    /// Connects and reads the welcome line, after which the server has
    /// registered the client.
    fn join(addr: SocketAddr) -> ChatClient {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        let name = stream.local_addr().unwrap().to_string();
        let reader = BufReader::new(stream.try_clone().unwrap());
        let mut c = ChatClient {
            stream,
            reader,
            name,
        };
        let welcome = c.line();
        assert!(
            welcome.starts_with(&format!("* welcome {}", c.name)),
            "{welcome:?}"
        );
        c
    }

    fn say(&mut self, text: &str) {
        self.stream
            .write_all(format!("{text}\n").as_bytes())
            .unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed the connection");
        line.trim_end().to_string()
    }

    /// Reads lines until `want`, at most 20; returns those before it.
    fn expect(&mut self, want: &str) -> Vec<String> {
        let mut before = Vec::new();
        for _ in 0..20 {
            let line = self.line();
            if line == want {
                return before;
            }
            before.push(line);
        }
        panic!("{} never got {want:?}; got {before:?}", self.name);
    }
}

/// Each line a chat client sends reaches every other client, never the
/// sender; joins and leaves are announced.
#[test]
fn chat_server_relays_lines_to_the_others() {
    let server = Server::start("chat_server", &[]);
    let mut a = ChatClient::join(server.addr);
    let mut b = ChatClient::join(server.addr);
    a.expect(&format!("* {} joined", b.name));
    let mut c = ChatClient::join(server.addr);
    a.expect(&format!("* {} joined", c.name));
    b.expect(&format!("* {} joined", c.name));

    a.say("hello from a");
    let from_a = format!("[{}] hello from a", a.name);
    b.expect(&from_a);
    c.expect(&from_a);
    b.say("hi a, b here");
    let from_b = format!("[{}] hi a, b here", b.name);
    a.expect(&from_b);
    c.expect(&from_b);

    let c_name = c.name.clone();
    drop(c);
    let left = format!("* {c_name} left");
    let seen_by_a = a.expect(&left);
    b.expect(&left);
    assert!(
        !seen_by_a.iter().any(|l| l == &from_a),
        "a got its own line back: {seen_by_a:?}"
    );
}

/// Many clients talk at once: each one's every line reaches all others.
#[test]
fn chat_server_with_many_talkers() {
    const CLIENTS: usize = 8;
    const LINES: usize = 5;
    let server = Server::start("chat_server", &[]);
    let mut clients: Vec<ChatClient> = Vec::new();
    for _ in 0..CLIENTS {
        let new = ChatClient::join(server.addr);
        let joined = format!("* {} joined", new.name);
        for c in &mut clients {
            c.expect(&joined);
        }
        clients.push(new);
    }
    let start = Instant::now();
    for i in 0..LINES {
        for c in &mut clients {
            c.say(&format!("line {i}"));
        }
    }
    let names: Vec<String> = clients.iter().map(|c| c.name.clone()).collect();
    for c in &mut clients {
        let mut want: Vec<String> = names
            .iter()
            .filter(|n| **n != c.name)
            .flat_map(|n| (0..LINES).map(move |i| format!("[{n}] line {i}")))
            .collect();
        want.sort();
        let mut got: Vec<String> = (0..want.len()).map(|_| c.line()).collect();
        got.sort();
        assert_eq!(got, want);
    }
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// The scanner finds a listening port in its range and reports the range
/// it scanned.
#[test]
fn port_scan_finds_a_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (first, last) = (port.saturating_sub(10).max(1), port.saturating_add(10));
    let range = format!("{first}-{last}");
    let start = Instant::now();
    let out = Command::new(example("port_scan"))
        .args([
            "--ports",
            &range,
            "--timeout-ms",
            "200",
            "--concurrency",
            "8",
        ])
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.contains(&format!("open {port}").as_str()),
        "port {port} not found: {stdout}"
    );
    let summary = lines.last().unwrap();
    let count = u32::from(last) - u32::from(first) + 1;
    assert!(
        summary.starts_with(&format!("scanned {count} ports on 127.0.0.1 in ")),
        "{summary}"
    );
    drop(listener);
}

/// Bad arguments are refused with exit code 2 and a usage line.
#[test]
fn port_scan_rejects_a_bad_range() {
    let out = Command::new(example("port_scan"))
        .args(["--ports", "100-50"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: port_scan"));
}

/// The echo server with two workers echoes for 16 concurrent clients and
/// closes after a client's half-close.
#[test]
fn echo_server_with_two_workers_echoes_for_many_clients() {
    let server = Server::start("echo_server", &["--workers", "2", "--quiet"]);
    let addr = server.addr;
    let clients: Vec<_> = (0..16)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
                for i in 0..10 {
                    let msg = format!("client {c} message {i}\n");
                    s.write_all(msg.as_bytes()).unwrap();
                    let mut back = vec![0u8; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg.as_bytes());
                }
                s.shutdown(Shutdown::Write).unwrap();
                let mut rest = Vec::new();
                s.read_to_end(&mut rest).unwrap();
                assert!(rest.is_empty());
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}
