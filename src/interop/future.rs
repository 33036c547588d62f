//! [`block_on`]: driving a `std::future::Future` to completion from
//! blocking-style code, the bridge from the async ecosystem into tasks;
//! [`spawn_future`], a task that does so in the background.
//!
//! A future is polled with a [`Waker`] whose `wake` ends the pause of the
//! task waiting for it. Between polls the task parks, like any other wait
//! in this crate, so the other tasks of its thread keep running. Outside a
//! task, the same loop parks the whole thread instead.
//!
//! ```text
//!   block_on (the task)                  whoever holds a waker (any thread)
//!   ───────────────────                  ──────────────────────────────────
//!   poll the future ── Pending
//!   lock; not notified: leave
//!   (ParkToken, RemoteUnparker); unlock;
//!   park                                 lock; notified = true;
//!                                        take the token; unlock
//!                                        on the task's thread: unpark it
//!   woken ◀───────────────────────────── elsewhere: RemoteUnparker::unpark
//!   lock; notified = false; unlock
//!   poll the future again
//! ```
//!
//! No wake-up is lost: the token is left under the lock that a wake takes,
//! and a wake that comes while the future is being polled (before any token
//! is left) sets `notified`, which the task reads under that lock before it
//! parks. Only the first wake after a poll does anything; the ones after it
//! find `notified` set and return, so a burst of wakes costs one unpark.
//!
//! A waker outlives the call harmlessly: when `block_on` ends, by returning
//! or by unwinding, it takes its token back out of the shared signal, and a
//! later wake finds nothing to unpark. A token whose pause is over is
//! ignored by the scheduler anyway (see `park`).

use std::future::Future;
use std::mem;
use std::pin::pin;
// `Arc` is std's: a `Waker` is made from a std `Arc`.
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::protocol::{ParkToken, Resume};
use crate::scheduler::coroutine;
use crate::scheduler::port::ParkedOn;
use crate::sys::threads::thread::{self, Thread};
use crate::sys::threads::{Mutex, MutexGuard};
use crate::task::park::{InTask, Pause, RemoteUnparker};
use crate::task::spawn::JoinHandle;

/// Runs `future` to completion and returns its output: inside a task, the
/// task pauses between polls while the other tasks of its thread run;
/// outside any task, the thread sleeps between polls.
///
/// The future is polled with a [`Waker`] that, when woken, resumes the
/// waiting task. It may be woken from any thread: from another task, from a
/// thread of your own, from the [blocking pool](crate::spawn_blocking) or a
/// [`Runtime`](crate::Runtime) worker. Wakes that come before the task has
/// parked are not lost, and after each wake the future is polled again
/// until it is ready. Wakers kept past the end of the call (or of the task)
/// do nothing when woken.
///
/// The future is pinned on the caller's stack and dropped there. If the
/// calling task is cancelled, or a [`timeout`](crate::timeout()) scope around
/// the call expires, while the future is pending, the task unwinds out of
/// `block_on` and the future is dropped during that unwind, on the task.
///
/// The cost is one small allocation per call (the signal the wakers share);
/// polls and wakes allocate nothing.
///
/// While it waits, the scheduler counts on a wake-up that may come from
/// another thread, as it does for a [`RemoteUnparker`]: a future that is
/// never woken keeps the task waiting for good, with no deadlock report.
///
/// # Futures that need another runtime
///
/// Futures that only need *a* waker work: `futures` channels and
/// combinators, `async` blocks over them, the handles of
/// [`Runtime::spawn_on`](crate::Runtime::spawn_on) and
/// [`spawn_blocking`](crate::spawn_blocking), and timers or I/O that run
/// their own thread. Futures that need a tokio reactor or timer
/// (`tokio::net`, `tokio::time::sleep`, `tokio::process`, …) do not: there
/// is no tokio runtime on the thread, and they panic with *"there is no
/// reactor running, must be called from the context of a Tokio 1.x
/// runtime"*. For those, either use the yieldloop counterpart
/// ([`net`](crate::net), [`sleep`](crate::sleep),
/// [`timeout`](crate::timeout())), or, with the Cargo feature `tokio`, hand
/// the future to `yieldloop::on_tokio`, which runs it on a shared tokio
/// runtime while only the task waits. By hand: run a tokio runtime on a
/// thread of its own and hand its results over: send them through a channel whose
/// receiving end you `block_on` (a `futures::channel::oneshot`, say), or,
/// with a multi-thread tokio runtime, call `tokio::runtime::Handle::block_on`
/// inside [`spawn_blocking`](crate::spawn_blocking) and join that.
///
/// # Panics
///
/// A panic in the future's `poll` passes through (the future is dropped on
/// the way out).
///
/// Called while the task is already unwinding (from a destructor during a
/// panic), a task cannot pause any more: `block_on` then sleeps the whole
/// thread until the future is ready, like outside a task.
///
/// # Examples
///
/// A `futures` oneshot channel, completed by another task:
///
/// ```
/// use futures::channel::oneshot;
///
/// let got = yieldloop::run(|| {
///     let (tx, rx) = oneshot::channel();
///     yieldloop::spawn(move || {
///         yieldloop::sleep(std::time::Duration::from_millis(5));
///         tx.send("hello").unwrap();
///     });
///     // Only this task waits; the sender's task runs meanwhile.
///     yieldloop::block_on(rx).unwrap()
/// });
/// assert_eq!(got, "hello");
/// ```
///
/// A tokio runtime kept on a thread of its own, its result handed over
/// through a channel:
///
/// ```
/// let (tx, rx) = futures::channel::oneshot::channel();
/// let tokio_thread = std::thread::spawn(move || {
///     let rt = tokio::runtime::Builder::new_current_thread()
///         .enable_all()
///         .build()
///         .unwrap();
///     rt.block_on(async {
///         let v = tokio::spawn(async { 6 * 7 }).await.unwrap();
///         let _ = tx.send(v);
///     });
/// });
/// let n = yieldloop::run(move || yieldloop::block_on(rx).unwrap());
/// assert_eq!(n, 42);
/// tokio_thread.join().unwrap();
/// ```
///
/// Outside any task it is a plain thread-parking executor:
///
/// ```
/// let n = yieldloop::block_on(async { 6 * 7 });
/// assert_eq!(n, 42);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    if coroutine::in_task() {
        drive(future, Some(&mut InTask(ParkedOn::Future)))
    } else {
        drive(future, None::<&mut InTask>)
    }
}

/// [`block_on`]'s loop: between polls, pauses through `pause` if given
/// (a task), else blocks the thread.
pub(crate) fn drive<F: Future>(future: F, mut pause: Option<&mut impl Pause>) -> F::Output {
    let mut future = pin!(future);
    let signal = Arc::new(Signal {
        state: Mutex::new(State {
            notified: false,
            sleeper: Sleeper::Nobody,
        }),
    });
    // Declared after the future, so dropped before it: wakes from the
    // future's destructor already find nobody to wake.
    let _forget = Forget(&signal);
    let waker = Waker::from(signal.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        if pause.is_some() {
            // Each poll is an operation of the task's budget: a future
            // that is always ready, or that answered `Pending` because
            // the budget was spent (and woke itself), is polled again only
            // after the other tasks have had their turn.
            crate::task::coop::proceed();
        }
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        let paused = match pause.as_mut() {
            Some(p) => wait_in_task(&signal, &waker, &mut **p),
            None => false,
        };
        if !paused {
            signal.wait_blocking();
        }
    }
}

/// Parks the task of a [`block_on`] call until a wake of `waker` (made
/// from `signal`).
///
/// Under a paused clock, the unparker the task leaves would hold the clock
/// still (another thread might wake the task). When every copy of the
/// waker the future kept sits in this scheduler's own timers (a
/// [`Sleep`](crate::Sleep), say), only time can wake the task, and the
/// unparker is exempted so the clock may jump.
fn wait_in_task(signal: &Arc<Signal>, waker: &Waker, pause: &mut impl Pause) -> bool {
    let local = crate::scheduler::timers::paused_at().is_some() && {
        // `block_on` holds the signal once and `waker` once; more are the
        // future's copies.
        let kept = Arc::strong_count(signal).saturating_sub(2);
        let in_timers =
            crate::scheduler::try_with_scheduler(|s| s.waker_timer_holds(waker)).unwrap_or(0);
        kept == in_timers
    };
    signal.park_task(pause, local)
}

/// What the wakers of one [`block_on`] call share.
struct Signal {
    state: Mutex<State>,
}

struct State {
    /// Set by a wake, cleared by the waiting side just before it polls
    /// again. A wake finding it set has nothing left to do.
    notified: bool,
    /// Who to wake.
    /// # Invariant
    /// `Sleeper::Task` only while `notified` is false: the first wake takes
    /// the token out.
    sleeper: Sleeper,
}

/// The party waiting for a [`Signal`].
enum Sleeper {
    /// Nobody waits: the future is being polled, or `block_on` has ended.
    Nobody,
    /// A task parked (or about to park, with no pause in between) under
    /// this token. The unparker reaches it from other threads.
    Task(ParkToken, RemoteUnparker),
    /// A thread sleeping in [`thread::park`], outside any task.
    Thread(Thread),
}

impl Signal {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Held for a few field moves; nothing in them panics, so a poisoned
        // lock still holds a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks the calling task until a wake; returns at once if one came
    /// since the last poll. Returns false, having waited for nothing, if
    /// the task cannot pause (it is unwinding). `local` exempts the
    /// unparker from holding a paused clock still (see [`wait_in_task`]).
    fn park_task(&self, pause: &mut impl Pause, local: bool) -> bool {
        // Token and unparker are made before taking the lock, so the lock
        // never waits on the scheduler.
        let (token, remote) = pause.prepare();
        {
            let mut st = self.lock();
            if mem::take(&mut st.notified) {
                // Woken while the future was being polled: poll again.
                return true;
            }
            // A clone stays on the task's stack while it is parked: as long
            // as one exists, the scheduler counts a wake-up from another
            // thread as still possible, even once a waker has taken (and
            // dropped) the copy left here.
            st.sleeper = Sleeper::Task(token, remote.clone());
        }
        let exempt = local.then(|| remote.exempt_from_clock(2));
        // Nothing may pause between leaving the token and parking.
        let answer = pause.park(token, None);
        drop(exempt);
        drop(remote);
        let mut st = self.lock();
        st.sleeper = Sleeper::Nobody;
        if let Resume::Cancelled = answer {
            // Called while unwinding: no pause happened.
            return false;
        }
        // Cleared before the next poll, so a wake during that poll counts.
        st.notified = false;
        true
    }

    /// Sleeps the calling thread until a wake; returns at once if one came
    /// since the last poll.
    fn wait_blocking(&self) {
        {
            let mut st = self.lock();
            if mem::take(&mut st.notified) {
                return;
            }
            if !matches!(st.sleeper, Sleeper::Thread(_)) {
                st.sleeper = Sleeper::Thread(thread::current());
            }
        }
        loop {
            // `park` may also return spuriously, or for an unpark meant for
            // an earlier wait: only `notified` says a wake came.
            thread::park();
            if mem::take(&mut self.lock().notified) {
                return;
            }
        }
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let sleeper = {
            let mut st = self.lock();
            if st.notified {
                // Woken already since the last poll.
                return;
            }
            st.notified = true;
            match &st.sleeper {
                Sleeper::Nobody => return,
                Sleeper::Task(..) => mem::replace(&mut st.sleeper, Sleeper::Nobody),
                Sleeper::Thread(t) => Sleeper::Thread(t.clone()),
            }
        };
        // Unparked outside the lock: the woken side takes it next.
        match sleeper {
            Sleeper::Nobody => {}
            // On the task's own thread the scheduler is at hand, with no
            // trip through its cross-thread queue and `eventfd`.
            Sleeper::Task(token, remote) => {
                if token.unpark_here().is_none() {
                    remote.unpark();
                }
            }
            Sleeper::Thread(t) => t.unpark(),
        }
    }
}

/// Ends a [`block_on`] call's interest in its signal, however the call
/// ends: wakers that outlive it find nobody to wake, and keep neither the
/// thread nor the scheduler's cross-thread queue.
struct Forget<'a>(&'a Signal);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let gone = mem::replace(&mut self.0.lock().sleeper, Sleeper::Nobody);
        // Dropped outside the lock.
        drop(gone);
    }
}

/// Spawns a task that drives `future` to completion with [`block_on`], and
/// returns its handle: for the background future an async crate hands its
/// caller to run (a database driver's connection, an HTTP connection
/// future), on this thread, beside the tasks that use it.
///
/// The future runs on the calling thread's scheduler like any task, so it
/// needs to be neither `Send` nor `Sync`; it waits through its wakers (on
/// yieldloop's reactor for the sockets of [`net`](crate::net) and
/// [`PausingIo`](crate::io::PausingIo) with the `futures-io` or `tokio`
/// feature) and only its task pauses meanwhile.
///
/// The handle is a [`JoinHandle`] like any other: [`join`](JoinHandle::join)
/// gives the future's output, [`cancel`](JoinHandle::cancel) (or the end of
/// [`run`](crate::run)) drops the future on its task, and a panic in the
/// future is the task's panic, which `join` reports as a
/// [`JoinError`](crate::JoinError). Dropping the handle detaches the task.
///
/// # Panics
///
/// Outside [`run`](crate::run), as [`spawn`](crate::spawn()) does.
///
/// # Examples
///
/// ```
/// use futures::channel::mpsc;
/// use futures::StreamExt;
///
/// let sum = yieldloop::run(|| {
///     let (tx, mut rx) = mpsc::unbounded::<u32>();
///     // A background future, as a driver would hand over.
///     let worker = yieldloop::spawn_future(async move {
///         let mut sum = 0;
///         while let Some(n) = rx.next().await {
///             sum += n;
///         }
///         sum
///     });
///     for n in 1..=4 {
///         tx.unbounded_send(n).unwrap();
///         yieldloop::yield_now();
///     }
///     drop(tx);
///     worker.join().unwrap()
/// });
/// assert_eq!(sum, 10);
/// ```
pub fn spawn_future<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    crate::task::spawn::spawn(move || block_on(future))
}
