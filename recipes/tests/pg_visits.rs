//! The `pg_visits` recipe, run as a child process against a real
//! PostgreSQL (skipped, saying which package to install, without one).

mod util;

#[path = "../../tests/util/servers.rs"]
mod servers;

/// The example's stdout, after checking that it succeeded.
fn visits(args: &[&str]) -> String {
    let out = util::run_example("pg_visits", args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pg_visits {args:?} failed\n--- stdout:\n{stdout}--- stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The rows written add up on every worker, given a key=value string or a URL.
#[test]
fn the_visits_add_up_on_every_worker() {
    let Some(server) = servers::postgres_with_password("sesame") else {
        return;
    };
    let conninfo = server.connection_string();
    let first = visits(&[&conninfo, "2", "10", "7"]);
    assert!(
        first.contains("pg_visits: 0 -> 140 rows (+140, expected +140)"),
        "{first}"
    );
    let workers: Vec<&str> = first.lines().filter(|l| l.starts_with("worker ")).collect();
    assert_eq!(workers.len(), 2, "{first}");
    // A second run, given a URL, starts from where the first left off.
    let url = format!(
        "postgresql://{}:sesame@{}/{}",
        server.user(),
        server.addr(),
        server.dbname()
    );
    let second = visits(&[&url, "3", "2", "5"]);
    assert!(
        second.contains("140 -> 170 rows (+30, expected +30)"),
        "{second}"
    );
}

/// A refused connection ends the program with status 1 and says why.
#[test]
fn a_server_that_is_not_there_is_an_error() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let out = util::run_example(
        "pg_visits",
        &[&format!("host=127.0.0.1 port={port} user=postgres")],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refused"), "{stderr}");
}
