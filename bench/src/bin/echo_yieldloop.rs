//! Echo server on yieldloop: one scheduler thread, one task per connection.
//!
//! ```text
//! echo_yieldloop --addr 127.0.0.1:PORT
//! ```

use std::io::{self, Read, Write};

use yieldloop::net::{TcpListener, TcpStream};

fn main() {
    let addr = yieldloop_bench::addr_arg("echo_yieldloop");
    if let Err(e) = yieldloop::run(move || serve(&addr)) {
        eprintln!("echo_yieldloop: {e}");
        std::process::exit(1);
    }
}

fn serve(addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                yieldloop::spawn(move || {
                    let _ = echo(&stream);
                });
            }
            Err(e) => {
                eprintln!("echo_yieldloop: accept: {e}");
                yieldloop::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

fn echo(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = [0u8; yieldloop_bench::BUF];
    let (mut r, mut w) = (stream, stream);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        w.write_all(&buf[..n])?;
    }
}
