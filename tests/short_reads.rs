//! A stream read that comes back short has emptied the socket, so the next
//! read waits for readiness without trying the system call first. These
//! tests check that no byte is ever missed or delayed forever because of it:
//! data that arrives while the task is busy, while the loop polls without
//! the task waiting, in random chunks against random buffer sizes, and
//! reads with an empty buffer.

mod util;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use util::{within, XorShift};
use yieldloop::net::TcpStream;

/// A std listener on a free port, and its address.
fn listener() -> (std::net::TcpListener, SocketAddr) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    (l, addr)
}

/// Reads until `want` bytes came, failing on end-of-file.
fn read_n(s: &mut TcpStream, buf: &mut [u8], want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < want {
        let n = s.read(buf).unwrap();
        assert!(n > 0, "end of file after {} of {want} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// After a short read, bytes that arrive while the task holds the thread
/// (no poll runs) and bytes whose event the loop collects while the task
/// sleeps are both read; an empty buffer reads 0 at once.
#[test]
fn data_after_a_short_read_is_never_missed() {
    within(|| {
        let (l, addr) = listener();
        let peer = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut ack = [0u8; 1];
            for word in [&b"first"[..], b"second", b"third"] {
                s.write_all(word).unwrap();
                s.read_exact(&mut ack).unwrap();
            }
        });
        yieldloop::run(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = [0u8; 64];
            assert_eq!(read_n(&mut s, &mut buf, 5), b"first");
            s.write_all(b"!").unwrap();
            // The next word arrives while this task blocks its thread.
            std::thread::sleep(Duration::from_millis(100));
            assert_eq!(s.read(&mut []).unwrap(), 0, "an empty read must not wait");
            assert_eq!(read_n(&mut s, &mut buf, 6), b"second");
            s.write_all(b"!").unwrap();
            // The next word's event is collected while this task sleeps.
            yieldloop::sleep(Duration::from_millis(100));
            assert_eq!(read_n(&mut s, &mut buf, 5), b"third");
            s.write_all(b"!").unwrap();
        });
        peer.join().unwrap();
    });
}

/// Data and the end of the stream arriving together: the read that
/// returns the data comes back short, yet the end of the stream is still
/// pending and no new event will announce it; the next read must return 0
/// at once. Checked with the event collected while the task sleeps, and
/// with the task blocking its thread so that no poll runs before it reads.
#[test]
fn end_of_stream_after_a_short_read_is_seen() {
    for block_thread in [false, true] {
        within(move || {
            let (l, addr) = listener();
            let peer = util::send_and_shut(l, b"bye");
            yieldloop::run(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                if block_thread {
                    std::thread::sleep(Duration::from_millis(100));
                } else {
                    yieldloop::sleep(Duration::from_millis(100));
                }
                let mut buf = [0u8; 64];
                assert_eq!(read_n(&mut s, &mut buf, 3), b"bye");
                assert_eq!(s.read(&mut buf).unwrap(), 0, "end of stream expected");
            });
            peer.join().unwrap();
        });
    }
}

/// Random chunks with random pauses against random buffer sizes (some
/// reads fill the buffer exactly, most come back short), with the reading
/// task pausing, blocking and yielding between reads: the stream arrives
/// whole and in order.
#[test]
fn random_chunks_arrive_whole() {
    for seed in 1..=4u64 {
        within(move || {
            let (l, addr) = listener();
            let mut rng = XorShift::new(seed);
            let data = rng.bytes(200_000);
            let peer = util::send_in_random_chunks(l, seed, data.clone());
            let got = yieldloop::run(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut rng = XorShift::new(seed ^ 0x1234);
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                loop {
                    let len = rng.range(1, 4096) as usize;
                    let n = s.read(&mut buf[..len]).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    match rng.below(6) {
                        0 => yieldloop::yield_now(),
                        1 => yieldloop::sleep(Duration::from_micros(rng.below(500))),
                        2 => std::thread::sleep(Duration::from_micros(rng.below(500))),
                        _ => {}
                    }
                }
                got
            });
            peer.join().unwrap();
            assert!(got == data, "seed {seed}: stream differs");
        });
    }
}
