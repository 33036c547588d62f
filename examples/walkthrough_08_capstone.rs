//! Walkthrough step 8, the capstone (chapter 9 of the book): the echo server
//! on port 1235, on a loop of our own that waits for timers and sockets in
//! one kernel call.
//!
//! ```text
//! cargo run --example walkthrough_08_capstone          # serves 127.0.0.1:1235
//! nc 127.0.0.1 1235                                    # then type lines
//! cargo run --example walkthrough_08_capstone -- --addr 127.0.0.1:0 --max-clients 2 --tick-secs 1
//! ```
//!
//! No yieldloop here: corosensei for the coroutines, mio for the kernel wait
//! and slab for the task table. Each task is a coroutine that pauses with an
//! `Op` and is resumed with a `Resume`; one loop answers them all with a run
//! queue, a deadline heap and one `mio::Poll`. An acceptor
//! task starts a task per connection, which echoes until the client hangs
//! up; a ticker task prints a status line every `--tick-secs` (10; 0 for
//! none). The first line printed is `listening on ADDR`, the address bound
//! (`--addr`; port 0 picks a free one). With `--max-clients N` the program
//! stops once N clients have left; without it, it serves until killed.
//! `--help` (or `-h`) prints what the options mean and exits.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::process;
use std::rc::Rc;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

mod args;
use args::Args;

const USAGE: &str =
    "walkthrough_08_capstone [--addr HOST:PORT] [--max-clients N] [--tick-secs SECS]";

/// What `--help` prints after the usage line.
const HELP: &str = "\
The echo server on a loop of our own: timers and sockets in one kernel wait.

  --addr HOST:PORT   address to listen on (127.0.0.1:1235; port 0 picks a free one)
  --max-clients N    stop once N clients have left (default: serve until killed)
  --tick-secs SECS   a status line every SECS seconds (10; 0 for none)
  -h, --help         print this text and exit";

// ANCHOR: op
/// What a task asks for when it pauses.
enum Op {
    /// Resume me at or after this instant.
    Wait(Instant),
    /// Resume me when the socket under this token may be readable.
    ReadReady(Token),
    /// Resume me when it may be writable.
    WriteReady(Token),
    /// Accept the next connection for me (the loop owns the one listener).
    Accept,
}

/// What the loop sends back when it resumes a task.
enum Resume {
    /// What you waited for has happened (for a socket: may have; retry).
    Ready,
    /// A new connection, already registered with the poll under the token.
    Accepted(TcpStream, SocketAddr, Token),
    /// The op failed (an accept can, for example with too many open files).
    Err(io::Error),
}

type Task = Coroutine<Resume, Op, ()>;
type Y = Yielder<Resume, Op>;
// ANCHOR_END: op

// ANCHOR: helpers
/// Pauses the task until `at`: a deadline, computed once by the task.
fn sleep_until(y: &Y, at: Instant) {
    y.suspend(Op::Wait(at));
}

/// Reads what has arrived, pausing first if nothing has. Try, and wait only
/// after `WouldBlock`: readiness is edge-triggered, reported once per change.
fn read(y: &Y, mut stream: &TcpStream, token: Token, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                y.suspend(Op::ReadReady(token));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            result => return result,
        }
    }
}

/// Writes all of `buf`, pausing whenever the socket's send buffer is full.
fn write_all(y: &Y, mut stream: &TcpStream, token: Token, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                y.suspend(Op::WriteReady(token));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
// ANCHOR_END: helpers

// ANCHOR: tasks
/// What the tasks share with each other and with the loop.
#[derive(Default)]
struct Shared {
    /// Tasks started by running tasks, for the loop to pick up.
    spawned: RefCell<Vec<Task>>,
    /// Clients connected now, clients gone, bytes echoed in all.
    connected: Cell<usize>,
    gone: Cell<usize>,
    bytes: Cell<u64>,
    /// Stop after this many clients have left.
    max_clients: Option<usize>,
    /// Set when they have: the loop returns.
    stop: Cell<bool>,
}

/// Asks the loop for connections, forever, and starts a task for each.
fn acceptor(shared: Rc<Shared>) -> Task {
    Coroutine::new(move |y: &Y, _| {
        for id in 1.. {
            match y.suspend(Op::Accept) {
                Resume::Accepted(stream, peer, token) => {
                    println!("client {id} connected from {peer}");
                    shared.connected.set(shared.connected.get() + 1);
                    let task = connection(id, stream, token, shared.clone());
                    shared.spawned.borrow_mut().push(task);
                }
                // Out of descriptors, say: back off a little, then go on.
                Resume::Err(e) => {
                    eprintln!("accept failed: {e}");
                    sleep_until(y, Instant::now() + Duration::from_millis(100));
                }
                Resume::Ready => unreachable!("Accept is answered with Accepted or Err"),
            }
        }
    })
}

/// One client: echoes until it hangs up, then counts it gone.
fn connection(id: usize, stream: TcpStream, token: Token, shared: Rc<Shared>) -> Task {
    Coroutine::new(move |y: &Y, _| {
        let outcome = echo(y, &stream, token, &shared);
        drop(stream); // closes the socket; epoll forgets it by itself
        shared.connected.set(shared.connected.get() - 1);
        shared.gone.set(shared.gone.get() + 1);
        match outcome {
            Ok(bytes) => println!("client {id} left after {bytes} bytes"),
            Err(e) => println!("client {id} failed: {e}"),
        }
        if Some(shared.gone.get()) == shared.max_clients {
            println!("served {} clients, stopping", shared.gone.get());
            shared.stop.set(true);
        }
    })
}

/// The echo itself: straight-line code, pausing inside `read` and `write_all`.
fn echo(y: &Y, stream: &TcpStream, token: Token, shared: &Shared) -> io::Result<u64> {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        let n = read(y, stream, token, &mut buf)?;
        if n == 0 {
            return Ok(total); // end of stream: the client is done
        }
        write_all(y, stream, token, &buf[..n])?;
        total += n as u64;
        shared.bytes.set(shared.bytes.get() + n as u64);
    }
}

/// Prints a status line every `every`, on a fixed beat that does not drift.
fn ticker(every: Duration, shared: Rc<Shared>) -> Task {
    Coroutine::new(move |y: &Y, _| {
        let start = Instant::now();
        let mut next = start;
        loop {
            next += every;
            sleep_until(y, next);
            println!(
                "tick at {:.2}s: {} connected, {} gone, {} bytes echoed",
                start.elapsed().as_secs_f64(),
                shared.connected.get(),
                shared.gone.get(),
                shared.bytes.get()
            );
        }
    })
}
// ANCHOR_END: tasks

// ANCHOR: loop
/// The listener's token; connections get 1, 2, 3, …
const LISTENER: Token = Token(0);

/// One accept for the acceptor: `None` if no connection is waiting.
fn try_accept(listener: &TcpListener, poll: &Poll, next: &mut usize) -> Option<Resume> {
    match listener.accept() {
        Ok((mut stream, peer)) => {
            let token = Token(*next);
            *next += 1;
            let interest = Interest::READABLE | Interest::WRITABLE;
            Some(
                match poll.registry().register(&mut stream, token, interest) {
                    Ok(()) => Resume::Accepted(stream, peer, token),
                    Err(e) => Resume::Err(e),
                },
            )
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(e) => Some(Resume::Err(e)),
    }
}

/// Runs the tasks until one of them sets `shared.stop`.
fn run(mut listener: TcpListener, first: Vec<Task>, shared: &Shared) -> io::Result<()> {
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(256);
    let mut tasks: Slab<Task> = Slab::new();
    // Tasks to resume, each with the answer it gets.
    let mut ready: VecDeque<(usize, Resume)> = VecDeque::new();
    for task in first {
        ready.push_back((tasks.insert(task), Resume::Ready));
    }
    // Sleepers as (deadline, seq, task key). `Reverse` turns std's max-heap
    // into a min-heap; `seq` wakes equal deadlines in the order they were set.
    let mut timers: BinaryHeap<Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
    let mut seq = 0;
    // Who waits on which socket, per direction, and who waits to accept.
    let mut readers: HashMap<Token, usize> = HashMap::new();
    let mut writers: HashMap<Token, usize> = HashMap::new();
    let mut acceptor = None;
    let mut next_token = 1;
    loop {
        // 1. Run every ready task until it pauses; file it under what it
        //    waits for.
        while let Some((key, answer)) = ready.pop_front() {
            match tasks[key].resume(answer) {
                CoroutineResult::Yield(Op::Wait(at)) => {
                    timers.push(Reverse((at, seq, key)));
                    seq += 1;
                }
                CoroutineResult::Yield(Op::ReadReady(token)) => {
                    readers.insert(token, key);
                }
                CoroutineResult::Yield(Op::WriteReady(token)) => {
                    writers.insert(token, key);
                }
                // Try at once: a connection may be queued already, and no
                // new edge would announce it.
                CoroutineResult::Yield(Op::Accept) => {
                    match try_accept(&listener, &poll, &mut next_token) {
                        Some(answer) => ready.push_back((key, answer)),
                        None => acceptor = Some(key),
                    }
                }
                CoroutineResult::Return(()) => {
                    tasks.remove(key);
                }
            }
            for task in shared.spawned.borrow_mut().drain(..) {
                ready.push_back((tasks.insert(task), Resume::Ready));
            }
        }
        if shared.stop.get() {
            // Dropping the paused coroutines unwinds their stacks, so their
            // sockets close.
            return Ok(());
        }
        // 2. Sleep in the kernel until a socket is ready or the earliest
        //    deadline comes; with no deadline, until a socket is ready.
        let timeout = timers
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(Instant::now()));
        match poll.poll(&mut events, timeout) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => other?,
        }
        // 3. Wake the tasks whose sockets are ready. A hang-up or an error
        //    counts as ready: the retried call reports it.
        for event in events.iter() {
            let token = event.token();
            if token == LISTENER {
                if let Some(key) = acceptor.take() {
                    match try_accept(&listener, &poll, &mut next_token) {
                        Some(answer) => ready.push_back((key, answer)),
                        None => acceptor = Some(key), // a hint, not a promise
                    }
                }
                continue;
            }
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                ready.extend(readers.remove(&token).map(|key| (key, Resume::Ready)));
            }
            if event.is_writable() || event.is_write_closed() || event.is_error() {
                ready.extend(writers.remove(&token).map(|key| (key, Resume::Ready)));
            }
        }
        // 4. Wake the sleepers that are due (deadline <= now), earliest first.
        let now = Instant::now();
        while let Some(&Reverse((at, _, key))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            ready.push_back((key, Resume::Ready));
        }
    }
}
// ANCHOR_END: loop

fn main() {
    let mut args = Args::with_help(USAGE, HELP);
    let addr = args.value_or("--addr", SocketAddr::from(([127, 0, 0, 1], 1235)));
    let max_clients: Option<usize> = args.value("--max-clients");
    let tick_secs = args.value_in("--tick-secs", 10.0, 0.0..=86_400.0);
    args.finish();
    if max_clients == Some(0) {
        args.fail("--max-clients must be at least 1");
    }
    let tick = (tick_secs > 0.0).then(|| Duration::from_secs_f64(tick_secs));
    let result = TcpListener::bind(addr).and_then(|listener| {
        println!("listening on {}", listener.local_addr()?);
        let shared = Rc::new(Shared {
            max_clients,
            ..Shared::default()
        });
        let mut first = vec![acceptor(shared.clone())];
        first.extend(tick.map(|every| ticker(every, shared.clone())));
        run(listener, first, &shared)
    });
    if let Err(e) = result {
        eprintln!("walkthrough_08_capstone: {e}");
        process::exit(1);
    }
}
