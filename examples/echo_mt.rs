//! A multi-threaded echo server: one scheduler per worker thread, each
//! accepting on its own `SO_REUSEPORT` listener.
//!
//! ```text
//! cargo run --release --example echo_mt                      # all cores, 127.0.0.1:1237
//! cargo run --release --example echo_mt -- --workers 2 --addr 0.0.0.0:7000 --pin
//! nc 127.0.0.1 1237                                          # then type lines
//! ```
//!
//! The kernel spreads new connections over the workers' listeners; a
//! connection stays on the worker that accepted it for its whole life, so
//! each worker is the single-threaded echo server, and nothing is shared
//! between threads but the listening port. `--pin` pins worker `i` to the
//! `i`-th CPU. Only the listening address and failures are logged, to keep
//! the output out of the way of throughput measurements.

use std::io::{self, Read, Write};
use std::time::Duration;

use yieldloop::net::{reuseport_listeners, TcpListener, TcpStream};
use yieldloop::Runtime;

struct Args {
    addr: String,
    workers: usize,
    pin: bool,
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("echo_mt: {msg}\nusage: echo_mt [--addr HOST:PORT] [--workers N] [--pin]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("echo_mt: {e}");
        std::process::exit(1);
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:1237".into(),
        workers: std::thread::available_parallelism().map_or(1, usize::from),
        pin: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => a.addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--workers" => {
                let n = args.next().ok_or("--workers needs a number")?;
                a.workers = n.parse().map_err(|e| format!("--workers {n}: {e}"))?;
                if a.workers == 0 {
                    return Err("--workers must be at least 1".into());
                }
            }
            "--pin" => a.pin = true,
            "-h" | "--help" => return Err("echoes every connection's bytes back".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn run(args: &Args) -> io::Result<()> {
    let rt = Runtime::builder()
        .workers(args.workers)
        .pin(args.pin)
        .name("echo")
        .build()?;
    // Made up front so that port 0 gives every worker the same port.
    let listeners = reuseport_listeners(args.addr.as_str(), rt.workers())?;
    eprintln!(
        "echo_mt: listening on {} with {} workers",
        listeners[0].local_addr()?,
        rt.workers()
    );
    let servers: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(w, l)| rt.spawn_on(w, move || serve(l)))
        .collect();
    // The servers run until they fail; the first failure ends the program.
    for s in servers {
        s.join()??;
    }
    Ok(())
}

/// One worker's accept loop: a task per connection, on this worker.
fn serve(listener: std::net::TcpListener) -> io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                yieldloop::spawn(move || {
                    let _ = echo(&stream);
                });
            }
            Err(e) => {
                eprintln!("echo_mt: accept failed: {e}; retrying in 100 ms");
                yieldloop::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Echoes until the client stops sending; returns the bytes echoed.
fn echo(stream: &TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 16 * 1024];
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
