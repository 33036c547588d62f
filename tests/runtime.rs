//! Thread-per-core `Runtime`: work handed to chosen workers, a
//! multi-worker echo server on `SO_REUSEPORT` listeners, and shutdown.

use std::io::{Read, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use yieldloop::net::{reuseport_listeners, TcpListener, TcpStream};
use yieldloop::Runtime;

/// Each worker runs what is spawned on it, on a thread of its own, and the
/// results come back to a plain thread and to a task.
#[test]
fn spawn_on_each_worker_returns_results() {
    let rt = Runtime::builder().workers(3).build().unwrap();
    assert_eq!(rt.workers(), 3);
    let handles: Vec<_> = (0..3)
        .map(|w| {
            rt.spawn_on(w, move || {
                // Rc inside the worker: it never leaves the thread.
                let n = Rc::new(w);
                let m = n.clone();
                let child = yieldloop::spawn(move || *m * 100);
                (
                    Runtime::current_worker(),
                    std::thread::current().id(),
                    child.join().unwrap(),
                )
            })
        })
        .collect();
    assert_eq!(handles[2].worker(), 2);
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (w, (cur, _, v)) in results.iter().enumerate() {
        assert_eq!(*cur, Some(w));
        assert_eq!(*v, w * 100);
    }
    let mut threads: Vec<_> = results.iter().map(|r| r.1).collect();
    threads.dedup();
    assert_eq!(threads.len(), 3, "workers share a thread");
    assert_ne!(threads[0], std::thread::current().id());
    assert_eq!(Runtime::current_worker(), None);

    // Joined from a task: the task parks, its scheduler keeps running.
    let h = rt.spawn_on(1, || {
        yieldloop::sleep(Duration::from_millis(20));
        "late"
    });
    let (got, ticks) = yieldloop::run(move || {
        let ticker = yieldloop::spawn(|| {
            let mut n = 0;
            for _ in 0..5 {
                yieldloop::sleep(Duration::from_millis(1));
                n += 1;
            }
            n
        });
        (h.join().unwrap(), ticker.join().unwrap())
    });
    assert_eq!((got, ticks), ("late", 5));
    rt.shutdown();
}

/// `spawn_each` runs once per worker; `run` returns the value and
/// re-raises a panic.
#[test]
fn spawn_each_and_run() {
    let rt = Runtime::builder().workers(2).name("each").build().unwrap();
    let names: Vec<String> = rt
        .spawn_each(|w| format!("{w}:{}", std::thread::current().name().unwrap()))
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert_eq!(names, ["0:each-0", "1:each-1"]);
    assert_eq!(rt.run(|| 2 + 2), 4);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.run(|| -> u8 { panic!("in the worker") })
    }));
    let payload = panicked.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"in the worker"));
    // The worker survives a panicking task.
    assert_eq!(rt.run(|| 1), 1);
}

/// A panic in a spawned task is an error carrying the payload.
#[test]
fn a_panic_is_an_error() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let err = rt
        .spawn_on(0, || -> u8 { panic!("oops") })
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("oops"));
}

/// Two workers each accept on their own `SO_REUSEPORT` listener; 64
/// clients from other threads all get their bytes echoed, and both workers
/// serve some of them (where the kernel spreads connections: not macOS).
#[test]
fn multi_worker_echo_with_many_clients() {
    const WORKERS: usize = 2;
    const CLIENTS: usize = 64;
    let rt = Runtime::builder().workers(WORKERS).build().unwrap();
    let listeners = reuseport_listeners("127.0.0.1:0", WORKERS).unwrap();
    let addr = listeners[0].local_addr().unwrap();
    assert!(listeners.iter().all(|l| l.local_addr().unwrap() == addr));
    let served: Arc<Vec<AtomicUsize>> =
        Arc::new((0..WORKERS).map(|_| AtomicUsize::new(0)).collect());
    for (w, l) in listeners.into_iter().enumerate() {
        let served = served.clone();
        rt.spawn_on(w, move || {
            let listener = TcpListener::from_std(l).unwrap();
            loop {
                let (stream, _) = listener.accept().unwrap();
                served[w].fetch_add(1, Ordering::SeqCst);
                yieldloop::spawn(move || {
                    let (mut r, mut wr) = (&stream, &stream);
                    let _ = std::io::copy(&mut r, &mut wr);
                });
            }
        });
    }
    let start = Instant::now();
    // Clients on 4 plain threads, each with its own scheduler.
    let clients: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                yieldloop::run(move || {
                    let conns: Vec<_> = (0..CLIENTS / 4)
                        .map(|c| {
                            yieldloop::spawn(move || {
                                let mut s = TcpStream::connect(addr).unwrap();
                                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                                for i in 0..20 {
                                    let msg = format!("t{t} c{c} m{i};");
                                    s.write_all(msg.as_bytes()).unwrap();
                                    let mut back = vec![0u8; msg.len()];
                                    s.read_exact(&mut back).unwrap();
                                    assert_eq!(back, msg.as_bytes());
                                }
                            })
                        })
                        .collect();
                    for c in conns {
                        c.join().unwrap();
                    }
                })
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(30));
    let counts: Vec<usize> = served.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert_eq!(counts.iter().sum::<usize>(), CLIENTS);
    if !cfg!(target_vendor = "apple") {
        assert!(
            counts.iter().all(|&c| c > 0),
            "a worker got no connection: {counts:?}"
        );
    }
    rt.shutdown();
    // The listeners closed with their workers.
    let refused = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}

/// Shutdown cancels tasks still paused (their destructors run) and joins
/// the threads before it returns; handles of unfinished work report a
/// cancellation.
#[test]
fn shutdown_cancels_tasks_and_joins_threads() {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let rt = Runtime::builder().workers(2).build().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let thread_gone = Arc::new(AtomicBool::new(false));
    let (d, g) = (dropped.clone(), thread_gone.clone());
    let started = rt.spawn_on(1, move || {
        // Set when the worker thread's thread-locals are destroyed.
        thread_local!(static AT_EXIT: std::cell::RefCell<Option<SetOnDrop>> = const { std::cell::RefCell::new(None) });
        AT_EXIT.with(|a| *a.borrow_mut() = Some(SetOnDrop(g)));
    });
    started.join().unwrap();
    let paused = Arc::new(AtomicBool::new(false));
    let p = paused.clone();
    let forever = rt.spawn_on(1, move || {
        let _guard = SetOnDrop(d);
        p.store(true, Ordering::SeqCst);
        yieldloop::sleep(Duration::from_secs(3600));
    });
    // Wait (bounded) until it runs; it pauses right after.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !paused.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the task never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    rt.shutdown();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the paused task was not unwound"
    );
    assert!(
        thread_gone.load(Ordering::SeqCst),
        "the worker thread was not joined"
    );
    let err = forever.join().unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
}

/// Pinning puts each worker on one CPU the process may use.
#[cfg(target_os = "linux")]
#[test]
fn pinned_workers_run_on_one_cpu_each() {
    let rt = match Runtime::builder().workers(2).pin(true).build() {
        Ok(rt) => rt,
        // A container may forbid changing affinity; nothing to check then.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return,
        Err(e) => panic!("pinning failed: {e}"),
    };
    let cpus: Vec<usize> = rt
        .spawn_each(|_| {
            // /proc says which CPUs this thread may run on.
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let line = status
                .lines()
                .find(|l| l.starts_with("Cpus_allowed_list:"))
                .unwrap()
                .to_string();
            let list = line.split(':').nth(1).unwrap().trim().to_string();
            list.parse::<usize>().unwrap_or(usize::MAX)
        })
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert!(
        cpus.iter().all(|&c| c != usize::MAX),
        "not pinned to one CPU: {cpus:?}"
    );
}

/// Pinning puts each worker on one CPU the process may use (FreeBSD's
/// `cpuset`).
#[cfg(target_os = "freebsd")]
#[test]
fn pinned_workers_run_on_one_cpu_each() {
    let rt = match Runtime::builder().workers(2).pin(true).build() {
        Ok(rt) => rt,
        // A jail may forbid changing affinity; nothing to check then.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return,
        Err(e) => panic!("pinning failed: {e}"),
    };
    let counts: Vec<usize> = rt
        .spawn_each(|_| {
            // SAFETY: `cpuset_t` is plain bits; all zeroes is a valid value.
            let mut set: libc::cpuset_t = unsafe { std::mem::zeroed() };
            // SAFETY: the size and pointer describe `set`; id -1 with
            // CPU_WHICH_TID is the calling thread.
            let r = unsafe {
                libc::cpuset_getaffinity(
                    libc::CPU_LEVEL_WHICH,
                    libc::CPU_WHICH_TID,
                    -1,
                    std::mem::size_of::<libc::cpuset_t>(),
                    &mut set,
                )
            };
            assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
            // SAFETY: `set` is a valid set.
            unsafe { libc::CPU_COUNT(&set) as usize }
        })
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert!(
        counts.iter().all(|&c| c == 1),
        "not pinned to one CPU: {counts:?}"
    );
}

/// macOS has no hard thread affinity: asking for pinning is refused with
/// `Unsupported`, and nothing is left running.
#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
#[test]
fn pinning_is_unsupported() {
    let err = Runtime::builder().workers(2).pin(true).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
}
