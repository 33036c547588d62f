//! What the pool's tests share: a line server on `127.0.0.1:0` (a thread
//! per connection, so that it answers whatever the pool's users block or
//! pause on), and a [`Manage`] type for its connections on `std` sockets,
//! which are `Send`: their pool is one for every thread.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yieldloop_pool::{CheckoutTimeout, Manage};

/// A line server: `ID` answers the connection's number (from 1), `PING`
/// answers `PONG`, anything else is echoed.
#[derive(Clone, Debug)]
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<ServerState>,
}

#[derive(Debug, Default)]
struct ServerState {
    /// The open connections (for `kill_all`), with their numbers.
    open: Mutex<Vec<(u64, TcpStream)>>,
    accepted: AtomicU64,
    /// The most connections open at once.
    peak: AtomicUsize,
}

impl Server {
    /// Starts a server on a free port.
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the line server");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(ServerState::default());
        let theirs = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let id = theirs.accepted.fetch_add(1, Ordering::SeqCst) + 1;
                {
                    let mut open = theirs.open.lock().unwrap();
                    open.push((id, stream.try_clone().unwrap()));
                    theirs.peak.fetch_max(open.len(), Ordering::SeqCst);
                }
                let state = theirs.clone();
                std::thread::spawn(move || {
                    serve(id, &stream);
                    state.open.lock().unwrap().retain(|(i, _)| *i != id);
                });
            }
        });
        Server { addr, shared }
    }

    /// Connections open at the server now.
    pub fn open(&self) -> usize {
        self.shared.open.lock().unwrap().len()
    }

    /// The most connections it has had open at once.
    pub fn peak(&self) -> usize {
        self.shared.peak.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Closes every open connection from the server's side.
    pub fn kill_all(&self) {
        for (_, s) in self.shared.open.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Waits (up to 5 s) until `n` connections are open at the server.
    pub fn wait_open(&self, n: usize) {
        wait_for(|| self.open() == n, &format!("{n} connections open"));
    }
}

/// One connection's answers until it closes.
fn serve(id: u64, stream: &TcpStream) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
        let answer = match line.trim_end() {
            "ID" => id.to_string(),
            "PING" => "PONG".to_string(),
            other => other.to_string(),
        };
        if (&*stream)
            .write_all(format!("{answer}\n").as_bytes())
            .is_err()
        {
            return;
        }
        line.clear();
    }
}

/// Polls `done` every millisecond, failing after 5 s.
pub fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "waited 5 s for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Connects to a [`Server`], counting what the pool asks of it.
#[derive(Clone, Debug)]
pub struct Lines {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
}

/// How often the pool called each of [`Lines`]'s methods.
#[derive(Debug, Default)]
pub struct Counts {
    pub connects: AtomicUsize,
    pub checks: AtomicUsize,
    pub discards: AtomicUsize,
}

impl Counts {
    pub fn get(field: &AtomicUsize) -> usize {
        field.load(Ordering::SeqCst)
    }
}

/// A connection: the server's number for it, the stream, and whether a
/// call on it failed.
#[derive(Debug)]
pub struct Conn {
    pub id: u64,
    reader: BufReader<TcpStream>,
    pub broken: bool,
}

impl Conn {
    /// One line out, one line back; a failure marks the connection broken.
    pub fn ask(&mut self, line: &str) -> io::Result<String> {
        let result = (|| {
            self.reader
                .get_mut()
                .write_all(format!("{line}\n").as_bytes())?;
            let mut answer = String::new();
            if self.reader.read_line(&mut answer)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            Ok(answer.trim_end().to_string())
        })();
        self.broken |= result.is_err();
        result
    }
}

impl Lines {
    pub fn new(server: &Server) -> Lines {
        Lines {
            addr: server.addr,
            counts: Arc::default(),
        }
    }
}

impl Manage for Lines {
    type Conn = Conn;
    type Error = io::Error;

    fn connect(&self) -> io::Result<Conn> {
        self.counts.connects.fetch_add(1, Ordering::SeqCst);
        let stream = TcpStream::connect(self.addr)?;
        let mut conn = Conn {
            id: 0,
            reader: BufReader::new(stream),
            broken: false,
        };
        conn.id = conn.ask("ID")?.parse().expect("a number");
        Ok(conn)
    }

    fn is_broken(&self, conn: &Conn) -> bool {
        conn.broken
    }

    fn check(&self, conn: &mut Conn) -> io::Result<()> {
        self.counts.checks.fetch_add(1, Ordering::SeqCst);
        match conn.ask("PING")?.as_str() {
            "PONG" => Ok(()),
            other => Err(io::Error::other(format!("PING answered {other:?}"))),
        }
    }

    fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> io::Error {
        timeout.into()
    }

    fn discard(&self, conn: Conn) {
        self.counts.discards.fetch_add(1, Ordering::SeqCst);
        drop(conn);
    }
}
