//! Model checks of the hand-off slot (under `BlockingHandle` and
//! `WorkerHandle`) and of the cross-thread wake-up queue under every
//! `RemoteUnparker`: every interleaving of a producer with a waiting task
//! or a blocked thread, within the preemption bound `LOOM_MAX_PREEMPTIONS`.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_handoff`.
#![cfg(loom)]

use loom::thread;
use yieldloop::model::{handoff, ModelTask};

/// A task waiting on the slot gets the value whenever it is delivered:
/// before it looks, while it leaves its unparker, or after it parked.
#[test]
fn task_waiter_gets_the_value() {
    loom::model(|| {
        let (waiter, producer) = handoff::<u32>();
        let t = thread::spawn(move || producer.complete(7));
        let mut task = ModelTask::new();
        assert_eq!(waiter.wait_task(&mut task), Some(7));
        assert!(waiter.is_done());
        t.join().unwrap();
    });
}

/// A blocked thread waiting on the slot wakes for the value.
#[test]
fn thread_waiter_gets_the_value() {
    loom::model(|| {
        let (waiter, producer) = handoff::<u32>();
        let t = thread::spawn(move || producer.complete(7));
        assert_eq!(waiter.wait_thread(), Some(7));
        t.join().unwrap();
    });
}

/// Work dropped before it finished wakes its waiter with a cancellation.
#[test]
fn cancellation_wakes_the_task() {
    loom::model(|| {
        let (waiter, producer) = handoff::<u32>();
        let t = thread::spawn(move || producer.cancel());
        let mut task = ModelTask::new();
        assert_eq!(waiter.wait_task(&mut task), None);
        t.join().unwrap();
    });
}

/// The wake-up queue: two threads unpark two pauses of one task; the
/// scheduler (the task's thread) gets both, whichever order the pushes,
/// interrupts and drains interleave in. A push that finds the queue not
/// empty sends no interrupt, so this is where a lost wake-up would show.
#[test]
fn remote_queue_loses_no_wakeup() {
    loom::model(|| {
        let mut task = ModelTask::new();
        let (p1, u1) = task.pause();
        let (p2, u2) = task.pause();
        let a = thread::spawn(move || u1.unpark());
        let b = thread::spawn(move || u2.unpark());
        task.park(p2);
        task.park(p1);
        a.join().unwrap();
        b.join().unwrap();
    });
}

/// One pause unparked twice, from two threads: the task wakes once and a
/// second pause is still woken by its own unparker.
#[test]
fn remote_queue_duplicate_unpark() {
    loom::model(|| {
        let mut task = ModelTask::new();
        let (p1, u1) = task.pause();
        let u1b = u1.clone();
        let a = thread::spawn(move || u1.unpark());
        let b = thread::spawn(move || u1b.unpark());
        task.park(p1);
        let (p2, u2) = task.pause();
        u2.unpark();
        task.park(p2);
        a.join().unwrap();
        b.join().unwrap();
    });
}
