//! Chapter 9 exercise: the capstone with a read timeout.
//!
//! ```text
//! cargo run --example exercise_ch09_idle_timeout           # serves 127.0.0.1:1235
//! cargo run --example exercise_ch09_idle_timeout -- --addr 127.0.0.1:0 --idle-ms 500 --max-clients 2
//! ```
//!
//! The capstone's loop (chapter 9), trimmed of its ticker, with one change:
//! a client that says nothing for `--idle-ms` milliseconds (5000) is
//! disconnected. A read now waits for two things at once, its socket and a
//! deadline, and whichever comes first wakes the task, with `Ready` or with
//! `TimedOut`. The loser must then wake nothing: the socket entry or the
//! heap entry is still filed, and the task may by then be waiting for
//! something else. So every wait gets a fresh number, the task's slot
//! remembers the number of its current wait, and an entry whose number is
//! not the current one is stale and ignored. That is what yieldloop does
//! with its wait tokens.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

mod args;
use args::Args;

/// What a task asks for when it pauses.
enum Op {
    /// Resume me when the socket may be readable, or at the deadline.
    ReadReady(Token, Option<Instant>),
    /// Resume me when it may be writable.
    WriteReady(Token),
    /// Accept the next connection for me.
    Accept,
}

/// What the loop sends back.
enum Resume {
    Ready,
    /// The deadline came first.
    TimedOut,
    Accepted(TcpStream, SocketAddr, Token),
}

type Task = Coroutine<Resume, Op, ()>;
type Y = Yielder<Resume, Op>;

/// Reads what has arrived; fails with `TimedOut` if nothing comes within
/// `idle` of the call.
fn read(
    y: &Y,
    mut stream: &TcpStream,
    token: Token,
    buf: &mut [u8],
    idle: Duration,
) -> io::Result<usize> {
    let deadline = Instant::now() + idle; // computed once: retries keep it
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if let Resume::TimedOut = y.suspend(Op::ReadReady(token, Some(deadline))) {
                    return Err(ErrorKind::TimedOut.into());
                }
            }
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
            Err(e) if e.kind() == ErrorKind::WouldBlock => _ = y.suspend(Op::WriteReady(token)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One client: echoes until it hangs up or stays silent too long.
fn connection(id: usize, stream: TcpStream, token: Token, idle: Duration) -> Task {
    Coroutine::new(move |y: &Y, _| {
        let mut buf = [0u8; 4096];
        let mut total = 0;
        let outcome = loop {
            match read(y, &stream, token, &mut buf, idle) {
                Ok(0) => break Ok(()),
                Ok(n) => match write_all(y, &stream, token, &buf[..n]) {
                    Ok(()) => total += n,
                    Err(e) => break Err(e),
                },
                Err(e) => break Err(e),
            }
        };
        match outcome {
            Ok(()) => println!("client {id} left after {total} bytes"),
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                println!(
                    "client {id} disconnected after {} ms of silence ({total} bytes)",
                    idle.as_millis()
                )
            }
            Err(e) => println!("client {id} failed: {e}"),
        }
    }) // the stream is dropped with the closure: the socket closes
}

const LISTENER: Token = Token(0);

/// Runs the acceptor and its connections until `max_clients` have ended.
fn run(mut listener: TcpListener, idle: Duration, max_clients: Option<usize>) -> io::Result<()> {
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(256);
    // Each task with the number of the wait it is in now (0: none).
    let mut tasks: Slab<(Task, u64)> = Slab::new();
    let mut ready: VecDeque<(usize, Resume)> = VecDeque::new();
    // Both kinds of entry carry the number of the wait that filed them.
    let mut timers: BinaryHeap<Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
    let mut readers: HashMap<Token, (usize, u64)> = HashMap::new();
    let mut writers: HashMap<Token, usize> = HashMap::new();
    let (mut acceptor, mut next_token, mut wait_no, mut ended) = (None, 1, 0u64, 0);
    let acceptor_task: Task = Coroutine::new(|y: &Y, _| loop {
        _ = y.suspend(Op::Accept); // answered below, where the loop accepts
    });
    ready.push_back((tasks.insert((acceptor_task, 0)), Resume::Ready));
    loop {
        while let Some((key, answer)) = ready.pop_front() {
            let answer = match answer {
                // The acceptor's answers start a connection task here.
                Resume::Accepted(stream, peer, token) => {
                    let id = token.0;
                    println!("client {id} connected from {peer}");
                    let task = connection(id, stream, token, idle);
                    ready.push_back((tasks.insert((task, 0)), Resume::Ready));
                    Resume::Ready
                }
                other => other,
            };
            let (task, current) = &mut tasks[key];
            match task.resume(answer) {
                CoroutineResult::Yield(Op::ReadReady(token, deadline)) => {
                    wait_no += 1;
                    *current = wait_no;
                    readers.insert(token, (key, wait_no));
                    if let Some(at) = deadline {
                        timers.push(Reverse((at, wait_no, key)));
                    }
                }
                CoroutineResult::Yield(Op::WriteReady(token)) => _ = writers.insert(token, key),
                CoroutineResult::Yield(Op::Accept) => {
                    match try_accept(&listener, &poll, &mut next_token) {
                        Some(answer) => ready.push_back((key, answer)),
                        None => acceptor = Some(key),
                    }
                }
                CoroutineResult::Return(()) => {
                    tasks.remove(key);
                    ended += 1;
                }
            }
        }
        if max_clients.is_some_and(|max| ended >= max) {
            println!("served {ended} clients, stopping");
            return Ok(());
        }
        let timeout = timers
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(Instant::now()));
        match poll.poll(&mut events, timeout) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => other?,
        }
        for event in events.iter() {
            let token = event.token();
            if token == LISTENER {
                if let Some(key) = acceptor.take() {
                    match try_accept(&listener, &poll, &mut next_token) {
                        Some(answer) => ready.push_back((key, answer)),
                        None => acceptor = Some(key),
                    }
                }
                continue;
            }
            let closed_or_error =
                event.is_read_closed() || event.is_write_closed() || event.is_error();
            if event.is_readable() || closed_or_error {
                // Wake the reader only if this is still the wait it is in.
                if let Some((key, no)) = readers.remove(&token) {
                    if let Some((_, current)) = tasks.get_mut(key).filter(|(_, c)| *c == no) {
                        *current = 0;
                        ready.push_back((key, Resume::Ready));
                    }
                }
            }
            if event.is_writable() || closed_or_error {
                ready.extend(writers.remove(&token).map(|key| (key, Resume::Ready)));
            }
        }
        // Due deadlines (<= now) time out their wait, unless it is over.
        let now = Instant::now();
        while let Some(&Reverse((at, no, key))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            if let Some((_, current)) = tasks.get_mut(key).filter(|(_, c)| *c == no) {
                *current = 0;
                ready.push_back((key, Resume::TimedOut));
            }
        }
    }
}

/// One accept: the new socket registered under a fresh token, or `None`
/// if there is none (or it failed: the acceptor then waits for the next).
fn try_accept(listener: &TcpListener, poll: &Poll, next: &mut usize) -> Option<Resume> {
    let accepted = listener.accept().and_then(|(mut stream, peer)| {
        let token = Token(*next);
        *next += 1;
        let interest = Interest::READABLE | Interest::WRITABLE;
        poll.registry().register(&mut stream, token, interest)?;
        Ok(Resume::Accepted(stream, peer, token))
    });
    match accepted {
        Ok(answer) => Some(answer),
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(e) => {
            eprintln!("accept failed: {e}");
            None
        }
    }
}

fn main() -> io::Result<()> {
    let mut args =
        Args::new("exercise_ch09_idle_timeout [--addr A] [--idle-ms MS] [--max-clients N]");
    let addr = args.value_or("--addr", SocketAddr::from(([127, 0, 0, 1], 1235)));
    let idle_ms = args.value_in("--idle-ms", 5000, 1..=3_600_000);
    let max_clients: Option<usize> = args.value("--max-clients");
    args.finish();
    if max_clients == Some(0) {
        args.fail("--max-clients must be at least 1");
    }
    let listener = TcpListener::bind(addr)?;
    println!("listening on {}", listener.local_addr()?);
    run(listener, Duration::from_millis(idle_ms), max_clients)
}
