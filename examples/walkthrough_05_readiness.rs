//! Walkthrough step 5: waiting for sockets with readiness.
//!
//! ```text
//! cargo run --example walkthrough_05_readiness
//! cargo run --example walkthrough_05_readiness -- --clients 10 --lines 5 --gap-ms 50
//! ```
//!
//! A tiny echo server on the loop of step 3, minus the timers: an acceptor
//! task and one task per connection, all coroutines on one thread. A task
//! that would block on a socket pauses with `Op::ReadReady(token)` or
//! `Op::WriteReady(token)`, and the loop asks the kernel, through one
//! `mio::Poll`, which sockets have become ready.
//!
//! The clients are plain threads of the same process with blocking std
//! sockets (`--clients`, 3 by default); each sends `--lines` lines (3), one
//! every `--gap-ms` milliseconds (20), checks every echo, and hangs up. The
//! server accepts exactly that many connections and stops once all have
//! closed, so the program ends by itself.
//!
//! The same run is done twice: once with a loop that blocks in the kernel
//! until a socket is ready, once with a loop that only peeks (a poll with a
//! zero timeout, `select(0)`) on every turn and then goes round again. Both
//! echo the same lines; the second burns a core doing it, as the turn counts
//! and CPU times in the report show.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::process;
use std::rc::Rc;
use std::thread;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token};

mod args;
use args::Args;

// ANCHOR: op
/// What a task asks for when it pauses.
enum Op {
    /// Resume me when the socket registered under this token may be
    /// readable (for a listener: may have a connection to accept).
    ReadReady(Token),
    /// Resume me when it may be writable.
    WriteReady(Token),
}

type Task = Coroutine<(), Op, ()>;
type Y = Yielder<(), Op>;
// ANCHOR_END: op

// ANCHOR: shared
/// What tasks share with the loop.
struct Shared {
    /// Where sockets are registered with the loop's `Poll`.
    registry: Registry,
    /// The next token to hand out; a token names one socket.
    next_token: Cell<usize>,
    /// Tasks spawned by running tasks, picked up by the loop.
    spawned: RefCell<Vec<Task>>,
}

impl Shared {
    /// Registers a socket for both directions and returns its token.
    fn register(&self, socket: &mut impl mio::event::Source) -> io::Result<Token> {
        let token = Token(self.next_token.get());
        self.next_token.set(token.0 + 1);
        self.registry
            .register(socket, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(token)
    }
}
// ANCHOR_END: shared

// ANCHOR: helpers
/// The rule for every operation: try it; if it would block, pause until
/// the socket is ready, then try again. Readiness is only a hint, so the
/// retry may find nothing and wait again.
fn accept(y: &Y, listener: &TcpListener, token: Token) -> io::Result<TcpStream> {
    loop {
        match listener.accept() {
            Ok((stream, _peer)) => return Ok(stream),
            Err(e) if e.kind() == ErrorKind::WouldBlock => y.suspend(Op::ReadReady(token)),
            Err(e) => return Err(e),
        }
    }
}

fn read(y: &Y, mut stream: &TcpStream, token: Token, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => y.suspend(Op::ReadReady(token)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            result => return result,
        }
    }
}

fn write_all(y: &Y, mut stream: &TcpStream, token: Token, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => y.suspend(Op::WriteReady(token)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
// ANCHOR_END: helpers

// ANCHOR: server
/// The acceptor: takes `count` connections and starts a task for each.
fn acceptor(
    mut listener: TcpListener,
    count: usize,
    shared: Rc<Shared>,
    echoed: Rc<Cell<u64>>,
) -> Task {
    Coroutine::new(move |y, ()| {
        let token = shared
            .register(&mut listener)
            .expect("register the listener");
        for _ in 0..count {
            let stream = accept(y, &listener, token).expect("accept");
            let (shared2, echoed) = (shared.clone(), echoed.clone());
            shared
                .spawned
                .borrow_mut()
                .push(Coroutine::new(move |y, ()| {
                    if let Err(e) = echo(y, stream, &shared2, &echoed) {
                        eprintln!("connection failed: {e}");
                    }
                }));
        }
    })
}

/// One connection: sends back whatever arrives until the client hangs up.
fn echo(y: &Y, mut stream: TcpStream, shared: &Shared, echoed: &Cell<u64>) -> io::Result<()> {
    let token = shared.register(&mut stream)?;
    let mut buf = [0u8; 4096];
    loop {
        let n = read(y, &stream, token, &mut buf)?;
        if n == 0 {
            return Ok(()); // end of stream: the client is done
        }
        write_all(y, &stream, token, &buf[..n])?;
        echoed.set(echoed.get() + n as u64);
    }
}
// ANCHOR_END: server

/// How the loop waits when no task is ready.
#[derive(Clone, Copy, PartialEq)]
enum Wait {
    /// Block in the kernel until a socket is ready.
    Block,
    /// Only look (a zero timeout), then go round again.
    Peek,
}

// ANCHOR: loop
/// Runs `first` and every task it spawns until all have finished; returns
/// the number of polls (loop turns).
fn run(mut poll: Poll, shared: &Shared, first: Task, wait: Wait) -> io::Result<u64> {
    let mut events = Events::with_capacity(64);
    let mut table: Vec<Option<Task>> = vec![Some(first)];
    let mut ready: VecDeque<usize> = VecDeque::from([0]);
    // Which task waits on which token, per direction.
    let mut readers: HashMap<Token, usize> = HashMap::new();
    let mut writers: HashMap<Token, usize> = HashMap::new();
    let mut live = 1;
    let mut turns = 0;
    loop {
        // 1. Run every ready task until it pauses or ends.
        while let Some(key) = ready.pop_front() {
            let task = table[key].as_mut().expect("a queued task is alive");
            match task.resume(()) {
                CoroutineResult::Yield(Op::ReadReady(token)) => {
                    readers.insert(token, key);
                }
                CoroutineResult::Yield(Op::WriteReady(token)) => {
                    writers.insert(token, key);
                }
                CoroutineResult::Return(()) => {
                    table[key] = None;
                    live -= 1;
                }
            }
            // Tasks it spawned are ready to run.
            for task in shared.spawned.borrow_mut().drain(..) {
                table.push(Some(task));
                ready.push_back(table.len() - 1);
                live += 1;
            }
        }
        if live == 0 {
            return Ok(turns);
        }
        // 2. Ask the kernel which sockets are ready.
        let timeout = match wait {
            Wait::Block => None,                // sleep until one is
            Wait::Peek => Some(Duration::ZERO), // select(0): just look
        };
        poll.poll(&mut events, timeout)?;
        turns += 1;
        // 3. Wake the tasks waiting on them. A hang-up or an error counts
        //    as ready: the retried operation reports it.
        for event in events.iter() {
            let token = event.token();
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                ready.extend(readers.remove(&token));
            }
            if event.is_writable() || event.is_write_closed() || event.is_error() {
                ready.extend(writers.remove(&token));
            }
        }
    }
}
// ANCHOR_END: loop

/// One client, on a thread of its own: sends `lines` lines, `gap` apart,
/// and checks each echo. Returns the number of lines that came back right.
fn client(addr: SocketAddr, id: usize, lines: usize, gap: Duration) -> io::Result<usize> {
    let stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut good = 0;
    for n in 1..=lines {
        if n > 1 {
            thread::sleep(gap);
        }
        let line = format!("line {n} from client {id}\n");
        writer.write_all(line.as_bytes())?;
        let mut echo = String::new();
        reader.read_line(&mut echo)?;
        good += usize::from(echo == line);
    }
    writer.shutdown(Shutdown::Write)?;
    Ok(good)
}

/// One full run: server in the loop, clients on threads.
fn serve(wait: Wait, clients: usize, lines: usize, gap: Duration) -> io::Result<()> {
    let poll = Poll::new()?;
    let shared = Rc::new(Shared {
        registry: poll.registry().try_clone()?,
        next_token: Cell::new(0),
        spawned: RefCell::new(Vec::new()),
    });
    let listener = TcpListener::bind("127.0.0.1:0".parse().expect("an address"))?;
    let addr = listener.local_addr()?;
    let echoed = Rc::new(Cell::new(0));
    let threads: Vec<_> = (1..=clients)
        .map(|id| thread::spawn(move || client(addr, id, lines, gap)))
        .collect();

    let cpu_before = thread_cpu_time();
    let start = Instant::now();
    let turns = run(
        poll,
        &shared,
        acceptor(listener, clients, shared.clone(), echoed.clone()),
        wait,
    )?;
    let (wall, cpu) = (start.elapsed(), thread_cpu_time() - cpu_before);

    let mut good = 0;
    for t in threads {
        good += t.join().expect("a client thread panicked")?;
    }
    println!(
        "  {clients} clients, {good} of {} lines echoed back intact, {} bytes",
        clients * lines,
        echoed.get()
    );
    println!(
        "  {:.2}s wall, {turns} loop turns, CPU {:.1} ms",
        wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e3
    );
    Ok(())
}

/// CPU time this thread has used, from `/proc/thread-self/schedstat`
/// (zero if unavailable).
fn thread_cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

fn main() {
    let mut args = Args::new("walkthrough_05_readiness [--clients N] [--lines N] [--gap-ms MS]");
    let clients = args.value_in("--clients", 3, 1..=200);
    let lines = args.value_in("--lines", 3, 1..=1000);
    let gap = Duration::from_millis(args.value_in("--gap-ms", 20, ..=10_000));
    args.finish();
    for (wait, title) in [
        (
            Wait::Block,
            "blocking poll (sleep until a socket is ready):",
        ),
        (Wait::Peek, "peeking poll (timeout 0 on every turn):"),
    ] {
        println!("{title}");
        if let Err(e) = serve(wait, clients, lines, gap) {
            eprintln!("walkthrough_05_readiness: {e}");
            process::exit(1);
        }
    }
}
