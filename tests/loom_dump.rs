//! Model checks of a task dump's request to a scheduler (`diag::dump`):
//! a request queued with the scheduler's port from another thread, the
//! interrupt of its poll, and the answer through a hand-off slot; every
//! interleaving within the preemption bound `LOOM_MAX_PREEMPTIONS`.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_dump`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use yieldloop::model::ModelPort;

/// A request from another thread is answered, whether it comes before
/// the scheduler polls, while it checks for requests, or while it waits.
#[test]
fn a_request_is_answered() {
    loom::model(|| {
        let port = Arc::new(ModelPort::new());
        let p = port.clone();
        let asker = thread::spawn(move || p.ask().wait_thread());
        port.serve(1);
        assert_eq!(asker.join().unwrap(), Some(7));
    });
}

/// Two requests from two threads: both answered, though the second may
/// come while the scheduler takes the first, with one interrupt between
/// them or two.
#[test]
fn two_requests_are_both_answered() {
    loom::model(|| {
        let port = Arc::new(ModelPort::new());
        let (p1, p2) = (port.clone(), port.clone());
        let a = thread::spawn(move || p1.ask().wait_thread());
        let b = thread::spawn(move || p2.ask().wait_thread());
        port.serve(2);
        assert_eq!(a.join().unwrap(), Some(7));
        assert_eq!(b.join().unwrap(), Some(7));
    });
}
