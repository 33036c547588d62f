//! Walkthrough step 6: the echo server and three clients, all tasks of one
//! scheduler in one process.
//!
//! ```text
//! cargo run --example walkthrough_06_echo_three_clients
//! cargo run --example walkthrough_06_echo_three_clients -- --clients 5 --lines 4 --gap-ms 30
//! cargo run --example walkthrough_06_echo_three_clients -- --trace echo.trace
//! ```
//!
//! The server task listens on 127.0.0.1 (a free port), accepts `--clients`
//! connections (3 by default) and starts a task for each that echoes bytes
//! back until the client hangs up. The client tasks, `client A`, `client B`,
//! …, connect, send `--lines` lines (3) one every `--gap-ms` milliseconds
//! (10), read each echo with `BufReader::read_line`, and hang up; their
//! starts are staggered across the first gap so that their traffic
//! interleaves. Every task is named, so the scheduler trace
//! (`--trace FILE`, or `YIELDLOOP_TRACE`) reads like a story. The program
//! prints one line per client and a summary, and ends by itself.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::process;
use std::time::Duration;

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::Builder;

mod args;
use args::Args;

/// Command-line settings.
struct Options {
    /// How many clients (and so connections).
    clients: usize,
    /// Lines each client sends.
    lines: usize,
    /// Time between a client's lines.
    gap: Duration,
    /// Where to write the scheduler trace, if anywhere.
    trace: Option<String>,
}

fn main() {
    let mut args = Args::new(
        "walkthrough_06_echo_three_clients [--clients N] [--lines N] [--gap-ms MS] [--trace FILE]",
    );
    let opts = Options {
        clients: args.value_in("--clients", 3, 1..=26),
        lines: args.value_in("--lines", 3, 1..=1000),
        gap: Duration::from_millis(args.value_in("--gap-ms", 10, ..=10_000)),
        trace: args.value("--trace"),
    };
    args.finish();
    if let Some(path) = &opts.trace {
        if let Err(e) = yieldloop::diag::trace_to_file(path) {
            eprintln!("walkthrough_06_echo_three_clients: {path}: {e}");
            process::exit(1);
        }
    }
    let result = yieldloop::run(move || demo(opts.clients, opts.lines, opts.gap));
    yieldloop::diag::trace_off();
    if let Err(e) = result {
        eprintln!("walkthrough_06_echo_three_clients: {e}");
        process::exit(1);
    }
}

// ANCHOR: main
fn demo(clients: usize, lines: usize, gap: Duration) -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = Builder::new()
        .name("server")
        .spawn(move || serve(listener, clients))?;
    let names: Vec<char> = ('A'..='Z').take(clients).collect();
    let handles = names
        .iter()
        .enumerate()
        .map(|(i, &name)| {
            let start_after = gap * i as u32 / clients as u32;
            Builder::new()
                .name(format!("client {name}"))
                .spawn(move || client(addr, name, lines, start_after, gap))
        })
        .collect::<io::Result<Vec<_>>>()?;
    for (name, handle) in names.iter().zip(handles) {
        let good = handle.join()??;
        println!("client {name}: {good} of {lines} lines came back intact");
    }
    let bytes = server.join()??;
    println!("server: {bytes} bytes echoed on {clients} connections");
    Ok(())
}
// ANCHOR_END: main

// ANCHOR: server
/// Accepts `count` connections, one task each; returns the bytes echoed.
fn serve(listener: TcpListener, count: usize) -> io::Result<u64> {
    let mut conns = Vec::new();
    for n in 1..=count {
        let (stream, _peer) = listener.accept()?;
        conns.push(
            Builder::new()
                .name(format!("conn {n}"))
                .spawn(move || echo(&stream))?,
        );
    }
    let mut total = 0;
    for conn in conns {
        total += conn.join()??;
    }
    Ok(total)
}

/// Echoes until the client hangs up; returns the bytes echoed.
fn echo(stream: &TcpStream) -> io::Result<u64> {
    let (mut reader, mut writer) = (stream, stream);
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        let n = reader.read(&mut buf)?; // pauses this task, not the thread
        if n == 0 {
            return Ok(total);
        }
        writer.write_all(&buf[..n])?;
        total += n as u64;
    }
}
// ANCHOR_END: server

// ANCHOR: client
/// Sends `lines` lines `gap` apart and checks each echo; straight-line code,
/// though every connect, write, read and sleep pauses the task.
fn client(
    addr: SocketAddr,
    name: char,
    lines: usize,
    start_after: Duration,
    gap: Duration,
) -> io::Result<usize> {
    yieldloop::sleep(start_after);
    let stream = TcpStream::connect(addr)?;
    let mut reader = BufReader::new(&stream);
    let mut good = 0;
    for n in 1..=lines {
        if n > 1 {
            yieldloop::sleep(gap);
        }
        let line = format!("line {n} from client {name}\n");
        (&stream).write_all(line.as_bytes())?;
        let mut echo = String::new();
        reader.read_line(&mut echo)?;
        good += usize::from(echo == line);
    }
    stream.shutdown(Shutdown::Write)?;
    Ok(good)
}
// ANCHOR_END: client
