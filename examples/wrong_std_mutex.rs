//! What goes wrong: a `std::sync::Mutex` guard held across a pause.
//!
//! ```text
//! cargo run --example wrong_std_mutex           # the mistake: a deadlock
//! cargo run --example wrong_std_mutex -- drop   # unlock before the pause
//! cargo run --example wrong_std_mutex -- mutex  # yieldloop::sync::local::Mutex
//! ```
//!
//! The holder task locks a std mutex and sleeps with the guard alive. The
//! waiter task, run during that sleep on the same thread, calls `lock`:
//! std's lock blocks the *thread* until the guard drops, and the guard can
//! only drop when the holder is resumed, by that very thread. Nothing runs
//! on it again. The slow-task watch reports the stuck task after a second;
//! a watchdog thread of this program ends it after `--give-up-after`
//! seconds (3 by default), since it would otherwise hang for ever.

use std::process;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yieldloop::Builder;

mod args;
use args::Args;

fn main() {
    let mut args = Args::new("wrong_std_mutex [wrong|drop|mutex] [--give-up-after SECS]");
    let give_up = args.value_in("--give-up-after", 3.0, 0.001..=3600.0);
    let mode = args.choice(&["wrong", "drop", "mutex"]);
    args.finish();
    watchdog(Duration::from_secs_f64(give_up));
    let total = match mode {
        "wrong" => yieldloop::run(wrong),
        "drop" => yieldloop::run(unlock_before_pausing),
        _ => yieldloop::run(with_yieldloop_mutex),
    };
    println!("total: {total}");
}

/// Ends the process after `limit`: a plain thread, so it runs even when
/// the scheduler's thread is stuck.
fn watchdog(limit: Duration) {
    let start = Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        println!(
            "watchdog: still stuck after {:.1} s; exiting",
            start.elapsed().as_secs_f64()
        );
        process::exit(1);
    });
}

// ANCHOR: wrong
/// The holder sleeps with the std guard alive; the waiter's `lock` then
/// blocks the thread the holder needs to be resumed on.
fn wrong() -> u64 {
    // A std mutex, say because other threads share the count too.
    let count = Arc::new(Mutex::new(0));
    let c = count.clone();
    let holder = Builder::new()
        .name("holder")
        .spawn(move || {
            let mut n = c.lock().unwrap();
            println!("holder: locked, sleeping 50 ms");
            // Wrong: the guard `n` stays alive across the pause.
            yieldloop::sleep(Duration::from_millis(50));
            *n += 1;
            println!("holder: done");
        })
        .unwrap();
    let c = count.clone();
    let waiter = Builder::new()
        .name("waiter")
        .spawn(move || {
            yieldloop::sleep(Duration::from_millis(10));
            let me = yieldloop::current_id().unwrap();
            println!("waiter (task {me}): locking");
            *c.lock().unwrap() += 1; // blocks the thread, never returns
            println!("waiter: done");
        })
        .unwrap();
    holder.join().unwrap();
    waiter.join().unwrap();
    let n = *count.lock().unwrap();
    n
}
// ANCHOR_END: wrong

// ANCHOR: drop
/// The std lock is taken and released between pauses, never across one:
/// the waiter may find it free at every moment it runs.
fn unlock_before_pausing() -> u64 {
    let count = Arc::new(Mutex::new(0));
    let c = count.clone();
    let holder = yieldloop::spawn(move || {
        let before = *c.lock().unwrap(); // locked and unlocked on this line
        println!("holder: read {before}, sleeping 50 ms");
        yieldloop::sleep(Duration::from_millis(50));
        *c.lock().unwrap() += 1;
        println!("holder: done");
    });
    let c = count.clone();
    let waiter = yieldloop::spawn(move || {
        yieldloop::sleep(Duration::from_millis(10));
        println!("waiter: locking");
        *c.lock().unwrap() += 1;
        println!("waiter: done");
    });
    holder.join().unwrap();
    waiter.join().unwrap();
    let n = *count.lock().unwrap();
    n
}
// ANCHOR_END: drop

// ANCHOR: mutex
/// A lock that must stay held across the pause, between tasks of one
/// thread: `yieldloop::sync::local::Mutex`, whose `lock` pauses the waiter task
/// instead of blocking the thread.
fn with_yieldloop_mutex() -> u64 {
    let count = Rc::new(yieldloop::sync::local::Mutex::new(0));
    let c = count.clone();
    let holder = yieldloop::spawn(move || {
        let mut n = c.lock();
        println!("holder: locked, sleeping 50 ms");
        yieldloop::sleep(Duration::from_millis(50)); // still locked: fine
        *n += 1;
        println!("holder: done");
    });
    let c = count.clone();
    let waiter = yieldloop::spawn(move || {
        yieldloop::sleep(Duration::from_millis(10));
        println!("waiter: locking");
        *c.lock() += 1; // pauses this task until the holder unlocks
        println!("waiter: done");
    });
    holder.join().unwrap();
    waiter.join().unwrap();
    let n = *count.lock();
    n
}
// ANCHOR_END: mutex
