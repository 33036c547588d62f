//! Chapter 5 exercise: a line protocol on the readiness loop.
//!
//! ```text
//! cargo run --example exercise_ch05_upper
//! cargo run --example exercise_ch05_upper -- --clients 5
//! ```
//!
//! The loop and helpers of step 5, serving a protocol with lines: each line
//! a client sends comes back upper-cased. A read returns whatever has
//! arrived, which is not a line: half of one, or three at once. So each
//! connection keeps a buffer, answers every complete line in it, and keeps
//! the unfinished rest for the next read. The clients (threads with blocking
//! std sockets) send their lines in 3-byte pieces, then two lines in one
//! write, and check every answer.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::thread;
use std::time::Duration;

use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token};

mod args;
use args::Args;

/// Resume me when the socket under this token may be readable (`true`) or
/// writable (`false`).
struct Op(Token, bool);
type Task = Coroutine<(), Op, ()>;
type Y = Yielder<(), Op>;

/// Try; on `WouldBlock`, pause until ready, then try again.
fn retry<T>(y: &Y, op: Op, mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => y.suspend(Op(op.0, op.1)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// One connection: answers each complete line, upper-cased.
fn serve(y: &Y, mut stream: TcpStream, registry: &Registry, token: Token) -> io::Result<()> {
    registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
    let (mut pending, mut buf) = (Vec::new(), [0u8; 512]);
    loop {
        let n = retry(y, Op(token, true), || (&stream).read(&mut buf))?;
        if n == 0 {
            return Ok(()); // the client hung up; an unfinished line is dropped
        }
        pending.extend_from_slice(&buf[..n]);
        // Every complete line in the buffer gets its answer; the rest waits.
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let mut answer = &line.to_ascii_uppercase()[..];
            while !answer.is_empty() {
                let n = retry(y, Op(token, false), || (&stream).write(answer))?;
                answer = &answer[n..];
            }
        }
    }
}

/// The loop of step 5: run ready tasks, block in the kernel, wake by token.
fn run(mut listener: TcpListener, clients: usize) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let registry = Rc::new(poll.registry().try_clone()?);
    poll.registry()
        .register(&mut listener, Token(0), Interest::READABLE)?;
    let spawned: Rc<RefCell<Vec<Task>>> = Rc::default();
    let (reg, queue) = (registry.clone(), spawned.clone());
    let acceptor: Task = Coroutine::new(move |y: &Y, ()| {
        for n in 1..=clients {
            let stream = retry(y, Op(Token(0), true), || listener.accept())
                .expect("accept")
                .0;
            let reg = reg.clone();
            queue.borrow_mut().push(Coroutine::new(move |y: &Y, ()| {
                if let Err(e) = serve(y, stream, &reg, Token(n)) {
                    eprintln!("connection {n}: {e}");
                }
            }));
        }
    });
    let mut table = vec![Some(acceptor)];
    let (mut ready, mut live) = (VecDeque::from([0]), 1);
    let mut waiting: HashMap<(Token, bool), usize> = HashMap::new();
    let mut events = Events::with_capacity(64);
    while live > 0 {
        while let Some(key) = ready.pop_front() {
            match table[key]
                .as_mut()
                .expect("queued tasks are alive")
                .resume(())
            {
                CoroutineResult::Yield(Op(token, read)) => _ = waiting.insert((token, read), key),
                CoroutineResult::Return(()) => (table[key], live) = (None, live - 1),
            }
            for task in spawned.borrow_mut().drain(..) {
                table.push(Some(task));
                ready.push_back(table.len() - 1);
                live += 1;
            }
        }
        if live == 0 {
            break;
        }
        poll.poll(&mut events, None)?;
        for ev in events.iter() {
            let (t, any) = (ev.token(), ev.is_error());
            if ev.is_readable() || ev.is_read_closed() || any {
                ready.extend(waiting.remove(&(t, true)));
            }
            if ev.is_writable() || ev.is_write_closed() || any {
                ready.extend(waiting.remove(&(t, false)));
            }
        }
    }
    Ok(())
}

/// A client: two lines in 3-byte pieces, then two lines in one write.
fn client(addr: SocketAddr, id: usize) -> io::Result<usize> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let lines = [
        format!("hello from {id}\n"),
        format!("piece by piece {id}\n"),
    ];
    for line in &lines {
        for piece in line.as_bytes().chunks(3) {
            stream.write_all(piece)?;
            thread::sleep(Duration::from_millis(2));
        }
    }
    stream.write_all(format!("two at once {id}\nsecond {id}\n").as_bytes())?;
    let sent = [
        &lines[0][..],
        &lines[1],
        &format!("two at once {id}\n"),
        &format!("second {id}\n"),
    ];
    let mut good = 0;
    for line in sent {
        let mut answer = String::new();
        reader.read_line(&mut answer)?;
        good += usize::from(answer == line.to_uppercase());
    }
    stream.shutdown(Shutdown::Write)?;
    Ok(good)
}

fn main() -> io::Result<()> {
    let mut args = Args::new("exercise_ch05_upper [--clients 1..100]");
    let clients = args.value_in("--clients", 3, 1..=100);
    args.finish();
    let listener = TcpListener::bind("127.0.0.1:0".parse().expect("an address"))?;
    let addr = listener.local_addr()?;
    let threads: Vec<_> = (1..=clients)
        .map(|id| thread::spawn(move || client(addr, id)))
        .collect();
    run(listener, clients)?;
    for (id, t) in (1..=clients).zip(threads) {
        let good = t.join().expect("client threads do not panic")?;
        println!("client {id}: {good} of 4 lines came back upper-cased");
    }
    Ok(())
}
