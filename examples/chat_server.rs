//! A line-based chat server: every line a client sends reaches every other
//! connected client.
//!
//! ```text
//! cargo run --example chat_server                      # 127.0.0.1:1236
//! cargo run --example chat_server -- --addr 0.0.0.0:7001
//! nc 127.0.0.1 1236                                    # in two terminals
//! ```
//!
//! Each client has two tasks: a reader that turns its lines into messages
//! for everyone else, and a writer that sends it what others said. Between
//! them sits the client's outbox, a queue in an `Rc<RefCell<..>>` (every
//! task of the server runs on one thread, so nothing needs a lock); a
//! writer with nothing to send parks with a `ParkToken`, and whoever posts
//! to its outbox unparks it.
//!
//! A new client first gets a `* welcome NAME, N others online` line; the
//! others get `* NAME joined` and later `* NAME left`; chat lines arrive as
//! `[NAME] text`, where NAME is the client's address. A client that falls
//! more than 1000 lines behind, or sends a line over 4 KiB, is dropped.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::raw::ParkToken;

mod args;
use args::Args;

/// Lines a client may have waiting before it counts as too slow.
const MAX_QUEUED: usize = 1000;
/// The longest line accepted, newline included.
const MAX_LINE: u64 = 4096;

fn main() {
    let mut args = Args::new("chat_server [--addr HOST:PORT]");
    let addr: String = args.value_or("--addr", "127.0.0.1:1236".into());
    args.finish();
    if let Err(e) = yieldloop::run(move || serve(&addr)) {
        eprintln!("chat_server: {e}");
        std::process::exit(1);
    }
}

fn serve(addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    eprintln!("chat_server: listening on {}", listener.local_addr()?);
    let room = Rc::new(Room::default());
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                let room = room.clone();
                yieldloop::spawn(move || session(&room, stream, peer));
            }
            Err(e) => {
                eprintln!("chat_server: accept failed: {e}; retrying in 100 ms");
                yieldloop::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Everyone connected.
#[derive(Default)]
struct Room {
    clients: RefCell<Vec<Rc<Client>>>,
}

impl Room {
    /// Queues `line` for every client but `from`. A client too far behind
    /// is closed instead.
    fn broadcast(&self, from: SocketAddr, line: &str) {
        let line: Rc<str> = Rc::from(line);
        // A copy of the list: posting never pauses, but closing a client
        // must not find the room borrowed.
        let clients = self.clients.borrow().clone();
        for c in clients.iter().filter(|c| c.name != from) {
            if !c.post(line.clone()) {
                eprintln!("chat_server: {} is too slow; dropping it", c.name);
                c.close();
            }
        }
    }

    fn leave(&self, name: SocketAddr) {
        self.clients.borrow_mut().retain(|c| c.name != name);
    }
}

/// One client's outbox and the writer waiting on it.
struct Client {
    name: SocketAddr,
    outbox: RefCell<VecDeque<Rc<str>>>,
    /// The writer, when it is parked waiting for lines.
    waiter: Cell<Option<ParkToken>>,
    /// Set when the client is leaving: the writer stops.
    closed: Cell<bool>,
}

impl Client {
    /// Queues a line and wakes the writer; false if the outbox is full.
    fn post(&self, line: Rc<str>) -> bool {
        {
            let mut outbox = self.outbox.borrow_mut();
            if outbox.len() >= MAX_QUEUED {
                return false;
            }
            outbox.push_back(line);
        }
        self.wake();
        true
    }

    fn close(&self) {
        self.closed.set(true);
        self.wake();
    }

    fn wake(&self) {
        if let Some(token) = self.waiter.take() {
            token.unpark();
        }
    }

    /// The next line to send, pausing until there is one; `None` once the
    /// client is closed.
    fn next_line(&self) -> Option<Rc<str>> {
        loop {
            if self.closed.get() {
                return None;
            }
            if let Some(line) = self.outbox.borrow_mut().pop_front() {
                return Some(line);
            }
            let token = yieldloop::raw::park_token();
            self.waiter.set(Some(token));
            yieldloop::raw::park(token, None);
        }
    }
}

/// Runs one client: registers it, starts its writer, relays its lines.
fn session(room: &Room, stream: TcpStream, name: SocketAddr) {
    let stream = Rc::new(stream);
    let client = Rc::new(Client {
        name,
        outbox: RefCell::new(VecDeque::new()),
        waiter: Cell::new(None),
        closed: Cell::new(false),
    });
    let others = room.clients.borrow().len();
    room.clients.borrow_mut().push(client.clone());
    client.post(Rc::from(format!(
        "* welcome {name}, {others} others online"
    )));
    room.broadcast(name, &format!("* {name} joined"));
    eprintln!("chat_server: {name} joined ({} online)", others + 1);

    let writer = {
        let (stream, client) = (stream.clone(), client.clone());
        yieldloop::spawn(move || {
            while let Some(line) = client.next_line() {
                let mut out = &*stream;
                if out.write_all(line.as_bytes()).is_err() || out.write_all(b"\n").is_err() {
                    break;
                }
            }
            // Ends the reader too, if it is still reading.
            let _ = stream.shutdown(Shutdown::Both);
        })
    };

    let why = relay_lines(room, &stream, name);
    room.leave(name);
    client.close();
    let _ = writer.join();
    room.broadcast(name, &format!("* {name} left"));
    let online = room.clients.borrow().len();
    match why {
        Ok(()) => eprintln!("chat_server: {name} left ({online} online)"),
        Err(e) => eprintln!("chat_server: {name} dropped: {e} ({online} online)"),
    }
}

/// Reads the client's lines and broadcasts each until it disconnects.
fn relay_lines(room: &Room, stream: &TcpStream, name: SocketAddr) -> io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        // Without a newline it is either cut off by the limit, or the last
        // line before end-of-file, which still counts.
        if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        room.broadcast(name, &format!("[{name}] {text}"));
    }
}
