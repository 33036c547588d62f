//! Feature `hook`, differentially: each case makes the same call, with the
//! same flags and the same descriptor state, once on a plain thread (the
//! C library's own function: the kernel's answer) and once in a task (the
//! hook's), and compares the two: return value, `errno` and bytes. The
//! cases are the flags and limits where a task's call must still be the
//! kernel's: `MSG_WAITALL` with and without `MSG_PEEK`, datagram sockets,
//! bad vector counts, pipe writes larger than the pipe, a Unix connect to
//! a full backlog, `select`'s limits.

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What one call answered: its return value, `errno` if it failed (0
/// otherwise), and the bytes the case collected (what was received, what
/// was left in the socket, the sets `select` wrote, ...).
#[derive(Clone, PartialEq, Eq)]
struct Answer {
    ret: isize,
    errno: i32,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("ret", &self.ret)
            .field("errno", &self.errno)
            .field("bytes", &String::from_utf8_lossy(&self.bytes))
            .finish()
    }
}

/// `errno` right after a call that returned `ret`.
fn answer(ret: isize, bytes: Vec<u8>) -> Answer {
    let errno = if ret < 0 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    } else {
        0
    };
    Answer { ret, errno, bytes }
}

thread_local! {
    /// True while a case runs in a task (on this thread).
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
}

/// The longest a case may take before it is reported as hung (its
/// thread is left blocked).
const HUNG: Duration = Duration::from_secs(20);

/// Runs `f` on a thread of its own and returns its value, or panics if it
/// has not returned within [`HUNG`] (a deadlock, a thread blocked for
/// good).
fn watched<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HUNG) {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {HUNG:?} (the thread is blocked)"),
    }
}

/// The case on a plain thread and in a task; asserts the answers are the
/// same and returns the kernel's.
fn same(case: impl Fn() -> Answer + Send + Clone + 'static) -> Answer {
    let c = case.clone();
    let kernel = watched("on a plain thread", c);
    let hooked = watched("in a task", move || {
        yieldloop::run(move || {
            IN_TASK.with(|t| t.set(true));
            let a = case();
            IN_TASK.with(|t| t.set(false));
            a
        })
    });
    assert_eq!(
        hooked, kernel,
        "in a task (left) and on a plain thread (right)"
    );
    kernel
}

/// Work running beside a case: a task of the same thread when the case
/// runs in a task, a thread otherwise.
enum Beside<T> {
    Task(yieldloop::JoinHandle<T>),
    Thread(thread::JoinHandle<T>),
}

impl<T: Send + 'static> Beside<T> {
    fn start(f: impl FnOnce() -> T + Send + 'static) -> Beside<T> {
        if IN_TASK.with(Cell::get) {
            Beside::Task(yieldloop::spawn(f))
        } else {
            Beside::Thread(thread::spawn(f))
        }
    }

    fn join(self) -> T {
        match self {
            Beside::Task(h) => h.join().unwrap(),
            Beside::Thread(h) => h.join().unwrap(),
        }
    }
}

/// After `after`, on a plain thread whatever the case runs on, `f`: the
/// peer's part of a case (data that comes while the call waits).
fn later<T: Send + 'static>(
    after: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    thread::spawn(move || {
        thread::sleep(after);
        f()
    })
}

/// A connected pair of TCP sockets on 127.0.0.1.
fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (a, b)
}

fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> isize {
    // SAFETY: `buf` is writable for its length.
    unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) }
}

/// A receive's answer: the bytes received.
fn received(ret: isize, buf: &[u8]) -> Answer {
    let mut a = answer(ret, Vec::new());
    a.bytes = buf[..ret.max(0) as usize].to_vec();
    a
}

// ---------------------------------------------------------------------
// MSG_WAITALL, MSG_PEEK, datagram sockets
// ---------------------------------------------------------------------

/// TCP `recv(20, MSG_PEEK | MSG_WAITALL)` with 10 bytes queued and 10
/// more 100 ms later: the kernel waits until 20 are queued and returns
/// them, consuming none (the next read gets all 20 again).
#[test]
fn tcp_peek_waitall_waits_for_all_and_consumes_nothing() {
    let a = same(|| {
        let (mut a, mut b) = tcp_pair();
        a.write_all(b"0123456789").unwrap();
        let peer = later(Duration::from_millis(100), move || {
            a.write_all(b"ABCDEFGHIJ").unwrap();
            a
        });
        let mut buf = [0u8; 20];
        let r = recv(b.as_raw_fd(), &mut buf, libc::MSG_PEEK | libc::MSG_WAITALL);
        let mut ans = received(r, &buf);
        let _a = peer.join().unwrap();
        let mut rest = [0u8; 20];
        b.read_exact(&mut rest).unwrap();
        ans.bytes.extend_from_slice(&rest);
        ans
    });
    assert_eq!(a.ret, 20);
    assert_eq!(a.bytes, b"0123456789ABCDEFGHIJ0123456789ABCDEFGHIJ");
}

/// TCP `recv(20, MSG_PEEK | MSG_WAITALL)` with 10 bytes queued and the
/// stream ended 100 ms later: the kernel returns the 10.
#[test]
fn tcp_peek_waitall_returns_what_is_queued_at_the_end_of_the_stream() {
    let a = same(|| {
        let (mut a, b) = tcp_pair();
        a.write_all(b"0123456789").unwrap();
        let peer = later(Duration::from_millis(100), move || {
            a.shutdown(Shutdown::Write).unwrap();
            a
        });
        let mut buf = [0u8; 20];
        let r = recv(b.as_raw_fd(), &mut buf, libc::MSG_PEEK | libc::MSG_WAITALL);
        let _a = peer.join().unwrap();
        received(r, &buf)
    });
    assert_eq!(a.bytes, b"0123456789");
}

/// TCP `recv(20, MSG_WAITALL)` (no peek) with the bytes in two parts: 20.
#[test]
fn tcp_waitall_gathers_both_parts() {
    let a = same(|| {
        let (mut a, b) = tcp_pair();
        a.write_all(b"0123456789").unwrap();
        let peer = later(Duration::from_millis(100), move || {
            a.write_all(b"ABCDEFGHIJ").unwrap();
            a
        });
        let mut buf = [0u8; 20];
        let r = recv(b.as_raw_fd(), &mut buf, libc::MSG_WAITALL);
        let _a = peer.join().unwrap();
        received(r, &buf)
    });
    assert_eq!(a.bytes, b"0123456789ABCDEFGHIJ");
}

/// TCP `recvmsg` with `MSG_WAITALL` into two vectors (7 and 13 bytes),
/// the bytes in two parts: the kernel fills both vectors, 20 bytes.
#[test]
fn tcp_recvmsg_waitall_fills_every_vector() {
    let a = same(|| {
        let (mut a, b) = tcp_pair();
        a.write_all(b"0123456789").unwrap();
        let peer = later(Duration::from_millis(100), move || {
            a.write_all(b"ABCDEFGHIJ").unwrap();
            a
        });
        let (mut head, mut tail) = ([0u8; 7], [0u8; 13]);
        let mut iov = [
            libc::iovec {
                iov_base: head.as_mut_ptr().cast(),
                iov_len: head.len(),
            },
            libc::iovec {
                iov_base: tail.as_mut_ptr().cast(),
                iov_len: tail.len(),
            },
        ];
        // SAFETY: an all-zero `msghdr` is a valid empty one.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        // SAFETY: `msg` and its vectors are valid for the call.
        let r = unsafe { libc::recvmsg(b.as_raw_fd(), &mut msg, libc::MSG_WAITALL) };
        let _a = peer.join().unwrap();
        // The caller's message is as it gave it.
        assert_eq!(msg.msg_iov, iov.as_mut_ptr());
        assert_eq!(msg.msg_iovlen, 2);
        assert_eq!((iov[0].iov_len, iov[1].iov_len), (7, 13));
        let mut all = head.to_vec();
        all.extend_from_slice(&tail);
        received(r, &all)
    });
    assert_eq!(a.ret, 20);
    assert_eq!(a.bytes, b"0123456789ABCDEFGHIJ");
}

/// `AF_UNIX` stream `recv(20, MSG_PEEK | MSG_WAITALL)` with 10 bytes
/// queued and 10 more later: whatever the kernel answers (its peek on a
/// Unix stream returns what is queued), the task gets the same.
#[test]
fn unix_stream_peek_waitall_is_the_kernels() {
    same(|| {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.write_all(b"0123456789").unwrap();
        let peer = later(Duration::from_millis(100), move || {
            a.write_all(b"ABCDEFGHIJ").unwrap();
            a
        });
        let mut buf = [0u8; 20];
        let r = recv(b.as_raw_fd(), &mut buf, libc::MSG_PEEK | libc::MSG_WAITALL);
        let mut ans = received(r, &buf);
        let _a = peer.join().unwrap();
        let mut rest = [0u8; 20];
        b.read_exact(&mut rest).unwrap();
        ans.bytes.extend_from_slice(&rest);
        ans
    });
}

/// UDP `recvfrom(100, MSG_WAITALL)` with two datagrams queued: the flag
/// has no effect on a datagram socket; the first datagram comes at once,
/// the second is left for the next receive.
#[test]
fn udp_waitall_returns_one_datagram_at_once() {
    let a = same(|| {
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
        a.send_to(b"world", b.local_addr().unwrap()).unwrap();
        let start = Instant::now();
        let mut buf = [0u8; 100];
        // SAFETY: `buf` is writable for its length; no address asked for.
        let r = unsafe {
            libc::recvfrom(
                b.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_WAITALL,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        let mut ans = received(r, &buf);
        ans.bytes
            .push(u8::from(start.elapsed() < Duration::from_secs(1)));
        let n = recv(b.as_raw_fd(), &mut buf, 0);
        ans.bytes.extend_from_slice(&buf[..n.max(0) as usize]);
        ans
    });
    assert_eq!(a.bytes, b"hello\x01world");
}

/// `AF_UNIX` datagram `recv(100, MSG_WAITALL)`: one datagram.
#[test]
fn unix_datagram_waitall_returns_one_datagram() {
    let a = same(|| {
        let (a, b) = UnixDatagram::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        a.send(b"hello").unwrap();
        a.send(b"world").unwrap();
        let mut buf = [0u8; 100];
        let r = recv(b.as_raw_fd(), &mut buf, libc::MSG_WAITALL);
        received(r, &buf)
    });
    assert_eq!(a.bytes, b"hello");
}

// ---------------------------------------------------------------------
// Bad counts
// ---------------------------------------------------------------------

/// `writev`, `readv` and `sendmsg` with counts the kernel refuses (-1,
/// `IOV_MAX + 1`, a `msg_iovlen` of `usize::MAX`): its error, at once, on
/// a socket and on a pipe.
#[test]
fn bad_vector_counts_fail_as_the_kernels() {
    let answers = |fd: RawFd| {
        let mut data = *b"x";
        let one = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let many = vec![one; libc::UIO_MAXIOV as usize + 1];
        let mut out = Vec::new();
        for cnt in [-1, libc::UIO_MAXIOV + 1, i32::MIN] {
            let v = if cnt > 0 { many.as_ptr() } else { &one };
            // SAFETY: `cnt` vectors at `v` where `cnt` is positive; the
            // kernel refuses the others before reading.
            let r = unsafe { libc::writev(fd, v, cnt) };
            out.push(answer(r, b"writev".to_vec()));
            // SAFETY: as above (the one byte is writable).
            let r = unsafe { libc::readv(fd, v, cnt) };
            out.push(answer(r, b"readv".to_vec()));
        }
        for len in [libc::UIO_MAXIOV as usize + 1, usize::MAX] {
            // SAFETY: a zeroed `msghdr` is valid.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = many.as_ptr().cast_mut();
            msg.msg_iovlen = len;
            // SAFETY: the kernel refuses the count before reading.
            let r = unsafe { libc::sendmsg(fd, &msg, 0) };
            out.push(answer(r, b"sendmsg".to_vec()));
            // SAFETY: as above.
            let r = unsafe { libc::recvmsg(fd, &mut msg, 0) };
            out.push(answer(r, b"recvmsg".to_vec()));
        }
        out
    };
    let kernel = same(move || {
        let (_a, b) = tcp_pair();
        let tcp = answers(b.as_raw_fd());
        let (r, w) = pipe();
        let mut all = tcp;
        all.extend(answers(w.as_raw_fd()));
        all.extend(answers(r.as_raw_fd()));
        Answer {
            ret: 0,
            errno: 0,
            bytes: format!("{all:?}").into_bytes(),
        }
    });
    // The kernel's errors: EINVAL for the counts, EMSGSIZE for messages
    // (ENOTSOCK for messages on a pipe).
    let text = String::from_utf8(kernel.bytes).unwrap();
    assert!(!text.contains("ret: 0,"), "{text}");
    assert!(text.contains(&format!("errno: {}", libc::EINVAL)), "{text}");
    assert!(
        text.contains(&format!("errno: {}", libc::EMSGSIZE)),
        "{text}"
    );
}

// ---------------------------------------------------------------------
// Pipe writes larger than the pipe's free space
// ---------------------------------------------------------------------

/// A pipe of two owned descriptors (read end, write end), blocking.
fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: two new descriptors, owned from here on.
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    }
}

/// 1 MiB of a pattern.
fn mebibyte() -> Vec<u8> {
    (0..1usize << 20).map(|i| (i % 251) as u8).collect()
}

/// The length and an FNV-1a hash of `b`: a short stand-in for a long
/// byte string in an answer.
fn digest(b: &[u8]) -> Vec<u8> {
    let h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{} bytes, fnv {h:016x}", b.len()).into_bytes()
}

/// One `write` of 1 MiB to a pipe whose reader runs beside it (a task of
/// the same thread, in a task): the call returns 1 MiB, once all of it is
/// in, as the kernel's blocking write does, and never blocks the thread.
#[test]
fn one_pipe_write_larger_than_the_pipe_is_written_whole() {
    let a = same(|| {
        let (mut r, w) = pipe();
        let reader = Beside::start(move || {
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            got
        });
        let data = mebibyte();
        // SAFETY: `data` is readable for its length.
        let n = unsafe { libc::write(w.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        let mut ans = answer(n, Vec::new());
        drop(w);
        let got = reader.join();
        assert!(got == data, "the reader got other bytes");
        ans.bytes = digest(&got);
        ans
    });
    assert_eq!(a.ret, 1 << 20);
}

/// The same with `writev` of two 512 KiB vectors.
#[test]
fn one_pipe_writev_larger_than_the_pipe_is_written_whole() {
    let a = same(|| {
        let (mut r, w) = pipe();
        let reader = Beside::start(move || {
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            got
        });
        let data = mebibyte();
        let (x, y) = data.split_at(data.len() / 2);
        let v = [
            libc::iovec {
                iov_base: x.as_ptr().cast_mut().cast(),
                iov_len: x.len(),
            },
            libc::iovec {
                iov_base: y.as_ptr().cast_mut().cast(),
                iov_len: y.len(),
            },
        ];
        // SAFETY: two vectors of readable bytes.
        let n = unsafe { libc::writev(w.as_raw_fd(), v.as_ptr(), 2) };
        let mut ans = answer(n, Vec::new());
        drop(w);
        let got = reader.join();
        assert!(got == data, "the reader got other bytes");
        ans.bytes = digest(&got);
        ans
    });
    assert_eq!(a.ret, 1 << 20);
}

/// `std::process::Command("cat")`: its standard input and output are the
/// standard library's blocking pipes; one `write` of 1 MiB to its input
/// while another task (a thread, outside) reads its output.
#[test]
fn std_command_cat_with_one_mebibyte_write() {
    let a = same(|| {
        let mut child = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let reader = Beside::start(move || {
            let mut got = Vec::new();
            out.read_to_end(&mut got).unwrap();
            got
        });
        let input = child.stdin.take().unwrap();
        let data = mebibyte();
        // SAFETY: `data` is readable for its length.
        let n = unsafe { libc::write(input.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        let mut ans = answer(n, Vec::new());
        drop(input);
        let got = reader.join();
        assert!(child.wait().unwrap().success());
        assert!(got == data, "cat gave back other bytes");
        ans.bytes = digest(&got);
        ans
    });
    assert_eq!(a.ret, 1 << 20);
}

/// `yieldloop::process::Command("cat")`, its pipes yieldloop's own
/// (non-blocking, registered with the scheduler, not the hook's): 1 MiB
/// through it with one task writing and another reading, the same bytes
/// as `std`'s `cat` on a plain thread gives back.
#[test]
fn yieldloop_command_cat_with_one_mebibyte() {
    let kernel = watched("std's cat on a plain thread", || {
        let mut child = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let writer = thread::spawn(move || input.write_all(&mebibyte()).unwrap());
        let mut got = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut got).unwrap();
        writer.join().unwrap();
        assert!(child.wait().unwrap().success());
        digest(&got)
    });
    let hooked = watched("yieldloop's cat in tasks", || {
        yieldloop::run(|| {
            use yieldloop::process::{Command, Stdio};
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut input = child.stdin.take().unwrap();
            let writer = yieldloop::spawn(move || input.write_all(&mebibyte()).unwrap());
            let mut got = Vec::new();
            child.stdout.take().unwrap().read_to_end(&mut got).unwrap();
            writer.join().unwrap();
            assert!(child.wait().unwrap().success());
            digest(&got)
        })
    });
    assert_eq!(hooked, kernel);
}

// ---------------------------------------------------------------------
// AF_UNIX connect to a full backlog
// ---------------------------------------------------------------------

/// A `sockaddr_un` for `path`.
fn unix_addr(path: &std::path::Path) -> (libc::sockaddr_un, libc::socklen_t) {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: a zeroed `sockaddr_un` is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let p = path.as_os_str().as_bytes();
    assert!(p.len() < a.sun_path.len());
    for (d, s) in a.sun_path.iter_mut().zip(p) {
        *d = *s as libc::c_char;
    }
    (
        a,
        std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
    )
}

fn unix_socket(flags: i32) -> RawFd {
    // SAFETY: no pointers.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | flags, 0) };
    assert!(fd >= 0);
    fd
}

fn connect_unix(fd: RawFd, path: &std::path::Path) -> isize {
    let (a, len) = unix_addr(path);
    // SAFETY: a valid address of `len` bytes.
    unsafe { libc::connect(fd, (&a as *const libc::sockaddr_un).cast(), len) as isize }
}

/// A listener at a fresh path with a backlog of 0, filled: non-blocking
/// clients connect until the kernel says `EAGAIN`. Returns the path, the
/// listener and the clients.
fn full_unix_listener(tag: &str) -> (std::path::PathBuf, RawFd, Vec<RawFd>) {
    let path = std::env::temp_dir().join(format!(
        "yieldloop-hook-exact-{tag}-{}-{}",
        std::process::id(),
        if IN_TASK.with(Cell::get) {
            "task"
        } else {
            "plain"
        }
    ));
    let _ = std::fs::remove_file(&path);
    let l = unix_socket(libc::SOCK_CLOEXEC);
    let (a, len) = unix_addr(&path);
    // SAFETY: a valid address of `len` bytes.
    let r = unsafe { libc::bind(l, (&a as *const libc::sockaddr_un).cast(), len) };
    assert_eq!(r, 0);
    // SAFETY: no pointers.
    assert_eq!(unsafe { libc::listen(l, 0) }, 0);
    let mut clients = Vec::new();
    loop {
        let c = unix_socket(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
        if connect_unix(c, &path) == 0 {
            clients.push(c);
            continue;
        }
        let e = std::io::Error::last_os_error().raw_os_error();
        // SAFETY: our own descriptor.
        unsafe { libc::close(c) };
        assert_eq!(e, Some(libc::EAGAIN));
        break;
    }
    assert!(!clients.is_empty());
    (path, l, clients)
}

fn close_all(fds: impl IntoIterator<Item = RawFd>) {
    for fd in fds {
        // SAFETY: descriptors the case owns.
        unsafe { libc::close(fd) };
    }
}

/// A blocking `connect` to a Unix listener whose backlog is full, which
/// accepts 150 ms later: the kernel's call waits and then connects.
#[test]
fn unix_connect_to_a_full_backlog_waits_for_room() {
    let a = same(|| {
        let (path, l, clients) = full_unix_listener("wait");
        let acceptor = later(Duration::from_millis(150), move || {
            // SAFETY: no address asked for.
            unsafe { libc::accept(l, std::ptr::null_mut(), std::ptr::null_mut()) }
        });
        let c = unix_socket(libc::SOCK_CLOEXEC);
        let start = Instant::now();
        let r = connect_unix(c, &path);
        let mut ans = answer(r, Vec::new());
        ans.bytes
            .push(u8::from(start.elapsed() >= Duration::from_millis(100)));
        let accepted = acceptor.join().unwrap();
        close_all(clients.into_iter().chain([c, l, accepted]));
        let _ = std::fs::remove_file(&path);
        ans
    });
    assert_eq!((a.ret, a.bytes), (0, vec![1]));
}

/// The same with `SO_SNDTIMEO` of 200 ms and no accept: `EAGAIN` once
/// the time has passed.
#[test]
fn unix_connect_to_a_full_backlog_times_out_with_eagain() {
    let a = same(|| {
        let (path, l, clients) = full_unix_listener("timeout");
        let c = unix_socket(libc::SOCK_CLOEXEC);
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 200_000,
        };
        // SAFETY: a `timeval`, what the option takes.
        let r = unsafe {
            libc::setsockopt(
                c,
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        let start = Instant::now();
        let r = connect_unix(c, &path);
        let mut ans = answer(r, Vec::new());
        ans.bytes
            .push(u8::from(start.elapsed() >= Duration::from_millis(150)));
        close_all(clients.into_iter().chain([c, l]));
        let _ = std::fs::remove_file(&path);
        ans
    });
    assert_eq!((a.ret, a.errno, a.bytes), (-1, libc::EAGAIN, vec![1]));
}

// ---------------------------------------------------------------------
// select's limits
// ---------------------------------------------------------------------

/// A set of `bits` bits with `fds` in it, as words.
fn set_of(bits: usize, fds: &[RawFd]) -> Vec<u64> {
    let mut s = vec![0u64; bits.div_ceil(64)];
    for &fd in fds {
        s[fd as usize / 64] |= 1 << (fd as usize % 64);
    }
    s
}

/// `select` on a read set of `bits` bits holding `fds`, with `timeout`;
/// the answer says which of `fds` the set holds afterwards and any other
/// bit left set (descriptor numbers differ between a plain thread and a
/// task, whose scheduler has descriptors of its own), and the timeout as
/// left, in units of `unit` microseconds (a wait that depends on another
/// thread's timing is compared coarsely), and whether it was left
/// normalised.
fn select_answer(
    nfds: i32,
    bits: usize,
    fds: &[RawFd],
    timeout: Option<(i64, i64)>,
    unit: i64,
) -> Answer {
    let mut rset = set_of(bits, fds);
    let mut tv = timeout.map(|(s, us)| libc::timeval {
        tv_sec: s,
        tv_usec: us,
    });
    let tvp = tv
        .as_mut()
        .map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: the set holds `bits` bits, at least `nfds` (or as many as
    // the kernel reads); the timeout is ours.
    let r = unsafe {
        libc::select(
            nfds,
            rset.as_mut_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            tvp,
        )
    };
    let mut a = answer(r as isize, Vec::new());
    let held: Vec<bool> = fds
        .iter()
        .map(|&fd| rset[fd as usize / 64] >> (fd as usize % 64) & 1 != 0)
        .collect();
    for &fd in fds {
        rset[fd as usize / 64] &= !(1 << (fd as usize % 64));
    }
    let others = rset.iter().any(|&w| w != 0);
    a.bytes = format!(
        "set holds {held:?}, others {others}, timeout left {:?}",
        tv.map(|t| (
            (t.tv_sec * 1_000_000 + t.tv_usec) / unit,
            t.tv_usec < 1_000_000
        ))
    )
    .into_bytes();
    a
}

/// `tv_usec` of 1.5 s with a descriptor ready: the kernel takes the
/// normalised time (1 s + 0.5 s) and answers at once.
#[test]
fn select_takes_microseconds_above_a_second() {
    let a = same(|| {
        let (r, mut w) = pipe();
        w.write_all(b"x").unwrap();
        let fd = r.as_raw_fd();
        select_answer(fd + 1, 1024, &[fd], Some((0, 1_500_000)), 100_000)
    });
    assert_eq!(a.ret, 1);
}

/// `tv_usec` of 1.05 s with nothing ready: both wait the time out, and
/// leave zero in the timeout.
#[test]
fn select_waits_microseconds_above_a_second() {
    let a = same(|| {
        let (r, _w) = pipe();
        let fd = r.as_raw_fd();
        let start = Instant::now();
        let mut a = select_answer(fd + 1, 1024, &[fd], Some((0, 1_050_000)), 100_000);
        a.bytes
            .push(u8::from(start.elapsed() >= Duration::from_millis(1000)));
        a
    });
    assert_eq!((a.ret, a.bytes.last()), (0, Some(&1)));
}

/// `nfds` of 4096 (a set that long): the kernel takes it (reading no more
/// bits than the process has descriptors), ready at once or 100 ms later.
#[test]
fn select_takes_nfds_above_fd_setsize() {
    let a = same(|| {
        let (r, mut w) = pipe();
        w.write_all(b"x").unwrap();
        let fd = r.as_raw_fd();
        let mut answers = vec![select_answer(4096, 4096, &[fd], None, 1)];
        let (r2, w2) = pipe();
        let fd2 = r2.as_raw_fd();
        let peer = later(Duration::from_millis(100), move || {
            let mut w2 = w2;
            w2.write_all(b"y").unwrap();
            w2
        });
        answers.push(select_answer(4096, 4096, &[fd2], Some((5, 0)), 1_000_000));
        let _w2 = peer.join().unwrap();
        Answer {
            ret: 0,
            errno: 0,
            bytes: format!("{answers:?}").into_bytes(),
        }
    });
    let text = String::from_utf8(a.bytes).unwrap();
    assert!(!text.contains("ret: -1"), "{text}");
}

/// Negative `tv_usec`, negative `tv_sec`, negative `nfds`: `EINVAL`.
#[test]
fn select_refuses_what_the_kernel_refuses() {
    let a = same(|| {
        let (r, mut w) = pipe();
        w.write_all(b"x").unwrap();
        let fd = r.as_raw_fd();
        let all = [
            select_answer(fd + 1, 1024, &[fd], Some((0, -1)), 1),
            select_answer(fd + 1, 1024, &[fd], Some((-1, 0)), 1),
            select_answer(-1, 1024, &[fd], Some((0, 0)), 1),
        ];
        Answer {
            ret: 0,
            errno: 0,
            bytes: format!("{all:?}").into_bytes(),
        }
    });
    let text = String::from_utf8(a.bytes).unwrap();
    assert_eq!(
        text.matches(&format!("errno: {}", libc::EINVAL)).count(),
        3,
        "{text}"
    );
}
