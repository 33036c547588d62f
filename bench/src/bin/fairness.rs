//! Fairness server: one scheduler thread hosting a task that floods
//! (consumes a never-ending input as fast as it can) beside an echo task
//! serving a ping client, `bench/src/bin/fairness_client.rs`.
//!
//! ```text
//! fairness --runtime yieldloop|tokio|tokio-mt|may --flood lines|chunks|chan|none --addr 127.0.0.1:PORT
//! ```
//!
//! The runtimes: yieldloop's scheduler (`yieldloop::run`), tokio
//! `current_thread`, tokio `multi_thread` with two workers (`tokio-mt`),
//! may with `set_workers(1)`. Go's version is `gobench fairness` (bench/go).
//!
//! Every connection to `--addr` starts with one byte naming its role:
//! `P`, the ping connection, served by an echo task (a 4 KiB buffer, read
//! and write back, as the echo servers); `F`, the flood connection, read by
//! the flood task until the peer closes. The flood kinds, each doing the
//! same work per item (FNV-1a over the item's bytes):
//!
//! - `lines`: a buffered line reader over the socket (an 8 KiB buffer:
//!   std `BufReader::read_line` for yieldloop and may, tokio
//!   `AsyncBufReadExt::read_line`); an item is a line.
//! - `chunks`: raw reads of up to 1 KiB from the socket; an item is a KiB
//!   consumed.
//! - `chan`: no flood connection: a producer task sends `0, 1, 2, ...` as
//!   fast as it can through a bounded channel of capacity 1024 to the flood
//!   task on the same thread (yieldloop `sync::local::sync_channel`, tokio
//!   `sync::mpsc::channel`); an item is a value (its eight bytes hashed).
//!   may 0.3 has no bounded channel (an unbounded one would grow without
//!   end), so it has no `chan` flood.
//! - `none`: no flood; the echo task alone, the baseline.
//!
//! How far the flood got is read from outside the runtime: the flood task
//! publishes its item count every 64 items in an atomic, and a plain OS
//! thread serves it on a listener of its own (an ephemeral port, printed
//! on stderr as `fairness stats=127.0.0.1:PORT` before the runtime starts):
//! each line received there is answered with `count=N ns=T`, T the
//! nanoseconds since the process started. So the count is read even while
//! the flood starves every other task of the scheduler.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Items the flood task has consumed, published every [`PUBLISH`] items.
static COUNT: AtomicU64 = AtomicU64::new(0);
/// The flood's running hash, published with the count so that the work
/// cannot be optimised away.
static HASH: AtomicU64 = AtomicU64::new(0);
/// The count is published when it is a multiple of this.
const PUBLISH: u64 = 64;
/// Bytes per read of the `chunks` flood.
const CHUNK: usize = 1024;
/// Buffer of the `lines` flood's reader (std's and tokio's default).
const LINE_BUF: usize = 8192;
/// Capacity of the `chan` flood's channel.
const CHAN_CAP: usize = 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`, continuing from `h`: the work done per item.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Counts one item (`n` for the chunks flood, which counts KiB) and
/// publishes the count every [`PUBLISH`] items.
struct Counter {
    items: u64,
    hash: u64,
}

impl Counter {
    fn new() -> Counter {
        Counter {
            items: 0,
            hash: FNV_OFFSET,
        }
    }

    #[inline]
    fn item(&mut self, bytes: &[u8]) {
        self.hash = fnv1a(self.hash, bytes);
        self.items += 1;
        if self.items.is_multiple_of(PUBLISH) {
            COUNT.store(self.items, Ordering::Relaxed);
            HASH.store(self.hash, Ordering::Relaxed);
        }
    }
}

/// The chunks flood's tally: bytes hashed, counted in whole KiB.
struct ChunkCounter {
    bytes: u64,
    reads: u64,
    hash: u64,
}

impl ChunkCounter {
    fn new() -> ChunkCounter {
        ChunkCounter {
            bytes: 0,
            reads: 0,
            hash: FNV_OFFSET,
        }
    }

    #[inline]
    fn chunk(&mut self, bytes: &[u8]) {
        self.hash = fnv1a(self.hash, bytes);
        self.bytes += bytes.len() as u64;
        self.reads += 1;
        if self.reads.is_multiple_of(PUBLISH) {
            COUNT.store(self.bytes / CHUNK as u64, Ordering::Relaxed);
            HASH.store(self.hash, Ordering::Relaxed);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flood {
    Lines,
    Chunks,
    Chan,
    None,
}

struct Args {
    runtime: String,
    flood: Flood,
    addr: String,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "fairness: {why}\nusage: fairness --runtime yieldloop|tokio|tokio-mt|may \
         --flood lines|chunks|chan|none --addr HOST:PORT"
    );
    std::process::exit(2);
}

fn args() -> Args {
    let mut a = Args {
        runtime: String::new(),
        flood: Flood::None,
        addr: "127.0.0.1:1235".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--runtime" => a.runtime = v,
            "--addr" => a.addr = v,
            "--flood" => {
                a.flood = match v.as_str() {
                    "lines" => Flood::Lines,
                    "chunks" => Flood::Chunks,
                    "chan" => Flood::Chan,
                    "none" => Flood::None,
                    _ => usage(&format!("unknown flood {v}")),
                }
            }
            _ => usage(&format!("unknown argument {k}")),
        }
    }
    a
}

fn main() {
    let a = args();
    if let Err(e) = stats_thread() {
        eprintln!("fairness: stats listener: {e}");
        std::process::exit(1);
    }
    let r = match a.runtime.as_str() {
        "yieldloop" => yl::serve(a.addr, a.flood),
        "tokio" => tk::serve(a.addr, a.flood, None),
        "tokio-mt" => tk::serve(a.addr, a.flood, Some(2)),
        "may" => my::serve(a.addr, a.flood),
        rt => usage(&format!("unknown runtime {rt}")),
    };
    if let Err(e) = r {
        eprintln!("fairness: {e}");
        std::process::exit(1);
    }
}

/// Serves the flood's count on an ephemeral port from a plain thread, which
/// no task of the runtime can hold up.
fn stats_thread() -> io::Result<()> {
    let start = Instant::now();
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    eprintln!("fairness stats={}", listener.local_addr()?);
    std::thread::Builder::new()
        .name("stats".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let _ = (|| -> io::Result<()> {
                    let mut w = conn.try_clone()?;
                    for line in BufReader::new(conn).lines() {
                        line?;
                        let count = COUNT.load(Ordering::Relaxed);
                        let ns = start.elapsed().as_nanos();
                        writeln!(w, "count={count} ns={ns}")?;
                    }
                    Ok(())
                })();
            }
        })?;
    Ok(())
}

/// The role byte of a new connection.
fn role(b: u8) -> io::Result<u8> {
    match b {
        b'P' | b'F' => Ok(b),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "unknown role")),
    }
}

// ------------------------------------------------------------- yieldloop

mod yl {
    use super::*;
    use yieldloop::net::{TcpListener, TcpStream};

    pub fn serve(addr: String, flood: Flood) -> io::Result<()> {
        yieldloop::run(move || {
            let listener = TcpListener::bind(addr.as_str())?;
            if flood == Flood::Chan {
                let (tx, rx) = yieldloop::sync::local::sync_channel::<u64>(CHAN_CAP);
                yieldloop::spawn(move || {
                    let mut i = 0u64;
                    while tx.send(i).is_ok() {
                        i += 1;
                    }
                });
                yieldloop::spawn(move || {
                    let mut c = Counter::new();
                    while let Ok(v) = rx.recv() {
                        c.item(&v.to_le_bytes());
                    }
                });
            }
            loop {
                let (stream, _) = listener.accept()?;
                yieldloop::spawn(move || {
                    let _ = conn(&stream, flood);
                });
            }
        })
    }

    fn conn(stream: &TcpStream, flood: Flood) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let mut r = stream;
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        match (role(b[0])?, flood) {
            (b'P', _) => echo(stream),
            (_, Flood::Lines) => {
                let mut reader = BufReader::with_capacity(LINE_BUF, stream);
                let mut line = String::new();
                let mut c = Counter::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 {
                        return Ok(());
                    }
                    c.item(line.as_bytes());
                }
            }
            (_, Flood::Chunks) => {
                let mut buf = [0u8; CHUNK];
                let mut c = ChunkCounter::new();
                loop {
                    let n = r.read(&mut buf)?;
                    if n == 0 {
                        return Ok(());
                    }
                    c.chunk(&buf[..n]);
                }
            }
            _ => Ok(()),
        }
    }

    fn echo(stream: &TcpStream) -> io::Result<()> {
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
}

// ------------------------------------------------------------- tokio

mod tk {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// `workers`: None for `current_thread`, Some(n) for `multi_thread`
    /// with n workers.
    pub fn serve(addr: String, flood: Flood, workers: Option<usize>) -> io::Result<()> {
        let rt = match workers {
            None => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            Some(n) => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .enable_all()
                .build()?,
        };
        rt.block_on(async move {
            let listener = TcpListener::bind(addr.as_str()).await?;
            if flood == Flood::Chan {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CHAN_CAP);
                tokio::spawn(async move {
                    let mut i = 0u64;
                    while tx.send(i).await.is_ok() {
                        i += 1;
                    }
                });
                tokio::spawn(async move {
                    let mut c = Counter::new();
                    while let Some(v) = rx.recv().await {
                        c.item(&v.to_le_bytes());
                    }
                });
            }
            loop {
                let (stream, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let _ = conn(stream, flood).await;
                });
            }
        })
    }

    async fn conn(mut stream: TcpStream, flood: Flood) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let b = stream.read_u8().await?;
        match (role(b)?, flood) {
            (b'P', _) => echo(stream).await,
            (_, Flood::Lines) => {
                let mut reader = tokio::io::BufReader::with_capacity(LINE_BUF, stream);
                let mut line = String::new();
                let mut c = Counter::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).await? == 0 {
                        return Ok(());
                    }
                    c.item(line.as_bytes());
                }
            }
            (_, Flood::Chunks) => {
                let mut buf = [0u8; CHUNK];
                let mut c = ChunkCounter::new();
                loop {
                    let n = stream.read(&mut buf).await?;
                    if n == 0 {
                        return Ok(());
                    }
                    c.chunk(&buf[..n]);
                }
            }
            _ => Ok(()),
        }
    }

    async fn echo(mut stream: TcpStream) -> io::Result<()> {
        let mut buf = [0u8; yieldloop_bench::BUF];
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            stream.write_all(&buf[..n]).await?;
        }
    }
}

// ------------------------------------------------------------- may

mod my {
    use super::*;
    use may::net::{TcpListener, TcpStream};

    pub fn serve(addr: String, flood: Flood) -> io::Result<()> {
        if flood == Flood::Chan {
            return Err(io::Error::other(
                "may 0.3 has no bounded channel (its mpsc, mpmc and spsc channels are all unbounded)",
            ));
        }
        may::config().set_workers(1);
        // Placement is left to taskset, as for the other servers.
        may::config().set_worker_pin(false);
        let server = may::go!(move || -> io::Result<()> {
            let listener = TcpListener::bind(addr.as_str())?;
            loop {
                let (stream, _) = listener.accept()?;
                may::go!(move || {
                    let _ = conn(stream, flood);
                });
            }
        });
        server
            .join()
            .map_err(|_| io::Error::other("the server coroutine panicked"))?
    }

    fn conn(mut stream: TcpStream, flood: Flood) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let mut b = [0u8; 1];
        stream.read_exact(&mut b)?;
        match (role(b[0])?, flood) {
            (b'P', _) => echo(stream),
            (_, Flood::Lines) => {
                let mut reader = BufReader::with_capacity(LINE_BUF, stream);
                let mut line = String::new();
                let mut c = Counter::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 {
                        return Ok(());
                    }
                    c.item(line.as_bytes());
                }
            }
            (_, Flood::Chunks) => {
                let mut buf = [0u8; CHUNK];
                let mut c = ChunkCounter::new();
                loop {
                    let n = stream.read(&mut buf)?;
                    if n == 0 {
                        return Ok(());
                    }
                    c.chunk(&buf[..n]);
                }
            }
            _ => Ok(()),
        }
    }

    fn echo(mut stream: TcpStream) -> io::Result<()> {
        let mut buf = [0u8; yieldloop_bench::BUF];
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            stream.write_all(&buf[..n])?;
        }
    }
}
