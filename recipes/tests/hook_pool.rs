//! The `hook_pool` example against a real `redis-server` (skipped, saying
//! which package to install, without one): one pool of the `redis` crate's
//! sync connections shared by the tasks of two workers and the main
//! thread, under feature `hook`.

#[path = "../../tests/util/servers.rs"]
mod servers;

#[allow(dead_code)]
#[path = "../examples/hook_pool.rs"]
mod hook_pool;

use std::time::Duration;

/// Twelve tasks on two workers, each taking a connection twice from a pool
/// of six and holding it through a 100 ms `BLPOP`: every hit counts, no
/// more than six connections are ever out or opened, and the holds overlap
/// six at a time (0.4 s of holding, where worker threads frozen in each
/// call would need 1.2 s).
#[test]
fn the_sync_client_pooled_across_workers_pauses_only_the_waiting_tasks() {
    // Timeouts of blocked commands checked every 10 ms, not every 100.
    let Some(server) = servers::redis_with(&["--hz", "100"]) else {
        return;
    };
    let url = format!("redis://{}/0", server.addr());
    let hold = Duration::from_millis(100);
    let r = hook_pool::run(&url, 2, 6, 2, 6, hold).unwrap();
    assert_eq!((r.before, r.after), (0, 24), "{r:?}");
    assert_eq!(r.expected, 24);
    assert!(r.peak <= 6, "{r:?}");
    assert!(r.peak >= 2, "the holds never overlapped: {r:?}");
    assert!(r.opened <= 6, "{r:?}");
    assert!(r.elapsed >= 4 * hold - Duration::from_millis(20), "{r:?}");
    assert!(r.elapsed < Duration::from_millis(900), "{r:?}");

    // A second run on the same server counts on from there.
    let again = hook_pool::run(&url, 2, 3, 1, 2, Duration::from_millis(10)).unwrap();
    assert_eq!((again.before, again.after), (24, 30), "{again:?}");
    assert!(again.peak <= 2 && again.opened <= 2, "{again:?}");
}
