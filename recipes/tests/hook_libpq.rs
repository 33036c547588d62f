//! PostgreSQL's own C client library, libpq, loaded with `dlopen` and
//! driven from tasks under feature `hook`, against a real PostgreSQL: its
//! `connect`, `poll`, `recv` and `send` reach yieldloop's definitions
//! because the test executable exports them (`-rdynamic`, set by the
//! recipes' build script), so twenty `SELECT pg_sleep(0.2)` overlap on
//! one thread while a ticker keeps ticking, and a `timeout` ends a query
//! that libpq is blocked in with an error return, not an unwind through
//! C. Skips, naming the package, where libpq.so.5 is missing.
#![allow(unsafe_code)] // Calls into libpq; see `Pq` for each one's contract.

mod hook_util;
#[path = "../../tests/util/servers.rs"]
mod servers;
mod util;

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::rc::Rc;
use std::time::{Duration, Instant};

use hook_util::dl::Library;

/// The libpq functions the tests use, from its C declarations
/// (`libpq-fe.h`); `PGconn` and `PGresult` are opaque.
#[derive(Clone, Copy)]
struct Pq {
    connectdb: unsafe extern "C" fn(*const c_char) -> *mut c_void,
    status: unsafe extern "C" fn(*const c_void) -> c_int,
    error_message: unsafe extern "C" fn(*const c_void) -> *const c_char,
    exec: unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void,
    result_status: unsafe extern "C" fn(*const c_void) -> c_int,
    result_error: unsafe extern "C" fn(*const c_void) -> *const c_char,
    ntuples: unsafe extern "C" fn(*const c_void) -> c_int,
    getvalue: unsafe extern "C" fn(*const c_void, c_int, c_int) -> *const c_char,
    clear: unsafe extern "C" fn(*mut c_void),
    finish: unsafe extern "C" fn(*mut c_void),
}

/// `CONNECTION_OK` of `ConnStatusType`.
const CONNECTION_OK: c_int = 0;
/// `PGRES_TUPLES_OK` of `ExecStatusType`.
const PGRES_TUPLES_OK: c_int = 2;

impl Pq {
    /// libpq.so.5, or `None` after saying which package to install.
    fn load() -> Option<Pq> {
        let lib = match Library::open("libpq.so.5") {
            Ok(lib) => lib,
            Err(e) => {
                hook_util::skip(&format!("libpq.so.5 ({e})"), "libpq5");
                return None;
            }
        };
        // SAFETY: each type below is the function's C signature from
        // libpq-fe.h, with opaque pointers as `c_void`.
        unsafe {
            Some(Pq {
                connectdb: lib.function("PQconnectdb"),
                status: lib.function("PQstatus"),
                error_message: lib.function("PQerrorMessage"),
                exec: lib.function("PQexec"),
                result_status: lib.function("PQresultStatus"),
                result_error: lib.function("PQresultErrorMessage"),
                ntuples: lib.function("PQntuples"),
                getvalue: lib.function("PQgetvalue"),
                clear: lib.function("PQclear"),
                finish: lib.function("PQfinish"),
            })
        }
    }

    /// Connects with a libpq connection string.
    fn connect(self, conninfo: &str) -> Result<PgConn, String> {
        let c = CString::new(conninfo).map_err(|e| e.to_string())?;
        // SAFETY: a valid C string; PQconnectdb copies what it needs.
        let conn = unsafe { (self.connectdb)(c.as_ptr()) };
        assert!(!conn.is_null(), "PQconnectdb: out of memory");
        let conn = PgConn { pq: self, conn };
        // SAFETY: a live connection object (freed only by PgConn's drop).
        if unsafe { (self.status)(conn.conn) } != CONNECTION_OK {
            return Err(conn.error());
        }
        Ok(conn)
    }
}

/// A libpq connection, finished on drop.
struct PgConn {
    pq: Pq,
    conn: *mut c_void,
}

impl PgConn {
    /// The connection's last error message.
    fn error(&self) -> String {
        // SAFETY: a live connection; the message lives as long as it and
        // is copied at once.
        unsafe { CStr::from_ptr((self.pq.error_message)(self.conn)) }
            .to_string_lossy()
            .trim()
            .to_string()
    }

    /// Runs `sql` and returns the first column of its rows as text, or
    /// the error.
    fn query(&self, sql: &str) -> Result<Vec<String>, String> {
        let c = CString::new(sql).map_err(|e| e.to_string())?;
        // SAFETY: a live connection and a valid C string.
        let res = unsafe { (self.pq.exec)(self.conn, c.as_ptr()) };
        if res.is_null() {
            return Err(self.error());
        }
        // SAFETY: `res` is a live result until the PQclear below; the
        // strings read from it are copied before that.
        unsafe {
            let out = if (self.pq.result_status)(res) == PGRES_TUPLES_OK {
                Ok((0..(self.pq.ntuples)(res))
                    .map(|row| {
                        CStr::from_ptr((self.pq.getvalue)(res, row, 0))
                            .to_string_lossy()
                            .into_owned()
                    })
                    .collect())
            } else {
                Err(CStr::from_ptr((self.pq.result_error)(res))
                    .to_string_lossy()
                    .trim()
                    .to_string())
            };
            (self.pq.clear)(res);
            out
        }
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        // SAFETY: the connection is live and finished exactly once.
        unsafe { (self.pq.finish)(self.conn) }
    }
}

/// The harness's server as a libpq connection string: TCP, and no SSL or
/// GSS negotiation (the test server has neither).
fn conninfo(server: &servers::PgServer) -> String {
    format!(
        "{} sslmode=disable gssencmode=disable connect_timeout=20",
        server.connection_string()
    )
}

/// Twenty tasks each connect with libpq and run `SELECT pg_sleep(0.2)`:
/// all finish in well under the 4 s they would take one after another,
/// and a 1 ms ticker on the same thread keeps ticking. Without the
/// executable's exported symbols, libpq's `poll` would be the C library's
/// and each query would hold the thread.
#[test]
fn twenty_pg_sleeps_overlap_on_one_thread() {
    let Some(pq) = Pq::load() else { return };
    // The C library reaches the hook only through the executable's
    // exported symbols.
    assert!(
        yieldloop::hook::active(),
        "the test executable does not export the hook's symbols (-rdynamic)"
    );
    let Some(server) = servers::postgres() else {
        return;
    };
    let info = conninfo(&server);
    const TASKS: usize = 20;
    let (elapsed, ticks, longest) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let info = info.clone();
                yieldloop::spawn(move || {
                    let conn = pq.connect(&info).expect("PQconnectdb");
                    let begun = Instant::now();
                    let rows = conn.query("SELECT pg_sleep(0.2)").expect("pg_sleep");
                    (rows, begun.elapsed())
                })
            })
            .collect();
        for task in tasks {
            let (rows, waited) = task.join().unwrap();
            // pg_sleep returns void: one row, an empty value.
            assert_eq!(rows, [""]);
            assert!(waited >= Duration::from_millis(190), "after {waited:?}");
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        (elapsed, ticks, longest)
    });
    hook_util::assert_overlapped_beside_ticker(
        "20 × pg_sleep(0.2)",
        elapsed,
        Duration::from_millis(2000),
        ticks,
        longest,
    );
}

/// Answers and errors come back through libpq as they should, in a task and
/// on a plain thread alike (there, the plain calls).
#[test]
fn queries_and_errors_in_a_task_and_on_a_thread() {
    let Some(pq) = Pq::load() else { return };
    let Some(server) = servers::postgres() else {
        return;
    };
    let info = conninfo(&server);
    let session = move |info: &str| -> Vec<String> {
        let conn = pq.connect(info).expect("PQconnectdb");
        let mut out = conn
            .query("SELECT generate_series(1, 3) * 7")
            .expect("a query");
        out.push(conn.query("SELECT nonsense").expect_err("an error"));
        // The connection is still good after a statement's error.
        out.extend(conn.query("SELECT repeat('x', 100000)").expect("a big row"));
        out
    };
    let thread_info = info.clone();
    let on_thread = std::thread::spawn(move || session(&thread_info))
        .join()
        .unwrap();
    let in_task = yieldloop::run(move || session(&info));
    assert_eq!(&on_thread[..3], ["7", "14", "21"]);
    assert!(
        on_thread[3].contains("nonsense") && on_thread[3].contains("does not exist"),
        "{:?}",
        on_thread[3]
    );
    assert_eq!(on_thread[4], "x".repeat(100_000));
    assert_eq!(in_task, on_thread);
}

/// `yieldloop::timeout` around a `PQexec` that would run 10 s: libpq's wait
/// gets an error return, `timeout` reports `Elapsed` on time, and the task
/// goes on, finishing the connection and opening another.
#[test]
fn timeout_ends_a_query_libpq_is_blocked_in() {
    let Some(pq) = Pq::load() else { return };
    let Some(server) = servers::postgres() else {
        return;
    };
    let info = conninfo(&server);
    yieldloop::run(move || {
        let conn = pq.connect(&info).expect("PQconnectdb");
        let limit = Duration::from_millis(200);
        let start = Instant::now();
        let outcome = yieldloop::timeout(limit, || conn.query("SELECT pg_sleep(10)"));
        let waited = start.elapsed();
        assert!(outcome.is_err(), "timeout gave {outcome:?}");
        assert!(
            waited >= limit && waited < Duration::from_secs(2),
            "timeout returned after {waited:?}"
        );
        drop(conn);
        let again = pq.connect(&info).expect("a fresh connection");
        assert_eq!(again.query("SELECT 6 * 7").unwrap(), ["42"]);
    });
}
