//! Chapter 11 exercise: a graceful shutdown driven by a signal.
//!
//! ```text
//! cargo run --example exercise_ch11_graceful                # serves 127.0.0.1:1237
//! kill -TERM <pid>                                          # or Ctrl-C
//! cargo run --example exercise_ch11_graceful -- --addr 127.0.0.1:0 --grace-ms 2000
//! ```
//!
//! A line echo server that stops in three steps when SIGTERM or SIGINT
//! comes: it stops accepting (the acceptor is cancelled and the listening
//! socket closes, so new clients are refused), gives the open connections
//! `--grace-ms` milliseconds (1000) to finish on their own, then cancels
//! those still open (their stacks unwind and their sockets close, so each
//! client sees end of stream). The signal is one more thing a task waits
//! for: `Signals::recv` pauses the main task only, and the connections are
//! served meanwhile. Everything is reported on stdout, starting with
//! `listening on ADDR`, printed once the signal handlers are in place.

use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::signal::{Signals, SIGINT, SIGTERM};
use yieldloop::JoinHandle;

mod args;
use args::Args;

/// Echoes lines until the client hangs up.
fn echo_lines(stream: TcpStream) -> io::Result<()> {
    let mut reader = BufReader::new(&stream);
    let mut line = String::new();
    while reader.read_line(&mut line)? > 0 {
        (&stream).write_all(line.as_bytes())?;
        line.clear();
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let mut args = Args::new("exercise_ch11_graceful [--addr HOST:PORT] [--grace-ms MS]");
    let addr: String = args.value_or("--addr", "127.0.0.1:1237".into());
    let grace_ms = args.value_in("--grace-ms", 1000, ..=600_000);
    args.finish();
    let grace = Duration::from_millis(grace_ms);
    yieldloop::run(move || {
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let listener = TcpListener::bind(&addr)?;
        println!("listening on {}", listener.local_addr()?);
        let conns: Rc<RefCell<Vec<JoinHandle<()>>>> = Rc::default();
        let c = conns.clone();
        let acceptor = yieldloop::spawn(move || loop {
            match listener.accept() {
                Ok((stream, peer)) => {
                    println!("client {peer} connected");
                    c.borrow_mut().push(yieldloop::spawn(move || {
                        let _ = echo_lines(stream);
                        println!("client {peer} left");
                    }));
                }
                Err(e) => eprintln!("accept failed: {e}"),
            }
        });

        let sig = signals.recv()?; // only this task pauses; the rest serve on
        let name = if sig == SIGTERM { "SIGTERM" } else { "SIGINT" };
        acceptor.cancel(); // the listener closes as its stack unwinds
        let _ = acceptor.join();
        let mut open: Vec<_> = conns
            .take()
            .into_iter()
            .filter(|h| !h.is_finished())
            .collect();
        println!(
            "{name}: no longer accepting; {} connection(s) open, {grace_ms} ms of grace",
            open.len()
        );

        let start = Instant::now();
        let mut finished = 0;
        // join_any borrows the list, so what is left after the grace period
        // is still in it, to be cancelled.
        let _ = yieldloop::timeout(grace, || {
            while yieldloop::join_any(&mut open).is_some() {
                finished += 1;
            }
        });
        let cancelled = open.len();
        for h in open {
            h.cancel();
            let _ = h.join();
        }
        println!(
            "stopped after {} ms: {finished} connection(s) finished in time, {cancelled} cancelled",
            start.elapsed().as_millis()
        );
        Ok(())
    })
}
