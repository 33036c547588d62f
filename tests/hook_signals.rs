//! Feature `hook`: what a signal handler and a `fork` do to tasks making
//! intercepted calls.
//!
//! - A signal handler's `write` to a non-blocking self-pipe, landing while
//!   a task allocates, must never wait for the allocator's lock that the
//!   interrupted code holds (`write` is async-signal-safe in the C
//!   library; the hook's must be too).
//! - A child made by `fork` in a task makes plain calls only: it must not
//!   run the copy of the scheduler and of the parent's tasks it has, and
//!   the parent must go on as before.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Runs `f` on a thread of its own and fails the test if it has not
/// returned within `limit`: a hang becomes a failure (the hung thread is
/// left behind; the process ends with the test binary).
fn watchdog(name: &str, limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r.is_ok());
        })
        .unwrap();
    match rx.recv_timeout(limit) {
        Ok(true) => {}
        Ok(false) => panic!("{name}: failed (see the panic above)"),
        Err(_) => panic!("{name}: still running after {limit:?}: it hangs"),
    }
}

/// A pipe with both ends non-blocking: `(read, write)`.
fn nonblocking_pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: room for the two descriptors.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0);
    (fds[0], fds[1])
}

/// The self-pipe the signal handler writes to.
static SELF_PIPE: AtomicI32 = AtomicI32::new(-1);
/// How many times the handler ran.
static HANDLED: AtomicU64 = AtomicU64::new(0);

/// The handler: one byte into the self-pipe (`EAGAIN` when it is full is
/// fine), as signal-handling libraries do.
extern "C" fn on_signal(_: libc::c_int) {
    let fd = SELF_PIPE.load(Ordering::Relaxed);
    // SAFETY: a one-byte buffer; errno is saved and put back, as a handler
    // must.
    unsafe {
        let e = *libc::__errno_location();
        libc::write(fd, b"x".as_ptr().cast(), 1);
        *libc::__errno_location() = e;
    }
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// A descriptor number high enough that a per-thread table indexed by
/// numbers has to grow to reach it, within the process's limit.
fn high_fd(fd: RawFd) -> RawFd {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is writable.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let want = (lim.rlim_cur.min(60_000) as RawFd - 10).max(fd);
    if want == fd {
        return fd;
    }
    // SAFETY: duplicates a descriptor of ours onto a free high number.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, want) };
    assert!(high >= 0);
    // SAFETY: ours, no longer needed.
    unsafe { libc::close(fd) };
    high
}

/// Defect: the hooked `write` made from a signal handler that interrupts
/// a task inside `malloc` initialised or grew the hook's thread-local
/// descriptor table (`calloc`, `realloc`) and waited forever for the
/// allocator's lock the interrupted code held.
#[test]
fn signal_handler_write_while_a_task_allocates_never_deadlocks() {
    watchdog("signal storm", Duration::from_secs(30), || {
        let (r, w) = nonblocking_pipe();
        let w = high_fd(w);
        SELF_PIPE.store(w, Ordering::Relaxed);
        // SAFETY: a handler that only makes async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
        }
        let end = Instant::now() + Duration::from_secs(2);
        let mut rounds = 0;
        // Each round is a fresh thread, whose hook state starts empty: the
        // first handler's `write` there is the one that set it up.
        while Instant::now() < end || rounds < 3 {
            rounds += 1;
            let (tid_tx, tid_rx) = mpsc::channel();
            let stop = Arc::new(AtomicBool::new(false));
            let stop2 = stop.clone();
            let worker = thread::spawn(move || {
                yieldloop::run(move || {
                    let h = yieldloop::spawn(move || {
                        // SAFETY: this thread's id, to aim the signals.
                        tid_tx.send(unsafe { libc::pthread_self() }).unwrap();
                        let mut keep: Vec<Vec<u8>> = Vec::new();
                        let mut i = 0usize;
                        let mut buf = [0u8; 256];
                        while !stop2.load(Ordering::Relaxed) {
                            // Sizes beyond the allocator's per-thread cache,
                            // which take its arena lock.
                            keep.push(vec![i as u8; 2048 + (i * 4099) % 60_000]);
                            if keep.len() > 16 {
                                keep.swap_remove(i % 16);
                            }
                            i += 1;
                            if i % 64 == 0 {
                                // SAFETY: drains the self-pipe into `buf`.
                                unsafe { libc::read(r, buf.as_mut_ptr().cast(), buf.len()) };
                            }
                        }
                        i
                    });
                    h.join().unwrap()
                })
            });
            let tid = tid_rx.recv().unwrap();
            let storm_end = Instant::now() + Duration::from_millis(150);
            while Instant::now() < storm_end {
                // SAFETY: the worker thread is alive until `stop` is set.
                unsafe { libc::pthread_kill(tid, libc::SIGUSR1) };
                thread::sleep(Duration::from_micros(20));
            }
            stop.store(true, Ordering::Relaxed);
            worker.join().unwrap();
        }
        assert!(HANDLED.load(Ordering::Relaxed) > 0);
        // SAFETY: ours.
        unsafe {
            libc::close(r);
            libc::close(w);
        }
    });
}

/// Defect: after `fork` in a task, the child's `usleep` paused the task in
/// the child's copy of the scheduler, which then ran the parent's tasks
/// (a ticker wrote from the child's pid), and the parent hung.
#[test]
fn fork_in_a_task_leaves_the_child_plain_and_the_parent_unaffected() {
    watchdog("fork in a task", Duration::from_secs(30), || {
        let (r, w) = nonblocking_pipe();
        let child = yieldloop::run(move || {
            let stop = std::rc::Rc::new(std::cell::Cell::new(false));
            let ticker = {
                let stop = stop.clone();
                yieldloop::spawn(move || {
                    while !stop.get() {
                        // SAFETY: whose pid this is, a plain call.
                        let pid = unsafe { libc::getpid() };
                        let b = pid.to_ne_bytes();
                        // SAFETY: four bytes into the non-blocking pipe.
                        unsafe { libc::write(w, b.as_ptr().cast(), b.len()) };
                        yieldloop::sleep(Duration::from_millis(1));
                    }
                })
            };
            let forker = yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_millis(20));
                // SAFETY: the child only makes async-signal-safe calls.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    // SAFETY: the child: a sleep and an exit, nothing else.
                    unsafe {
                        libc::usleep(100_000);
                        libc::_exit(0);
                    }
                }
                assert!(pid > 0, "fork failed");
                let started = Instant::now();
                let mut status = 0;
                loop {
                    // SAFETY: `status` is writable.
                    let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                    if got == pid {
                        break;
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(5),
                        "the child has not exited after 5 s"
                    );
                    yieldloop::sleep(Duration::from_millis(5));
                }
                (pid, status, started.elapsed())
            });
            let out = forker.join().unwrap();
            // The parent goes on: its ticker still ticks.
            yieldloop::sleep(Duration::from_millis(20));
            stop.set(true);
            ticker.join().unwrap();
            out
        });
        let (pid, status, took) = child;
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child ended with status {status:#x}"
        );
        assert!(took < Duration::from_secs(3), "the child took {took:?}");
        // What the ticker wrote: the parent's pid only.
        // SAFETY: the parent's pid.
        let me = unsafe { libc::getpid() };
        let mut buf = vec![0u8; 1 << 16];
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(r, buf.as_mut_ptr().cast(), buf.len()) };
        assert!(n > 0, "the ticker never wrote");
        let pids: Vec<i32> = buf[..n as usize]
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert!(
            pids.iter().all(|&p| p == me),
            "the parent's ticker ran in the child (pid {pid}): {:?}",
            pids.iter().filter(|&&p| p != me).count()
        );
        // SAFETY: ours.
        unsafe {
            libc::close(r);
            libc::close(w);
        }
    });
}
