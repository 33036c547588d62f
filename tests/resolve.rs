//! Name resolution: host names are looked up on the blocking pool while
//! only the asking task pauses, literal addresses never leave the task,
//! and timeouts, cancellation and resolver failures behave.
//!
//! Every test here installs the same process-wide resolver, which answers
//! the made-up names below and passes every other name to the system:
//!
//! - `slow-<ms>.test`: 127.0.0.1 after `<ms>` milliseconds;
//! - `loopback.test`: 127.0.0.1 at once;
//! - `fail.test`: a `NotFound` error;
//! - `empty.test`: no address at all;
//! - `panic.test`: a panic.
//!
//! The tests take turns (`serial`), so that the pool's job count seen by
//! one is not moved by another.

mod util;

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use yieldloop::net::{self, Resolve, SystemResolver, TcpListener, TcpStream, UdpSocket};

/// Slow lookups that have finished, timed out by their caller or not.
static SLOW_DONE: AtomicUsize = AtomicUsize::new(0);

/// The name of the thread that last ran the resolver for `where.test`.
static WHERE: Mutex<Option<String>> = Mutex::new(None);

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// The test resolver (see the file's docs).
fn test_resolver(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let local = vec![SocketAddr::from((LOCAL, port))];
    if let Some(ms) = host
        .strip_prefix("slow-")
        .and_then(|h| h.strip_suffix(".test"))
    {
        let ms: u64 = ms.parse().expect("slow-<ms>.test");
        std::thread::sleep(Duration::from_millis(ms));
        SLOW_DONE.fetch_add(1, Ordering::SeqCst);
        return Ok(local);
    }
    match host {
        "loopback.test" => Ok(local),
        "where.test" => {
            let me = std::thread::current().name().map(str::to_owned);
            *WHERE.lock().unwrap() = Some(me.unwrap_or_default());
            Ok(local)
        }
        "fail.test" => Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no such host: fail.test",
        )),
        "empty.test" => Ok(Vec::new()),
        "panic.test" => panic!("{}: in the resolver", util::EXPECTED_PANIC),
        _ => SystemResolver.resolve(host, port),
    }
}

/// Installs the test resolver (once) and takes this file's turn lock.
fn serial() -> MutexGuard<'static, ()> {
    static INSTALL: Once = Once::new();
    static TURN: Mutex<()> = Mutex::new(());
    INSTALL.call_once(|| {
        net::set_resolver(test_resolver);
    });
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Jobs handed to the blocking pool so far.
fn pool_jobs() -> u64 {
    yieldloop::diag::blocking_pool_stats().submitted
}

/// Runs a task ticking every 5 ms beside `f`; returns `f`'s value, the
/// ticks counted while `f` ran, and the longest gap between two ticks.
fn with_ticker<T: 'static>(f: impl FnOnce() -> T + 'static) -> (T, u32, Duration) {
    yieldloop::run(|| {
        let stop = Rc::new(Cell::new(false));
        let s = stop.clone();
        let ticker = yieldloop::spawn(move || {
            let (mut ticks, mut worst) = (0u32, Duration::ZERO);
            let mut last = Instant::now();
            // Bounded: 2000 ticks of 5 ms is 10 s, far past any lookup here.
            for _ in 0..2000 {
                if s.get() {
                    break;
                }
                yieldloop::sleep(Duration::from_millis(5));
                let now = Instant::now();
                worst = worst.max(now - last);
                last = now;
                ticks += 1;
            }
            (ticks, worst)
        });
        // Let the ticker start before the work does.
        yieldloop::yield_now();
        let value = f();
        stop.set(true);
        let (ticks, worst) = ticker.join().unwrap();
        (value, ticks, worst)
    })
}

/// While a lookup takes 300 ms, a task sleeping 5 ms at a time keeps
/// ticking: the lookup pauses only its own task.
#[test]
fn a_slow_lookup_pauses_only_its_task() {
    let _turn = serial();
    let start = Instant::now();
    let (addrs, ticks, worst) = with_ticker(|| {
        net::lookup_host("slow-300.test:80")
            .unwrap()
            .collect::<Vec<_>>()
    });
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(addrs, [SocketAddr::from((LOCAL, 80))]);
    // About 60 ticks fit in 300 ms; a stalled loop would count one.
    assert!(ticks >= 20, "only {ticks} ticks during the lookup");
    assert!(
        worst < Duration::from_millis(200),
        "the ticker stalled for {worst:?}"
    );
}

/// Lookups from many tasks run at once, each on a pool thread of its own.
#[test]
fn lookups_from_many_tasks_overlap() {
    let _turn = serial();
    let start = Instant::now();
    let found = yieldloop::run(|| {
        let tasks: Vec<_> = (0..8u16)
            .map(|i| {
                yieldloop::spawn(move || net::lookup_host(("slow-200.test", i)).unwrap().count())
            })
            .collect();
        yieldloop::join_all(tasks)
            .into_iter()
            .map(Result::unwrap)
            .sum::<usize>()
    });
    assert_eq!(found, 8);
    // Eight lookups of 200 ms one after another would take 1.6 s.
    assert!(
        start.elapsed() < Duration::from_millis(1000),
        "the lookups did not overlap: {:?}",
        start.elapsed()
    );
}

/// `connect("localhost:PORT")` and `connect(("localhost", PORT))` reach a
/// listener on the loopback address through the system resolver, and a
/// name from the installed resolver works the same way.
#[test]
fn connect_by_host_name_reaches_a_local_listener() {
    let _turn = serial();
    yieldloop::run(|| -> io::Result<()> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let server = yieldloop::spawn(move || -> io::Result<()> {
            for _ in 0..3 {
                let (mut s, _) = listener.accept()?;
                let mut buf = [0u8; 4];
                s.read_exact(&mut buf)?;
                s.write_all(&buf)?;
            }
            Ok(())
        });
        let targets = [format!("localhost:{port}"), format!("loopback.test:{port}")];
        for target in &targets {
            let mut c = TcpStream::connect(target.as_str())?;
            c.write_all(b"ping")?;
            let mut buf = [0u8; 4];
            c.read_exact(&mut buf)?;
            assert_eq!(&buf, b"ping", "through {target}");
        }
        let mut c = TcpStream::connect(("localhost", port))?;
        c.write_all(b"pong")?;
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf)?;
        assert_eq!(&buf, b"pong");
        server.join().unwrap()
    })
    .unwrap();
}

/// Literal addresses, in every form, resolve inside the task: no job goes
/// to the pool, and not even a zero timeout, which fires at the first
/// pause, catches them pausing.
#[test]
fn literal_addresses_need_no_pool_thread() {
    let _turn = serial();
    let v6 = SocketAddrV6::new(Ipv6Addr::LOCALHOST, 53, 0, 0);
    let v4 = SocketAddrV4::new(LOCAL, 53);
    let before = pool_jobs();
    let all = yieldloop::run(move || {
        yieldloop::timeout(Duration::ZERO, || -> io::Result<Vec<SocketAddr>> {
            let list = [SocketAddr::V4(v4), SocketAddr::V6(v6)];
            let mut all = Vec::new();
            all.extend(net::lookup_host(SocketAddr::V4(v4))?);
            all.extend(net::lookup_host(v4)?);
            all.extend(net::lookup_host(v6)?);
            all.extend(net::lookup_host((IpAddr::V4(LOCAL), 53))?);
            all.extend(net::lookup_host((LOCAL, 53))?);
            all.extend(net::lookup_host((Ipv6Addr::LOCALHOST, 53))?);
            all.extend(net::lookup_host("127.0.0.1:53")?);
            all.extend(net::lookup_host("[::1]:53")?);
            all.extend(net::lookup_host(String::from("127.0.0.1:53"))?);
            all.extend(net::lookup_host(("127.0.0.1", 53))?);
            all.extend(net::lookup_host((String::from("::1"), 53))?);
            all.extend(net::lookup_host(&list[..])?);
            // An IPv6 address written without brackets is still a literal.
            all.extend(net::lookup_host("::1:53")?);
            Ok(all)
        })
    });
    let all = all
        .expect("a literal lookup paused")
        .expect("literals resolve");
    assert_eq!(all.len(), 14);
    assert!(all.iter().all(|a| a.ip().is_loopback() && a.port() == 53));
    assert_eq!(pool_jobs(), before, "a literal went to the pool");
}

/// Inside a task a name is looked up on a pool thread (one job); outside
/// any task, on the calling thread (no job).
#[test]
fn names_are_looked_up_on_the_pool_inside_tasks_only() {
    let _turn = serial();
    let before = pool_jobs();
    yieldloop::run(|| net::lookup_host("where.test:1").unwrap().count());
    assert_eq!(pool_jobs(), before + 1);
    let pool_thread = WHERE.lock().unwrap().take().unwrap();
    assert_eq!(pool_thread, "yieldloop-blocking");

    let outside = std::thread::Builder::new()
        .name("plain".into())
        .spawn(|| net::lookup_host("where.test:1").unwrap().count())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(outside, 1);
    assert_eq!(
        pool_jobs(),
        before + 1,
        "a lookup outside a task used the pool"
    );
    assert_eq!(WHERE.lock().unwrap().take().unwrap(), "plain");
}

/// A timeout around a connect whose lookup takes 1.5 s returns `Elapsed`
/// on time; the lookup finishes on its pool thread later, its answer is
/// dropped, and the scheduler goes on as before.
#[test]
fn a_timeout_covers_the_lookup() {
    let _turn = serial();
    let done_before = SLOW_DONE.load(Ordering::SeqCst);
    yieldloop::run(move || {
        let start = Instant::now();
        let r = yieldloop::timeout(Duration::from_millis(100), || {
            TcpStream::connect("slow-1500.test:80")
        });
        let took = start.elapsed();
        assert!(r.is_err(), "the connect finished within the timeout");
        assert!(took >= Duration::from_millis(100));
        assert!(
            took < Duration::from_millis(1000),
            "Elapsed came after {took:?}"
        );
        // The lookup is still under way on the pool; wait for its end.
        assert!(util::wait_until(Duration::from_secs(10), || {
            SLOW_DONE.load(Ordering::SeqCst) > done_before
        }));
        // Nothing stale came back to this task.
        let slept = Instant::now();
        yieldloop::sleep(Duration::from_millis(20));
        assert!(slept.elapsed() >= Duration::from_millis(20));
    });
}

/// A task cancelled while its lookup is under way ends at once as
/// cancelled; the lookup finishes on the pool without harm.
#[test]
fn a_cancelled_lookup_ends_its_task_at_once() {
    let _turn = serial();
    let done_before = SLOW_DONE.load(Ordering::SeqCst);
    yieldloop::run(move || {
        let task = yieldloop::spawn(|| net::lookup_host("slow-800.test:80").map(|a| a.count()));
        yieldloop::sleep(Duration::from_millis(30));
        let start = Instant::now();
        task.cancel();
        let err = task.join().unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert!(start.elapsed() < Duration::from_millis(500));
    });
    // The pool thread finishes the lookup later, with no one to tell.
    assert!(util::wait_until(Duration::from_secs(10), || {
        SLOW_DONE.load(Ordering::SeqCst) > done_before
    }));
}

/// A resolver's error comes back as it is; a name with no address, a
/// string that is no `host:port`, and a panicking resolver are
/// `io::Error`s too, and the task goes on.
#[test]
fn resolution_errors_come_back_as_io_errors() {
    let _turn = serial();
    util::quiet_panics(|| {
        yieldloop::run(|| {
            let err = net::lookup_host("fail.test:1").err().unwrap();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
            assert_eq!(err.to_string(), "no such host: fail.test");
            let err = TcpStream::connect(("fail.test", 1)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);

            assert_eq!(net::lookup_host("empty.test:1").unwrap().count(), 0);
            let err = TcpStream::connect("empty.test:1").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let err = socket.send_to(b"x", "empty.test:1").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

            for bad in ["no-port", "loopback.test:http", "loopback.test:70000"] {
                let err = net::lookup_host(bad).err().unwrap();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}");
            }

            let err = net::lookup_host("panic.test:1").err().unwrap();
            let text = err.to_string();
            assert!(text.contains("panicked"), "{text}");
            assert!(text.contains("panic.test:1"), "{text}");
            // The pool and the task live on.
            assert_eq!(net::lookup_host("loopback.test:1").unwrap().count(), 1);
        });
    });
}

/// `send_to` and `connect` of a UDP socket take host names: through the
/// system resolver (`localhost`) and through the installed one.
#[test]
fn udp_send_to_a_host_name() {
    let _turn = serial();
    yieldloop::run(|| -> io::Result<()> {
        // Bind where "localhost" points first, so the family matches.
        let home = net::lookup_host(("localhost", 0))?
            .next()
            .expect("localhost resolves");
        let server = UdpSocket::bind((home.ip(), 0))?;
        let port = server.local_addr()?.port();
        let client = UdpSocket::bind((home.ip(), 0))?;
        client.send_to(b"one", ("localhost", port))?;
        client.send_to(b"two", format!("localhost:{port}"))?;
        let mut buf = [0u8; 8];
        let (n, from) = server.recv_from(&mut buf)?;
        assert_eq!(&buf[..n], b"one");
        assert_eq!(from, client.local_addr()?);
        let (n, _) = server.recv_from(&mut buf)?;
        assert_eq!(&buf[..n], b"two");

        // The installed resolver's names are 127.0.0.1.
        let v4 = UdpSocket::bind("127.0.0.1:0")?;
        let v4_port = v4.local_addr()?.port();
        let sender = UdpSocket::bind("127.0.0.1:0")?;
        sender.send_to(b"three", ("loopback.test", v4_port))?;
        let (n, _) = v4.recv_from(&mut buf)?;
        assert_eq!(&buf[..n], b"three");
        sender.connect(format!("loopback.test:{v4_port}"))?;
        sender.send(b"four")?;
        let (n, _) = v4.recv_from(&mut buf)?;
        assert_eq!(&buf[..n], b"four");
        Ok(())
    })
    .unwrap();
}

/// The resolver is per process: tasks on every worker of a `Runtime`, and
/// plain threads, all use the one installed.
#[test]
fn the_resolver_is_shared_by_every_worker() {
    let _turn = serial();
    let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    let handles = rt.spawn_each(|_worker| {
        net::lookup_host("loopback.test:9")
            .map(|a| a.collect::<Vec<_>>())
            .map_err(|e| e.to_string())
    });
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), [SocketAddr::from((LOCAL, 9))]);
    }
    rt.shutdown();
}
