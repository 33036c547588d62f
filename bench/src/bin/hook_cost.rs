//! What feature `hook` costs a call made outside any task.
//!
//! Two calls on one thread: `recv(.., MSG_PEEK)` of one byte from a Unix
//! socket that has data (the data path, nothing consumed), and `read` of an
//! empty non-blocking Unix socket (`EAGAIN`, the shortest path through the
//! kernel). Each is timed two ways, in alternating batches of `--iters`
//! calls (the order swapped every batch, so that drift of the machine
//! falls on both alike):
//!
//! - **by name**: `libc::recv`, `libc::read`, as any program calls them. In
//!   a build with feature `hook` these are yieldloop's definitions, which
//!   find no task on the thread and make the plain call; without it, the
//!   C library's;
//! - **direct**: the C library's own function, through the address
//!   `dlsym(RTLD_NEXT, ..)` gives.
//!
//! What the name costs above the C library's function is the difference:
//! of the fastest batches (`added_min_ns`: a code path's own cost is the
//! same in every batch, while interference only ever adds, so the minima
//! are the steadiest figure on a busy machine), and the median of the
//! per-pair differences (`added_ns`). In the hook build that is the
//! hook's cost; in the plain build it is a control that should be zero,
//! and its spread is the method's noise. bench/run.sh builds this twice
//! and runs both; the two builds' by-name figures also compare directly.
//!
//! ```text
//! hook_cost [--iters 1000000] [--batches 15]
//! ```
//!
//! Prints one line per call: `hook_cost build=plain|hook via=libc|executable
//! call=recv_peek|read_eagain iters=.. batches=.. ns_med=.. ns_min=..
//! direct_ns_med=.. direct_ns_min=.. added_min_ns=.. added_ns=..` (`via`:
//! whose `recv` the by-name calls reach; a build whose calls do not reach
//! what it is named for fails instead; `ns_*` by name, `direct_ns_*`
//! direct).

// Linked in though no item of it is used here: with feature `hook` its
// definitions of `recv` and `read` are what this program's calls reach (a
// crate nothing refers to would not be linked at all).
extern crate yieldloop as _;

use std::ffi::{c_int, c_void, CStr};
use std::hint::black_box;
use std::time::Instant;

type Recv = unsafe extern "C" fn(c_int, *mut c_void, usize, c_int) -> isize;
type Read = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

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
    // SAFETY: the C library's `recv` and `read` have these signatures.
    let (next_recv, next_read): (Recv, Read) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Recv>(next(c"recv")),
            std::mem::transmute::<*mut c_void, Read>(next(c"read")),
        )
    };
    let via = if libc::recv as *const () as usize == next_recv as usize {
        "libc"
    } else {
        "executable"
    };
    if (build == "hook") != (via == "executable") {
        eprintln!("hook_cost: a {build} build whose recv is the {via}'s");
        std::process::exit(1);
    }

    let full = socket_pair();
    let empty = socket_pair();
    // One byte waiting on `full`, peeked at and never consumed.
    // SAFETY: a valid descriptor and a one-byte buffer.
    let n = unsafe { libc::write(full[1], b"x".as_ptr().cast(), 1) };
    assert_eq!(n, 1, "write: {}", std::io::Error::last_os_error());
    // SAFETY: F_SETFL on a valid descriptor.
    let r = unsafe { libc::fcntl(empty[0], libc::F_SETFL, libc::O_NONBLOCK) };
    assert_eq!(r, 0, "fcntl: {}", std::io::Error::last_os_error());

    let (fd_full, fd_empty) = (full[0], empty[0]);
    // SAFETY (all four): a valid descriptor and a buffer of 16 bytes.
    let recv_name =
        |b: &mut [u8; 16]| unsafe { libc::recv(fd_full, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK) };
    let recv_direct =
        |b: &mut [u8; 16]| unsafe { next_recv(fd_full, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK) };
    let read_name = |b: &mut [u8; 16]| unsafe { libc::read(fd_empty, b.as_mut_ptr().cast(), 16) };
    let read_direct = |b: &mut [u8; 16]| unsafe { next_read(fd_empty, b.as_mut_ptr().cast(), 16) };

    let mut buf = [0u8; 16];
    // Every path must do what it says before being timed.
    for (what, call, want) in [
        ("recv", &recv_name as &dyn Fn(&mut [u8; 16]) -> isize, 1),
        ("recv direct", &recv_direct, 1),
        ("read", &read_name, -1),
        ("read direct", &read_direct, -1),
    ] {
        assert_eq!(
            call(&mut buf),
            want,
            "{what}: {}",
            std::io::Error::last_os_error()
        );
    }

    for (name, by_name, direct) in [
        (
            "recv_peek",
            &recv_name as &dyn Fn(&mut [u8; 16]) -> isize,
            &recv_direct as &dyn Fn(&mut [u8; 16]) -> isize,
        ),
        ("read_eagain", &read_name, &read_direct),
    ] {
        // One untimed batch each: caches, branch predictors, frequency.
        time_batch(iters, &mut buf, by_name);
        time_batch(iters, &mut buf, direct);
        let (mut named, mut plain, mut diff) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..batches {
            let (n, d) = if b % 2 == 0 {
                let n = time_batch(iters, &mut buf, by_name);
                (n, time_batch(iters, &mut buf, direct))
            } else {
                let d = time_batch(iters, &mut buf, direct);
                (time_batch(iters, &mut buf, by_name), d)
            };
            named.push(n);
            plain.push(d);
            diff.push(n - d);
        }
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let (named_min, plain_min) = (min(&named), min(&plain));
        println!(
            "hook_cost build={build} via={via} call={name} iters={iters} batches={batches} \
             ns_med={:.2} ns_min={named_min:.2} direct_ns_med={:.2} direct_ns_min={plain_min:.2} \
             added_min_ns={:.2} added_ns={:.2}",
            median(&mut named),
            median(&mut plain),
            named_min - plain_min,
            median(&mut diff),
        );
    }
}

/// The C library's definition of `name`: the next one after this
/// executable's.
fn next(name: &CStr) -> *mut c_void {
    // SAFETY: a NUL-terminated name; RTLD_NEXT searches the objects loaded
    // after this one.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    assert!(!f.is_null(), "dlsym(RTLD_NEXT, {name:?})");
    f
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
