//! An idle scheduler sleeps in the kernel: while its tasks only wait (on
//! timers, accepts or reads) the thread uses next to no CPU time. Measured
//! with `getrusage(RUSAGE_THREAD)`, so tests running beside these on other
//! threads do not count.

mod util;

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now, JoinHandle};

/// The most CPU time an idle stretch may use. Generous: a busy loop would
/// use the whole stretch (hundreds of milliseconds), a sleeping one a few
/// microseconds.
const IDLE_CPU: Duration = Duration::from_millis(50);

/// Checks the CPU time used by the calling thread while `f` runs.
fn assert_idle<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let cpu = util::thread_cpu_time();
    let wall = Instant::now();
    let r = f();
    let used = util::thread_cpu_time() - cpu;
    let took = wall.elapsed();
    assert!(
        used < IDLE_CPU,
        "{what}: used {used:?} of CPU in {took:?} of waiting"
    );
    r
}

/// A task sleeping for a second costs next to no CPU.
#[test]
fn sleeping_main_task_uses_no_cpu() {
    assert_idle("the whole run", || {
        yieldloop::run(|| {
            let start = Instant::now();
            assert_idle("a 1 s sleep", || sleep(Duration::from_secs(1)));
            assert!(start.elapsed() >= Duration::from_secs(1));
        })
    });
}

/// A thousand tasks sleeping for a second cost next to no CPU while they
/// sleep.
#[test]
fn thousand_sleeping_tasks_use_no_cpu() {
    yieldloop::run(|| {
        let start = Instant::now();
        let handles: Vec<_> = (0..1000)
            .map(|_| spawn(|| sleep(Duration::from_secs(1))))
            .collect();
        // Let every one of them start and go to sleep.
        yield_now();
        assert_idle("1000 tasks sleeping 1 s", || {
            for h in handles {
                h.join().unwrap();
            }
        });
        assert!(start.elapsed() >= Duration::from_secs(1));
    });
}

/// A listener waiting for a connection, with a timer running beside it,
/// costs next to no CPU.
#[test]
fn listener_waiting_on_accept_uses_no_cpu() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let acceptor = spawn(move || listener.accept().map(|_| ()));
        yield_now();
        assert_idle("accept waiting 500 ms", || {
            sleep(Duration::from_millis(500));
        });
        assert!(!acceptor.is_finished());
    });
}

/// With no timer at all, only sockets to wait on (a poll without a
/// timeout), the wait costs next to no CPU; the connection that ends it,
/// made from another thread after 500 ms, is still seen at once.
#[test]
fn waiting_on_sockets_without_timers_uses_no_cpu() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            std::io::Write::write_all(&mut s, b"ping").unwrap();
            std::thread::sleep(Duration::from_millis(300));
            // Closing ends the reader below.
        });
        let start = Instant::now();
        let got = assert_idle("accept and read with no timer", || {
            let (s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            (&s).read_to_end(&mut got).unwrap();
            got
        });
        assert_eq!(got, b"ping");
        assert!(start.elapsed() >= Duration::from_millis(800));
        client.join().unwrap();
    });
}

/// A task parked in a read with a long timeout on a silent connection costs
/// next to no CPU.
#[test]
fn silent_read_with_timeout_uses_no_cpu() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        server
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let start = Instant::now();
        let err = assert_idle("read waiting 500 ms", || {
            let mut buf = [0u8; 8];
            (&server).read(&mut buf).unwrap_err()
        });
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(500));
        drop(client);
    });
}

/// A task that joins itself (a wait that can never end) does not spin: the
/// scheduler stays idle while the rest of the program sleeps.
#[test]
fn self_join_does_not_spin() {
    yieldloop::run(|| {
        let slot: Rc<RefCell<Option<JoinHandle<()>>>> = Rc::new(RefCell::new(None));
        let s = slot.clone();
        let selfish = spawn(move || {
            let me = s.borrow_mut().take();
            if let Some(me) = me {
                let _ = me.join();
            }
        });
        *slot.borrow_mut() = Some(selfish);
        yield_now();
        assert!(slot.borrow().is_none(), "the task took its own handle");
        assert_idle("a task joining itself, beside a 500 ms sleep", || {
            sleep(Duration::from_millis(500));
        });
    });
}
