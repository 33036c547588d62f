//! A connection's life in the pool: checked after sitting idle, replaced
//! when its check fails, closed for good when broken, closed when idle too
//! long or open too long (by the reaper task, or at the next checkout on a
//! plain thread), and per-worker pools for connections of one thread.

mod util;

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use util::{wait_for, Counts, Lines, Server};
use yieldloop::Runtime;
use yieldloop_pool::{CheckoutTimeout, Manage, PoolConfig, Pooled};

/// A connection idle for less than `check_after_idle` is handed out as it
/// is; one idle longer is checked first, and one whose check fails (the
/// server closed it) is closed and replaced by a new one.
#[test]
fn a_connection_failing_its_check_is_replaced() {
    let server = Server::start();
    let lines = Lines::new(&server);
    let counts = lines.counts.clone();
    let pool = PoolConfig::new(lines)
        .check_after_idle(Some(Duration::from_millis(100)))
        .build();
    yieldloop::run(|| {
        let first = pool.get().unwrap().id;
        // Back at once: no check.
        assert_eq!(pool.get().unwrap().id, first);
        assert_eq!(Counts::get(&counts.checks), 0);
        // Idle long enough: checked, and still good.
        yieldloop::sleep(Duration::from_millis(150));
        assert_eq!(pool.get().unwrap().id, first);
        assert_eq!(Counts::get(&counts.checks), 1);
        // The server closes it meanwhile: the check fails, a new one comes.
        server.kill_all();
        yieldloop::sleep(Duration::from_millis(150));
        let mut conn = pool.get().unwrap();
        assert_ne!(conn.id, first);
        assert_eq!(conn.ask("still there?").unwrap(), "still there?");
        assert_eq!(Counts::get(&counts.checks), 2);
    });
    let status = pool.status();
    assert_eq!(
        (status.opened, status.discarded, status.size),
        (2, 1, 1),
        "{status:?}"
    );
    assert_eq!(Counts::get(&counts.discards), 1);
}

/// A connection whose call failed is broken: it is closed when given back,
/// and no later checkout sees it; `Pooled::discard` closes a connection
/// the client cannot tell is spoiled.
#[test]
fn a_broken_connection_is_never_handed_out_again() {
    let server = Server::start();
    let lines = Lines::new(&server);
    let counts = lines.counts.clone();
    let pool = PoolConfig::new(lines).max_size(2).build();
    let (mut a, b) = (pool.get().unwrap(), pool.get().unwrap());
    let (broken, kept) = (a.id, b.id);
    a.broken = true;
    drop((a, b));
    assert_eq!(Counts::get(&counts.discards), 1);
    let status = pool.status();
    assert_eq!((status.size, status.idle, status.discarded), (1, 1, 1));
    server.wait_open(1);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let (x, y) = (pool.get().unwrap(), pool.get().unwrap());
        seen.extend([x.id, y.id]);
    }
    assert!(!seen.contains(&broken), "{seen:?}");
    assert!(seen.contains(&kept));

    let conn = pool.get().unwrap();
    let spoiled = conn.id;
    Pooled::discard(conn);
    assert_eq!(Counts::get(&counts.discards), 2);
    assert!((0..5).all(|_| pool.get().unwrap().id != spoiled));
}

/// Connections idle past the idle timeout are closed by the pool's reaper
/// task while nobody checks anything out, on both workers' behalf; the
/// reaper then stops, and the next connect starts it again.
#[test]
fn idle_connections_are_closed_by_the_reaper_after_the_idle_timeout() {
    let server = Server::start();
    let lines = Lines::new(&server);
    let counts = lines.counts.clone();
    let pool = PoolConfig::new(lines)
        .idle_timeout(Some(Duration::from_millis(100)))
        .build();
    let rt = Runtime::builder().workers(2).build().unwrap();
    for round in 1..=2u64 {
        let held: Vec<_> = (0..2)
            .map(|w| {
                let pool = pool.clone();
                rt.spawn_on(w, move || {
                    let conn = pool.get().unwrap();
                    yieldloop::sleep(Duration::from_millis(20));
                    conn.id
                })
            })
            .collect();
        for h in held {
            h.join().unwrap();
        }
        assert_eq!(pool.status().idle, 2);
        server.wait_open(2);
        // No checkout from here on: only the reaper can close them.
        server.wait_open(0);
        let status = pool.status();
        assert_eq!(status.size, 0, "{status:?}");
        assert_eq!((status.closed, status.discarded), (2 * round, 0));
        assert_eq!(Counts::get(&counts.discards), 2 * round as usize);
    }
}

/// A pool used only from plain threads has no reaper: an expired idle
/// connection is closed at the next checkout, never handed out.
#[test]
fn without_a_scheduler_expired_connections_close_at_the_next_checkout() {
    let server = Server::start();
    let pool = PoolConfig::new(Lines::new(&server))
        .idle_timeout(Some(Duration::from_millis(50)))
        .build();
    let first = pool.get().unwrap().id;
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.open(), 1, "no reaper on a plain thread");
    let second = pool.get().unwrap().id;
    assert_ne!(first, second);
    assert_eq!(pool.status().closed, 1);
    server.wait_open(1);
}

/// With a lifetime limit, a connection in steady use is replaced once it
/// is older than the limit: never handed out past it, never taken from the
/// task holding it.
#[test]
fn connections_are_replaced_after_their_lifetime() {
    const LIFE: Duration = Duration::from_millis(150);
    let server = Server::start();
    let pool = PoolConfig::new(Lines::new(&server))
        .max_size(1)
        .max_lifetime(Some(LIFE))
        .build();
    let spans: HashMap<u64, (Instant, Instant)> = yieldloop::run(|| {
        let mut spans = HashMap::new();
        let end = Instant::now() + Duration::from_millis(700);
        while Instant::now() < end {
            let mut conn = pool.get().unwrap();
            let at = Instant::now();
            assert_eq!(conn.ask("x").unwrap(), "x");
            spans
                .entry(conn.id)
                .and_modify(|s: &mut (Instant, Instant)| s.1 = at)
                .or_insert((at, at));
            drop(conn);
            yieldloop::sleep(Duration::from_millis(10));
        }
        spans
    });
    assert!(spans.len() >= 3, "{} connections in 700 ms", spans.len());
    for (id, (first, last)) in &spans {
        let used = *last - *first;
        assert!(used < LIFE, "connection {id} handed out over {used:?}");
    }
    // The last one may have expired too, in the last sleep.
    let status = pool.status();
    assert!(status.opened - status.closed <= 1, "{status:?}");
    assert_eq!(status.discarded, 0);
}

/// Connections of yieldloop's own sockets, which belong to their thread.
#[derive(Clone, Debug)]
struct Local(std::net::SocketAddr);

impl Manage for Local {
    type Conn = BufReader<yieldloop::net::TcpStream>;
    type Error = io::Error;

    fn connect(&self) -> io::Result<Self::Conn> {
        Ok(BufReader::new(yieldloop::net::TcpStream::connect(self.0)?))
    }

    fn is_broken(&self, _: &Self::Conn) -> bool {
        false
    }

    fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> io::Error {
        timeout.into()
    }
}

/// One configuration, each worker its own pool of thread-bound
/// connections: each opens its own, and the tasks of a worker share them.
#[test]
fn per_worker_pools_of_thread_bound_connections() {
    let server = Server::start();
    let config = PoolConfig::new(Local(server.addr)).max_size(2);
    let rt = Runtime::builder().workers(2).build().unwrap();
    let ids = rt.spawn_each(move |_| {
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let pool = config.pool();
                yieldloop::spawn(move || -> io::Result<u64> {
                    let mut conn = pool.get()?;
                    conn.get_mut().write_all(b"ID\n")?;
                    let mut line = String::new();
                    conn.read_line(&mut line)?;
                    yieldloop::sleep(Duration::from_millis(5));
                    Ok(line.trim_end().parse().unwrap())
                })
            })
            .collect();
        let mut ids: Vec<u64> = tasks
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        let status = config.pool().status();
        (ids, status.opened, status.idle)
    });
    let mut all = Vec::new();
    for h in ids {
        let (ids, opened, idle) = h.join().unwrap();
        assert_eq!((ids.len(), opened, idle), (2, 2, 2));
        all.extend(ids);
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 4, "the workers shared a connection: {all:?}");
    wait_for(|| server.accepted() == 4, "four connects");
}
