//! Model checks of `block_on`'s waker: a wake from another thread is never
//! lost, whether it comes while the future is being polled, while the
//! waiter leaves its token, or after it paused; for a waiting task and for
//! a parked thread.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_bridge`.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use yieldloop::model::{block_on_task, ModelTask};

/// A one-shot flag with a waker slot: the smallest future another thread
/// completes.
#[derive(Default)]
struct Flag {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Flag {
    fn set(&self) {
        self.set.store(true, Ordering::Release);
        let w = self.waker.lock().unwrap().take();
        if let Some(w) = w {
            w.wake();
        }
    }
}

struct Wait(Arc<Flag>);

impl Future for Wait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // The waker is left before the last look, so a `set` either sees
        // it or was seen.
        *self.0.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.0.set.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[test]
fn task_is_woken() {
    loom::model(|| {
        let flag = Arc::new(Flag::default());
        let f = flag.clone();
        let t = thread::spawn(move || f.set());
        let mut task = ModelTask::new();
        block_on_task(Wait(flag), &mut task);
        t.join().unwrap();
    });
}

#[test]
fn thread_is_woken() {
    loom::model(|| {
        let flag = Arc::new(Flag::default());
        let f = flag.clone();
        let t = thread::spawn(move || f.set());
        yieldloop::block_on(Wait(flag));
        t.join().unwrap();
    });
}

/// Two wakers from two threads, the second needed: the future is ready
/// only after both flags are set.
#[test]
fn task_sees_both_wakes() {
    loom::model(|| {
        let a = Arc::new(Flag::default());
        let b = Arc::new(Flag::default());
        let (a2, b2) = (a.clone(), b.clone());
        let ta = thread::spawn(move || a2.set());
        let tb = thread::spawn(move || b2.set());
        let mut task = ModelTask::new();
        block_on_task(
            async {
                Wait(a).await;
                Wait(b).await;
            },
            &mut task,
        );
        ta.join().unwrap();
        tb.join().unwrap();
    });
}
