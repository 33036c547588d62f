//! Feature `hook`: blocking `std` and C library calls made from a task
//! pause only that task, keep their blocking semantics, and never unwind
//! through the caller when a timeout, a cancellation or the end of `run`
//! cuts them short. The same calls outside a task are the plain ones.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::{ticker, with_ticker};
use yieldloop::spawn;

mod util;

/// The longest a 1 ms ticker may go without running while other tasks
/// wait inside intercepted calls: below the waits the tests make (300 ms
/// and more, which a blocked thread would show as a gap at least that
/// long), with room for a machine shared with other builds.
const GAP_LIMIT: Duration = Duration::from_millis(200);

/// A connected pair of std sockets on 127.0.0.1 (the hook is not involved
/// in making them: connect and accept of a loopback pair are immediate).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (a, b)
}

fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// `O_NONBLOCK` on the descriptor's file description.
fn is_nonblocking(fd: i32) -> bool {
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(flags >= 0);
    flags & libc::O_NONBLOCK != 0
}

/// The executable exports the definitions (the tests are linked with
/// `-rdynamic`), so shared libraries reach them.
#[test]
fn the_hook_is_active() {
    assert!(yieldloop::hook::active());
}

/// `std::thread::sleep` in ten tasks: they sleep at once, and a ticker
/// runs throughout.
#[test]
fn std_sleep_pauses_only_the_task() {
    let start = Instant::now();
    let ((), gap) = with_ticker(|| {
        let hs: Vec<_> = (0..10)
            .map(|_| spawn(|| std::thread::sleep(Duration::from_millis(300))))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(
        took < Duration::from_millis(2000),
        "ten sleeps ran one after another: {took:?}"
    );
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A std listener and std streams in tasks: a blocking `accept` waits for
/// the client, the server's reply comes 300 ms late, and the ticker keeps
/// running while both sides wait.
#[test]
fn std_tcp_connect_accept_read_write_in_tasks() {
    let (echoed, gap) = with_ticker(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            c.write_all(&buf).unwrap();
        });
        // Let the server block in `accept` first.
        std::thread::sleep(Duration::from_millis(100));
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        c.read_exact(&mut buf).unwrap();
        server.join().unwrap();
        // The library's blocking mode is what it set: the hook never
        // switched it.
        assert!(!is_nonblocking(c.as_raw_fd()));
        buf
    });
    assert_eq!(&echoed, b"hello");
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A write bigger than the socket buffers returns once every byte is
/// sent, as a blocking write does, while the reader drains it slowly.
#[test]
fn a_large_write_is_written_whole() {
    const LEN: usize = 8 << 20;
    // Made before the ticker starts: building it is slow in a debug build.
    let data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    let want: u64 = data.iter().map(|&x| u64::from(x)).sum();
    let (n, gap) = with_ticker(move || {
        let (mut a, mut b) = pair();
        let reader = spawn(move || {
            let mut got = 0usize;
            let mut buf = vec![0u8; 64 << 10];
            let mut sum = 0u64;
            while got < LEN {
                let n = b.read(&mut buf).unwrap();
                assert!(n > 0, "early end after {got} bytes");
                sum += buf[..n].iter().map(|&x| u64::from(x)).sum::<u64>();
                got += n;
            }
            sum
        });
        // One call: `write`, not `write_all`, so a short count would show.
        let n = a.write(&data).unwrap();
        assert_eq!(reader.join().unwrap(), want);
        n
    });
    assert_eq!(n, LEN);
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// `poll` and `select` through the C library's names from a task: with a
/// timeout and nothing ready they return 0 after the timeout, with data
/// arriving meanwhile they report it; the ticker runs throughout.
#[test]
fn poll_and_select_from_a_task() {
    let ((), gap) = with_ticker(|| {
        let (mut a, b) = pair();
        let fd = b.as_raw_fd();
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let t = Instant::now();
        // SAFETY: one valid `pollfd`.
        let r = unsafe { libc::poll(&mut p, 1, 300) };
        let took = t.elapsed();
        assert_eq!(r, 0);
        assert!(took >= Duration::from_millis(295), "{took:?}");
        assert!(took < Duration::from_millis(2000), "{took:?}");

        let writer = spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            a.write_all(b"x").unwrap();
            a
        });
        let t = Instant::now();
        // SAFETY: one valid `pollfd`.
        let r = unsafe { libc::poll(&mut p, 1, 5000) };
        assert_eq!(r, 1);
        assert!(p.revents & libc::POLLIN != 0);
        assert!(t.elapsed() >= Duration::from_millis(250));
        let mut a = writer.join().unwrap();

        // select: readable now (the byte is still there), at once.
        // SAFETY: an all-zero fd_set is an empty one.
        let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is below FD_SETSIZE in a test process.
        unsafe { libc::FD_SET(fd, &mut set) };
        let mut tv = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: valid set and timeout.
        let r = unsafe {
            libc::select(
                fd + 1,
                &mut set,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            )
        };
        assert_eq!(r, 1);
        // Drain it, then select times out after 300 ms, leaving the set
        // empty and no time in the timeout.
        let mut buf = [0u8; 1];
        (&b).read_exact(&mut buf).unwrap();
        // SAFETY: as above.
        unsafe { libc::FD_SET(fd, &mut set) };
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 300_000,
        };
        let t = Instant::now();
        // SAFETY: as above.
        let r = unsafe {
            libc::select(
                fd + 1,
                &mut set,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            )
        };
        let took = t.elapsed();
        assert_eq!(r, 0);
        // SAFETY: as above.
        assert!(!unsafe { libc::FD_ISSET(fd, &set) });
        assert!(took >= Duration::from_millis(295), "{took:?}");
        assert_eq!((tv.tv_sec, tv.tv_usec), (0, 0));
        a.write_all(b"y").unwrap();
    });
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A connect to a port nobody listens on fails with the kernel's
/// `ECONNREFUSED`.
#[test]
fn connect_refused_is_econnrefused() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = yieldloop::run(move || TcpStream::connect(("127.0.0.1", port)).unwrap_err());
    assert_eq!(errno_of(&e), libc::ECONNREFUSED, "{e}");
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
}

/// `SO_RCVTIMEO` (std's `set_read_timeout`) ends a read that got nothing
/// with `EAGAIN` after the timeout, as the kernel does, and only the task
/// waits meanwhile.
#[test]
fn so_rcvtimeo_is_honoured() {
    let ((e, took), gap) = with_ticker(|| {
        let (_a, mut b) = pair();
        b.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let t = Instant::now();
        let e = b.read(&mut [0u8; 8]).unwrap_err();
        (e, t.elapsed())
    });
    assert_eq!(errno_of(&e), libc::EAGAIN, "{e}");
    assert!(took >= Duration::from_millis(295), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A socket the library made non-blocking is left alone: `EAGAIN` at
/// once, still non-blocking after.
#[test]
fn a_nonblocking_socket_still_gets_eagain() {
    let (e, took, nonblocking) = yieldloop::run(|| {
        let (_a, mut b) = pair();
        b.set_nonblocking(true).unwrap();
        let t = Instant::now();
        let e = b.read(&mut [0u8; 8]).unwrap_err();
        (e, t.elapsed(), is_nonblocking(b.as_raw_fd()))
    });
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert!(nonblocking);

    // A non-blocking listener with nothing pending, and a non-blocking
    // pipe with nothing in it: `EAGAIN` at once too.
    let (accept, pipe) = yieldloop::run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let accept = l.accept().map(|_| ()).unwrap_err().kind();
        let mut fds = [0; 2];
        // SAFETY: room for the two descriptors.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) };
        assert_eq!(made, 0);
        let mut buf = [0u8; 4];
        // SAFETY: `buf` is valid for its length.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), 4) };
        let e = io::Error::last_os_error().raw_os_error();
        // SAFETY: both ours, closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        (accept, (n, e))
    });
    assert_eq!(accept, io::ErrorKind::WouldBlock);
    assert_eq!(pipe, (-1, Some(libc::EAGAIN)));
}

/// A regular file is read and written with the plain calls.
#[test]
fn a_regular_file_passes_through() {
    let path = std::env::temp_dir().join(format!("yieldloop-hook-{}.txt", std::process::id()));
    let p = path.clone();
    let got = yieldloop::run(move || {
        std::fs::write(&p, b"plain file contents").unwrap();
        std::fs::read(&p).unwrap()
    });
    let _ = std::fs::remove_file(&path);
    assert_eq!(got, b"plain file contents");
}

/// A blocking pipe from a task: the reader waits (only the task) until the
/// writer's bytes are there.
#[test]
fn a_blocking_pipe_waits_in_the_task() {
    let (got, gap) = with_ticker(|| {
        let mut fds = [0; 2];
        // SAFETY: room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: just opened, owned by nothing else.
        let (mut rx, mut tx) = unsafe {
            use std::os::fd::FromRawFd;
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let writer = spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            tx.write_all(b"through the pipe").unwrap();
        });
        let mut s = String::new();
        rx.read_to_string(&mut s).unwrap();
        writer.join().unwrap();
        s
    });
    assert_eq!(got, "through the pipe");
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A descriptor number closed and reused starts fresh: a socket waited on
/// (so registered with the reactor) is closed, a new one gets its number,
/// and waits on the new one work; a file at the number is plain again.
#[test]
fn close_and_reuse_of_a_number_start_fresh() {
    yieldloop::run(|| {
        let (mut a, b) = pair();
        let fd = b.as_raw_fd();
        let w = spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            a.write_all(b"1").unwrap();
            a
        });
        (&b).read_exact(&mut [0u8; 1]).unwrap();
        let _a = w.join().unwrap();
        drop(b);
        // The lowest free number is `fd` again (nothing else opens
        // descriptors in this process meanwhile... or so we check).
        let (mut c, d) = pair();
        let reused = d.as_raw_fd() == fd || c.as_raw_fd() == fd;
        let w = spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            c.write_all(b"2").unwrap();
            c
        });
        let mut one = [0u8; 1];
        (&d).read_exact(&mut one).unwrap();
        assert_eq!(&one, b"2");
        let c = w.join().unwrap();
        (&c).write_all(b"3").unwrap();
        (&d).read_exact(&mut one).unwrap();
        assert_eq!(&one, b"3");
        drop((c, d));
        // A regular file under a number a socket had.
        let path =
            std::env::temp_dir().join(format!("yieldloop-hook-reuse-{}", std::process::id()));
        std::fs::write(&path, b"file").unwrap();
        let mut f = std::fs::File::open(&path).unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(s, "file");
        let _ = reused;
    });
}

/// The same calls on a plain thread (the feature on, no task) block that
/// thread as they always did, even while a scheduler runs on another.
#[test]
fn outside_a_task_the_calls_are_plain() {
    let sched = std::thread::spawn(|| {
        yieldloop::run(|| std::thread::sleep(Duration::from_millis(300)));
    });
    let (mut a, mut b) = pair();
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(100));
    assert!(t.elapsed() >= Duration::from_millis(100));
    b.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    let t = Instant::now();
    let e = b.read(&mut [0u8; 4]).unwrap_err();
    assert_eq!(errno_of(&e), libc::EAGAIN);
    assert!(t.elapsed() >= Duration::from_millis(145));
    a.write_all(b"ok").unwrap();
    let mut buf = [0u8; 2];
    b.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ok");
    sched.join().unwrap();
    // After `run` has returned, this thread is a plain one again.
    yieldloop::run(|| ());
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(50));
    assert!(t.elapsed() >= Duration::from_millis(50));
}

/// `timeout` around a blocked read returns `Elapsed` on time; the read
/// itself failed with `ETIMEDOUT` (not an unwind through the C library's
/// frames), and the task goes on, the socket still usable.
#[test]
fn timeout_around_a_blocked_read() {
    let ((), gap) = with_ticker(|| {
        let (mut a, mut b) = pair();
        let seen = Rc::new(Cell::new(0));
        let s = seen.clone();
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(300), || {
            let e = b.read(&mut [0u8; 4]).unwrap_err();
            s.set(errno_of(&e));
            "the closure returned"
        });
        let took = t.elapsed();
        assert!(r.is_err(), "{r:?}");
        assert_eq!(seen.get(), libc::ETIMEDOUT);
        assert!(took >= Duration::from_millis(295), "{took:?}");
        assert!(took < Duration::from_millis(2000), "{took:?}");
        // The task goes on.
        a.write_all(b"late").unwrap();
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"late");
        // A std sleep inside a timeout: cut short, and the scope ends.
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            std::thread::sleep(Duration::from_secs(30));
        });
        assert!(r.is_err());
        assert!(t.elapsed() < Duration::from_secs(5));
    });
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// `JoinHandle::cancel` of a task blocked in an intercepted read: its read
/// fails with `ECANCELED`, and the task is torn down at its next own
/// pause; `join` reports the cancellation.
#[test]
fn cancel_of_a_task_blocked_in_a_read() {
    yieldloop::run(|| {
        let (_a, b) = pair();
        let seen = Rc::new(Cell::new(0));
        let after = Rc::new(Cell::new(false));
        let (s, af) = (seen.clone(), after.clone());
        let reader = spawn(move || {
            let e = (&b).read(&mut [0u8; 4]).unwrap_err();
            s.set(errno_of(&e));
            // Every further intercepted call fails at once.
            let again = (&b).read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(errno_of(&again), libc::ECANCELED);
            // The task's own pause: it is unwound here.
            yieldloop::sleep(Duration::from_secs(3600));
            af.set(true);
        });
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        reader.cancel();
        assert!(reader.join().unwrap_err().is_cancelled());
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(seen.get(), libc::ECANCELED);
        assert!(!after.get());
    });
}

/// `run` returning while tasks are paused inside intercepted calls (a
/// read, a sleep, a poll with no timeout, an accept) ends cleanly; so does
/// a `Runtime` shut down with such tasks on its workers.
#[test]
fn the_end_of_run_with_tasks_inside_intercepted_calls() {
    let t = Instant::now();
    yieldloop::run(|| {
        let (_a, b) = pair();
        spawn(move || {
            let _ = (&b).read(&mut [0u8; 4]);
            yieldloop::sleep(Duration::from_secs(3600));
        });
        spawn(|| std::thread::sleep(Duration::from_secs(3600)));
        spawn(|| {
            let mut p = libc::pollfd {
                fd: -1,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid `pollfd` (ignored: negative descriptor).
            unsafe { libc::poll(&mut p, 1, -1) };
        });
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        spawn(move || {
            let _ = l.accept();
        });
        std::thread::sleep(Duration::from_millis(50));
    });
    assert!(t.elapsed() < Duration::from_secs(5));

    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let hs = rt.spawn_each(|_| {
        spawn(|| std::thread::sleep(Duration::from_secs(3600)));
        let (_a, b) = pair();
        spawn(move || {
            let _ = (&b).read(&mut [0u8; 4]);
        });
        std::thread::sleep(Duration::from_millis(20));
    });
    for h in hs {
        h.join().unwrap();
    }
    let t = Instant::now();
    rt.shutdown();
    assert!(t.elapsed() < Duration::from_secs(5));
}

/// A scope whose task times out while a scoped task is paused inside an
/// intercepted read: the scope unwinds, and the scoped task, which cannot
/// be unwound through the read's caller nor run mid-unwind, is left as it
/// is, never to run again (no abort, and what it borrowed is untouched).
/// `cancel_all`, which is no unwind, resumes a scoped task the same way
/// `JoinHandle::cancel` does.
#[test]
fn a_scope_torn_down_with_a_child_inside_a_read() {
    yieldloop::run(|| {
        let (_a, b) = pair();
        let mut borrowed = [0u8; 16];
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            yieldloop::scope(|s| {
                s.spawn(|| {
                    let _ = (&b).read(&mut borrowed);
                    yieldloop::yield_now();
                });
            })
        });
        assert!(r.is_err());
        assert_eq!(borrowed, [0u8; 16]);

        let (_c, d) = pair();
        let seen = Cell::new(0);
        yieldloop::scope(|s| {
            let h = s.spawn(|| {
                let e = (&d).read(&mut [0u8; 4]).unwrap_err();
                seen.set(errno_of(&e));
                yieldloop::yield_now();
            });
            std::thread::sleep(Duration::from_millis(20));
            s.cancel_all();
            assert!(h.join().unwrap_err().is_cancelled());
        });
        assert_eq!(seen.get(), libc::ECANCELED);
    });
}

/// A shared library's call: `usleep` looked up the way a C library loaded
/// with `dlopen` binds it (the global scope) reaches the hook, and ten
/// tasks sleep at once.
#[test]
fn a_call_bound_like_a_shared_librarys_reaches_the_hook() {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"usleep".as_ptr()) };
    assert!(!f.is_null());
    // SAFETY: `usleep`'s C prototype.
    let usleep: unsafe extern "C" fn(libc::useconds_t) -> libc::c_int =
        unsafe { std::mem::transmute(f) };
    let t = Instant::now();
    yieldloop::run(move || {
        let hs: Vec<_> = (0..10)
            // SAFETY: no pointer arguments.
            .map(|_| spawn(move || unsafe { usleep(300_000) }))
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), 0);
        }
    });
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
}

/// `getaddrinfo` from a task (std's name lookup) answers as on a plain
/// thread.
#[test]
fn getaddrinfo_from_a_task() {
    use std::net::ToSocketAddrs;
    let plain: Vec<_> = ("localhost", 80).to_socket_addrs().unwrap().collect();
    let in_task: Vec<_> = yieldloop::run(|| ("localhost", 80).to_socket_addrs().unwrap().collect());
    assert!(!plain.is_empty());
    assert_eq!(plain, in_task);
}

/// A descriptor the hook has registered (a blocking connect waited on it)
/// can then be handed to `io::PausingIo`, which takes the registration
/// over, and after `into_inner` the hook serves it again.
#[test]
fn a_hooked_descriptor_handed_to_pausing_io() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            c.write_all(b"one").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            c.write_all(b"two").unwrap();
        });
        let s = TcpStream::connect(addr).unwrap();
        let mut buf = [0u8; 3];
        (&s).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"one");
        let io = yieldloop::io::PausingIo::new(s).unwrap();
        let s = io.into_inner();
        s.set_nonblocking(false).unwrap();
        (&s).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"two");
        server.join().unwrap();
    });
}

/// `recv` with `MSG_WAITALL` waits for every byte asked for, which come in
/// three writes 100 ms apart.
#[test]
fn recv_waitall_waits_for_every_byte() {
    let ((n, buf), gap) = with_ticker(|| {
        let (mut a, b) = pair();
        let writer = spawn(move || {
            for part in [&b"abc"[..], b"def", b"ghi"] {
                std::thread::sleep(Duration::from_millis(100));
                a.write_all(part).unwrap();
            }
            a
        });
        let mut buf = [0u8; 9];
        // SAFETY: `buf` is valid for its length.
        let n = unsafe { libc::recv(b.as_raw_fd(), buf.as_mut_ptr().cast(), 9, libc::MSG_WAITALL) };
        let _a = writer.join().unwrap();
        (n, buf)
    });
    assert_eq!(n, 9);
    assert_eq!(&buf, b"abcdefghi");
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A library that retries a call its expired `timeout` failed: each
/// retry fails with `ETIMEDOUT` at once, but lets the other tasks of the
/// thread run first, so a retry loop does not hold the thread.
#[test]
fn retries_after_a_timeout_expired_let_others_run() {
    yieldloop::run(|| {
        let (_a, b) = pair();
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let counter = spawn(move || loop {
            t.set(t.get() + 1);
            yieldloop::yield_now();
        });
        let during_retries = Cell::new(0);
        let r = yieldloop::timeout(Duration::from_millis(50), || {
            // The first read waits the 50 ms out.
            let e = (&b).read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(errno_of(&e), libc::ETIMEDOUT);
            let before = ticks.get();
            for _ in 0..100 {
                let e = (&b).read(&mut [0u8; 4]).unwrap_err();
                assert_eq!(errno_of(&e), libc::ETIMEDOUT);
            }
            during_retries.set(ticks.get() - before);
        });
        counter.cancel();
        assert!(r.is_err());
        assert!(
            during_retries.get() >= 100,
            "the counter ran {} times during 100 retries",
            during_retries.get()
        );
    });
}

/// `poll` from a task on one of yieldloop's own sockets shares its
/// registration with the reactor: the poll is woken by the data, and the
/// socket keeps working afterwards.
#[test]
fn poll_on_a_yieldloop_socket() {
    yieldloop::run(|| {
        let listener = yieldloop::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            for msg in [b"one", b"two"] {
                yieldloop::sleep(Duration::from_millis(100));
                c.write_all(msg).unwrap();
            }
        });
        let mut c = yieldloop::net::TcpStream::connect(addr).unwrap();
        let mut p = libc::pollfd {
            fd: c.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`.
        assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1);
        let mut buf = [0u8; 3];
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"one");
        // The socket's own wait still works.
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"two");
        server.join().unwrap();
    });
}

/// A `timeout` shorter than a `poll`'s own timeout ends the poll (of no
/// descriptors: a sleep) at the scope's deadline, with `ETIMEDOUT`.
#[test]
fn a_scope_ends_a_longer_poll() {
    yieldloop::run(|| {
        let seen = Cell::new((0, 0));
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            // SAFETY: no descriptors: a null array of length 0.
            let n = unsafe { libc::poll(std::ptr::null_mut(), 0, 10_000) };
            seen.set((n, io::Error::last_os_error().raw_os_error().unwrap_or(0)));
        });
        let took = t.elapsed();
        assert!(r.is_err());
        assert_eq!(seen.get(), (-1, libc::ETIMEDOUT));
        assert!(took >= Duration::from_millis(95), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    });
}

/// A descriptor closed by one task while another task of the thread waits
/// on it inside an intercepted read: the waiting read fails with `EBADF`
/// rather than waiting for good.
#[test]
fn close_while_another_task_waits() {
    yieldloop::run(|| {
        let (_a, b) = pair();
        let fd = b.as_raw_fd();
        let reader = spawn(move || {
            let mut buf = [0u8; 4];
            // SAFETY: `buf` is valid for its length; `fd` is open when the
            // call starts.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 4) };
            (n, io::Error::last_os_error().raw_os_error().unwrap_or(0))
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(b);
        let (n, e) = reader.join().unwrap();
        assert_eq!((n, e), (-1, libc::EBADF));
    });
}

/// A read timeout changed between calls is the one the next call keeps
/// (the hook reads a socket's timeouts again after a `setsockopt`).
#[test]
fn a_changed_read_timeout_is_the_one_kept() {
    yieldloop::run(|| {
        let (mut a, mut b) = pair();
        for ms in [250u64, 60] {
            b.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
            let t = Instant::now();
            let e = b.read(&mut [0u8; 4]).unwrap_err();
            let took = t.elapsed();
            assert_eq!(errno_of(&e), libc::EAGAIN);
            assert!(took >= Duration::from_millis(ms - 5), "{ms} ms: {took:?}");
            assert!(took < Duration::from_millis(ms + 1000), "{ms} ms: {took:?}");
        }
        // No timeout: the read waits for the bytes, 300 ms away.
        b.set_read_timeout(None).unwrap();
        let writer = spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            a.write_all(b"late").unwrap();
            a
        });
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"late");
        let _a = writer.join().unwrap();
    });
}

/// CPU time of the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one valid `timespec` to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// An address nobody listens on: a connect there is refused at once.
fn dead_address() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A reconnect loop, as clients write them: connect, and on failure sleep
/// 200 ms and try again, until `until` says stop.
fn reconnect_loop(addr: std::net::SocketAddr, until: impl Fn() -> bool) -> u32 {
    let mut tries = 0;
    while !until() {
        tries += 1;
        if TcpStream::connect(addr).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    tries
}

/// A reconnect loop cancelled with `JoinHandle::cancel`: `cancel` returns
/// at once, and the loop, which cannot be unwound from inside its calls,
/// runs on without spinning (its sleeps still sleep) and without holding
/// the thread; a dump shows it cancelled and still running.
#[test]
fn a_cancelled_reconnect_loop_neither_spins_nor_holds_the_thread() {
    let addr = dead_address();
    yieldloop::run(move || {
        let looper = yieldloop::Builder::new()
            .name("reconnect")
            .spawn(move || reconnect_loop(addr, || false))
            .unwrap();
        yieldloop::sleep(Duration::from_millis(100));
        let t = Instant::now();
        looper.cancel();
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        let stop = Rc::new(Cell::new(false));
        let tick = ticker(stop.clone());
        let cpu = thread_cpu();
        yieldloop::sleep(Duration::from_secs(1));
        let spent = thread_cpu() - cpu;
        stop.set(true);
        let gap = tick.join().unwrap();
        assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
        assert!(
            spent < Duration::from_millis(400),
            "{spent:?} of CPU in 1 s"
        );
        let dump = yieldloop::diag::dump();
        let task = dump
            .tasks()
            .find(|t| t.name.as_deref() == Some("reconnect"))
            .expect("the loop runs on");
        assert!(task.cancelled, "{dump}");
        assert!(format!("{dump}").contains("cancelled inside an intercepted call"));
    });
}

/// A reconnect loop whose timeout scope has passed: its connects fail at
/// once, and its sleeps still sleep, so it does not spin.
#[test]
fn a_timed_out_reconnect_loop_does_not_spin() {
    let addr = dead_address();
    yieldloop::run(move || {
        let cpu = thread_cpu();
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(300), || {
            reconnect_loop(addr, || t.elapsed() >= Duration::from_millis(1200))
        });
        assert!(r.is_err());
        let spent = thread_cpu() - cpu;
        assert!(
            spent < Duration::from_millis(500),
            "{spent:?} of CPU in {:?}",
            t.elapsed()
        );
    });
}
