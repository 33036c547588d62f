//! The waker contract, run: a hand-written future, awaited from a task
//! with `block_on`, and who wakes whom.
//!
//! ```text
//! cargo run --example waker_contract
//! ```
//!
//! A future is polled; when it cannot finish it keeps the waker of the
//! poll and answers `Pending`; whoever makes it ready later calls that
//! waker's `wake`, and the runtime polls it again. Here the future is a
//! flag. It is set once by another task on the same thread and once by a
//! plain thread, and every step is printed: the polls, the waker kept, the
//! `wake` (through a waker of our own that wraps the runtime's, so that the
//! call can be seen), and the poll it leads to.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

// ANCHOR: flag
/// A flag a future can wait for: set or not, and the waker of the last
/// poll that found it unset.
#[derive(Default)]
struct Flag {
    set: bool,
    waker: Option<Waker>,
}

/// A future that is ready once its flag is set.
struct FlagSet {
    flag: Arc<Mutex<Flag>>,
    polls: u32,
}

impl Future for FlagSet {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.polls += 1;
        let mut flag = self.flag.lock().unwrap();
        if flag.set {
            say(format_args!("poll {}: the flag is set: Ready", self.polls));
            return Poll::Ready(self.polls);
        }
        // Not yet: keep this poll's waker (replacing an older one), so the
        // setter can wake whoever polls now. Then, and only then, Pending.
        flag.waker = Some(Logged::wrap(cx.waker()));
        say(format_args!(
            "poll {}: not set; waker kept, Pending",
            self.polls
        ));
        Poll::Pending
    }
}

/// Sets the flag and wakes the waker kept, if any: the other half of the
/// contract.
fn set(flag: &Mutex<Flag>, who: &str) {
    let waker = {
        let mut flag = flag.lock().unwrap();
        flag.set = true;
        flag.waker.take()
    };
    say(format_args!("{who}: flag set, calling wake()"));
    // Woken outside the lock: the wake may run the poll at once elsewhere.
    if let Some(waker) = waker {
        waker.wake();
    }
}
// ANCHOR_END: flag

/// A waker that says when it is woken, then wakes the runtime's.
struct Logged(Waker);

impl Logged {
    fn wrap(inner: &Waker) -> Waker {
        Waker::from(Arc::new(Logged(inner.clone())))
    }
}

impl Wake for Logged {
    fn wake(self: Arc<Self>) {
        say(format_args!(
            "  wake(): the runtime's waker unparks the task in block_on"
        ));
        self.0.wake_by_ref();
    }
}

/// Prints a line with the time since the first one and the thread's name.
fn say(what: std::fmt::Arguments<'_>) {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    let ms = START.get_or_init(Instant::now).elapsed().as_millis();
    let thread = std::thread::current();
    let name = match yieldloop::current_id() {
        Some(id) => format!("task {id}"),
        None => thread.name().unwrap_or("a thread").to_string(),
    };
    println!("{ms:>4} ms  [{name}] {what}");
}

fn main() {
    yieldloop::run(|| {
        // ANCHOR: same_thread
        // Set by another task of the same scheduler.
        let flag = Arc::new(Mutex::new(Flag::default()));
        let setter = {
            let flag = flag.clone();
            yieldloop::spawn(move || {
                yieldloop::sleep(Duration::from_millis(20));
                set(&flag, "setter task");
            })
        };
        let polls = yieldloop::block_on(FlagSet { flag, polls: 0 });
        say(format_args!("block_on returned after {polls} polls"));
        setter.join().unwrap();
        // ANCHOR_END: same_thread

        // ANCHOR: other_thread
        // Set by a plain thread: the runtime's waker is `Send`, and its
        // wake reaches this scheduler through its cross-thread queue.
        let flag = Arc::new(Mutex::new(Flag::default()));
        let thread = {
            let flag = flag.clone();
            std::thread::Builder::new()
                .name("plain thread".into())
                .spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    set(&flag, "plain thread");
                })
                .unwrap()
        };
        let polls = yieldloop::block_on(FlagSet { flag, polls: 0 });
        say(format_args!("block_on returned after {polls} polls"));
        thread.join().unwrap();
        // ANCHOR_END: other_thread
    });
}
