//! What goes wrong: a `RefCell` borrow held across a pause.
//!
//! ```text
//! cargo run --example wrong_refcell_borrow            # the mistake
//! cargo run --example wrong_refcell_borrow -- short   # borrow, use, drop
//! cargo run --example wrong_refcell_borrow -- mutex   # yieldloop::sync::local::Mutex
//! ```
//!
//! Two tasks share a log. The writer takes a `borrow_mut` and sleeps with
//! it still alive; the reader, running during that sleep, borrows too and
//! panics with "already borrowed". The task that made the mistake goes on
//! unharmed: the panic is in the other one. The fixed versions either end
//! the borrow before the pause or hold a `yieldloop::sync::local::Mutex` guard
//! across it, which makes the reader wait its turn.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use yieldloop::{Builder, JoinError};

mod args;
use args::Args;

fn main() {
    let mut args = Args::new("wrong_refcell_borrow [wrong|short|mutex]");
    let mode = args.choice(&["wrong", "short", "mutex"]);
    args.finish();
    let log = match mode {
        "wrong" => yieldloop::run(wrong),
        "short" => yieldloop::run(short_borrows),
        _ => yieldloop::run(with_mutex),
    };
    println!("log: {log:?}");
}

/// How a task ended, in one line.
fn outcome(result: Result<(), JoinError>) -> String {
    match result {
        Ok(()) => "finished".to_string(),
        Err(e) => e.to_string(),
    }
}

// ANCHOR: wrong
/// The writer keeps its `borrow_mut` across a sleep; the reader's borrow,
/// made during that sleep, panics.
fn wrong() -> Vec<&'static str> {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let writer = Builder::new()
        .name("writer")
        .spawn(move || {
            let mut entries = l.borrow_mut();
            entries.push("writer: begin");
            // Wrong: `entries` is still borrowed while this task sleeps.
            yieldloop::sleep(Duration::from_millis(50));
            entries.push("writer: end");
        })
        .unwrap();
    let l = log.clone();
    let reader = Builder::new()
        .name("reader")
        .spawn(move || {
            yieldloop::sleep(Duration::from_millis(10));
            l.borrow_mut().push("reader"); // panics: the writer holds the borrow
        })
        .unwrap();
    println!("writer: {}", outcome(writer.join()));
    println!("reader: {}", outcome(reader.join()));
    log.take()
}
// ANCHOR_END: wrong

// ANCHOR: short
/// Each borrow ends before the pause: the reader gets in between the
/// writer's two entries, which is fine when they need not stay together.
fn short_borrows() -> Vec<&'static str> {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let writer = yieldloop::spawn(move || {
        l.borrow_mut().push("writer: begin"); // borrowed and released here
        yieldloop::sleep(Duration::from_millis(50));
        l.borrow_mut().push("writer: end");
    });
    let l = log.clone();
    let reader = yieldloop::spawn(move || {
        yieldloop::sleep(Duration::from_millis(10));
        l.borrow_mut().push("reader");
    });
    println!("writer: {}", outcome(writer.join()));
    println!("reader: {}", outcome(reader.join()));
    log.take()
}
// ANCHOR_END: short

// ANCHOR: mutex
/// The writer's entries must stay together: a `yieldloop::sync::local::Mutex`
/// guard may be held across the pause, and the reader's `lock` pauses the
/// reader until the writer is done.
fn with_mutex() -> Vec<&'static str> {
    let log = Rc::new(yieldloop::sync::local::Mutex::new(Vec::new()));
    let l = log.clone();
    let writer = yieldloop::spawn(move || {
        let mut entries = l.lock();
        entries.push("writer: begin");
        yieldloop::sleep(Duration::from_millis(50)); // still locked: fine
        entries.push("writer: end");
    });
    let l = log.clone();
    let reader = yieldloop::spawn(move || {
        yieldloop::sleep(Duration::from_millis(10));
        l.lock().push("reader"); // waits for the writer's guard to drop
    });
    println!("writer: {}", outcome(writer.join()));
    println!("reader: {}", outcome(reader.join()));
    let entries = std::mem::take(&mut *log.lock());
    entries
}
// ANCHOR_END: mutex
