//! Walkthrough step 1: a function that can pause.
//!
//! ```text
//! cargo run --example walkthrough_01_pause
//! ```
//!
//! Three small coroutines built directly on `corosensei`, no scheduler yet:
//!
//! 1. one that pauses twice, resumed by its caller until it finishes;
//! 2. one that hands values *out* at each pause (a generator) and a final
//!    value when it returns;
//! 3. one that is handed values *in* at each resume and answers each.
//!
//! Everything is printed to stdout in the order it happens; the output is
//! the same on every run.

use corosensei::{Coroutine, CoroutineResult};

fn main() {
    println!("-- pause and resume");
    pause_and_resume();
    println!("-- values out");
    values_out();
    println!("-- values in");
    values_in();
}

// ANCHOR: pause
/// A coroutine that pauses twice. It runs only while the caller resumes it,
/// and each `suspend` hands control back to the caller.
fn pause_and_resume() {
    let mut co = Coroutine::new(|yielder, ()| {
        println!("  coroutine: step 1");
        yielder.suspend(());
        println!("  coroutine: step 2");
        yielder.suspend(());
        println!("  coroutine: step 3");
    });
    for turn in 1.. {
        println!("caller: resume #{turn}");
        match co.resume(()) {
            CoroutineResult::Yield(()) => println!("caller: it paused"),
            CoroutineResult::Return(()) => {
                println!("caller: it finished");
                break;
            }
        }
    }
}
// ANCHOR_END: pause

// ANCHOR: out
/// A generator: the Collatz sequence from `start`, one number per pause,
/// and the number of steps it took as the final value.
fn collatz(start: u64) -> Coroutine<(), u64, u32> {
    Coroutine::new(move |yielder, ()| {
        let (mut n, mut steps) = (start, 0);
        while n != 1 {
            yielder.suspend(n);
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            steps += 1;
        }
        yielder.suspend(1);
        steps
    })
}

fn values_out() {
    let mut co = collatz(6);
    let mut seen = Vec::new();
    let steps = loop {
        match co.resume(()) {
            CoroutineResult::Yield(n) => seen.push(n),
            CoroutineResult::Return(steps) => break steps,
        }
    };
    println!("yielded {seen:?}, returned {steps}");
}
// ANCHOR_END: out

// ANCHOR: in
/// A running average: every resume sends a number in, every pause sends
/// the average so far out; `None` ends it, and the count is returned.
fn running_average() -> Coroutine<Option<f64>, f64, usize> {
    // The value of the first `resume` arrives as the closure's argument;
    // each later one is what `suspend` returns.
    Coroutine::new(|yielder, first: Option<f64>| {
        let (mut sum, mut count) = (0.0, 0);
        let mut next = first;
        while let Some(x) = next {
            sum += x;
            count += 1;
            next = yielder.suspend(sum / count as f64);
        }
        count
    })
}

fn values_in() {
    let mut avg = running_average();
    for x in [10.0, 20.0, 60.0] {
        if let CoroutineResult::Yield(mean) = avg.resume(Some(x)) {
            println!("sent {x}, average now {mean}");
        }
    }
    if let CoroutineResult::Return(count) = avg.resume(None) {
        println!("sent None, it returned after {count} values");
    }
}
// ANCHOR_END: in
