//! Feature `hook`: `epoll_wait`, `epoll_pwait` and `epoll_pwait2` from a
//! task. An event loop run inside a task (raw epoll here, a tokio
//! runtime's below) pauses only that task while it waits: twenty such
//! loops overlap on one scheduler beside a ticker. The answers are the
//! kernel's (the events, `0` at the timeout, `EINVAL` and `EBADF` for bad
//! arguments, compared with the same call on a plain thread), a zero
//! timeout never pauses, a call that completes at once spends the task's
//! budget, and a signal mask other than the thread's makes it the plain
//! call.

use std::cell::Cell;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use util::with_ticker;
use yieldloop::spawn;

mod util;

/// The longest gap allowed to the 1 ms ticker while twenty loops wait
/// beside it: generous for a debug build on a shared machine, and a tenth
/// of the 200 ms a loop that held the thread would show.
const GAP_LIMIT: Duration = Duration::from_millis(20);

/// What one wait answered: its return value, `errno` if it failed (0
/// otherwise), and the events (each its mask and data).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    ret: i32,
    errno: i32,
    events: Vec<(u32, u64)>,
}

/// Builds the answer of a wait that returned `ret` into `events`.
fn answer(ret: i32, events: &[libc::epoll_event]) -> Answer {
    let errno = if ret < 0 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    } else {
        0
    };
    let n = usize::try_from(ret).unwrap_or(0);
    let events = events[..n].iter().map(|e| (e.events, e.u64)).collect();
    Answer { ret, errno, events }
}

/// An epoll instance, closed on drop.
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> Epoll {
        // SAFETY: no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        assert!(
            fd >= 0,
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: a descriptor just made, owned by nobody else.
        Epoll(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Watches `fd` for `events` (level-triggered unless `EPOLLET` is
    /// among them), reported with `data`.
    fn add(&self, fd: RawFd, events: i32, data: u64) {
        let mut ev = libc::epoll_event {
            events: events as u32,
            u64: data,
        };
        // SAFETY: a valid event to copy in.
        let r = unsafe { libc::epoll_ctl(self.fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        assert_eq!(r, 0, "epoll_ctl: {}", std::io::Error::last_os_error());
    }

    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// `epoll_wait` for up to 8 events.
    fn wait(&self, timeout_ms: i32) -> Answer {
        epoll_wait(self.fd(), 8, timeout_ms)
    }
}

/// `epoll_wait(epfd, .., max, timeout_ms)` into an array of 8 entries
/// (`max` may say otherwise, to test the kernel's checks).
fn epoll_wait(epfd: RawFd, max: i32, timeout_ms: i32) -> Answer {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    // SAFETY: an array of 8 entries; a larger `max` is never passed.
    let r = unsafe { libc::epoll_wait(epfd, evs.as_mut_ptr(), max.min(8), timeout_ms) };
    answer(r, &evs)
}

/// `epoll_pwait` with `mask` (null: none).
fn epoll_pwait(epfd: RawFd, timeout_ms: i32, mask: Option<&libc::sigset_t>) -> Answer {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let mask = mask.map_or(std::ptr::null(), |m| m as *const libc::sigset_t);
    // SAFETY: an array of 8 entries, a valid mask or null.
    let r = unsafe { libc::epoll_pwait(epfd, evs.as_mut_ptr(), 8, timeout_ms, mask) };
    answer(r, &evs)
}

/// `epoll_pwait2` with `timeout` (null: none) and no mask.
fn epoll_pwait2(epfd: RawFd, max: i32, timeout: Option<libc::timespec>) -> Answer {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let t = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: an array of 8 entries, a valid timespec or null.
    let r = unsafe { libc::epoll_pwait2(epfd, evs.as_mut_ptr(), max.min(8), t, std::ptr::null()) };
    answer(r, &evs)
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as _,
        tv_nsec: d.subsec_nanos() as _,
    }
}

/// A `timerfd` that expires once, `after` from now.
fn timerfd(after: Duration) -> OwnedFd {
    // SAFETY: no pointers.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    assert!(
        fd >= 0,
        "timerfd_create: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a descriptor just made, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let spec = libc::itimerspec {
        it_interval: timespec(Duration::ZERO),
        it_value: timespec(after),
    };
    // SAFETY: a valid itimerspec; no old value asked for.
    let r = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    assert_eq!(r, 0);
    fd
}

/// Asserts that `took` is about `want`: never less (a timeout ends no
/// earlier than asked), and not much more.
fn assert_about(took: Duration, want: Duration) {
    assert!(
        took >= want - Duration::from_millis(2),
        "{took:?} < {want:?}"
    );
    assert!(
        took < want + Duration::from_millis(300),
        "{took:?}, for {want:?}"
    );
}

/// Twenty tasks each run an event loop of their own on raw epoll, ten
/// waiting for a `timerfd` that expires after 200 ms, ten for a socket
/// that a peer task writes to after 200 ms. They overlap (all done in
/// well under the 4 s they would take one after another), and a 1 ms
/// ticker on the same thread keeps ticking.
#[test]
fn twenty_epoll_loops_overlap_beside_a_ticker() {
    const LOOPS: usize = 20;
    const WAIT: Duration = Duration::from_millis(200);
    // On a thread of its own: were the waits the plain calls, the loops
    // waiting for their sockets would block the thread for good.
    let ((took, waits), gap) = util::within(|| {
        with_ticker(|| {
            let start = Instant::now();
            let loops: Vec<_> = (0..LOOPS)
                .map(|i| {
                    spawn(move || {
                        let ep = Epoll::new();
                        // What the loop waits on, kept open while it waits: a
                        // timer, or a socket and the task that writes to it.
                        let timer = (i % 2 == 0).then(|| timerfd(WAIT));
                        let mut reader = None;
                        let mut writer = None;
                        match &timer {
                            Some(t) => ep.add(t.as_raw_fd(), libc::EPOLLIN, i as u64),
                            None => {
                                let (a, b) = UnixStream::pair().unwrap();
                                ep.add(b.as_raw_fd(), libc::EPOLLIN | libc::EPOLLET, i as u64);
                                reader = Some(b);
                                writer = Some(spawn(move || {
                                    std::thread::sleep(WAIT);
                                    (&a).write_all(b"ping").unwrap();
                                    a
                                }));
                            }
                        }
                        let begun = Instant::now();
                        // The loop: wait, handle what came, until the one
                        // event it waits for.
                        loop {
                            let got = ep.wait(-1);
                            assert!(got.ret >= 0, "{got:?}");
                            if let Some((mask, data)) = got.events.first() {
                                assert_eq!(*data, i as u64);
                                assert!(mask & libc::EPOLLIN as u32 != 0, "{got:?}");
                                if let Some(r) = reader.as_mut() {
                                    let mut buf = [0u8; 4];
                                    r.read_exact(&mut buf).unwrap();
                                    assert_eq!(&buf, b"ping");
                                }
                                drop((timer, writer));
                                return begun.elapsed();
                            }
                        }
                    })
                })
                .collect();
            let waits: Vec<Duration> = loops.into_iter().map(|h| h.join().unwrap()).collect();
            (start.elapsed(), waits)
        })
    });
    for w in &waits {
        assert!(*w >= Duration::from_millis(195), "a loop woke early: {w:?}");
    }
    eprintln!("20 epoll loops of 200 ms: {took:?} in all; ticker's longest gap {gap:?}");
    assert!(
        took < Duration::from_millis(500),
        "the loops did not overlap: {took:?}"
    );
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// A zero timeout is the plain call: it never pauses the task, however
/// often it is made (another task of the thread never runs meanwhile),
/// and never spends its budget.
#[test]
fn a_zero_timeout_never_pauses() {
    yieldloop::run(|| {
        let ep = Epoll::new();
        let (_a, b) = UnixStream::pair().unwrap();
        ep.add(b.as_raw_fd(), libc::EPOLLIN, 1);
        let ran = Rc::new(Cell::new(false));
        let r = ran.clone();
        let other = spawn(move || r.set(true));
        for _ in 0..10_000 {
            assert_eq!(ep.wait(0).ret, 0);
            assert_eq!(epoll_pwait(ep.fd(), 0, None).ret, 0);
            assert_eq!(
                epoll_pwait2(ep.fd(), 8, Some(timespec(Duration::ZERO))).ret,
                0
            );
        }
        assert!(!ran.get(), "a zero-timeout wait paused the task");
        other.join().unwrap();
        assert!(ran.get());
    });
}

/// A descriptor that is ready already: the wait returns at once with the
/// kernel's events (the same as on a plain thread), however long its
/// timeout.
#[test]
fn a_ready_descriptor_returns_at_once_with_its_events() {
    let case = || {
        let ep = Epoll::new();
        let (a, b) = UnixStream::pair().unwrap();
        let (c, d) = UnixStream::pair().unwrap();
        (&a).write_all(b"x").unwrap();
        drop(c);
        ep.add(b.as_raw_fd(), libc::EPOLLIN | libc::EPOLLOUT, 7);
        ep.add(d.as_raw_fd(), libc::EPOLLIN | libc::EPOLLRDHUP, 9);
        let t = Instant::now();
        let answers = [
            ep.wait(-1),
            ep.wait(5000),
            epoll_pwait(ep.fd(), -1, None),
            epoll_pwait2(ep.fd(), 8, None),
            epoll_pwait2(ep.fd(), 1, Some(timespec(Duration::from_secs(5)))),
        ];
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        answers
    };
    let kernel = util::within(case);
    let hooked = util::within(move || yieldloop::run(case));
    assert_eq!(
        hooked, kernel,
        "in a task (left) and on a plain thread (right)"
    );
    let both = [
        (7, libc::EPOLLIN | libc::EPOLLOUT),
        (9, libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP),
    ];
    for (data, mask) in both {
        assert!(
            kernel[0].events.contains(&(mask as u32, data)),
            "{:?}",
            kernel[0]
        );
    }
    assert_eq!(kernel[4].ret, 1);
}

/// Nothing ready: each of the three calls returns 0 after its timeout,
/// while only the task waits; and an event that comes during a wait ends
/// it then, with that event.
#[test]
fn a_timeout_returns_zero_after_the_timeout() {
    let ((), gap) = with_ticker(|| {
        let ep = Epoll::new();
        let (a, b) = UnixStream::pair().unwrap();
        ep.add(b.as_raw_fd(), libc::EPOLLIN, 3);
        let want = Duration::from_millis(150);
        let t = Instant::now();
        assert_eq!(ep.wait(150).ret, 0);
        assert_about(t.elapsed(), want);
        let t = Instant::now();
        assert_eq!(epoll_pwait(ep.fd(), 150, None).ret, 0);
        assert_about(t.elapsed(), want);
        let t = Instant::now();
        assert_eq!(epoll_pwait2(ep.fd(), 8, Some(timespec(want))).ret, 0);
        assert_about(t.elapsed(), want);
        // A sub-millisecond timespec is kept as it is.
        let t = Instant::now();
        let short = Duration::from_micros(300);
        assert_eq!(epoll_pwait2(ep.fd(), 8, Some(timespec(short))).ret, 0);
        assert!(t.elapsed() >= short, "{:?}", t.elapsed());
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );

        // An event during the wait.
        let writer = spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            (&a).write_all(b"x").unwrap();
            a
        });
        let t = Instant::now();
        let got = ep.wait(5000);
        assert_about(t.elapsed(), Duration::from_millis(100));
        assert_eq!(got.events, [(libc::EPOLLIN as u32, 3)]);
        let _a = writer.join().unwrap();
        let mut byte = [0u8];
        (&b).read_exact(&mut byte).unwrap();

        // epoll_pwait2 with no timeout at all, woken by an event.
        let (c, d) = UnixStream::pair().unwrap();
        ep.add(d.as_raw_fd(), libc::EPOLLIN | libc::EPOLLET, 4);
        let writer = spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            (&c).write_all(b"y").unwrap();
            c
        });
        let t = Instant::now();
        let got = epoll_pwait2(ep.fd(), 8, None);
        assert_about(t.elapsed(), Duration::from_millis(100));
        assert_eq!(got.events, [(libc::EPOLLIN as u32, 4)]);
        writer.join().unwrap();
    });
    assert!(gap < GAP_LIMIT, "the ticker stalled for {gap:?}");
}

/// An edge-triggered descriptor whose edge the loop has had already (its
/// data still unread): the next wait sees nothing, as the kernel's does,
/// and waits its whole timeout without spinning (the thread's CPU time
/// hardly moves while it waits); so does a wait on an epoll instance with
/// nothing in it.
#[test]
fn a_spent_edge_neither_wakes_nor_spins() {
    yieldloop::run(|| {
        let ep = Epoll::new();
        let (a, b) = UnixStream::pair().unwrap();
        ep.add(b.as_raw_fd(), libc::EPOLLIN | libc::EPOLLET, 5);
        (&a).write_all(b"once").unwrap();
        assert_eq!(ep.wait(-1).events, [(libc::EPOLLIN as u32, 5)]);
        for ep in [&ep, &Epoll::new()] {
            let (cpu, t) = (util::thread_cpu_time(), Instant::now());
            assert_eq!(ep.wait(300).ret, 0);
            let (cpu, took) = (util::thread_cpu_time() - cpu, t.elapsed());
            assert_about(took, Duration::from_millis(300));
            assert!(
                cpu < Duration::from_millis(50),
                "{cpu:?} of CPU in {took:?}"
            );
        }
    });
}

/// Bad arguments fail as the kernel's call does, with its error number,
/// at once, whatever the timeout: `maxevents` of 0 or below is `EINVAL`,
/// a descriptor that is not open is `EBADF` (also with `maxevents` 0, on
/// the kernels seen), one that is not an epoll instance `EINVAL`, and so
/// is an invalid `timespec`.
#[test]
fn bad_arguments_fail_as_the_kernels() {
    let case = || {
        let ep = Epoll::new();
        let (p, _q) = UnixStream::pair().unwrap();
        // A number that was open a moment ago.
        let closed = {
            let (x, _) = UnixStream::pair().unwrap();
            x.as_raw_fd()
        };
        let t = Instant::now();
        let bad_ts = |sec: i64, nsec: i64| libc::timespec {
            tv_sec: sec as _,
            tv_nsec: nsec as _,
        };
        let answers = vec![
            epoll_wait(ep.fd(), 0, -1),
            epoll_wait(ep.fd(), -1, 1000),
            epoll_wait(-1, 8, -1),
            epoll_wait(closed, 8, 1000),
            epoll_wait(-1, 0, -1),
            epoll_wait(p.as_raw_fd(), 8, -1),
            epoll_pwait(-1, 1000, None),
            epoll_pwait2(ep.fd(), 0, None),
            epoll_pwait2(-1, 8, Some(timespec(Duration::from_secs(1)))),
            epoll_pwait2(ep.fd(), 8, Some(bad_ts(0, 1_000_000_000))),
            epoll_pwait2(ep.fd(), 8, Some(bad_ts(-1, 0))),
        ];
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        answers
    };
    let kernel = util::within(case);
    let hooked = util::within(move || yieldloop::run(case));
    assert_eq!(
        hooked, kernel,
        "in a task (left) and on a plain thread (right)"
    );
    let errnos: Vec<i32> = kernel.iter().map(|a| a.errno).collect();
    let (inval, badf) = (libc::EINVAL, libc::EBADF);
    assert_eq!(
        errnos,
        [inval, inval, badf, badf, badf, inval, badf, inval, badf, inval, inval]
    );
    assert!(kernel.iter().all(|a| a.ret == -1));
}

/// On a plain thread, and on the blocking pool of a running scheduler,
/// the calls are the plain ones: they block their thread for the timeout.
#[test]
fn outside_a_task_the_calls_are_plain() {
    let plain = || {
        let ep = Epoll::new();
        let t = Instant::now();
        assert_eq!(ep.wait(100).ret, 0);
        assert_eq!(
            epoll_pwait2(ep.fd(), 8, Some(timespec(Duration::from_millis(100)))).ret,
            0
        );
        t.elapsed()
    };
    let took = util::within(plain);
    assert_about(took, Duration::from_millis(200));
    let took = yieldloop::run(move || yieldloop::spawn_blocking(plain).join().unwrap());
    assert_about(took, Duration::from_millis(200));
}

/// A signal mask: the thread's own changes nothing, and the call pauses
/// only the task; any other is the plain call (the kernel installs it
/// atomically with the wait, which a pause cannot do), which blocks the
/// thread for its timeout, as the ticker's gap shows.
#[test]
fn a_signal_mask_other_than_the_threads_is_the_plain_call() {
    let ((), gap) = with_ticker(|| {
        let ep = Epoll::new();
        // SAFETY: an all-zero sigset_t is a valid set to fill.
        let mut current: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: reads the thread's mask into `current`.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut current) };
        let t = Instant::now();
        assert_eq!(epoll_pwait(ep.fd(), 150, Some(&current)).ret, 0);
        assert_about(t.elapsed(), Duration::from_millis(150));
    });
    assert!(
        gap < Duration::from_millis(100),
        "the ticker stalled for {gap:?}"
    );

    let ((), gap) = with_ticker(|| {
        let ep = Epoll::new();
        // SAFETY: an all-zero sigset_t is a valid set to fill.
        let mut other: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: reads the thread's mask, then adds a signal to the copy.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut other);
            let sig = if libc::sigismember(&other, libc::SIGUSR2) == 1 {
                libc::SIGUSR1
            } else {
                libc::SIGUSR2
            };
            libc::sigaddset(&mut other, sig);
        }
        let t = Instant::now();
        assert_eq!(epoll_pwait(ep.fd(), 150, Some(&other)).ret, 0);
        assert_about(t.elapsed(), Duration::from_millis(150));
    });
    assert!(
        gap >= Duration::from_millis(140),
        "a wait with another mask did not block the thread: gap {gap:?}"
    );
}

/// A `timeout` scope around a wait: when the scope's deadline passes the
/// wait fails with `EINTR`, as one cut short by a signal does (an event
/// loop takes any other error as fatal), and the scope returns `Elapsed`
/// once its closure has; a wait the closure starts after the deadline is
/// not cut short again: it waits its own timeout, without spinning.
#[test]
fn a_timeout_scope_cuts_a_wait_short_once() {
    yieldloop::run(|| {
        let ep = Epoll::new();
        let seen = Rc::new(Cell::new(None));
        let s = seen.clone();
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            let first = ep.wait(-1);
            let cut = t.elapsed();
            let second = ep.wait(150);
            s.set(Some((first, cut, second, t.elapsed())));
        });
        assert!(r.is_err(), "{r:?}");
        let (first, cut, second, all) = seen.take().unwrap();
        assert_eq!((first.ret, first.errno), (-1, libc::EINTR));
        assert_about(cut, Duration::from_millis(100));
        assert_eq!((second.ret, second.errno), (0, 0));
        assert_about(all, Duration::from_millis(250));
    });
}

/// A task cancelled inside a wait: the wait fails with `EINTR`; a wait it
/// starts afterwards is not cut short (it returns 0 at its own timeout),
/// and the task is torn down at its next own pause.
#[test]
fn a_cancellation_cuts_a_wait_short_once() {
    yieldloop::run(|| {
        let ep = Rc::new(Epoll::new());
        let seen = Rc::new(Cell::new(None));
        let (s, e) = (seen.clone(), ep.clone());
        let after = Rc::new(Cell::new(false));
        let af = after.clone();
        let waiter = spawn(move || {
            let first = e.wait(-1);
            let t = Instant::now();
            let again = epoll_pwait2(e.fd(), 8, Some(timespec(Duration::from_millis(150))));
            s.set(Some((first, again, t.elapsed())));
            yieldloop::sleep(Duration::from_secs(3600));
            af.set(true);
        });
        yieldloop::sleep(Duration::from_millis(50));
        let t = Instant::now();
        waiter.cancel();
        assert!(t.elapsed() < Duration::from_millis(100));
        assert!(waiter.join().unwrap_err().is_cancelled());
        assert_about(t.elapsed(), Duration::from_millis(150));
        let (first, again, waited) = seen.take().unwrap();
        assert_eq!((first.ret, first.errno), (-1, libc::EINTR));
        assert_eq!((again.ret, again.errno), (0, 0));
        assert_about(waited, Duration::from_millis(150));
        assert!(!after.get());
    });
}

/// A loop whose waits always find an event (a level-triggered descriptor
/// that stays ready) never pauses for one, but spends its budget: another
/// task of the thread runs after a bounded number of waits, not after the
/// whole loop.
#[test]
fn a_wait_that_completes_at_once_spends_the_budget() {
    yieldloop::run(|| {
        let ep = Epoll::new();
        let (a, b) = UnixStream::pair().unwrap();
        (&a).write_all(b"always").unwrap();
        ep.add(b.as_raw_fd(), libc::EPOLLIN, 1);
        let waits = Rc::new(Cell::new(0u32));
        let when = Rc::new(Cell::new(None));
        let (w, wh) = (waits.clone(), when.clone());
        let other = spawn(move || wh.set(Some(w.get())));
        for _ in 0..10_000 {
            assert_eq!(ep.wait(-1).ret, 1);
            waits.set(waits.get() + 1);
        }
        other.join().unwrap();
        let at = when.get().unwrap();
        assert!(at <= 1_000, "the other task ran only after {at} waits");
    });
}

/// A tokio runtime of the kind a blocking client runs inside (the
/// `postgres` crate's): one thread, its I/O driver (epoll) and timers.
fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .unwrap()
}

/// A tokio current-thread runtime driven by a task: tokio marks the whole
/// thread as inside the runtime while `block_on` runs, so its waits are
/// left as the plain calls, which block the thread (a ticker beside it
/// stalls for the whole wait). In exchange two tasks that each drive a
/// runtime of their own (two blocking clients) both work, one after the
/// other, where a pause would have let the second enter a runtime while
/// the first was inside one, and panic.
#[test]
fn a_tokio_runtime_in_a_task_holds_the_thread_and_stays_correct() {
    let (took, gap) = with_ticker(move || {
        let runtime = current_thread_runtime();
        let t = Instant::now();
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
        t.elapsed()
    });
    assert_about(took, Duration::from_millis(200));
    assert!(
        gap >= Duration::from_millis(150),
        "the ticker ran during block_on (longest gap {gap:?}): the wait paused the task"
    );

    let t = Instant::now();
    let (first, second) = yieldloop::run(move || {
        let first = spawn(move || {
            current_thread_runtime()
                .block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
            "slept"
        });
        let second = spawn(move || {
            current_thread_runtime().block_on(async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                "ran"
            })
        });
        (first.join(), second.join())
    });
    assert_eq!(first.unwrap(), "slept");
    assert_eq!(second.unwrap(), "ran");
    // One after the other: the thread was the first's for its whole wait.
    assert!(
        t.elapsed() >= Duration::from_millis(290),
        "{:?}",
        t.elapsed()
    );
}

/// A timeout around a tokio `block_on`: the wait blocks the thread, so
/// nothing can end it early; `block_on` runs to the end of its sleep, and
/// nothing panics or aborts.
#[test]
fn a_timeout_around_a_tokio_runtime_waits_for_its_end() {
    yieldloop::run(move || {
        let runtime = current_thread_runtime();
        let t = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            runtime.block_on(async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            })
        });
        assert_about(t.elapsed(), Duration::from_millis(300));
        // The closure never paused, so the scope had no pause to end: its
        // value comes back, as for any code that does not pause.
        assert_eq!(r.ok(), Some("done"));
    });
}

/// `run` returning while a task waits in an epoll loop that never ends:
/// the run ends, the task is left as it is (a message says so).
#[test]
fn the_end_of_run_with_a_task_in_an_endless_loop() {
    let t = Instant::now();
    yieldloop::run(|| {
        spawn(|| {
            let ep = Epoll::new();
            loop {
                let _ = ep.wait(-1);
            }
        });
        yieldloop::sleep(Duration::from_millis(50));
    });
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}
