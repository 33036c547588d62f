//! Chapter 2 exercise: round-robin with weights.
//!
//! ```text
//! cargo run --example exercise_ch02_weighted
//! ```
//!
//! The loop of chapter 2 gives every task one step per turn. Here each task
//! carries a weight, and the loop gives it that many resumes in a row before
//! it goes to the back of the queue: a weight-3 task runs three steps for
//! every one of a weight-1 task, and no task is starved, since each still
//! gets its turn every round. The policy lives entirely in the loop; the
//! tasks are the same pausing closures as before.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use corosensei::{Coroutine, CoroutineResult};

/// A task: a coroutine resumed with nothing that pauses with nothing.
type Task = Coroutine<(), (), ()>;

/// Resumes the front task up to `weight` times, then puts it at the back
/// (or drops it if it finished). Returns the number of resumes.
fn weighted_round_robin(tasks: Vec<(Task, u32)>) -> u64 {
    let mut queue: VecDeque<(Task, u32)> = tasks.into();
    let mut resumes = 0;
    'turns: while let Some((mut task, weight)) = queue.pop_front() {
        for _ in 0..weight.max(1) {
            resumes += 1;
            if let CoroutineResult::Return(()) = task.resume(()) {
                continue 'turns; // finished: dropped, next task
            }
        }
        queue.push_back((task, weight));
    }
    resumes
}

/// A task that logs `steps` numbered steps, pausing after each.
fn chatty(name: &'static str, steps: u32, log: Rc<RefCell<Vec<String>>>) -> Task {
    Coroutine::new(move |yielder, ()| {
        for step in 1..=steps {
            log.borrow_mut().push(format!("{name}{step}"));
            yielder.suspend(());
        }
    })
}

fn main() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let resumes = weighted_round_robin(vec![
        (chatty("A", 6, log.clone()), 3),
        (chatty("B", 4, log.clone()), 1),
        (chatty("C", 4, log.clone()), 2),
    ]);
    println!("{}", log.borrow().join(" "));
    println!("{resumes} resumes for 14 steps and 3 endings");
}
