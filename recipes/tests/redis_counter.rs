//! The `redis_counter` recipe, run as a child process against a real
//! `redis-server` (skipped, saying which package to install, without one).

mod util;

#[path = "../../tests/util/servers.rs"]
mod servers;

/// The example's stdout, after checking that it succeeded.
fn counter(args: &[&str]) -> String {
    let out = util::run_example("redis_counter", args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redis_counter {args:?} failed\n--- stdout:\n{stdout}--- stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_counter_adds_up_on_every_worker() {
    let Some(server) = servers::redis_with(&["--requirepass", "sesame"]) else {
        return;
    };
    let url = format!("redis://:sesame@{}/4", server.addr());
    let first = counter(&[&url, "2", "10", "7"]);
    assert!(
        first.contains("redis_counter:hits: 0 -> 140 (+140, expected +140)"),
        "{first}"
    );
    assert_eq!(
        first.lines().filter(|l| l.starts_with("worker ")).count(),
        2,
        "{first}"
    );
    // A second run starts from where the first left off, over RESP3.
    let resp3 = format!("{url}?protocol=resp3");
    let second = counter(&[&resp3, "3", "2", "5"]);
    assert!(
        second.contains("140 -> 170 (+30, expected +30)"),
        "{second}"
    );
}

#[test]
fn a_server_that_is_not_there_is_an_error() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let out = util::run_example("redis_counter", &[&format!("redis://127.0.0.1:{port}/0")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refused"), "{stderr}");
}
