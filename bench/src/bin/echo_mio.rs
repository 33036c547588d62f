//! Hand-written echo loop on raw mio: one thread, edge-triggered, a
//! per-connection buffer only for bytes the socket would not take yet.
//! The floor the runtimes are compared against.
//!
//! ```text
//! echo_mio --addr 127.0.0.1:PORT
//! ```

use std::io::{self, Read, Write};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

const LISTENER: Token = Token(usize::MAX);

struct Conn {
    stream: TcpStream,
    /// Read but not yet written (the socket's send buffer was full).
    pending: Vec<u8>,
}

fn main() {
    let addr = yieldloop_bench::addr_arg("echo_mio");
    if let Err(e) = serve(&addr) {
        eprintln!("echo_mio: {e}");
        std::process::exit(1);
    }
}

fn serve(addr: &str) -> io::Result<()> {
    let addr = addr
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: {e}")))?;
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(addr)?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: Slab<Conn> = Slab::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = [0u8; yieldloop_bench::BUF];
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in events.iter() {
            if event.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            let key = conns.vacant_key();
                            poll.registry().register(
                                &mut stream,
                                Token(key),
                                Interest::READABLE | Interest::WRITABLE,
                            )?;
                            conns.insert(Conn {
                                stream,
                                pending: Vec::new(),
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => {
                            eprintln!("echo_mio: accept: {e}");
                            break;
                        }
                    }
                }
                continue;
            }
            let key = event.token().0;
            let Some(conn) = conns.get_mut(key) else {
                continue;
            };
            if !drive(conn, &mut buf) {
                let mut conn = conns.remove(key);
                let _ = poll.registry().deregister(&mut conn.stream);
            }
        }
    }
}

/// Flushes pending bytes, then reads and echoes until the socket would
/// block. Returns `false` when the connection is finished.
fn drive(conn: &mut Conn, buf: &mut [u8]) -> bool {
    if !conn.pending.is_empty() {
        match write_some(&mut conn.stream, &conn.pending) {
            Ok(n) => {
                conn.pending.drain(..n);
                if !conn.pending.is_empty() {
                    // Still full: wait for the next writable edge.
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    loop {
        let n = match conn.stream.read(buf) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        match write_some(&mut conn.stream, &buf[..n]) {
            Ok(w) if w == n => {}
            Ok(w) => {
                // Keep the rest and stop reading until it has gone out.
                conn.pending.extend_from_slice(&buf[w..n]);
                return true;
            }
            Err(_) => return false,
        }
    }
}

/// Writes as much of `data` as the socket takes now.
fn write_some(stream: &mut TcpStream, data: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < data.len() {
        match stream.write(&data[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
