//! The `mysql` crate's synchronous client, unmodified, in tasks under
//! feature `hook`, against a real MariaDB: its blocking `connect`, reads
//! and writes on `std::net::TcpStream` pause only the calling task, so
//! twenty `SELECT SLEEP(0.2)` on twenty connections overlap on one thread
//! while a ticker keeps ticking; and a server killed in the middle of a
//! query gives that query an error, and nothing else on the thread
//! notices. Skips, naming the package, where MariaDB is missing.

mod hook_util;
#[path = "../../tests/util/servers.rs"]
mod servers;
mod util;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

/// The longest gap allowed to the 1 ms ticker beside the queries: a tenth
/// of the 200 ms a query that held the thread would show.
const GAP_LIMIT: Duration = Duration::from_millis(20);

/// One test at a time: each starts servers (whose start-up takes the
/// machine's cores for a moment) and measures a ticker's gaps, which
/// another test's start-up would stretch.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Options for a TCP connection to `server` (not its Unix socket, which
/// the client would otherwise switch to for a local server).
fn opts(server: &servers::MariaDbServer) -> OptsBuilder {
    OptsBuilder::new()
        .ip_or_hostname(Some(server.addr().ip().to_string()))
        .tcp_port(server.addr().port())
        .user(Some("root"))
        .db_name(Some("mysql"))
        .prefer_socket(false)
}

/// Twenty tasks each run `SELECT SLEEP(0.2)` on a connection of their
/// own: the queries overlap (all done in well under the 4 s they would
/// take one after another), each answers correctly, and a 1 ms ticker on
/// the same thread keeps ticking throughout, connections included.
/// The connections are made first, so that the time measured is the
/// queries'.
#[test]
fn twenty_sleeps_overlap_on_one_thread() {
    assert!(
        yieldloop::hook::active(),
        "the test executable does not export the hook's symbols (-rdynamic)"
    );
    let _turn = one_at_a_time();
    let Some(server) = servers::mariadb() else {
        return;
    };
    let opts = opts(&server);
    const TASKS: usize = 20;
    let (elapsed, ticks, longest, connecting) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        // The connections first (each a task's blocking connect and
        // handshake), so that the time below is the queries'.
        let conns: Vec<_> = (0..TASKS)
            .map(|_| {
                let opts = opts.clone();
                hook_util::spawn_client(move || Conn::new(opts).expect("connecting"))
            })
            .collect();
        let conns: Vec<Conn> = conns.into_iter().map(|c| c.join().unwrap()).collect();
        stop.set(true);
        let (_, connecting) = ticker.join().unwrap();
        // A ticker of its own for the queries.
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        let start = Instant::now();
        let tasks: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(i, mut conn)| {
                hook_util::spawn_client(move || {
                    let begun = Instant::now();
                    let slept: Option<i64> = conn.query_first("SELECT SLEEP(0.2)").unwrap();
                    let waited = begun.elapsed();
                    let sum: Option<(i64, String)> = conn
                        .exec_first("SELECT ? + 1, CONCAT('task ', ?)", (i as i64, i as i64))
                        .unwrap();
                    (i, slept, waited, sum)
                })
            })
            .collect();
        for task in tasks {
            let (i, slept, waited, sum) = task.join().unwrap();
            assert_eq!(slept, Some(0));
            assert!(waited >= Duration::from_millis(195), "after {waited:?}");
            assert_eq!(sum, Some((i as i64 + 1, format!("task {i}"))));
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        (elapsed, ticks, longest, connecting)
    });
    eprintln!(
        "20 × SLEEP(0.2) on MariaDB: {elapsed:?} in all; ticker's longest gap {longest:?} \
         (while connecting: {connecting:?})"
    );
    assert!(
        elapsed < Duration::from_millis(500),
        "the queries did not overlap: {elapsed:?}"
    );
    assert!(ticks >= 50, "ticker ticked {ticks} times");
    assert!(longest < GAP_LIMIT, "ticker's longest gap: {longest:?}");
    // Twenty handshakes that finish in one turn each compute for a while
    // (a debug build's hashing and parsing) before the ticker's turn: a
    // wider bound there, still well below a blocked connect's.
    assert!(
        connecting < Duration::from_millis(100),
        "ticker's longest gap while connecting: {connecting:?}"
    );
}

/// A server killed (SIGKILL) while a task waits for its answer to a 10 s
/// query: that query fails with an error, soon after the kill, and the
/// task goes on; another task's query on another server, running
/// meanwhile, succeeds, and the ticker on the same thread never stalls.
#[test]
fn a_server_killed_mid_query_fails_only_that_query() {
    let _turn = one_at_a_time();
    // Both servers start at once.
    let doomed = std::thread::spawn(servers::mariadb);
    let Some(other) = servers::mariadb() else {
        return;
    };
    let Some(doomed) = doomed.join().unwrap() else {
        return;
    };
    let (doomed_opts, other_opts) = (opts(&doomed), opts(&other));
    let (outcome, longest, killer) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        let victim = hook_util::spawn_client(move || {
            let mut conn = Conn::new(doomed_opts).expect("connecting");
            let begun = Instant::now();
            let r: mysql::Result<Option<i64>> = conn.query_first("SELECT SLEEP(10)");
            let failed_after = begun.elapsed();
            // The connection is gone: so is the next query.
            let again: mysql::Result<Option<i64>> = conn.query_first("SELECT 1");
            (r.map_err(|e| e.to_string()), failed_after, again.is_err())
        });
        let bystander = hook_util::spawn_client(move || {
            let mut conn = Conn::new(other_opts).expect("connecting");
            let slept: Option<i64> = conn.query_first("SELECT SLEEP(0.5)").unwrap();
            slept
        });
        // The kill comes from a plain thread, 300 ms after the start:
        // some time into the query. The thread also removes the server's
        // files (file I/O, which would block the scheduler's thread).
        let killer = std::thread::spawn(move || {
            let mut doomed = doomed;
            std::thread::sleep(Duration::from_millis(300));
            doomed.kill();
            drop(doomed);
        });
        let outcome = victim.join().unwrap();
        assert_eq!(bystander.join().unwrap(), Some(0));
        stop.set(true);
        let (_, longest) = ticker.join().unwrap();
        (outcome, longest, killer)
    });
    killer.join().unwrap();
    let (r, failed_after, again_failed) = outcome;
    eprintln!("the killed server's query: {r:?} after {failed_after:?}");
    assert!(r.is_err(), "the query on the killed server answered {r:?}");
    assert!(
        failed_after < Duration::from_secs(3),
        "the error came after {failed_after:?}"
    );
    assert!(again_failed);
    assert!(longest < GAP_LIMIT, "ticker's longest gap: {longest:?}");
}
