//! Walkthrough step 4, from scratch: what the heap loop of step 3 lacks
//! before it can run tasks the way chapter 4 uses them.
//!
//! ```text
//! cargo run --example walkthrough_04_from_scratch
//! ```
//!
//! Three additions, each a few lines:
//!
//! - **`suspend` without a yielder in hand.** The loop keeps the running
//!   task's yielder in a thread-local, so `sleep` and `join` are plain
//!   functions that any code of the task can call, at any depth.
//! - **`Op::Join(key)`.** A task waits for another: the loop files it on
//!   the target's list of joiners and queues every joiner when the target
//!   ends, with its value.
//! - **`Op::Kill(key)`.** A task ends another. The loop drops the target's
//!   paused coroutine, and corosensei unwinds its stack: the destructors
//!   of whatever the target held run, as if it had returned early. Its
//!   joiners are told it was killed.
//!
//! Every decision of the loop is printed, with the time since the start.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};

// ANCHOR: ops
/// What a task asks for when it pauses.
enum Op {
    /// Resume me at or after this instant.
    Wait(Instant),
    /// Resume me when task `key` has ended.
    Join(usize),
    /// End task `key` now, then resume me.
    Kill(usize),
}

/// What the loop answers a pause with.
#[derive(Clone, Copy, Debug)]
enum Resume {
    /// Go on (a deadline passed, a kill was done).
    Go,
    /// The task joined ended with this value, or `None`: it was killed.
    Ended(Option<u64>),
}

type Task = Coroutine<Resume, Op, u64>;

thread_local! {
    /// The yielder of the running task, set by the task itself whenever it
    /// runs (at its start and after each pause), so it always names the
    /// task on the CPU.
    static CURRENT: Cell<*const Yielder<Resume, Op>> = const { Cell::new(std::ptr::null()) };
    /// Tasks spawned during a turn, for the loop to take: (key, task).
    static SPAWNED: RefCell<Vec<(usize, Task)>> = const { RefCell::new(Vec::new()) };
    static NEXT_KEY: Cell<usize> = const { Cell::new(0) };
}

/// Pauses the running task with `op`: the articles' `yield`, from any depth.
fn suspend(op: Op) -> Resume {
    let yielder = CURRENT.with(Cell::get);
    assert!(!yielder.is_null(), "suspend called outside a task");
    // SAFETY: CURRENT is only ever set by a task to its own yielder, on
    // the task's own stack, when the task starts or resumes; the task is
    // running now, so its stack, and the yielder on it, are alive.
    let yielder = unsafe { &*yielder };
    let answer = yielder.suspend(op);
    CURRENT.with(|c| c.set(yielder)); // running again: ours is current
    answer
}

fn sleep(d: Duration) {
    suspend(Op::Wait(Instant::now() + d));
}

fn join(key: usize) -> Option<u64> {
    match suspend(Op::Join(key)) {
        Resume::Ended(value) => value,
        Resume::Go => unreachable!("a join is answered with the end"),
    }
}

fn kill(key: usize) {
    suspend(Op::Kill(key));
}

/// Starts `body` as a task on the next turn; returns its key at once.
fn spawn(body: impl FnOnce() -> u64 + 'static) -> usize {
    let key = NEXT_KEY.with(|k| k.replace(k.get() + 1));
    let task = Coroutine::new(move |yielder: &Yielder<Resume, Op>, _first: Resume| {
        CURRENT.with(|c| c.set(yielder));
        body()
    });
    SPAWNED.with(|s| s.borrow_mut().push((key, task)));
    key
}
// ANCHOR_END: ops

/// Prints a line of the loop's log with the time since `start`.
fn log(start: Instant, what: std::fmt::Arguments<'_>) {
    println!("{:>4} ms  {what}", start.elapsed().as_millis());
}

// ANCHOR: loop
/// The heap loop of step 3, with joiners and kills.
fn run(main: impl FnOnce() -> u64 + 'static) -> Option<u64> {
    let start = Instant::now();
    let main_key = spawn(main);
    let mut tasks: HashMap<usize, Task> = HashMap::new();
    let mut ready: VecDeque<(usize, Resume)> = VecDeque::new();
    let mut timers: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let mut joiners: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut ended: HashMap<usize, Option<u64>> = HashMap::new();
    loop {
        for (key, task) in SPAWNED.with(|s| std::mem::take(&mut *s.borrow_mut())) {
            tasks.insert(key, task);
            ready.push_back((key, Resume::Go));
        }
        // The end of a task, by return or by kill: its joiners are queued.
        let mut finish = |key: usize, value: Option<u64>, ready: &mut VecDeque<_>| {
            ended.insert(key, value);
            for j in joiners.remove(&key).unwrap_or_default() {
                ready.push_back((j, Resume::Ended(value)));
            }
        };
        if let Some((key, answer)) = ready.pop_front() {
            let Some(task) = tasks.get_mut(&key) else {
                continue;
            };
            match task.resume(answer) {
                CoroutineResult::Yield(Op::Wait(at)) => {
                    let ms = at.saturating_duration_since(start).as_millis();
                    log(start, format_args!("task {key} waits until {ms} ms"));
                    timers.push(Reverse((at, key)));
                }
                CoroutineResult::Yield(Op::Join(target)) => match ended.get(&target) {
                    Some(&value) => ready.push_back((key, Resume::Ended(value))),
                    None => {
                        log(start, format_args!("task {key} joins task {target}"));
                        joiners.entry(target).or_default().push(key);
                    }
                },
                CoroutineResult::Yield(Op::Kill(target)) => {
                    log(start, format_args!("task {key} kills task {target}"));
                    // Dropping a paused coroutine unwinds its stack.
                    if tasks.remove(&target).is_some() {
                        ready.retain(|&(k, _)| k != target);
                        finish(target, None, &mut ready);
                    }
                    ready.push_back((key, Resume::Go));
                }
                CoroutineResult::Return(value) => {
                    log(start, format_args!("task {key} returns {value}"));
                    tasks.remove(&key);
                    finish(key, Some(value), &mut ready);
                }
            }
            continue;
        }
        if tasks.is_empty() {
            return ended.get(&main_key).copied().flatten();
        }
        // Nothing ready: sleep until the earliest deadline of a live task.
        let Some(Reverse((at, key))) = timers.pop() else {
            panic!("tasks wait, but nothing can wake them");
        };
        if tasks.contains_key(&key) {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            ready.push_back((key, Resume::Go));
        }
    }
}
// ANCHOR_END: loop

// ANCHOR: tasks
/// Says when it is dropped: by a return, or by the unwinding of a kill.
struct Cleanup(&'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        println!("         cleanup of {} runs", self.0);
    }
}

fn main() {
    let total = run(|| {
        let worker = spawn(|| {
            let _guard = Cleanup("the worker");
            sleep(Duration::from_millis(30));
            7
        });
        let stuck = spawn(|| {
            let _guard = Cleanup("the stuck task");
            sleep(Duration::from_secs(3600)); // never returns by itself
            0
        });
        let watchdog = spawn(move || {
            sleep(Duration::from_millis(50));
            kill(stuck);
            1
        });
        let w = join(worker);
        let s = join(stuck);
        let d = join(watchdog);
        println!("         main joined: worker {w:?}, stuck {s:?}, watchdog {d:?}");
        w.unwrap_or(0) + d.unwrap_or(0)
    });
    println!("main's value: {total:?}");
}
// ANCHOR_END: tasks
