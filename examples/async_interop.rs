//! Async interop both ways: a yieldloop task waits for futures with
//! `block_on`, and a tokio program `.await`s work done on yieldloop.
//!
//! ```text
//! cargo run --example async_interop
//! ```
//!
//! Part one runs under `yieldloop::run`. A task waits in `block_on` for a
//! `futures` oneshot that another task fills after a sleep, and for a timer
//! future woken from a thread of its own; meanwhile a third task ticks, to
//! show the thread is not blocked.
//!
//! Part two is a tokio current-thread program. It hands a job to a
//! yieldloop `Runtime` worker and another to the blocking pool, and awaits
//! both handles as futures. Futures that need tokio's own reactor or timer
//! stay on the tokio side; only the handles cross.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use futures::channel::oneshot;

mod args;
use args::Args;

/// A future that is ready once a thread of its own has slept `ms`.
fn thread_timer(ms: u64) -> impl Future<Output = ()> {
    /// `(done, waker to wake when done)`, shared with the timer thread.
    type Shared = Arc<Mutex<(bool, Option<Waker>)>>;
    struct Timer(Shared, Option<u64>);
    impl Future for Timer {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            {
                let mut st = self.0.lock().unwrap();
                if st.0 {
                    return Poll::Ready(());
                }
                st.1 = Some(cx.waker().clone());
            }
            if let Some(ms) = self.1.take() {
                let shared = self.0.clone();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(ms));
                    let waker = {
                        let mut st = shared.lock().unwrap();
                        st.0 = true;
                        st.1.take()
                    };
                    if let Some(w) = waker {
                        w.wake();
                    }
                });
            }
            Poll::Pending
        }
    }
    Timer(Arc::default(), Some(ms))
}

fn main() {
    Args::new("async_interop").finish();

    // Part one: futures inside yieldloop tasks.
    yieldloop::run(|| {
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let ticker = yieldloop::spawn(move || loop {
            yieldloop::sleep(Duration::from_millis(5));
            t.set(t.get() + 1);
        });

        let (tx, rx) = oneshot::channel();
        yieldloop::spawn(move || {
            yieldloop::sleep(Duration::from_millis(20));
            let _ = tx.send("hello from a task");
        });
        let start = Instant::now();
        let msg = yieldloop::block_on(rx).expect("the sender sends");
        yieldloop::block_on(thread_timer(30));
        println!("block_on: {msg}, then a thread timer");
        println!(
            "the ticker ticked while we waited: {}",
            if ticks.get() > 0 { "yes" } else { "no" }
        );
        ticker.cancel();
        assert!(start.elapsed() >= Duration::from_millis(30));
    });

    // Part two: yieldloop work awaited from tokio.
    let rt = yieldloop::Runtime::builder()
        .workers(1)
        .build()
        .expect("worker threads start");
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let (from_worker, from_pool) = tokio_rt.block_on(async {
        let worker = rt.spawn_on(0, || {
            yieldloop::sleep(Duration::from_millis(10));
            format!("worker {:?}", yieldloop::Runtime::current_worker())
        });
        let pool = yieldloop::spawn_blocking(|| (1..=100u32).sum::<u32>());
        tokio::join!(worker, pool)
    });
    println!("tokio awaited: {}", from_worker.expect("no panic"));
    println!("tokio awaited the pool: {}", from_pool.expect("no panic"));
    rt.shutdown();
    println!("done");
}
