//! Starts the database servers of the `db` stage of bench/run.sh and keeps
//! them until its standard input closes.
//!
//! ```text
//! db_servers [--redis] [--postgres]
//! ```
//!
//! The servers are those of the tests (tests/util/servers.rs, included
//! here): `redis-server` and PostgreSQL from the OS packages, each on a
//! free port of 127.0.0.1 in a fresh temporary directory (PostgreSQL as an
//! unprivileged user when run as root, trust authentication for the
//! `postgres` user; redis-server with `--hz 100`, see below). For each
//! server asked for, one line on stdout:
//!
//! ```text
//! server db=redis ok=1 addr=127.0.0.1:PORT pid=PID
//! server db=postgres ok=0 reason=not installed (apt-get install postgresql)
//! ```
//!
//! then `ready`. When stdin reaches its end (run.sh closes the pipe, or
//! exits), both are stopped by pid and their directories removed.

#[path = "../../../tests/util/servers.rs"]
mod servers;

use std::io::{Read, Write};

fn main() {
    let (mut want_redis, mut want_pg) = (false, false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--redis" => want_redis = true,
            "--postgres" => want_pg = true,
            _ => {
                eprintln!("usage: db_servers [--redis] [--postgres]");
                std::process::exit(2);
            }
        }
    }
    let mut out = std::io::stdout();
    // Both are started before anything is printed: if one fails to start
    // (a panic, with the server's log), the other is stopped as the panic
    // unwinds, and run.sh sees no address that has gone stale.
    // Redis checks the timeouts of blocked clients on its cron (10 Hz by
    // default), so a 0.2 s `BLPOP` would return after up to 0.3 s; at 100 Hz
    // it returns within 10 ms of its timeout.
    let redis = if want_redis {
        servers::redis_with(&["--hz", "100"])
    } else {
        None
    };
    let pg = if want_pg { servers::postgres() } else { None };
    if want_redis {
        let line = match &redis {
            Some(s) => format!("server db=redis ok=1 addr={} pid={}", s.addr(), s.pid()),
            None => "server db=redis ok=0 reason=redis-server not installed (apt-get install redis-server)".into(),
        };
        let _ = writeln!(out, "{line}");
    }
    if want_pg {
        let line = match &pg {
            Some(s) => format!("server db=postgres ok=1 addr={} pid={}", s.addr(), s.pid()),
            None => "server db=postgres ok=0 reason=PostgreSQL not installed (apt-get install postgresql)".into(),
        };
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    // Until the other end goes away; what it sends does not matter.
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    drop(pg);
    drop(redis);
}
