//! Feature `hook`: blocking `std` and C library calls made from a task
//! pause only that task.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn active() {
    assert!(yieldloop::hook::active());
}

#[test]
fn std_sleep_pauses_only_the_task() {
    let start = Instant::now();
    yieldloop::run(|| {
        let hs: Vec<_> = (0..10)
            .map(|_| yieldloop::spawn(|| std::thread::sleep(Duration::from_millis(100))))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took < Duration::from_millis(600), "{took:?}");
}

#[test]
fn std_tcp_in_tasks() {
    yieldloop::run(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = yieldloop::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            c.write_all(&buf).unwrap();
        });
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        server.join().unwrap();
    });
}
