//! What goes wrong: a client that floods its connection.
//!
//! ```text
//! cargo run --example wrong_flood                    # per-line work the budget does not see
//! cargo run --example wrong_flood -- counted         # consume_budget() per line
//! cargo run --example wrong_flood -- reads           # 1 KiB reads: the budget at work
//! cargo run --example wrong_flood -- unconstrained   # the same reads, budget lifted
//! cargo run --example wrong_flood -- --ms 1000
//! ```
//!
//! One client writes to its connection without pause, so a `flood` task
//! reading it always finds data; another client sends a 16-byte ping
//! every 10 ms for `--ms` (500 by default), which an `echo` task on the
//! same thread sends back. Each item the flood task takes (a read, or a
//! line) costs it 50 µs of work. The program prints how many pings were
//! answered and how long the slowest waited.
//!
//! Every socket read spends a unit of the task's cooperative budget, so
//! with plain reads (`reads`) the flood task gives the thread back every
//! 128 reads and the pings are answered within milliseconds; with the
//! budget lifted (`unconstrained`, what every task did before there was a
//! budget) they wait for the whole flood. Lines taken from a `BufReader`
//! (the default, `wrong`) mostly come out of its 8 KiB buffer without a
//! read: the budget counts one unit per 8 KiB, 256 lines, and a turn of
//! the flood task lasts up to 128 times 256 lines of work (here it ends
//! sooner, when the socket runs dry for a moment, still well over 100 ms).
//! Counting each line with `yieldloop::raw::consume_budget()` (`counted`)
//! brings the turns back to 128 items.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::Builder;

mod args;
use args::Args;

/// How often the ping client pings.
const PING_EVERY: Duration = Duration::from_millis(10);
/// The work each item costs the flood task.
const WORK: Duration = Duration::from_micros(50);
/// How long the ping client waits for one answer before it gives up.
const PING_TIMEOUT: Duration = Duration::from_secs(10);

fn main() {
    let mut args = Args::new("wrong_flood [wrong|counted|reads|unconstrained] [--ms N]");
    let length = Duration::from_millis(args.value_or("--ms", 500));
    let mode = args.choice(&["wrong", "counted", "reads", "unconstrained"]);
    args.finish();
    let (pings, items) = yieldloop::run(move || {
        let end = Instant::now() + length;
        let pings = TcpListener::bind("127.0.0.1:0").unwrap();
        let ping_addr = pings.local_addr().unwrap();
        let echo = Builder::new()
            .name("echo")
            .spawn(move || echo(pings))
            .unwrap();
        let floods = TcpListener::bind("127.0.0.1:0").unwrap();
        flood_client(floods.local_addr().unwrap());
        let flood = Builder::new()
            .name("flood")
            .spawn(move || {
                let (conn, _) = floods.accept().unwrap();
                match mode {
                    "wrong" => lines_uncounted(conn, end),
                    "counted" => lines_counted(conn, end),
                    "reads" => reads(conn, end),
                    _ => yieldloop::raw::unconstrained(|| reads(conn, end)),
                }
            })
            .unwrap();
        // The client is a plain thread: it pings on time whatever the
        // scheduler's thread is doing.
        let pinger = yieldloop::spawn_blocking(move || ping_client(ping_addr, length));
        let pings = pinger.join().unwrap();
        let items = flood.join().unwrap();
        echo.join().unwrap().unwrap();
        (pings, items)
    });
    println!("pings: {} sent, {} answered", pings.sent, pings.rtts.len());
    let mut rtts = pings.rtts;
    rtts.sort();
    if let (Some(median), Some(worst)) = (rtts.get(rtts.len() / 2), rtts.last()) {
        println!("median answer: {:.1} ms", median.as_secs_f64() * 1e3);
        println!("worst answer: {:.1} ms", worst.as_secs_f64() * 1e3);
    }
    println!("flood: {items} items handled");
}

/// What the ping client saw: how many pings it sent, and the round trip
/// of each one answered.
struct Pings {
    sent: usize,
    rtts: Vec<Duration>,
}

/// A plain-thread client: a 16-byte ping every [`PING_EVERY`] for
/// `length`, each waiting for its echo.
fn ping_client(addr: SocketAddr, length: Duration) -> Pings {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(PING_TIMEOUT)).unwrap();
    let start = Instant::now();
    let mut pings = Pings {
        sent: 0,
        rtts: Vec::new(),
    };
    let mut next = start;
    let mut answer = [0u8; 16];
    while Instant::now() < start + length {
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        next += PING_EVERY;
        let ping = [pings.sent as u8; 16];
        let sent = Instant::now();
        pings.sent += 1;
        if s.write_all(&ping).is_err() || s.read_exact(&mut answer).is_err() {
            break;
        }
        pings.rtts.push(sent.elapsed());
        // Behind (a slow answer): the next ping at once, not a burst.
        next = next.max(Instant::now());
    }
    pings
}

/// The echo task: sends each 16-byte ping back, until the client leaves.
fn echo(listener: TcpListener) -> io::Result<()> {
    let (mut conn, _) = listener.accept()?;
    conn.set_nodelay(true)?;
    let mut buf = [0u8; 16];
    loop {
        match conn.read_exact(&mut buf) {
            Ok(()) => conn.write_all(&buf)?,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// A plain thread that connects to `addr` and writes lines of 32 bytes
/// (a short command each, as in a line protocol) as fast as it can, until
/// the reader drops the connection.
fn flood_client(addr: SocketAddr) {
    std::thread::spawn(move || {
        let mut batch = Vec::new();
        for i in 0..512 {
            batch.extend_from_slice(format!("{i:04} {}\n", "x".repeat(26)).as_bytes());
        }
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        while s.write_all(&batch).is_ok() {}
    });
}

/// What the flood task does with each item: [`WORK`] of hashing it, as a
/// parser or a handler would.
fn handle(item: &[u8]) -> u64 {
    let start = Instant::now();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    while start.elapsed() < WORK {
        for b in item {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    std::hint::black_box(h)
}

// ANCHOR: reads
/// Reads of 1 KiB, each handled: every read spends a unit of the budget,
/// so every 128 reads the task lets the others run.
fn reads(mut conn: TcpStream, end: Instant) -> u64 {
    let mut buf = [0u8; 1024];
    let mut items = 0;
    while Instant::now() < end {
        let n = conn.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        handle(&buf[..n]);
        items += 1;
    }
    items
}
// ANCHOR_END: reads

// ANCHOR: wrong
/// Wrong: lines from an 8 KiB `BufReader`. Most `read_line` calls find
/// their line in the buffer and never touch the socket, so the budget
/// counts one unit per 8 KiB (256 lines) and a turn of the task may hold
/// the thread for 128 × 256 lines of work.
fn lines_uncounted(conn: TcpStream, end: Instant) -> u64 {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    let mut items = 0;
    while Instant::now() < end {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        handle(line.as_bytes());
        items += 1;
    }
    items
}
// ANCHOR_END: wrong

// ANCHOR: counted
/// Each line spends a unit of the budget, as a read does: the task lets
/// the others run every 128 lines, wherever they came from.
fn lines_counted(conn: TcpStream, end: Instant) -> u64 {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    let mut items = 0;
    while Instant::now() < end {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        handle(line.as_bytes());
        items += 1;
        yieldloop::raw::consume_budget(); // one unit per line handled
    }
    items
}
// ANCHOR_END: counted
