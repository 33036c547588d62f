//! TCP end to end: an in-process echo server under load from many
//! concurrent clients, `BufReader::read_line` over a socket inside a task,
//! and clients on other threads (plain blocking std sockets, and another
//! scheduler).

mod util;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now, JoinHandle};

/// How long any single socket wait in these tests may last before the test
/// fails instead of hanging.
const IO_LIMIT: Duration = Duration::from_secs(10);

/// Starts an echo server task: one task per connection copies what it reads
/// back until end-of-file, then closes. It serves `conns` connections, or
/// until `run` ends. Returns its address.
fn start_echo_server(conns: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(spawn(move || {
        for stream in listener.incoming().take(conns) {
            let stream = stream.expect("accept");
            stream.set_read_timeout(Some(IO_LIMIT)).unwrap();
            stream.set_write_timeout(Some(IO_LIMIT)).unwrap();
            drop(spawn(move || {
                let (mut r, mut w) = (&stream, &stream);
                io::copy(&mut r, &mut w).expect("echo");
            }));
        }
    }));
    addr
}

/// Sends `msg` through the echo server at `addr` and returns what came back.
/// A writer task sends in random-sized pieces (then half-closes) while this
/// task reads in random-sized pieces: reading and writing must overlap, or
/// both sides would stall on full socket buffers.
fn echo_once(addr: SocketAddr, msg: Rc<Vec<u8>>, seed: u64) -> Vec<u8> {
    let stream = Rc::new(TcpStream::connect(addr).unwrap());
    stream.set_read_timeout(Some(IO_LIMIT)).unwrap();
    stream.set_write_timeout(Some(IO_LIMIT)).unwrap();
    let writer = {
        let (stream, msg) = (stream.clone(), msg.clone());
        spawn(move || {
            let mut rng = util::XorShift::new(seed);
            let mut sent = 0;
            while sent < msg.len() {
                let n = (rng.range(1, 8192) as usize).min(msg.len() - sent);
                (&*stream).write_all(&msg[sent..sent + n]).unwrap();
                sent += n;
                if rng.below(8) == 0 {
                    yield_now();
                }
            }
            stream.shutdown(Shutdown::Write).unwrap();
        })
    };
    let mut rng = util::XorShift::new(!seed);
    let mut back = Vec::with_capacity(msg.len());
    let mut buf = vec![0u8; 16 * 1024];
    // Bounded: the echo is never longer than the message.
    while back.len() <= msg.len() {
        let want = rng.range(1, buf.len() as u64) as usize;
        match (&*stream).read(&mut buf[..want]).unwrap() {
            0 => break,
            n => back.extend_from_slice(&buf[..n]),
        }
    }
    writer.join().unwrap();
    back
}

/// 200 concurrent clients each echo a 64 KiB random message through an
/// in-process server, byte for byte.
#[test]
fn concurrent_clients_echo_exactly() {
    const CLIENTS: u64 = 200;
    const SIZE: usize = 64 * 1024;
    let start = Instant::now();
    yieldloop::run(|| {
        let addr = start_echo_server(CLIENTS as usize);
        let clients: Vec<JoinHandle<()>> = (0..CLIENTS)
            .map(|i| {
                spawn(move || {
                    let msg = Rc::new(util::random_bytes(i, SIZE));
                    let back = echo_once(addr, msg.clone(), i);
                    assert_eq!(back.len(), SIZE, "client {i}: length");
                    assert!(back == *msg, "client {i}: the echo differs");
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    });
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// `BufReader::read_line` (and `lines`, `read_until`) works over a socket
/// inside a task, with lines split across writes, a line far longer than
/// the buffer, multi-byte characters cut in half, and a last line without
/// a newline.
#[test]
fn buf_reader_read_line_over_tcp() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let long_line = "x".repeat(100_000);
        let ll = long_line.clone();
        let server = spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut w = &s;
            let pieces: Vec<Vec<u8>> = vec![
                b"hello\n".to_vec(),
                b"wor".to_vec(),
                b"ld\nsecond ".to_vec(),
                b"half\n".to_vec(),
                // "héllo wörld\n" with 'é' (two bytes) cut in half.
                "h".as_bytes().to_vec(),
                vec![0xC3],
                [&[0xA9][..], "llo wörld\n".as_bytes()].concat(),
                format!("{ll}\n").into_bytes(),
                b"a;b;c\n".to_vec(),
                b"no newline at the end".to_vec(),
            ];
            for p in pieces {
                w.write_all(&p).unwrap();
                sleep(Duration::from_millis(2));
            }
            // Closing ends the stream.
        });
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(IO_LIMIT)).unwrap();
        let mut reader = BufReader::with_capacity(1024, &stream);
        let mut line = String::new();
        let mut next = |reader: &mut BufReader<&TcpStream>| {
            line.clear();
            reader.read_line(&mut line).unwrap();
            line.clone()
        };
        assert_eq!(next(&mut reader), "hello\n");
        assert_eq!(next(&mut reader), "world\n");
        assert_eq!(next(&mut reader), "second half\n");
        assert_eq!(next(&mut reader), "héllo wörld\n");
        assert_eq!(next(&mut reader), format!("{long_line}\n"));
        let mut fields = Vec::new();
        reader.read_until(b'\n', &mut fields).unwrap();
        assert_eq!(fields, b"a;b;c\n");
        let rest: Vec<String> = reader.lines().map(Result::unwrap).collect();
        assert_eq!(rest, ["no newline at the end"]);
        server.join().unwrap();
    });
}

/// Clients on other OS threads, using plain blocking std sockets, talk to a
/// yieldloop server.
#[test]
fn std_clients_on_other_threads() {
    const THREADS: u64 = 4;
    const CONNS: u64 = 10;
    yieldloop::run(|| {
        let addr = start_echo_server((THREADS * CONNS) as usize);
        let done = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let done = done.clone();
                std::thread::spawn(move || {
                    let mut rng = util::XorShift::new(t);
                    for c in 0..CONNS {
                        let len = rng.range(0, 256 * 1024) as usize;
                        let msg = util::random_bytes(t * 1000 + c, len);
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        // Also the write timeout of the clone: one socket.
                        s.set_read_timeout(Some(IO_LIMIT)).unwrap();
                        s.set_write_timeout(Some(IO_LIMIT)).unwrap();
                        let mut w = s.try_clone().unwrap();
                        let back = std::thread::scope(|scope| {
                            scope.spawn(|| {
                                w.write_all(&msg).unwrap();
                                w.shutdown(Shutdown::Write).unwrap();
                            });
                            let mut back = Vec::new();
                            s.read_to_end(&mut back).unwrap();
                            back
                        });
                        assert!(back == msg, "thread {t} connection {c}: echo differs");
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Serve until every client thread is through (they cannot be joined
        // from here without blocking the scheduler).
        let finished = util::wait_until(Duration::from_secs(20), || {
            threads.iter().all(std::thread::JoinHandle::is_finished)
        });
        assert!(finished, "client threads did not finish");
        for t in threads {
            t.join().expect("a client thread failed");
        }
        assert_eq!(done.load(Ordering::SeqCst), THREADS as usize);
    });
}

/// A yieldloop server on one thread serves yieldloop clients running on
/// another thread's scheduler.
#[test]
fn echo_between_two_schedulers() {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        yieldloop::run(move || {
            addr_tx.send(start_echo_server(20)).unwrap();
            // Serve until told to stop.
            let stopped = util::wait_until(Duration::from_secs(20), || stop_rx.try_recv().is_ok());
            assert!(stopped, "the client thread never said stop");
        })
    });
    let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let total = yieldloop::run(move || {
        let clients: Vec<_> = (0..20u64)
            .map(|i| {
                spawn(move || {
                    let msg = Rc::new(util::random_bytes(i + 500, 32 * 1024 + i as usize));
                    let back = echo_once(addr, msg.clone(), i);
                    assert!(back == *msg, "client {i}: echo differs");
                    back.len()
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|c| c.join().unwrap())
            .sum::<usize>()
    });
    stop_tx.send(()).unwrap();
    server.join().unwrap();
    assert_eq!(total, 20 * 32 * 1024 + (0..20).sum::<usize>());
}
