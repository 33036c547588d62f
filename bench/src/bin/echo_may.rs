//! Echo server on may with one worker, one coroutine per connection.
//!
//! ```text
//! echo_may --addr 127.0.0.1:PORT
//! ```

use std::io::{self, Read, Write};

use may::net::{TcpListener, TcpStream};

fn main() {
    let addr = yieldloop_bench::addr_arg("echo_may");
    may::config().set_workers(1);
    // Placement is left to taskset, as for the other servers.
    may::config().set_worker_pin(false);
    let server = may::go!(move || serve(&addr));
    match server.join() {
        Ok(Err(e)) => {
            eprintln!("echo_may: {e}");
            std::process::exit(1);
        }
        Ok(Ok(())) => {}
        Err(_) => std::process::exit(1),
    }
}

fn serve(addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                may::go!(move || {
                    let _ = echo(stream);
                });
            }
            Err(e) => {
                eprintln!("echo_may: accept: {e}");
                may::coroutine::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

fn echo(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = [0u8; yieldloop_bench::BUF];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n])?;
    }
}
