//! Chapter 1 exercise: a counter that is a generator both ways.
//!
//! ```text
//! cargo run --example exercise_ch01_counter
//! ```
//!
//! The coroutine counts up from a start value, handing each number out at a
//! pause. What the caller sends in at each resume steers it, like Python's
//! `gen.send(...)`: `Next` takes one step, `Jump(n)` restarts the count at
//! `n`, and `Stop` ends it, and the coroutine then returns how many numbers
//! it handed out. The caller drives it with a fixed script and prints each
//! exchange, so the output is the same on every run.

use corosensei::{Coroutine, CoroutineResult};

/// What the caller sends in at each resume.
#[derive(Debug, Clone, Copy)]
enum Command {
    /// Hand out the next number.
    Next,
    /// Carry on counting from this number.
    Jump(u64),
    /// Finish, returning how many numbers were handed out.
    Stop,
}

/// Counts from `start`; resumed with a `Command`, pauses with a number, and
/// returns how many numbers it produced.
fn counter(start: u64) -> Coroutine<Command, u64, usize> {
    // The first command arrives as the closure's argument; each later one
    // is what `suspend` returns.
    Coroutine::new(move |yielder, first: Command| {
        let (mut next, mut produced) = (start, 0);
        let mut command = first;
        loop {
            match command {
                Command::Stop => return produced,
                Command::Jump(n) => next = n,
                Command::Next => {}
            }
            produced += 1;
            let out = next;
            next += 1;
            // The pause: hand a number out, wait for the next command.
            command = yielder.suspend(out);
        }
    })
}

fn main() {
    let script = [
        Command::Next,
        Command::Next,
        Command::Next,
        Command::Jump(100),
        Command::Next,
        Command::Jump(7),
        Command::Stop,
    ];
    let mut co = counter(1);
    for command in script {
        match co.resume(command) {
            CoroutineResult::Yield(n) => println!("sent {command:?}, got {n}"),
            CoroutineResult::Return(produced) => {
                println!("sent {command:?}, it returned after {produced} numbers");
                return;
            }
        }
    }
    unreachable!("the script ends with Stop");
}
