//! An echo server: one task per connection, bytes sent back exactly as they
//! arrive.
//!
//! ```text
//! cargo run --release --example echo_server            # 127.0.0.1:1235
//! cargo run --release --example echo_server -- --addr 0.0.0.0:7000
//! nc 127.0.0.1 1235                                    # then type lines
//! ```
//!
//! Each connection's open and close, with the number of live connections,
//! is logged to stderr. When the client half-closes (shuts down its writing
//! side), the server finishes echoing what it got and closes. A failed
//! `accept` (for example "too many open files") is logged; the loop pauses
//! briefly and goes on.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::rc::Rc;
use std::time::Duration;

use yieldloop::net::{TcpListener, TcpStream};

fn main() {
    let addr = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("echo_server: {msg}\nusage: echo_server [--addr HOST:PORT]");
            std::process::exit(2);
        }
    };
    if let Err(e) = yieldloop::run(move || serve(&addr)) {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}

fn parse_args() -> Result<String, String> {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "-h" | "--help" => return Err("echoes every connection's bytes back".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(addr)
}

fn serve(addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    eprintln!("echo_server: listening on {}", listener.local_addr()?);
    let live = Rc::new(Cell::new(0usize));
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                live.set(live.get() + 1);
                eprintln!("open  {peer} (live: {})", live.get());
                let live = live.clone();
                yieldloop::spawn(move || {
                    let result = echo(&stream);
                    // Close before reporting, so the count is true.
                    drop(stream);
                    live.set(live.get() - 1);
                    match result {
                        Ok(n) => eprintln!("close {peer} after {n} bytes (live: {})", live.get()),
                        Err(e) => eprintln!("close {peer}: {e} (live: {})", live.get()),
                    }
                });
            }
            Err(e) => {
                // Out of descriptors or a connection aborted before we got it:
                // nothing to do for that client, so wait a moment and go on.
                eprintln!("echo_server: accept failed: {e}; retrying in 100 ms");
                yieldloop::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Echoes until the client stops sending; returns the bytes echoed.
fn echo(stream: &TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    let (mut r, mut w) = (stream, stream);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            // Half-close from the client: everything read was written back.
            let _ = stream.shutdown(std::net::Shutdown::Write);
            return Ok(total);
        }
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
}
