//! What the tests share: a server on a thread of the test, raw
//! connections, and a reader of answers.

#![allow(dead_code)] // Each test file uses its own part.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use yieldloop_http::{Request, Response, ServeConfig, Shutdown, Summary};

/// How long a test waits for any one thing before it fails. Generous: the
/// machines running the tests are shared.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A server running on a thread of the test; drained when dropped.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What drains it.
    pub stop: Shutdown,
    /// What `run` returned.
    done: mpsc::Receiver<std::io::Result<Summary>>,
}

impl Running {
    /// Serves `handler` with `config` (signals off: the test process is
    /// shared) on one worker.
    pub fn start<H>(config: ServeConfig, handler: H) -> Running
    where
        H: Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
    {
        let server = config.signals(false).bind("127.0.0.1:0", 1).unwrap();
        let (addr, stop) = (server.local_addr(), server.shutdown_handle());
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(server.run(handler));
        });
        Running { addr, stop, done }
    }

    /// Starts the drain and waits (bounded) for `run` to return.
    pub fn drain(&self) -> Summary {
        self.stop.trigger();
        self.done
            .recv_timeout(TIMEOUT)
            .expect("the server returns after a drain")
            .expect("the server ran without error")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.trigger();
    }
}

/// A raw connection with a buffered reader over a clone of it.
pub fn raw(addr: SocketAddr) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

/// One answer as the tests see it.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The status line, without its CRLF.
    pub line: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Answer {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one answer with a `Content-Length` body (no body if `head_only`).
///
/// # Panics
///
/// On anything but a well-formed answer.
pub fn read_answer(r: &mut impl BufRead, head_only: bool) -> Answer {
    let mut line = String::new();
    r.read_line(&mut line).expect("a status line");
    let status = line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).expect("a header line");
        if h == "\r\n" {
            break;
        }
        let (name, value) = h.trim_end().split_once(": ").expect("name: value");
        headers.push((name.to_ascii_lowercase(), value.to_string()));
    }
    let mut answer = Answer {
        status,
        line: line.trim_end().to_string(),
        headers,
        body: Vec::new(),
    };
    if !head_only {
        let len: usize = answer
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        answer.body = vec![0; len];
        r.read_exact(&mut answer.body).expect("the body");
    }
    answer
}

/// Reads until the peer closes (a reset counts); what came.
pub fn read_to_close(r: &mut impl Read) -> Vec<u8> {
    let mut all = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match r.read(&mut chunk) {
            Ok(0) => return all,
            Ok(n) => all.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return all,
            Err(e) => panic!("no close: {e} after {} bytes", all.len()),
        }
    }
}

/// Resident memory of this process in bytes (Linux; 0 elsewhere).
pub fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}
