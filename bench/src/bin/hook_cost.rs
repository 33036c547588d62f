//! What feature `hook` costs a call made outside any task: the same calls,
//! timed the same way, in a build without the feature (the C library's
//! `recv` and `read`) and one with it (yieldloop's definitions, which find
//! no task on the thread and make the plain system call). bench/run.sh
//! builds this twice and runs the two in turn; the difference of their
//! figures is the cost.
//!
//! Two calls on one thread, each in batches of `--iters` calls:
//! `recv(.., MSG_PEEK)` of one byte from a Unix socket that has data (the
//! data path, nothing consumed), and `read` of an empty non-blocking Unix
//! socket (`EAGAIN`, the shortest path through the kernel).
//!
//! ```text
//! hook_cost [--iters 1000000] [--batches 15]
//! ```
//!
//! Prints one line per call:
//! `hook_cost build=plain|hook call=recv_peek|read_eagain iters=.. batches=.. ns_med=.. ns_min=..`.

use std::hint::black_box;
use std::time::Instant;

fn main() {
    let (mut iters, mut batches) = (1_000_000u64, 15usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), v) {
            ("--iters", Some(v)) if v > 0 => iters = v,
            ("--batches", Some(v)) if v > 0 => batches = v as usize,
            _ => {
                eprintln!("usage: hook_cost [--iters N] [--batches B]");
                std::process::exit(2);
            }
        }
    }
    let build = if cfg!(feature = "hook") {
        "hook"
    } else {
        "plain"
    };
    let full = socket_pair();
    let empty = socket_pair();
    // One byte waiting on `full`, peeked at and never consumed.
    // SAFETY: a valid descriptor and a one-byte buffer.
    let n = unsafe { libc::write(full[1], b"x".as_ptr().cast(), 1) };
    assert_eq!(n, 1, "write: {}", std::io::Error::last_os_error());
    // SAFETY: F_SETFL on a valid descriptor.
    let r = unsafe { libc::fcntl(empty[0], libc::F_SETFL, libc::O_NONBLOCK) };
    assert_eq!(r, 0, "fcntl: {}", std::io::Error::last_os_error());

    let mut buf = [0u8; 16];
    let recv_peek = |buf: &mut [u8; 16]| {
        // SAFETY: a valid descriptor and buffer of at least one byte.
        let n = unsafe { libc::recv(full[0], buf.as_mut_ptr().cast(), 1, libc::MSG_PEEK) };
        debug_assert_eq!(n, 1);
        n
    };
    let read_eagain = |buf: &mut [u8; 16]| {
        // SAFETY: a valid descriptor and a buffer of 16 bytes.
        let n = unsafe { libc::read(empty[0], buf.as_mut_ptr().cast(), buf.len()) };
        debug_assert_eq!(n, -1);
        n
    };
    // Both paths must do what they say before being timed.
    assert_eq!(
        recv_peek(&mut buf),
        1,
        "recv: {}",
        std::io::Error::last_os_error()
    );
    assert_eq!(read_eagain(&mut buf), -1, "read of an empty socket");
    assert_eq!(
        std::io::Error::last_os_error().kind(),
        std::io::ErrorKind::WouldBlock
    );

    for (name, call) in [
        ("recv_peek", &recv_peek as &dyn Fn(&mut [u8; 16]) -> isize),
        ("read_eagain", &read_eagain),
    ] {
        // One untimed batch: caches, branch predictors, frequency.
        time_batch(iters, &mut buf, call);
        let mut per_call: Vec<f64> = (0..batches)
            .map(|_| time_batch(iters, &mut buf, call))
            .collect();
        per_call.sort_by(f64::total_cmp);
        println!(
            "hook_cost build={build} call={name} iters={iters} batches={batches} ns_med={:.2} ns_min={:.2}",
            per_call[per_call.len() / 2],
            per_call[0]
        );
    }
}

/// Nanoseconds per call over `iters` calls.
fn time_batch(iters: u64, buf: &mut [u8; 16], call: &dyn Fn(&mut [u8; 16]) -> isize) -> f64 {
    let start = Instant::now();
    let mut sum = 0isize;
    for _ in 0..iters {
        sum = sum.wrapping_add(call(black_box(buf)));
    }
    black_box(sum);
    start.elapsed().as_nanos() as f64 / iters as f64
}

/// A connected pair of Unix stream sockets, blocking.
fn socket_pair() -> [libc::c_int; 2] {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
    assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
    fds
}
