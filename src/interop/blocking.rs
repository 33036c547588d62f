//! Blocking offload: running calls that would hold the thread (file I/O,
//! name resolution, heavy computation) on a process-wide pool of threads,
//! while the task that asked for them pauses.
//!
//! A task must never block its thread: every other task on that thread
//! stops until the call returns. [`spawn_blocking`] moves such a call to a
//! pool thread; [`BlockingHandle::join`] parks only the calling task until
//! the result comes back through a [`RemoteUnparker`](crate::raw::RemoteUnparker).
//!
//! The pool starts threads on demand, up to a limit (64 by default), and a
//! thread left idle for a while (10 s by default) exits. Work beyond the
//! limit waits in a FIFO queue for the next free thread.
//!
//! The crate uses the pool itself for host-name lookups: `connect`, `bind`
//! and `send_to` given a name, and [`lookup_host`](crate::net::lookup_host),
//! run the [resolver](crate::net::Resolve) here while the task pauses
//! (literal addresses are parsed in the task, with no hop). A slow DNS
//! answer thus holds a pool thread, not the scheduler.
//!
//! ```text
//!   spawn_blocking(f) ──▶ queue ──▶ idle thread (or a new one, under the limit)
//!                                      runs f, catching a panic
//!   join() parks the task ◀── result + unpark through the scheduler's waker
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::Duration;

use super::from_thread::{await_handoff, Handoff, RemoteJoinError};

/// How many pool threads may exist at once unless
/// [`set_blocking_max_threads`] says otherwise.
pub const DEFAULT_BLOCKING_MAX_THREADS: usize = 64;

/// How long a pool thread waits for work before it exits, unless
/// [`set_blocking_idle_timeout`] says otherwise.
pub const DEFAULT_BLOCKING_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `f` on the blocking pool and returns a handle to its result.
///
/// Use it for whatever would hold the thread: reading and writing files
/// (`std::fs`), calls into blocking libraries, and CPU-heavy work that
/// would otherwise keep every other task on the thread waiting. (Name
/// resolution needs no call here: [`net`](crate::net) looks host names up
/// on this pool by itself.) `f` starts at once on an idle pool
/// thread, or on a new one while fewer than the
/// [limit](set_blocking_max_threads) exist; otherwise it waits in a queue
/// for the next free thread.
///
/// Works inside and outside tasks. Dropping the handle detaches the work:
/// it still runs, and its value is dropped.
///
/// Only what crosses the threads must be `Send`: `f` and its value.
///
/// # Panics
///
/// Never. A panic in `f` is caught and comes back from
/// [`join`](BlockingHandle::join) as an error carrying the payload; if no
/// pool thread can be started at all, `join` reports a cancellation.
///
/// # Examples
///
/// ```
/// use std::io::Write;
///
/// let path = std::env::temp_dir().join(format!("yieldloop-doc-{}.txt", std::process::id()));
/// let text = yieldloop::run(move || {
///     // Other tasks keep running while the pool thread does the file I/O.
///     let p = path.clone();
///     let written = yieldloop::spawn_blocking(move || {
///         std::fs::File::create(&p)?.write_all(b"hello from the pool")?;
///         std::fs::read_to_string(&p)
///     });
///     let text = written.join().expect("no panic").expect("file I/O");
///     let _ = std::fs::remove_file(&path);
///     text
/// });
/// assert_eq!(text, "hello from the pool");
/// ```
pub fn spawn_blocking<F, T>(f: F) -> BlockingHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (slot, mut completer) = Handoff::new();
    completer.set_drop_reason("no blocking-pool thread could be started to run it");
    let job: Job = Box::new(move || {
        let r = panic::catch_unwind(AssertUnwindSafe(f)).map_err(RemoteJoinError::panicked);
        completer.complete(r);
    });
    pool().submit(job);
    BlockingHandle { slot }
}

/// An owned permission to wait for the result of a [`spawn_blocking`] call.
///
/// Unlike a [`JoinHandle`](crate::JoinHandle), it is `Send`: the result can
/// be waited for on any thread.
pub struct BlockingHandle<T> {
    slot: Arc<Handoff<T>>,
}

impl<T> fmt::Debug for BlockingHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> BlockingHandle<T> {
    /// Waits for the result. Inside a task this pauses only the task;
    /// outside any task it blocks the thread. That includes a pool thread:
    /// a job that joins other jobs holds its thread meanwhile, and if every
    /// pool thread did so, the jobs queued behind them would never start.
    ///
    /// # Errors
    ///
    /// A [`RemoteJoinError`] carrying the payload when `f` panicked; a
    /// cancellation when no pool thread could be started to run it, or when
    /// the calling task is being torn down.
    ///
    /// # Examples
    ///
    /// ```
    /// // Outside any task the thread blocks until the pool is done.
    /// let sum = yieldloop::spawn_blocking(|| (1..=100u32).sum::<u32>()).join().unwrap();
    /// assert_eq!(sum, 5050);
    /// ```
    pub fn join(self) -> Result<T, RemoteJoinError> {
        self.slot.wait()
    }

    /// True once `f` has returned or panicked. Never pauses.
    pub fn is_finished(&self) -> bool {
        self.slot.is_done()
    }
}

await_handoff! {
    /// Awaiting the handle waits for the result without blocking, so `async`
    /// code can move blocking work to the pool; the outcome is the same as
    /// [`join`](BlockingHandle::join)'s. Dropping the future detaches the work,
    /// which runs on.
    ///
    /// # Panics
    ///
    /// If polled again after it has returned its output.
    ///
    /// # Examples
    ///
    /// ```
    /// let tokio_rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let sum = tokio_rt.block_on(async {
    ///     yieldloop::spawn_blocking(|| (1..=10u32).sum::<u32>()).await
    /// });
    /// assert_eq!(sum.unwrap(), 55);
    /// ```
    BlockingHandle
}

/// Sets how many pool threads may exist at once (default
/// [`DEFAULT_BLOCKING_MAX_THREADS`]); 0 is taken as 1. Threads already
/// running are not stopped when the limit drops: an idle one over the limit
/// exits when it next looks for work.
///
/// The limit bounds the threads, not the work: jobs beyond it queue.
pub fn set_blocking_max_threads(n: usize) {
    let p = pool();
    p.lock().max_threads = n.max(1);
    // Idle threads over the new limit notice at their next wake-up.
    p.work.notify_all();
}

/// Sets how long an idle pool thread waits for work before it exits
/// (default [`DEFAULT_BLOCKING_IDLE_TIMEOUT`]). Applies from each idle
/// thread's next wait.
pub fn set_blocking_idle_timeout(timeout: Duration) {
    pool().lock().idle_timeout = timeout;
}

/// A snapshot of the blocking pool, from [`blocking_pool_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockingPoolStats {
    /// Pool threads alive, busy or idle.
    pub threads: usize,
    /// Of those, threads waiting for work.
    pub idle: usize,
    /// Jobs waiting for a free thread.
    pub queued: usize,
    /// The current thread limit.
    pub max_threads: usize,
    /// Jobs handed to the pool since the process started (a
    /// [`spawn_blocking`] call, a host-name lookup, …).
    pub submitted: u64,
}

/// The blocking pool's current numbers.
///
/// # Examples
///
/// ```
/// let stats = yieldloop::diag::blocking_pool_stats();
/// assert!(stats.threads <= stats.max_threads);
/// yieldloop::spawn_blocking(|| ()).join().unwrap();
/// assert!(yieldloop::diag::blocking_pool_stats().submitted > stats.submitted);
/// ```
pub fn blocking_pool_stats() -> BlockingPoolStats {
    let st = pool().lock();
    BlockingPoolStats {
        threads: st.threads,
        idle: st.idle,
        queued: st.queue.len(),
        max_threads: st.max_threads,
        submitted: st.submitted,
    }
}

/// One unit of work; it delivers its own result.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The process-wide pool.
struct Pool {
    state: Mutex<PoolState>,
    /// Signalled when a job is handed to an idle thread (or the limit
    /// changes).
    work: Condvar,
}

struct PoolState {
    queue: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads waiting on `work`, not counting those already notified.
    /// # Invariant
    /// `idle + notified` is the number of threads inside the wait.
    idle: usize,
    /// Notifications sent and not yet taken by a waiting thread. Counting
    /// them, rather than looking at the queue, tells a notified thread from
    /// one woken spuriously or by its timeout.
    notified: usize,
    max_threads: usize,
    idle_timeout: Duration,
    /// Jobs ever submitted, for [`BlockingPoolStats::submitted`].
    submitted: u64,
}

fn pool() -> &'static Arc<Pool> {
    static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        Arc::new(Pool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                notified: 0,
                max_threads: DEFAULT_BLOCKING_MAX_THREADS,
                idle_timeout: DEFAULT_BLOCKING_IDLE_TIMEOUT,
                submitted: 0,
            }),
            work: Condvar::new(),
        })
    })
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Jobs run outside the lock and the pool's own code does not panic
        // while holding it, so a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` and makes sure a thread will run it: an idle one if
    /// any, else a new one if the limit allows; otherwise it waits its turn.
    fn submit(self: &Arc<Self>, job: Job) {
        let mut st = self.lock();
        st.queue.push_back(job);
        st.submitted += 1;
        if st.idle > 0 {
            st.idle -= 1;
            st.notified += 1;
            drop(st);
            self.work.notify_one();
            return;
        }
        if st.threads >= st.max_threads {
            return;
        }
        st.threads += 1;
        drop(st);
        let pool = self.clone();
        let started = thread::Builder::new()
            .name("yieldloop-blocking".into())
            .spawn(move || pool.worker());
        if started.is_err() {
            let orphan = {
                let mut st = self.lock();
                st.threads -= 1;
                // With no thread at all the queue would never be served:
                // drop its jobs, which tells their waiters.
                if st.threads == 0 {
                    std::mem::take(&mut st.queue)
                } else {
                    VecDeque::new()
                }
            };
            drop(orphan);
        }
    }

    /// A pool thread's life: run queued jobs, wait idle, exit after the
    /// idle timeout (or when over the limit).
    fn worker(&self) {
        let mut st = self.lock();
        loop {
            if let Some(job) = st.queue.pop_front() {
                drop(st);
                // The job catches its own panic; nothing unwinds out of it.
                job();
                st = self.lock();
                continue;
            }
            if st.threads > st.max_threads {
                st.threads -= 1;
                return;
            }
            st.idle += 1;
            let timeout = st.idle_timeout;
            loop {
                let (guard, waited) = self
                    .work
                    .wait_timeout(st, timeout)
                    .unwrap_or_else(|e| e.into_inner());
                st = guard;
                if st.notified > 0 {
                    // Whoever notified took us off `idle` already.
                    st.notified -= 1;
                    break;
                }
                if waited.timed_out() || st.threads > st.max_threads {
                    st.idle -= 1;
                    st.threads -= 1;
                    return;
                }
                // A spurious wake-up: wait again.
            }
        }
    }
}
